"""Stage: one named step that takes a module and returns a module.

A stage runs in one MLIR build and refuses a module of the other. Three kinds cover what
users write: a textual pass pipeline (`PassPipelineStage`), a Python pass run by MLIR's pass
manager (`PythonPassStage`), and a plain Python function of a module (`FunctionStage`).
When a stage fails, the error names it, lists every diagnostic with the op and the user's
source line, and points at a saved copy of the stage's input to replay the failure with.
"""

from __future__ import annotations

import contextvars
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from .. import registry
from ..diagnostics import Diagnostic, DiagnosticCapture, diagnostics_of
from ..errors import LowerkitError, StageError, UnsupportedError
from ..ir import Build, module_asm
from ..reproducer import save_reproducer, tool
from . import isolation, replay
from .scan import is_refusal, offending_ops

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def check_stage_name(name: str) -> str:
    """Stage names are kebab-case: they are pass arguments and file names of dumps."""
    if not _KEBAB.match(name):
        raise ValueError(f"stage names are kebab-case (like 'lower-my-op'), got {name!r}")
    return name


@dataclass
class StageRecord:
    """What one stage did: how long it took and which ops its output holds."""

    name: str
    build: Build
    seconds: float
    ops: Counter
    ir: str | None = None  # the stage's output, constants elided, when kept

    @property
    def op_count(self) -> int:
        return sum(self.ops.values())

    def dialects(self) -> Counter:
        out: Counter = Counter()
        for name, n in self.ops.items():
            out[name.split(".", 1)[0]] += n
        return out


class Stage:
    """Base of every stage: a kebab-case ``name``, the ``build`` it runs in, and ``apply``.

    A dataclass kind inherits ``__post_init__``, which checks the name."""

    name: str
    build: Build
    # Run in a forked child (see lowerkit.stages.isolation): for native passes that can crash.
    isolated: bool = False

    def __post_init__(self) -> None:
        check_stage_name(self.name)

    def apply(self, module: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def replay_command(self, path: Path) -> str:
        """A shell command that replays this stage on a saved input; raises replay.NoReplay
        saying why where none can be given.

        A stage lowerkit-opt builds by name (a built-in or entry-point pass equal to this one)
        replays there; any other is rebuilt by a replay script written beside the input."""
        if _fresh_registry_has(self):
            return f"{shlex.quote(tool('lowerkit-opt'))} --pass={self.name} {shlex.quote(str(path))}"
        return replay.write_script(self, path)[1]

    def load_dialects(self, context: Any) -> None:
        """Load into ``context`` the dialects this stage's output may use (for isolation)."""

    def __call__(self, module: Any) -> Any:
        """Run the stage on ``module`` (modified in place or replaced) and return the result."""
        self.check_module(module)
        backup = module.operation.clone()
        capture = DiagnosticCapture(module.context)
        try:
            if self.isolated and isolation.enabled() and pass_manager_hook.get() is None:
                with module.context:
                    result = isolation.run_isolated(self, module)
            else:
                with module.context, capture:
                    result = self.apply(module)
        except LowerkitError:
            raise
        except isolation.ChildCrashed as e:
            raise self.failure(backup, [Diagnostic(
                f"the stage {e.how} (a native crash inside MLIR, isolated from this process)")],
                e.how) from None
        except Exception as e:
            diags = diagnostics_of(e, capture.errors)
            raise self.failure(backup, diags, _summary(e, diags)) from e
        result = module if result is None else result
        if not self.build.owns(result):
            raise StageError(self.name, f"returned {type(result).__name__}, not a module of {self.build.value}")
        return result

    def check_module(self, module: Any) -> None:
        if not self.build.owns(module):
            other = Build.of(module).value if _is_module(module) else type(module).__name__
            raise StageError(
                self.name,
                f"runs in {self.build.value}'s MLIR but was given a module of {other}; "
                "modules cross between the builds only through lowerkit.iree.bridge",
            )

    def failure(self, backup: Any, diagnostics: list[Diagnostic], summary: str) -> StageError:
        """The error of a failed run: every failing op of the stage (not only the first), a
        saved reproducer and the command that replays it."""
        every = offending_ops(self, backup, diagnostics)
        if every is not diagnostics:
            diagnostics, summary = every, _summary(None, every)
        path = save_reproducer(self.name, module_asm(backup, elide=False, debug_info=True))
        try:
            command, why_not = self.replay_command(path), None
        except replay.NoReplay as e:
            command, why_not = None, str(e)
        except Exception as e:  # the stage's own error matters more than its replay
            command, why_not = None, f"writing the replay failed: {type(e).__name__}: {e}"
        error = UnsupportedError if is_refusal(diagnostics) else StageError
        return error(self.name, summary, diagnostics, path, command, why_no_command=why_not)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.build.value})"


