"""keep-nan-zero-products: ``x * 0`` stays NaN where ``x`` is infinite or NaN, on Vulkan.

Like ``x - x`` (`keep-nan-self-subtract`), a product with a zero constant is a rule a driver
without float controls folds to 0, and Mesa's does: ``softshrink(nan)``, which PyTorch
decomposes to ``where(|x| > l, x - sign(x) * l, x * 0)``, came out 0 on `vulkan:llvmpipe` and
the portable target where eager (and lowerkit's CPU code) gives NaN.

Each f32 or f16 ``arith.mulf`` by a constant zero (a scalar, or an element of a zero tensor:
``x * torch.zeros_like(x)`` was 0 for a NaN ``x`` on both Vulkan targets) keeps its product
where ``x``'s exponent bits are not all ones and is NaN where they are, the test written with
integer ops on the bits.
Runs in IREE's MLIR build on linalg on tensors, for Vulkan targets
(`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

from typing import Any

from ._float_bits import UGE, exponent_test
from ._source_fence import ir_of, ops_where

NAME = "keep-nan-zero-products"
BUILD = "iree"  # run on what IREE compiles, after the torch-level stages
_WIDTHS = frozenset({"f32", "f16"})


def _zero(value: Any, ir: Any) -> bool:
    """A constant zero: a scalar, or a ``linalg.generic``'s element of a zero tensor (a splat
    constant or a fill of a zero, as ``x * torch.zeros_like(x)`` arrives: IREE fuses it into
    the dispatch as a scalar zero, which the driver folds the same way)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        generic = owner.owner
        index = ir.BlockArgument(value).arg_number
        return generic.name == "linalg.generic" and index < len(generic.operands) \
            and _zero_tensor(generic.operands[index], ir)
    if owner.name != "arith.constant":
        return False
    attr = owner.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def _zero_tensor(value: Any, ir: Any) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return False
    if owner.name == "linalg.fill":
        return _zero(owner.operands[0], ir)
    if owner.name != "arith.constant" or not isinstance(owner.attributes["value"],
                                                        ir.DenseFPElementsAttr):
        return False
    dense = ir.DenseFPElementsAttr(owner.attributes["value"])
    return dense.is_splat and ir.FloatAttr(dense.get_splat_value()).value == 0.0


def keep(module_op: Any) -> int:
    """Rewrite every f32 or f16 ``arith.mulf`` by a constant zero; returns how many."""
    ir = ir_of(module_op)
    found = ops_where(module_op, lambda op: op.name == "arith.mulf"
                      and str(op.results[0].type) in _WIDTHS
                      and any(_zero(v, ir) for v in op.operands))
    for op in found:
        product = op.results[0]
        x = op.operands[1] if _zero(op.operands[0], ir) else op.operands[0]
        readers = [(use.owner, use.operand_number) for use in product.uses]
        with ir.InsertionPoint.after(op), op.location:
            nan = ir.Operation.create("arith.constant", results=[product.type],
                                      attributes={"value": ir.FloatAttr.get(product.type,
                                                                            float("nan"))}).results[0]
            kept = ir.Operation.create("arith.select", results=[product.type],
                                       operands=[exponent_test(x, UGE), nan, product]).results[0]
        for reader, index in readers:
            reader.operands[index] = kept
    return len(found)


def run(module_op: Any, pass_: Any = None) -> None:
    keep(module_op)
