"""`lowerkit.tools.bench` bookkeeping on a tiny model (no timing assertions: benchmarks are not tests)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

from lowerkit.tools import bench
from lowerkit.cli import main as cli_main
from lowerkit.zoo import get


def test_bench_model_reports_every_contender():
    model, args, kwargs = get("mlp").make()
    r = bench.bench_model("mlp", model, args, kwargs, contenders=("eager", "lowerkit"), rounds=5)
    assert not r.errors
    assert set(r.timings) == {"eager", "lowerkit"}
    assert all(len(t.samples) >= 5 and t.median > 0 for t in r.timings.values())
    assert r.compile_cold["lowerkit"] > 0 and "lowerkit" in r.compile_cached
    assert math.isfinite(r.speedup("lowerkit", "eager"))
    assert set(r.peak_memory_mb) == {"eager", "lowerkit"}
    assert r.settle_s == bench.SETTLE_S
    json.dumps(r.to_json())


def test_peak_memory_counts_what_a_contender_adds():
    import torch

    r = bench.BenchResult("m")
    with bench._PeakMemory(r, "big"):
        t = torch.ones(16 * 2**20)  # 64 MiB, every page written
    with bench._PeakMemory(r, "none"):
        pass
    del t
    assert 60 <= r.peak_memory_mb["big"] < 200
    assert r.peak_memory_mb["none"] < 8


def test_geomean():
    assert abs(bench.geomean([2.0, 8.0]) - 4.0) < 1e-9
    assert math.isnan(bench.geomean([]))


def test_bench_cli_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    assert cli_main(["bench", "index_ops", "--no-torch-compile", "--rounds", "5",
                     "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["models"][0]["model"] == "index_ops"
    assert data["models"][0]["median_ms"]["lowerkit"] > 0
    # the run's provenance, and benchmarks/readme.py renders the file as the README's zoo table
    meta = data["meta"]
    assert meta["commit"] and meta["cpu"]["model"] and meta["date"]
    assert meta["command"] == (".venv/bin/lowerkit bench index_ops --target cpu --rounds 5 "
                               f"--settle-ms 30 --gemm-size 1024 --no-torch-compile --json {out}")
    assert meta["threads"]["torch"] >= 1
    spec = importlib.util.spec_from_file_location(
        "benchmarks_readme", Path(__file__).resolve().parents[2] / "benchmarks" / "readme.py")
    readme = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = readme
    spec.loader.exec_module(readme)
    table = readme.render_zoo(readme.load_result(tmp_path, out.name), "x.json")
    lowerkit_ms = readme._num(data["models"][0]["median_ms"]["lowerkit"])
    assert f"| index_ops | {readme._num(data['models'][0]['median_ms']['eager'])} | - | " \
           f"{lowerkit_ms} |" in table
    assert meta["commit"][:10] in table


def test_zoo_cli_lists_models(capsys):
    assert cli_main(["zoo", "--list"]) == 0
    assert "llama_tiny_decode" in capsys.readouterr().out
