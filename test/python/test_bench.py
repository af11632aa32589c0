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


def test_bench_real_runs_the_real_shape_set_and_says_what_it_leaves_out(tmp_path, monkeypatch,
                                                                        capsys):
    """``lowerkit bench real``: issue 22's set, each entry that its libraries allow (here one,
    to keep the test short), and a line for each entry left out."""
    from lowerkit.zoo import real_shapes

    sdpa = real_shapes.REAL_SHAPES["sdpa_1500"]
    (q, k, v) = sdpa.make()[1]
    assert q.shape == (1, 4, 1500, 16)  # the length that was 48x slower than eager
    monkeypatch.setattr(real_shapes, "available",
                        lambda: ([sdpa], {"vit_b16": "torchvision is not installed"}))
    out = tmp_path / "real.json"
    assert cli_main(["bench", "real", "--no-torch-compile", "--rounds", "3",
                     "--json", str(out)]) == 0
    assert "vit_b16 left out: torchvision is not installed" in capsys.readouterr().out
    assert [m["model"] for m in json.loads(out.read_text())["models"]] == ["sdpa_1500"]


def test_a_change_anywhere_in_the_checkout_marks_a_run_dirty(tmp_path):
    """`run_metadata`'s ``dirty``: a change to a tracked file outside the folder that asks
    (lowerkit's own, deep in the tree) counts; stored results do not."""
    import subprocess

    from lowerkit.tools.bench import checkout_dirty

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    deep = tmp_path / "python" / "pkg" / "tools"
    deep.mkdir(parents=True)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    for f in (tmp_path / "top.py", deep / "here.py", tmp_path / "benchmarks/results/run.json"):
        f.write_text("x = 1\n")
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    assert checkout_dirty(str(deep)) is False
    (tmp_path / "benchmarks/results/run.json").write_text("x = 2\n")
    assert checkout_dirty(str(deep)) is False  # a stored result being written
    (tmp_path / "top.py").write_text("x = 2\n")
    assert checkout_dirty(str(deep)) is True
    assert checkout_dirty(str(tmp_path.parent)) is None  # not a checkout


def test_peers_iree_defaults_and_error_against_eager():
    """``--peers``' IREE-defaults contender compiles lowerkit's import with every convolution
    whole and IREE's matmul tile; each contender's answer is checked against eager's."""
    model, args, kwargs = get("simple_cnn").make()
    r = bench.bench_model("simple_cnn", model, args, kwargs,
                          contenders=("eager", "lowerkit", "iree-defaults"), rounds=5)
    assert not r.errors, r.errors
    assert set(r.timings) == {"eager", "lowerkit", "iree-defaults"}
    assert r.compile_cold["iree-defaults"] > 0
    assert set(r.error_vs_eager) == {"lowerkit", "iree-defaults"}
    assert all(0 <= e < 1e-5 for e in r.error_vs_eager.values()), r.error_vs_eager
    assert json.loads(json.dumps(r.to_json()))["error_vs_eager"] == r.error_vs_eager


def test_a_wrong_answer_is_an_error_of_the_contender():
    import torch

    r = bench.BenchResult("m")
    bench._error_vs_eager(r, "lowerkit", torch.ones(3) * 1.01, torch.ones(3))
    assert r.error_vs_eager["lowerkit"] > 9e-3 and "mismatch" in r.errors["lowerkit"]
    bench._error_vs_eager(r, "openvino", (torch.ones(3),), torch.ones(3))  # one output, a list
    assert r.error_vs_eager["openvino"] == 0 and "openvino" not in r.errors


def test_openvino_contender_matches_eager():
    import pytest

    if not bench.openvino_available():
        pytest.skip("OpenVINO is not installed (pip install -e '.[bench]')")
    model, args, kwargs = get("mlp").make()
    r = bench.bench_model("mlp", model, args, kwargs, contenders=("eager", "openvino"), rounds=5)
    assert not r.errors, r.errors
    assert r.error_vs_eager["openvino"] < 1e-5 and r.timings["openvino"].median > 0


