"""fold-wide-casts-into-reductions: a reduction reads the narrow tensor and widens each element itself.

torch-mlir computes a variance in f64 (``torch.var``, ``group_norm``, ``var_mean``): one
elementwise op widens the f32 input to f64, and two reductions (the mean, then the squared
deviations) read it. Dispatch formation gives each reduction its own copy of the widening op,
and IREE 3.13's SPIR-V code, which has no subgroup reduction of 64-bit values, then keeps that
copy's whole tile in workgroup memory: ``torch.var(a, -1)`` of a [4, 1024] f32 tensor asked
for 32832 bytes on `vulkan:llvmpipe`, over its 32768, and failed to compile (fuzz campaign
seed 2113, programs 1530-1533: ``F.group_norm(a, 2)`` over [2, 32, 64]).

Each reduction that reads a 64-bit tensor computed by a lone cast (a ``linalg.generic`` of
identity maps whose body only casts its one input) reads the cast's input instead and casts in
its own body: the same values, no 64-bit tile. The cast stays for any other reader. Runs in
IREE's MLIR build on linalg on tensors, for Vulkan targets (`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

from typing import Any

from ._linalg import reduces
from ._source_fence import ir_of, ops_where

NAME = "fold-wide-casts-into-reductions"
BUILD = "iree"  # run on what IREE compiles, after the torch-level stages
_CASTS = frozenset({"arith.extf", "arith.extsi", "arith.extui", "arith.sitofp", "arith.uitofp",
                    "arith.truncf", "arith.fptosi", "arith.fptoui", "arith.trunci"})
_WIDE = frozenset({"f64", "i64"})


def _lone_cast(value: Any, ir: Any) -> Any:
    """The cast op of the ``linalg.generic`` that computes ``value`` by casting its one input
    elementwise (identity maps, all loops parallel), or None."""
    producer = getattr(value.owner, "operation", value.owner)
    if not isinstance(producer, ir.Operation) or producer.name != "linalg.generic" \
            or len(producer.operands) != 2 or len(producer.results) != 1:
        return None
    if reduces(producer):
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(producer.attributes["indexing_maps"])]
    if not all(m.is_permutation and m == ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return None
    body = producer.regions[0].blocks[0]
    ops = list(body.operations)
    if len(ops) != 2 or ops[0].name not in _CASTS or ops[1].name != "linalg.yield":
        return None
    cast, yielded = ops[0], ops[1]
    if cast.operands[0] != body.arguments[0] or yielded.operands[0] != cast.results[0]:
        return None
    return cast


def fold(module_op: Any) -> int:
    """Fold each lone cast to f64 or i64 into every reduction that reads it; returns how many
    operands were rewritten."""
    ir = ir_of(module_op)
    reductions = ops_where(module_op, reduces)
    folded = 0
    for reduction in reductions:
        n_in = len(reduction.operands) - len(reduction.results)
        block = reduction.regions[0].blocks[0]
        for index in range(n_in):
            source = reduction.operands[index]
            if str(ir.RankedTensorType(source.type).element_type) not in _WIDE:
                continue
            cast = _lone_cast(source, ir)
            if cast is None:
                continue
            producer = cast.parent
            narrow = producer.operands[0]
            argument = block.arguments[index]
            reduction.operands[index] = narrow
            argument.set_type(ir.RankedTensorType(narrow.type).element_type)
            with ir.InsertionPoint.at_block_begin(block), reduction.location:
                widened = ir.Operation.create(
                    cast.name, results=[cast.results[0].type], operands=[argument],
                    attributes={a.name: a.attr for a in cast.attributes})
            argument.replace_all_uses_except(widened.results[0], widened)
            if not list(producer.results[0].uses):
                producer.erase()
            folded += 1
    return folded


def run(module_op: Any, pass_: Any = None) -> None:
    fold(module_op)
