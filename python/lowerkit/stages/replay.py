"""Replay scripts: a failing stage whose code is Python, rebuilt in a fresh interpreter.

A stage of Python code (a Python pass, a function, rewrite patterns, a PDL or transform
stage with Python parts) cannot be named on an opt tool's command line. So beside its saved
input lowerkit writes ``NAME-DIGEST.replay.py``: it imports the user's modules by path,
rebuilds the stage from its fields and runs it on the saved input. It exits 1 with the
stage's error when the failure reproduces, 0 when it does not, 2 when it cannot rebuild it.

A stage can be rebuilt when it is a dataclass whose fields are plain values, paths, patterns
and functions defined at the top level of a file. Lambdas, nested functions, code typed at
a prompt and other objects cannot be found again in a fresh process: `script_for` raises
`NoReplay` saying which field holds what.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import importlib.util
import inspect
import os
import shlex
import sys
import types
from pathlib import Path
from typing import Any

from ..dialects.irdl import dialects_used_in, load_dialects
from ..errors import LowerkitError
from ..ir import Build
from .pattern import Pattern

MAIN_ALIAS = "__lowerkit_replay_main__"  # the user's script, imported without running its main


class NoReplay(Exception):
    """Why no replay command can be given for a stage."""


class _Writer:
    """Python source for a stage's fields; remembers which modules the source needs."""

    def __init__(self, stage_name: str):
        self.stage_name = stage_name
        self.modules: dict[tuple[str, str | None], str] = {}  # (module name, file) -> variable

    def module_var(self, name: str, file: str | None) -> str:
        key = (name, file)
        if key not in self.modules:
            self.modules[key] = f"m{len(self.modules)}"
        return self.modules[key]

    def ref(self, obj: Any, where: str) -> str:
        """An expression that finds ``obj`` (a function or class) again by module and name."""
        qualname = getattr(obj, "__qualname__", None)
        module_name = getattr(obj, "__module__", None)
        what = f"{where} of stage '{self.stage_name}'"
        if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
            raise NoReplay(f"{what} is a lambda, which a fresh process cannot find by name; "
                           "define it with `def` at the top level of a file")
        if not qualname or not module_name:
            raise NoReplay(f"{what} is a {type(obj).__name__}, not a function or class that a "
                           "fresh process can import by name")
        if "<locals>" in qualname:
            raise NoReplay(f"{what} ({qualname}) is defined inside a function, so a fresh process "
                           "cannot import it; move it to the top level of its file")
        module = sys.modules.get(module_name)
        found = module
        for part in qualname.split("."):
            found = getattr(found, part, None)
        suffix = ""
        if isinstance(found, Pattern) and found.fn is obj:  # @pattern replaced the function
            suffix = ".fn"
        elif found is not obj:
            raise NoReplay(f"{what} ({module_name}.{qualname}) is not what its module holds "
                           "under that name, so a fresh process would find something else")
        file = None
        if module_name == "__main__" or not _importable(module_name):
            file = _source_file(module, what)
            if module_name == "__main__":
                _check_main_is_guarded(file)
        return f"{self.module_var(module_name, file)}.{qualname}{suffix}"

    def expr(self, value: Any, where: str) -> str:
        if isinstance(value, str) and "\n" not in value and value.endswith(".mlir") and \
                not os.path.isabs(value) and Path(value).is_file():
            return repr(str(Path(value).resolve()))  # a script named by a relative path
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return repr(value)
        if isinstance(value, enum.Enum):
            return f"{self.ref(type(value), where)}({value.value!r})"
        if isinstance(value, Path):  # relative to the user's directory, not the replay's
            return f"Path({str(value.resolve())!r})"
        if isinstance(value, Pattern):
            return (f"Pattern({value.root!r}, {self.ref(value.fn, where + ' (pattern function)')}, "
                    f"{value.benefit!r})")
        if isinstance(value, (list, tuple)):
            items = [self.expr(v, f"{where}[{i}]") for i, v in enumerate(value)]
            if isinstance(value, list):
                return f"[{', '.join(items)}]"
            return f"({', '.join(items)},)" if items else "()"
        if isinstance(value, dict):
            items = [f"{k!r}: {self.expr(v, f'{where}[{k!r}]')}" for k, v in value.items()
                     if isinstance(k, str)]
            if len(items) != len(value):
                raise NoReplay(f"{where} of stage '{self.stage_name}' has keys that are not strings")
            return "{" + ", ".join(items) + "}"
        if isinstance(value, (types.FunctionType, type)):
            return self.ref(value, where)
        raise NoReplay(f"{where} of stage '{self.stage_name}' holds a {type(value).__name__}, "
                       "which a replay script cannot rebuild")


