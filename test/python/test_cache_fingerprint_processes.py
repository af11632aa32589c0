"""A fingerprint stands for its program in the processes after the one that traced it (issue 73):
a fresh process with a warm cache binds its weights to the stored code without loading
torch.export, Dynamo or torch-mlir's importer, and anything that changes the program between
the processes, or holds in one process only, is traced again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import lowerkit
from lowerkit import cache as cache_module
from lowerkit.ingress.fingerprint import fingerprint

SCRIPT = textwrap.dedent("""
    import json, os, sys
    import torch
    import lowerkit
    from torch import nn

    SCALE = float(os.environ.get("SCALE", "2.0"))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)  # folded into the convolution: a derived weight

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x))) * SCALE  # BODY

    torch.manual_seed(int(os.environ["SEED"]))
    model = Net().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 10, 10)
    art = lowerkit.compile(model, (x,), cache=sys.argv[1])
    got = art(x)
    with torch.no_grad():
        want = model(x)
    heavy = ("torch._dynamo", "sympy", "torch_mlir.extras.fx_importer", "torch.export._trace")
    print(json.dumps({"note": art.cache_note,
                      "error": float((got - want).abs().max() / want.abs().max()),
                      "loaded": [m for m in heavy if m in sys.modules]}))
""")


def _run(tmp_path, seed: int, scale: str = "2.0", body: str | None = None) -> dict:
    script = tmp_path / "net.py"
    text = SCRIPT if body is None else SCRIPT.replace(
        "return torch.relu(self.bn(self.conv(x))) * SCALE  # BODY", body)
    script.write_text(text)
    env = {**os.environ, "SEED": str(seed), "SCALE": scale}
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "cache")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_second_process_binds_new_weights_to_the_stored_code_without_tracing(tmp_path):
    first = _run(tmp_path, seed=0)
    assert first["note"].startswith("miss"), first
    assert first["error"] < 1e-5, first
    second = _run(tmp_path, seed=1)  # another checkpoint, in a fresh process
    assert second["note"].startswith("hit: fingerprint, kept by an earlier process"), second
    assert second["error"] < 1e-5, second  # its own weights, the BN folded from them
    assert second["loaded"] == [], f"a fingerprint hit loaded the tracer: {second['loaded']}"


@pytest.mark.slow
@pytest.mark.parametrize("change", ["a global forward reads", "forward's code"])
def test_a_program_changed_between_processes_is_traced_again(tmp_path, change):
    assert _run(tmp_path, seed=0)["note"].startswith("miss")
    if change == "a global forward reads":
        again = _run(tmp_path, seed=0, scale="3.0")
    else:
        again = _run(tmp_path, seed=0, body="return torch.sigmoid(self.bn(self.conv(x))) * SCALE")
    assert not again["note"].startswith("hit: fingerprint"), again
    assert again["error"] < 1e-5, again


class Act:
    """A callable object a forward reads as a global: it stands by its identity."""

    def __call__(self, x):
        return torch.relu(x)


ACT = Act()


class ByIdentity(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return ACT(self.lin(x))


def test_a_fingerprint_that_holds_in_one_process_only_is_not_kept(tmp_path):
    model, args = ByIdentity(), (torch.randn(2, 8),)
    print_ = fingerprint(model, args, {}, None, {})
    assert print_ is not None and not print_.portable, print_.local
    assert "identity" in print_.local
    lowerkit.compile(model, args, cache=tmp_path)
    assert not list(tmp_path.glob("fingerprints/*/*")), "kept for other processes"
    again = lowerkit.compile(model, args, cache=tmp_path)  # this process still knows it
    assert again.cache_note.startswith("hit: fingerprint (not traced"), again.cache_note


def test_a_custom_operator_is_not_kept_for_other_processes():
    lib = torch.library.Library("lowerkit_fp_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")

    class Custom(torch.nn.Module):
        def forward(self, x):
            return torch.ops.lowerkit_fp_test.twice(x)

    print_ = fingerprint(Custom(), (torch.randn(2),), {}, None, {})
    assert print_ is not None and not print_.portable
    assert "lowerkit_fp_test" in print_.local


class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.lin(x))


def test_a_malformed_kept_key_is_ignored_and_rewritten(tmp_path):
    model, args = Plain(), (torch.randn(2, 8),)
    lowerkit.compile(model, args, cache=tmp_path)
    kept = list(tmp_path.glob("fingerprints/*/*"))
    assert len(kept) == 1
    key = kept[0].read_text()
    cache_module._FINGERPRINTS.clear()  # as a fresh process
    kept[0].write_text("not a key\n")
    art = lowerkit.compile(model, args, cache=tmp_path)
    assert art.cache_note.startswith("hit: program key"), art.cache_note
    with torch.no_grad():
        torch.testing.assert_close(art(*args), model(*args), rtol=1e-5, atol=1e-6)
    assert kept[0].read_text() == key
    lowerkit.CompileCache(tmp_path).forget()
    assert not list(tmp_path.glob("fingerprints/*/*"))


@pytest.mark.slow  # four fresh interpreters, too long for the quick tier: CI's full tier runs it
def test_a_set_constant_gives_one_fingerprint_whatever_the_hash_seed():
    """``x in {"a", "b"}`` compiles to a frozenset constant, whose order follows the process's
    string hash seed: another process must still find the program."""
    code = textwrap.dedent("""
        import os, sys, torch
        from lowerkit.ingress.fingerprint import fingerprint

        class Pick(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.act = "gelu"

            def forward(self, x):
                if self.act in {"gelu", "relu", "silu", "tanh", "mish", "elu"}:
                    return torch.relu(x)
                return x

        print(fingerprint(Pick(), (torch.randn(2),), {}, None, {}))
    """)
    prints = set()
    for seed in ("1", "2", "3", "4"):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        prints.add(run.stdout.strip())
    assert len(prints) == 1, prints


def test_a_folder_that_refuses_the_kept_key_costs_nothing_but_the_next_trace(tmp_path):
    (tmp_path / "fingerprints").write_text("a file where the folder would be")
    model, args = Plain(), (torch.randn(2, 8),)
    art = lowerkit.compile(model, args, cache=tmp_path)
    assert art.cache_note.startswith("miss: compiled and stored"), art.cache_note
    with torch.no_grad():
        torch.testing.assert_close(art(*args), model(*args), rtol=1e-5, atol=1e-6)
    assert lowerkit.compile(model, args, cache=tmp_path).cache_note.startswith("hit: fingerprint")
