"""Running a stage in a forked child, so that a native crash never kills the user's interpreter.

torch-mlir's passes are C++ running inside this process: on some inputs they segfault or
abort (e.g. arithmetic on ``uint8`` tensors). A stage run in isolation works on a forked copy
of the process and hands its result back as bytecode through a pipe; if the child dies, the
parent raises a `StageError` naming the stage and the signal, with a reproducer. Set
``LOWERKIT_ISOLATE=0`` to run every stage in-process (e.g. under a debugger).

Some inputs make a pass allocate without end instead (torch-mlir's linalg lowering of a 2-D
boolean index grew by 6 GB in 30 s). The child may grow its address space by a budget, half
the memory available when it starts (at least 2 GiB; ``LOWERKIT_STAGE_MEMORY_GIB`` sets it,
0 lifts it), so that such a stage fails with an error instead of taking the machine's memory,
and the child dies with its parent, so that an interrupted compile leaves nothing running.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

from ..diagnostics import Diagnostic, DiagnosticCapture
from ..ir import to_bytecode

MEMORY_ENV = "LOWERKIT_STAGE_MEMORY_GIB"
MIN_BUDGET = 2 << 30  # bytes: the least an isolated stage may grow by


def enabled() -> bool:
    return os.environ.get("LOWERKIT_ISOLATE", "1") not in ("0", "false", "no") and hasattr(os, "fork")


class ChildFailed(Exception):
    """The stage raised in the child: its diagnostics come back to be reported as usual."""

    def __init__(self, message: str, diagnostics: list[Diagnostic]):
        super().__init__(message)
        self.message = message
        self.error_diagnostics = diagnostics


class ChildCrashed(Exception):
    """The child died (a signal or an unexpected exit) while running the stage."""

    def __init__(self, how: str):
        super().__init__(how)
        self.how = how


def proc_field_bytes(field: str, path: str = "/proc/meminfo") -> int | None:
    """A ``kB`` field of ``/proc/meminfo`` or ``/proc/self/status``, in bytes (None off Linux)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def memory_budget() -> int | None:
    """Bytes an isolated stage may grow its address space by; None for no limit."""
    asked = os.environ.get(MEMORY_ENV)
    if asked is not None:
        try:
            gib = float(asked)
        except ValueError:
            raise ValueError(f"{MEMORY_ENV}={asked!r}: a number of GiB (0: no limit)") from None
        return int(gib * (1 << 30)) if gib > 0 else None
    available = proc_field_bytes("MemAvailable")
    return None if available is None else max(MIN_BUDGET, available // 2)


def _confine(budget: int | None) -> None:
    """In the child: die with the parent, and grow by at most ``budget`` bytes."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if budget is None:
        return
    import resource

    size = proc_field_bytes("VmSize", "/proc/self/status")
    if size is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + budget
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _over_budget(budget: int) -> str:
    return (f" past its memory budget of {budget / (1 << 30):.1f} GiB: a pass that allocates "
            f"without end, or a program that needs more ({MEMORY_ENV} raises the budget, 0 "
            f"lifts it)")


def _serialise_diags(diags: list[Any]) -> list:
    return [[str(d.location), d.message, _serialise_diags(list(getattr(d, "notes", [])))]
            for d in diags]


def _restore_diags(items: list) -> list[Diagnostic]:
    return [Diagnostic(msg, location=loc, notes=_restore_diags(notes)) for loc, msg, notes in items]


def _child(stage: Any, module: Any, fd: int, budget: int | None) -> None:
    import faulthandler

    faulthandler.disable()  # a crash here is reported by the parent, with the stage's name
    try:
        _confine(budget)
        module.context.enable_multithreading(False)  # the parent's worker threads are not here
        capture = DiagnosticCapture(module.context)
        try:
            with module.context, capture:
                result = stage.apply(module)
            payload = b"M" + to_bytecode(module if result is None else result)
        except Exception as e:  # reported by the parent like an in-process failure
            diags = capture.errors + list(getattr(e, "error_diagnostics", None) or [])
            message = f"{type(e).__name__}: {getattr(e, 'message', None) or e}"
            if isinstance(e, MemoryError) and budget is not None:
                message += _over_budget(budget)
            payload = b"E" + json.dumps({
                "message": message,
                "diagnostics": _serialise_diags(diags),
            }).encode()
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os._exit(0)


def run_isolated(stage: Any, module: Any) -> Any:
    """``stage.apply(module)`` in a forked child; returns the resulting module (parsed into
    ``module``'s context), or raises ChildFailed / ChildCrashed."""
    budget = memory_budget()
    resident = proc_field_bytes("VmRSS", "/proc/self/status") or 0
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        _child(stage, module, write_fd, budget)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(1 << 20):
            chunks.append(chunk)
    _, status, usage = os.wait4(pid, 0)
    data = b"".join(chunks)
    if os.WIFSIGNALED(status) or not data or (os.WIFEXITED(status)
                                              and os.WEXITSTATUS(status) != 0):
        how = (f"crashed with {signal.Signals(os.WTERMSIG(status)).name}"
               if os.WIFSIGNALED(status) else
               f"exited with status {os.waitstatus_to_exitcode(status)} and no result")
        grown = usage.ru_maxrss * 1024 - resident  # ru_maxrss: KiB on Linux
        if budget is not None and grown > budget // 2:
            how += f" after growing by {grown / (1 << 30):.1f} GiB," + _over_budget(budget)
        raise ChildCrashed(how)
    if data[:1] == b"E":
        failure = json.loads(data[1:])
        raise ChildFailed(failure["message"], _restore_diags(failure["diagnostics"]))
    # The child's passes loaded dialects (tm_tensor, linalg, ...) that this context may not
    # have yet; the stage loads them here before the result is parsed.
    stage.load_dialects(module.context)
    return stage.build.ir.Module.parse(data[1:], context=module.context)
