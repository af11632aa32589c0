"""A float's class read from its bits, for fixes the Vulkan driver must not fold.

IREE's SPIR-V declares no float controls, so a driver may fold a float test of NaN or infinity
away; an integer compare on the bits it cannot (`keep-nan-self-subtract`, `keep-nan-min-max`).
"""

from __future__ import annotations

from typing import Any

from ._source_fence import ir_of

UGE, UGT = 9, 8  # arith.cmpi predicates: infinite or NaN / NaN


def exponent_test(x: Any, predicate: int) -> Any:
    """``(bits(x) & 0x7FFFFFFF) <predicate> 0x7F800000`` as an ``i1``, for an f32 or f16 ``x``
    (an f16 is widened to the f32 it equals), inserted at the current insertion point."""
    ir = ir_of(x)
    ctx = x.type.context
    i32, f32 = ir.IntegerType.get_signless(32, ctx), ir.F32Type.get(ctx)
    i1, i64 = ir.IntegerType.get_signless(1, ctx), ir.IntegerType.get_signless(64, ctx)

    def create(name, type_, operands, **attributes):
        return ir.Operation.create(name, results=[type_], operands=operands,
                                   attributes=attributes).results[0]

    def constant(value):
        return create("arith.constant", i32, [], value=ir.IntegerAttr.get(i32, value))

    wide = x if str(x.type) == "f32" else create("arith.extf", f32, [x])
    bits = create("arith.andi", i32, [create("arith.bitcast", i32, [wide]), constant(0x7FFFFFFF)])
    return create("arith.cmpi", i1, [bits, constant(0x7F800000)],
                  predicate=ir.IntegerAttr.get(i64, predicate))
