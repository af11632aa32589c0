"""The crossing between torch-mlir's MLIR build and IREE's.

This is the one module that imports both ``torch_mlir.ir`` and ``iree.compiler.ir``. Their
objects must never mix (two copies of MLIR live in one process), so a module crosses only as
bytecode: written by one build, parsed by the other.
"""

from __future__ import annotations

import io
from typing import Any

from .build import Build
from .errors import StageError

CROSSING_STAGE = "bridge-to-iree"


def to_bytecode(module: Any) -> bytes:
    """Serialise a module of either build as MLIR bytecode."""
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def check_for_iree(module: Any) -> None:
    """Refuse a torch-mlir module that still holds ops of custom (IRDL) dialects: IREE cannot
    read them, so a StageError names each one left, with its source line."""
    if Build.of(module) is Build.TORCH_MLIR:
        from .irdl import check_no_custom_ops

        check_no_custom_ops(module, CROSSING_STAGE)


def to_iree_bytecode(module: Any) -> bytes:
    """The bytecode IREE receives: `to_bytecode` after `check_for_iree`."""
    check_for_iree(module)
    return to_bytecode(module)


def torch_mlir_to_iree(module: Any) -> Any:
    """Re-create a torch-mlir module inside a fresh IREE context (as bytecode)."""
    import torch_mlir.ir  # noqa: F401  (the source build; checked by Build.of)
    import iree.compiler.ir as iree_ir

    if Build.of(module) is not Build.TORCH_MLIR:
        raise StageError(CROSSING_STAGE, "expected a module of torch-mlir's MLIR build")
    data = to_iree_bytecode(module)
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
