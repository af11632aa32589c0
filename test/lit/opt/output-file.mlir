// RUN: lowerkit-opt --pass=fold-double-negation %s -o %t
// RUN: FileCheck %s < %t
// CHECK: return %arg0
func.func @f(%x: f32) -> f32 {
  %0 = arith.negf %x : f32
  %1 = arith.negf %0 : f32
  return %1 : f32
}
