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

`loading` holds full collections off, without freezing, while lowerkit loads a module on
first use (``lowerkit.compile`` loads the compile path: sympy, torch_mlir, IREE's bindings)
until the first compile has ended: the heap grows most in those imports, and a cold ResNet-18
compile made one or two full collections there, 0.1 s each, before `held` began. Released
with no compile begun, it collects the youngest generation only, so that the next hundreds of
allocations (the call into `held`) cannot set off the full collection the loaded modules made
due; Python makes it at its next chance after that.

`loaded` freezes what a held compile has loaded so far: the compile path (torch.export's
tracer, sympy, torch-mlir's importer), which lowerkit loads at the first compile that traces,
since a compile the cache answers by fingerprint needs none of it.
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
_loading = 0  # nested and concurrent `loading` spans
_loading_thresholds: tuple[int, ...] | None = None  # the caller's, while `loading` holds


def _may_hold() -> bool:
    """Whether the collector is ours to hold: on, unfrozen, not turned off by the caller."""
    return (not _first_done and gc.isenabled() and gc.get_freeze_count() == 0
            and gc.get_threshold()[0] > 0
            and os.environ.get("LOWERKIT_HOLD_COLLECTIONS", "1") != "0")


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold full collections off for the block, if it is the process's first compile (see the
    module's docstring)."""
    global _depth, _holding, _first_done, _thresholds
    with _lock:
        if _depth == 0:
            _thresholds = _loading_thresholds or gc.get_threshold()
            _holding = _may_hold()
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


def loaded() -> None:
    """Modules loaded inside a held compile (the compile path, loaded once a compile must
    trace) join what `held` froze at its start: the collection that ends it skips them."""
    with _lock:
        if _holding:
            gc.freeze()


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Hold full collections off while a module loads, before the process's first compile
    (see the module's docstring)."""
    global _loading, _loading_thresholds
    with _lock:
        ours = _depth == 0 and (_loading > 0 or _may_hold())
        if ours:
            if _loading == 0:
                _loading_thresholds = gc.get_threshold()
                gc.set_threshold(*_loading_thresholds[:2], NO_FULL_COLLECTION)
            _loading += 1
    try:
        yield
    finally:
        if ours:
            with _lock:
                _loading -= 1
                if _loading == 0:
                    if _depth == 0:  # no compile took the hold over: the caller's settings
                        gc.set_threshold(*_loading_thresholds)
                        gc.collect(0)
                    _loading_thresholds = None