def _fresh_registry_has(stage: "Stage") -> bool:
    """Whether a fresh ``lowerkit-opt --pass=NAME`` builds this very stage: a built-in or
    entry-point pass (not one registered at run time) whose factory gives an equal stage."""
    if stage.name not in registry.passes or stage.name not in registry.passes._lazy:
        return False
    try:
        return registry.passes.get(stage.name) == stage
    except Exception:  # a factory that needs options
        return False


def _summary(error: Exception, diags: list[Diagnostic]) -> str:
    ops = sorted({d.op for d in diags if d.op})
    what = f" on {', '.join(ops)}" if ops else ""
    return f"{len(diags)} error(s){what}" if diags else f"{type(error).__name__}: {error}"


# Set by an instrument that looks inside a stage (a dump printing the IR after every pass):
# called with (stage, pass_manager) before the stage's pass manager runs.
pass_manager_hook: contextvars.ContextVar = contextvars.ContextVar("pass_manager_hook", default=None)


def _prepare_pass_manager(stage: "Stage", pm: Any) -> None:
    hook = pass_manager_hook.get()
    if hook is not None:
        hook(stage, pm)


def _is_module(obj: Any) -> bool:
    try:
        Build.of(obj)
        return True
    except TypeError:
        return False


@dataclass(repr=False)
class PassPipelineStage(Stage):
    """A textual MLIR pass pipeline, e.g. ``builtin.module(canonicalize,cse)``."""

    name: str
    pipeline: str
    build: Build = Build.TORCH_MLIR
    isolated: bool = True

    def __post_init__(self):
        super().__post_init__()
        if not self.pipeline.startswith("builtin.module("):
            self.pipeline = f"builtin.module({self.pipeline})"

    def apply(self, module: Any) -> Any:
        ctx = module.context
        ctx.emit_error_diagnostics = True
        pm = self.build.passmanager.PassManager.parse(self.pipeline)
        _prepare_pass_manager(self, pm)
        pm.run(module.operation)
        return module

    def replay_command(self, path: Path) -> str:
        return (f"{shlex.quote(tool(self.build.opt_tool))} --pass-pipeline={shlex.quote(self.pipeline)} "
                f"{shlex.quote(str(path))}")

    def load_dialects(self, context: Any) -> None:
        # Running the pipeline on an empty module loads its passes' dependent dialects.
        with context, self.build.ir.Location.unknown():
            self.apply(self.build.ir.Module.create())


@dataclass(repr=False)
class PythonPassStage(Stage):
    """A pass written in Python, ``run(op, pass_)``, run by MLIR's pass manager.

    It is registered under its own name as the pass argument, so per-pass IR dumps name it.
    ``pass_.signal_pass_failure()`` fails the stage.
    """

    name: str
    run: Callable[[Any, Any], None]
    build: Build = Build.TORCH_MLIR
    op_name: str = ""
    description: str = ""
    # loads into a context the dialects the pass builds ops of, which the Python build may
    # not register (a pass module's ``load_dialects``); called before the pass manager runs
    prepare_context: Callable[[Any], None] | None = None

    @classmethod
    def from_module(cls, module: ModuleType, run: Callable[[Any], Any] | None = None,
                    build: Build | None = None) -> "PythonPassStage":
        """The stage of one of lowerkit's pass modules (`lowerkit.passes`): its ``NAME``, first
        docstring line and ``BUILD``; ``run(op)`` replaces ``module.run`` to give it options."""
        fn = module.run if run is None else (lambda op, _pass: run(op))
        return cls(module.NAME, fn, build=build or Build(getattr(module, "BUILD", "torch-mlir")),
                   description=module.__doc__.splitlines()[0],
                   prepare_context=getattr(module, "load_dialects", None))

    def load_dialects(self, context: Any) -> None:
        if self.prepare_context is not None:
            self.prepare_context(context)

    def apply(self, module: Any) -> Any:
        self.load_dialects(module.context)
        module.context.emit_error_diagnostics = True
        pm = self.build.passmanager.PassManager()
        pm.add(self.run, self.name, argument=self.name, description=self.description,
               op_name=self.op_name)
        _prepare_pass_manager(self, pm)
        pm.run(module.operation)
        return module


@dataclass(repr=False)
class FunctionStage(Stage):
    """A Python function of a module; returns a module, or None after changing it in place."""

    name: str
    fn: Callable[[Any], Any]
    build: Build = Build.TORCH_MLIR

    def apply(self, module: Any) -> Any:
        return self.fn(module)
