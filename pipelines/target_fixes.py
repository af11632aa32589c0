# RUN: %PYTHON %s cpu vulkan vulkan:llvmpipe cuda | FileCheck %s
# CHECK: cpu: seed-as-input, lower-attention, fence-reductions, fence-gathered-slices, fence-batched-matmul-operands, fence-transposed-matmul-results, fence-reduced-convolutions
# CHECK-NEXT: vulkan: seed-as-input, widen-narrow-io, lower-attention, fold-wide-casts-into-reductions, fence-reductions, guard-zero-divisors, keep-nan-self-subtract, keep-nan-min-max, keep-nan-zero-products, fence-pad-sources, fence-strided-slices, refuse-long-sorts, reorder-depthwise-convs, fence-gathered-slices, widen-narrow-storage, narrow-index-math
# CHECK-NEXT: vulkan:llvmpipe: seed-as-input, lower-attention, fold-wide-casts-into-reductions, fence-reductions, guard-zero-divisors, keep-nan-self-subtract, keep-nan-min-max, keep-nan-zero-products, fence-pad-sources, fence-strided-slices, refuse-long-sorts, reorder-depthwise-convs, fence-gathered-slices
# CHECK-NEXT: cuda: seed-as-input, fence-reductions, fence-gathered-slices
"""target-fixes: what a target needs after any pipeline, for defects of IREE's code for its
devices.

Every target takes the random ops' seed as the last argument of its call (`seed-as-input`:
a calling convention rather than a defect, here so that every pipeline gets it; a target
without 64-bit arithmetic refuses random ops), and gets a barrier after the reductions IREE's
CPU path would fuse wrongly (`fence-reductions`, its CPU form). A target whose buffers are 32-bit only (IREE's portable
Vulkan) gets `widen-narrow-io` at its boundary, and its gathers, reductions and elementwise ops
work on narrow tensors as 32-bit words, with signed byte math in i32 (`widen-narrow-storage`:
packed, they came out wrong); a Vulkan target gets a cast to 64 bits folded into the reductions that read it
(`fold-wide-casts-into-reductions`: a variance's f64 tile overflowed workgroup memory), every
reduction fenced,
float divisions guarded against zero divisors, ``x - x`` kept NaN for an infinite ``x``
(`keep-nan-self-subtract`: the driver may fold it to 0), a min or max of a NaN kept NaN
(`keep-nan-min-max`), ``x * 0`` kept NaN for an infinite or NaN ``x``
(`keep-nan-zero-products`), the sources of pads and strided slices
fenced, sorts IREE's SPIR-V code gets wrong (longer than 256) refused, and depthwise
convolutions written with their loops in layout order (`reorder-depthwise-convs`), and a
gather's source read from memory where a strided slice, pooling, convolution, contraction or
reduction computes it (`fence-gathered-slices`); one
without Int64 either gets its i64 math that provably fits in i32 done in i32
(`narrow-index-math`). The others get a strided slice that a gather reads
written to memory first (`fence-gathered-slices`: IREE's llvm-cpu code for the fusion fails to
translate); the CPU also gets the computed operands of a batched matmul written to memory
before its data tiling packs them (`fence-batched-matmul-operands`: packed in the dispatch that
computes them, they could come out per collapsed batch, wrong), and a convolution's result
written out before a reduction reads it (`fence-reduced-convolutions`: a CNN's head fused with
its global pool overflowed the stack and cost the fast configuration).
``scaled_dot_product_attention`` reaches IREE as each target compiles it (`lower-attention`:
tuned tiles on the CPU, the math form on Vulkan, IREE's GPU attention on CUDA).
``lowerkit.compile`` and ``lowerkit check`` both build this through the registry
(``registry.pipelines.factory("target-fixes")``), so both run the same stages for a target.
"""

from __future__ import annotations

import sys

