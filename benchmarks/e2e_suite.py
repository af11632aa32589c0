"""torch-mlir's e2e test suite (``torch_mlir_e2e_test``) run through lowerkit, one test at a time
in long-lived worker processes, each test's result judged against its eager golden trace with
the suite's own tolerances.

    PYTHONPATH=python .venv/bin/python benchmarks/e2e_suite.py --torch-mlir /tmp/torch-mlir-src \\
        --via backend --jobs 2 --check-export \\
        --json benchmarks/results/e2e-backend.json --expectations test/e2e/expectations_backend.py

``--torch-mlir`` (or ``$LOWERKIT_TORCH_MLIR``) is a folder holding ``projects/pt1/python`` of a
torch-mlir checkout (``git archive HEAD projects/pt1 | tar -x -C DIR`` is enough), or that
``python`` folder itself.

Per test, in a worker:

1. golden: the suite's ``generate_golden_trace`` (the module run eagerly, as the native_torch
   config does); an exception there is ``eager-fails``, left out of the pass rate.
2. the module again (a fresh one from the program factory), through lowerkit:
   ``--via backend``: ``torch.compile(module, backend="lowerkit", options={"strict": True})``
   after ``torch._dynamo.reset()``, called on every trace item's inputs. ``strict`` makes a
   graph lowerkit cannot take raise instead of running eagerly; Dynamo's recompile limit raises
   too (``fail_on_recompile_limit_hit``), so nothing falls back to eager unseen.
   ``--via compile``: ``lowerkit.compile(module, first_inputs, target="cpu",
   dynamic_shapes=...)`` with every ``-1`` of the suite's ``annotate_args`` as
   ``torch.export.Dim.AUTO`` (``--dynamic static``: none); the artifact is then called on every trace item's inputs.
3. outputs compared with the suite's ``reporting.TraceItemReport`` (rtol 1e-3, atol 1e-7,
   equal NaNs, exact shapes, dtypes and ints).

Outcomes: ``pass``; ``mismatch`` (ran, wrong answer); ``error`` with a stage (lowerkit's
stage from its message ``stage 'X' failed``, ``iree-compile``, ``runtime``, or ``dynamo`` /
``aot_autograd`` for torch.compile's own front end); ``no-graph`` (the backend matched, but
Dynamo gave lowerkit no graph: nothing was lowered; not a pass); ``no-work`` (no graph, and
the program run eagerly again dispatches no ATen op on a tensor: it returns its inputs,
constants or Python scalars, or reads only sizes, so there was nothing for any compiler to
lower; left out of the pass rate like ``eager-fails``); ``fallback`` (a graph ran
eagerly although strict; not a pass); ``timeout`` and ``crash`` (the worker is killed or died;
a fresh one takes the next test); ``eager-fails``.

``--check-export`` also runs ``torch.export.export`` on each test's module with its first
inputs and records whether it raised ``GuardOnDataDependentSymNode`` (data-dependent control
flow or sizes: what the backend must handle where ``lowerkit.compile`` cannot).

Deviations from upstream's runner, all deliberate: each program factory is called right after
``torch.manual_seed(0)`` (upstream calls it with whatever RNG state earlier tests left, which
differs between a pool worker's tests); golden and compiled runs are under ``torch.no_grad()``
(upstream's fx_importer config runs its compiled code so); upstream's float comparison divides
by the golden value, so a golden ``0.0`` compares exactly here instead of dividing by zero.
Missing optional imports of the suite are shimmed (see `install_shims`): ``multiprocess`` (only
upstream's own pool runner uses it), ``torch_mlir._version`` (imported, unused, by
``test_suite/__init__.py``) and, when absent, ``torchvision``, whose tests then fail eagerly
with a reason naming it (``eager-fails``). An installed torchvision whose C++ ops do not load
(the registry's CUDA wheel beside the CPU torch) is imported after
`lowerkit.zoo.ecosystem.patch_torchvision`; the tests that call its ops fail eagerly.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parents[1]
ENV_TORCH_MLIR = "LOWERKIT_TORCH_MLIR"
# set by --capture-scalars for the workers (processes this one starts inherit it)
ENV_CAPTURE_SCALARS = "LOWERKIT_E2E_CAPTURE_SCALARS"
# set by --capture-dynamic-shapes: Dynamo's capture_dynamic_output_shape_ops (nonzero, x[mask])
ENV_CAPTURE_DYNAMIC = "LOWERKIT_E2E_CAPTURE_DYNAMIC_SHAPES"

# Outcomes in report order; the pass rate is pass / (all - eager-fails - no-work).
OUTCOMES = ("pass", "mismatch", "error", "fallback", "no-graph", "no-work", "timeout", "crash",
            "eager-fails")
# no-work: the program computes no tensor (see `eager_tensor_ops`), so no compiler has anything
# to do there: counted apart, as a run that failed eagerly is. A no-graph test that does compute
# (Dynamo refused its tensor work) stays in the denominator, not passing.
NOT_IN_DENOMINATOR = ("eager-fails", "no-work")

GUARD_DD = "GuardOnDataDependentSymNode"
SHIM_TORCHVISION = "torchvision is not installed (e2e_suite shim)"


# --------------------------------------------------------------------------------------------
# The suite: where it is, shims for imports it does not need here, the registry.


def suite_python_dir(torch_mlir: str | os.PathLike) -> Path:
    """The folder holding the ``torch_mlir_e2e_test`` package."""
    base = Path(torch_mlir).expanduser().resolve()
    for candidate in (base / "projects" / "pt1" / "python", base):
        if (candidate / "torch_mlir_e2e_test" / "registry.py").is_file():
            return candidate
    raise SystemExit(f"no torch_mlir_e2e_test package under {base} (expected "
                     f"{base}/projects/pt1/python/torch_mlir_e2e_test)")


class _AbsentModule(types.ModuleType):
    """A placeholder for a package that is not installed: importable, any use raises."""

    def __init__(self, name: str, reason: str):
        super().__init__(name)
        self.__path__ = []  # a package, so that `import name.sub` finds the registered children
        self._reason = reason

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"{self._reason}: {self.__name__}.{attr}")


def install_shims() -> list[str]:
    """Stand-ins for modules the suite imports but this runner does not use; returns what was
    shimmed. Each is honest about what it is: nothing here pretends to compute anything."""
    import importlib
    import importlib.metadata as md
    import importlib.util

    shimmed = []
    if importlib.util.find_spec("multiprocess") is None:
        # framework.py imports it at the top for its own pool runner (run_tests), unused here
        import multiprocessing

        sys.modules["multiprocess"] = multiprocessing
        shimmed.append("multiprocess=multiprocessing")
    try:
        importlib.import_module("torch_mlir._version")
    except ImportError:
        # test_suite/__init__.py imports these names and uses neither
        mod = types.ModuleType("torch_mlir._version")
        try:
            mod.version = md.version("torch-mlir")
        except md.PackageNotFoundError:
            mod.version = "unknown"

        def torch_version_for_comparison():
            import torch
            from packaging import version

            return version.parse(torch.__version__.split("+")[0])

        mod.torch_version_for_comparison = torch_version_for_comparison
        sys.modules["torch_mlir._version"] = mod
        shimmed.append("torch_mlir._version")
    if isinstance(sys.modules.get("torchvision"), _AbsentModule):
        shimmed.append("torchvision (absent: its tests fail eagerly)")  # shimmed before
    elif importlib.util.find_spec("torchvision") is not None:
        # the registry's CUDA wheel: its C++ ops do not load beside the CPU torch, so `import
        # torchvision` needs their schemas first; tests that call those ops then fail eagerly
        from lowerkit.zoo.ecosystem import patch_torchvision

        if patch_torchvision():
            shimmed.append("torchvision (C++ ops absent: nms, deform_conv2d fail eagerly)")
    else:
        top = _AbsentModule("torchvision", SHIM_TORCHVISION)
        sys.modules["torchvision"] = top
        for sub in ("models", "ops", "transforms"):
            child = _AbsentModule(f"torchvision.{sub}", SHIM_TORCHVISION)
            sys.modules[child.__name__] = child
            object.__setattr__(top, sub, child)
        shimmed.append("torchvision (absent: its tests fail eagerly)")
    return shimmed


@dataclass
class Suite:
    tests: dict            # unique_name -> framework.Test
    framework: Any
    reporting: Any
    shims: list
    unloaded: dict         # test_suite module -> why it did not import


def load_suite(torch_mlir: str | os.PathLike) -> Suite:
    """Import the suite and register every test of ``register_all_tests``, module by module (a
    module that fails to import is recorded, not fatal)."""
    import importlib

    pydir = suite_python_dir(torch_mlir)
    if str(pydir) not in sys.path:
        sys.path.insert(0, str(pydir))
    shims = install_shims()
    framework = importlib.import_module("torch_mlir_e2e_test.framework")
    registry = importlib.import_module("torch_mlir_e2e_test.registry")
    reporting = importlib.import_module("torch_mlir_e2e_test.reporting")
    init = (pydir / "torch_mlir_e2e_test" / "test_suite" / "__init__.py").read_text()
    body = init.split("def register_all_tests", 1)[-1]
    unloaded = {}
    for name in re.findall(r"^\s+from \. import (\w+)", body, re.M):
        try:
            importlib.import_module(f"torch_mlir_e2e_test.test_suite.{name}")
        except Exception as e:  # noqa: BLE001 - recorded, the rest of the suite still runs
            unloaded[name] = f"{type(e).__name__}: {e}"
    tests = {t.unique_name: t for t in registry.GLOBAL_TEST_REGISTRY}
    return Suite(tests, framework, reporting, shims, unloaded)


def select_tests(names: Iterable[str], pattern: str | None = None, sample: int | None = None,
                 seed: int = 0) -> list[str]:
    """Sorted names matching ``pattern`` (re.search), then a reproducible random sample."""
    import random

    chosen = sorted(n for n in names if pattern is None or re.search(pattern, n))
    if sample is not None and sample < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, sample))
    return chosen


# --------------------------------------------------------------------------------------------
# Judging one test: comparison, error stages, outcomes (pure functions, unit-tested without
# the suite).


def _first_line(text: str, limit: int = 300) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def compare_value(value: Any, golden: Any, where: str = "output") -> list[str]:
    """The suite's ``reporting.ValueReport`` rules, for use without the suite (and where its
    float rule divides by zero): the failures, empty when ``value`` matches ``golden``."""
    import torch

    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    if isinstance(golden, tuple) and len(golden) == 1:
        golden = golden[0]
    if isinstance(golden, float):
        if not isinstance(value, float):
            return [f"{where}: expected a float, got {type(value).__name__}"]
        if golden == 0.0 or math.isnan(golden):
            ok = value == golden or (math.isnan(golden) and math.isnan(value))
        else:
            ok = abs(value - golden) / abs(golden) <= 1e-4
        return [] if ok else [f"{where}: {value!r} is not close to golden {golden!r}"]
    if isinstance(golden, (bool, int, str)):
        if not isinstance(value, type(golden)) and not (
                isinstance(golden, int) and isinstance(value, int)):
            return [f"{where}: expected {type(golden).__name__}, got {type(value).__name__}"]
        return [] if value == golden else [f"{where}: {value!r} != golden {golden!r}"]
    if isinstance(golden, (tuple, list)):
        if not isinstance(value, type(golden)):
            return [f"{where}: expected a {type(golden).__name__}, got {type(value).__name__}"]
        if len(value) != len(golden):
            return [f"{where}: {len(value)} elements, golden has {len(golden)}"]
        return [f for i, (v, g) in enumerate(zip(value, golden))
                for f in compare_value(v, g, f"{where}[{i}]")]
    if isinstance(golden, dict):
        if not isinstance(value, dict) or sorted(value) != sorted(golden):
            return [f"{where}: dict keys differ from golden's"]
        return [f for k in sorted(golden) for f in compare_value(value[k], golden[k], f"{where}[{k!r}]")]
    if isinstance(golden, torch.Tensor):
        if not isinstance(value, torch.Tensor):
            return [f"{where}: expected a tensor, got {type(value).__name__}"]
        if value.shape != golden.shape:
            return [f"{where}: shape {tuple(value.shape)} != golden {tuple(golden.shape)}"]
        if value.dtype != golden.dtype:
            return [f"{where}: dtype {value.dtype} != golden {golden.dtype}"]
        if not torch.allclose(value, golden, rtol=1e-03, atol=1e-07, equal_nan=True):
            return [f"{where}: values differ: {_tensor_summary(value)} vs golden {_tensor_summary(golden)}"]
        return []
    if golden is None:
        return [] if value is None else [f"{where}: expected None, got {type(value).__name__}"]
    return [f"{where}: unexpected golden value of type {type(golden).__name__}"]


def _tensor_summary(t) -> str:
    import torch

    if t.numel() == 0:
        return f"{tuple(t.shape)} {t.dtype} (empty)"
    d = t.detach().to(torch.float64)
    return (f"{tuple(t.shape)} {t.dtype} min={d.min().item():+.4g} max={d.max().item():+.4g} "
            f"mean={d.mean().item():+.4g}")


def compare_traces(golden: list, actual: list, reporting: Any = None) -> list[str]:
    """Failures of ``actual`` against ``golden`` (lists of TraceItem-likes with ``symbol`` and
    ``output``): with the suite's ``reporting`` module when given, else `compare_value`."""
    if len(actual) != len(golden):
        return [f"{len(actual)} calls, golden has {len(golden)}"]
    failures = []
    for i, (item, gold) in enumerate(zip(actual, golden)):
        where = f"call #{i} ({gold.symbol})"
        if reporting is not None:
            try:
                report = reporting.ValueReport(item.output, gold.output,
                                               reporting.ErrorContext([where]))
                failures += [_squash(f) for f in report.failure_reasons]
                continue
            except ZeroDivisionError:
                pass  # upstream's float rule on a golden 0.0: compare as below
        failures += compare_value(item.output, gold.output, f"{where} output")
    return failures


