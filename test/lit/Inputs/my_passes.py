"""A user's own pass file for `lowerkit-opt --load`: it registers what it defines, explicitly."""

from lowerkit import PythonPassStage, registry


def _tag_functions(op, pass_):
    from torch_mlir import ir

    def visit(o):
        if o.name == "func.func":
            o.attributes["my.tagged"] = ir.UnitAttr.get()
        return ir.WalkResult.ADVANCE

    op.walk(visit)


def _always_fails(op, pass_):
    from torch_mlir import ir

    def visit(o):
        if o.name == "func.return":
            o.location.emit_error("my-fail-on-return: found a return")
            pass_.signal_pass_failure()
        return ir.WalkResult.ADVANCE

    op.walk(visit)


def _raises(op, pass_):
    raise RuntimeError("a bug in my pass")


registry.passes.register("my-tag-functions", lambda: PythonPassStage("my-tag-functions", _tag_functions))
registry.passes.register("my-fail-on-return", lambda: PythonPassStage("my-fail-on-return", _always_fails))
registry.passes.register("my-raise", lambda: PythonPassStage("my-raise", _raises))
