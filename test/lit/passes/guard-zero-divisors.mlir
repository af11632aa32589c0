// RUN: lowerkit-opt --pass=guard-zero-divisors --split-input-file %s | FileCheck %s

// A division that may divide by zero selects x * copysign(inf, y) when y == 0 (IEEE's x / ±0,
// which SPIR-V leaves undefined); the division stays for every other y.
// CHECK-LABEL: func.func @maybe_zero
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[IS_ZERO:.*]] = arith.cmpf oeq, %arg1, %[[ZERO]] : f32
// CHECK: %[[SIGNED_INF:.*]] = math.copysign %[[INF]], %arg1 : f32
// CHECK: %[[IEEE:.*]] = arith.mulf %arg0, %[[SIGNED_INF]] : f32
// CHECK: %[[DIV:.*]] = arith.divf %arg0, %arg1 : f32
// CHECK: %[[R:.*]] = arith.select %[[IS_ZERO]], %[[IEEE]], %[[DIV]] : f32
// CHECK: return %[[R]]
func.func @maybe_zero(%x: f32, %y: f32) -> f32 {
  %0 = arith.divf %x, %y : f32
  return %0 : f32
}

// -----

// A non-zero constant divisor cannot be zero: left alone.
// CHECK-LABEL: func.func @by_two
// CHECK-NOT: arith.select
// CHECK: arith.divf
func.func @by_two(%x: f16) -> f16 {
  %two = arith.constant 2.0 : f16
  %0 = arith.divf %x, %two : f16
  return %0 : f16
}

// -----

// Inside a linalg.generic body too, in f16.
// CHECK-LABEL: func.func @in_generic
// CHECK: linalg.generic
// CHECK: math.copysign {{.*}} : f16
// CHECK: arith.select {{.*}} : f16
#map = affine_map<(d0) -> (d0)>
func.func @in_generic(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %e = tensor.empty() : tensor<4xf16>
  %0 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf16>, tensor<4xf16>) outs(%e : tensor<4xf16>) {
    ^bb0(%x: f16, %y: f16, %out: f16):
      %q = arith.divf %x, %y : f16
      linalg.yield %q : f16
  } -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
