// RUN: lowerkit-opt --pass=fence-reductions --split-input-file %s | FileCheck %s

// A reduction over an outer dim: its input and its result each go through a barrier, so that
// IREE gives it a dispatch of its own.
// CHECK-LABEL: func.func @outer
// CHECK: %[[IN:.*]] = linalg.generic {{.*}} ins(%arg0
// CHECK: %[[FENCED_IN:.*]] = util.optimization_barrier %[[IN]]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%[[FENCED_IN]]
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[SUM]]
// CHECK: linalg.generic {{.*}} ins(%[[IN]], %[[FENCED]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @outer(%a: tensor<3x12xf32>) -> tensor<3x12xf32> {
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<3x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x12xf32>) outs(%e2 : tensor<3x12xf32>) {
    ^bb0(%v: f32, %out: f32):
      %r = arith.mulf %v, %v : f32
      linalg.yield %r : f32
  } -> tensor<3x12xf32>
  %e = tensor.empty() : tensor<12xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<12xf32>) -> tensor<12xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<3x12xf32>) outs(%f : tensor<12xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<12xf32>
  %d = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<3x12xf32>, tensor<12xf32>) outs(%e2 : tensor<3x12xf32>) {
    ^bb0(%v: f32, %t: f32, %out: f32):
      %r = arith.divf %v, %t : f32
      linalg.yield %r : f32
  } -> tensor<3x12xf32>
  return %d : tensor<3x12xf32>
}

// -----

// An inner reduction read transposed (after an elementwise op): only its result is fenced.
// CHECK-LABEL: func.func @read_transposed
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0 :
// CHECK-NEXT: ^bb0
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[MAX]]
// CHECK: linalg.generic {{.*}} ins(%[[FENCED]]
// CHECK: linalg.transpose
// CHECK-NOT: util.optimization_barrier
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @read_transposed(%a: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.maximumf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) {
    ^bb0(%v: f32, %out: f32):
      %r = arith.mulf %v, %v : f32
      linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %te = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%b : tensor<4x8xf32>) outs(%te : tensor<8x4xf32>) permutation = [1, 0]
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<4xf32>
  return %t, %s : tensor<8x4xf32>, tensor<4xf32>
}

// -----

// An inner reduction that one op reads two ways (`s[:, None] - s[None, :]`) is fenced; one
// read twice the same way (`s * s`) is not.
// CHECK-LABEL: func.func @read_two_ways
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[S]]
// CHECK: linalg.generic {{.*}} ins(%[[FENCED]], %[[FENCED]] :
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NOT: util.optimization_barrier
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[Q]] :
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
func.func @read_two_ways(%a: tensor<6x4xf32>) -> (tensor<6x6xf32>, tensor<6xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<6x4xf32>) outs(%f : tensor<6xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<6xf32>
  %e2 = tensor.empty() : tensor<6x6xf32>
  %d = linalg.generic {indexing_maps = [#row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %s : tensor<6xf32>, tensor<6xf32>) outs(%e2 : tensor<6x6xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %r = arith.subf %x, %y : f32
      linalg.yield %r : f32
  } -> tensor<6x6xf32>
  %q = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<6x4xf32>) outs(%f : tensor<6xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.maximumf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<6xf32>
  %sq = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%q, %q : tensor<6xf32>, tensor<6xf32>) outs(%e : tensor<6xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %r = arith.mulf %x, %y : f32
      linalg.yield %r : f32
  } -> tensor<6xf32>
  return %d, %sq : tensor<6x6xf32>, tensor<6xf32>
}

// -----

// An outer reduction whose result is only returned: its input is fenced, its result is not
// (no consumer to fuse with; a barrier there cost a bool result beside it its value).
// CHECK-LABEL: func.func @outer_returned
// CHECK: %[[IN:.*]] = util.optimization_barrier
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[IN]]
// CHECK-NOT: util.optimization_barrier
// CHECK: return %[[SUM]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @outer_returned(%a: tensor<3x12xf32>) -> tensor<12xf32> {
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<3x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x12xf32>) outs(%e2 : tensor<3x12xf32>) {
    ^bb0(%v: f32, %out: f32):
      %r = arith.mulf %v, %v : f32
      linalg.yield %r : f32
  } -> tensor<3x12xf32>
  %e = tensor.empty() : tensor<12xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<12xf32>) -> tensor<12xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<3x12xf32>) outs(%f : tensor<12xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<12xf32>
  return %s : tensor<12xf32>
}

// -----

// A matmul broadcast over a loop in front of the ones it keeps (`(a @ b).expand(3, 4, 5)`)
// is fenced; a row sum broadcast back over the loop after it (softmax's `x / s[:, None]`)
// is not.
// CHECK-LABEL: func.func @broadcast_inward
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[MM]]
// CHECK: linalg.generic {{.*}} ins(%[[FENCED]] :
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NOT: util.optimization_barrier
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[S]] :
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#lead = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @broadcast_inward(%a: tensor<4x6xf32>, %b: tensor<6x5xf32>)
    -> (tensor<3x4x5xf32>, tensor<4x6xf32>) {
  %z = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<4x5xf32>
  %fm = linalg.fill ins(%z : f32) outs(%em : tensor<4x5xf32>) -> tensor<4x5xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x6xf32>, tensor<6x5xf32>)
      outs(%fm : tensor<4x5xf32>) -> tensor<4x5xf32>
  %e3 = tensor.empty() : tensor<3x4x5xf32>
  %x = linalg.generic {indexing_maps = [#lead, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m : tensor<4x5xf32>) outs(%e3 : tensor<3x4x5xf32>) {
    ^bb0(%v: f32, %out: f32):
      linalg.yield %v : f32
  } -> tensor<3x4x5xf32>
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x6xf32>) outs(%f : tensor<4xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %s : tensor<4x6xf32>, tensor<4xf32>) outs(%e2 : tensor<4x6xf32>) {
    ^bb0(%v: f32, %t: f32, %out: f32):
      %r = arith.divf %v, %t : f32
      linalg.yield %r : f32
  } -> tensor<4x6xf32>
  return %x, %d : tensor<3x4x5xf32>, tensor<4x6xf32>
}

