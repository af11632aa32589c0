// RUN: lowerkit-opt --pass=pad-pool-overhang %s | FileCheck %s

// Windows of 2 at stride 3 over a 4x1 image padded by 1 read rows 0-1 and 3-4 and columns 0-1
// of the padded 6x3 input: the stride skips its tail. The pass pads with -inf by hand, crops
// the tail, and pools without padding (fuzzer seed 7001, program 139).
// CHECK-LABEL: func.func @stride_skips_tail
// CHECK: torch.aten.constant_pad_nd
// CHECK-SAME: -> !torch.vtensor<[2,1,5,2],f32>
// CHECK: %[[PAD:.*]] = torch.prim.ListConstruct %int0{{.*}}, %int0
// CHECK: torch.aten.max_pool2d_with_indices {{.*}}, %[[PAD]], {{.*}} !torch.vtensor<[2,1,5,2],f32>
func.func @stride_skips_tail(%arg0: !torch.vtensor<[2,1,4,1],f32>) -> !torch.vtensor<[2,1,2,1],f32> {
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %int3 = torch.constant.int 3
  %1 = torch.prim.ListConstruct %int3, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %int1 = torch.constant.int 1
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %false = torch.constant.bool false
  %r0, %r1 = torch.aten.max_pool2d_with_indices %arg0, %0, %1, %2, %2, %false : !torch.vtensor<[2,1,4,1],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,1,2,1],f32>, !torch.vtensor<[2,1,2,1],si64>
  return %r0 : !torch.vtensor<[2,1,2,1],f32>
}

// 2x2 windows at stride 2 over an 8x8 image read all of it and nothing more: left alone.
// CHECK-LABEL: func.func @windows_fit
// CHECK-NOT: constant_pad_nd
// CHECK: torch.aten.max_pool2d
func.func @windows_fit(%arg0: !torch.vtensor<[1,4,8,8],f32>) -> !torch.vtensor<[1,4,4,4],f32> {
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %int0 = torch.constant.int 0
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %int1 = torch.constant.int 1
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %false = torch.constant.bool false
  %3 = torch.aten.max_pool2d %arg0, %0, %0, %1, %2, %false : !torch.vtensor<[1,4,8,8],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool -> !torch.vtensor<[1,4,4,4],f32>
  return %3 : !torch.vtensor<[1,4,4,4],f32>
}

// Average pooling of a 2x1 image, windows of 4 at stride 3, padding 2, ceil_mode: the one
// window per dim overhangs the padded input. The pass pads with zeros to what the windows read,
// sums them (divisor_override 1) and divides by eager's divisor, here the window clipped to the
// input (count_include_pad=False): 2 rows x 1 column.
// CHECK-LABEL: func.func @avg_ceil_overhang
// CHECK: torch.aten.constant_pad_nd {{.*}} -> !torch.vtensor<[2,3,4,4],f32>
// CHECK: %[[SUMS:.*]] = torch.aten.avg_pool2d {{.*}} -> !torch.vtensor<[2,3,1,1],f32>
// CHECK: %[[COUNTS:.*]] = torch.vtensor.literal(dense<2.000000e+00> : tensor<1x1xf32>)
// CHECK: torch.aten.div.Tensor %[[SUMS]], %[[COUNTS]]
func.func @avg_ceil_overhang(%arg0: !torch.vtensor<[2,3,2,1],f32>) -> !torch.vtensor<[2,3,1,1],f32> {
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int4, %int4 : (!torch.int, !torch.int) -> !torch.list<int>
  %int3 = torch.constant.int 3
  %1 = torch.prim.ListConstruct %int3, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %int2 = torch.constant.int 2
  %2 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %none = torch.constant.none
  %r = torch.aten.avg_pool2d %arg0, %0, %1, %2, %true, %false, %none : !torch.vtensor<[2,3,2,1],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[2,3,1,1],f32>
  return %r : !torch.vtensor<[2,3,1,1],f32>
}

// A 5-long row, windows of 3 at stride 2, padding 1: windows [-1,2), [1,4), [3,6) end exactly
// at the padded input's end (6), so without ceil_mode the op is left alone.
// CHECK-LABEL: func.func @avg_windows_fit
// CHECK-NOT: constant_pad_nd
// CHECK: torch.aten.avg_pool1d
func.func @avg_windows_fit(%arg0: !torch.vtensor<[1,2,5],f32>) -> !torch.vtensor<[1,2,3],f32> {
  %int3 = torch.constant.int 3
  %0 = torch.prim.ListConstruct %int3 : (!torch.int) -> !torch.list<int>
  %int2 = torch.constant.int 2
  %1 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %int1 = torch.constant.int 1
  %2 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %r = torch.aten.avg_pool1d %arg0, %0, %1, %2, %false, %true : !torch.vtensor<[1,2,5],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.bool -> !torch.vtensor<[1,2,3],f32>
  return %r : !torch.vtensor<[1,2,3],f32>
}

// The same windows with ceil_mode: torch-mlir would pad one more stride (and IREE reject it),
// so the padding is made explicit and ceil_mode dropped. count_include_pad=True: every window
// lies in the padded input, each divisor is 3 (1-D pools through the 2-D op, for its
// divisor_override).
// CHECK-LABEL: func.func @avg_ceil_windows_fit
// CHECK: torch.aten.constant_pad_nd {{.*}} -> !torch.vtensor<[1,2,7],f32>
// CHECK: %[[ROW:.*]] = torch.aten.unsqueeze {{.*}} -> !torch.vtensor<[1,2,1,7],f32>
// CHECK: %[[FALSE:.*]] = torch.constant.bool false
// CHECK: torch.aten.avg_pool2d %[[ROW]], {{.*}}, %[[FALSE]], {{.*}} -> !torch.vtensor<[1,2,1,3],f32>
// CHECK: torch.vtensor.literal(dense<3.000000e+00> : tensor<3xf32>)
func.func @avg_ceil_windows_fit(%arg0: !torch.vtensor<[1,2,5],f32>) -> !torch.vtensor<[1,2,3],f32> {
  %int3 = torch.constant.int 3
  %0 = torch.prim.ListConstruct %int3 : (!torch.int) -> !torch.list<int>
  %int2 = torch.constant.int 2
  %1 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %int1 = torch.constant.int 1
  %2 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %true = torch.constant.bool true
  %r = torch.aten.avg_pool1d %arg0, %0, %1, %2, %true, %true : !torch.vtensor<[1,2,5],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.bool -> !torch.vtensor<[1,2,3],f32>
  return %r : !torch.vtensor<[1,2,3],f32>
}
