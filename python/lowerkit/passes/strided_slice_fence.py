"""fence-strided-slices: a strided slice of a computed tensor reads it from memory, not from the
dispatch computing it.

IREE 3.13's SPIR-V code for a dispatch whose root op reads 8- or 16-bit values and whose
result is then sliced with a stride gives wrong numbers: ``v = b.float()[:, :, ::2, ::2]; v + v``
for a ``bool``, ``int8`` or ``float16`` input ``b`` of shape [4, 3, 5, 3] was off by 1-16 on
`vulkan:llvmpipe`, and ``(b.float() * 3)[:, :, ::2, ::2] + 1`` for an ``int8`` ``b`` was wrong
on the portable `vulkan` target too (``int32``/``float32`` inputs, the CPU, and slicing *before*
the conversion came out right). Found by lowerkit's fuzzer (seed 20261243, program 102: a
``max_pool2d`` with a 1x1 window and stride 2, which `rewrite-unit-window-pooling` makes such a
slice); `test_vulkan.py::test_strided_slice_of_a_computed_narrow_tensor` holds the cases.

The source of every ``tensor.extract_slice`` with a stride other than 1 that an op computes
goes through ``util.optimization_barrier``, which dispatch formation does not fuse across: the
producer writes its result, and the slice (fused with its consumers, as before) reads it from
memory. Every computed source is fenced, not only narrow ones: the narrow values may be a few
fused ops upstream (``(b.float() * 3)[:, :, ::2, ::2]`` was wrong too, its slice's producer
an ``f32`` multiply), and a fence costs one more dispatch, only where a program slices with a
stride.
Runs in IREE's MLIR build, on linalg on tensors, for Vulkan targets (`lowerkit.api`).
"""

from __future__ import annotations

from typing import Any

from ._source_fence import fence_result, fence_source, ir_of, ops_where

NAME = "fence-strided-slices"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles


def fence(module_op: Any) -> int:
    """Put a barrier between each strided ``tensor.extract_slice`` and the op computing its
    source; returns how many."""
    slices = ops_where(module_op, lambda op: op.name == "tensor.extract_slice" and _strided(op))
    fenced = sum(fence_source(slice_) for slice_ in slices)
    return fenced + sum(fence_result(slice_) for slice_ in slices if _unit_dim(slice_))


def _unit_dim(op: Any) -> bool:
    """Whether a slice keeps a dim of size 1. IREE 3.13's SPIR-V code for `vulkan:llvmpipe`
    could not compile such a strided slice fused with the op reading it: ``-a[..., ::2]`` of a
    [1, 32] input, a [1, 1, 32] one or a 1-wide ``max_pool1d`` with stride 2 (fuzz campaign seed
    2114, program 730) failed with "failed to legalize unresolved materialization from
    'memref<32xf32>' to 'memref<1x32xf32>'"; [2, 3, 32] compiled. Such a slice is fenced on its
    result too: it becomes a copy of its own, which compiles."""
    ir = ir_of(op)
    return any(n == 1 for n in ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))


def _strided(op: Any) -> bool:
    """Whether a slice has a stride other than 1 (a dynamic stride counts)."""
    ir = ir_of(op)
    return any(s != 1 for s in ir.DenseI64ArrayAttr(op.attributes["static_strides"]))


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
