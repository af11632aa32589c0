// Raise torch ops into fused, lower fused to linalg.generic, then to linalg on tensors.
// RUN: lowerkit-opt --pass=raise-to-fused,lower-fused-to-linalg,torch-backend-to-linalg-on-tensors-backend-pipeline %s | FileCheck %s
// CHECK-LABEL: func.func @f(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK-NOT: fused.
// CHECK-NOT: torch.
func.func @f(%arg0: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32> {
  %str = torch.constant.str "none"
  %0 = torch.aten.gelu %arg0, %str : !torch.vtensor<[4,8],f32>, !torch.str -> !torch.vtensor<[4,8],f32>
  return %0 : !torch.vtensor<[4,8],f32>
}
