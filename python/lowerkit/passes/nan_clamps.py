"""keep-nan-clamps: a clamp, ``maximum`` or ``minimum`` of a NaN is NaN, as eager gives it.

torch-mlir (20261001) lowers ``aten.clamp`` to ``select(x < lo, lo, x)`` with an unordered
compare, so ``clamp(nan, -1, 1)`` is ``-1``, and ``aten.maximum(a, b)`` to
``select(a > b, a, b)``, so ``maximum(nan, 1)`` is ``1``: a silent wrong answer on every
target, CPU included, for ``hardtanh``, ``relu6``, ``hardsigmoid``, ``clamp_min``/``max`` with
a scalar or a tensor bound, ``torch.maximum`` and ``torch.minimum`` (the last two right or wrong
by operand order). Eager propagates the NaN in each.

Each such op of a float result is followed by ``where(isnan(x), x, op)`` for its input ``x``
(and, for ``maximum``/``minimum``, for its second operand too); a NaN bound already gives NaN.
The op's own select in linalg cannot be told from ``torch.where(x > 0, x, 0)``, where eager
gives ``0`` for a NaN, so the fix has to be made here, where the op is still named. Runs on the
torch dialect before the backend contract (``relu6`` arrives as ``hardtanh``, ``hardsigmoid``
as a clamp), which lowers the ``isnan`` it adds.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "keep-nan-clamps"
_FLOATS = {"f16", "bf16", "f32", "f64"}
# op -> how many leading operands a NaN in must reach the result unchanged
_NAN_OPERANDS = {
    "torch.aten.clamp": 1, "torch.aten.clamp.Tensor": 1,
    "torch.aten.clamp_min": 1, "torch.aten.clamp_min.Tensor": 1,
    "torch.aten.clamp_max": 1, "torch.aten.clamp_max.Tensor": 1,
    "torch.aten.hardtanh": 1, "torch.aten.maximum": 2, "torch.aten.minimum": 2,
}


def _rewrite(op: Any) -> list[Any] | None:
    result = op.results[0].type
    out = t.vtensor(op.results[0])
    if out is None or out[1] not in _FLOATS:
        return None
    kept = t.make_op(op.name, list(op.operands), result)
    shape = out[0]
    for x in reversed(list(op.operands)[:_NAN_OPERANDS[op.name]]):
        read = t.vtensor(x)
        if read is None or read[1] not in _FLOATS:
            continue  # an integer operand holds no NaN
        nan = t.make_op("torch.aten.isnan", [x], t.vtensor_type(read[0], "i1"))
        kept = t.make_op("torch.aten.where.self", [nan, x, kept], t.vtensor_type(shape, out[1]))
    return [kept]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, set(_NAN_OPERANDS), _rewrite)
