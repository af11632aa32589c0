"""Runtime: a compiled vmfb loaded on a device (`executable`), called with torch tensors in and
out (`artifact`), and checked against eager PyTorch (`numerics`, `verify`)."""

from .executable import DeviceTensor

__all__ = ["DeviceTensor"]
