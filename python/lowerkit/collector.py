"""Python's cyclic garbage collector, held off while lowerkit compiles.

A compile makes hundreds of thousands of objects: FX graphs, fake tensors, MLIR handles, and the
modules torch imports on first use. Python's collector answers with full collections, and each
one walks the whole heap (torch, sympy, the user's model and data), not only the compile's
objects. On a cold ResNet-18 compile that was five full collections of about 400,000 objects,
0.7 s of a 6 s model-to-first-result (`benchmarks/compile_cold.py`).

`held` freezes what existed before the compile (``gc.freeze``: the collector skips it), turns
automatic collection off, and at the end collects once, over the objects made since, before
unfreezing. The compile's garbage cycles are still collected, at its end, and nothing older is
left to a later collection of the user's. When the caller has turned the collector off or frozen
objects of its own, `held` leaves the collector alone: undoing its ``gc.freeze`` would not be ours
to do.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0  # nested and concurrent compiles: only the outermost holds and releases
_holding = False


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold automatic collection off for the block (see the module's docstring)."""
    global _depth, _holding
    with _lock:
        if _depth == 0:
            _holding = gc.isenabled() and gc.get_freeze_count() == 0
            if _holding:
                gc.freeze()
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _holding:
                _holding = False
                gc.enable()
                gc.collect()  # the compile's own garbage: the frozen heap is not walked
                gc.unfreeze()
