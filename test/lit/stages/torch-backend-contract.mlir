// RUN: lowerkit-opt --pass=torchdynamo-export-to-torch-backend-pipeline %s | FileCheck %s
// Decomposed to the backend contract: aten.softplus becomes simpler ops.
// CHECK-LABEL: func.func @main
// CHECK-NOT: torch.aten.softplus
// CHECK: torch.aten.exp
func.func @main(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %int1 = torch.constant.int 1
  %int20 = torch.constant.int 20
  %0 = torch.aten.softplus %arg0, %int1, %int20 : !torch.vtensor<[4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}
