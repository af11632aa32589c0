// RUN: lowerkit-opt --pass=lower-bit-views %s | FileCheck %s

// f32 -> si32 of a dynamic shape: a tensor.bitcast between the builtin tensors (signedness
// dropped), through torch_c's casts.
// CHECK-LABEL: func.func @same_width
// CHECK: %[[B:.*]] = torch_c.to_builtin_tensor %arg0 : !torch.vtensor<[?,4],f32> -> tensor<?x4xf32>
// CHECK: %[[C:.*]] = tensor.bitcast %[[B]] : tensor<?x4xf32> to tensor<?x4xi32>
// CHECK: %[[R:.*]] = torch_c.from_builtin_tensor %[[C]] : tensor<?x4xi32> -> !torch.vtensor<[?,4],si32>
// CHECK-NOT: torch.aten.view.dtype
// CHECK: return %[[R]]
func.func @same_width(%arg0: !torch.vtensor<[?,4],f32>) -> !torch.vtensor<[?,4],si32> {
  %int3 = torch.constant.int 3
  %r = torch.aten.view.dtype %arg0, %int3 : !torch.vtensor<[?,4],f32>, !torch.int -> !torch.vtensor<[?,4],si32>
  return %r : !torch.vtensor<[?,4],si32>
}

// A view to a narrower dtype changes the last dim, and bool has no width a bitcast keeps:
// both are left to torch-mlir.
// CHECK-LABEL: func.func @other_widths
// CHECK: torch.aten.view.dtype %arg0
// CHECK: torch.aten.view.dtype %arg1
// CHECK-NOT: tensor.bitcast
func.func @other_widths(%arg0: !torch.vtensor<[2,4],f32>, %arg1: !torch.vtensor<[3],ui8>) -> (!torch.vtensor<[2,16],ui8>, !torch.vtensor<[3],i1>) {
  %int0 = torch.constant.int 0
  %int11 = torch.constant.int 11
  %a = torch.aten.view.dtype %arg0, %int0 : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,16],ui8>
  %b = torch.aten.view.dtype %arg1, %int11 : !torch.vtensor<[3],ui8>, !torch.int -> !torch.vtensor<[3],i1>
  return %a, %b : !torch.vtensor<[2,16],ui8>, !torch.vtensor<[3],i1>
}
