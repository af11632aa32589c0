# Loading an IRDL dialect twice into one context is a no-op (MLIR would crash).
# RUN: %PYTHON %s | FileCheck %s
from torch_mlir import ir

import lowerkit

ctx = ir.Context()
d = lowerkit.load_dialect(ctx, "fused")
lowerkit.load_dialect(ctx, "fused")
print(d.name, d.ops, ctx.is_registered_operation("fused.gelu"))
# CHECK: fused ('fused.gelu', 'fused.silu', 'fused.rms_norm') True
print(ir.Context().is_registered_operation("fused.gelu"))
# CHECK: False
