"""A user's package (not installed): its stage functions replay by importing it from its root."""

MESSAGE = "replay-test: the package's function stage refuses"
