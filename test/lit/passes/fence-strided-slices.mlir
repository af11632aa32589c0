// RUN: lowerkit-opt --pass=fence-strided-slices %s | FileCheck %s

// A strided slice of a computed tensor reads it through a barrier; a unit-stride slice of it,
// and a strided slice of an argument, do not.
// CHECK-LABEL: func.func @slices
// CHECK: %[[F:.*]] = linalg.generic
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[F]]
// CHECK: tensor.extract_slice %[[FENCED]][0, 0] [2, 2] [2, 2]
// CHECK-NOT: util.optimization_barrier
// CHECK: tensor.extract_slice %[[F]][0, 0] [2, 2] [1, 1]
// CHECK: tensor.extract_slice %arg0[0, 0] [2, 2] [2, 2]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @slices(%a: tensor<4x4xi8>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xi8>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xi8>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%v: i8, %out: f32):
      %r = arith.sitofp %v : i8 to f32
      linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %s = tensor.extract_slice %f[0, 0] [2, 2] [2, 2] : tensor<4x4xf32> to tensor<2x2xf32>
  %u = tensor.extract_slice %f[0, 0] [2, 2] [1, 1] : tensor<4x4xf32> to tensor<2x2xf32>
  %t = tensor.extract_slice %a[0, 0] [2, 2] [2, 2] : tensor<4x4xi8> to tensor<2x2xi8>
  return %s, %u, %t : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xi8>
}
