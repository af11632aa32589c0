// RUN: lowerkit-opt --pass=keep-nan-self-subtract %s | FileCheck %s

// `v - v` read twice from one tensor becomes 0, or NaN where v's exponent bits are all ones;
// `v - w` stays a subtraction.
// CHECK-LABEL: func.func @self_subtract
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: arith.andi {{.*}} : i32
// CHECK: arith.cmpi uge
// CHECK: arith.select {{.*}} : f32
// CHECK: arith.subf %in, %in_0 : f32
#v = affine_map<(d0) -> (d0)>
func.func @self_subtract(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%a, %a : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %r = arith.subf %x, %y : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  %o = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %r = arith.subf %x, %y : f32
      linalg.yield %r : f32
  } -> tensor<8xf32>
  return %d, %o : tensor<8xf32>, tensor<8xf32>
}
