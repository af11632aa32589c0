// RUN: lowerkit-opt --pass=count-ops %s | FileCheck %s

// CHECK: module attributes {lowerkit.op_count = 3 : i64}
func.func @f(%x: f32) -> f32 {
  %0 = arith.negf %x : f32
  return %0 : f32
}
