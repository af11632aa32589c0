// RUN: lowerkit-opt --pass=undilate-single-window-convs %s | FileCheck %s

// One output column of a kernel of 5 dilated by 2 over 9 columns: its taps, columns 0, 2, 4, 6
// and 8, are gathered (int32 indices, which every target runs), then convolved undilated.
// CHECK-LABEL: func.func @one_window
// CHECK: %[[TAPS:.*]] = torch.vtensor.literal(dense<[0, 2, 4, 6, 8]> : tensor<5xi32>) : !torch.vtensor<[5],si32>
// CHECK: %[[X:.*]] = torch.aten.index_select %arg0, {{.*}}, %[[TAPS]] : {{.*}} -> !torch.vtensor<[2,32,5],f32>
// CHECK: torch.aten.convolution %[[X]], {{.*}} : !torch.vtensor<[2,32,5],f32>, {{.*}} -> !torch.vtensor<[2,2,1],f32>
func.func @one_window(%arg0: !torch.vtensor<[2,32,9],f32>, %w: !torch.vtensor<[2,16,5],f32>) -> !torch.vtensor<[2,2,1],f32> {
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %stride = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %int0 = torch.constant.int 0
  %padding = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %int2 = torch.constant.int 2
  %dilation = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %false = torch.constant.bool false
  %out_pad = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %0 = torch.aten.convolution %arg0, %w, %none, %stride, %padding, %dilation, %false, %out_pad, %int2 : !torch.vtensor<[2,32,9],f32>, !torch.vtensor<[2,16,5],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,2,1],f32>
  return %0 : !torch.vtensor<[2,2,1],f32>
}

// Three output columns: left dilated.
// CHECK-LABEL: func.func @three_windows
// CHECK-NOT: index_select
// CHECK: torch.aten.convolution %arg0
func.func @three_windows(%arg0: !torch.vtensor<[2,32,11],f32>, %w: !torch.vtensor<[2,16,5],f32>) -> !torch.vtensor<[2,2,3],f32> {
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %stride = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %int0 = torch.constant.int 0
  %padding = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %int2 = torch.constant.int 2
  %dilation = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %false = torch.constant.bool false
  %out_pad = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %0 = torch.aten.convolution %arg0, %w, %none, %stride, %padding, %dilation, %false, %out_pad, %int2 : !torch.vtensor<[2,32,11],f32>, !torch.vtensor<[2,16,5],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,2,3],f32>
  return %0 : !torch.vtensor<[2,2,3],f32>
}
