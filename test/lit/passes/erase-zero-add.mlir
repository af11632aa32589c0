// RUN: lowerkit-opt --pass=erase-zero-add %s | FileCheck %s

// CHECK-LABEL: func.func @zero_right
// CHECK-NOT: arith.addf
// CHECK: return %arg0
func.func @zero_right(%x: f32) -> f32 {
  %zero = arith.constant 0.000000e+00 : f32
  %0 = arith.addf %x, %zero : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @nonzero
// CHECK: arith.addf
func.func @nonzero(%x: f32) -> f32 {
  %one = arith.constant 1.000000e+00 : f32
  %0 = arith.addf %one, %x : f32
  return %0 : f32
}
