"""A large input copied into IREE's host memory in huge pages.

A call copies each input into a buffer of IREE's (`executable.Executable._invoke` says why).
A buffer of several MiB is fresh memory from the kernel at every call, and the copy faults it
in 4 KiB page by page: a 64 MiB attention mask took 34-43 ms to copy in this way, where numpy,
which asks for transparent huge pages for its large arrays, copies the same bytes in 12 ms.
Here such a buffer is allocated without a copy, its 2 MiB-aligned span is advised to the
kernel as huge pages (``madvise(MADV_HUGEPAGE)``), and the input is copied into its mapping:
7.3 ms for that mask (on the Zen 4 host of the README's runs). Where the kernel gives no
transparent huge pages (``never``), or off Linux, the advice changes nothing, and the copy
costs what it did.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any

import numpy as np

HUGE_PAGE = 1 << 21
# from this size on, an input's buffer holds at least one whole aligned huge page
MIN_BYTES = 2 * HUGE_PAGE
_MADV_HUGEPAGE = 14  # Linux's, on every architecture


@functools.lru_cache(maxsize=1)
def madvise() -> Any:
    """libc's ``madvise``, or None off Linux or where it cannot be found (`copy_in` is then
    not used)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def copy_in(rt: Any, device: Any, memory: Any, usage: Any, arr: np.ndarray,
            element_type: Any) -> Any:
    """``arr`` (`MIN_BYTES` or more) copied into a new buffer view on a host ``device``, its
    pages advised as huge ones (where `madvise` is found)."""
    buffer = device.allocator.allocate_buffer(
        memory_type=memory | rt.MemoryType.HOST_VISIBLE, allowed_usage=usage,
        allocation_size=arr.nbytes)
    mapping = buffer.map()
    view = mapping.asarray(arr.shape, arr.dtype)
    _advise(view.ctypes.data, arr.nbytes)
    np.copyto(view, arr)
    del view, mapping
    return rt.HalBufferView(buffer, list(arr.shape), element_type)


def advise(buffer: Any, nbytes: int) -> None:
    """Advise a host buffer's pages (its first ``nbytes``) as huge ones, before anything
    faults them in (`lowerkit.runtime.transients`' kept buffers)."""
    mapping = buffer.map()
    view = mapping.asarray((nbytes,), np.dtype(np.uint8))
    _advise(view.ctypes.data, nbytes)
    del view, mapping


def _advise(address: int, nbytes: int) -> None:
    start = -(-address // HUGE_PAGE) * HUGE_PAGE
    end = (address + nbytes) // HUGE_PAGE * HUGE_PAGE
    if end > start:
        madvise()(start, end - start, _MADV_HUGEPAGE)  # advice: refused, it changes nothing
