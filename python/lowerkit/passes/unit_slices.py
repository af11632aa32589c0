"""normalize-unit-slices: a strided slice that selects at most one element takes step 1.

``a[:, -2:5:3]`` on a dimension of size 1 picks one element with a step of 3. IREE 3.13 keeps
that step in the buffer layout and then rejects its own IR when the slice is returned beside
a use of it ("expected result type to be 'memref<...strided<[2, 6, ...]>>' ... mismatch of
result layout"), on llvm-cpu and on Vulkan. A slice of one (or no) element is the same slice
with step 1, which has an ordinary layout. Found by lowerkit's differential fuzzer.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "normalize-unit-slices"


def _rewrite(op: Any) -> list[Any] | None:
    x, dim_v, start_v, end_v, step_v = list(op.operands)
    step, dim = t.const_int(step_v), t.const_int(dim_v)
    src, out = t.vtensor(x), t.vtensor(op.results[0])
    if step is None or step == 1 or dim is None or src is None or out is None:
        return None
    shape, rank = src[0], len(src[0])
    dim = dim + rank if dim < 0 else dim
    size, n = out[0][dim], shape[dim]
    if size is None or n is None or size > 1:
        return None
    start = 0 if t.is_none(start_v) else t.const_int(start_v)
    if start is None:
        return None
    start = min(max(start + n if start < 0 else start, 0), n)
    return [t.make_slice(x, dim, start, start + size, 1)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.slice.Tensor"}, _rewrite)
