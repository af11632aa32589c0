# RUN: %PYTHON %s %S/../test/lit/Inputs/activations.py:gelu_silu --print-all | FileCheck %s
# CHECK: // ----- after lower-custom-ops
# CHECK: torch.aten.gelu
# CHECK: // ----- after torch-backend-contract
# CHECK: func.func @main(%arg0: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32>
# CHECK: // ----- after linalg-on-tensors
# CHECK: func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32>
# CHECK: math.erf
# CHECK-NOT: torch.
"""torch-to-linalg: raw torch dialect -> torch backend contract -> linalg on tensors.

The stages, in torch-mlir's MLIR build:

- ``lower-custom-ops``: user-defined PyTorch ops replaced by their Python lowerings
   (`lowerkit.custom_op_lowering`); a model without custom ops is left as it is;
- ``widen-unsigned``: ``uint8`` computed as ``int32`` in 0..255 (torch-mlir crashes on or
   miscomputes ``uint8`` arithmetic, sums and sorts);
- ``rewrite-bool-mask-index-put``: ``y[mask] = scalar`` as ``where`` (IREE cannot compile the
   nonzero-based form torch-mlir produces);
- ``replace-empty-results``: views and poolings whose results have no elements, on which
   torch-mlir's linalg conversion crashes or fails, become new empty tensors;
- ``rewrite-unit-window-pooling``: 1x1-window pooling as a strided slice (IREE miscompiles it);
- ``trim-conv-overhang``: explicit padding for convolutions whose window overhangs the input
   (IREE rejects them); ``pad-pool-overhang`` the same for max and average pooling whose
   windows overhang or stop short of the padded input (average pooling divides by eager's
   per-window counts); ``undilate-single-window-convs``: a dilated convolution with one
   window along a dim gathers its taps and convolves undilated (IREE's code for
   ``vulkan:llvmpipe`` fails on it); ``gather-adaptive-max-pool``: adaptive max pooling with uneven
   windows as a gather and a max (torch-mlir cannot lower it); ``fold-empty-cat``: a cat of empty tensors, for which torch-mlir
   builds invalid IR; ``normalize-unit-slices``:
   step 1 for a strided slice of one element (IREE rejects the strided layout);
   ``fold-unit-argmax``: an argmax or argmin over a dim of one element as zeros (IREE's code
   for the portable Vulkan target cannot store the int64 fill it folds it to);
   ``crop-negative-pad``: a constant pad by negative amounts as a slice, then a pad (IREE
   rejects torch-mlir's negative offsets); ``keep-nan-self-compare``: ``x == x`` of floats
   as ``not isnan(x)`` (torch-mlir folds it to True, NaN or not); ``keep-nan-clamps``: a
   clamp, ``hardtanh``, ``maximum`` or ``minimum`` of a NaN as NaN (torch-mlir's lowering
   returned the bound or the other operand: a silent wrong answer on every target);
- ``torch-backend-contract``: torch-mlir's FX path to the backend contract (value semantics,
   shapes and dtypes refined, ops decomposed to those the backends accept);
- ``batch-unbatched-pooling``: pooling of ``[C, H, W]`` as pooling of ``[1, C, H, W]``
   (torch-mlir only lowers the batched form; after the contract, which makes more poolings,
   e.g. of ``adaptive_max_pool2d``), and max pooling whose indices are used at a batch of one
   as a batch of two (IREE cannot compile torch-mlir's indices at batch one);
- ``flatten-dynamic-views``: a view merging dynamic dims (``x.view(-1, c)`` of ``[?, ?, c]``)
   as ``aten.flatten`` (torch-mlir's lowering of the view assumed the second dim was 1: a
   silent wrong answer);
- ``lower-bit-views``: ``x.view(dtype)`` between dtypes of one width (and ``signbit``,
   ``copysign``, which read the sign bit through it) as a ``tensor.bitcast`` (torch-mlir has
   no lowering of the view);
- ``linalg-on-tensors``: the backend contract to ``linalg``/``tensor``/``arith`` on tensors,
   which IREE takes as input; loops (``torch.prim.Loop``, a ``while_loop``'s import) go to
   ``scf`` first, before a canonicalization folds a first test known at compile time to
   ``true`` (torch-mlir then took the while loop for a ``for`` loop of 2**63 - 1 steps that
   never tests again: the call never returned);
- ``fold-empty-contractions``: a matmul over a zero-length dimension is its zero init
   (iree-compile crashes on it);
- ``keep-nan-arg-reductions``: ``argmax``/``argmin`` (and ``max``/``min`` over a dim) of a row
   holding a NaN point at its first NaN, as eager's do (torch-mlir's compare skipped NaN);
- ``round-f64-constants``: an f64 constant narrowed by ``truncf`` (a Python float argument)
   as the narrow constant (IREE cannot lower that ``truncf`` once it hoists it).

The fixes are lowerkit's own Python passes (python/lowerkit/passes/), each for a defect of
IREE 3.13 met in real models; test/python/test_defects.py holds their regression tests.

Run it as a script on a model factory to print every stage:

    python pipelines/torch_to_linalg.py path/to/model.py:factory
"""

from __future__ import annotations

import sys

from lowerkit import PassPipelineStage, Pipeline, registry

NAME = "torch-to-linalg"
# lowerkit's own passes on the torch dialect, before torch-mlir's backend contract
TORCH_FIXES = ("widen-unsigned", "rewrite-bool-mask-index-put", "replace-empty-results",
               "rewrite-unit-window-pooling", "trim-conv-overhang", "undilate-single-window-convs",
               "pad-pool-overhang",
               "gather-adaptive-max-pool", "fold-empty-cat", "normalize-unit-slices",
               "crop-negative-pad", "keep-nan-self-compare", "keep-nan-clamps",
               "fold-unit-argmax")


def build_pipeline() -> Pipeline:
    return Pipeline(
        NAME,
        [
            registry.passes.get("lower-custom-ops"),
            *(registry.passes.get(name) for name in TORCH_FIXES),
            PassPipelineStage(
                "torch-backend-contract",
                "func.func(torch-match-quantized-custom-ops),"
                "torchdynamo-export-to-torch-backend-pipeline{backend-legal-ops=aten.scaled_dot_product_attention}",
            ),
            registry.passes.get("batch-unbatched-pooling"),
            registry.passes.get("flatten-dynamic-views"),
            registry.passes.get("lower-bit-views"),
            PassPipelineStage(
                "linalg-on-tensors",
                "func.func(convert-torch-to-scf),"
                "torch-backend-to-linalg-on-tensors-backend-pipeline",
            ),
            registry.passes.get("fold-empty-contractions"),
            registry.passes.get("keep-nan-arg-reductions"),
            registry.passes.get("round-f64-constants"),
        ],
        description="raw torch -> torch backend contract -> linalg on tensors",
    )


if __name__ == "__main__":
    from lowerkit.cli import main

    sys.exit(main(["lower", *sys.argv[1:], "--pipeline", NAME]))
