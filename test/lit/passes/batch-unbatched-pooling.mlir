// RUN: lowerkit-opt --pass=batch-unbatched-pooling %s | FileCheck %s

// An unbatched [C, H, W] pooling is pooled as [1, C, H, W].
// CHECK-LABEL: func.func @unbatched
// CHECK: %[[B:.*]] = torch.aten.unsqueeze %arg0, {{.*}} -> !torch.vtensor<[1,3,4,4],f32>
// CHECK: %[[P:.*]] = torch.aten.max_pool2d %[[B]], {{.*}} -> !torch.vtensor<[1,3,2,2],f32>
// CHECK: torch.aten.squeeze.dim %[[P]], {{.*}} -> !torch.vtensor<[3,2,2],f32>
func.func @unbatched(%arg0: !torch.vtensor<[3,4,4],f32>) -> !torch.vtensor<[3,2,2],f32> {
  %int2 = torch.constant.int 2
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %k = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %p = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %d = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %r = torch.aten.max_pool2d %arg0, %k, %k, %p, %d, %false : !torch.vtensor<[3,4,4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool -> !torch.vtensor<[3,2,2],f32>
  return %r : !torch.vtensor<[3,2,2],f32>
}

// Indices used at a batch of one: the input is doubled along the batch and the first result
// of each kept (IREE cannot compile torch-mlir's indices at batch one).
// CHECK-LABEL: func.func @indices_at_batch_one
// CHECK: %[[PAIR:.*]] = torch.prim.ListConstruct %arg0, %arg0
// CHECK: %[[TWO:.*]] = torch.aten.cat %[[PAIR]], {{.*}} -> !torch.vtensor<[2,3,4,4],f32>
// CHECK: %[[V:.*]], %[[I:.*]] = torch.aten.max_pool2d_with_indices %[[TWO]], {{.*}} -> !torch.vtensor<[2,3,2,2],f32>, !torch.vtensor<[2,3,2,2],si64>
// CHECK: torch.aten.slice.Tensor %[[V]], {{.*}} -> !torch.vtensor<[1,3,2,2],f32>
// CHECK: torch.aten.slice.Tensor %[[I]], {{.*}} -> !torch.vtensor<[1,3,2,2],si64>
func.func @indices_at_batch_one(%arg0: !torch.vtensor<[1,3,4,4],f32>) -> (!torch.vtensor<[1,3,2,2],f32>, !torch.vtensor<[1,3,2,2],si64>) {
  %int2 = torch.constant.int 2
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %k = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %p = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %d = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %v, %i = torch.aten.max_pool2d_with_indices %arg0, %k, %k, %p, %d, %false : !torch.vtensor<[1,3,4,4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool -> !torch.vtensor<[1,3,2,2],f32>, !torch.vtensor<[1,3,2,2],si64>
  return %v, %i : !torch.vtensor<[1,3,2,2],f32>, !torch.vtensor<[1,3,2,2],si64>
}

// A batch of one without indices is left alone.
// CHECK-LABEL: func.func @batch_one_values_only
// CHECK-NOT: torch.aten.cat
func.func @batch_one_values_only(%arg0: !torch.vtensor<[1,3,4,4],f32>) -> !torch.vtensor<[1,3,2,2],f32> {
  %int2 = torch.constant.int 2
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %false = torch.constant.bool false
  %k = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %p = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %d = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %v, %i = torch.aten.max_pool2d_with_indices %arg0, %k, %k, %p, %d, %false : !torch.vtensor<[1,3,4,4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool -> !torch.vtensor<[1,3,2,2],f32>, !torch.vtensor<[1,3,2,2],si64>
  return %v : !torch.vtensor<[1,3,2,2],f32>
}
