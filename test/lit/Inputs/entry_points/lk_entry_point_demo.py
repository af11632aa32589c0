"""A package that adds a pass, a pipeline and an IRDL dialect through lowerkit's entry-point
groups only (its dist-info beside it declares them); nothing here calls ``register``."""

from lowerkit import Pipeline, PythonPassStage, registry
from lowerkit.dialects.irdl import IRDLDialect

DIALECT = """
irdl.dialect @epdemo {
  irdl.operation @twice {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(input: %t)
    irdl.results(output: %t)
  }
}
"""


def _tag_functions(op, pass_):
    from torch_mlir import ir

    def visit(o):
        if o.name == "func.func":
            o.attributes["epdemo.tagged"] = ir.UnitAttr.get()
        return ir.WalkResult.ADVANCE

    op.walk(visit)


def tag_functions() -> PythonPassStage:
    return PythonPassStage("epdemo-tag-functions", _tag_functions)


def pipeline() -> Pipeline:
    # the pass is looked up by name: the pipeline works only if the passes group was read too
    return Pipeline("epdemo-pipeline", [registry.passes.get("epdemo-tag-functions")])


def dialect() -> IRDLDialect:
    return IRDLDialect.from_text(DIALECT)
