// The replay command a failing Python pass prints (lowerkit-opt --pass=NAME FILE) works.
// RUN: %PYTHON %S/../Inputs/replay.py %t.mlir | FileCheck %s
// CHECK: replay with: lowerkit-opt --pass=erase-zero-add
// CHECK: replayed
