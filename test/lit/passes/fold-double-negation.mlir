// PDL pattern module, applied greedily.
// RUN: lowerkit-opt --pass=fold-double-negation %s | FileCheck %s

// CHECK-LABEL: func.func @twice
// CHECK-NOT: arith.negf
// CHECK: return %arg0
func.func @twice(%x: f32) -> f32 {
  %0 = arith.negf %x : f32
  %1 = arith.negf %0 : f32
  return %1 : f32
}

// CHECK-LABEL: func.func @once
// CHECK: arith.negf
func.func @once(%x: f32) -> f32 {
  %0 = arith.negf %x : f32
  return %0 : f32
}
