// RUN: lowerkit-opt --pass=raise-to-fused %s | FileCheck %s

// CHECK-LABEL: func.func @gelu
// CHECK: %[[B:.*]] = torch_c.to_builtin_tensor %arg0 : !torch.vtensor<[4,8],f32> -> tensor<4x8xf32>
// CHECK: %[[G:.*]] = "fused.gelu"(%[[B]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: torch_c.from_builtin_tensor %[[G]] : tensor<4x8xf32> -> !torch.vtensor<[4,8],f32>
// CHECK-NOT: torch.aten.gelu
func.func @gelu(%arg0: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32> {
  %str = torch.constant.str "none"
  %0 = torch.aten.gelu %arg0, %str : !torch.vtensor<[4,8],f32>, !torch.str -> !torch.vtensor<[4,8],f32>
  return %0 : !torch.vtensor<[4,8],f32>
}

// The tanh approximation is another function: left alone.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: torch.aten.gelu
func.func @gelu_tanh(%arg0: !torch.vtensor<[4,8],f32>) -> !torch.vtensor<[4,8],f32> {
  %str = torch.constant.str "tanh"
  %0 = torch.aten.gelu %arg0, %str : !torch.vtensor<[4,8],f32>, !torch.str -> !torch.vtensor<[4,8],f32>
  return %0 : !torch.vtensor<[4,8],f32>
}

// CHECK-LABEL: func.func @silu
// CHECK: "fused.silu"
// CHECK-NOT: torch.aten.mul.Tensor
func.func @silu(%arg0: !torch.vtensor<[2,?],f32>) -> !torch.vtensor<[2,?],f32> {
  %0 = torch.aten.sigmoid %arg0 : !torch.vtensor<[2,?],f32> -> !torch.vtensor<[2,?],f32>
  %1 = torch.aten.mul.Tensor %0, %arg0 : !torch.vtensor<[2,?],f32>, !torch.vtensor<[2,?],f32> -> !torch.vtensor<[2,?],f32>
  return %1 : !torch.vtensor<[2,?],f32>
}

// x * sigmoid(y) is not silu.
// CHECK-LABEL: func.func @not_silu
// CHECK: torch.aten.mul.Tensor
func.func @not_silu(%x: !torch.vtensor<[4],f32>, %y: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %0 = torch.aten.sigmoid %y : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  %1 = torch.aten.mul.Tensor %x, %0 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %1 : !torch.vtensor<[4],f32>
}
