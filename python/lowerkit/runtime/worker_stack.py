"""The stack of IREE's local-task worker threads, which run a CPU program's dispatches.

IREE gives each worker 128 KiB unless told otherwise (``--task_worker_stack_size``), and
iree-compile lets a llvm-cpu dispatch keep up to 32 KiB on its stack. Data-tiled convolutions
(`lowerkit.tuning.DATA_TILED`) need more: ResNet-50's first residual add fused with its 1x1
convolution kept 113 KiB there at 224x224 and 129 KiB at 448x448, so lowerkit lets such a
compile go up to 256 KiB, and must then give the workers room for it, or a dispatch runs off
its stack and takes the interpreter with it. The flag is process-wide and read when IREE first
creates its local-task driver, so lowerkit sets it before it asks IREE for any driver; a
larger size set through ``IREE_PY_RUNTIME_FLAGS`` is kept. Workers that only reserve the
memory cost nothing until a dispatch touches it.
"""

from __future__ import annotations

import os
import re
import threading

WORKER_STACK_BYTES = 1 << 20  # four times the largest stack any lowerkit compile allows
FLAG = "--task_worker_stack_size"

_done = False
_lock = threading.Lock()


def user_worker_stack() -> int | None:
    """The worker stack size ``IREE_PY_RUNTIME_FLAGS`` asks for, if it names one."""
    found = re.findall(rf"{FLAG}=(\d+)", os.environ.get("IREE_PY_RUNTIME_FLAGS", ""))
    return int(found[-1]) if found else None


def ensure_worker_stacks() -> None:
    """Before IREE's first driver: its local-task workers get `WORKER_STACK_BYTES` of stack,
    or the user's larger size. Once per process."""
    global _done
    with _lock:
        if _done:
            return
        import iree.runtime as rt

        size = max(WORKER_STACK_BYTES, user_worker_stack() or 0)
        rt.flags.parse_flags(f"{FLAG}={size}")
        _done = True
