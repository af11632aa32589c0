"""``lowerkit zoo``: the coverage run over zoo models, its table, JSON and exit status."""

from __future__ import annotations

import json

import pytest
import torch

import lowerkit.zoo as zoo
from lowerkit.cli import main as cli_main
from lowerkit.runtime.numerics import tolerance_for
from lowerkit.zoo import ZooModel


class _Bessel(torch.nn.Module):
    def forward(self, x):
        return torch.special.bessel_j0(x) + 1  # torch-mlir has no lowering for bessel_j0


class _TestEntry(ZooModel):
    """A zoo entry whose factory lives in this file (zoo entries import lowerkit.zoo.*)."""

    @property
    def factory(self):
        return lambda: (_Bessel(), (torch.rand(4),))


@pytest.fixture
def zoo_with_a_failing_model(monkeypatch):
    def add(*tags):
        entry = _TestEntry("lk_bessel", "test:lk_bessel", "ops", frozenset(tags))
        monkeypatch.setitem(zoo.ZOO, entry.name, entry)
        return entry.name
    return add


def _rows(out: str) -> dict[str, str]:
    return {line.split("│")[1].strip(): line for line in out.splitlines()
            if line.startswith("│") and line.split("│")[1].strip() in zoo.ZOO}


def test_small_models_match_eager(tmp_path, capsys):
    report = tmp_path / "zoo.json"
    assert cli_main(["zoo", "mlp", "nonpersistent_buffer", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert set(rows) == {"mlp", "nonpersistent_buffer"}
    assert all("check ✓" in row for row in rows.values()), out
    assert "2/2 models match eager on cpu" in out
    results = {r["name"]: r for r in json.loads(report.read_text())}
    for name in ("mlp", "nonpersistent_buffer"):
        r = results[name]
        assert r["ok"] and r["stage"] == "check" and r["compile_seconds"] > 0
        assert 0 <= r["max_rel_error"] <= (zoo.ZOO[name].tol or tolerance_for(torch.float32)).rel


def test_a_failing_model_is_reported_and_fails_the_run(zoo_with_a_failing_model, capsys, tmp_path):
    name = zoo_with_a_failing_model()
    report = tmp_path / "zoo.json"
    assert cli_main(["zoo", "mlp", name, "--json", str(report)]) == 1
    out = capsys.readouterr().out
    rows = _rows(out)
    assert "check ✓" in rows["mlp"]
    assert "torch-backend-contract ✗" in rows[name] and "(known)" not in rows[name]
    assert "1/2 models match eager on cpu" in out
    failed = {r["name"]: r for r in json.loads(report.read_text())}[name]
    assert not failed["ok"] and failed["stage"] == "torch-backend-contract"
    assert "UnsupportedError" in failed["message"] and "bessel_j0" in failed["message"]


def test_a_known_failure_does_not_fail_the_run(zoo_with_a_failing_model, capsys):
    name = zoo_with_a_failing_model("known-failure")
    assert cli_main(["zoo", name]) == 0
    out = capsys.readouterr().out
    assert "torch-backend-contract ✗ (known)" in _rows(out)[name]
    assert "0/1 models match eager on cpu" in out


def test_a_coverage_result_survives_the_executors_journal():
    """`lowerkit zoo --journal` stores each model as an executor outcome; read back, it is the
    same result (its stage and message are the outcome's own fields in the row)."""
    from lowerkit.tools.executor import Outcome
    from lowerkit.zoo.coverage import CoverageResult, result_of

    r = CoverageResult("m", False, "iree-compile", None, "StageError: boom", 1.5, {"a": 0.1})
    outcome = Outcome("m", "fail", "failed", r.stage, r.message, data=r.to_json())
    assert result_of(Outcome.from_row(outcome.to_row())) == r
    lost = result_of(Outcome("m", "timeout", "timeout", "run", "no result within 9 s"))
    assert (lost.ok, lost.stage) == (False, "timeout")


class _Tiny(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2


class _EcosystemEntry(ZooModel):
    """An ecosystem entry whose factory lives here (the real ones import their library)."""

    @property
    def factory(self):
        return lambda: (_Tiny(), (torch.rand(3),))


def test_the_ecosystem_table_comes_beside_the_zoo_with_the_rung(monkeypatch, capsys):
    import lowerkit.zoo.coverage as coverage
    import lowerkit.zoo.ecosystem as ecosystem

    entry = _EcosystemEntry("lk_eco_tiny", "test:lk_eco_tiny", "ecosystem",
                            frozenset({"transformers", "fast"}), note="built small")
    monkeypatch.setattr(ecosystem, "ecosystem_models", lambda fast_only=False, names=None: [entry])
    assert cli_main(["zoo", "--ecosystem", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "lk_eco_tiny" in listed and "resnet18" in listed
    # no compile: the table shows what check_model found, the rung included
    rungs = {"mlp": "fast", "lk_eco_tiny": "no ukernels"}
    monkeypatch.setattr(coverage, "check_model", lambda m, target: coverage.CoverageResult(
        m.name, True, "check", 0.0, "", 1.5, {}, 0.0, rungs[m.name]))
    monkeypatch.setattr(zoo, "models", lambda include_slow=False, names=None: [zoo.ZOO["mlp"]])
    assert cli_main(["zoo", "--ecosystem"]) == 0
    out = capsys.readouterr().out
    first, _, second = out.partition("ecosystem zoo coverage → cpu")
    first_rows = [line for line in first.splitlines() if line.startswith("│")]
    assert "zoo coverage → cpu" in first and any("mlp" in line for line in first_rows)
    assert not any("lk_eco_tiny" in line for line in first_rows)
    row = next(line for line in second.splitlines()
               if line.startswith("│") and "lk_eco_tiny" in line)
    assert "transformers" in row and "check ✓" in row and "no ukernels" in row, row
    assert "2/2 models match eager on cpu" in out
