// A package found on the path declares a pass, a pipeline and a dialect in the entry-point
// groups lowerkit.passes / .pipelines / .dialects (test/lit/Inputs/entry_points: a module and
// its dist-info, as pip installs them); lowerkit-opt lists and runs them by name.
// RUN: env PYTHONPATH=%S/../Inputs/entry_points lowerkit-opt --list | FileCheck %s --check-prefix=LIST
// RUN: env PYTHONPATH=%S/../Inputs/entry_points lowerkit-opt --pipeline=epdemo-pipeline %s | FileCheck %s
// RUN: env PYTHONPATH=%S/../Inputs/entry_points lowerkit-opt --pass=epdemo-tag-functions %s | FileCheck %s
// Without the package the names are unknown.
// RUN: not lowerkit-opt --pipeline=epdemo-pipeline %s 2>&1 | FileCheck %s --check-prefix=ABSENT
// LIST: pipelines:
// LIST: epdemo-pipeline
// LIST: passes:
// LIST: epdemo-tag-functions
// LIST: dialects:
// LIST: epdemo - epdemo.twice
// The dialect is loaded because the input names its op (unregistered ops do not parse).
// CHECK: func.func @f(%arg0: tensor<4xf32>) -> tensor<4xf32> attributes {epdemo.tagged}
// CHECK-NEXT: "epdemo.twice"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// ABSENT: no pipelines named 'epdemo-pipeline'
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "epdemo.twice"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
