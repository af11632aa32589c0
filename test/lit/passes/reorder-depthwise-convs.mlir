// RUN: lowerkit-opt --pass=reorder-depthwise-convs %s | FileCheck %s

// A strided, dilated depthwise conv becomes a generic with the channel loop outside the
// spatial ones and the taps at s * stride + k * dilation; the output is written in layout order.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4 * 3, d3 + d5)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @dw
// CHECK-NOT: linalg.depthwise_conv
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @dw(%x: tensor<1x4x13x10xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x4x4x8xf32> {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<1x4x4x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %2 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<[3, 1]> : vector<2xi64>, strides = dense<[2, 1]> : vector<2xi64>} ins(%x, %w : tensor<1x4x13x10xf32>, tensor<4x3x3xf32>) outs(%1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %2 : tensor<1x4x4x8xf32>
}
