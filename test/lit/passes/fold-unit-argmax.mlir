// RUN: lowerkit-opt --pass=fold-unit-argmax %s | FileCheck %s

// An argmax over a dim of one element is zeros, whatever the input.
// CHECK-LABEL: func.func @unit
// CHECK-NOT: torch.aten.argmax
// CHECK: %[[Z:.*]] = torch.vtensor.literal(dense<0> : tensor<1x16x7xi64>) : !torch.vtensor<[1,16,7],si64>
// CHECK: return %[[Z]]
func.func @unit(%arg0: !torch.vtensor<[1,16,7],f32>) -> !torch.vtensor<[1,16,7],si64> {
  %int0 = torch.constant.int 0
  %true = torch.constant.bool true
  %0 = torch.aten.argmax %arg0, %int0, %true : !torch.vtensor<[1,16,7],f32>, !torch.int, !torch.bool -> !torch.vtensor<[1,16,7],si64>
  return %0 : !torch.vtensor<[1,16,7],si64>
}

// Over a dim of several elements, or over the flattened input: left alone.
// CHECK-LABEL: func.func @not_unit
// CHECK: torch.aten.argmin %arg0, %int1
// CHECK: torch.aten.argmax %arg0, %none
func.func @not_unit(%arg0: !torch.vtensor<[1,16,7],f32>) -> (!torch.vtensor<[1,7],si64>, !torch.vtensor<[],si64>) {
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %none = torch.constant.none
  %0 = torch.aten.argmin %arg0, %int1, %false : !torch.vtensor<[1,16,7],f32>, !torch.int, !torch.bool -> !torch.vtensor<[1,7],si64>
  %1 = torch.aten.argmax %arg0, %none, %false : !torch.vtensor<[1,16,7],f32>, !torch.none, !torch.bool -> !torch.vtensor<[],si64>
  return %0, %1 : !torch.vtensor<[1,7],si64>, !torch.vtensor<[],si64>
}
