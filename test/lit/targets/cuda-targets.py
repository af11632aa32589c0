# lowerkit's CUDA targets compile to PTX with no GPU on the machine. sm_90 (H100) is missing
# from IREE 3.13's table of CUDA GPUs, so lowerkit supplies the device attribute itself.
# RUN: %PYTHON %s | FileCheck %s

import tempfile
from pathlib import Path

from lowerkit.iree import compiler
from lowerkit.target import Target

SOURCE = """
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %0 = arith.mulf %a, %b : tensor<64xf32>
  return %0 : tensor<64xf32>
}
"""


def ptx(spec: str) -> str:
    import iree.compiler.ir as ir

    with ir.Context():
        module = ir.Module.parse(SOURCE)
        bytecode = __import__("io").BytesIO()
        module.operation.write_bytecode(bytecode)
    with tempfile.TemporaryDirectory() as d:
        compiler.compile_to_vmfb(bytecode.getvalue(), Target.parse(spec), executables_dir=d)
        return "".join(p.read_text() for p in sorted(Path(d).glob("*.ptx")))


for spec in ("cuda:sm_80", "cuda:sm_90"):
    print(f"=== {spec}")
    for line in ptx(spec).splitlines():
        if line.startswith((".version", ".target")) or ".entry" in line or "mul.rn.f32" in line:
            print(line.strip())

# CHECK-LABEL: === cuda:sm_80
# CHECK: .version 7.6
# CHECK-NEXT: .target sm_80
# CHECK: .entry {{.*}}main_dispatch
# CHECK: mul.rn.f32
# CHECK-LABEL: === cuda:sm_90
# CHECK: .version 7.8
# CHECK-NEXT: .target sm_90
# CHECK: .entry {{.*}}main_dispatch
# CHECK: mul.rn.f32