def _squash(text: str) -> str:
    return " ".join(l.strip() for l in text.splitlines() if l.strip())


_STAGE_RE = re.compile(r"stage '([^']+)' failed")


def _chain(exc: BaseException) -> list[BaseException]:
    seen, out = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _tb_files(exc: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(exc.__traceback__)]


_OWNERS = (("/lowerkit/", "lowerkit-unwrapped"), ("/torch/_functorch/", "aot_autograd"),
           ("/torch/_dynamo/", "dynamo"))
_PASS_THROUGH = ("/torch/_dynamo/eval_frame.py", "/torch/_compile.py",
                 "/torch/_dynamo/external_utils.py")


def _deepest_owner(files: list[str]) -> str | None:
    """The stage of the deepest frame that lowerkit, aot_autograd or Dynamo owns."""
    for f in reversed([f.replace(os.sep, "/") for f in files]):
        if any(f.endswith(p) for p in _PASS_THROUGH):
            continue
        for part, owner in _OWNERS:
            if part in f:
                return owner
    return None


def classify_error(exc: BaseException) -> tuple[str, str]:
    """(stage, first line) of a failure: lowerkit's stage where lowerkit raised (its stage
    errors say ``stage 'X' failed``; iree-compile is a stage of its own; a program that fails at
    run time is ``runtime``); else whose code raised it: ``lowerkit-unwrapped`` (an exception
    that is not a LowerkitError out of lowerkit's code), ``aot_autograd`` or ``dynamo``;
    else ``other``."""
    chain = _chain(exc)
    for e in chain:
        mod = type(e).__module__ or ""
        if mod.startswith("lowerkit") or "LowerkitError" in {c.__name__ for c in type(e).__mro__}:
            stage = getattr(e, "stage", None)
            msg = str(e)
            if stage is None:
                m = _STAGE_RE.search(msg)
                if m:
                    stage = m.group(1)
                elif "failed at run time" in msg:
                    stage = "runtime"
                elif "iree-compile" in msg:
                    stage = "iree-compile"
                elif type(e).__name__ == "InputError":
                    stage = "call-signature"
                else:
                    stage = "lowerkit"
            line = _first_line(msg)
            diags = getattr(e, "diagnostics", None) or []
            if diags:
                # the first error on an op says more than the count in the summary line
                first = re.sub(r"^\S+:\d+(:\d+)?: ", "", _first_line(str(diags[0]), 400))
                line = f"{line} | {first}"
            return stage, line
    text = "\n".join(str(e) for e in chain)
    root = chain[-1]
    line = f"{type(root).__name__}: {_first_line(str(root))}"
    m = _STAGE_RE.search(text)
    if m:
        return m.group(1), _first_line(text[m.start():])
    if "iree-compile" in text:
        return "iree-compile", line
    # Not lowerkit's own error: whose code raised it is the deepest frame of lowerkit,
    # aot_autograd (torch/_functorch) or Dynamo, Dynamo's disable wrappers not counted
    # (an op run under aot_autograd passes through them).
    for e in reversed(chain):
        owner = _deepest_owner(_tb_files(e))
        if owner is not None:
            return owner, line
    if any((type(e).__module__ or "").startswith("torch._dynamo") for e in chain):
        return "dynamo", line
    return "other", line


