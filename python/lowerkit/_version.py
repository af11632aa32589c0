"""lowerkit's version: a leaf, so that anything may read it without importing the package."""

__version__ = "0.1.0"
