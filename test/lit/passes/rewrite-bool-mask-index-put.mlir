// RUN: lowerkit-opt --pass=rewrite-bool-mask-index-put %s | FileCheck %s

// A tensor with no mask index_put is left alone.
// CHECK-LABEL: func.func @untouched
// CHECK: torch.aten.relu
func.func @untouched(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %0 = torch.aten.relu %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}
