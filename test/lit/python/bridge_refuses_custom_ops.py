# The bridge to IREE names every custom-dialect op still in the module.
# RUN: %PYTHON %s | FileCheck %s
from torch_mlir import ir

import lowerkit
from lowerkit.iree import bridge

ctx = ir.Context()
lowerkit.load_dialect(ctx, "fused")
module = ir.Module.parse('func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
                         '  %0 = "fused.silu"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
                         '  return %0 : tensor<4xf32>\n}', ctx)
for cross in (bridge.to_iree_bytecode, bridge.torch_mlir_to_iree):
    try:
        cross(module)
    except lowerkit.StageError as e:
        print(e.stage, "|", e.summary)
        print(e.diagnostics[0].op)
# CHECK: bridge-to-iree | 1 op(s) of custom dialects left: fused.silu
# CHECK-NEXT: fused.silu
# CHECK: bridge-to-iree | 1 op(s) of custom dialects left: fused.silu