def decide_outcome(error: BaseException | None, failures: list[str] | None,
                   graphs: list[dict] | None) -> tuple[str, str | None, str | None]:
    """(outcome, stage, reason) of a test whose eager run worked: an exception is an error at
    its stage; any failure of the comparison a mismatch; a graph that ran eagerly a fallback;
    a match where no ATen op reached lowerkit (``graphs == []``, or only graphs without a
    call; None when not counted, as for ``lowerkit.compile``) is no-graph. Only what remains
    passes."""
    if error is not None:
        stage, line = classify_error(error)
        return "error", stage, line
    if failures:
        return "mismatch", "run", failures[0][:500]
    if graphs is not None:
        eager = [g for g in graphs if g.get("ran") != "lowerkit"]
        if eager:
            return "fallback", "backend", _first_line(eager[0].get("reason") or "ran eagerly")
        if not graphs:
            return "no-graph", "dynamo", "Dynamo gave lowerkit no graph: nothing was lowered"
        if all(g.get("ops", 1) == 0 for g in graphs):
            return "no-graph", "dynamo", ("Dynamo gave lowerkit only graphs without an ATen op: "
                                          "nothing was lowered")
    return "pass", None, None


# --------------------------------------------------------------------------------------------
# The worker: runs tests named on stdin, one JSON line each on its protocol channel.


