"""undilate-single-window-convs: a dilated convolution with one window along a dim gathers its
taps and convolves undilated.

IREE 3.13's SPIR-V code for ``vulkan:llvmpipe`` fails on a grouped, dilated convolution whose
output is one element wide ("'vector.transfer_read' op with rank > 1 should be broken down by
prior passes"): ``F.conv1d(a, w, padding=2, dilation=2, groups=2)`` of a [2, 32, 5] input (fuzz
campaign seed 2111, programs 893-894). Along a dim with a single window the taps are the padded
input's rows ``0, d, 2d, ...``: pad, gather them (``index_select``: a strided slice of an
argument fused into the convolution fails the same way), and convolve undilated and unpadded;
the same sums, and IREE compiles it on every target.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "undilate-single-window-convs"


def _rewrite(op: Any) -> list[Any] | None:
    ops = list(op.operands)
    x, w = ops[0], ops[1]
    stride, padding, dilation = (t.int_list(v) for v in ops[3:6])
    xs, ws, out = t.vtensor(x), t.vtensor(w), t.vtensor(op.results[0])
    if None in (stride, padding, dilation, xs, ws, out) or t.const_bool(ops[6]) is not False:
        return None  # unknown, or transposed
    (shape, _), kernel, out_shape = xs, ws[0][2:], out[0]
    n = len(kernel)
    if None in shape or None in kernel or None in out_shape or len(shape) != n + 2:
        return None
    padding, dilation = (v * n if len(v) == 1 else list(v) for v in (padding, dilation))
    single = [i for i in range(n) if out_shape[2 + i] == 1 and dilation[i] > 1 and kernel[i] > 1]
    if not single:
        return None
    before = [padding[i] if i in single else 0 for i in range(n)]
    after = [(kernel[i] - 1) * dilation[i] + 1 - shape[2 + i] - padding[i] if i in single else 0
             for i in range(n)]  # what the one window reads past the input (negative: crops)
    x = t.crop_and_pad(x, 2, before, after, 0.0)
    for i in single:  # a gather of the taps: a strided slice fuses into the convolution again
        taps = t.make_literal([kernel[i]], "si32", [j * dilation[i] for j in range(kernel[i])])
        tapped, dtype = t.vtensor(x)
        tapped[2 + i] = kernel[i]
        x = t.make_op("torch.aten.index_select", [x, t.make_int(2 + i), taps],
                      t.vtensor_type(tapped, dtype))
        padding[i], dilation[i] = 0, 1
    new_ops = [x, w, ops[2], ops[3], t.make_int_list(padding), t.make_int_list(dilation),
               *ops[6:]]
    return [t.make_op("torch.aten.convolution", new_ops, op.results[0].type)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.convolution"}, _rewrite)
