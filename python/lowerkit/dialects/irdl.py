"""Dialects defined without C++: IRDL modules in ``dialects/``, loaded by name.

An IRDL dialect is loaded into a torch-mlir context at most once (loading one twice crashes
MLIR), so `load_dialect` first asks the context whether the dialect's ops are known. Ops of
these dialects live only in torch-mlir's build: IREE knows none of them, so a module holds
none when it crosses (`check_no_custom_ops`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .build import Build
from .errors import OpDiagnostic, StageError

DIALECTS_DIR = Path(__file__).resolve().parents[2] / "dialects"

_DIALECT = re.compile(r"irdl\.dialect\s+@([\w$]+)")
_OPERATION = re.compile(r"irdl\.operation\s+@([\w$.]+)")


@dataclass(frozen=True)
class IRDLDialect:
    """An IRDL dialect: its name, its op names and the IRDL text that defines it."""

    name: str
    ops: tuple[str, ...]
    source: str
    path: Path | None = None

    @classmethod
    def from_file(cls, path: "str | Path") -> "IRDLDialect":
        path = Path(path)
        return cls.from_text(path.read_text(), path)

    @classmethod
    def from_text(cls, text: str, path: Path | None = None) -> "IRDLDialect":
        names = _DIALECT.findall(text)
        if len(names) != 1:
            raise ValueError(f"{path or 'IRDL text'}: expected one irdl.dialect, found {len(names)}")
        ops = tuple(f"{names[0]}.{op}" for op in _OPERATION.findall(text))
        return cls(names[0], ops, text, path)

    def is_loaded(self, context: Any) -> bool:
        return bool(self.ops) and context.is_registered_operation(self.ops[0])

    def load(self, context: Any) -> None:
        """Load into a torch-mlir ``context``; a no-op when it is loaded already."""
        if self.is_loaded(context):
            return
        from torch_mlir import ir
        from torch_mlir.dialects import irdl

        with context:
            irdl.load_dialects(ir.Module.parse(self.source, context))


def builtin_dialect(name: str) -> IRDLDialect:
    return IRDLDialect.from_file(DIALECTS_DIR / f"{name}.mlir")


def fused() -> IRDLDialect:
    """Fused high-level ops (gelu, silu, rms_norm) raised from torch and lowered to linalg."""
    return builtin_dialect("fused")


def load_dialect(context: Any, name: str) -> IRDLDialect | None:
    """Load dialect ``name`` into ``context`` (idempotent): a registered IRDL dialect, or one
    the build itself has (ops created from Python need their dialect loaded, not only known).
    """
    from .registry import dialects

    if name in dialects:
        dialect = dialects.get(name)
        dialect.load(context)
        return dialect
    if not context.is_dialect_loaded(name):
        if name == "torch_c":  # not in the Python registry: a pass that depends on it loads it
            _load_by_pass(context, "torch-func-backend-type-conversion")
        else:
            context.dialects[name]
    return None


def _load_by_pass(context: Any, pass_name: str) -> None:
    from torch_mlir import ir, passmanager

    with context:
        empty = ir.Module.parse("module {}", context)
        passmanager.PassManager.parse(f"builtin.module({pass_name})").run(empty.operation)


def load_dialects(context: Any, names: Iterable[str]) -> None:
    for name in names:
        load_dialect(context, name)


def dialects_used_in(text: str) -> list[str]:
    """Registered dialect names whose ops the MLIR text mentions (to load before parsing)."""
    from .registry import dialects

    return [n for n in dialects.names() if re.search(rf"\b{re.escape(n)}\.\w", text)]


def custom_ops_in(module: Any) -> list[tuple[str, str]]:
    """``(op name, location)`` of every op of a registered custom dialect in ``module``."""
    from .registry import dialects

    names = set(dialects.names())
    found: list[tuple[str, str]] = []
    advance = Build.of(module).ir.WalkResult.ADVANCE

    def visit(op):
        if op.name.split(".", 1)[0] in names:
            found.append((op.name, str(op.location)))
        return advance

    module.operation.walk(visit)
    return found


def check_no_custom_ops(module: Any, stage: str) -> None:
    """Raise a StageError naming every custom-dialect op left in ``module``."""
    left = custom_ops_in(module)
    if left:
        from .build import source_location

        diags = [OpDiagnostic("op of a custom (IRDL) dialect is left; lower it before IREE",
                              name, source_location(loc) or loc) for name, loc in left]
        ops = sorted({name for name, _ in left})
        raise StageError(
            stage,
            f"{len(left)} op(s) of custom dialects left: {', '.join(ops)}; IREE knows no "
            "IRDL dialect, so a pipeline must lower them (e.g. to linalg) first",
            diags,
        )


def check_no_custom_ops_stage():
    """The check as a stage, to end a pipeline that lowers custom dialects."""
    from .stage import FunctionStage

    def check(module):
        check_no_custom_ops(module, "check-no-custom-ops")

    return FunctionStage("check-no-custom-ops", check)
