# A transform script given as a Python builder instead of text.
# RUN: %PYTHON %s | FileCheck %s
from torch_mlir import ir
from torch_mlir.dialects import transform
from torch_mlir.dialects.transform import structured

from lowerkit import TransformStage


def script(context):
    with context, ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
        with ir.InsertionPoint(module.body):
            seq = transform.NamedSequenceOp("__transform_main", [transform.AnyOpType.get()], [])
            with ir.InsertionPoint(seq.body):
                found = structured.MatchOp.match_op_names(seq.bodyTarget, ["arith.addf"])
                transform.AnnotateOp(found, "seen_by_builder")
                transform.YieldOp([])
    return module


module = ir.Module.parse("func.func @f(%x: f32) -> f32 { %0 = arith.addf %x, %x : f32\n return %0 : f32 }", ir.Context())
print(TransformStage("annotate-adds", script)(module))
# CHECK: arith.addf %arg0, %arg0 {seen_by_builder} : f32
