"""The transient memory a loaded program's calls run in, kept from call to call.

A CPU program compiled by lowerkit has a twin entry point that takes its intermediate tensors'
memory as an argument (`lowerkit.iree.transients` says why). Each loaded program keeps one
buffer of that size per call in flight: a call takes a free one, or allocates one if every
buffer is in use by another thread's call, and gives it back when IREE's call returns (calls
are synchronous, and no result lives in transient memory). The memory stays with the loaded
program between calls, as a caching allocator's would: ``LOWERKIT_KEEP_TRANSIENTS=0`` calls
the plain entry point instead, which allocates and frees it at every call.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from . import huge_pages

SIZE_KEY = "iree.abi.transients.size.constant"
# glibc's largest mmap threshold on a 64-bit host (DEFAULT_MMAP_THRESHOLD_MAX): a slab up to
# this size comes from glibc's heap after the first call, which keeps it for every program; a
# larger one is mapped afresh at every call. Below it a buffer kept per program gains nothing
# (benchmarks/transients.py: level within the run's spread) and only adds memory, so the plain
# entry point serves it.
MIN_SLAB_BYTES = 32 << 20


def wanted() -> bool:
    """Whether calls keep their transient memory (``LOWERKIT_KEEP_TRANSIENTS``, on unless 0)."""
    return os.environ.get("LOWERKIT_KEEP_TRANSIENTS", "1") != "0"


def pays(size: int) -> bool:
    """Whether a program whose twin needs ``size`` transient bytes is called through it."""
    return size > MIN_SLAB_BYTES


def size_of(fn: Any) -> int:
    """The transient bytes a twin entry point says it needs, 0 if it says none."""
    try:
        return int(fn.reflection.get(SIZE_KEY) or 0)
    except (TypeError, ValueError):
        return 0


class TransientStorage:
    """The buffers one loaded program's twin entry point is called with."""

    def __init__(self, rt: Any, device: Any, size: int, host: bool):
        self.size = size
        self._rt, self._device, self._host = rt, device, host
        self._free: list[Any] = []
        self.allocated = 0  # buffers made so far: one per call that was in flight at once

    def _allocate(self) -> Any:
        rt = self._rt
        memory = rt.MemoryType.DEVICE_LOCAL
        if self._host:
            memory = memory | rt.MemoryType.HOST_VISIBLE
        buffer = self._device.allocator.allocate_buffer(
            memory_type=memory, allowed_usage=rt.BufferUsage.DEFAULT,
            allocation_size=self.size)
        if self._host and self.size >= huge_pages.MIN_BYTES and huge_pages.madvise():
            huge_pages.advise(buffer, self.size)
        self.allocated += 1
        return buffer

    def take(self) -> Any:
        """A buffer for one call: a free one, else a new one."""
        free = self._free
        return free.pop() if free else self._allocate()

    def give(self, buffer: Any) -> None:
        """A buffer whose call has returned, free for the next."""
        self._free.append(buffer)

    def invoke(self, call: Callable[..., Any], context: Any, fn: Any, args: Any,
               results: Any) -> Any:
        """``call(context, fn, args, results)`` with a transient buffer as the last argument."""
        buffer = self.take()
        args.push_ref(buffer)
        try:
            return call(context, fn, args, results)
        finally:
            self.give(buffer)
