"""trim-conv-overhang: a convolution whose window overhangs its input gets explicit padding.

When ``(size + 2*padding - dilation*(kernel-1) - 1)`` is not a multiple of the stride, the
last rows of the padded input are never read. IREE 3.13 then rejects the lowered convolution
(a verifier error on ``linalg.generic``: "inferred input/output operand #1 has shape's
dimension #2 to be 4, but found 3"), e.g. ``Conv2d(4, 4, 3, stride=2, padding=1)`` on a 2x2
image. Padding only what the windows read (and cropping rows they never reach) gives the same
result with an exact window.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "trim-conv-overhang"


def _rewrite(op: Any) -> list[Any] | None:
    ops = list(op.operands)
    x, w = ops[0], ops[1]
    stride, padding, dilation = (t.int_list(v) for v in ops[3:6])
    transposed = t.const_bool(ops[6])
    xs, ws, out = t.vtensor(x), t.vtensor(w), t.vtensor(op.results[0])
    if None in (stride, padding, dilation, xs, ws, out) or transposed is not False:
        return None
    (shape, _), kernel, out_shape = xs, ws[0][2:], out[0]
    n = len(kernel)
    spatial = shape[2:]
    if None in shape or None in kernel or None in out_shape or len(spatial) != n:
        return None
    stride, padding, dilation = (v * n if len(v) == 1 else v for v in (stride, padding, dilation))
    before, after = list(padding), []
    for i in range(n):
        needed = (out_shape[2 + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        after.append(needed - spatial[i] - padding[i])
    if after == list(padding) or needed <= 0:
        return None  # every padded row is read: nothing to trim
    x = t.crop_and_pad(x, 2, before, after, 0.0)
    new_ops = [x, w, ops[2], ops[3], t.make_int_list([0] * n), *ops[5:]]
    return [t.make_op("torch.aten.convolution", new_ops, op.results[0].type)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.convolution"}, _rewrite)
