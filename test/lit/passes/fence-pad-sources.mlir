// RUN: lowerkit-opt --pass=fence-pad-sources %s | FileCheck %s

// The pad of a computed tensor reads it through a barrier; the pad of an argument does not.
// CHECK-LABEL: func.func @pads
// CHECK: %[[EXP:.*]] = linalg.generic
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[EXP]]
// CHECK: tensor.pad %[[FENCED]]
// CHECK-NOT: util.optimization_barrier
// CHECK: tensor.pad %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @pads(%a: tensor<4x4xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%v: f32, %out: f32):
      %r = math.exp %v : f32
      linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %p = tensor.pad %x low[2, 2] high[2, 2] {
    ^bb0(%i: index, %j: index):
      tensor.yield %z : f32
  } : tensor<4x4xf32> to tensor<8x8xf32>
  %q = tensor.pad %a low[2, 2] high[2, 2] {
    ^bb0(%i: index, %j: index):
      tensor.yield %z : f32
  } : tensor<4x4xf32> to tensor<8x8xf32>
  return %p, %q : tensor<8x8xf32>, tensor<8x8xf32>
}
