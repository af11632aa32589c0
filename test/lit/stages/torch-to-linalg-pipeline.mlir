// The whole default pipeline by name, on a torch-dialect file.
// RUN: lowerkit-opt --pipeline=torch-to-linalg --print-ir-after-all %s 2>%t.stages | FileCheck %s
// RUN: FileCheck %s --check-prefix=STAGES < %t.stages
// CHECK: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK: linalg.generic
// STAGES: IR Dump After lower-custom-ops
// STAGES: IR Dump After rewrite-bool-mask-index-put
// STAGES: IR Dump After torch-backend-contract
// STAGES: IR Dump After linalg-on-tensors
func.func @main(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %0 = torch.aten.tanh %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}
