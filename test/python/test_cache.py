"""The compile cache is never wrong: constants are part of the key, corruption is caught,
concurrent processes share one compilation, and a hit skips iree-compile."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
import time

import pytest
import torch

import lowerkit
from lowerkit.iree import compiler
from lowerkit.cache import CompileCache, resolve_cache


def _linear(bias_value: float = 0.0):
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 4).eval()
    with torch.no_grad():
        m.bias[0] = bias_value          # the only difference between two programs
    return m, (torch.randn(2, 8),)


def test_programs_differing_only_in_weights_share_the_code_and_keep_their_weights(tmp_path):
    """Weights are IREE parameters read at load (the default): the code is the same, so the
    second compile is a hit, and each artifact computes with its own model's weights."""
    cache = CompileCache(tmp_path)
    m1, args = _linear(0.0)
    m2, _ = _linear(1.0)
    a1 = lowerkit.compile(m1, args, cache=cache)
    a2 = lowerkit.compile(m2, args, cache=cache)
    assert not a1.cache_hit and a2.cache_hit and a2.vmfb == a1.vmfb
    assert cache.stats.stores == 1
    with torch.no_grad():
        assert torch.allclose(a1(*args), m1(*args), atol=1e-5)
        assert torch.allclose(a2(*args), m2(*args), atol=1e-5)
    assert not torch.allclose(a1(*args), a2(*args))


class _Offset(torch.nn.Module):
    """A constant the program itself holds (not a parameter or buffer): code, so in the key."""

    def __init__(self, value: float):
        super().__init__()
        self.value = value

    def forward(self, x):
        return x + torch.tensor([self.value, 2.0, 3.0, 4.0])


def test_programs_differing_only_in_a_constant_never_share_an_entry(tmp_path):
    cache = CompileCache(tmp_path)
    args = (torch.randn(2, 4),)
    for m1, m2 in [(_Offset(0.0), _Offset(1.0))]:
        a1 = lowerkit.compile(m1, args, cache=cache)
        a2 = lowerkit.compile(m2, args, cache=cache)
        assert not a1.cache_hit and not a2.cache_hit
        assert torch.equal(a1(*args), m1(*args)) and torch.equal(a2(*args), m2(*args))
    assert cache.stats.stores == 2


def test_inline_weights_differing_only_in_a_weight_never_share_an_entry(tmp_path):
    cache = CompileCache(tmp_path)
    m1, args = _linear(0.0)
    m2, _ = _linear(1.0)
    a1 = lowerkit.compile(m1, args, cache=cache, weights="inline")
    a2 = lowerkit.compile(m2, args, cache=cache, weights="inline")
    assert not a1.cache_hit and not a2.cache_hit
    assert cache.stats.stores == 2 and len(list(tmp_path.glob("*/*.lkc"))) == 2
    with torch.no_grad():
        assert torch.allclose(a1(*args), m1(*args), atol=1e-5)
        assert torch.allclose(a2(*args), m2(*args), atol=1e-5)
    assert not torch.allclose(a1(*args), a2(*args))


def test_hit_skips_iree_compile(tmp_path, monkeypatch):
    cache = CompileCache(tmp_path)
    m, args = _linear()
    start = time.perf_counter()
    first = lowerkit.compile(m, args, cache=cache)
    miss_s = time.perf_counter() - start

    def refuse(*a, **k):
        raise AssertionError("iree-compile called on a cache hit")

    monkeypatch.setattr(compiler, "compile_to_vmfb", refuse)
    start = time.perf_counter()
    again = lowerkit.compile(m, args, cache=cache)
    hit_s = time.perf_counter() - start
    print(f"\ncompile {miss_s:.2f}s, cache hit {hit_s:.2f}s ({hit_s / miss_s:.0%})")
    assert again.cache_hit and again.vmfb == first.vmfb
    assert [r.name for r in again.records] == [r.name for r in first.records]
    assert torch.allclose(again(*args), m(*args), atol=1e-5)
    assert hit_s < miss_s  # loose: the hit still imports the model to compute its key


@pytest.mark.parametrize("change", ["target", "flags", "pipeline"])
def test_key_covers_target_flags_and_pipeline(tmp_path, change):
    cache = CompileCache(tmp_path)
    fn, args = (lambda x: x * 3 - 1), (torch.randn(4),)
    lowerkit.compile(fn, args, cache=cache)
    if change == "target":
        art = lowerkit.compile(fn, args, cache=cache, target="cpu:x86-64")
    elif change == "flags":
        art = lowerkit.compile(fn, args, cache=cache, iree_flags=["--iree-opt-level=O1"])
    else:
        base = lowerkit.resolve_pipeline(None)
        other = lowerkit.Pipeline("other", [*base.stages, lowerkit.PassPipelineStage("cse", "cse")])
        art = lowerkit.compile(fn, args, cache=cache, pipeline=other)
    assert not art.cache_hit


