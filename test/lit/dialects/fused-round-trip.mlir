// The IRDL dialect is loaded by name (and again, idempotently) and round-trips.
// RUN: lowerkit-opt --dialect=fused --dialect=fused %s | lowerkit-opt | FileCheck %s
// CHECK: "fused.gelu"(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: "fused.silu"
// CHECK: "fused.rms_norm"(%{{.*}}, %arg1) {epsilon = 9.99999974E-6 : f32}
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "fused.gelu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "fused.silu"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "fused.rms_norm"(%1, %w) {epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
