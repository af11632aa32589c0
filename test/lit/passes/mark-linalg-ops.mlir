// A transform-dialect script run by the transform interpreter.
// RUN: lowerkit-opt --pass=mark-linalg-ops %s | FileCheck %s

#map = affine_map<(d0) -> (d0)>
// CHECK: linalg.generic
// CHECK-SAME: attrs = {lowerkit.marked}
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
