"""Dialects defined without C++: IRDL modules (the repository's ``dialects/``, shipped in the
package as ``lowerkit/dialects/definitions``), loaded by name.

An IRDL dialect is loaded into a torch-mlir context at most once (loading one twice crashes
MLIR), so `load_dialect` first asks the context whether the dialect's ops are known. Ops of
these dialects live only in torch-mlir's build: IREE knows none of them, so a module holds
none when it crosses (`lowerkit.iree.bridge.check_no_custom_ops`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..registry import dialects

DIALECTS_DIR = Path(__file__).parent / "definitions"

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
    return [n for n in dialects.names() if re.search(rf"\b{re.escape(n)}\.\w", text)]
