// RUN: lowerkit-opt --pass=crop-negative-pad %s | FileCheck %s

// F.pad(x, (2, -1)): one column cropped on the right, then two padded on the left
// (iree-compile rejects torch-mlir's lowering of the negative amount).
// CHECK-LABEL: func.func @pad_right_negative
// CHECK: %[[S:.*]] = torch.aten.slice.Tensor %arg0, {{.*}} -> !torch.vtensor<[3,6],f32>
// CHECK: %[[P:.*]] = torch.aten.constant_pad_nd %[[S]], {{.*}} -> !torch.vtensor<[3,8],f32>
// CHECK: return %[[P]]
func.func @pad_right_negative(%arg0: !torch.vtensor<[3,7],f32>) -> !torch.vtensor<[3,8],f32> {
  %int2 = torch.constant.int 2
  %int-1 = torch.constant.int -1
  %pads = torch.prim.ListConstruct %int2, %int-1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zero = torch.constant.float 0.000000e+00
  %r = torch.aten.constant_pad_nd %arg0, %pads, %zero : !torch.vtensor<[3,7],f32>, !torch.list<int>, !torch.float -> !torch.vtensor<[3,8],f32>
  return %r : !torch.vtensor<[3,8],f32>
}

// Only cropping: two slices, no pad left.
// CHECK-LABEL: func.func @crop_only
// CHECK: %[[A:.*]] = torch.aten.slice.Tensor %arg0, {{.*}} -> !torch.vtensor<[3,5],f32>
// CHECK: %[[B:.*]] = torch.aten.slice.Tensor %[[A]], {{.*}} -> !torch.vtensor<[1,5],f32>
// CHECK-NOT: constant_pad_nd
// CHECK: return %[[B]]
func.func @crop_only(%arg0: !torch.vtensor<[3,7],f32>) -> !torch.vtensor<[1,5],f32> {
  %int-1 = torch.constant.int -1
  %pads = torch.prim.ListConstruct %int-1, %int-1, %int-1, %int-1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %zero = torch.constant.float 0.000000e+00
  %r = torch.aten.constant_pad_nd %arg0, %pads, %zero : !torch.vtensor<[3,7],f32>, !torch.list<int>, !torch.float -> !torch.vtensor<[1,5],f32>
  return %r : !torch.vtensor<[1,5],f32>
}

// Non-negative pads are left alone.
// CHECK-LABEL: func.func @positive
// CHECK-NOT: torch.aten.slice.Tensor
// CHECK: torch.aten.constant_pad_nd %arg0
func.func @positive(%arg0: !torch.vtensor<[3,7],f32>) -> !torch.vtensor<[3,10],f32> {
  %int2 = torch.constant.int 2
  %int1 = torch.constant.int 1
  %pads = torch.prim.ListConstruct %int2, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zero = torch.constant.float 0.000000e+00
  %r = torch.aten.constant_pad_nd %arg0, %pads, %zero : !torch.vtensor<[3,7],f32>, !torch.list<int>, !torch.float -> !torch.vtensor<[3,10],f32>
  return %r : !torch.vtensor<[3,10],f32>
}
