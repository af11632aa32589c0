"""The two MLIR builds lowerkit drives (`Build`), and what is common to modules of either.

torch-mlir and iree-base-compiler each bundle their own MLIR. Their objects never mix: a
module of one build is handed to the other only by `lowerkit.iree.bridge`, as bytecode.
"""

from __future__ import annotations

import enum
import importlib
import io
import os
from collections import Counter
from types import ModuleType
from pathlib import Path
from typing import Any

# The argument attribute that marks a weight passed by reference (`lowerkit.ingress.weights`),
# which becomes an IREE parameter (`lowerkit.iree.parameters`); named here, where both sides
# of the crossing may read it.
WEIGHT_ATTRIBUTE = "lowerkit.parameter"

# The start of the message of each run-time check lowerkit keeps (`lowerkit.ingress.checks`):
# the compile keeps a program's assertions when its module holds one
# (`lowerkit.iree.compiler.check_flags`), and the runtime tells that failure from IREE's own.
CHECK_MARK = "lowerkit check: "
# The attribute on a call of one of lowerkit's own CPU kernels naming the function that holds
# IREE's form of the same op (`passes/attention.py`): the compile ladder's first rung calls
# that one instead (`lowerkit.iree.compiler.without_op_configs`).
KERNEL_FALLBACK = "lowerkit.fallback"


class Build(enum.Enum):
    """Which MLIR build a stage runs in."""

    TORCH_MLIR = "torch-mlir"
    IREE = "iree"

    @property
    def ir(self) -> ModuleType:
        if self is Build.TORCH_MLIR:
            return importlib.import_module("torch_mlir.ir")
        from . import op_views

        op_views.install()  # before any of IREE's ops is read from Python
        return importlib.import_module("iree.compiler.ir")

    @property
    def passmanager(self) -> ModuleType:
        return importlib.import_module(
            "torch_mlir.passmanager" if self is Build.TORCH_MLIR else "iree.compiler.passmanager"
        )

    @property
    def opt_tool(self) -> str:
        return "torch-mlir-opt" if self is Build.TORCH_MLIR else "iree-opt"

    def owns(self, module: Any) -> bool:
        return isinstance(module, self.ir.Module)

    @staticmethod
    def of(module: Any) -> "Build":
        for build in Build:
            if build.owns(module):
                return build
        raise TypeError(f"expected an MLIR module of torch-mlir or IREE, got {type(module).__name__}")

    @staticmethod
    def of_object(obj: Any) -> "Build":
        """The build of any MLIR object (module, op, value, type, context): passes that run
        in either build ask this instead of testing for a module."""
        return Build.TORCH_MLIR if type(obj).__module__.startswith("torch_mlir") else Build.IREE


def parse_module_source(build: "Build", source: Any, context: Any) -> Any:
    """A module from MLIR text, a ``.mlir`` path (a Path, or a string such as
    ``"patterns.mlir"``, which MLIR text never is), or a Python builder ``f(context)``: how
    PDL pattern modules and transform scripts are given to stages."""

    if callable(source):
        return source(context)
    if isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source and source.endswith(".mlir")):
        source = Path(source).read_text()
    return build.ir.Module.parse(source, context)


def op_histogram(module: Any) -> Counter:
    """How many ops of each name a module holds (the module op itself excluded)."""
    counts: Counter = Counter()
    walk_result = Build.of(module).ir.WalkResult.ADVANCE

    def count(op):
        counts[op.name] += 1
        return walk_result

    module.operation.walk(count)
    counts["builtin.module"] -= 1
    if counts["builtin.module"] <= 0:
        del counts["builtin.module"]
    return counts


def module_asm(module: Any, *, elide: bool = True, debug_info: bool = False) -> str:
    """Print a module; large constants are elided unless asked for."""
    return module.operation.get_asm(
        large_elements_limit=16 if elide else None,
        large_resource_limit=64 if elide else None,
        enable_debug_info=debug_info,
    )


def to_bytecode(module: Any) -> bytes:
    """Serialise a module of either build as MLIR bytecode (how modules cross builds and
    processes)."""
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()
