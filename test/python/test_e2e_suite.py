"""benchmarks/e2e_suite.py: torch-mlir's e2e suite through lowerkit.

The outcome rules are tested here without the suite. With ``LOWERKIT_TORCH_MLIR`` naming a
torch-mlir checkout (the folder holding ``projects/pt1/python``), a fixed handful of fast tests
also runs through the runner, via ``torch.compile(backend="lowerkit")`` and via
``lowerkit.compile``, and must pass.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "benchmarks" / "e2e_suite.py"


def _load_runner():
    spec = importlib.util.spec_from_file_location("lowerkit_e2e_suite", RUNNER)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


e2e = _load_runner()


def _item(output, symbol="forward"):
    return types.SimpleNamespace(symbol=symbol, output=output)


# ---- outcome classification, no checkout needed ---------------------------------------------


def test_a_wrong_answer_is_a_mismatch_not_a_pass():
    golden = [_item(torch.ones(3))]
    wrong = [_item(torch.tensor([1.0, 1.0, 1.5]))]
    failures = e2e.compare_traces(golden, wrong)
    assert failures
    outcome, stage, reason = e2e.decide_outcome(None, failures, [{"ran": "lowerkit"}])
    assert outcome == "mismatch"
    assert "values differ" in reason


def test_the_suites_tolerances():
    g = torch.tensor([1.0, 2.0, float("nan")])
    assert not e2e.compare_value(g * (1 + 5e-4), g)           # rtol 1e-3
    assert e2e.compare_value(g * (1 + 5e-3), g)
    assert e2e.compare_value(g.double(), g)                   # dtype must match
    assert e2e.compare_value(g[:2], g)                        # shape too
    assert not e2e.compare_value(0.0, 0.0)                    # upstream divides by the golden
    assert e2e.compare_value(1e-3, 0.0)
    assert e2e.compare_value(3, 4) and not e2e.compare_value(4, 4)
    assert not e2e.compare_value((torch.ones(2),), torch.ones(2))  # 1-tuples unwrap


def test_a_match_passes_only_when_lowerkit_ran_the_graphs():
    golden = [_item((torch.ones(2), 3))]
    same = [_item((torch.ones(2), 3))]
    assert e2e.compare_traces(golden, same) == []
    assert e2e.decide_outcome(None, [], [{"ran": "lowerkit"}])[0] == "pass"
    # a graph run eagerly (a fallback) and no graph at all are not passes
    assert e2e.decide_outcome(None, [], [{"ran": "eager", "reason": "x"}])[0] == "fallback"
    assert e2e.decide_outcome(None, [], [])[0] == "no-graph"
    # lowerkit.compile has no graph records: None
    assert e2e.decide_outcome(None, [], None)[0] == "pass"


class _Returns(torch.nn.Module):
    def forward(self, x, y):
        return x, y.contiguous(), x.to(torch.float32)  # no copy: the inputs themselves


class _Scalars(torch.nn.Module):
    def forward(self, x):
        return x.numel(), x.dim(), x.is_floating_point(), torch.ops.aten.Bool(True)


class _Reads(torch.nn.Module):
    def forward(self, x):
        return float(x) * 2  # the tensor's data, read into a Python number


class _Adds(torch.nn.Module):
    def forward(self, x):
        return x + 1


class _Doubles(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Adds()

    def forward(self, x):
        return x


def _fake_test(module_class, *inputs, symbol="forward"):
    golden = [types.SimpleNamespace(symbol=symbol, inputs=list(inputs), output=None)]
    return types.SimpleNamespace(program_factory=module_class), golden


def test_a_program_that_computes_no_tensor_is_told_apart():
    cases = [  # (module, inputs, method, the ops it computes tensors with)
        (_Returns, (torch.ones(2), torch.ones(3)), "forward", []),  # its inputs themselves
        (_Scalars, (torch.tensor(1.5),), "forward", []),  # sizes and Python scalars only
        (_Reads, (torch.tensor(1.5),), "forward", ["aten._local_scalar_dense.default"]),
        (_Adds, (torch.ones(2),), "forward", ["aten.add.Tensor"]),
        (_Doubles, (torch.ones(2),), "inner.forward", ["aten.add.Tensor"]),  # a method's own
    ]
    for module_class, inputs, symbol, expected in cases:
        test, golden = _fake_test(module_class, *inputs, symbol=symbol)
        assert e2e.eager_tensor_ops(test, golden) == expected, module_class.__name__


def test_no_work_is_left_out_of_the_pass_rate_and_no_graph_is_not():
    results = ([{"outcome": "pass"}] * 96 + [{"outcome": "no-graph"}] * 2
               + [{"outcome": "no-work"}] * 3 + [{"outcome": "eager-fails"}])
    summary = e2e.summarize(results)
    assert summary["denominator"] == 98 and summary["pass_rate"] == round(96 / 98, 4)
    assert summary["strict_denominator"] == 101  # no-work counted as not passing
    assert summary["by_outcome"]["no-work"] == 3


def test_error_stages():
    from lowerkit.errors import IngressError, LowerkitError, StageError

    assert e2e.classify_error(StageError("torch-backend-contract", "failed to legalize"))[0] \
        == "torch-backend-contract"
    assert e2e.classify_error(IngressError("stage 'torch-import' failed: boom"))[0] == "torch-import"
    assert e2e.classify_error(
        LowerkitError("the compiled program failed at run time on 'local-task': x"))[0] == "runtime"
    # Dynamo wraps the backend's error: lowerkit's stage still wins
    try:
        try:
            raise StageError("iree-compile", "iree-compile failed")
        except StageError as inner:
            raise torch._dynamo.exc.BackendCompilerFailed(lambda: None, inner) from inner
    except Exception as outer:  # noqa: BLE001
        assert e2e.classify_error(outer) == ("iree-compile", "stage 'iree-compile' failed: iree-compile failed")
    assert e2e.classify_error(torch._dynamo.exc.Unsupported("no"))[0] == "dynamo"
    outcome, stage, _ = e2e.decide_outcome(RuntimeError("x"), None, [])
    assert (outcome, stage) == ("error", "other")


def test_the_deepest_owner_of_a_foreign_exception_is_its_stage():
    lk, fn, dyn = "/x/lowerkit/backend.py", "/v/torch/_functorch/aot_autograd.py", "/v/torch/_dynamo/x.py"
    wrapper, op = "/v/torch/_dynamo/eval_frame.py", "/v/torch/_ops.py"
    # lowerkit's backend calls aot_autograd, which fails (through Dynamo's disable wrapper)
    assert e2e._deepest_owner([dyn, lk, fn, wrapper, op]) == "aot_autograd"
    # aot_autograd calls lowerkit's compiler, whose own code raises a foreign exception
    assert e2e._deepest_owner([dyn, lk, fn, lk, op]) == "lowerkit-unwrapped"
    assert e2e._deepest_owner([dyn, op]) == "dynamo"
    assert e2e._deepest_owner([op]) is None


def test_selection_is_reproducible():
    names = [f"T{i}" for i in range(50)]
    a = e2e.select_tests(names, sample=10, seed=3)
    assert a == e2e.select_tests(reversed(names), sample=10, seed=3)
    assert len(a) == 10 and a != e2e.select_tests(names, sample=10, seed=4)
    assert e2e.select_tests(names, pattern=r"^T4\d$") == [f"T4{i}" for i in range(10)]


def test_expectations_file_is_python(tmp_path):
    results = [
        {"name": "A_basic", "outcome": "pass", "stage": None, "reason": None},
        {"name": "B_basic", "outcome": "mismatch", "stage": "run", "reason": "values differ"},
        {"name": "C_basic", "outcome": "error", "stage": "iree-compile", "reason": "boom 'x'"},
        {"name": "D_basic", "outcome": "eager-fails", "stage": "eager", "reason": "nope"},
    ]
    summary = e2e.summarize(results)
    assert summary["denominator"] == 3 and summary["by_outcome"]["pass"] == 1
    out = tmp_path / "exp.py"
    e2e.write_expectations(out, results, summary, {"via": "backend", "command": "x"})
    ns: dict = {}
    exec(out.read_text(), ns)
    assert ns["MISMATCH"] == {"B_basic": ("run", "values differ")}
    assert set(ns["EXPECTED_FAILURES"]) == {"B_basic", "C_basic", "D_basic"}


# ---- the runner on the suite itself: needs a torch-mlir checkout -----------------------------

# fast, one op each, across dtypes, broadcasting, reductions, views and a dynamic size
SUBSET = (
    "ElementwiseAddModule_basic",
    "ElementwiseMulScalarModule_basic",
    "MmModule_basic",
    "AddmmModuleFloat_basic",
    "ReduceSumDimIntListKeepDimFloatModule_basic",
    "ElementwiseReluModule_basic",
    "TransposeIntModule_basic",
    "ElementwiseSigmoidModule_basic",
    "SoftmaxIntModule_basic",
    "ElementwiseAddScalarInt64Module_basic",
)


def _checkout() -> str:
    path = os.environ.get(e2e.ENV_TORCH_MLIR)
    if not path:
        pytest.skip(f"set {e2e.ENV_TORCH_MLIR} to a torch-mlir checkout (the folder holding "
                    "projects/pt1/python) to run torch-mlir's e2e tests")
    return path


def test_subset_names_exist():
    suite = e2e.load_suite(_checkout())
    missing = [n for n in SUBSET if n not in suite.tests]
    assert not missing, f"not in this torch-mlir's e2e suite: {missing}"


def _run_subset(checkout: str, tmp_path: Path, *options: str) -> dict:
    out = tmp_path / "run.json"
    regex = "^(" + "|".join(SUBSET) + ")$"
    env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp/lowerkit-xdg"))
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--torch-mlir", checkout, *options, "--filter", regex,
         "--jobs", "2", "--timeout", "300", "--quiet", "--json", str(out),
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    assert set(results) == set(SUBSET)
    return results


def _not_passed(results: dict) -> dict:
    return {n: (r["outcome"], r.get("stage"), r.get("reason")) for n, r in results.items()
            if r["outcome"] != "pass"}


@pytest.mark.slow
@pytest.mark.parametrize("options", [("--via", "backend"), ("--via", "compile", "--dynamic", "static")],
                         ids=["backend", "compile-static"])
def test_subset_passes(options, tmp_path):
    results = _run_subset(_checkout(), tmp_path, *options)
    assert not _not_passed(results), _not_passed(results)
    if "backend" in options:
        assert all(r["graphs"] and all(g["ran"] == "lowerkit" for g in r["graphs"])
                   for r in results.values())


@pytest.mark.slow
def test_subset_passes_compiled_with_dynamic_dims(tmp_path):
    results = _run_subset(_checkout(), tmp_path, "--via", "compile", "--dynamic", "auto")
    assert not _not_passed(results), _not_passed(results)


# ---- the runner on lowerkit's executor (--executor inprocess | ray) ------------------------------


def test_executor_outcomes_become_the_runners_records():
    from lowerkit.tools.executor import Outcome

    rec = {"name": "T_basic", "outcome": "mismatch", "stage": "run", "reason": "values differ"}
    judged = Outcome("T_basic", e2e.E2E_STATUS["mismatch"], "mismatch", "run", "values differ",
                     data=rec)
    assert judged.status == "fail"
    # through the journal's flat row and back, the runner's record is whole
    assert e2e.record_of(Outcome.from_row(judged.to_row())) == rec
    lost = Outcome("T_basic", "timeout", "timeout", "run", "no result within 2 s")
    assert e2e.record_of(lost)["outcome"] == "timeout"
    infra = Outcome("T_basic", "infrastructure", None, "ray", "NodeDiedError")
    assert (e2e.record_of(infra)["outcome"], e2e.record_of(infra)["stage"]) == ("crash",
                                                                               "infrastructure")
    assert set(e2e.E2E_STATUS) == set(e2e.OUTCOMES)


@pytest.mark.slow
@pytest.mark.ray  # with test_executor_ray's, in scripts/test's pytest of their own
def test_subset_passes_on_ray_with_a_journal(tmp_path):
    pytest.importorskip("ray")
    journal = tmp_path / "e2e.jsonl"
    results = _run_subset(_checkout(), tmp_path, "--via", "backend", "--executor", "ray",
                          "--journal", str(journal))
    assert not _not_passed(results), _not_passed(results)
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    assert rows[0]["journal"] == "lowerkit e2e_suite"
    assert sorted(r["key"] for r in rows[1:]) == sorted(SUBSET)
