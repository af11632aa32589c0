"""rewrite-bool-mask-index-put: ``y[mask] = scalar`` becomes ``where(mask, scalar, y)``.

torch-mlir lowers a boolean-mask ``index_put`` through ``nonzero`` (a data-dependent shape
and a scatter), which IREE 3.13's llvm-cpu backend cannot translate ("LLVM Translation failed
for operation: builtin.unrealized_conversion_cast"). When the mask has the shape of the
tensor and the value is a single element of the tensor's dtype, ``where`` is the same
computation with static shapes. Other forms are left alone.
"""

from __future__ import annotations

import re
from typing import Any

NAME = "rewrite-bool-mask-index-put"
_INDEX_PUT = {"torch.aten.index_put", "torch.aten.index_put.hacked_twin", "torch.aten.index_put_",
              "torch.aten._index_put_impl"}
_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(\w+)>$")


def _shape_dtype(value: Any) -> tuple[list[str], str] | None:
    m = _VTENSOR.match(str(value.type))
    if not m:
        return None
    dims = [d.strip() for d in m.group(1).split(",")] if m.group(1).strip() else []
    return dims, m.group(2)


def _is_false(value: Any) -> bool:
    op = value.owner
    return (getattr(op, "name", None) == "torch.constant.bool"
            and str(op.attributes["value"]) == "false")


def _rewritable(op: Any) -> bool:
    operands = list(op.operands)
    if len(operands) < 4 or not _is_false(operands[3]):
        return False
    self_t, indices, values = operands[0], operands[1], operands[2]
    if getattr(indices.owner, "name", None) != "torch.prim.ListConstruct":
        return False
    index_list = list(indices.owner.operands)
    if len(index_list) != 1:
        return False
    mask, this, value = (_shape_dtype(v) for v in (index_list[0], self_t, values))
    if mask is None or this is None or value is None:
        return False
    single = all(d == "1" for d in value[0])
    return mask[1] == "i1" and mask[0] == this[0] and "?" not in this[0] and single \
        and value[1] == this[1]


def run(module_op: Any, pass_: Any = None) -> None:
    """Rewrite every matching index_put in ``module_op`` (a module or function)."""
    from torch_mlir import ir

    matches = []

    def find(op):
        if op.name in _INDEX_PUT and _rewritable(op):
            matches.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(find)
    for op in matches:
        operands = list(op.operands)
        mask = list(operands[1].owner.operands)[0]
        with ir.InsertionPoint(op), op.location:
            where = ir.Operation.create(
                "torch.aten.where.self",
                results=[op.results[0].type],
                operands=[mask, operands[2], operands[0]],
            )
        op.results[0].replace_all_uses_with(where.results[0])
        op.erase()
