"""batch-unbatched-pooling: pooling of an unbatched input gets a batch dim of one around it.

``F.max_pool2d`` takes ``[C, H, W]`` as well as ``[N, C, H, W]`` (and ``max_pool1d`` ``[C, L]``,
``max_pool3d`` ``[C, D, H, W]``), but torch-mlir's linalg conversion only handles the batched
form: "failed to legalize operation 'torch.aten.max_pool2d'" (found by lowerkit's fuzzer, see
test_fuzz_regressions.py). ``unsqueeze(0)`` before and ``squeeze(0)`` after give the batched
form, which lowers; the values and indices are the same.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "batch-unbatched-pooling"
_SPATIAL = {"torch.aten.max_pool1d": 1, "torch.aten.max_pool2d": 2, "torch.aten.max_pool3d": 3,
            "torch.aten.max_pool2d_with_indices": 2, "torch.aten.max_pool3d_with_indices": 3,
            "torch.aten.avg_pool1d": 1, "torch.aten.avg_pool2d": 2, "torch.aten.avg_pool3d": 3}


def _rewrite(op: Any) -> list[Any] | None:
    from torch_mlir import ir

    operands = list(op.operands)
    xs = t.vtensor(operands[0])
    if xs is None or len(xs[0]) != _SPATIAL[op.name] + 1:
        return None
    shape, dtype = xs
    types = []
    for r in op.results:  # checked before any op is built, so a refusal leaves nothing behind
        rs = t.vtensor(r)
        if rs is None or None in rs[0]:
            return None
        types.append(t.vtensor_type([1, *rs[0]], rs[1]))
    batched = t.make_op("torch.aten.unsqueeze", [operands[0], t.make_int(0)],
                        t.vtensor_type([1, *shape], dtype))
    pooled = ir.Operation.create(op.name, results=types, operands=[batched, *operands[1:]])
    return [t.make_op("torch.aten.squeeze.dim", [r, t.make_int(0)], old.type)
            for r, old in zip(pooled.results, op.results)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, set(_SPATIAL), _rewrite)
