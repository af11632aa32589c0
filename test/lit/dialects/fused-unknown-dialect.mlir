// An op of a dialect nobody registered is a parse error at its line.
// RUN: not lowerkit-opt %s 2>&1 | FileCheck %s
// CHECK: fused-unknown-dialect.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: operation being parsed with an unregistered dialect
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nosuchdialect.gelu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
