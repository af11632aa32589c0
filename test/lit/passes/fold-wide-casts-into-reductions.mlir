// RUN: lowerkit-opt --pass=fold-wide-casts-into-reductions %s | FileCheck %s

// A variance as torch-mlir writes it: one f32 -> f64 cast read by two reductions. Each
// reduction reads the f32 tensor and widens in its body; the cast, read by nothing else, goes.
// A cast to f32 (not 64-bit) and a cast read by an elementwise op are left alone.
// CHECK-LABEL: func.func @variance
// CHECK-NOT: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0 : tensor<4x1024xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f64):
// CHECK-NEXT: arith.extf %[[IN]] : f32 to f64
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %{{.*}} : tensor<4x1024xf32>, tensor<4xf64>)
// CHECK-NEXT: ^bb0(%[[IN2:.*]]: f32, %{{.*}}: f64, %{{.*}}: f64):
// CHECK-NEXT: arith.extf %[[IN2]] : f32 to f64
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @variance(%a: tensor<4x1024xf32>) -> tensor<4xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x1024xf64>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x1024xf32>) outs(%e : tensor<4x1024xf64>) {
    ^bb0(%x: f32, %out: f64):
      %w = arith.extf %x : f32 to f64
      linalg.yield %w : f64
  } -> tensor<4x1024xf64>
  %e1 = tensor.empty() : tensor<4xf64>
  %init = linalg.fill ins(%zero : f64) outs(%e1 : tensor<4xf64>) -> tensor<4xf64>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%wide : tensor<4x1024xf64>) outs(%init : tensor<4xf64>) {
    ^bb0(%x: f64, %acc: f64):
      %s = arith.addf %x, %acc : f64
      linalg.yield %s : f64
  } -> tensor<4xf64>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%wide, %sum : tensor<4x1024xf64>, tensor<4xf64>) outs(%init : tensor<4xf64>) {
    ^bb0(%x: f64, %m: f64, %acc: f64):
      %d = arith.subf %x, %m : f64
      %d2 = arith.mulf %d, %d : f64
      %s = arith.addf %d2, %acc : f64
      linalg.yield %s : f64
  } -> tensor<4xf64>
  return %sq : tensor<4xf64>
}

// CHECK-LABEL: func.func @left_alone
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%{{.*}} : tensor<4x8xf64>)
func.func @left_alone(%h: tensor<4x8xf16>, %a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf64>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x8xf16>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%x: f16, %out: f32):
      %w = arith.extf %x : f16 to f32
      linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%wide : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf64>
  %wide64 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf64>) {
    ^bb0(%x: f32, %out: f64):
      %w = arith.extf %x : f32 to f64
      linalg.yield %w : f64
  } -> tensor<4x8xf64>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide64 : tensor<4x8xf64>) outs(%e2 : tensor<4x8xf64>) {
    ^bb0(%x: f64, %out: f64):
      %t = arith.addf %x, %x : f64
      linalg.yield %t : f64
  } -> tensor<4x8xf64>
  return %sum, %twice : tensor<4xf32>, tensor<4x8xf64>
}
