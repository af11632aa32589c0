// RUN: lowerkit-opt --pass=widen-narrow-io --split-input-file %s | FileCheck %s

// A bool argument and an f16 result cross the call as i32 and f32; the body becomes a private
// function that the new public one calls between one linalg.generic per conversion.
// CHECK-LABEL: func.func private @main$narrow_io(%arg0: tensor<2x5xi1>, %arg1: tensor<2x5xf16>) -> tensor<2x5xf16>
// CHECK: arith.select
// CHECK-LABEL: func.func @main(%arg0: tensor<2x5xi32>, %arg1: tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x5xi32>) outs({{.*}} : tensor<2x5xi1>)
// CHECK: arith.trunci %{{.*}} : i32 to i1
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2x5xf32>) outs({{.*}} : tensor<2x5xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[R:.*]] = call @main$narrow_io(%[[B]], %[[H]])
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<2x5xf16>) outs({{.*}} : tensor<2x5xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: return %[[W]] : tensor<2x5xf32>
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%arg0: tensor<2x5xi1>, %arg1: tensor<2x5xf16>) -> tensor<2x5xf16> {
  %cst = arith.constant -1.0 : f16
  %0 = tensor.empty() : tensor<2x5xf16>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<2x5xi1>, tensor<2x5xf16>) outs(%0 : tensor<2x5xf16>) {
  ^bb0(%in: i1, %in_0: f16, %out: f16):
    %2 = arith.select %in, %in_0, %cst : f16
    linalg.yield %2 : f16
  } -> tensor<2x5xf16>
  return %1 : tensor<2x5xf16>
}

// -----

// Dynamic dimensions are read off the argument; signed bytes are sign-extended on the way out;
// 32-bit tensors pass through untouched.
// CHECK-LABEL: func.func @f(%arg0: tensor<?x3xi32>, %arg1: tensor<4xf32>) -> (tensor<?x3xi32>, tensor<4xf32>)
// CHECK: %[[D:.*]] = tensor.dim %arg0, %c0 : tensor<?x3xi32>
// CHECK: tensor.empty(%[[D]]) : tensor<?x3xi8>
// CHECK: %[[R:.*]]:2 = call @f$narrow_io(%{{.*}}, %arg1)
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: return %{{.*}}, %[[R]]#1 : tensor<?x3xi32>, tensor<4xf32>
func.func @f(%arg0: tensor<?x3xi8>, %arg1: tensor<4xf32>) -> (tensor<?x3xi8>, tensor<4xf32>) {
  return %arg0, %arg1 : tensor<?x3xi8>, tensor<4xf32>
}

// -----

// Nothing narrow, and private functions: unchanged.
// CHECK-LABEL: func.func @g(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: narrow_io
// CHECK: func.func private @h(%arg0: tensor<4xi1>)
// CHECK-NOT: narrow_io
func.func @g(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}
func.func private @h(%arg0: tensor<4xi1>) -> tensor<4xi1> {
  return %arg0 : tensor<4xi1>
}
