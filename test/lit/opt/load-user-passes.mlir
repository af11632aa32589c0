// A user's pass file adds passes by name.
// RUN: lowerkit-opt --load %S/../Inputs/my_passes.py --pass=my-tag-functions %s | FileCheck %s
// CHECK: func.func @f() attributes {my.tagged}
func.func @f() { return }
