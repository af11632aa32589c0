// RUN: lowerkit-opt --print-ir-after-all --pass=erase-zero-add,count-ops %s 2>&1 >/dev/null | FileCheck %s
// CHECK: // -----// IR Dump After erase-zero-add //----- //
// CHECK-NOT: arith.addf
// CHECK: // -----// IR Dump After count-ops //----- //
// CHECK: lowerkit.op_count
func.func @f(%x: f32) -> f32 {
  %zero = arith.constant 0.000000e+00 : f32
  %0 = arith.addf %x, %zero : f32
  return %0 : f32
}
