# A model calling a torch.library.custom_op compiles with IREE and matches eager PyTorch.
# RUN: %PYTHON %s | FileCheck %s
import sys
from pathlib import Path

import torch

import lowerkit

sys.path.insert(0, str(Path(__file__).parent.parent / "Inputs"))
import custom_op  # noqa: E402

model, (x,) = custom_op.model()
art = lowerkit.compile(model, (x,), target="cpu")
print("stages:", " ".join(r.name for r in art.records)[:60])
# CHECK: stages: torch-import lower-custom-ops
print("max error:", float((art(x) - model(x)).abs().max()))
# CHECK: max error: 0.0
