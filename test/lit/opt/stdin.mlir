// RUN: lowerkit-opt --pass=count-ops < %s | FileCheck %s
// CHECK: lowerkit.op_count = 2
func.func @f() { return }
