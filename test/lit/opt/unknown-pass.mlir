// RUN: not lowerkit-opt --pass=no-such-pass %s 2>&1 | FileCheck %s
// CHECK: error:
// CHECK-NOT: Traceback
func.func @f() { return }
