"""Diagnostics: what went wrong, on which op, at which line of the user's source.

One record type serves every producer (a stage's MLIR diagnostics, iree-compile's console
output, a forked child's failure, ``lowerkit-opt``'s ``file:line:col: error:`` lines), so a
diagnostic reads the same wherever it was caught.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Diagnostic:
    """One diagnostic about one op: what went wrong and where it came from.

    ``location`` is ``"file.py:12"`` of the user's source or an MLIR location; ``line``/``col``
    are set where a tool reports a position in an MLIR file (``lowerkit-opt``). ``fallback``
    marks a summary standing in for diagnostics MLIR did not attach.
    """

    message: str
    op: str | None = None
    location: str | None = None
    severity: str = "error"  # error, warning, remark, note
    line: int | None = None
    col: int | None = None
    notes: list["Diagnostic"] = field(default_factory=list)
    fallback: bool = False

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        what = f"'{self.op}': " if self.op else ""
        return f"{where}{what}{self.message}"

    def render(self) -> str:
        """MLIR's console form: ``file:line:col: severity: message``."""
        where = self.location or "<unknown>"
        if self.line is not None:
            where += f":{self.line}" + (f":{self.col}" if self.col is not None else "")
        return f"{where}: {self.severity}: {self.message}"


_FILE_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')
_OP_IN_MESSAGE = (
    re.compile(r"^'([\w$.]+)' op "),
    re.compile(r"operation '([\w$.]+)'"),
    re.compile(r"op '([\w$.]+)'"),
)
_TORCH_OPERATOR = re.compile(r'"torch\.operator"\([^)]*\) <\{name = "([\w.]+)"')
_INTERNAL = ("/lowerkit/", "/torch/", "/torch_mlir/", "<frozen ", "/site-packages/")


def source_location(location: Any) -> str | None:
    """``file:line`` of the user's frame in an MLIR location: the first file location that is
    not inside lowerkit, torch or torch-mlir (else the first one at all)."""
    found = [f"{m.group(1)}:{m.group(2)}" for m in _FILE_LOC.finditer(str(location))]
    for loc in found:
        if not any(part in loc for part in _INTERNAL):
            return loc
    return found[0] if found else None


def op_in_message(message: str) -> str | None:
    """The op a diagnostic's text is about, where it names one."""
    m = _TORCH_OPERATOR.search(message)  # an op torch-mlir has no definition for
    if m:
        return m.group(1)
    for pattern in _OP_IN_MESSAGE:
        m = pattern.search(message)
        if m:
            return m.group(1)
    return None


class DiagnosticCapture:
    """Collects the error diagnostics a context emits while active (``with`` block)."""

    def __init__(self, context: Any):
        self.context = context
        self.errors: list[Diagnostic] = []
        self._handler = None

    def __enter__(self) -> "DiagnosticCapture":
        package = type(self.context).__module__.rsplit(".", 1)[0]
        error = importlib.import_module(package + ".ir").DiagnosticSeverity.ERROR

        def handle(diag):
            if diag.severity == error:
                self.errors.append(Diagnostic(
                    diag.message, location=str(diag.location),
                    notes=[Diagnostic(n.message, location=str(n.location), severity="note")
                           for n in diag.notes]))
            return True  # consumed: nothing is printed behind the user's back

        self._handler = self.context.attach_diagnostic_handler(handle)
        return self

    def __exit__(self, *exc) -> None:
        self._handler.detach()
        # The handler object keeps its callback (which refers to this capture, and so to the
        # context) where Python's collector cannot see: without this every context that ever
        # ran a stage stayed alive (~3 MB a compiled program, 4 GB over a 1000-program fuzz).
        self._handler = None


def diagnostics_of(error: Exception, captured: list[Any] = ()) -> list[Diagnostic]:
    """Diagnostics (op and user's line) from captured ones and an ``MLIRError`` of either build."""
    infos = list(captured) + list(getattr(error, "error_diagnostics", None) or [])
    out: list[Diagnostic] = []
    for info in infos:
        message = info.message
        notes = [n.message for n in getattr(info, "notes", [])
                 if not n.message.startswith("see current operation")]
        if notes:
            message += " (" + "; ".join(notes) + ")"
        diag = Diagnostic(message, op_in_message(info.message), source_location(info.location))
        if all(str(d) != str(diag) for d in out):
            out.append(diag)
    if not out:
        out.append(Diagnostic(getattr(error, "message", None) or str(error)))
    return out
