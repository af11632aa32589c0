"""torch-to-linalg: raw torch dialect -> torch backend contract -> linalg on tensors.

The stages, in torch-mlir's MLIR build:

0. ``lower-custom-ops``: user-defined PyTorch ops replaced by their Python lowerings
   (`lowerkit.custom_op_lowering`); a model without custom ops is left as it is;
1. ``rewrite-bool-mask-index-put``: ``y[mask] = scalar`` as ``where`` (IREE cannot compile the
   nonzero-based form torch-mlir produces);
2. ``torch-backend-contract``: torch-mlir's FX path to the backend contract (value semantics,
   shapes and dtypes refined, ops decomposed to those the backends accept);
3. ``linalg-on-tensors``: the backend contract to ``linalg``/``tensor``/``arith`` on tensors,
   which IREE takes as input.

Run it as a script on a model factory to print every stage:

    python pipelines/torch_to_linalg.py path/to/model.py:factory
"""

from __future__ import annotations

import sys

from lowerkit import PassPipelineStage, Pipeline, PythonPassStage
from lowerkit.custom_ops import lower_custom_ops
from lowerkit.passes import bool_mask_index_put

NAME = "torch-to-linalg"


def build_pipeline() -> Pipeline:
    return Pipeline(
        NAME,
        [
            lower_custom_ops(),
            PythonPassStage(bool_mask_index_put.NAME, bool_mask_index_put.run,
                            description=bool_mask_index_put.__doc__.splitlines()[0]),
            PassPipelineStage(
                "torch-backend-contract",
                "func.func(torch-match-quantized-custom-ops),"
                "torchdynamo-export-to-torch-backend-pipeline",
            ),
            PassPipelineStage(
                "linalg-on-tensors",
                "torch-backend-to-linalg-on-tensors-backend-pipeline",
            ),
        ],
        description="raw torch -> torch backend contract -> linalg on tensors",
    )


if __name__ == "__main__":
    from lowerkit.cli import main

    sys.exit(main(["lower", *sys.argv[1:], "--pipeline", NAME]))
