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
