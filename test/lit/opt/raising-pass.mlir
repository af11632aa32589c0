// A Python exception in a pass: the stage, the exception, and the user's line.
// RUN: not lowerkit-opt --load %S/../Inputs/my_passes.py --pass=my-raise %s 2>&1 | FileCheck %s
// CHECK: error: stage 'my-raise' raised RuntimeError: a bug in my pass
// CHECK: my_passes.py:{{[0-9]+}}: note: raised here
// CHECK-NOT: Traceback
func.func @f() { return }
