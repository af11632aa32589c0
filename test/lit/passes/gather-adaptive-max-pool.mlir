// RUN: lowerkit-opt --pass=gather-adaptive-max-pool %s | FileCheck %s

// A 1x4 image pooled to 2x2: rows get windows [0,1) and [0,1) (1 is not a multiple of 2),
// columns [0,2) and [2,4). The flattened image is gathered window by window (2x2 outputs,
// 1x2 elements each) and the max taken over the last dim (fuzzer seed 20261123, program 45).
// CHECK-LABEL: func.func @uneven
// CHECK: %[[FLAT:.*]] = torch.aten.flatten.using_ints %arg0, {{.*}} -> !torch.vtensor<[4,4,4],f32>
// CHECK: %[[INDEX:.*]] = torch.vtensor.literal(dense<[0, 1, 2, 3, 0, 1, 2, 3]> : tensor<8xi64>)
// CHECK: %[[GATHERED:.*]] = torch.aten.index_select %[[FLAT]], {{.*}}, %[[INDEX]] {{.*}} -> !torch.vtensor<[4,4,8],f32>
// CHECK: %[[WINDOWS:.*]] = torch.aten.view %[[GATHERED]], {{.*}} -> !torch.vtensor<[4,4,2,2,2],f32>
// CHECK: %[[MAX:.*]] = torch.aten.amax %[[WINDOWS]], {{.*}} -> !torch.vtensor<[4,4,2,2],f32>
// CHECK: return %[[MAX]]
func.func @uneven(%arg0: !torch.vtensor<[4,4,1,4],f32>) -> !torch.vtensor<[4,4,2,2],f32> {
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %r0, %r1 = torch.aten.adaptive_max_pool2d %arg0, %0 : !torch.vtensor<[4,4,1,4],f32>, !torch.list<int> -> !torch.vtensor<[4,4,2,2],f32>, !torch.vtensor<[4,4,2,2],si64>
  return %r0 : !torch.vtensor<[4,4,2,2],f32>
}

// Even windows are a plain pooling, which torch-mlir lowers: left alone.
// CHECK-LABEL: func.func @even
// CHECK-NOT: index_select
// CHECK: torch.aten.adaptive_max_pool2d
func.func @even(%arg0: !torch.vtensor<[1,3,4,6],f32>) -> !torch.vtensor<[1,3,2,3],f32> {
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %0 = torch.prim.ListConstruct %int2, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %r0, %r1 = torch.aten.adaptive_max_pool2d %arg0, %0 : !torch.vtensor<[1,3,4,6],f32>, !torch.list<int> -> !torch.vtensor<[1,3,2,3],f32>, !torch.vtensor<[1,3,2,3],si64>
  return %r0 : !torch.vtensor<[1,3,2,3],f32>
}

// The indices are used: left alone (the gather gives no indices).
// CHECK-LABEL: func.func @indices_used
// CHECK-NOT: index_select
// CHECK: torch.aten.adaptive_max_pool2d
func.func @indices_used(%arg0: !torch.vtensor<[1,1,5,5],f32>) -> !torch.vtensor<[1,1,3,3],si64> {
  %int3 = torch.constant.int 3
  %0 = torch.prim.ListConstruct %int3, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %r0, %r1 = torch.aten.adaptive_max_pool2d %arg0, %0 : !torch.vtensor<[1,1,5,5],f32>, !torch.list<int> -> !torch.vtensor<[1,1,3,3],f32>, !torch.vtensor<[1,1,3,3],si64>
  return %r1 : !torch.vtensor<[1,1,3,3],si64>
}
