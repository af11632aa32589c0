// Malformed input: an MLIR-style diagnostic with this file's line and column, exit 1.
// RUN: not lowerkit-opt %s 2>&1 | FileCheck %s
// CHECK: parse-error.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: expected non-function type
// CHECK-NOT: Traceback
func.func @f( {
