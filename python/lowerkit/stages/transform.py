"""Transform-dialect stages: a transform script applied by MLIR's transform interpreter.

The script is a module holding a ``transform.named_sequence`` (``@__transform_main`` unless
named otherwise): given as text, a ``.mlir`` path, or a Python builder ``fn(context) ->
Module``. It is parsed in the payload's own context, so it runs in either build.
"""

from __future__ import annotations

import importlib
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..dialects.irdl import load_dialects
from ..errors import StageError
from ..ir import Build, parse_module_source
from ..reproducer import tool
from .stage import Stage


@dataclass(repr=False)
class TransformStage(Stage):
    """Run the named sequence ``entry`` of a transform script on the module."""

    name: str
    script: "str | Path | Callable[[Any], Any]"
    entry: str = "__transform_main"
    build: Build = Build.TORCH_MLIR

    dialects: Sequence[str] = ()  # IRDL dialects (by name) loaded before the stage runs

    def script_module(self, context: Any) -> Any:
        return parse_module_source(self.build, self.script, context)

    def apply(self, module: Any) -> Any:
        load_dialects(module.context, self.dialects)
        pkg = "torch_mlir" if self.build is Build.TORCH_MLIR else "iree.compiler"
        interpreter = importlib.import_module(f"{pkg}.dialects.transform.interpreter")
        script = self.script_module(module.context)
        entry = None
        for op in script.body.operations:
            if op.operation.name == "transform.named_sequence" and \
                    str(op.operation.attributes["sym_name"]).strip('"') == self.entry:
                entry = op
        if entry is None:
            raise StageError(self.name, f"the transform script has no named sequence @{self.entry}")
        interpreter.apply_named_sequence(module, entry, script)
        return module

    def replay_command(self, path: Path) -> str:
        """A script in a file replays in iree-opt (torch-mlir-opt has no transform interpreter);
        any other replays through a replay script."""
        if not isinstance(self.script, Path) or self.dialects or self.build is not Build.IREE:
            return super().replay_command(path)
        entry = "" if self.entry == "__transform_main" else f"{{entry-point={self.entry}}}"
        pipeline = (f"builtin.module(transform-preload-library{{transform-library-paths="
                    f"{self.script.resolve()}}},transform-interpreter{entry})")
        return f"{shlex.quote(tool(self.build.opt_tool))} --pass-pipeline={shlex.quote(pipeline)} {shlex.quote(str(path))}"
