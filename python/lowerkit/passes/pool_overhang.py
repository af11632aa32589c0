"""pad-pool-overhang: a pooling whose windows do not end at its padded input's end gets
explicit padding and cropping.

With ``ceil_mode=True`` the last window of a pooling may run past the (padded) input, e.g.
``F.max_pool1d(x, 2, stride=3, ceil_mode=True)`` of a length-1 ``x``. IREE 3.13 then rejects the
lowered pooling (a verifier error on ``linalg.generic``: "inferred input/output operand #1 has
shape's dimension #0 to be 4, but found 2"; found by lowerkit's fuzzer, see
test_fuzz_regressions.py). Without ceil_mode the opposite happens when the stride skips the
padded input's tail, e.g. ``F.max_pool2d(x, 2, stride=3, padding=1)`` of a 4x1 image reads 2 of
its 3 padded columns; IREE fails the same way once it folds the unit output dimension. And
torch-mlir pads one more stride for ``ceil_mode=True`` even where the windows end exactly at
the padded input's end, with the same failure (``F.max_pool1d(x, 4, stride=2, padding=1,
ceil_mode=True)`` of a length-2 ``x``), so every ceil_mode pooling is rewritten.

So the input is padded by hand to exactly what the windows read (and cropped where they never
reach), and the pooling runs without padding or ceil_mode:

- max pooling pads with -inf: a max never picks it, and eager never makes a window lying wholly
  in the padding (indices unused only);
- average pooling pads with zeros and pools with ``divisor_override=1``, i.e. window sums, then
  divides by a constant tensor of eager's divisors: per output position the window clipped to
  the padded input (``count_include_pad=True``) or to the input itself (``False``), or the
  ``divisor_override``. 1-D average pooling goes through the 2-D op, which has that override.

Floating point, static shapes; runs on the torch dialect.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from . import _torch_ir as t

NAME = "pad-pool-overhang"
_MAX_POOLS = {"torch.aten.max_pool1d", "torch.aten.max_pool2d", "torch.aten.max_pool3d",
              "torch.aten.max_pool2d_with_indices", "torch.aten.max_pool3d_with_indices"}
_AVG_POOLS = {"torch.aten.avg_pool1d", "torch.aten.avg_pool2d", "torch.aten.avg_pool3d"}
_FLOATS = {"f32", "f16", "bf16", "f64"}


class _Windows:
    """Where the windows of a pooling lie along each spatial dim of its input."""

    def __init__(self, shape, out_shape, kernel, stride, padding, dilation):
        # a one-element list stands for every spatial dim (``MaxPool2d(kernel_size=(6,))``)
        n = max(len(v) for v in (kernel, stride or kernel, padding, dilation))
        kernel = list(kernel) * n if len(kernel) == 1 else list(kernel)
        self.n, self.lead = n, len(shape) - n
        self.kernel = kernel
        self.stride = list(stride or kernel)  # empty stride: the kernel
        self.stride, self.padding, self.dilation = (
            v * n if len(v) == 1 else list(v) for v in (self.stride, padding, dilation))
        self.spatial = shape[self.lead:]
        self.out = out_shape[self.lead:]
        self.after = []  # padding needed after each dim so the last window ends at the end
        for i in range(n):
            needed = (self.out[i] - 1) * self.stride[i] + self.dilation[i] * (kernel[i] - 1) + 1
            self.after.append(needed - self.spatial[i] - self.padding[i]
                              if self.out[i] > 0 and needed > 0 else None)

    @property
    def valid(self) -> bool:
        return None not in self.after

    @property
    def overhang(self) -> bool:
        """Whether some window does not end exactly at the padded input's end."""
        return self.after != self.padding

    def divisors(self, include_pad: bool) -> list[int]:
        """Eager's divisor for every output position, row-major over the spatial dims."""
        per_dim = []
        for i in range(self.n):
            size, pad, k, s = self.spatial[i], self.padding[i], self.kernel[i], self.stride[i]
            counts = []
            for o in range(self.out[i]):
                start = o * s - pad
                end = min(start + k, size + pad)
                if not include_pad:
                    start, end = max(start, 0), min(end, size)
                counts.append(max(end - start, 0))
            per_dim.append(counts)
        # A window wholly in the padding sums to zero; dividing it by one keeps eager's zero.
        return [max(1, math.prod(c)) for c in itertools.product(*per_dim)]


