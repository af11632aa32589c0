"""fold-empty-cat: a ``cat`` whose result is empty along the joined dimension is any one input.

torch-mlir (20261001) drops the operands of ``aten.cat`` that have size 0 along the joined
dimension; when they all do (``torch.cat([x, x], 0)`` of a 0x4 ``x``, or of two ``x[:0]``
slices) it builds a ``tensor.concat`` with no operands and the linalg-on-tensors stage fails
with "'tensor.concat' op requires at least one input" (found by lowerkit's fuzzer; see
test_fuzz_regressions.py). The result then has exactly the shape of each operand (the other
dims agree), so the op is replaced by its first operand. Runs on the torch dialect, before the
backend contract.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "fold-empty-cat"


def _rewrite(op: Any) -> list[Any] | None:
    tensors, dim_value = op.operands[0], op.operands[1]
    if t.owner_name(tensors) != "torch.prim.ListConstruct":
        return None
    dim = t.const_int(dim_value)
    result = t.vtensor(op.results[0])
    if dim is None or result is None:
        return None
    shape, _ = result
    if not shape or None in shape:
        return None
    dim = dim % len(shape)
    if shape[dim] != 0:
        return None
    for x in tensors.owner.operands:
        if str(x.type) == str(op.results[0].type):
            return [x]
    return None


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.cat"}, _rewrite)
