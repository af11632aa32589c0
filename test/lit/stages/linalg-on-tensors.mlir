// RUN: lowerkit-opt --pass=torch-backend-to-linalg-on-tensors-backend-pipeline %s | FileCheck %s
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK: linalg.generic
// CHECK: arith.cmpf
// CHECK-NOT: torch.
func.func @main(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %0 = torch.aten.relu %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}