def _windows(x: Any, result: Any, kernel, stride, padding, dilation, ceil: bool) -> _Windows | None:
    xs, out = t.vtensor(x), t.vtensor(result)
    if None in (kernel, stride, padding, dilation, xs, out):
        return None
    (shape, dtype), out_shape = xs, out[0]
    if dtype not in _FLOATS or None in shape or None in out_shape or len(shape) < len(kernel):
        return None
    w = _Windows(shape, out_shape, kernel, stride, padding, dilation)
    # ceil_mode: torch-mlir pads one more stride for it, whether a window overhangs or not
    return w if w.valid and (w.overhang or ceil) else None


def _rewrite_max(op: Any) -> list[Any] | None:
    from torch_mlir import ir

    ops = list(op.operands)
    kernel, stride, padding, dilation = (t.int_list(v) for v in ops[1:5])
    results = list(op.results)
    ceil = t.const_bool(ops[5])
    if ceil is None or (len(results) > 1 and any(True for _ in results[1].uses)):
        return None
    w = _windows(ops[0], results[0], kernel, stride, padding, dilation, ceil)
    if w is None:
        return None
    x = t.crop_and_pad(ops[0], w.lead, w.padding, w.after, float("-inf"))
    new_ops = [x, ops[1], t.make_int_list(w.stride), t.make_int_list([0] * w.n), ops[4],
               t.make_bool(False)]
    new = ir.Operation.create(op.name, results=[r.type for r in results], operands=new_ops)
    return list(new.results)


def _window_sums(x: Any, w: _Windows, result: Any) -> Any:
    """Sums over the windows of ``x``, which the windows cover exactly (no padding needed),
    typed like the pooling's ``result``."""
    shape, dtype = t.vtensor(x)
    out_shape, _ = t.vtensor(result)
    result_type = result.type
    kernel, stride = list(w.kernel), list(w.stride)
    if w.n == 1:  # avg_pool1d has no divisor_override: pool [.., 1, L] in 2-D
        x = t.make_op("torch.aten.unsqueeze", [x, t.make_int(-2)],
                      t.vtensor_type([*shape[:-1], 1, shape[-1]], dtype))
        kernel, stride = [1, *kernel], [1, *stride]
        pooled_type = t.vtensor_type([*out_shape[:-1], 1, out_shape[-1]], dtype)
    else:
        pooled_type = result_type
    sums = t.make_op(f"torch.aten.avg_pool{len(kernel)}d",
                     [x, t.make_int_list(kernel), t.make_int_list(stride),
                      t.make_int_list([0] * len(kernel)), t.make_bool(False), t.make_bool(True),
                      t.make_int(1)],
                     pooled_type)
    if w.n == 1:
        sums = t.make_op("torch.aten.squeeze.dim", [sums, t.make_int(-2)], result_type)
    return sums


def _rewrite_avg(op: Any) -> list[Any] | None:
    ops = list(op.operands)
    kernel, stride, padding = (t.int_list(v) for v in ops[1:4])
    ceil, include_pad = t.const_bool(ops[4]), t.const_bool(ops[5])
    override = None
    if len(ops) > 6 and not t.is_none(ops[6]):
        override = t.const_int(ops[6])
        if override is None or override == 0:
            return None
    if ceil is None or include_pad is None or kernel is None:
        return None
    result = op.results[0]
    w = _windows(ops[0], result, kernel, stride, padding, [1] * len(kernel), ceil)
    if w is None:
        return None
    x = t.crop_and_pad(ops[0], w.lead, w.padding, w.after, 0.0)
    sums = _window_sums(x, w, result)
    if override is not None:
        return [t.make_op("torch.aten.div.Scalar", [sums, t.make_int(override)], result.type)]
    _, dtype = t.vtensor(result)
    counts = t.make_literal(w.out, dtype, [float(c) for c in w.divisors(include_pad)])
    return [t.make_op("torch.aten.div.Tensor", [sums, counts], result.type)]


def _rewrite(op: Any) -> list[Any] | None:
    return _rewrite_avg(op) if op.name in _AVG_POOLS else _rewrite_max(op)


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _MAX_POOLS | _AVG_POOLS, _rewrite)