def eager_tensor_ops(test: Any, golden: list) -> list[str]:
    """The ATen ops on a tensor (one among their arguments or results) that ``test``'s program
    dispatches, run eagerly again (a fresh module, seed 0) on each golden item's inputs: empty
    for a program that only returns its inputs, constants or Python scalars, or reads only
    sizes and dtypes, which no compiler has anything to lower for. Reading a tensor's data into
    a Python number (``int(t)``: ``_local_scalar_dense``) counts. Inputs are cloned outside the
    recording, so only the program's own ops count."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            # every op that reaches a dispatch mode is on a tensor, an argument or its result;
            # ops on Python scalars alone (aten.Bool, aten.add.int, aten.all.bool) never do
            if str(func) not in seen:
                seen.append(str(func))
            return out

    torch.manual_seed(0)
    module = test.program_factory()
    for item in golden:
        inputs = _clone(item.inputs)
        with torch.no_grad(), Record():
            _resolve(module, item.symbol)(*inputs)
    return seen


def split_no_graph(rec: dict, test: Any, golden: list, reason: str) -> tuple[str, str, str]:
    """A no-graph test's (outcome, stage, reason): did Dynamo refuse tensor work (no-graph,
    counted), or was there none (no-work)? The ops seen go into ``rec``."""
    try:
        ops = eager_tensor_ops(test, golden)
    except Exception as e:  # noqa: BLE001  (unknown: stays no-graph, counted)
        rec["eager_tensor_ops"] = f"not known: {type(e).__name__}: {_first_line(str(e))}"
        return "no-graph", "dynamo", reason
    rec["eager_tensor_ops"] = ops[:8]
    if ops:
        return "no-graph", "dynamo", reason
    return "no-work", "eager", ("no tensor computed: run eagerly, the program dispatches no "
                                f"ATen op on a tensor (Dynamo: {reason})")


def judge(rec: dict, error: BaseException | None, failures: list[str] | None,
          graphs: list[dict] | None, test_and_golden: Callable[[], tuple] | None) -> tuple:
    """`decide_outcome`, with a no-graph test's first graph break in its reason and, when
    ``test_and_golden`` gives the test and its golden trace, split by `split_no_graph`."""
    outcome, stage, reason = decide_outcome(error, failures, graphs)
    if outcome != "no-graph":
        return outcome, stage, reason
    if rec.get("graph_breaks"):
        reason = f"{reason}; graph break: {rec['graph_breaks'][0]}"
    if test_and_golden is None:
        return outcome, stage, reason
    return split_no_graph(rec, *test_and_golden(), reason)


def golden_trace(suite: Suite, test: Any) -> list:
    """The suite's golden trace of ``test`` (the module run eagerly, seed 0), inputs and
    outputs cloned."""
    import torch

    torch.manual_seed(0)
    with torch.no_grad():
        golden = suite.framework.generate_golden_trace(test)
    return [type(g)(g.symbol, _clone(g.inputs), _clone(g.output)) for g in golden]


def _clone(v: Any) -> Any:
    import torch

    if isinstance(v, torch.Tensor):
        return v.clone()
    if isinstance(v, tuple):
        return tuple(_clone(x) for x in v)
    if isinstance(v, list):
        return [_clone(x) for x in v]
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    return v


def _resolve(module: Any, symbol: str) -> Any:
    obj = module
    for part in symbol.split("."):
        obj = getattr(obj, part)
    return obj


def _dynamic_shapes(method: Callable, inputs: list, mode: str = "auto") -> tuple | None:
    """torch.export's ``dynamic_shapes`` from the suite's ``annotate_args``: each ``-1`` dim of
    a tensor argument as ``Dim.AUTO`` (dynamic unless the program needs it static); None for
    ``mode == "static"``."""
    import torch

    annotations = getattr(method, "_torch_mlir_arg_annotations", None)
    if not annotations or mode == "static":
        return None
    specs, any_dynamic = [], False
    for i, value in enumerate(inputs):
        ann = annotations[i + 1] if i + 1 < len(annotations) else None
        if isinstance(value, torch.Tensor) and ann is not None and ann[0] is not None:
            dims = {d: torch.export.Dim.AUTO for d, size in enumerate(ann[0])
                    if size == -1 and d < value.dim()}
            any_dynamic |= bool(dims)
            specs.append(dims or None)
        else:
            specs.append(None)
    return tuple(specs) if any_dynamic else None


@dataclass
class Worker:
    suite: Suite
    via: str
    check_export: bool
    dynamic: str = "auto"

    def run(self, name: str, phase: Callable[..., None] = lambda *a, **k: None) -> dict:
        """One test's record; ``phase(name, partial=None)`` is told where it is (the parent's
        timeout says which phase did not finish)."""
        import torch

        test = self.suite.tests[name]
        phase("eager")
        rec: dict = {"name": name, "outcome": None, "stage": None, "reason": None}
        start = time.perf_counter()
        # 1. golden, the suite's own way (the module run eagerly)
        try:
            golden = golden_trace(self.suite, test)
        except Exception as e:  # noqa: BLE001
            rec.update(outcome="eager-fails", stage="eager",
                       reason=f"{type(e).__name__}: {_first_line(str(e))}")
            rec["seconds"] = round(time.perf_counter() - start, 3)
            return rec
        rec["calls"] = len(golden)
        phase("lowerkit")
        # 2. the module again, through lowerkit
        error, failures, graphs, actual = None, None, None, []
        try:
            if self.via == "backend":
                actual, graphs, breaks = self._via_backend(test, golden)
                rec["graph_breaks"] = breaks
            else:
                actual = self._via_compile(test, golden)
        except Exception as e:  # noqa: BLE001
            error = e
            rec["traceback"] = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:]
            if self.via == "backend":
                graphs = self._graphs()
        if error is None:
            failures = compare_traces(golden, actual, self.suite.reporting)
            rec["failures"] = failures[:5]
        outcome, stage, reason = judge(rec, error, failures, graphs, lambda: (test, golden))
        rec.update(outcome=outcome, stage=stage, reason=reason)
        if graphs is not None:
            rec["graphs"] = graphs
        rec["seconds"] = round(time.perf_counter() - start, 3)
        # 3. torch.export on the same program, for the data-dependent count
        if self.check_export:
            phase("export", partial=rec)
            rec["export"] = self._export(test, golden)
        return rec

    def _graphs(self) -> list[dict]:
        from lowerkit import backend as lk

        return [{"kind": g.kind, "ops": g.ops, "ran": g.ran, "seconds": round(g.seconds, 3),
                 "reason": _first_line(g.reason) if g.reason else None} for g in lk.graphs()]

    def _via_backend(self, test, golden):
        import torch
        from lowerkit import backend as lk
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        lk.reset()
        counters.clear()
        torch.manual_seed(0)
        module = test.program_factory()
        options = {"strict": True}
        compiled_forward = torch.compile(module, backend="lowerkit", options=options)
        actual = []
        capture = os.environ.get(ENV_CAPTURE_SCALARS) == "1"  # --capture-scalars
        dynamic = os.environ.get(ENV_CAPTURE_DYNAMIC) == "1"  # --capture-dynamic-shapes
        for item in golden:
            fn = compiled_forward if item.symbol == "forward" else torch.compile(
                _resolve(module, item.symbol), backend="lowerkit", options=options)
            with torch.no_grad(), torch._dynamo.config.patch(
                    capture_scalar_outputs=capture, capture_dynamic_output_shape_ops=dynamic):
                out = fn(*_clone(item.inputs))
            actual.append(types.SimpleNamespace(symbol=item.symbol, output=_clone(out)))
        breaks = [_first_line(str(k), 200) for k in counters["graph_break"]]
        return actual, self._graphs(), breaks

    def _via_compile(self, test, golden):
        import torch
        import lowerkit

        torch.manual_seed(0)
        module = test.program_factory()
        arts: dict = {}
        actual = []
        for item in golden:
            if item.symbol not in arts:
                fn = module if item.symbol == "forward" else _resolve(module, item.symbol)
                method = module.forward if item.symbol == "forward" else fn
                arts[item.symbol] = lowerkit.compile(
                    fn, tuple(_clone(item.inputs)), target="cpu",
                    dynamic_shapes=_dynamic_shapes(method, item.inputs, self.dynamic))
            with torch.no_grad():
                out = arts[item.symbol](*_clone(item.inputs))
            actual.append(types.SimpleNamespace(symbol=item.symbol, output=_clone(out)))
        return actual

    def _export(self, test, golden) -> dict:
        import torch

        first = next((g for g in golden if g.symbol == "forward"), None)
        if first is None:
            return {"result": "skipped", "reason": "no forward call in the trace"}
        try:
            torch.manual_seed(0)
            module = test.program_factory()
            with torch.no_grad():
                torch.export.export(module, tuple(_clone(first.inputs)))
            return {"result": "ok"}
        except Exception as e:  # noqa: BLE001
            chain = _chain(e)
            dd = any(type(x).__name__ == GUARD_DD for x in chain) or any(
                GUARD_DD in str(x) or "Could not guard on data-dependent" in str(x)
                or "Could not extract specialized integer from data-dependent" in str(x)
                for x in chain)
            return {"result": GUARD_DD if dd else "error",
                    "reason": f"{type(e).__name__}: {_first_line(str(e))}"}


# --------------------------------------------------------------------------------------------
# The suite as a batch job of lowerkit's executor (--executor inprocess | ray): one item a test.

# the runner's outcome -> the executor's status
E2E_STATUS = {"pass": "ok", "eager-fails": "ok", "mismatch": "fail", "error": "fail",
              "fallback": "fail", "no-graph": "fail", "no-work": "ok", "timeout": "timeout",
              "crash": "crash"}


def _job_base():
    from lowerkit.tools.executor import Job

    return Job


@dataclass(frozen=True)
class E2EJob(_job_base()):
    """One e2e test an item (its name), judged as a worker process judges it (`Worker.run`)."""

    torch_mlir: str
    via: str = "backend"
    check_export: bool = False
    dynamic: str = "auto"
    jobs: int = 1

    name = "e2e"

    def setup(self) -> None:
        import torch
        import torch._dynamo.config as dynamo_config

        threads = os.environ.get("OMP_NUM_THREADS")  # Ray sets it to the task's CPUs
        torch.set_num_threads(int(threads) if threads else
                              max(1, (os.cpu_count() or 1) // max(1, self.jobs)))
        dynamo_config.suppress_errors = False
        dynamo_config.fail_on_recompile_limit_hit = True  # never an unseen eager fallback
        import lowerkit.backend  # noqa: F401

        from lowerkit.tools.executor.job import process_state

        process_state(self)["worker"] = Worker(load_suite(self.torch_mlir), self.via,
                                               self.check_export, self.dynamic)

    def run(self, item):
        from lowerkit.tools.executor import Outcome
        from lowerkit.tools.executor.job import process_state

        try:
            rec = process_state(self)["worker"].run(item.key)
        except Exception as e:  # noqa: BLE001 - the runner's own bug: say so, keep going
            rec = {"name": item.key, "outcome": "error", "stage": "runner",
                   "reason": f"{type(e).__name__}: {_first_line(str(e))}"}
        return Outcome(item.key, E2E_STATUS[rec["outcome"]], rec["outcome"], rec.get("stage"),
                       rec.get("reason") or "", (rec.get("traceback") or "")[-2000:],
                       data=rec)


def record_of(outcome) -> dict:
    """The runner's record of a test from its executor outcome (a timeout, a crash or a lost
    worker has no record of the job's own)."""
    if outcome.data.get("outcome"):  # the job's record; its stage is the outcome's
        return {"name": outcome.key, **outcome.data, "stage": outcome.stage,
                "reason": outcome.data.get("reason", outcome.message or None)}
    verdict = {"timeout": "timeout", "crash": "crash"}.get(outcome.status, "crash")
    return {"name": outcome.key, "outcome": verdict,
            "stage": outcome.stage if outcome.status != "infrastructure" else "infrastructure",
            "reason": outcome.message, "log_tail": outcome.log_tail,
            "seconds": outcome.run.get("seconds")}


