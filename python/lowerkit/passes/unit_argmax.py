"""fold-unit-argmax: an argmax or argmin over a dim of one element is a tensor of zeros.

IREE 3.13 folds such an argmax into a dispatch that fills int64 zeros, which its SPIR-V code
for the portable ``vulkan`` target (int64 kept as pairs of int32) cannot store ("'memref.store'
op failed to verify that type of 'value' matches element type of 'memref'"):
``a.argmax(0, keepdim=True)`` of a [1, 16, 7, 32] input (fuzz campaign seed 2111, programs
875-876). The answer does not depend on the input (the one element is the max, NaN or not): a
literal of zeros, which every target returns.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "fold-unit-argmax"


def _rewrite(op: Any) -> list[Any] | None:
    x, dim = op.operands[0], t.const_int(op.operands[1])
    xs, out = t.vtensor(x), t.vtensor(op.results[0])
    if dim is None or xs is None or out is None or None in out[0]:
        return None  # no dim (the flattened input), or a dynamic shape
    shape = xs[0]
    if not shape or shape[dim % len(shape)] != 1:  # a 0-d input: already its own answer
        return None
    from torch_mlir import ir

    dims = "x".join(str(d) for d in out[0])
    bits = out[1][2:]  # si64
    zeros = ir.Attribute.parse(f"dense<0> : tensor<{dims}{'x' if dims else ''}i{bits}>")
    return [ir.Operation.create("torch.vtensor.literal", results=[op.results[0].type],
                                attributes={"value": zeros}).results[0]]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.argmax", "torch.aten.argmin"}, _rewrite)
