"""guard-zero-divisors: a float division by zero gives IEEE's ±inf or NaN on Vulkan, as in eager.

SPIR-V leaves ``OpFDiv`` undefined when the divisor is 0, and Vulkan devices use that: on
lavapipe ``a / 0.0`` came back as zeros where eager gives ``inf, -inf, nan``, and the mean of an
empty dim (``0 / 0``) as 0 where eager gives NaN (found by lowerkit's fuzzer, seed 20261211
#207). Each ``arith.divf`` whose divisor is not a non-zero constant becomes
``y == 0 ? x * copysign(inf, y) : x / y``; multiplying by an infinity is defined in SPIR-V and
gives exactly IEEE's ``x / ±0`` for every ``x`` (±inf, or NaN for 0 and NaN).
Runs in IREE's MLIR build, on linalg on tensors, for Vulkan targets (`lowerkit.api`).
"""

from __future__ import annotations

from typing import Any

from ..ir import Build

NAME = "guard-zero-divisors"
BUILD = "iree"  # runs on the module IREE compiles, after the pipeline

_OEQ = 1  # arith.cmpf predicate "oeq"
_FLOATS = {"f16", "bf16", "f32", "f64"}  # scalar divisions only (vectors come later, in IREE)


def _nonzero_constant(value: Any, ir: Any) -> bool:
    owner = getattr(value.owner, "operation", value.owner)  # an OpView or the op itself
    if not isinstance(owner, ir.Operation) or owner.name != "arith.constant":
        return False
    try:
        return ir.FloatAttr(owner.attributes["value"]).value != 0.0
    except (TypeError, ValueError):  # not a scalar float constant
        return False


def guard(module_op: Any) -> int:
    """Rewrite every scalar float division that may divide by zero; returns how many."""
    ir = Build.of_object(module_op).ir
    divisions = []

    def visit(op):
        if op.name == "arith.divf" and str(op.results[0].type) in _FLOATS:
            divisions.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    guarded = 0
    for div in divisions:
        x, y = div.operands
        if _nonzero_constant(y, ir):
            continue
        t = y.type

        def create(name, operands, attributes=None):
            return ir.Operation.create(name, results=[ir.IntegerType.get_signless(1)
                                                      if name == "arith.cmpf" else t],
                                       operands=operands, attributes=attributes or {}).result

        with ir.InsertionPoint(div), div.location:
            zero = create("arith.constant", [], {"value": ir.FloatAttr.get(t, 0.0)})
            inf = create("arith.constant", [], {"value": ir.FloatAttr.get(t, float("inf"))})
            by_zero = create("arith.cmpf", [y, zero], {
                "predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _OEQ)})
            signed_inf = create("math.copysign", [inf, y])
            ieee = create("arith.mulf", [x, signed_inf])
        with ir.InsertionPoint.after(div), div.location:
            select = ir.Operation.create("arith.select", results=[t],
                                         operands=[by_zero, ieee, div.result])
        div.result.replace_all_uses_except(select.result, select)
        guarded += 1
    return guarded


def run(module_op: Any, pass_: Any = None) -> None:
    guard(module_op)
