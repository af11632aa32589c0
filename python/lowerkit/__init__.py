"""lowerkit: PyTorch to running IREE executables through named MLIR stages you can see,
test and change from Python.

    art = lowerkit.compile(model, (x,), target="cpu")
    y = art(x)
"""

from .api import compile, resolve_pipeline
from .artifact import Artifact
from .cache import CompileCache
from .build import Build, op_histogram
from .coverage import CoverageReport, UnsupportedOp, check_program
from .dump import DumpInstrument
from .errors import (
    IngressError,
    InputError,
    LowerkitError,
    OpDiagnostic,
    PipelineError,
    RegistryError,
    StageError,
    TargetError,
    UnsupportedError,
    VerificationError,
)
from .ingress import ImportedProgram, import_program
from .instrument import Instrument
from .pipeline import Lowering, Pipeline, StageRecord
from . import registry
from .registry import Registry
from .signature import CallSignature, Constant, TensorSpec
from .stage import FunctionStage, PassPipelineStage, PythonPassStage, Stage
from .rewrite import ConversionStage, GreedyRewriteStage, Pattern, PDLStage, pattern
from .transform import TransformStage
from .irdl import IRDLDialect, load_dialect
from .custom_ops import custom_op_lowering
from .runtime import DeviceTensor
from .target import Target

__version__ = "0.1.0"

__all__ = [
    "CoverageReport", "UnsupportedOp", "check_program",
    "Artifact", "CompileCache", "DeviceTensor", "Build", "CallSignature", "Constant", "DumpInstrument", "FunctionStage",
    "ImportedProgram", "IngressError", "InputError", "Instrument", "Lowering", "LowerkitError",
    "OpDiagnostic", "PassPipelineStage", "Pipeline", "PythonPassStage", "Registry",
    "PipelineError", "RegistryError", "Stage", "StageError", "StageRecord", "Target", "TargetError",
    "TensorSpec", "UnsupportedError", "VerificationError", "compile", "import_program", "op_histogram", "registry", "resolve_pipeline",
    "ConversionStage", "GreedyRewriteStage", "IRDLDialect", "PDLStage", "Pattern",
    "TransformStage", "custom_op_lowering", "load_dialect", "pattern",
]