def test_host_cpu_is_resolved_as_iree_compile_resolves_it():
    from lowerkit.target import resolve_host_cpu

    host = resolve_host_cpu()
    assert host["cpu"] and host["cpu"] != "host", host
    features = host["cpu_features"].split(",")
    assert features and all(f[:1] in "+-" and len(f) > 1 for f in features), features[:5]
    assert host["target_triple"] and host["data_layout"]


def test_a_host_cpu_asked_ahead_is_read_once_and_a_failure_asked_again(monkeypatch):
    """`prefetch_host_cpu` starts iree-compile's child at once; `resolve_host_cpu` reads that
    child rather than asking again, and keeps the answer; a named CPU asks nothing ahead; a
    failure reaches the caller and is asked again."""
    from lowerkit import target as target_module
    from lowerkit.errors import TargetError

    monkeypatch.setattr(target_module, "_HOST_CPUS", {})
    monkeypatch.setattr(target_module, "_ASKED", {})
    asked = []
    real_ask = target_module._ask

    def ask(cpu_flags):
        asked.append(cpu_flags)
        return real_ask(cpu_flags)

    monkeypatch.setattr(target_module, "_ask", ask)
    host = ("--iree-llvmcpu-target-cpu=host",)
    target_module.prefetch_host_cpu(["--iree-hal-target-device=local", *host])
    assert asked == [host] and host in target_module._ASKED
    first = target_module.resolve_host_cpu(host)
    assert first["cpu"] and first["cpu"] != "host"
    assert target_module.resolve_host_cpu(host) is first and not target_module._ASKED
    target_module.prefetch_host_cpu(host)
    target_module.prefetch_host_cpu(["--iree-llvmcpu-target-cpu=znver4"])
    assert asked == [host]
    bad = ("--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-target-cpu-features=+nonsense")
    for _ in range(2):
        with pytest.raises(TargetError, match="could not resolve the host CPU"):
            target_module.resolve_host_cpu(bad)
    assert asked.count(bad) == 2


def test_compile_asks_for_the_host_cpu_before_it_traces(monkeypatch):
    """`lowerkit.compile` starts the child before `compile_imported` traces the program: the
    child runs meanwhile, and the cache key reads its answer."""
    from lowerkit import api
    from lowerkit import target as target_module

    monkeypatch.setattr(target_module, "_HOST_CPUS", {})
    monkeypatch.setattr(target_module, "_ASKED", {})
    seen = []

    class Stop(Exception):
        pass

    def compile_imported(*args, **kwargs):
        seen.append(dict(target_module._ASKED))
        raise Stop

    monkeypatch.setattr(api, "compile_imported", compile_imported)
    with pytest.raises(Stop):
        lowerkit.compile(lambda x: x + 1, (torch.randn(3),), cache=False)
    assert [list(s) for s in seen] == [[("--iree-llvmcpu-target-cpu=host",)]]
    target_module.resolve_host_cpu(("--iree-llvmcpu-target-cpu=host",))  # reads the child


def test_two_host_cpus_never_share_an_entry(tmp_path, monkeypatch):
    """`cpu` compiles for whatever CPU iree-compile finds: a folder shared between machines
    must key each entry by that CPU, name and features, never by the word "host"."""
    from lowerkit import target as target_module

    real = target_module.resolve_host_cpu()
    cpus = {"a": {**real, "cpu": "znver3", "cpu_features": "+avx2,-avx512f"},
            "b": {**real, "cpu": "sapphirerapids", "cpu_features": "+avx2,+avx512f"},
            "a-fewer-features": {**real, "cpu": "znver3", "cpu_features": "+avx2,-avx512f,-fma"}}
    resolved = []

    def on(machine):
        def resolve(cpu_flags=()):
            resolved.append(cpu_flags)
            return cpus[machine]
        monkeypatch.setattr(target_module, "resolve_host_cpu", resolve)

    cache = CompileCache(tmp_path)
    fn, args = (lambda x: x * 3 - 1), (torch.randn(4),)
    hits = {}
    for machine in ("a", "b", "a-fewer-features", "a"):
        on(machine)
        hits.setdefault(machine, []).append(lowerkit.compile(fn, args, cache=cache).cache_hit)
    assert hits == {"a": [False, True], "b": [False], "a-fewer-features": [False]}
    assert len(list(tmp_path.glob("*/*.lkc"))) == 3
    assert set(resolved) == {("--iree-llvmcpu-target-cpu=host",)}
    # a named CPU does not depend on the machine: its key never asks what the host is (the
    # compile may ask iree-compile about the named CPU itself: its vector width, for tiles)
    resolved.clear()
    assert not lowerkit.compile(fn, args, cache=cache, target="cpu:x86-64").cache_hit
    assert not [flags for flags in resolved if any(f.endswith("=host") for f in flags)], resolved


