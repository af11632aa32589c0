// RUN: lowerkit-opt --pass=fence-batched-matmul-operands %s | FileCheck %s

// A computed operand of 5 rows a batch reads through a barrier; the argument beside it does
// not (IREE's CPU data tiling packs a computed one in its own dispatch, per collapsed batch).
// CHECK-LABEL: func.func @uneven_rows
// CHECK: %[[X:.*]] = linalg.generic
// CHECK: %[[B:.*]] = util.optimization_barrier %[[X]] : tensor<2x5x16xf32>
// CHECK-NOT: util.optimization_barrier
// CHECK: linalg.batch_matmul ins(%[[B]], %arg1 : tensor<2x5x16xf32>, tensor<2x16x8xf32>)
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @uneven_rows(%arg0: tensor<2x5x16xf32>, %arg1: tensor<2x16x8xf32>) -> tensor<2x5x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2x5x16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x5x16xf32>) outs(%e : tensor<2x5x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x5x16xf32>
  %o = tensor.empty() : tensor<2x5x8xf32>
  %z = linalg.fill ins(%cst : f32) outs(%o : tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %r = linalg.batch_matmul ins(%x, %arg1 : tensor<2x5x16xf32>, tensor<2x16x8xf32>) outs(%z : tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  return %r : tensor<2x5x8xf32>
}

// Rows and columns that are multiples of 16 pack the same collapsed or not: left alone.
// CHECK-LABEL: func.func @even_rows
// CHECK-NOT: util.optimization_barrier
// CHECK: linalg.batch_matmul
func.func @even_rows(%arg0: tensor<2x16x32xf32>, %arg1: tensor<2x32x8xf32>) -> tensor<2x16x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2x16x32xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x16x32xf32>) outs(%e : tensor<2x16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<2x16x32xf32>
  %o = tensor.empty() : tensor<2x16x8xf32>
  %z = linalg.fill ins(%cst : f32) outs(%o : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
  %r = linalg.batch_matmul ins(%x, %arg1 : tensor<2x16x32xf32>, tensor<2x32x8xf32>) outs(%z : tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
  return %r : tensor<2x16x8xf32>
}

// A plain matmul has no batch to collapse rows into: left alone.
// CHECK-LABEL: func.func @unbatched
// CHECK-NOT: util.optimization_barrier
// CHECK: linalg.matmul
func.func @unbatched(%arg0: tensor<5x16xf32>, %arg1: tensor<16x8xf32>) -> tensor<5x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<5x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<5x16xf32>) outs(%e : tensor<5x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<5x16xf32>
  %o = tensor.empty() : tensor<5x8xf32>
  %z = linalg.fill ins(%cst : f32) outs(%o : tensor<5x8xf32>) -> tensor<5x8xf32>
  %r = linalg.matmul ins(%x, %arg1 : tensor<5x16xf32>, tensor<16x8xf32>) outs(%z : tensor<5x8xf32>) -> tensor<5x8xf32>
  return %r : tensor<5x8xf32>
}
