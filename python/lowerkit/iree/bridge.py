"""The crossing between torch-mlir's MLIR build and IREE's.

This is the one module that moves a module from ``torch_mlir.ir`` to ``iree.compiler.ir``.
Their objects must never mix (two copies of MLIR live in one process), so a module crosses
only as bytecode: written by one build, parsed by the other. Ops of lowerkit's IRDL dialects
exist only in torch-mlir's build, so none may be left when a module crosses.
"""

from __future__ import annotations

from typing import Any

from .. import registry
from ..diagnostics import Diagnostic, source_location
from ..errors import StageError
from ..ir import Build, to_bytecode

CROSSING_STAGE = "bridge-to-iree"


def custom_ops_in(module: Any) -> list[tuple[str, str]]:
    """``(op name, location)`` of every op of a registered custom dialect in ``module``."""
    names = set(registry.dialects.names())
    found: list[tuple[str, str]] = []
    advance = Build.of(module).ir.WalkResult.ADVANCE

    def visit(op):
        if op.name.split(".", 1)[0] in names:
            found.append((op.name, str(op.location)))
        return advance

    module.operation.walk(visit)
    return found


def check_no_custom_ops(module: Any, stage: str) -> None:
    """Raise a StageError naming every custom-dialect op left in ``module``, with its line."""
    left = custom_ops_in(module)
    if left:
        diags = [Diagnostic("op of a custom (IRDL) dialect is left; lower it before IREE",
                            name, source_location(loc) or loc) for name, loc in left]
        ops = sorted({name for name, _ in left})
        raise StageError(
            stage,
            f"{len(left)} op(s) of custom dialects left: {', '.join(ops)}; IREE knows no "
            "IRDL dialect, so a pipeline must lower them (e.g. to linalg) first",
            diags,
        )


def check_for_iree(module: Any) -> None:
    """Refuse a torch-mlir module that still holds ops of custom (IRDL) dialects: IREE cannot
    read them, so a StageError names each one left, with its source line."""
    if Build.of(module) is Build.TORCH_MLIR:
        check_no_custom_ops(module, CROSSING_STAGE)


def to_iree_bytecode(module: Any) -> bytes:
    """The bytecode IREE receives: `to_bytecode` after `check_for_iree`."""
    check_for_iree(module)
    return to_bytecode(module)


def torch_mlir_to_iree(module: Any) -> Any:
    """Re-create a torch-mlir module inside a fresh IREE context (as bytecode)."""
    if Build.of(module) is not Build.TORCH_MLIR:
        raise StageError(CROSSING_STAGE, "expected a module of torch-mlir's MLIR build")
    data = to_iree_bytecode(module)
    iree_ir = Build.IREE.ir
    ctx = iree_ir.Context()
    ctx.allow_unregistered_dialects = False
    try:
        return iree_ir.Module.parse(data, ctx)
    except Exception as e:  # MLIRError: an op IREE's build does not know
        raise StageError(
            CROSSING_STAGE,
            f"IREE's MLIR could not read the module: {getattr(e, 'message', e)}; "
            "every op must belong to a dialect IREE registers (lower custom dialects first)",
        ) from e