def _importable(module_name: str) -> bool:
    """Whether a fresh interpreter with the same installed packages imports this module by
    name: lowerkit's own and installed packages, not a user's file found through sys.path[0]."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if file is None:
        return module is not None  # a built-in module
    top = sys.modules.get(module_name.partition(".")[0])
    roots = [Path(p).resolve() for p in getattr(top, "__path__", [])] or [Path(file).resolve().parent]
    return any("site-packages" in r.parts or "dist-packages" in r.parts for r in roots) or \
        module_name.partition(".")[0] == "lowerkit"


def _source_file(module: Any, what: str) -> str:
    file = getattr(module, "__file__", None)
    if not file or not Path(file).is_file():
        raise NoReplay(f"{what} was defined at an interactive prompt or in a notebook, not in a "
                       "file a fresh process can import; put it in a .py file")
    return str(Path(file).resolve())


def _check_main_is_guarded(file: str) -> None:
    """The replay imports the user's script; refuse if that would run the failing compile again
    (the call is at the script's top level, outside ``if __name__ == "__main__":``)."""
    frames = [f for f in inspect.stack(0) if f.frame.f_code.co_name == "<module>"
              and f.frame.f_globals.get("__name__") == "__main__"
              and str(Path(f.filename).resolve()) == file]
    if not frames:
        return
    line = frames[-1].lineno
    tree = ast.parse(Path(file).read_text(), file)
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and \
                "__main__" in ast.unparse(node.test) and node.lineno <= line <= (node.end_lineno or 0):
            return
    raise NoReplay(f"the stage ran from the top level of {file} (line {line}); a replay imports "
                   "that file, which would run it again. Put that code under "
                   "`if __name__ == \"__main__\":`")


def script_for(stage: Any, reproducer: Path) -> str:
    """The source of a replay script running ``stage`` on ``reproducer``; raises NoReplay."""
    if not dataclasses.is_dataclass(stage):
        raise NoReplay(f"stage '{stage.name}' is a {type(stage).__name__}, which is not a "
                       "dataclass, so lowerkit cannot rebuild it from its fields")
    writer = _Writer(stage.name)
    fields = [f"{f.name}={writer.expr(getattr(stage, f.name), f'field {f.name!r}')}"
              for f in dataclasses.fields(stage) if f.init]
    cls = writer.ref(type(stage), "the class")
    loads = [f"{var} = load_module({name!r}, {file!r})" for (name, file), var in writer.modules.items()]
    return "\n".join([
        f"#!{sys.executable}",
        f'"""Replay stage {stage.name!r} ({type(stage).__name__}) on its saved input.',
        "",
        "Exits 1 with the stage's error if it fails again, 0 if it does not, 2 if it cannot",
        "rebuild the stage or read the input.",
        '"""',
        "import sys",
        "from pathlib import Path",
        "",
        "from lowerkit.stages.replay import cannot_rebuild, load_module, run",
        "from lowerkit.stages.pattern import Pattern",
        "",
        "try:",
        *(f"    {line}" for line in loads),
        f"    stage = {cls}(",
        *(f"        {f}," for f in fields),
        "    )",
        "except Exception as e:",
        f"    sys.exit(cannot_rebuild({stage.name!r}, e))",
        f"sys.exit(run(stage, {str(reproducer)!r}))",
        "",
    ])


def write_script(stage: Any, reproducer: Path) -> tuple[Path, str]:
    """Write the replay script beside ``reproducer``; returns it and the command that runs it."""
    source = script_for(stage, reproducer)
    path = reproducer.with_suffix(".replay.py")
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(source)
    os.replace(tmp, path)
    return path, f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def load_module(name: str, file: str | None) -> Any:
    """Import a module by name, or a user's file by path (a script without running its main)."""
    if file is None:
        return importlib.import_module(name)
    if name == "__main__":
        name = MAIN_ALIAS
    elif name in sys.modules and getattr(sys.modules[name], "__file__", None) == file:
        return sys.modules[name]
    if "." in name:  # a module of the user's package: import it from the package's root
        root = Path(file).parent
        for _ in range(name.count(".") + (Path(file).name == "__init__.py")):
            root = root.parent
        sys.path.insert(0, str(root))
        module = importlib.import_module(name)
        if str(Path(module.__file__).resolve()) != file:
            raise ImportError(f"imported {name} from {module.__file__}, not {file}")
        return module
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(Path(file).parent))  # the file's own imports of its neighbours
    spec.loader.exec_module(module)
    return module


def cannot_rebuild(name: str, error: Exception) -> int:
    """Exit status 2 and why: the replay itself failed, so it says nothing about the stage."""
    import traceback

    traceback.print_exception(error)
    print(f"replay: cannot rebuild stage '{name}': {type(error).__name__}: {error}", file=sys.stderr)
    return 2


def run(stage: Any, reproducer: str) -> int:
    """Parse the saved input in the stage's build and run the stage: 1 and its error if it
    fails, 0 if it does not."""
    try:
        text = Path(reproducer).read_text()
        ir = stage.build.ir
        ctx = ir.Context()
        if stage.build is Build.TORCH_MLIR:
            from torch_mlir.dialects import torch as torch_dialect

            torch_dialect.register_dialect(ctx)
        load_dialects(ctx, dict.fromkeys([*getattr(stage, "dialects", ()), *dialects_used_in(text)]))
        module = ir.Module.parse(text, ctx)
    except Exception as e:
        return cannot_rebuild(stage.name, e)
    try:
        stage(module)
    except LowerkitError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"stage '{stage.name}' ran on {reproducer} without failing: the failure did not "
          "reproduce", file=sys.stderr)
    return 0