def test_corrupted_entry_is_detected_and_recompiled(tmp_path):
    cache = CompileCache(tmp_path)
    m, args = _linear()
    lowerkit.compile(m, args, cache=cache)
    [entry] = tmp_path.glob("*/*.lkc")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    art = lowerkit.compile(m, args, cache=cache)
    assert not art.cache_hit and cache.stats.corrupt == 1
    assert torch.allclose(art(*args), m(*args), atol=1e-5)
    assert lowerkit.compile(m, args, cache=cache).cache_hit   # rewritten whole


def test_location_from_environment_and_off_switch(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", str(tmp_path / "c"))
    assert resolve_cache(None).directory == tmp_path / "c"
    assert resolve_cache(False) is None
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", "off")
    assert resolve_cache(None) is None
    assert resolve_cache(tmp_path).directory == tmp_path


# slow tier (22 s): a multi-process check, as the README's test tiers say
@pytest.mark.slow
def test_concurrent_processes_compile_once(tmp_path):
    script = textwrap.dedent("""
        import torch, lowerkit
        art = lowerkit.compile(lambda x: torch.sin(x) + 2, (torch.ones(3),))
        assert torch.allclose(art(torch.ones(3)), torch.sin(torch.ones(3)) + 2)
        print("HIT" if art.cache_hit else "MISS")
    """)
    env = {**os.environ, "LOWERKIT_CACHE_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].split()[-1] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(outs) == ["HIT", "MISS"]   # the second waited for the first's entry
    assert len(list(tmp_path.glob("*/*.lkc"))) == 1


@pytest.mark.slow  # 50 s: a pytest session in a child process
def test_each_test_session_gets_a_fresh_cache_folder(tmp_path):
    """The suite's conftest gives a session (and its xdist workers) one new folder, removed at
    the end; an outer LOWERKIT_CACHE_DIR is left alone, and `off` stays off."""
    import json
    import shutil
    from pathlib import Path

    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path)
    (tmp_path / "test_where.py").write_text(textwrap.dedent("""
        import json, os, pytest
        from lowerkit.cache import default_directory

        @pytest.mark.parametrize("n", [0, 1])
        def test_where(n):
            d = default_directory()
            report = {"dir": str(d), "files": None if d is None else sorted(map(str, d.iterdir()))}
            with open(os.path.join(os.environ["REPORTS"], f"{n}.json"), "w") as f:
                json.dump(report, f)
    """))
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "left-by-another-run").write_text("x")
    env = {k: v for k, v in os.environ.items() if k != "LOWERKIT_TEST_SESSION_CACHE"}

    def session(cache_env, *options):
        reports = Path(tempfile.mkdtemp(dir=tmp_path, prefix="reports-"))
        run_env = {**env, "LOWERKIT_CACHE_DIR": cache_env, "REPORTS": str(reports)}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *options, "test_where.py"], cwd=tmp_path, env=run_env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return [json.loads((reports / f"{n}.json").read_text()) for n in (0, 1)]

    first, second = session(str(outer), "-n", "2")
    assert first["dir"] == second["dir"]               # one folder for the session's workers
    assert first["dir"] != str(outer) and first["files"] == [] and second["files"] == []
    assert not Path(first["dir"]).exists()             # removed when the session ends
    assert [p.name for p in outer.iterdir()] == ["left-by-another-run"]
    off, _ = session("off", "-p", "no:xdist")
    assert off["dir"] == "None"


@pytest.mark.parametrize("as_type", [Path, str], ids=["Path", "str"])
def test_a_script_given_by_path_is_keyed_by_what_it_holds(tmp_path, as_type):
    """A PDL or transform file is read when its stage runs: editing it must change the key
    (it held the file's name only, so an edited script got the old script's code)."""
    from lowerkit.cache import pipeline_fingerprint
    from lowerkit.pipelines.stage_kinds import DOUBLE_NEGATION_PDL

    script = tmp_path / "patterns.mlir"
    script.write_text(DOUBLE_NEGATION_PDL)
    pipeline = lowerkit.Pipeline("p", [lowerkit.PDLStage("fold", as_type(script))])
    before = pipeline_fingerprint(pipeline)
    assert before == pipeline_fingerprint(pipeline)  # stable while the file is unchanged
    script.write_text(DOUBLE_NEGATION_PDL.replace("arith.negf", "arith.negf ", 1))
    assert pipeline_fingerprint(pipeline) != before
