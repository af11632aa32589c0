"""``lowerkit profile`` (`lowerkit.tools.profile`): each dispatch's time inside a real call, from
IREE's runtime profiling, adds up to the call and counts each run of a dispatch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit.runtime.yielding_wait import batch_child
from lowerkit.tools import profile as profile_module
from lowerkit.tools.profile import kind_of


class _TheSameLayerThrice(torch.nn.Module):
    """One Linear and ReLU applied three times: IREE compiles one dispatch for at least two of
    them and runs it that many times a call."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(256, 256)

    def forward(self, x):
        for _ in range(3):
            x = torch.relu(self.layer(x))
        return x


def test_profile_times_each_dispatch_inside_the_call(monkeypatch):
    torch.manual_seed(0)
    model, x = _TheSameLayerThrice().eval(), torch.randn(512, 256)
    started = []
    real_run = profile_module.subprocess.run

    def run(cmd, *args, **kwargs):
        started.append((Path(cmd[0]).name, kwargs.get("preexec_fn")))
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(profile_module.subprocess, "run", run)
    prof = lowerkit.profile(model, (x,), calls=4, cache=False)
    # the benchmark's calls wait as lowerkit's own calls do (`runtime.yielding_wait`)
    assert ("iree-benchmark-module", batch_child) in started, started
    assert prof.driver in ("local-task", "local-sync")
    matmuls = [d for d in prof.dispatches if kind_of(d.name) == "matmul_like"]
    assert matmuls, [d.name for d in prof.dispatches]
    assert sum(d.runs_per_call for d in matmuls) == 3 and max(d.runs_per_call for d in matmuls) >= 2, [(d.name, d.runs_per_call) for d in matmuls]
    # no more than the call (IREE's own call, timed by the same tool; 10 % over allows the
    # tool's own timer around a millisecond call), and no less than the three matmuls'
    # 201 MFLOP take at 640 GFLOP/s, above any 2-core x86's fp32 peak (2 cores x 2 AVX-512
    # FMA units x 5 GHz): a share of the call would not hold on a loaded machine, where the
    # call's host side grows and the kernels do not
    flops = 3 * 2 * 512 * 256 * 256
    assert flops / 640e9 * 1e3 < prof.dispatch_ms <= 1.1 * prof.call_ms, prof.to_json()
    assert prof.dispatches == sorted(prof.dispatches, key=lambda d: -d.ms_per_call)
    assert prof.executions_per_call == 1, prof.to_json()  # no barrier splits this program
    assert prof.by_kind()["matmul_like"] == pytest.approx(sum(d.ms_per_call for d in matmuls))


def test_profile_cli_prints_the_slowest_dispatches(tmp_path, capsys):
    from lowerkit.cli import main

    out = tmp_path / "profile.json"
    assert main(["profile", "mlp", "--calls", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dispatch" in printed and "a call:" in printed
    import json

    data = json.loads(out.read_text())
    assert data["model"] == "mlp" and data["dispatches"], data


@pytest.mark.parametrize("name,kind", [
    ("main_dispatch_3_matmul_like_4x1500x16_f32", "matmul_like"),
    ("_encoding_0_encode_4x1500x16xf32_to_4x1500x16xf32", "encode"),
    ("main_dispatch_10_attention_6x1500x64x64x1500", "attention"),
])
def test_dispatch_kinds(name, kind):
    assert kind_of(name) == kind


class _Recording:
    """An artifact that notes, at each call, whether its CPU driver was already chosen."""

    def __init__(self, art):
        self._art, self.settled_at_call = art, []

    def __call__(self, *args, **kwargs):
        self.settled_at_call.append(self._art.executable.settled)
        return self._art(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._art, name)


def test_profile_times_python_calls_after_the_driver_trials(monkeypatch):
    # The first calls of a local-task program alternate with a local-sync twin, five each;
    # "ms from Python" timed over them mixed both drivers (a 4 ms GEMM read 9 ms).
    monkeypatch.delenv("LOWERKIT_CPU_DRIVER", raising=False)
    torch.manual_seed(0)
    art = lowerkit.compile(torch.nn.Linear(64, 64).eval(), (torch.randn(8, 64),), cache=False)
    assert not art.executable.settled
    recording = _Recording(art)
    prof = profile_module.profile_artifact(recording, (torch.randn(8, 64),), calls=3, seconds=0)
    timed = recording.settled_at_call[-3:]
    assert all(timed) and not recording.settled_at_call[1], recording.settled_at_call
    assert prof.lowerkit_call_ms > 0
