"""A function stage that lives in a module of a user's package and uses a relative import."""

from . import MESSAGE


def refuse_in_package(module):
    raise RuntimeError(MESSAGE)
