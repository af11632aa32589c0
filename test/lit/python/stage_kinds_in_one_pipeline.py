# Every kind of stage, built in Python, in one Pipeline; each records its own name.
# RUN: %PYTHON %s | FileCheck %s
from pathlib import Path

from torch_mlir import ir

import lowerkit

ctx = ir.Context()
lowerkit.load_dialect(ctx, "fused")
module = ir.Module.parse((Path(__file__).parent.parent / "Inputs" / "stage_kinds.mlir").read_text(), ctx)
pipeline = lowerkit.registry.pipelines.get("stage-kinds")
lowering = pipeline.run(module)
for record in lowering.records:
    print(record.name, type(next(s for s in pipeline.leaf_stages() if s.name == record.name)).__name__)
# CHECK: canonicalize-cse PassPipelineStage
# CHECK: erase-zero-add GreedyRewriteStage
# CHECK: fold-double-negation PDLStage
# CHECK: lower-fused-to-linalg ConversionStage
# CHECK: mark-linalg-ops TransformStage
# CHECK: count-ops PythonPassStage
print(lowering.record("lower-fused-to-linalg").dialects()["fused"])
# CHECK-NEXT: 0
