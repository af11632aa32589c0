"""One failing stage of each kind, defined the way a user's own file defines them: nothing is
registered. test_replay.py runs each, then runs the replay command its StageError prints."""

from pathlib import Path

from lowerkit import FunctionStage, PassPipelineStage, PythonPassStage
from lowerkit.ir import Build
from lowerkit.stages.rewrite import ConversionStage, GreedyRewriteStage, PDLStage, pattern
from lowerkit.stages.transform import TransformStage
from replay_user_pkg.stages import refuse_in_package

HERE = Path(__file__).parent

# arith/func input for every stage but the pass pipeline's (which wants a torch op)
ADD = """
func.func @f(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  return %0 : f32
}
"""

TANH = """
func.func @f(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %0 = torch.aten.tanh %arg0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %0 : !torch.vtensor<[4],f32>
}
"""

BRANCH = """
func.func @f(%c: i1) -> i32 {
  %a = arith.constant 1 : i32
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %a : i32
^bb2:
  return %a : i32
}
"""

RMS_NORM = """
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fused.rms_norm"(%x, %w) {epsilon = 1.0e-05 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def registered_conversion():
    """lowerkit's built-in pass, which has no lowering for fused.rms_norm."""
    from lowerkit import registry

    return registry.passes.get("lower-fused-to-linalg")


def fail_on_return(op, pass_):
    from torch_mlir import ir

    def visit(o):
        if o.name == "func.return":
            o.location.emit_error("replay-test: the pass refuses func.return")
            pass_.signal_pass_failure()
        return ir.WalkResult.ADVANCE

    op.walk(visit)


def refuse_module(module):
    raise ValueError("replay-test: the function stage refuses this module")


@pattern("arith.addf")
def broken_add_pattern(op, rewriter):
    raise RuntimeError("replay-test: the greedy pattern is broken")


@pattern("arith.addf")
def no_match(op, adaptor, converter, rewriter):
    return True  # declines, so arith.addf stays illegal


def keep_type(t):
    return t


PDL_CALLING_PYTHON = """
module {
  pdl.pattern @add : benefit(1) {
    %type = pdl.type
    %x = pdl.operand
    %add = pdl.operation "arith.addf"(%x, %x : !pdl.value, !pdl.value) -> (%type : !pdl.type)
    pdl.rewrite %add with "broken_rewrite"(%add : !pdl.operation)
  }
}
"""


def broken_rewrite(rewriter, results, values):
    raise RuntimeError("replay-test: the PDL rewrite is broken")


def pdl_builder(context):
    from torch_mlir import ir

    return ir.Module.parse(PDL_CALLING_PYTHON, context)


TILE_RETURN = (HERE / "tile_return.transform.mlir").read_text()


def tile_return_builder(context):
    return Build.TORCH_MLIR.ir.Module.parse(TILE_RETURN, context)


# name -> (stage, input, text the original error holds)
CASES = {
    "pass-pipeline": (PassPipelineStage("verify-contract", "torch-verify-linalg-on-tensors-backend-contract"),
                      TANH, "failed to legalize operation 'func.func'"),
    "pass-pipeline-iree": (PassPipelineStage("verify-structured", "func.func(iree-util-verify-structured-control-flow)",
                                             build=Build.IREE),
                           BRANCH, "unexpected branch operation in function"),
    "registered": (registered_conversion(), RMS_NORM, "failed to legalize operation 'fused.rms_norm'"),
    "python-pass": (PythonPassStage("fail-on-return", fail_on_return), ADD,
                    "replay-test: the pass refuses func.return"),
    "function": (FunctionStage("refuse-module", refuse_module), ADD,
                 "replay-test: the function stage refuses this module"),
    "package-function": (FunctionStage("refuse-in-package", refuse_in_package), ADD,
                         "replay-test: the package's function stage refuses"),
    "greedy": (GreedyRewriteStage("broken-add", [broken_add_pattern]), ADD,
               "replay-test: the greedy pattern is broken"),
    "conversion": (ConversionStage("drop-arith", [no_match], illegal=["arith"], partial=True,
                                   type_conversions=[keep_type]), ADD,
                   "failed to legalize operation 'arith.addf'"),
    "pdl-text": (PDLStage("pdl-text", PDL_CALLING_PYTHON, rewrites={"broken_rewrite": broken_rewrite}), ADD,
                 "replay-test: the PDL rewrite is broken"),
    "pdl-path": (PDLStage("pdl-path", HERE / "broken_rewrite.pdl.mlir", rewrites={"broken_rewrite": broken_rewrite}),
                 ADD, "replay-test: the PDL rewrite is broken"),
    "pdl-builder": (PDLStage("pdl-builder", pdl_builder, rewrites={"broken_rewrite": broken_rewrite}), ADD,
                    "replay-test: the PDL rewrite is broken"),
    "transform-path": (TransformStage("tile-return-path", HERE / "tile_return.transform.mlir"), ADD,
                       "only ops implementing TilingInterface are supported"),
    "transform-path-iree": (TransformStage("tile-return-iree", HERE / "tile_return.transform.mlir", build=Build.IREE),
                            ADD, "only ops implementing TilingInterface are supported"),
    "transform-text": (TransformStage("tile-return-text", TILE_RETURN), ADD,
                       "only ops implementing TilingInterface are supported"),
    "transform-builder": (TransformStage("tile-return-builder", tile_return_builder), ADD,
                          "only ops implementing TilingInterface are supported"),
}
