"""pad-pool-overhang: a max pooling whose windows do not end at its padded input's end gets
explicit padding and cropping.

With ``ceil_mode=True`` the last window of a max pooling may run past the (padded) input, e.g.
``F.max_pool1d(x, 2, stride=3, ceil_mode=True)`` of a length-1 ``x``. IREE 3.13 then rejects the
lowered pooling (a verifier error on ``linalg.generic``: "inferred input/output operand #1 has
shape's dimension #0 to be 4, but found 2"; found by lowerkit's fuzzer, see
test_fuzz_regressions.py). Padding the input with -inf to exactly what the windows read (and
cropping what they never reach), then pooling without padding or ceil_mode, gives the same
result: a max never picks -inf, and eager never makes a window lying wholly in the padding.
Without ceil_mode the opposite happens when the stride skips the padded input's tail, e.g.
``F.max_pool2d(x, 2, stride=3, padding=1)`` of a 4x1 image reads 2 of its 3 padded columns;
IREE then fails the same way once it folds the unit output dimension, so the tail is cropped.
Floating-point max pooling only, indices unused; runs on the torch dialect.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "pad-pool-overhang"
_POOLS = {"torch.aten.max_pool1d", "torch.aten.max_pool2d", "torch.aten.max_pool3d",
          "torch.aten.max_pool2d_with_indices", "torch.aten.max_pool3d_with_indices"}
_FLOATS = {"f32", "f16", "bf16", "f64"}


def _rewrite(op: Any) -> list[Any] | None:
    ops = list(op.operands)
    x = ops[0]
    kernel, stride, padding, dilation = (t.int_list(v) for v in ops[1:5])
    ceil = t.const_bool(ops[5])
    results = list(op.results)
    if len(results) > 1 and any(True for _ in results[1].uses):
        return None
    xs, out = t.vtensor(x), t.vtensor(results[0])
    if None in (kernel, padding, dilation, xs, out) or ceil is None:
        return None
    (shape, dtype), out_shape = xs, out[0]
    if dtype not in _FLOATS or None in shape or None in out_shape:
        return None
    n = len(kernel)
    stride = stride or kernel  # empty stride: the kernel
    stride, padding, dilation = (v * n if len(v) == 1 else v for v in (stride, padding, dilation))
    lead = len(shape) - n
    spatial = shape[lead:]
    before, after = list(padding), []
    for i in range(n):
        needed = (out_shape[lead + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        if out_shape[lead + i] <= 0 or needed <= 0:
            return None
        after.append(needed - spatial[i] - padding[i])
    if after == list(padding):
        return None  # the windows end exactly at the padded input: nothing overhangs
    x = t.crop_and_pad(x, lead, before, after, float("-inf"))
    from torch_mlir import ir

    new_ops = [x, ops[1], t.make_int_list(stride), t.make_int_list([0] * n), ops[4],
               t.make_bool(False)]
    new = ir.Operation.create(op.name, results=[r.type for r in results], operands=new_ops)
    return list(new.results)


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _POOLS, _rewrite)
