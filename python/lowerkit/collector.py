"""Python's full garbage collections, held off during a process's first compile.

The first compile of a process loads most of torch's compiler stack (torch.export, Dynamo,
sympy) and IREE's dialect packages. Every import adds long-lived objects, and Python answers a
heap that grows this fast with full collections, each of which walks the whole heap: torch, the
user's model and data. A cold ResNet-18 compile made five of them, 0.7 s of 6 s to its first
result (`benchmarks/compile_cold.py`). Later compiles import little, and Python seldom walks the
whole heap during them; they run as they are.

`held` collects the young generations at the start of the first compile (the caller's recent
garbage goes before the compile's peak, not after it; a full collection there walked the whole
heap for 0.1 s and found nothing in a cold ResNet-18 compile), freezes what exists
(``gc.freeze``: the collector skips it), and holds off full collections; the young
generations are still collected as usual, so the compile's short-lived cycles go as soon as
before. At the end it collects once, over the objects made since, and unfreezes: garbage the
caller had left in the oldest generation waits for Python's next full collection. When the
caller has turned the collector off, or frozen objects of its own, `held` leaves the collector
alone: undoing its ``gc.freeze`` would not be ours to do.
``LOWERKIT_HOLD_COLLECTIONS=0`` leaves it alone always (to measure without the hold, or to rule
it out).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

NO_FULL_COLLECTION = 1 << 30  # the oldest generation's threshold while held

_lock = threading.Lock()
_depth = 0  # nested and concurrent compiles: only the outermost holds and releases
_holding = False
_first_done = False  # the process's first compile has ended
_thresholds = gc.get_threshold()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold full collections off for the block, if it is the process's first compile (see the
    module's docstring)."""
    global _depth, _holding, _first_done, _thresholds
    with _lock:
        if _depth == 0:
            _thresholds = gc.get_threshold()
            _holding = (not _first_done and gc.isenabled() and gc.get_freeze_count() == 0
                        and _thresholds[0] > 0
                        and os.environ.get("LOWERKIT_HOLD_COLLECTIONS", "1") != "0")
            if _holding:
                gc.collect(1)  # the young generations: the oldest is frozen as it is
                gc.freeze()
                gc.set_threshold(_thresholds[0], _thresholds[1], NO_FULL_COLLECTION)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _first_done = True
                if _holding:
                    _holding = False
                    gc.set_threshold(*_thresholds)
                    gc.collect()  # the compile's own garbage: the frozen heap is not walked
                    gc.unfreeze()
