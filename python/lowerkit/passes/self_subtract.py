"""keep-nan-self-subtract: ``x - x`` stays NaN where ``x`` is infinite or NaN, on Vulkan.

IREE 3.13's SPIR-V code declares no float controls (``SignedZeroInfNanPreserve``), so a Vulkan
driver may simplify a float as if it were never infinite nor NaN. Mesa's does: ``x - x`` of the
same value (``v = a / w; v - v``) came out 0 where eager gives NaN, for ``x`` infinite (a
division by zero) or NaN, on `vulkan:llvmpipe` and the portable target (fuzz campaign seed
2113, programs 702-703), while IREE's SPIR-V still held the ``spirv.FSub %x, %x``.

Each float ``arith.subf`` of a value from itself (`_same_value`) becomes what it computes, written with integer
ops no float rule folds: 0 where ``x``'s exponent bits are not all ones, NaN where they are
(an infinity or a NaN). Runs in IREE's MLIR build on linalg on tensors, for Vulkan targets
(`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

from typing import Any

from ._float_bits import UGE, exponent_test
from ._source_fence import ir_of, ops_where

NAME = "keep-nan-self-subtract"
BUILD = "iree"  # run on what IREE compiles, after the torch-level stages
_WIDTHS = frozenset({"f32", "f16"})


def _same_value(a: Any, b: Any, ir: Any) -> bool:
    """Whether ``a`` and ``b`` are one value, or two arguments of a ``linalg.generic``'s body
    that read one tensor through one indexing map (``v - v`` lowers to that, and IREE
    merges the two reads before the driver sees ``x - x``)."""
    if a == b:
        return True
    if not (isinstance(a.owner, ir.Block) and isinstance(b.owner, ir.Block)) \
            or a.owner != b.owner:
        return False
    generic = a.owner.owner
    if generic is None or generic.name != "linalg.generic":
        return False
    i, j = ir.BlockArgument(a).arg_number, ir.BlockArgument(b).arg_number
    n_in = len(generic.operands) - len(generic.results)
    maps = ir.ArrayAttr(generic.attributes["indexing_maps"])
    return (i < n_in and j < n_in and generic.operands[i] == generic.operands[j]
            and str(maps[i]) == str(maps[j]))


def keep(module_op: Any) -> int:
    """Rewrite every ``arith.subf %x, %x`` of an f32 or f16 ``x``; returns how many. Runs
    CSE first, as IREE will: it merges two computations of one value (``(a / w) - (a / w)``),
    which `_same_value` then sees read twice."""
    ir = ir_of(module_op)
    if not ops_where(module_op, lambda op: op.name == "arith.subf"):
        return 0
    from iree.compiler import passmanager  # this pass runs in IREE's build only
    passmanager.PassManager.parse("builtin.module(cse)", module_op.context).run(module_op)
    found = ops_where(module_op, lambda op: op.name == "arith.subf"
                      and str(op.operands[0].type) in _WIDTHS
                      and _same_value(op.operands[0], op.operands[1], ir))
    for op in found:
        x = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            def constant(type_, attr):
                return ir.Operation.create("arith.constant", results=[type_],
                                           attributes={"value": attr}).results[0]

            special = exponent_test(x, UGE)  # an infinity or a NaN
            nan = constant(x.type, ir.FloatAttr.get(x.type, float("nan")))
            zero = constant(x.type, ir.FloatAttr.get(x.type, 0.0))
            new = ir.Operation.create("arith.select", results=[x.type],
                                      operands=[special, nan, zero]).results[0]
        op.results[0].replace_all_uses_with(new)
        op.erase()
    return len(found)


def run(module_op: Any, pass_: Any = None) -> None:
    keep(module_op)
