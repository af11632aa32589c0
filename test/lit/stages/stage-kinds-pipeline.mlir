// Every kind of stage side by side in one pipeline.
// RUN: lowerkit-opt --pipeline=stage-kinds %S/../Inputs/stage_kinds.mlir | FileCheck %s
// CHECK: module attributes {lowerkit.op_count =
// CHECK: linalg.generic {{.*}}attrs = {lowerkit.marked}
// CHECK-NOT: arith.negf
// CHECK: return %{{.*}}, %arg1