def run_on_executor(args, names: list[str], on_result: Callable[[dict], None]) -> dict:
    """Every test in ``names`` through lowerkit's executor (``args.executor``); returns the
    executor's description for the run's records."""
    from lowerkit.tools import executor

    job = E2EJob(str(Path(args.torch_mlir).resolve()), args.via, args.check_export,
                 args.dynamic, args.jobs)
    items = [executor.Item(n, timeout_s=args.timeout) for n in names]
    runner = executor.make_executor(args.executor)
    described = runner.describe()
    header = {"journal": "lowerkit e2e_suite",
              "run": {"job": "e2e", "via": args.via, "check_export": args.check_export,
                      "dynamic": args.dynamic, "filter": args.filter, "sample": args.sample,
                      "seed": args.seed, "timeout": args.timeout}}
    executor.run_items(job, items, runner, journal=args.journal, header=header,
                       resume=args.resume, on_outcome=lambda o: on_result(record_of(o)))
    return described


def worker_main(args) -> int:
    """``--worker``: the protocol is one test name a line on stdin, one JSON line back on the
    original stdout; everything the tests and libraries print goes to stderr (a log)."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch
    import torch._dynamo.config as dynamo_config

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, args.jobs)))
    dynamo_config.suppress_errors = False
    dynamo_config.fail_on_recompile_limit_hit = True  # never an unseen eager fallback
    import lowerkit.backend  # noqa: F401 - fails here, not in the first test, if broken

    suite = load_suite(args.torch_mlir)
    worker = Worker(suite, args.via, args.check_export, args.dynamic)
    proto.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        print(f"=== {name}", file=sys.stderr, flush=True)
        def phase(what, partial=None):
            proto.write(json.dumps({"phase": what, "partial": partial}, default=str) + "\n")
            proto.flush()

        try:
            rec = worker.run(name, phase)
        except Exception as e:  # noqa: BLE001 - the runner's own bug: say so, keep going
            rec = {"name": name, "outcome": "error", "stage": "runner",
                   "reason": f"{type(e).__name__}: {_first_line(str(e))}"}
        proto.write(json.dumps(rec, default=str) + "\n")
        proto.flush()
    return 0


# --------------------------------------------------------------------------------------------
# The parent: worker processes, timeouts, crashes.


class WorkerProcess:
    """One worker subprocess (its own process group, so that a kill takes iree-compile and any
    forked stage with it) and its stderr log."""

    STARTUP_TIMEOUT = 300

    def __init__(self, args, log_dir: Path, index: int):
        self.log_path = log_dir / f"worker-{index:03d}.log"
        self.log = open(self.log_path, "w+b")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker",
               "--torch-mlir", str(args.torch_mlir), "--via", args.via, "--jobs", str(args.jobs),
               "--dynamic", args.dynamic]
        if args.check_export:
            cmd.append("--check-export")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, start_new_session=True)
        self.buf = b""
        self.tests_run = 0
        ready = self._read_line(time.monotonic() + self.STARTUP_TIMEOUT)
        if ready is None or not json.loads(ready).get("ready"):
            tail = self.log_tail(0)
            self.kill()
            raise RuntimeError(f"worker did not start:\n{tail}")

    def _read_line(self, deadline: float) -> str | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None  # EOF: the worker died
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def run(self, name: str, timeout: float, eager_timeout: float) -> tuple[str, Any]:
        """("ok", record) | ("timeout", (phase, partial record, log)) | ("crash", (...)).
        The eager phase has its own (upstream's per-test) limit; the whole test ``timeout``."""
        self.log.flush()
        offset = os.path.getsize(self.log_path)
        self.tests_run += 1
        try:
            self.proc.stdin.write((name + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return "crash", ("start", None, self.log_tail(offset))
        start = time.monotonic()
        phase, partial = "start", None
        while True:
            limit = min(timeout, eager_timeout) if phase in ("start", "eager") else timeout
            line = self._read_line(start + limit)
            if line is None:
                break
            msg = json.loads(line)
            if "phase" in msg:
                phase, partial = msg["phase"], msg.get("partial") or partial
                continue
            return "ok", msg
        if self.proc.poll() is None:
            self.kill()
            return "timeout", (phase, partial, self.log_tail(offset))
        self.proc.wait()
        return "crash", (phase, partial, self.log_tail(offset))

    def log_tail(self, offset: int, lines: int = 12) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                self.kill()
        self.log.close()


def _crash_reason(code: int | None, tail: str) -> str:
    sig = ""
    if code is not None and code < 0:
        try:
            sig = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            sig = f"signal {-code}"
    elif code is not None:
        sig = f"exit code {code}"
    keys = ("LLVM ERROR", "Assertion", "Segmentation", "Fatal", "error:", "Error", "Aborted",
            "terminate")
    hint = next((l.strip() for l in reversed(tail.splitlines())
                 if any(k in l for k in keys)), "")
    return "; ".join(x for x in (f"worker died ({sig})" if sig else "worker died", hint[:300]) if x)


def _lost_test(name: str, status: str, payload: tuple, worker: "WorkerProcess", timeout: float,
               eager_limit: float, seconds: float) -> dict:
    """The record of a test whose worker was killed (timeout) or died (crash), by the phase it
    was in: in the eager run it is eager-fails (the program itself does not finish or kills
    Python); in torch.export (--check-export) the lowerkit result already sent is kept."""
    phase, partial, tail = payload
    rec = {"name": name, "outcome": status, "stage": phase, "phase": phase,
           "seconds": round(seconds, 3), "log_tail": tail[-2000:],
           "worker_log": str(worker.log_path)}
    why = (f"no result within {timeout if phase not in ('start', 'eager') else eager_limit:g} s"
           if status == "timeout" else _crash_reason(worker.proc.returncode, tail))
    if phase == "export" and partial:
        rec = dict(partial, export={"result": status, "reason": why})
        return rec
    if phase in ("start", "eager"):
        rec.update(outcome="eager-fails", stage="eager", reason=f"eager run: {status}: {why}")
        return rec
    rec["reason"] = why
    return rec


def run_tests(args, names: list[str], on_result: Callable[[dict], None],
              eager_limits: dict | None = None) -> None:
    """Every test in ``names`` through ``args.jobs`` worker slots; ``eager_limits``: a test's
    own limit for its eager run (upstream's ``timeout_seconds``)."""
    import queue

    eager_limits = eager_limits or {}
    todo: "queue.Queue[str]" = queue.Queue()
    for n in names:
        todo.put(n)
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    counter = iter(range(1 << 30))
    lock = threading.Lock()

    def slot():
        worker = None
        try:
            while True:
                try:
                    name = todo.get_nowait()
                except queue.Empty:
                    return
                if worker is not None and worker.tests_run >= args.max_tests_per_worker:
                    worker.close()
                    worker = None
                if worker is None:
                    with lock:
                        index = next(counter)
                    try:
                        worker = WorkerProcess(args, log_dir, index)
                    except RuntimeError as e:
                        on_result({"name": name, "outcome": "crash", "stage": "worker-start",
                                   "reason": _first_line(str(e).split("\n", 1)[-1] or str(e))})
                        continue
                t0 = time.perf_counter()
                eager_limit = float(eager_limits.get(name) or args.timeout)
                status, payload = worker.run(name, args.timeout, eager_limit)
                if status == "ok":
                    on_result(payload)
                    continue
                on_result(_lost_test(name, status, payload, worker, args.timeout, eager_limit,
                                     time.perf_counter() - t0))
                worker.close()
                worker = None
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=slot, daemon=True) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)


# --------------------------------------------------------------------------------------------
# Summaries: counts, groups, the JSON file and the expectations file.


def summarize(results: list[dict]) -> dict:
    by_outcome = collections.Counter(r["outcome"] for r in results)
    by_stage = collections.Counter(r.get("stage") or "?" for r in results if r["outcome"] == "error")
    counted = [r for r in results if r["outcome"] not in NOT_IN_DENOMINATOR]
    ran = [r for r in results if r["outcome"] != "eager-fails"]
    passed = by_outcome.get("pass", 0)
    export = collections.Counter(r["export"]["result"] for r in results if r.get("export"))
    dd = [r for r in results if (r.get("export") or {}).get("result") == GUARD_DD]
    return {
        "total": len(results),
        "by_outcome": {o: by_outcome.get(o, 0) for o in OUTCOMES},
        "errors_by_stage": dict(by_stage.most_common()),
        "denominator": len(counted),
        "pass_rate": round(passed / len(counted), 4) if counted else None,
        # the same with the no-work tests counted as not passing (the rule before they were
        # told apart from the no-graph ones)
        "strict_denominator": len(ran),
        "strict_pass_rate": round(passed / len(ran), 4) if ran else None,
        "export": dict(export),
        "guard_on_data_dependent": {
            "count": len(dd),
            "by_outcome": dict(collections.Counter(r["outcome"] for r in dd)),
        },
    }


def normalize_reason(reason: str) -> str:
    """A failure's first line with the details that differ between tests of one cause blurred:
    numbers, tensor types, shapes, paths, memory addresses."""
    s = reason or ""
    s = re.sub(r"0x[0-9a-fA-F]+", "0x…", s)
    s = re.sub(r"(/[\w.+-]+)+/([\w.+-]+)", r"…/\2", s)
    s = re.sub(r"tensor<[^>]*>", "tensor<…>", s)
    s = re.sub(r"\[[\d, sSu]*\]|\([\d, ]+\)", "[…]", s)
    s = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", s)
    s = re.sub(r"mean=\S+|min=\S+|max=\S+", "", s)
    return s[:160]


def failure_groups(results: list[dict]) -> list[dict]:
    groups: dict = collections.OrderedDict()
    for r in results:
        if r["outcome"] in ("pass",):
            continue
        key = (r["outcome"], r.get("stage"), normalize_reason(r.get("reason") or ""))
        g = groups.setdefault(key, {"outcome": key[0], "stage": key[1], "pattern": key[2],
                                    "first_line": r.get("reason"), "tests": []})
        g["tests"].append(r["name"])
    return sorted(groups.values(), key=lambda g: (-len(g["tests"]), g["outcome"], g["pattern"]))


def cpu_model() -> str:
    from lowerkit.runtime.cpu_features import host_model

    return host_model()


def _git(cwd: Path, *argv: str) -> str | None:
    try:
        return subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run_meta(args, suite: Suite, names: list[str], seconds: float) -> dict:
    import lowerkit

    try:
        from lowerkit.tools.bench import run_metadata

        meta = run_metadata()
    except Exception as e:  # noqa: BLE001 - provenance is best effort
        meta = {"run_metadata_error": str(e)}
    lk_root = Path(lowerkit.__file__).resolve().parents[2]
    meta.update({
        "lowerkit_path": str(Path(lowerkit.__file__).resolve().parent),
        "lowerkit_commit": _git(lk_root, "rev-parse", "HEAD"),
        "lowerkit_dirty": bool(_git(lk_root, "status", "--porcelain", "--untracked-files=no")),
        "suite_commit": args.suite_commit or _git(Path(args.torch_mlir), "rev-parse", "HEAD")
        or "unknown",
        "via": args.via,
        "cpu_model": cpu_model(),
        "jobs": args.jobs,
        "executor": args.executor,
        "shard": args.shard,
        "timeout_s": args.timeout,
        "filter": args.filter,
        "sample": args.sample,
        "seed": args.seed,
        "check_export": args.check_export,
        "dynamic": args.dynamic if args.via == "compile" else None,
        "capture_scalar_outputs": bool(args.capture_scalars) if args.via == "backend" else None,
        "capture_dynamic_output_shape_ops": (bool(args.capture_dynamic_shapes)
                                             if args.via == "backend" else None),
        "tests_selected": len(names),
        "tests_in_suite": len(suite.tests),
        "suite_modules_not_loaded": suite.unloaded,
        "shims": suite.shims,
        "wall_seconds": round(seconds, 1),
    })
    return meta


def write_expectations(path: Path, results: list[dict], summary: dict, meta: dict) -> None:
    """A Python file in the manner of upstream's xfail_sets.py: one dict per outcome of test
    name -> (stage, reason) for every test that does not pass, and their union."""
    groups = [o for o in OUTCOMES if o != "pass"]
    by = {o: sorted((r for r in results if r["outcome"] == o), key=lambda r: r["name"])
          for o in groups}
    c = summary["by_outcome"]
    lines = [
        f'"""lowerkit on torch-mlir\'s e2e suite (via {meta["via"]}): every test that does not pass.',
        "",
        "Generated by benchmarks/e2e_suite.py; do not edit by hand, run it again:",
        f"    {meta.get('command', '')}",
        "",
        f"lowerkit commit: {meta.get('lowerkit_commit')}"
        f"{' (with uncommitted changes)' if meta.get('lowerkit_dirty') else ''}",
        f"torch-mlir suite commit: {meta.get('suite_commit')}",
        f"date: {meta.get('date')}",
        f"via: {meta['via']}",
        f"CPU: {meta.get('cpu_model')}",
        f"tests: {summary['total']} run ({meta.get('tests_in_suite')} in the suite"
        f"{', sample ' + str(meta['sample']) + ' seed ' + str(meta['seed']) if meta.get('sample') else ''}"
        f"{', filter ' + repr(meta['filter']) if meta.get('filter') else ''})",
        "counts: " + ", ".join(f"{o} {c[o]}" for o in OUTCOMES),
        f"pass rate over tests whose eager run works and computes a tensor: "
        f"{c['pass']}/{summary['denominator']}"
        + (f" = {summary['pass_rate']:.1%}" if summary["pass_rate"] is not None else ""),
        "errors by stage: " + ", ".join(f"{s} {n}" for s, n in summary["errors_by_stage"].items()),
        f"torch.export raises {GUARD_DD}: {summary['guard_on_data_dependent']['count']} "
        f"({summary['guard_on_data_dependent']['by_outcome']})",
        '"""',
        "",
    ]
    names = {o: o.upper().replace("-", "_") for o in groups}
    for o in groups:
        lines.append(f"# {o}: {len(by[o])}")
        lines.append(f"{names[o]} = {{")
        for r in by[o]:
            reason = (r.get("reason") or "").replace("\n", " ")[:240]
            lines.append(f"    {r['name']!r}: ({(r.get('stage') or o)!r}, {reason!r}),")
        lines.append("}")
        lines.append("")
    lines.append("# every test that does not pass, name -> (stage, reason)")
    lines.append("EXPECTED_FAILURES = {" + ", ".join(f"**{names[o]}" for o in groups) + "}")
    lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def print_report(console, results: list[dict], summary: dict) -> None:
    from rich.table import Table

    t = Table(title="outcomes")
    t.add_column("outcome")
    t.add_column("tests", justify="right")
    for o in OUTCOMES:
        n = summary["by_outcome"][o]
        style = "bold red" if o == "mismatch" and n else None
        t.add_row(o, str(n), style=style)
    t.add_row("total", str(summary["total"]), style="bold")
    s = Table(title="errors by stage")
    s.add_column("stage")
    s.add_column("tests", justify="right")
    for stage, n in summary["errors_by_stage"].items():
        s.add_row(stage, str(n))
    console.print(t)
    if summary["errors_by_stage"]:
        console.print(s)
    rate = summary["pass_rate"]
    console.print(f"[bold]pass rate[/] over tests whose eager run works and computes a tensor: "
                  f"{summary['by_outcome']['pass']}/{summary['denominator']}"
                  + (f" = {rate:.1%}" if rate is not None else ""))
    if summary.get("strict_pass_rate") is not None and summary["by_outcome"].get("no-work"):
        console.print(f"counting the no-work tests as not passing: "
                      f"{summary['by_outcome']['pass']}/{summary['strict_denominator']}"
                      f" = {summary['strict_pass_rate']:.1%}")
    if summary["export"]:
        dd = summary["guard_on_data_dependent"]
        console.print(f"torch.export: {summary['export']}; {GUARD_DD}: {dd['count']} tests, "
                      f"outcomes through lowerkit {dd['by_outcome']}")
    mism = [r for r in results if r["outcome"] == "mismatch"]
    if mism:
        console.rule(f"[bold red]{len(mism)} MISMATCHES (ran, wrong answer)")
        for r in sorted(mism, key=lambda r: r["name"]):
            console.print(f"[red]MISMATCH[/] {r['name']}: {r.get('reason')}", markup=True,
                          highlight=False)
    g = Table(title="failure groups (largest first)")
    for col in ("n", "outcome", "stage", "first line", "examples"):
        g.add_column(col, overflow="fold")
    for grp in failure_groups(results)[:40]:
        g.add_row(str(len(grp["tests"])), grp["outcome"], grp["stage"] or "",
                  (grp["first_line"] or "")[:160], ", ".join(grp["tests"][:3]))
    console.print(g)


# --------------------------------------------------------------------------------------------


def rejudge(args, console) -> int:
    """``--rejudge``: a stored run's pass / no-graph / no-work / fallback records judged again
    from their graph records (the rules of `decide_outcome` may have changed since the run);
    with ``--torch-mlir``, a no-graph or no-work test's program is run eagerly again
    (`split_no_graph`), nothing through lowerkit."""
    stored = json.loads(Path(args.rejudge).read_text())
    results = stored["results"]
    suite = load_suite(args.torch_mlir) if args.torch_mlir else None
    changed = 0
    for r in results:
        if r["outcome"] in ("pass", "no-graph", "no-work", "fallback") and "graphs" in r:
            def test_and_golden(name=r["name"]):
                test = suite.tests[name]
                return test, golden_trace(suite, test)
            outcome, stage, reason = judge(r, None, [], r["graphs"],
                                           test_and_golden if suite is not None else None)
            if outcome == "no-graph" and suite is None and r["outcome"] == "no-work":
                outcome, stage, reason = r["outcome"], r["stage"], r["reason"]  # not re-run
            changed += outcome != r["outcome"]
            r.update(outcome=outcome, stage=stage, reason=reason)
    summary = summarize(results)
    meta = dict(stored["meta"], rejudged={
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "lowerkit_commit": _git(ROOT, "rev-parse", "HEAD"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "changed": changed})
    print_report(console, results, summary)
    console.print(f"{changed} outcomes changed")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "summary": summary,
                                               "groups": failure_groups(results),
                                               "results": results}, indent=1, default=str) + "\n")
    if args.expectations:
        write_expectations(Path(args.expectations), results, summary, meta)
    return 0


