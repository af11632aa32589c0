// IRDL constraints are checked by the verifier.
// RUN: lowerkit-opt --split-input-file --verify-diagnostics %s

func.func @not_a_tensor(%x: f32) -> f32 {
  // expected-error @+1 {{expected base type 'builtin.tensor' but got 'builtin.f32'}}
  %0 = "fused.gelu"(%x) : (f32) -> f32
  return %0 : f32
}

// -----

func.func @no_epsilon(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute "epsilon" is expected but not provided}}
  %0 = "fused.rms_norm"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
