// RUN: lowerkit-opt --pass=keep-nan-clamps %s | FileCheck %s

// A clamp of a float keeps its input where the input is NaN (torch-mlir's select would give
// the bound).
// CHECK-LABEL: func.func @hardtanh
// CHECK: %[[T:.*]] = torch.aten.hardtanh %arg0
// CHECK: %[[NAN:.*]] = torch.aten.isnan %arg0
// CHECK: %[[R:.*]] = torch.aten.where.self %[[NAN]], %arg0, %[[T]]
// CHECK: return %[[R]]
func.func @hardtanh(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %lo = torch.constant.float -1.000000e+00
  %hi = torch.constant.float 1.000000e+00
  %0 = torch.aten.hardtanh %arg0, %lo, %hi : !torch.vtensor<[4],f32>, !torch.float, !torch.float -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}

// maximum passes a NaN of either operand through, the first outermost.
// CHECK-LABEL: func.func @maximum
// CHECK: %[[M:.*]] = torch.aten.maximum %arg0, %arg1
// CHECK: %[[NB:.*]] = torch.aten.isnan %arg1
// CHECK: %[[WB:.*]] = torch.aten.where.self %[[NB]], %arg1, %[[M]]
// CHECK: %[[NA:.*]] = torch.aten.isnan %arg0
// CHECK: %[[WA:.*]] = torch.aten.where.self %[[NA]], %arg0, %[[WB]]
// CHECK: return %[[WA]]
func.func @maximum(%arg0: !torch.vtensor<[4],f32>, %arg1: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %0 = torch.aten.maximum %arg0, %arg1 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}

// An integer clamp holds no NaN: left as it is.
// CHECK-LABEL: func.func @integer_clamp
// CHECK-NOT: isnan
// CHECK: torch.aten.clamp
func.func @integer_clamp(%arg0: !torch.vtensor<[4],si64>) -> !torch.vtensor<[4],si64> {
  %lo = torch.constant.int 0
  %none = torch.constant.none
  %0 = torch.aten.clamp %arg0, %lo, %none : !torch.vtensor<[4],si64>, !torch.int, !torch.none -> !torch.vtensor<[4],si64>
  return %0 : !torch.vtensor<[4],si64>
}
