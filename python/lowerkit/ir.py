"""The two MLIR builds lowerkit drives, and what is common to modules of either.

torch-mlir and iree-base-compiler each bundle their own MLIR. Their objects never mix: a
module of one build is handed to the other only by `lowerkit.bridge`, as bytecode.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections import Counter
from types import ModuleType
from typing import Any

from .errors import OpDiagnostic


class Build(enum.Enum):
    """Which MLIR build a stage runs in."""

    TORCH_MLIR = "torch-mlir"
    IREE = "iree"

    @property
    def ir(self) -> ModuleType:
        return importlib.import_module(
            "torch_mlir.ir" if self is Build.TORCH_MLIR else "iree.compiler.ir"
        )

    @property
    def passmanager(self) -> ModuleType:
        return importlib.import_module(
            "torch_mlir.passmanager" if self is Build.TORCH_MLIR else "iree.compiler.passmanager"
        )

    @property
    def opt_tool(self) -> str:
        return "torch-mlir-opt" if self is Build.TORCH_MLIR else "iree-opt"

    def owns(self, module: Any) -> bool:
        return isinstance(module, self.ir.Module)

    @staticmethod
    def of(module: Any) -> "Build":
        for build in Build:
            if build.owns(module):
                return build
        raise TypeError(f"expected an MLIR module of torch-mlir or IREE, got {type(module).__name__}")


def parse_module_source(build: "Build", source: Any, context: Any) -> Any:
    """A module from MLIR text, a ``.mlir`` path (a Path, or a string such as
    ``"patterns.mlir"``, which MLIR text never is), or a Python builder ``f(context)``: how
    PDL pattern modules and transform scripts are given to stages."""
    import os
    from pathlib import Path

    if callable(source):
        return source(context)
    if isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source and source.endswith(".mlir")):
        source = Path(source).read_text()
    return build.ir.Module.parse(source, context)


def op_histogram(module: Any) -> Counter:
    """How many ops of each name a module holds (the module op itself excluded)."""
    counts: Counter = Counter()
    walk_result = Build.of(module).ir.WalkResult.ADVANCE

    def count(op):
        counts[op.name] += 1
        return walk_result

    module.operation.walk(count)
    counts["builtin.module"] -= 1
    if counts["builtin.module"] <= 0:
        del counts["builtin.module"]
    return counts


def module_asm(module: Any, *, elide: bool = True, debug_info: bool = False) -> str:
    """Print a module; large constants are elided unless asked for."""
    return module.operation.get_asm(
        large_elements_limit=16 if elide else None,
        large_resource_limit=64 if elide else None,
        enable_debug_info=debug_info,
    )


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
        self.errors: list[Any] = []
        self._handler = None

    def __enter__(self) -> "DiagnosticCapture":
        severity = type(self.context).__module__.rsplit(".", 1)[0]
        error = importlib.import_module(severity + ".ir").DiagnosticSeverity.ERROR

        def handle(diag):
            if diag.severity == error:
                self.errors.append(_Diag(str(diag.location), diag.message,
                                         [_Diag(str(n.location), n.message, []) for n in diag.notes]))
            return True  # consumed: nothing is printed behind the user's back

        self._handler = self.context.attach_diagnostic_handler(handle)
        return self

    def __exit__(self, *exc) -> None:
        self._handler.detach()
        # The handler object keeps its callback (which refers to this capture, and so to the
        # context) where Python's collector cannot see: without this every context that ever
        # ran a stage stayed alive (~3 MB a compiled program, 4 GB over a 1000-program fuzz).
        self._handler = None


class _Diag:
    def __init__(self, location: str, message: str, notes: list):
        self.location, self.message, self.notes = location, message, notes


def diagnostics_of(error: Exception, captured: list[Any] = ()) -> list[OpDiagnostic]:
    """OpDiagnostics from captured diagnostics and an ``MLIRError`` of either build."""
    infos = list(captured) + list(getattr(error, "error_diagnostics", None) or [])
    out = []
    for info in infos:
        message = info.message
        notes = [n.message for n in getattr(info, "notes", [])
                 if not n.message.startswith("see current operation")]
        if notes:
            message += " (" + "; ".join(notes) + ")"
        diag = OpDiagnostic(message, op_in_message(info.message), source_location(info.location))
        if all(str(d) != str(diag) for d in out):
            out.append(diag)
    if not out:
        out.append(OpDiagnostic(getattr(error, "message", None) or str(error)))
    return out
