// RUN: lowerkit-opt --pass=lower-fused-to-linalg %s | FileCheck %s

// CHECK-LABEL: func.func @gelu
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: math.erf
// CHECK: linalg.yield
// CHECK-NOT: fused.
func.func @gelu(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "fused.gelu"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Dynamic sizes come from tensor.dim.
// CHECK-LABEL: func.func @silu_dynamic
// CHECK: %[[D:.*]] = tensor.dim %arg0, %{{.*}} : tensor<2x?xf32>
// CHECK: tensor.empty(%[[D]]) : tensor<2x?xf32>
// CHECK: math.exp
// CHECK: arith.divf
func.func @silu_dynamic(%a: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = "fused.silu"(%a) : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}
