# A PDL pattern module built by a Python function, applied greedily.
# RUN: %PYTHON %s | FileCheck %s
from torch_mlir import ir

from lowerkit import PDLStage

PDL = """
module {
  pdl.pattern @muli_to_addi : benefit(1) {
    %x = pdl.operand
    %y = pdl.operand
    %t = pdl.type
    %op = pdl.operation "arith.muli"(%x, %y : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    pdl.rewrite %op {
      %new = pdl.operation "arith.addi"(%x, %y : !pdl.value, !pdl.value) -> (%t : !pdl.type)
      pdl.replace %op with %new
    }
  }
}
"""


def build_pdl(context):
    return ir.Module.parse(PDL, context)


module = ir.Module.parse("func.func @f(%x: i32) -> i32 { %0 = arith.muli %x, %x : i32\n return %0 : i32 }", ir.Context())
print(PDLStage("muli-to-addi", build_pdl)(module))
# CHECK: arith.addi %arg0, %arg0 : i32
# CHECK-NOT: arith.muli
