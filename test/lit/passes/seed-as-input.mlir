// RUN: lowerkit-opt --pass=seed-as-input --split-input-file %s | FileCheck %s

// torch-mlir's random ops read and step a module global seed that starts at 0 in every
// loaded context; the public function takes the seed as its last argument and stores it
// into the global first, so that each call draws from the seed the runtime passes.
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<i64>) -> tensor<4xf32>
// CHECK-NEXT: ml_program.global_store @global_seed = %arg1 : tensor<i64>
// CHECK-NEXT: ml_program.global_load @global_seed
module {
  ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %g = ml_program.global_load @global_seed : tensor<i64>
    %s = tensor.extract %g[] : tensor<i64>
    %c = arith.constant 6364136223846793005 : i64
    %n = arith.muli %s, %c : i64
    %i = tensor.insert %n into %g[] : tensor<i64>
    ml_program.global_store @global_seed = %i : tensor<i64>
    return %arg0 : tensor<4xf32>
  }
}

// -----

// A program without random ops (no global seed) is left as it is.
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %arg0
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}
