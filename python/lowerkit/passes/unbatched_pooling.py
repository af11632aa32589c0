"""batch-unbatched-pooling: pooling gets the batch dim that torch-mlir and IREE can compile.

- ``F.max_pool2d`` takes ``[C, H, W]`` as well as ``[N, C, H, W]`` (and ``max_pool1d`` ``[C, L]``,
  ``max_pool3d`` ``[C, D, H, W]``), but torch-mlir's linalg conversion only handles the batched
  form: "failed to legalize operation 'torch.aten.max_pool2d'" (found by lowerkit's fuzzer, see
  test_fuzz_regressions.py). ``unsqueeze(0)`` before and ``squeeze(0)`` after give the batched
  form, which lowers; the values and indices are the same.
- A max pooling whose indices are used, with a batch of one: torch-mlir computes the indices
  with a ``linalg.generic`` that reads the input at a constant batch index, and IREE 3.13 fails
  to compile it for llvm-cpu ("'vector.store' op write affecting operations on global resources
  are restricted to workgroup distributed contexts"); a batch of two compiles. The input is
  concatenated with itself and the first of the two results kept.
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
    if xs is None or None in xs[0]:
        return None
    shape, dtype = xs
    unbatched = len(shape) == _SPATIAL[op.name] + 1
    indices_used = len(op.results) > 1 and any(True for _ in op.results[1].uses)
    batch = 2 if indices_used else 1
    if not unbatched and not (indices_used and shape[0] == 1):
        return None
    types = []
    for r in op.results:  # checked before any op is built, so a refusal leaves nothing behind
        rs = t.vtensor(r)
        if rs is None or None in rs[0]:
            return None
        types.append(t.vtensor_type([batch, *(rs[0][1:] if not unbatched else rs[0])], rs[1]))
    x = operands[0]
    if unbatched:
        shape = [1, *shape]
        x = t.make_op("torch.aten.unsqueeze", [x, t.make_int(0)], t.vtensor_type(shape, dtype))
    if batch == 2:
        pair = t.make_op("torch.prim.ListConstruct", [x, x],
                         ir.Type.parse(f"!torch.list<vtensor<[{','.join(map(str, shape))}],{dtype}>>"))
        x = t.make_op("torch.aten.cat", [pair, t.make_int(0)],
                      t.vtensor_type([2, *shape[1:]], dtype))
    pooled = ir.Operation.create(op.name, results=types, operands=[x, *operands[1:]])
    out = []
    for r, old in zip(pooled.results, op.results):
        if batch == 2:
            r = t.make_slice(r, 0, 0, 1, 1)
        if unbatched:
            r = t.make_op("torch.aten.squeeze.dim", [r, t.make_int(0)], old.type)
        out.append(r)
    return out


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, set(_SPATIAL), _rewrite)
