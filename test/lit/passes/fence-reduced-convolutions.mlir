// RUN: lowerkit-opt --pass=fence-reduced-convolutions %s | FileCheck %s

// A CNN's head: a 1x1 convolution, an activation, then a global average pool's sum. The sum
// reads the activation through a barrier (fused into the convolution's dispatch, its tiles
// overflowed IREE's stack limit on the data-tiled path: EfficientNet-V2-S's 256 -> 1280 head).
// CHECK-LABEL: func.func @head
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[B:.*]] = iree_tensor_ext.compute_barrier.start %[[A]] : tensor<1x32x4x4xf32> -> tensor<1x32x4x4xf32>
// CHECK: linalg.generic {{.*}}"reduction", "reduction"{{.*}} ins(%[[B]] : tensor<1x32x4x4xf32>)
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#kept = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func @head(%x: tensor<1x16x4x4xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<1x32xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x32x4x4xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x16x4x4xf32>, tensor<32x16x1x1xf32>) outs(%z : tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  %a = linalg.generic {indexing_maps = [#all, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x32x4x4xf32>) outs(%e : tensor<1x32x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %cst : f32
    linalg.yield %r : f32
  } -> tensor<1x32x4x4xf32>
  %s0 = tensor.empty() : tensor<1x32xf32>
  %sz = linalg.fill ins(%cst : f32) outs(%s0 : tensor<1x32xf32>) -> tensor<1x32xf32>
  %s = linalg.generic {indexing_maps = [#all, #kept], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%a : tensor<1x32x4x4xf32>) outs(%sz : tensor<1x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %in, %out : f32
    linalg.yield %t : f32
  } -> tensor<1x32xf32>
  return %s : tensor<1x32xf32>
}

// A reduction of a matmul's result (a transformer's LayerNorm after its projection) is left
// to IREE's dispatches.
// CHECK-LABEL: func.func @layer_norm_sum
// CHECK-NOT: compute_barrier
// CHECK: return
#row = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (d0)>
func.func @layer_norm_sum(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  %s0 = tensor.empty() : tensor<8xf32>
  %sz = linalg.fill ins(%cst : f32) outs(%s0 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#row, #first], iterator_types = ["parallel", "reduction"]} ins(%m : tensor<8x32xf32>) outs(%sz : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %in, %out : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}
