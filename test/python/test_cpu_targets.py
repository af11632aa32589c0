"""Named CPU targets: the zoo compiles for each x86-64 CPU a user may have and runs wherever this
host can; an artifact for CPU features this host lacks is refused before its code runs."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.runtime import cpu_features
from lowerkit.target import resolve_host_cpu
from lowerkit.zoo import ZOO
from lowerkit.zoo.coverage import check_model

# Named CPUs of issue 21/20: from the oldest a user may have (x86-64-v2: SSE4.2, no AVX) to
# AVX-512 with AMX. IREE picks tiles and ukernels per CPU, so each compiles differently.
CPUS = ("x86-64-v2", "x86-64-v3", "skylake-avx512", "znver4", "sapphirerapids")
# conv + BatchNorm + pooling, and attention + embeddings + LayerNorm: the two kinds of code
# whose tiles depend most on the CPU (the stack-limit and vector.store failures of issue 20).
MODELS = ("simple_cnn", "bert_tiny")


def _lacking(cpu: str) -> list[str]:
    return cpu_features.missing(resolve_host_cpu((f"--iree-llvmcpu-target-cpu={cpu}",))["cpu_features"])


# By default the CNN on both ends of the range and on x86-64-v3 (AVX2), and the transformer on
# the AVX-512/AMX end, which no other default test compiles for on an AVX2 host; the rest in the
# slow tier (a compile is 10-20 s a CPU on a 2-core Zen 3, and the suite's budget is 20 minutes).
DEFAULT_CPUS = {"simple_cnn": ("x86-64-v2", "x86-64-v3", "sapphirerapids"),
                "bert_tiny": ("sapphirerapids",)}
CASES = [pytest.param(model, cpu, id=f"{model}-{cpu}",
                      marks=[] if cpu in DEFAULT_CPUS[model] else [pytest.mark.slow])
         for model in MODELS for cpu in CPUS]


@pytest.mark.parametrize("model,cpu", CASES)
def test_zoo_model_on_a_named_cpu(cpu, model):
    """Compiled for ``cpu`` (always), and run against eager where this host has its features."""
    lacking = _lacking(cpu)
    if not lacking:
        result = check_model(ZOO[model], target=f"cpu:{cpu}", cache=False)
        assert result.ok, f"{model} for {cpu} stopped at {result.stage}: {result.message}"
        return
    net, args, kwargs = ZOO[model].make()
    art = lowerkit.compile(net, args, kwargs, target=f"cpu:{cpu}", cache=False)
    assert art.cpu["cpu"] == cpu
    with pytest.raises(lowerkit.TargetError, match=lacking[0]):
        art(*args, **kwargs)


def test_missing_features_are_named_in_llvm_terms():
    host = frozenset({"sse4_2", "avx", "avx2", "fma", "avx512f", "bmi1"})
    assert cpu_features.missing("+avx2,+fma,+avx512f,+bmi,-amx-tile", host) == []
    assert cpu_features.missing("+avx2,+avx512bw,+amx-tile,+amx-int8", host) == [
        "avx512bw", "amx-tile", "amx-int8"]
    # system features codegen never emits are not held against the host
    assert cpu_features.missing("+avx2,+xsave,+shstk,+rdpid", host) == []
    # a later entry overrides an earlier one (iree-compile's `host`: the model's, then the VM's)
    assert cpu_features.missing("+avx2,+amx-tile,+avx512bw,-amx-tile,-avx512bw", host) == []


def test_this_hosts_own_cpu_is_accepted():
    assert cpu_features.missing(resolve_host_cpu()["cpu_features"]) == []


def _foreign_cpu() -> tuple[str, list[str]]:
    """A named CPU whose code may use features this host lacks."""
    for cpu in ("sapphirerapids", "graniterapids", "znver4", "znver5", "skylake-avx512"):
        lacking = _lacking(cpu)
        if lacking:
            return cpu, lacking
    pytest.skip("this host has every feature of the CPUs tried")


def test_an_artifact_for_features_this_host_lacks_is_refused_also_after_save(tmp_path):
    cpu, lacking = _foreign_cpu()
    x = torch.randn(8, 8)
    art = lowerkit.compile(lambda a: (a @ a).relu(), (x,), target=f"cpu:{cpu}", cache=False)
    path = art.save(tmp_path / "foreign.lkart")
    loaded = lowerkit.Artifact.load(path)  # inspecting a saved artifact is fine ...
    assert loaded.cpu == art.cpu and loaded.stage_table() is not None
    with pytest.raises(lowerkit.TargetError) as e:  # ... loading it onto this CPU is not
        loaded(x)
    message = str(e.value)
    assert f"'{cpu}'" in message and all(f in message for f in lacking)
    assert cpu_features.host_model() in message
