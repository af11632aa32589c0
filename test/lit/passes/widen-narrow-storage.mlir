// RUN: lowerkit-opt --pass=widen-narrow-storage --split-input-file %s | FileCheck %s

// A gather from bools truncated from an i32 input reads the i32 input and truncates what it
// reads; no bool tensor is left for a dispatch to write packed.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: %[[E:.*]] = tensor.extract %arg0[
// CHECK-SAME: tensor<64x32xi32>
// CHECK: arith.trunci %[[E]] : i32 to i1
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @gather(%arg0: tensor<64x32xi32>, %idx: tensor<2xi32>) -> tensor<64x2xi1> {
  %e = tensor.empty() : tensor<64x32xi1>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%arg0 : tensor<64x32xi32>) outs(%e : tensor<64x32xi1>) {
    ^bb0(%v: i32, %out: i1):
      %t = arith.trunci %v : i32 to i1
      linalg.yield %t : i1
  } -> tensor<64x32xi1>
  %e2 = tensor.empty() : tensor<64x2xi1>
  %g = linalg.generic {indexing_maps = [#col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<2xi32>) outs(%e2 : tensor<64x2xi1>) {
    ^bb0(%i: i32, %out: i1):
      %r = linalg.index 0 : index
      %c = arith.index_cast %i : i32 to index
      %x = tensor.extract %b[%r, %c] : tensor<64x32xi1>
      linalg.yield %x : i1
  } -> tensor<64x2xi1>
  return %g : tensor<64x2xi1>
}

// -----

// A reduction of bools accumulates in i32 and writes its result behind a barrier; its reader
// gets the bools back.
// CHECK-LABEL: func.func @any
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME: outs({{.*}} : tensor<32xi32>)
// CHECK: ^bb0(%{{.*}}: i1, %[[ACC:.*]]: i32)
// CHECK: arith.trunci %[[ACC]] : i32 to i1
// CHECK: arith.extui {{.*}} : i1 to i32
// CHECK: util.optimization_barrier %[[R]] : tensor<32xi32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
func.func @any(%a: tensor<64x32xi1>) -> tensor<32xf32> {
  %f = arith.constant false
  %e = tensor.empty() : tensor<32xi1>
  %init = linalg.fill ins(%f : i1) outs(%e : tensor<32xi1>) -> tensor<32xi1>
  %r = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<64x32xi1>) outs(%init : tensor<32xi1>) {
    ^bb0(%v: i1, %acc: i1):
      %o = arith.ori %v, %acc : i1
      linalg.yield %o : i1
  } -> tensor<32xi1>
  %ef = tensor.empty() : tensor<32xf32>
  %y = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%r : tensor<32xi1>) outs(%ef : tensor<32xf32>) {
    ^bb0(%v: i1, %out: f32):
      %x = arith.uitofp %v : i1 to f32
      linalg.yield %x : f32
  } -> tensor<32xf32>
  return %y : tensor<32xf32>
}

// -----

// A signed max of bytes is done in i32, each byte sign-extended by shifts.
// CHECK-LABEL: func.func @signed_max
// CHECK: %[[S:.*]] = arith.constant 24 : i32
// CHECK: arith.extui {{.*}} : i8 to i32
// CHECK: arith.shli {{.*}}, %[[S]] : i32
// CHECK: arith.shrsi {{.*}}, %[[S]] : i32
// CHECK: %[[M:.*]] = arith.maxsi {{.*}} : i32
// CHECK: arith.trunci %[[M]] : i32 to i8
// CHECK-NOT: arith.maxsi {{.*}} : i8
#v = affine_map<(d0) -> (d0)>
func.func @signed_max(%a: tensor<8xi8>, %b: tensor<8xi8>) -> tensor<8xi8> {
  %e = tensor.empty() : tensor<8xi8>
  %m = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xi8>, tensor<8xi8>) outs(%e : tensor<8xi8>) {
    ^bb0(%x: i8, %y: i8, %out: i8):
      %r = arith.maxsi %x, %y : i8
      linalg.yield %r : i8
  } -> tensor<8xi8>
  return %m : tensor<8xi8>
}

// -----

// A concatenation of bools, each truncated from i32, concatenates the i32 tensors; its reader
// (a reduction) reads them and truncates what it reads.
// CHECK-LABEL: func.func @concat
// CHECK: %[[C:.*]] = tensor.concat dim(1) %arg0, %arg1 : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x16xi32>
// CHECK: linalg.generic {{.*}} ins(%[[C]] : tensor<4x16xi32>)
// CHECK: arith.trunci {{.*}} : i32 to i1
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @concat(%arg0: tensor<4x8xi32>, %arg1: tensor<4x8xi32>) -> tensor<16xi32> {
  %e = tensor.empty() : tensor<4x8xi1>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%arg0 : tensor<4x8xi32>) outs(%e : tensor<4x8xi1>) {
    ^bb0(%v: i32, %out: i1):
      %t = arith.trunci %v : i32 to i1
      linalg.yield %t : i1
  } -> tensor<4x8xi1>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%arg1 : tensor<4x8xi32>) outs(%e : tensor<4x8xi1>) {
    ^bb0(%v: i32, %out: i1):
      %t = arith.trunci %v : i32 to i1
      linalg.yield %t : i1
  } -> tensor<4x8xi1>
  %c = tensor.concat dim(1) %a, %b : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x16xi1>
  %zero = arith.constant 0 : i32
  %ei = tensor.empty() : tensor<16xi32>
  %init = linalg.fill ins(%zero : i32) outs(%ei : tensor<16xi32>) -> tensor<16xi32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%c : tensor<4x16xi1>) outs(%init : tensor<16xi32>) {
    ^bb0(%v: i1, %acc: i32):
      %x = arith.extui %v : i1 to i32
      %r = arith.addi %x, %acc : i32
      linalg.yield %r : i32
  } -> tensor<16xi32>
  return %s : tensor<16xi32>
}
