// MLIR's own passes, with options, between Python passes.
// RUN: lowerkit-opt --pass='canonicalize{max-iterations=2},count-ops' %s | FileCheck %s
// CHECK: lowerkit.op_count = 2
// CHECK-NOT: arith.addi
func.func @f(%x: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %x, %c0 : i32
  return %0 : i32
}
