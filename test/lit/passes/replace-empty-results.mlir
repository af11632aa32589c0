// RUN: lowerkit-opt --pass=replace-empty-results %s | FileCheck %s

// A slice with no elements, starting at the end of a dim of one (iree-compile: "offset 1 is
// out-of-bounds"), becomes a new empty tensor of its type; fuzzer seed 20261123, program 847.
// CHECK-LABEL: func.func @empty_slice
// CHECK-NOT: torch.aten.slice.Tensor %arg0
// CHECK: %[[E:.*]] = torch.aten.new_zeros %arg0, {{.*}} -> !torch.vtensor<[1,0,2,1],f32>
// CHECK: return %[[E]]
func.func @empty_slice(%arg0: !torch.vtensor<[1,1,2,1],f32>) -> !torch.vtensor<[1,0,2,1],f32> {
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %end = torch.constant.int 9223372036854775807
  %0 = torch.aten.slice.Tensor %arg0, %int1, %int2, %end, %int1 : !torch.vtensor<[1,1,2,1],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[1,0,2,1],f32>
  return %0 : !torch.vtensor<[1,0,2,1],f32>
}

// Both results of a max over a dim are empty: values keep f32, indices get si64 (code 4).
// CHECK-LABEL: func.func @empty_max_dim
// CHECK: %[[F32:.*]] = torch.constant.int 6
// CHECK: torch.aten.new_zeros %arg0, {{.*}}, %[[F32]], {{.*}} -> !torch.vtensor<[2,0],f32>
// CHECK: %[[I64:.*]] = torch.constant.int 4
// CHECK: torch.aten.new_zeros %arg0, {{.*}}, %[[I64]], {{.*}} -> !torch.vtensor<[2,0],si64>
func.func @empty_max_dim(%arg0: !torch.vtensor<[2,0,3],f32>) -> (!torch.vtensor<[2,0],f32>, !torch.vtensor<[2,0],si64>) {
  %int-1 = torch.constant.int -1
  %false = torch.constant.bool false
  %v, %i = torch.aten.max.dim %arg0, %int-1, %false : !torch.vtensor<[2,0,3],f32>, !torch.int, !torch.bool -> !torch.vtensor<[2,0],f32>, !torch.vtensor<[2,0],si64>
  return %v, %i : !torch.vtensor<[2,0],f32>, !torch.vtensor<[2,0],si64>
}

// A result with elements is left alone, as is an op that is not ATen's.
// CHECK-LABEL: func.func @not_empty
// CHECK: torch.aten.abs
// CHECK-NOT: new_zeros
func.func @not_empty(%arg0: !torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32> {
  %0 = torch.aten.abs %arg0 : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
  return %0 : !torch.vtensor<[2,3],f32>
}

// An allocation of no elements has no tensor operand to take new_zeros' device from: a
// literal of no elements (left, it stayed beside its readers' literals, not being pure).
// CHECK-LABEL: func.func @empty_allocation
// CHECK-NOT: torch.aten.empty_strided
// CHECK: torch.vtensor.literal(dense<> : tensor<1x0xf32>) : !torch.vtensor<[1,0],f32>
func.func @empty_allocation() -> !torch.vtensor<[1,0],f32> {
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %int6 = torch.constant.int 6
  %cpu = torch.constant.device "cpu"
  %false = torch.constant.bool false
  %size = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %stride = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.empty_strided %size, %stride, %int6, %int0, %cpu, %false : !torch.list<int>, !torch.list<int>, !torch.int, !torch.int, !torch.Device, !torch.bool -> !torch.vtensor<[1,0],f32>
  return %0 : !torch.vtensor<[1,0],f32>
}
