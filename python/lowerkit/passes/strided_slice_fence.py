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
stride. A crop that skips part of a dim (unit strides, not one contiguous run) and that a
convolution reads is written as a copy of its own too (`_convolved`).
Runs in IREE's MLIR build, on linalg on tensors, for Vulkan targets (`lowerkit.api`).
"""

from __future__ import annotations

from typing import Any

from ._source_fence import contiguous, fence_result, fence_source, ir_of, ops_where

NAME = "fence-strided-slices"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles


def fence(module_op: Any) -> int:
    """Put a barrier between each strided ``tensor.extract_slice`` and the op computing its
    source; returns how many."""
    slices = ops_where(module_op, lambda op: op.name == "tensor.extract_slice" and _strided(op))
    fenced = sum(fence_source(slice_) for slice_ in slices)
    fenced += sum(fence_result(slice_) for slice_ in slices if _unit_dim(slice_))
    cropped = ops_where(module_op, lambda op: op.name == "tensor.extract_slice"
                        and not _strided(op) and not contiguous(op, ir_of(op))
                        and _convolved(op))
    return fenced + sum(fence_result(slice_) for slice_ in cropped)


_RESHAPES = frozenset({"tensor.expand_shape", "tensor.collapse_shape"})


def _convolved(op: Any, depth: int = 0) -> bool:
    """Whether a convolution reads ``op``'s result, maybe through reshapes. IREE 3.13's SPIR-V
    code for `vulkan:llvmpipe` fused a crop that skips part of a dim (the rows
    `trim-conv-overhang` drops: [2, 4, 15, 1] of [2, 4, 16, 1] under a 1x1 convolution with
    stride 2) into the convolution and read the wrong rows, 1.1-1.7 of the output's scale off
    (fuzz campaign seed 2116, programs 1191-1194); the crop as a copy of its own is right."""
    for use in op.results[0].uses:
        reader = use.owner
        if reader.name.startswith("linalg.conv_") or reader.name.startswith("linalg.depthwise_conv"):
            return True
        if reader.name in _RESHAPES and depth < 4 and _convolved(reader, depth + 1):
            return True
    return False


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