from lowerkit import Build, Pipeline, PythonPassStage, Target
from lowerkit.iree import cpu_kernels
from lowerkit.target import CPU_OP_CONFIG_NATIVE_VECTORS, native_vector_bytes
from lowerkit.passes import (attention, batched_operand_fence, depthwise_order,
                             gathered_slice_fence, matmul_transpose_fence, narrow_storage,
                             reduced_conv_fence,
                             narrow_index_math,
                             narrow_io, nan_min_max, pad_fence, reduction_fence, seed_input, self_subtract,
                             sort_guard, wide_cast_fold, zero_product,
                             strided_slice_fence, zero_divisor)


def build_pipeline(target: "Target | str" = "cpu", after: Build = Build.TORCH_MLIR) -> Pipeline:
    """The fixes for ``target``, on a module of build ``after`` (the build the lowering
    pipeline ended in: `widen-narrow-io` runs in either)."""
    target = Target.parse(target)
    bits = frozenset(target.storage_bits)
    refuse = "" if 64 in bits else target.name  # no 64-bit arithmetic for the generator
    stages = [PythonPassStage.from_module(
        seed_input, lambda op: seed_input.run(op, refuse_on=refuse), after)]
    if not target.narrow_io:  # its devices' buffers are 32-bit only; the runtime widens to match
        stages.append(PythonPassStage.from_module(
            narrow_io, lambda op: narrow_io.widen(op, bits), after))
    backends = target.backend.split("+")
    if "vulkan-spirv" in backends:  # IREE's SPIR-V path cannot compile its attention op
        stages.append(PythonPassStage.from_module(attention, attention.decompose))
    elif backends == ["llvm-cpu"]:  # its attention op, with keys transposed and tile sizes
        stages.append(PythonPassStage.from_module(attention, lambda op: attention.for_cpu(
            op, native_vector_bytes(target), CPU_OP_CONFIG_NATIVE_VECTORS,
            lambda: cpu_kernels.attention_object_for(target))))
    if "vulkan-spirv" in target.backend:  # IREE build: the barrier is IREE's `util` dialect
        stages += [
            PythonPassStage.from_module(wide_cast_fold, wide_cast_fold.fold),
            PythonPassStage.from_module(reduction_fence, lambda op: reduction_fence.fence(op, bits)),
            PythonPassStage.from_module(zero_divisor, zero_divisor.guard),
            PythonPassStage.from_module(self_subtract, self_subtract.keep),
            PythonPassStage.from_module(nan_min_max, nan_min_max.keep),
            PythonPassStage.from_module(zero_product, zero_product.keep),
            PythonPassStage.from_module(pad_fence, pad_fence.fence),
            PythonPassStage.from_module(strided_slice_fence, strided_slice_fence.fence),
            PythonPassStage.from_module(sort_guard),
            PythonPassStage.from_module(depthwise_order),
            PythonPassStage.from_module(gathered_slice_fence, gathered_slice_fence.fence_computed),
        ]
        if not target.narrow_io:  # packed narrow tensors came out wrong (`narrow_storage`)
            stages.append(PythonPassStage.from_module(
                narrow_storage, lambda op: narrow_storage.widen(op, bits)))
        if 64 not in bits:  # no Int64 either: i64 math that provably fits is done in i32
            stages.append(PythonPassStage.from_module(narrow_index_math))
    else:  # reductions read two ways, and an argmax read transposed (`fence_for_cpu`)
        stages.append(PythonPassStage.from_module(reduction_fence, reduction_fence.fence_for_cpu))
        # a strided slice fused into a gather fails LLVM's translation
        stages.append(PythonPassStage.from_module(gathered_slice_fence))
        if backends == ["llvm-cpu"]:  # its data tiling packs a computed batched operand wrongly
            stages.append(PythonPassStage.from_module(batched_operand_fence))
            # and leaves a matmul whose result is transposed off its microkernel path
            stages.append(PythonPassStage.from_module(matmul_transpose_fence))
            # and a convolution fused with the reduction reading it overflowed the stack
            stages.append(PythonPassStage.from_module(reduced_conv_fence))
    return Pipeline("target-fixes", stages, description=__doc__.splitlines()[0])


if __name__ == "__main__":  # the stages each target named on the command line gets
    for spec in sys.argv[1:] or ["cpu"]:
        print(f"{spec}: {', '.join(build_pipeline(spec).stage_names)}")
