// A wrong expectation fails the run and says which.
// RUN: not lowerkit-opt --verify-diagnostics %s 2>&1 | FileCheck %s
// CHECK: error: expected error "this is not the message" was not produced
// CHECK: error: unexpected error: expected non-function type

// expected-error @+1 {{this is not the message}}
func.func @f( {
