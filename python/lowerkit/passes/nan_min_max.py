"""keep-nan-min-max: a float min or max with a NaN operand is NaN on Vulkan, as eager gives it.

``arith.minimumf``/``maximumf`` propagate NaN, and torch-mlir lowers ``amin``, ``amax``, the
values of ``max``/``min`` over a dim and max pooling to them. IREE 3.13's SPIR-V code declares no float
controls, so the driver may compute a min or max as if no operand were NaN: Mesa's did, on
`vulkan:llvmpipe`, and ``torch.where(m, nan, x).amax(2)`` gave a number in each of 32 rows
holding a NaN (fuzz campaign seed 2115, program 153: ``(a / w).amin(2)`` with a ``0 / 0``).

Each such op keeps its result where neither operand is NaN and takes the NaN operand where one
is, the NaN test written with integer ops on the bits (exponent all ones, mantissa not zero),
which no float rule folds. Runs in IREE's MLIR build on linalg on tensors, for Vulkan targets
(`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

from typing import Any

from ._float_bits import UGT, exponent_test
from ._source_fence import ir_of, ops_where

NAME = "keep-nan-min-max"
BUILD = "iree"  # run on what IREE compiles, after the torch-level stages
_OPS = frozenset({"arith.minimumf", "arith.maximumf"})
_WIDTHS = frozenset({"f32", "f16"})


def keep(module_op: Any) -> int:
    """Rewrite every f32 or f16 ``arith.minimumf``/``maximumf``; returns how many."""
    ir = ir_of(module_op)
    found = ops_where(module_op, lambda op: op.name in _OPS
                      and str(op.results[0].type) in _WIDTHS)
    if not found:
        return 0
    for op in found:
        result = op.results[0]
        readers = [(use.owner, use.operand_number) for use in result.uses]
        with ir.InsertionPoint.after(op), op.location:
            def select(test, value, otherwise):
                return ir.Operation.create("arith.select", results=[result.type],
                                           operands=[test, value, otherwise]).results[0]

            a, b = op.operands[0], op.operands[1]
            on_b = select(exponent_test(b, UGT), b, result)
            kept = select(exponent_test(a, UGT), a, on_b)
        for reader, index in readers:
            reader.operands[index] = kept
    return len(found)


def run(module_op: Any, pass_: Any = None) -> None:
    keep(module_op)
