"""Models defined in the repo with random weights (nothing downloaded), for checks and benchmarks.

Each factory returns ``(model, args)`` and runs through ``lowerkit run MODULE.py:FACTORY``.
"""