def _shard_argument(text: str):
    from lowerkit.tools.executor.batch import shard_argument

    return shard_argument(text)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--torch-mlir", default=os.environ.get(ENV_TORCH_MLIR),
                   help=f"folder holding projects/pt1/python of torch-mlir (or ${ENV_TORCH_MLIR})")
    p.add_argument("--via", choices=("backend", "compile"), default="backend")
    p.add_argument("--capture-scalars", action="store_true",
                   help="--via backend with Dynamo's capture_scalar_outputs: .item() and int(t) "
                        "stay in the graph instead of breaking it")
    p.add_argument("--capture-dynamic-shapes", action="store_true",
                   help="--via backend with Dynamo's capture_dynamic_output_shape_ops: ops whose "
                        "output size is read from data (nonzero, x[mask], bincount) stay in "
                        "the graph instead of breaking it")
    p.add_argument("--dynamic", choices=("auto", "static"), default="auto",
                   help="--via compile: annotate_args' -1 dims as torch.export.Dim.AUTO (auto, "
                   "the default) or compile for the first call's shapes (static)")
    p.add_argument("--filter", help="only tests whose name matches this regex (re.search)")
    p.add_argument("--sample", type=int, help="a reproducible random sample of N tests")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per test (default 120)")
    p.add_argument("--json", help="write every result and the counts to this file")
    p.add_argument("--expectations", help="write the tests that do not pass as a Python file")
    p.add_argument("--list", action="store_true", help="print the selected tests' names and stop")
    p.add_argument("--check-export", action="store_true",
                   help=f"also try torch.export.export on each test; count {GUARD_DD}")
    p.add_argument("--cache-dir", help="lowerkit's compile cache for the run (default: a fresh "
                   "temporary folder, so no earlier run's entries answer)")
    p.add_argument("--log-dir", help="workers' stderr logs (default: a temporary folder)")
    p.add_argument("--max-tests-per-worker", type=int, default=200,
                   help="start a fresh worker after this many tests (bounds memory growth)")
    p.add_argument("--suite-commit", help="the torch-mlir commit the suite came from, for the "
                   "records (default: git rev-parse in --torch-mlir, where it is a checkout)")
    p.add_argument("--rejudge", metavar="JSON", help="no run: the outcomes of a stored run's "
                   "records judged again by this file's rules (pass, no-graph, fallback only: "
                   "they depend on the graph records), written to --json / --expectations")
    p.add_argument("--quiet", action="store_true", help="no per-test lines, the summary only")
    p.add_argument("--executor", choices=("workers", "inprocess", "ray"), default="workers",
                   help="workers: --jobs worker processes of this runner (default); inprocess: "
                   "lowerkit's executor, one test after another in this process; ray: one Ray "
                   "task per test on a local Ray, or the cluster at $RAY_ADDRESS")
    p.add_argument("--journal", help="--executor inprocess|ray: each test's outcome as it comes "
                   "(JSON Lines)")
    p.add_argument("--resume", action="store_true",
                   help="with --journal: skip the tests it already has an outcome for")
    p.add_argument("--shard", metavar="K/N", type=_shard_argument,
                   help="run only shard K of N of the selected tests")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.torch_mlir and not args.rejudge:
        p.error(f"--torch-mlir (or ${ENV_TORCH_MLIR}) is required")
    if args.resume and not args.journal:
        p.error("--resume needs the --journal to resume from")
    if args.journal and args.executor == "workers":
        p.error("--journal and --resume need --executor inprocess or ray")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.capture_scalars:
        os.environ[ENV_CAPTURE_SCALARS] = "1"
    if args.capture_dynamic_shapes:
        os.environ[ENV_CAPTURE_DYNAMIC] = "1"
    if args.worker:
        return worker_main(args)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp/lowerkit-xdg")
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True)
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    console = Console(width=None if sys.stdout.isatty() else 200)
    if args.rejudge:
        return rejudge(args, console)
    suite = load_suite(args.torch_mlir)
    names = select_tests(suite.tests, args.filter, args.sample, args.seed)
    if args.shard:
        from lowerkit.tools.executor import Item, select_shard

        names = [i.key for i in select_shard([Item(n) for n in names], args.shard)]
    if args.list:
        for n in names:
            print(n)
        return 0
    if suite.unloaded:
        console.print(f"[yellow]suite modules not loaded[/]: {suite.unloaded}")
    tmp = tempfile.mkdtemp(prefix="lowerkit-e2e-")
    if args.cache_dir is None:
        args.cache_dir = str(Path(tmp) / "cache")
    os.environ["LOWERKIT_CACHE_DIR"] = args.cache_dir
    if args.log_dir is None:
        args.log_dir = str(Path(tmp) / "logs")
    console.print(f"{len(names)} tests via {args.via}, "
                  + (f"{args.jobs} workers" if args.executor == "workers" else
                     f"executor {args.executor}") + ", timeout "
                  f"{args.timeout:g} s; logs in {args.log_dir}")
    # provenance as the workers start (lowerkit's tree may change while the run goes on)
    meta = run_meta(args, suite, names, 0.0)
    results: list[dict] = []
    counts = collections.Counter()
    start = time.monotonic()
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task("e2e", total=len(names))
        lock = threading.Lock()

        def on_result(rec: dict) -> None:
            with lock:
                results.append(rec)
                counts[rec["outcome"]] += 1
                o = rec["outcome"]
                if o == "mismatch":
                    progress.console.print(f"[bold red]MISMATCH[/] {rec['name']}: "
                                           f"{rec.get('reason')}", highlight=False)
                elif not args.quiet and o != "pass":
                    progress.console.print(f"[yellow]{o}[/] {rec['name']} "
                                           f"[dim]{rec.get('stage') or ''}: "
                                           f"{(rec.get('reason') or '')[:150]}[/]",
                                           highlight=False)
                desc = " ".join(f"{k} {counts[k]}" for k in OUTCOMES if counts[k])
                progress.update(task, advance=1, description=desc)

        if args.executor == "workers":
            run_tests(args, names, on_result,
                      {n: suite.tests[n].timeout_seconds for n in names})
        else:
            meta["executor"] = run_on_executor(args, names, on_result)
    seconds = time.monotonic() - start
    results.sort(key=lambda r: r["name"])
    summary = summarize(results)
    print_report(console, results, summary)
    meta["wall_seconds"] = round(seconds, 1)
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"meta": meta, "summary": summary,
                                   "groups": failure_groups(results), "results": results},
                                  indent=1, default=str) + "\n")
        console.print(f"wrote {out}")
    if args.expectations:
        write_expectations(Path(args.expectations), results, summary, meta)
        console.print(f"wrote {args.expectations}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
