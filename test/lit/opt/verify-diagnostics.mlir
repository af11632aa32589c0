// RUN: lowerkit-opt --split-input-file --verify-diagnostics %s

// expected-error @+1 {{expected non-function type}}
func.func @f( {

// -----

func.func @g(%a: i32) -> i32 {
  // expected-error @+1 {{use of undeclared SSA value name}}
  return %b : i32
}
