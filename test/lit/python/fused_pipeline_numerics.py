# The fused-dialect pipeline compiles gelu and silu through linalg.generic, matching eager.
# RUN: %PYTHON %s | FileCheck %s
import sys
from pathlib import Path

import lowerkit

sys.path.insert(0, str(Path(__file__).parent.parent / "Inputs"))
import activations  # noqa: E402

model, (x,) = activations.gelu_silu()
art = lowerkit.compile(model, (x,), pipeline="torch-to-linalg-fused")
print([r.name for r in art.records if r.name in ("raise-to-fused", "lower-fused-to-linalg")])
# CHECK: ['raise-to-fused', 'lower-fused-to-linalg']
print("close:", float((art(x) - model(x)).abs().max()) < 1e-5)
# CHECK: close: True
