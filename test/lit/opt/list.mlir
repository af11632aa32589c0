// RUN: lowerkit-opt --list | FileCheck %s
// RUN: lowerkit-opt --load %S/../Inputs/my_passes.py --list | FileCheck %s --check-prefix=USER
// CHECK: pipelines:
// CHECK-DAG: torch-to-linalg
// CHECK-DAG: torch-to-linalg-fused
// CHECK-DAG: stage-kinds
// CHECK: passes:
// CHECK-DAG: lower-custom-ops
// CHECK-DAG: raise-to-fused
// CHECK-DAG: lower-fused-to-linalg
// CHECK-DAG: rewrite-bool-mask-index-put
// CHECK: dialects:
// CHECK: fused - fused.gelu, fused.silu, fused.rms_norm
// USER: my-tag-functions
