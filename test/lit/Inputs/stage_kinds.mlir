func.func @main(%x: tensor<4xf32>, %y: f32) -> (tensor<4xf32>, f32) {
  %zero = arith.constant 0.000000e+00 : f32
  %a = arith.negf %y : f32
  %b = arith.negf %a : f32
  %c = arith.addf %b, %zero : f32
  %g = "fused.gelu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %g, %c : tensor<4xf32>, f32
}