def test_real_models_are_at_published_sizes():
    """The real-size entries build at the sizes their papers evaluate (`lowerkit.zoo.real_models`),
    with BatchNorm statistics from a batch (not fading to the classifier's bias), or say which
    library is missing."""
    import pytest
    import torch
    from lowerkit.zoo.real_models import PUBLISHED_INPUT, REAL_MODELS, available

    found, missing = available()
    assert {m.name for m in found} | set(missing) == set(REAL_MODELS) == set(PUBLISHED_INPUT)
    assert PUBLISHED_INPUT["inception_v3"] == (1, 3, 299, 299)
    assert PUBLISHED_INPUT["r3d_18"] == (1, 3, 16, 112, 112)
    if "mobilenet_v3_small" in missing:
        pytest.skip(missing["mobilenet_v3_small"])
    model, args, _ = REAL_MODELS["mobilenet_v3_small"].make()  # the cheapest of them
    assert tuple(args[0].shape) == PUBLISHED_INPUT["mobilenet_v3_small"] and not model.training
    with torch.inference_mode():
        logits = model(*args)
    assert logits.std() > 0.05 * logits.abs().max()  # not one value for every class


def test_a_deep_nets_f32_answer_as_close_to_float64_as_eagers_is_no_error():
    """Past the f32 tolerance against eager, the float64 answer decides: no error where the
    contender is as close to it as eager is, an error where it is further."""
    import torch

    exact = torch.tensor([1.0, 2.0, 3.0])
    eager = exact + torch.tensor([3e-5, 0.0, 0.0])
    r = bench.BenchResult("m")
    bench._error_vs_eager(r, "close", exact - torch.tensor([3e-5, 0.0, 0.0]), eager, lambda: exact)
    assert r.error_vs_eager["close"] > 1e-5 and "close" not in r.errors
    assert abs(r.error_vs_float64["eager"] - r.error_vs_float64["close"]) < 1e-7
    bench._error_vs_eager(r, "far", exact - torch.tensor([3e-4, 0.0, 0.0]), eager, lambda: exact)
    assert "mismatch" in r.errors["far"]


def test_the_tuned_contender_reads_its_database_and_iree_defaults_reads_none(tmp_path,
                                                                            monkeypatch):
    """``--tuned DB``: 'lowerkit-tuned' compiles with that database, beside 'lowerkit' with
    the default one; 'iree-defaults' never reads a stored choice."""
    from lowerkit import tuning

    db = tuning.TuningDatabase(tmp_path / "tuning.json")
    db.record(tuning.cpu_key("cpu"), tuning.MATMUL_TILE, "524288", {})
    db.save()
    monkeypatch.setenv(tuning.ENV, "off")
    monkeypatch.setattr(bench, "TUNED_DATABASE", str(db.path))
    model, args, kwargs = get("mlp").make()
    r = bench.bench_model("mlp", model, args, kwargs,
                          contenders=("eager", "lowerkit", bench.TUNED), rounds=3)
    assert not r.errors, r.errors
    assert r.tuned == {tuning.MATMUL_TILE: "524288"}, r.tuned
    assert r.error_vs_eager[bench.TUNED] < 1e-5
    assert json.loads(json.dumps(r.to_json()))["tuned"] == r.tuned
    import os

    assert os.environ[tuning.ENV] == "off"  # put back after its compile
    assert cli_main(["bench", "mlp", "--tuned", str(tmp_path / "none.json")]) == 2


def test_a_stored_run_says_what_share_of_its_cpu_time_the_hypervisor_stole(tmp_path,
                                                                           monkeypatch):
    """A shared host's noise is in a run's provenance: the share of the machine's CPU time
    (/proc/stat) stolen between `run_metadata` and `write_results`, shown by the docs."""
    real = bench.cpu_ticks()
    assert real is None or {"user", "idle", "steal"} <= set(real)
    ticks = iter([dict(user=100, nice=0, system=0, idle=0, iowait=0, irq=0, softirq=0, steal=0),
                  dict(user=400, nice=0, system=20, idle=40, iowait=0, irq=0, softirq=0,
                       steal=140)])
    monkeypatch.setattr(bench, "cpu_ticks", lambda: next(ticks))
    bench.write_results(str(tmp_path / "run.json"),
                        {"meta": bench.run_metadata("a command"), "rows": []})
    stored = json.loads((tmp_path / "run.json").read_text())
    assert stored["meta"]["steal_share"] == 140 / 500
    spec = importlib.util.spec_from_file_location(
        "benchmarks_readme", Path(__file__).resolve().parents[2] / "benchmarks" / "readme.py")
    readme = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = readme
    spec.loader.exec_module(readme)
    assert "28 % of the machine's CPU time stolen" in readme.provenance("run.json",
                                                                        stored["meta"])
