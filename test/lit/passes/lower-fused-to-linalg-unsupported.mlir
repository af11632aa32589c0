// fused.rms_norm has no lowering yet: the dialect conversion names it.
// RUN: lowerkit-opt --pass=lower-fused-to-linalg --verify-diagnostics %s

func.func @rms(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{failed to legalize operation 'fused.rms_norm'}}
  %0 = "fused.rms_norm"(%x, %w) {epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
