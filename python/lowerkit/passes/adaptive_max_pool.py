"""gather-adaptive-max-pool: an adaptive max pooling with uneven windows becomes a gather of
every window's elements and a max over them.

Adaptive pooling gives output ``j`` (of ``O``) of a dim of size ``I`` the window
``[floor(j*I/O), ceil((j+1)*I/O))``. When ``I`` is a multiple of ``O`` these are the windows of a
plain pooling, which torch-mlir (20261001) lowers; otherwise (``F.adaptive_max_pool2d`` of a
1x4 or 5x5 image to 2x2 or 3x3) its linalg conversion fails with "unexpected loop dimension
for convolution op" or an invalid ``tensor.cast`` (found by lowerkit's fuzzer; see
test_fuzz_regressions.py). Windows are at most ``K`` long per dim, so with the spatial dims
flattened, one ``index_select`` of a constant index list gathers each output's window
(short windows repeat their last element, which leaves a max unchanged) into a last dim of
``K1*K2*...``, and ``amax`` over it is the pooling. NaN propagates as in eager. Only when the
indices result is unused; static shapes; runs on the torch dialect.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from . import _torch_ir as t

NAME = "gather-adaptive-max-pool"
_POOLS = {"torch.aten.adaptive_max_pool1d": 1, "torch.aten.adaptive_max_pool2d": 2,
          "torch.aten.adaptive_max_pool3d": 3}


def _windows(size: int, out: int) -> list[range]:
    return [range(j * size // out, -(-(j + 1) * size // out)) for j in range(out)]


def _rewrite(op: Any) -> list[Any] | None:
    n = _POOLS[op.name]
    results = list(op.results)
    if len(results) > 1 and any(True for _ in results[1].uses):
        return None
    xs, out = t.vtensor(op.operands[0]), t.vtensor(results[0])
    if xs is None or out is None or None in xs[0] or None in out[0]:
        return None
    (shape, dtype), out_shape = xs, out[0]
    lead = len(shape) - n
    spatial, outs = shape[lead:], out_shape[lead:]
    if 0 in shape or 0 in outs or all(s % o == 0 for s, o in zip(spatial, outs)):
        return None  # even windows (a plain pooling) or nothing to compute
    per_dim = [_windows(s, o) for s, o in zip(spatial, outs)]
    longest = [max(len(w) for w in ws) for ws in per_dim]
    strides = [1] * n
    for i in reversed(range(n - 1)):
        strides[i] = strides[i + 1] * spatial[i + 1]
    index = []
    for windows in itertools.product(*per_dim):  # every output position, row-major
        padded = [list(w) + [w[-1]] * (k - len(w)) for w, k in zip(windows, longest)]
        index += [sum(p * s for p, s in zip(pos, strides)) for pos in itertools.product(*padded)]
    k = len(index) // max(1, math.prod(outs))
    flat = t.make_op("torch.aten.flatten.using_ints", [op.operands[0], t.make_int(lead), t.make_int(-1)],
                     t.vtensor_type([*shape[:lead], math.prod(spatial)], dtype))
    gathered = t.make_op("torch.aten.index_select",
                         [flat, t.make_int(lead), t.make_literal([len(index)], "si64", index)],
                         t.vtensor_type([*shape[:lead], len(index)], dtype))
    windows = t.make_op("torch.aten.view", [gathered, t.make_int_list([*shape[:lead], *outs, k])],
                        t.vtensor_type([*shape[:lead], *outs, k], dtype))
    pooled = t.make_op("torch.aten.amax", [windows, t.make_int_list([-1]), t.make_bool(False)],
                       results[0].type)
    if len(results) == 1:
        return [pooled]
    return [pooled, t.make_op("torch.aten.new_zeros",  # unused indices: any value of their type
                              [op.operands[0], t.make_int_list(out_shape), t.make_int(4),
                               t.make_none(), t.make_none(), t.make_none()], results[1].type)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, set(_POOLS), _rewrite)
