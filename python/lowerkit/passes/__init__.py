"""Passes lowerkit ships, one per module, each a function ``run(op, pass_)`` with a kebab name.

Nothing here registers itself on import: pipelines build stages from these functions.
"""
