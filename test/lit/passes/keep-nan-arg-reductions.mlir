// RUN: lowerkit-opt --pass=keep-nan-arg-reductions %s | FileCheck %s

// max(dim) as torch-mlir lowers it: the index also moves where the candidate is NaN and the
// best so far is not, both tested on the bits.
// CHECK-LABEL: func.func @max_dim
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[X:.*]], %[[BEST:[^ ]*]] : f32
// CHECK: arith.bitcast %[[X]] : f32 to i32
// CHECK: %[[XNAN:.*]] = arith.cmpi ugt
// CHECK: arith.bitcast %[[BEST]] : f32 to i32
// CHECK: %[[BNAN:.*]] = arith.cmpi ugt
// CHECK: %[[NOTB:.*]] = arith.xori %[[BNAN]], %true
// CHECK: %[[FIRST:.*]] = arith.andi %[[XNAN]], %[[NOTB]]
// CHECK: %[[MOVE:.*]] = arith.ori %[[GT]], %[[FIRST]]
// CHECK: arith.select %[[MOVE]]
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
func.func @max_dim(%a: tensor<8xf32>, %v0: tensor<f32>, %i0: tensor<i64>) -> (tensor<f32>, tensor<i64>) {
  %r:2 = linalg.generic {indexing_maps = [#v, #s, #s], iterator_types = ["reduction"]}
      ins(%a : tensor<8xf32>) outs(%v0, %i0 : tensor<f32>, tensor<i64>) {
    ^bb0(%x: f32, %best: f32, %at: i64):
      %i = linalg.index 0 : index
      %j = arith.index_cast %i : index to i64
      %m = arith.maximumf %x, %best : f32
      %gt = arith.cmpf ogt, %x, %best : f32
      %k = arith.select %gt, %j, %at : i64
      linalg.yield %m, %k : f32, i64
  } -> (tensor<f32>, tensor<i64>)
  return %r#0, %r#1 : tensor<f32>, tensor<i64>
}

// A compare that tracks no max (a where) is left alone.
// CHECK-LABEL: func.func @where_gt
// CHECK-NOT: arith.ori
func.func @where_gt(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %gt = arith.cmpf ogt, %x, %y : f32
      %s = arith.select %gt, %x, %y : f32
      linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
