"""lowerkit: PyTorch to running IREE executables through named MLIR stages you can see,
test and change from Python.

    art = lowerkit.compile(model, (x,), target="cpu")
    y = art(x)

The package follows the data path: `ingress` (PyTorch to the torch dialect), `stages` (stages,
pipelines, instruments), `passes`, `dialects` (IRDL), `iree` (the crossing and iree-compile),
`runtime` (the compiled program called with torch tensors), with `tools` and `cli` beside
them. Names are loaded on first use, so a tool that only reads and rewrites MLIR
(``lowerkit-opt``) never imports torch.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from ._version import __version__

# public name -> the module that defines it
_EXPORTS = {
    "compile": "api", "resolve_pipeline": "api",
    "CompileCache": "cache",
    "Build": "ir", "op_histogram": "ir",
    "Diagnostic": "diagnostics",
    "CheckError": "errors", "DeviceLostError": "errors", "IngressError": "errors", "InputError": "errors",
    "LowerkitError": "errors",
    "OpDiagnostic": "errors", "PipelineError": "errors", "RegistryError": "errors",
    "StageError": "errors", "TargetError": "errors", "UnsupportedError": "errors",
    "VerificationError": "errors",
    "Registry": "registry",
    "Target": "target",
    "ImportedProgram": "ingress.importer", "import_program": "ingress.importer",
    "CallSignature": "ingress.signature", "Constant": "ingress.signature",
    "TensorSpec": "ingress.signature",
    "Stage": "stages.stage", "StageRecord": "stages.stage", "FunctionStage": "stages.stage",
    "PassPipelineStage": "stages.stage", "PythonPassStage": "stages.stage",
    "Pipeline": "stages.pipeline", "Lowering": "stages.pipeline",
    "CrossingStage": "stages.crossing",
    "Instrument": "stages.instrument",
    "DumpInstrument": "stages.dump",
    "Pattern": "stages.pattern", "pattern": "stages.pattern",
    "ConversionStage": "stages.rewrite", "GreedyRewriteStage": "stages.rewrite",
    "PDLStage": "stages.rewrite",
    "TransformStage": "stages.transform",
    "custom_op_lowering": "stages.custom_ops",
    "UnsupportedOp": "stages.scan",
    "IRDLDialect": "dialects.irdl", "load_dialect": "dialects.irdl",
    "Artifact": "runtime.artifact",
    "DeviceTensor": "runtime.executable",
    "Tolerance": "runtime.numerics",
    "tune": "tools.tune", "TuneReport": "tools.tune",
    "profile": "tools.profile", "Profile": "tools.profile",
    "TuningDatabase": "tuning", "TuningError": "tuning",
    "CoverageReport": "tools.check", "check_program": "tools.check",
    "bisect": "tools.bisect", "BisectReport": "tools.bisect",
    "run_items": "tools.executor", "Item": "tools.executor", "Outcome": "tools.executor",
    "Job": "tools.executor", "InProcessExecutor": "tools.executor",
    "RayExecutor": "tools.executor",
}

__all__ = sorted([*_EXPORTS, "registry"])


def __getattr__(name: str):
    # a first use loads the compile path: no full collections meanwhile (`collector.loading`;
    # imported by name: ``from . import`` would ask this function for it first)
    collector = importlib.import_module(f"{__name__}.collector")
    module = _EXPORTS.get(name)
    if module is not None:
        with collector.loading():
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    elif importlib.util.find_spec(f"{__name__}.{name}") is not None:  # lowerkit.registry, ...
        with collector.loading():
            value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from . import registry
    from .api import compile, resolve_pipeline
    from .cache import CompileCache
    from .diagnostics import Diagnostic
    from .dialects.irdl import IRDLDialect, load_dialect
    from .errors import (CheckError, DeviceLostError, IngressError, InputError, LowerkitError,
                         OpDiagnostic, PipelineError, RegistryError, StageError, TargetError,
                         UnsupportedError, VerificationError)
    from .ingress.importer import ImportedProgram, import_program
    from .ingress.signature import CallSignature, Constant, TensorSpec
    from .ir import Build, op_histogram
    from .runtime.artifact import Artifact
    from .runtime.executable import DeviceTensor
    from .runtime.numerics import Tolerance
    from .stages.crossing import CrossingStage
    from .stages.custom_ops import custom_op_lowering
    from .stages.dump import DumpInstrument
    from .stages.instrument import Instrument
    from .stages.pattern import Pattern, pattern
    from .stages.pipeline import Lowering, Pipeline
    from .stages.rewrite import ConversionStage, GreedyRewriteStage, PDLStage
    from .stages.scan import UnsupportedOp
    from .stages.stage import FunctionStage, PassPipelineStage, PythonPassStage, Stage, StageRecord
    from .stages.transform import TransformStage
    from .target import Target
    from .tools.bisect import BisectReport, bisect
    from .tools.check import CoverageReport, check_program
    from .tools.executor import InProcessExecutor, Item, Job, Outcome, RayExecutor, run_items
