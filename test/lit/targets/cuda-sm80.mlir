// CUDA code generation needs no GPU: IREE's table knows sm_80, so plain flags do.
// RUN: rm -rf %t && iree-compile %s --iree-hal-target-device=cuda --iree-cuda-target=sm_80 \
// RUN:   --iree-hal-dump-executable-binaries-to=%t -o %t.vmfb
// RUN: cat %t/*.ptx | FileCheck %s

// CHECK: .version 7.6
// CHECK: .target sm_80
// CHECK: .address_size 64
// CHECK: .entry {{.*}}main_dispatch
// CHECK: add.rn.f32
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %0 = arith.addf %a, %b : tensor<64xf32>
  return %0 : tensor<64xf32>
}
