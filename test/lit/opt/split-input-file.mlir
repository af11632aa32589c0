// RUN: lowerkit-opt --split-input-file --pass=canonicalize %s | FileCheck %s
// RUN: not lowerkit-opt --split-input-file %S/Inputs/split-bad.mlir 2>&1 | FileCheck %s --check-prefix=LINE
// The error line counts from the top of the whole file.
// LINE: split-bad.mlir:4:10: error: use of undeclared SSA value name

// CHECK-LABEL: func.func @first
// CHECK: // -----
// CHECK-LABEL: func.func @second
func.func @first() { return }
// -----
func.func @second() { return }
