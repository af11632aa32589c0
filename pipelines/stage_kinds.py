# RUN: lowerkit-opt --pipeline=stage-kinds --print-ir-after-all %S/../test/lit/Inputs/stage_kinds.mlir 2>&1 >/dev/null | FileCheck %s
# CHECK: IR Dump After canonicalize-cse
# CHECK: IR Dump After erase-zero-add
# CHECK: IR Dump After fold-double-negation
# CHECK: IR Dump After lower-fused-to-linalg
# CHECK: IR Dump After mark-linalg-ops
# CHECK: lowerkit.marked
# CHECK: IR Dump After count-ops
"""stage-kinds: one of each kind of stage, side by side in one pipeline (all in Python).

- ``canonicalize-cse``: a textual MLIR pass pipeline;
- ``erase-zero-add``: Python rewrite patterns applied greedily;
- ``fold-double-negation``: a PDL pattern module;
- ``lower-fused-to-linalg``: Python patterns in a dialect conversion (from fused_ops.py);
- ``mark-linalg-ops``: a transform-dialect script run by the transform interpreter;
- ``count-ops``: a Python pass run by MLIR's pass manager.

Try it: ``lowerkit-opt --pipeline=stage-kinds test/lit/Inputs/stage_kinds.mlir``.
"""

from __future__ import annotations

from typing import Any

from lowerkit import (GreedyRewriteStage, PassPipelineStage, PDLStage, Pipeline, PythonPassStage,
                      TransformStage, pattern, registry)

NAME = "stage-kinds"

DOUBLE_NEGATION_PDL = """
module {
  pdl.pattern @double_negation : benefit(1) {
    %type = pdl.type
    %x = pdl.operand
    %inner = pdl.operation "arith.negf"(%x : !pdl.value) -> (%type : !pdl.type)
    %negated = pdl.result 0 of %inner
    %outer = pdl.operation "arith.negf"(%negated : !pdl.value) -> (%type : !pdl.type)
    pdl.rewrite %outer {
      pdl.replace %outer with (%x : !pdl.value)
    }
  }
}
"""

MARK_LINALG_SCRIPT = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %generics = transform.structured.match ops{["linalg.generic"]} in %root
      : (!transform.any_op) -> !transform.any_op
    transform.annotate %generics "lowerkit.marked" : !transform.any_op
    transform.yield
  }
}
"""


@pattern("arith.addf")
def zero_add(op: Any, rewriter: Any) -> Any:
    """``x + 0.0`` is ``x`` (either side)."""
    for x, c in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        owner = c.owner
        if getattr(owner, "name", None) == "arith.constant" and \
                str(owner.attributes["value"]).startswith("0.000000e+00"):
            rewriter.replace_op(op, [x])
            return None
    return True


def erase_zero_add() -> GreedyRewriteStage:
    return GreedyRewriteStage("erase-zero-add", [zero_add])


def fold_double_negation() -> PDLStage:
    return PDLStage("fold-double-negation", DOUBLE_NEGATION_PDL)


def mark_linalg_ops() -> TransformStage:
    return TransformStage("mark-linalg-ops", MARK_LINALG_SCRIPT)


def _count_ops(op: Any, pass_: Any) -> None:
    from torch_mlir import ir

    n = [0]

    def visit(o):
        n[0] += 1
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    op.attributes["lowerkit.op_count"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n[0] - 1)


def count_ops() -> PythonPassStage:
    return PythonPassStage("count-ops", _count_ops,
                           description="record the number of ops as lowerkit.op_count on the module")


def build_pipeline() -> Pipeline:
    return Pipeline(NAME, [
        PassPipelineStage("canonicalize-cse", "canonicalize,cse"),
        erase_zero_add(),
        fold_double_negation(),
        registry.passes.get("lower-fused-to-linalg"),
        mark_linalg_ops(),
        count_ops(),
    ], description="every kind of stage once: pass pipeline, greedy patterns, PDL, conversion, transform, Python pass")
