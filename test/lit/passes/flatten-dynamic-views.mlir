// RUN: lowerkit-opt --pass=flatten-dynamic-views %s | FileCheck %s

// x.view(-1, 3) of a [?, ?, 3] tensor: dims 0 and 1 merged (torch-mlir's lowering of the
// view cast x to [?, 1, 3]: right only when dim 1 is 1).
// CHECK-LABEL: func.func @merge_two_dynamic_dims
// CHECK: %[[F:.*]] = torch.aten.flatten.using_ints %arg0, {{.*}} -> !torch.vtensor<[?,3],f32>
// CHECK-NOT: torch.aten.view
// CHECK: return %[[F]]
func.func @merge_two_dynamic_dims(%arg0: !torch.vtensor<[?,?,3],f32>) -> !torch.vtensor<[?,3],f32> {
  %int-1 = torch.constant.int -1
  %int3 = torch.constant.int 3
  %sizes = torch.prim.ListConstruct %int-1, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %r = torch.aten.view %arg0, %sizes : !torch.vtensor<[?,?,3],f32>, !torch.list<int> -> !torch.vtensor<[?,3],f32>
  return %r : !torch.vtensor<[?,3],f32>
}

// [?, ?, 4, 4] to [b * t, 16], b and t read off another tensor: the constant 16 takes the two
// static dims from the right, the unknown size what is left; two flattens.
// CHECK-LABEL: func.func @merge_both_ends
// CHECK: %[[A:.*]] = torch.aten.flatten.using_ints %arg0, {{.*}} -> !torch.vtensor<[?,?,16],f32>
// CHECK: %[[B:.*]] = torch.aten.flatten.using_ints %[[A]], {{.*}} -> !torch.vtensor<[?,16],f32>
// CHECK: return %[[B]]
func.func @merge_both_ends(%arg0: !torch.vtensor<[?,?,4,4],f32>, %arg1: !torch.vtensor<[?,?],f32>) -> !torch.vtensor<[?,16],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int16 = torch.constant.int 16
  %b = torch.aten.size.int %arg1, %int0 : !torch.vtensor<[?,?],f32>, !torch.int -> !torch.int
  %t = torch.aten.size.int %arg1, %int1 : !torch.vtensor<[?,?],f32>, !torch.int -> !torch.int
  %bt = torch.aten.mul.int %b, %t : !torch.int, !torch.int -> !torch.int
  %sizes = torch.prim.ListConstruct %bt, %int16 : (!torch.int, !torch.int) -> !torch.list<int>
  %r = torch.aten.view %arg0, %sizes : !torch.vtensor<[?,?,4,4],f32>, !torch.list<int> -> !torch.vtensor<[?,16],f32>
  return %r : !torch.vtensor<[?,16],f32>
}

// Views torch-mlir lowers right are left alone: a split, and a merge of static dims only.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: flatten
// CHECK: torch.aten.view %arg0
// CHECK: torch.aten.view %arg0
func.func @left_alone(%arg0: !torch.vtensor<[?,4,4],f32>) -> (!torch.vtensor<[?,16],f32>, !torch.vtensor<[?,2,2,4],f32>) {
  %int-1 = torch.constant.int -1
  %int2 = torch.constant.int 2
  %int4 = torch.constant.int 4
  %int16 = torch.constant.int 16
  %s1 = torch.prim.ListConstruct %int-1, %int16 : (!torch.int, !torch.int) -> !torch.list<int>
  %a = torch.aten.view %arg0, %s1 : !torch.vtensor<[?,4,4],f32>, !torch.list<int> -> !torch.vtensor<[?,16],f32>
  %s2 = torch.prim.ListConstruct %int-1, %int2, %int2, %int4 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %b = torch.aten.view %arg0, %s2 : !torch.vtensor<[?,4,4],f32>, !torch.list<int> -> !torch.vtensor<[?,2,2,4],f32>
  return %a, %b : !torch.vtensor<[?,16],f32>, !torch.vtensor<[?,2,2,4],f32>
}
