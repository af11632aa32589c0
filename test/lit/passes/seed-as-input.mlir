// RUN: lowerkit-opt --pass=seed-as-input --split-input-file --verify-diagnostics %s | FileCheck %s

// torch-mlir's random ops read and step a module global seed that starts at 0 in every
// loaded context. The public function takes the seed as its last argument instead: the first
// load reads it, the next one the value last stored, and the global is gone.
// CHECK-NOT: ml_program
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<i64> {lowerkit.seed}) -> (tensor<i64>, tensor<i64>)
// CHECK-NEXT: %[[A:.*]] = tensor.extract %arg1[]
// CHECK: %[[N:.*]] = arith.muli %[[A]]
// CHECK-NEXT: %[[I:.*]] = tensor.insert %[[N]] into %arg1[]
// CHECK-NEXT: %[[B:.*]] = tensor.extract %[[I]][]
// CHECK: return %arg1, %[[I]]
// CHECK-NOT: ml_program
module {
  ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
  func.func @main(%arg0: tensor<4xf32>) -> (tensor<i64>, tensor<i64>) {
    %g = ml_program.global_load @global_seed : tensor<i64>
    %s = tensor.extract %g[] : tensor<i64>
    %c = arith.constant 6364136223846793005 : i64
    %n = arith.muli %s, %c : i64
    %i = tensor.insert %n into %g[] : tensor<i64>
    ml_program.global_store @global_seed = %i : tensor<i64>
    %g2 = ml_program.global_load @global_seed : tensor<i64>
    %t = tensor.extract %g2[] : tensor<i64>
    return %g, %g2 : tensor<i64>, tensor<i64>
  }
}

// -----

// A program without random ops (no global seed) is left as it is.
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %arg0
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}

// -----

// A seed read in a loop cannot come from the call: refused at the op.
module {
  ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
  func.func @main(%arg0: index) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %arg0 step %c1 {
      // expected-error @+1 {{(the random ops' seed) inside a nested region}}
      %g = ml_program.global_load @global_seed : tensor<i64>
    }
    return %arg0 : index
  }
}
