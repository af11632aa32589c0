"""The benchmark suite (benchmarks/suite/, asv; issue 74 §5): its definitions import and read
their figures from a set's measurement, and benchmarks/readme.py renders the performance page's
suite table and the README's headline from an asv results file and its provenance."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
from pathlib import Path
from unittest import mock

import pytest

from lowerkit.tools import bench

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "suite"


def _load(name: str, path: Path, package: bool = False):
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)] if package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and relative imports look their module up there
    spec.loader.exec_module(module)
    return module


readme = _load("benchmarks_readme", ROOT / "benchmarks" / "readme.py")
with mock.patch.dict(os.environ):  # the suite sets OMP_WAIT_POLICY for its own processes only
    _load("lowerkit_suite", SUITE / "__init__.py", package=True)
SETS = {"real_shapes": "RealShapes", "real_models": "RealModels", "zoo": "Zoo",
        "call_floor": "CallFloor"}


def _suite_class(module: str):
    return getattr(importlib.import_module(f"lowerkit_suite.{module}"), SETS[module])


def test_the_suite_defines_the_sets_the_issue_names():
    """The real-shape set, the real-size zoo and the call floor (and the zoo) are asv classes
    of track_* benchmarks over their programs and a geomean, each with its own setup_cache (asv
    keys the cache by the function's module and line: an inherited one would share one
    measurement among the sets), and a version, so that runs of every commit compare."""
    from lowerkit.zoo.real_shapes import REAL_SHAPES

    lines = set()
    for module in SETS:
        cls = _suite_class(module)
        tracks = [n for n in dir(cls) if n.startswith("track_")]
        assert tracks and cls.params[0][-1] == "geomean" and cls.param_names == ["program"]
        assert "setup_cache" in vars(cls) and cls.setup_cache.timeout >= 3600
        lines.add((cls.setup_cache.__module__, inspect.getsourcelines(cls.setup_cache)[1]))
        assert cls.version == readme_version()
        assert readme.SUITE_SETS[f"{module}.{SETS[module]}"]
    assert len(lines) == len(SETS)
    assert set(_suite_class("real_shapes").params[0][:-1]) <= set(REAL_SHAPES)
    assert {"track_time_over_eager", "track_time_over_torch_compile"} <= set(
        dir(_suite_class("real_models")))
    assert {"track_lowerkit_us", "track_floor_us"} <= set(dir(_suite_class("call_floor")))


def readme_version() -> str:
    return importlib.import_module("lowerkit_suite._common").VERSION


def _measured(ratios: dict[str, float]) -> dict:
    """A set's measurement as `_ModelSet.measure` returns it (`BenchResult.to_json` rows)."""
    return {"models": {name: {"model": name, "median_ms": {"eager": r, "lowerkit": 1.0},
                              "lowerkit_vs_eager": r, "lowerkit_vs_torch_compile": r / 2,
                              "compile_cold_s": {"lowerkit": 3.0}}
                       for name, r in ratios.items()}, "failed_factories": {"vit_b16": "boom"}}


def test_tracks_read_ratios_and_geomeans_from_the_measurement():
    shapes = _suite_class("real_shapes")()
    cache = _measured({"sdpa_1500": 2.0, "vit_b_stack": 0.5, "dw_separable": 8.0})
    # lowerkit's time over eager's: lower is better, as asv reads every value
    assert shapes.track_time_over_eager(cache, "dw_separable") == 1 / 8.0
    assert shapes.track_time_over_eager(cache, "geomean") == pytest.approx(0.5)
    assert shapes.track_time_over_torch_compile(cache, "geomean") == pytest.approx(1.0)
    assert shapes.track_lowerkit_ms(cache, "sdpa_1500") == 1.0
    assert shapes.track_compile_s(cache, "geomean") == pytest.approx(3.0)
    with pytest.raises(NotImplementedError, match="boom"):  # asv records it as not run
        shapes.track_time_over_eager(cache, "vit_b16")
    floor = _suite_class("call_floor")()
    rows = {"cumsum": {"eager": 30.0, "lowerkit": 60.0, "floor": 20.0},
            "index_ops": {"eager": 30.0, "lowerkit": 15.0, "floor": 20.0}}
    assert floor.track_lowerkit_us(rows, "geomean") == pytest.approx(30.0)
    assert floor.track_floor_us(rows, "cumsum") == 20.0
    assert math.isnan(floor.track_eager_us(rows, "topk_sort"))


# -- the renderer on an asv results file of its own --------------------------------------------
MACHINE = "test-host-2cores"