// -----

// A convolution that reduces nothing (one tap, one input channel) is a broadcast over its
// output channels once IREE rewrites it: the conv it reads is fenced. One that reduces its
// taps is not such a broadcast.
// CHECK-LABEL: func.func @conv_reducing_nothing
// CHECK: %[[C:.*]] = linalg.conv_1d_ncw_fcw {{.*}} ins(%arg0, %arg1
// CHECK: %[[F:.*]] = util.optimization_barrier %[[C]]
// CHECK: linalg.conv_1d_ncw_fcw {{.*}} ins(%[[F]], %arg2
// CHECK-NOT: util.optimization_barrier
// CHECK: return
func.func @conv_reducing_nothing(%a: tensor<2x1x32xf32>, %w: tensor<1x1x5xf32>,
                                 %u: tensor<3x1x1xf32>, %v: tensor<3x1x3xf32>)
    -> (tensor<2x3x28xf32>, tensor<2x3x26xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x1x28xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x1x28xf32>) -> tensor<2x1x28xf32>
  %c = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
      ins(%a, %w : tensor<2x1x32xf32>, tensor<1x1x5xf32>) outs(%f : tensor<2x1x28xf32>) -> tensor<2x1x28xf32>
  %e3 = tensor.empty() : tensor<2x3x28xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<2x3x28xf32>) -> tensor<2x3x28xf32>
  %o = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
      ins(%c, %u : tensor<2x1x28xf32>, tensor<3x1x1xf32>) outs(%f3 : tensor<2x3x28xf32>) -> tensor<2x3x28xf32>
  %e4 = tensor.empty() : tensor<2x1x30xf32>
  %f4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<2x1x30xf32>) -> tensor<2x1x30xf32>
  %w3 = tensor.extract_slice %w[0, 0, 0] [1, 1, 3] [1, 1, 1] : tensor<1x1x5xf32> to tensor<1x1x3xf32>
  %c2 = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
      ins(%a, %w3 : tensor<2x1x32xf32>, tensor<1x1x3xf32>) outs(%f4 : tensor<2x1x30xf32>) -> tensor<2x1x30xf32>
  %e5 = tensor.empty() : tensor<2x3x26xf32>
  %f5 = linalg.fill ins(%z : f32) outs(%e5 : tensor<2x3x26xf32>) -> tensor<2x3x26xf32>
  %o2 = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
      ins(%c2, %v : tensor<2x1x30xf32>, tensor<3x1x3xf32>) outs(%f5 : tensor<2x3x26xf32>) -> tensor<2x3x26xf32>
  return %o, %o2 : tensor<2x3x28xf32>, tensor<2x3x26xf32>
}

// -----

// A reduction of a dynamic shape read two ways (s[:, None] - s[None, :]): its barrier is tied
// to the reduction's dims, which IREE cannot see through the barrier for.
// CHECK-LABEL: func.func @dynamic_pairwise
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[DIM:.*]] = tensor.dim %[[SUM]], %{{.*}} : tensor<?xf32>
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[SUM]] : tensor<?xf32>
// CHECK: %[[TIED:.*]] = flow.tensor.tie_shape %[[FENCED]] : tensor<?xf32>{%[[DIM]]}
// CHECK: linalg.generic {{.*}} ins(%[[TIED]], %[[TIED]] :
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @dynamic_pairwise(%x: tensor<?x4xf32>) -> tensor<?x?xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x4xf32>) outs(%f : tensor<?xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n, %n) : tensor<?x?xf32>
  %d = linalg.generic {indexing_maps = [#row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%s, %s : tensor<?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x?xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.subf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %d : tensor<?x?xf32>
}

// -----

// A sum over a dim of one element read by a subtraction (x - x.sum(-1, keepdim=True)): fused,
// a Vulkan driver folds x - (x + 0) to 0, also where x is infinite or NaN. Its own dispatch.
// CHECK-LABEL: func.func @unit_dim_sum
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[FENCED:.*]] = util.optimization_barrier %[[SUM]] : tensor<3x1xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[FENCED]] :
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (d0, 0)>
func.func @unit_dim_sum(%x: tensor<3x1xf32>) -> tensor<3x1xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x1xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x1xf32>) -> tensor<3x1xf32>
  %s = linalg.generic {indexing_maps = [#id2, #first], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x1xf32>) outs(%f : tensor<3x1xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %r = arith.addf %v, %acc : f32
      linalg.yield %r : f32
  } -> tensor<3x1xf32>
  %d = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<3x1xf32>, tensor<3x1xf32>) outs(%e : tensor<3x1xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.subf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<3x1xf32>
  return %d : tensor<3x1xf32>
}
