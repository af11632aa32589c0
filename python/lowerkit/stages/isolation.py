"""Running a stage in a forked child, so that a native crash never kills the user's interpreter.

torch-mlir's passes are C++ running inside this process: on some inputs they segfault or
abort (e.g. arithmetic on ``uint8`` tensors). A stage run in isolation works on a forked copy
of the process and hands its result back as bytecode through a pipe; if the child dies, the
parent raises a `StageError` naming the stage and the signal, with a reproducer. Set
``LOWERKIT_ISOLATE=0`` to run every stage in-process (e.g. under a debugger).
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

from ..diagnostics import Diagnostic, DiagnosticCapture
from ..ir import to_bytecode


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


def _serialise_diags(diags: list[Any]) -> list:
    return [[str(d.location), d.message, _serialise_diags(list(getattr(d, "notes", [])))]
            for d in diags]


def _restore_diags(items: list) -> list[Diagnostic]:
    return [Diagnostic(msg, location=loc, notes=_restore_diags(notes)) for loc, msg, notes in items]


def _child(stage: Any, module: Any, fd: int) -> None:
    import faulthandler

    faulthandler.disable()  # a crash here is reported by the parent, with the stage's name
    try:
        module.context.enable_multithreading(False)  # the parent's worker threads are not here
        capture = DiagnosticCapture(module.context)
        try:
            with module.context, capture:
                result = stage.apply(module)
            payload = b"M" + to_bytecode(module if result is None else result)
        except Exception as e:  # reported by the parent like an in-process failure
            diags = capture.errors + list(getattr(e, "error_diagnostics", None) or [])
            payload = b"E" + json.dumps({
                "message": f"{type(e).__name__}: {getattr(e, 'message', None) or e}",
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
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        _child(stage, module, write_fd)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(1 << 20):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if os.WIFSIGNALED(status):
        raise ChildCrashed(f"crashed with {signal.Signals(os.WTERMSIG(status)).name}")
    if not data or (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0):
        raise ChildCrashed(f"exited with status {os.waitstatus_to_exitcode(status)} and no result")
    if data[:1] == b"E":
        failure = json.loads(data[1:])
        raise ChildFailed(failure["message"], _restore_diags(failure["diagnostics"]))
    # The child's passes loaded dialects (tm_tensor, linalg, ...) that this context may not
    # have yet; the stage loads them here before the result is parsed.
    stage.load_dialects(module.context)
    return stage.build.ir.Module.parse(data[1:], context=module.context)