def _store_suite_run(results: Path, commit: str, ratios: dict[str, float], date: str,
                     quick: bool = False) -> Path:
    """An asv results file (format 2, as `asv run` writes it) of the real-shape set and the
    call floor for ``MACHINE`` at ``commit``, with the provenance run_suite.py stores."""
    programs = list(ratios) + ["geomean"]
    ge = math.exp(sum(map(math.log, ratios.values())) / len(ratios))
    params = [[repr(p) for p in programs]]

    def row(values, names=params):
        return [values, names, "1", 0, 1.0]
    results_file = results / "asv" / MACHINE / f"{commit[:8]}-existing-py_venv_bin_python.json"
    results_file.parent.mkdir(parents=True, exist_ok=True)
    (results_file.parent / "machine.json").write_text(json.dumps(
        {"machine": MACHINE, "cpu": "test", "version": 1}))
    floor_params = [["'cumsum'", "'geomean'"]]
    results_file.write_text(json.dumps({
        "commit_hash": commit, "env_name": "existing-py_venv_bin_python", "date": 0,
        "params": {"machine": MACHINE}, "python": "3.11", "requirements": {}, "env_vars": {},
        "result_columns": ["result", "params", "version", "started_at", "duration"],
        "results": {
            "real_shapes.RealShapes.track_time_over_eager": row(
                [1 / r for r in ratios.values()] + [1 / ge]),
            "real_shapes.RealShapes.track_time_over_torch_compile": row(
                [2 / r for r in ratios.values()] + [2 / ge]),
            "real_shapes.RealShapes.track_lowerkit_ms": row([1.0] * len(ratios) + [1.0]),
            "call_floor.CallFloor.track_eager_us": row([30.0, 30.0], floor_params),
            "call_floor.CallFloor.track_lowerkit_us": row([60.0, 60.0], floor_params),
            "call_floor.CallFloor.track_floor_us": row([20.0, 20.0], floor_params),
        }, "durations": {}, "version": 2}))
    meta = dict(bench.run_metadata(), commit=commit, date=date, quick=quick)
    meta["threads"]["torch"] = 2
    prov = results / "asv-provenance" / MACHINE / f"{commit}.json"
    prov.parent.mkdir(parents=True, exist_ok=True)
    prov.write_text(json.dumps(meta))
    return results_file


def test_the_renderer_reads_the_suites_history(tmp_path):
    _store_suite_run(tmp_path, "a" * 40, {"sdpa_1500": 4.0, "vit_b_stack": 1.0},
                     "2026-12-01T00:00:00+00:00")
    _store_suite_run(tmp_path, "b" * 40, {"sdpa_1500": 2.0, "vit_b_stack": 0.5},
                     "2026-12-02T00:00:00+00:00")
    _store_suite_run(tmp_path, "c" * 40, {"sdpa_1500": 9.0}, "2026-12-03T00:00:00+00:00",
                     quick=True)
    [old, new, quick] = readme.load_suite(tmp_path)
    assert (old.commit, new.commit, quick.quick) == ("a" * 40, "b" * 40, True)
    assert new.get("real_shapes.RealShapes", "track_time_over_eager") == {
        "sdpa_1500": 0.5, "vit_b_stack": 2.0, "geomean": pytest.approx(1.0)}
    body = readme.render_block("suite", tmp_path)
    # the newest run that is not quick: geomean of 2 and 0.5 against eager, half that against
    # torch.compile; the call floor's eager over lowerkit
    assert "| real-shape set | 2 | 1.00× | 0.50× | 1.00 ms a call | `test-host-2cores`, " \
           f"commit `{'b' * 10}`, 2026-12-02 |" in body
    assert "| call floor | 1 | 0.50× | - | 60.0 µs a call (floor 20.0 µs) |" in body
    assert f"<sub>`benchmarks/results/asv/{MACHINE}/bbbbbbbb-" in body


def test_the_headline_takes_a_hosts_newer_suite_run(tmp_path):
    for name in readme.BLOCKS["headline"].files:  # older stored files of this host
        meta = bench.run_metadata()
        meta.update(date="2026-11-01T00:00:00+00:00")
        meta["threads"]["torch"] = 2
        (tmp_path / name).write_text(json.dumps({"meta": meta, "models": [
            {"model": "sdpa_1500", "lowerkit_vs_eager": 3.0, "lowerkit_vs_torch_compile": 3.0}]}))
    table = readme.render_block("headline", tmp_path)
    assert "| 1 | 3.00× | 3.00× | none |" in table
    stored = _store_suite_run(tmp_path, "d" * 40, {"sdpa_1500": 2.0, "vit_b_stack": 0.5},
                              "2026-12-02T00:00:00+00:00")
    machine = readme.machine_name(bench.run_metadata()["cpu"])
    stored.parent.rename(stored.parent.with_name(machine))  # the suite's run of this host
    (tmp_path / "asv-provenance" / MACHINE).rename(tmp_path / "asv-provenance" / machine)
    table = readme.render_block("headline", tmp_path)
    assert "| 2 | 1.00× | 0.50× | vit_b_stack | suite: " in table and "3.00×" not in table


def test_a_suite_run_without_provenance_or_with_other_flags_is_refused(tmp_path):
    _store_suite_run(tmp_path, "e" * 40, {"sdpa_1500": 2.0}, "2026-12-02T00:00:00+00:00")
    prov = tmp_path / "asv-provenance" / MACHINE / f"{'e' * 40}.json"
    meta = json.loads(prov.read_text())
    prov.write_text(json.dumps(dict(meta, iree_cpu_flags=["--iree-opt-level=O3"])))
    with pytest.raises(readme.ResultError, match="lowerkit now uses"):
        readme.render_block("suite", tmp_path)
    prov.unlink()
    with pytest.raises(readme.ResultError, match="no provenance"):
        readme.render_block("suite", tmp_path)
    assert "Not measured yet" in readme.render_block("suite", tmp_path / "none")


def test_asv_loads_what_the_suite_stores():
    """asv itself (the `bench` extra) reads every stored results file of the suite."""
    results = pytest.importorskip("asv.results")
    files = [f for f in (ROOT / "benchmarks" / "results" / "asv").rglob("*.json")
             if f.name not in ("machine.json", "benchmarks.json")]
    assert files
    for f in files:
        loaded = results.Results.load(str(f))
        assert loaded.commit_hash and list(loaded.get_all_result_keys())
