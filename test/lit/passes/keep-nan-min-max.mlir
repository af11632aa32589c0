// RUN: lowerkit-opt --pass=keep-nan-min-max %s | FileCheck %s

// A NaN-propagating min keeps its result only where neither operand is NaN, tested on the bits.
// CHECK-LABEL: func.func @amin
// CHECK: %[[MIN:.*]] = arith.minimumf %[[A:.*]], %[[B:.*]] : f32
// CHECK: arith.bitcast %[[B]] : f32 to i32
// CHECK: arith.cmpi ugt
// CHECK: %[[ON_B:.*]] = arith.select %{{.*}}, %[[B]], %[[MIN]] : f32
// CHECK: arith.bitcast %[[A]] : f32 to i32
// CHECK: %[[KEPT:.*]] = arith.select %{{.*}}, %[[A]], %[[ON_B]] : f32
// CHECK: linalg.yield %[[KEPT]] : f32
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
func.func @amin(%a: tensor<8xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
      ins(%a : tensor<8xf32>) outs(%init : tensor<f32>) {
    ^bb0(%x: f32, %acc: f32):
      %m = arith.minimumf %x, %acc : f32
      linalg.yield %m : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
