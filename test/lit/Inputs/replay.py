"""A user's script with its own, unregistered Python pass that fails: prints the replay
command its StageError gives, for reproducer-command.mlir to run in a shell."""

from torch_mlir import ir

from lowerkit import PythonPassStage, StageError


def refuse_returns(op, pass_):
    def visit(o):
        if o.name == "func.return":
            o.location.emit_error("replay-lit: this pass refuses func.return")
            pass_.signal_pass_failure()
        return ir.WalkResult.ADVANCE

    op.walk(visit)


def main():
    module = ir.Module.parse("func.func @f() {\n  return\n}", ir.Context())
    try:
        PythonPassStage("refuse-returns", refuse_returns)(module)
    except StageError as e:
        print(e.command)


if __name__ == "__main__":  # the replay imports this file: the guard keeps it from failing again
    main()
