// RUN: lowerkit-opt --pass=fence-transposed-matmul-results %s | FileCheck %s

// nn.MultiheadAttention's packed in-projection: a matmul, its bias, a view as [rows, 3, d]
// and a transpose to [3, rows, d]. The transpose reads the matmul's result through a barrier
// (IREE would fold it into the matmul, off the data-tiled microkernel path).
// CHECK-LABEL: func.func @packed_projection
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK: %[[BIAS:.*]] = linalg.generic
// CHECK: %[[V:.*]] = tensor.expand_shape %[[BIAS]]
// CHECK: %[[B:.*]] = iree_tensor_ext.compute_barrier.start %[[V]] : tensor<20x3x64xf32> -> tensor<20x3x64xf32>
// CHECK: linalg.transpose ins(%[[B]] : tensor<20x3x64xf32>)
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @packed_projection(%x: tensor<20x64xf32>, %w: tensor<64x192xf32>, %b: tensor<192xf32>) -> tensor<3x20x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<20x192xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<20x192xf32>) -> tensor<20x192xf32>
  %m = linalg.matmul ins(%x, %w : tensor<20x64xf32>, tensor<64x192xf32>) outs(%z : tensor<20x192xf32>) -> tensor<20x192xf32>
  %biased = linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<20x192xf32>, tensor<192xf32>) outs(%e : tensor<20x192xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<20x192xf32>
  %v = tensor.expand_shape %biased [[0], [1, 2]] output_shape [20, 3, 64] : tensor<20x192xf32> into tensor<20x3x64xf32>
  %t0 = tensor.empty() : tensor<3x20x64xf32>
  %t = linalg.transpose ins(%v : tensor<20x3x64xf32>) outs(%t0 : tensor<3x20x64xf32>) permutation = [1, 0, 2]
  return %t : tensor<3x20x64xf32>
}

// A transpose of anything else (here an argument) is left alone.
// CHECK-LABEL: func.func @argument_transposed
// CHECK-NOT: compute_barrier
// CHECK: linalg.transpose
func.func @argument_transposed(%x: tensor<20x3x64xf32>) -> tensor<3x20x64xf32> {
  %t0 = tensor.empty() : tensor<3x20x64xf32>
  %t = linalg.transpose ins(%x : tensor<20x3x64xf32>) outs(%t0 : tensor<3x20x64xf32>) permutation = [1, 0, 2]
  return %t : tensor<3x20x64xf32>
}

// Rows of dynamic size (a sequence length exported as dynamic): the barrier carries the
// fenced value's dynamic dims as its operands, as `compute_barrier.start` requires (without
// them the module did not verify).
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK: %[[V:.*]] = tensor.expand_shape %[[M]]
// CHECK: %[[D:.*]] = tensor.dim %[[V]], %{{.*}} : tensor<?x3x64xf32>
// CHECK: %[[B:.*]] = iree_tensor_ext.compute_barrier.start %[[V]] : tensor<?x3x64xf32>{%[[D]]} -> tensor<?x3x64xf32>
// CHECK: linalg.transpose ins(%[[B]] : tensor<?x3x64xf32>)
func.func @dynamic_rows(%x: tensor<?x64xf32>, %w: tensor<64x192xf32>) -> tensor<3x?x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x192xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<?x192xf32>) -> tensor<?x192xf32>
  %m = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x192xf32>) outs(%z : tensor<?x192xf32>) -> tensor<?x192xf32>
  %v = tensor.expand_shape %m [[0], [1, 2]] output_shape [%n, 3, 64] : tensor<?x192xf32> into tensor<?x3x64xf32>
  %t0 = tensor.empty(%n) : tensor<3x?x64xf32>
  %t = linalg.transpose ins(%v : tensor<?x3x64xf32>) outs(%t0 : tensor<3x?x64xf32>) permutation = [1, 0, 2]
  return %t : tensor<3x?x64xf32>
}
