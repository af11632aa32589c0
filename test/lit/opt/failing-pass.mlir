// A pass that fails reports the op's location in this file, not a traceback.
// RUN: not lowerkit-opt --load %S/../Inputs/my_passes.py --pass=my-fail-on-return %s 2>&1 | FileCheck %s
// RUN: lowerkit-opt --load %S/../Inputs/my_passes.py --pass=my-fail-on-return --verify-diagnostics %s
// CHECK: failing-pass.mlir:[[# @LINE + 4]]:3: error: my-fail-on-return: found a return
// CHECK-NOT: Traceback
func.func @f() {
  // expected-error @+1 {{my-fail-on-return: found a return}}
  return
}
