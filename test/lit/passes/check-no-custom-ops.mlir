// RUN: not lowerkit-opt --pass=check-no-custom-ops %s 2>&1 | FileCheck %s
// RUN: lowerkit-opt --pass=lower-fused-to-linalg,check-no-custom-ops %s | FileCheck %s --check-prefix=LOWERED

// CHECK: error: stage 'check-no-custom-ops' failed: 1 op(s) of custom dialects left: fused.gelu
// CHECK: note: {{.*}}'fused.gelu'
// LOWERED: linalg.generic
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fused.gelu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
