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

0. ``lower-custom-ops``: user-defined PyTorch ops replaced by their Python lowerings
   (`lowerkit.custom_op_lowering`); a model without custom ops is left as it is;
1. ``widen-unsigned``: ``uint8`` computed as ``int32`` in 0..255 (torch-mlir crashes on or
   miscomputes ``uint8`` arithmetic, sums and sorts);
1. ``rewrite-bool-mask-index-put``: ``y[mask] = scalar`` as ``where`` (IREE cannot compile the
   nonzero-based form torch-mlir produces);
2. ``rewrite-unit-window-pooling``: 1x1-window pooling as a strided slice (IREE miscompiles it);
3. ``trim-conv-overhang``: explicit padding for convolutions whose window overhangs the input
   (IREE rejects them);
4. ``torch-backend-contract``: torch-mlir's FX path to the backend contract (value semantics,
   shapes and dtypes refined, ops decomposed to those the backends accept);
5. ``linalg-on-tensors``: the backend contract to ``linalg``/``tensor``/``arith`` on tensors,
   which IREE takes as input;
6. ``fold-empty-contractions``: a matmul over a zero-length dimension is its zero init
   (iree-compile crashes on it).

The fixes are lowerkit's own Python passes (python/lowerkit/passes/), each for a defect of
IREE 3.13 met in real models; test/python/test_defects.py holds their regression tests.

Run it as a script on a model factory to print every stage:

    python pipelines/torch_to_linalg.py path/to/model.py:factory
"""

from __future__ import annotations

import sys

from lowerkit import PassPipelineStage, Pipeline, PythonPassStage
from lowerkit.custom_ops import lower_custom_ops
from lowerkit.passes import (bool_mask_index_put, conv_overhang, empty_contractions,
                             unit_window_pooling, widen_unsigned)

NAME = "torch-to-linalg"


def _python_pass(module) -> PythonPassStage:
    """A stage of one of lowerkit's pass modules (``NAME``, ``run`` and a docstring)."""
    return PythonPassStage(module.NAME, module.run, description=module.__doc__.splitlines()[0])


def build_pipeline() -> Pipeline:
    return Pipeline(
        NAME,
        [
            lower_custom_ops(),
            *(_python_pass(p) for p in (widen_unsigned, bool_mask_index_put, unit_window_pooling,
                                        conv_overhang)),
            PassPipelineStage(
                "torch-backend-contract",
                "func.func(torch-match-quantized-custom-ops),"
                "torchdynamo-export-to-torch-backend-pipeline",
            ),
            PassPipelineStage(
                "linalg-on-tensors",
                "torch-backend-to-linalg-on-tensors-backend-pipeline",
            ),
            _python_pass(empty_contractions),
        ],
        description="raw torch -> torch backend contract -> linalg on tensors",
    )


if __name__ == "__main__":
    from lowerkit.cli import main

    sys.exit(main(["lower", *sys.argv[1:], "--pipeline", NAME]))
