// Custom ops with a lowering registered (by --load) become torch ops; others are named.
// RUN: lowerkit-opt --load %S/../Inputs/custom_op_lowerings.py --pass=lower-custom-ops %s | FileCheck %s
// RUN: not lowerkit-opt --pass=lower-custom-ops %s 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @f
// CHECK: %[[R:.*]] = torch.aten.relu %arg0 : !torch.vtensor<[3,4],f32> -> !torch.vtensor<[3,4],f32>
// CHECK: torch.aten.mul.Tensor %[[R]], %[[R]]
// CHECK-NOT: torch.operator
// MISSING: lower-custom-ops.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: custom op 'lit_demo::squared_relu' has no lowering; register one with @lowerkit.custom_op_lowering('lit_demo::squared_relu')
func.func @f(%arg0: !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[3,4],f32> {
  %0 = torch.operator "torch.lit_demo.squared_relu"(%arg0) : (!torch.vtensor<[3,4],f32>) -> !torch.vtensor<[3,4],f32>
  return %0 : !torch.vtensor<[3,4],f32>
}

// torch's own namespaces are left to torch-mlir.
// CHECK-LABEL: func.func @aten
// CHECK: torch.operator "torch.aten.some_new_op"
func.func @aten(%arg0: !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[3,4],f32> {
  %0 = torch.operator "torch.aten.some_new_op"(%arg0) : (!torch.vtensor<[3,4],f32>) -> !torch.vtensor<[3,4],f32>
  return %0 : !torch.vtensor<[3,4],f32>
}
