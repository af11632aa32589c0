// RUN: lowerkit-opt --pass=keep-nan-zero-products %s | FileCheck %s

// x * 0 is NaN where x's exponent bits are all ones (an infinity or a NaN).
// CHECK-LABEL: func.func @times_zero
// CHECK: %[[P:.*]] = arith.mulf %[[X:.*]], %cst : f32
// CHECK: arith.bitcast %[[X]] : f32 to i32
// CHECK: %[[SPECIAL:.*]] = arith.cmpi uge
// CHECK: %[[R:.*]] = arith.select %[[SPECIAL]], %{{.*}}, %[[P]] : f32
// CHECK: linalg.yield %[[R]]
#v = affine_map<(d0) -> (d0)>
func.func @times_zero(%a: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %p = arith.mulf %x, %zero : f32
      linalg.yield %p : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// A product by a non-zero constant is left alone.
// CHECK-LABEL: func.func @times_two
// CHECK-NOT: arith.select
func.func @times_two(%a: tensor<8xf32>) -> tensor<8xf32> {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %p = arith.mulf %x, %two : f32
      linalg.yield %p : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// A product by an element of a zero tensor (a splat constant, or a fill of a zero: what
// `x * torch.zeros_like(x)` arrives as) is a product by zero too.
// CHECK-LABEL: func.func @times_zero_tensors
// CHECK: %[[P:.*]] = arith.mulf %[[X:.*]], %[[Z:.*]] : f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[P]] : f32
// CHECK: %[[Q:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[Q]] : f32
func.func @times_zero_tensors(%a: tensor<8xf32>) -> tensor<8xf32> {
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]}
      ins(%a, %zeros, %filled : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
      outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %z: f32, %f: f32, %o: f32):
      %p = arith.mulf %x, %z : f32
      %q = arith.mulf %f, %p : f32
      linalg.yield %q : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// A product by a tensor of other values is left alone.
// CHECK-LABEL: func.func @times_ones_tensor
// CHECK-NOT: arith.select
func.func @times_ones_tensor(%a: tensor<8xf32>) -> tensor<8xf32> {
  %ones = arith.constant dense<1.0> : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%a, %ones : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %z: f32, %o: f32):
      %p = arith.mulf %x, %z : f32
      linalg.yield %p : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
