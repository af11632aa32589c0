"""The compile ladder: when iree-compile rejects lowerkit's fast CPU configuration, the same
program is compiled with the next safer one, which the Artifact and its stage table name."""

from __future__ import annotations

import warnings

import pytest
import torch

import lowerkit
from lowerkit.errors import StageError, UnsupportedError
from lowerkit.iree import compiler
from lowerkit.runtime.numerics import compare


def _f(x):
    return torch.tanh(x) @ x.T


def _refusing(monkeypatch, failures: int, error=StageError):
    """iree-compile 'rejects' the first ``failures`` configurations it is given."""
    real, tried = compiler._compile_once, []

    def once(bytecode, target, extra, dropped, *rest):
        tried.append(dropped)
        if len(tried) <= failures:
            raise error(compiler.STAGE, "iree-compile exited with status 1: planted", [], None,
                        "iree-compile planted.mlir")
        return real(bytecode, target, extra, dropped, *rest)
    monkeypatch.setattr(compiler, "_compile_once", once)
    monkeypatch.setattr(compiler, "_WARNED", set())
    return tried


@pytest.mark.parametrize("rung", range(len(compiler.LADDER)),
                         ids=[name for name, _ in compiler.LADDER])
def test_each_rung_compiles_what_the_faster_ones_rejected(monkeypatch, rung):
    tried = _refusing(monkeypatch, rung)
    x = torch.randn(4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = lowerkit.compile(_f, (x,), cache=False)
    name, dropped = compiler.LADDER[rung]
    assert art.compile_rung == name
    assert tried[-1] == dropped and len(tried) == rung + 1
    assert compare(art(x), _f(x)).ok
    said = [str(w.message) for w in caught if "safer rung" in str(w.message)]
    assert len(said) == (rung > 0) and (not said or f"'{name}'" in said[0])
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(art.stage_table())
    assert f"rung: {name}" in console.export_text()


def test_every_rung_failing_raises_the_fast_configurations_error(monkeypatch):
    tried = _refusing(monkeypatch, len(compiler.LADDER))
    with pytest.raises(StageError, match="planted"):
        lowerkit.compile(_f, (torch.randn(4, 4),), cache=False)
    assert len(tried) == len(compiler.LADDER)


def test_a_refusal_of_the_target_is_not_retried(monkeypatch):
    tried = _refusing(monkeypatch, 1, UnsupportedError)
    with pytest.raises(UnsupportedError):
        lowerkit.compile(_f, (torch.randn(4, 4),), cache=False)
    assert len(tried) == 1


def test_gpu_targets_have_one_rung():
    assert [n for n, _ in compiler.ladder(lowerkit.Target.parse("vulkan").compile_flags())] == \
        ["fast"]
    assert len(compiler.ladder(lowerkit.Target.parse("cpu").compile_flags())) == 5


@pytest.mark.parametrize("program", ["layer_norm", "int64_sum"])
def test_cuda_compiles_64_bit_reductions_on_its_second_rung(monkeypatch, program):
    """IREE 3.13's CUDA reduction pipeline fails to distribute a reduction of 64-bit elements:
    an int64 sum, and torch-mlir's var_mean in f64 (every LayerNorm). The second rung compiles
    them (compiled only: no GPU here; benchmarks/cuda_weights.py runs them on one)."""
    monkeypatch.setattr(compiler, "_WARNED", set())
    model, args = {"layer_norm": (torch.nn.LayerNorm(64).eval(), (torch.randn(2, 8, 64),)),
                   "int64_sum": (lambda m: (m.long() * 3).sum(-1), (torch.rand(4, 32) > 0.5,))
                   }[program]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = lowerkit.compile(model, args, target="cuda:sm_80", cache=False)
    assert art.compile_rung == compiler.CUDA_REDUCTION_RUNG
    assert any(f"'{compiler.CUDA_REDUCTION_RUNG}'" in str(w.message) for w in caught)


class _ConvFront(torch.nn.Module):
    """Whisper's convolutional front end, small: two 1-D convolutions (the second strided),
    GELU, then time-major plus positions. Per tap, the second convolution's last matmul fuses
    with the transposing add and overflows IREE's 32 KiB stack limit with data tiling."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(16, 384, 3, padding=1)
        self.c2 = torch.nn.Conv1d(384, 384, 3, stride=2, padding=1)
        self.pos = torch.nn.Parameter(torch.randn(100, 384))

    def forward(self, x):
        h = torch.nn.functional.gelu(self.c2(torch.nn.functional.gelu(self.c1(x))))
        return h.permute(0, 2, 1) + self.pos


def test_per_tap_convolutions_go_whole_before_data_tiling_is_dropped(tmp_path, monkeypatch):
    """The fast rung rejected the per-tap form: the program is imported again with its
    convolutions whole, which the fast rung takes, rather than losing data tiling for every
    matmul ('no data tiling': Whisper's encoder at 783 ms a call, against 383 whole). A
    stored choice of per tap (`lowerkit tune`) is then not what the code does. One tap a
    matmul: three (`TAPS_PER_MATMUL`, CPUs without AVX-512) take this program on the fast
    rung, which the test needs to reject it."""
    from lowerkit import tuning
    from lowerkit.ingress import decompositions

    monkeypatch.setattr(decompositions, "TAPS_PER_MATMUL", 1)
    db = tuning.TuningDatabase(tmp_path / "tuning.json")
    db.record(tuning.cpu_key("cpu"), "conv1d in1x16x200 w384x16x3 s1 p1 d1 bias", tuning.TAPS,
              {"why": "written by the test"})
    db.save()
    monkeypatch.setenv(tuning.ENV, str(db.path))
    compiles = _spy_compiles(monkeypatch)
    torch.manual_seed(0)
    front, x = _ConvFront().eval(), torch.randn(1, 16, 200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = lowerkit.compile(front, (x,), cache=False)
    assert art.compile_rung == "fast, convolutions whole", art.compile_rung
    # per tap on the fast rung, then whole on it: no compile on a safer rung (each failed one
    # there is a compile's time; Whisper's encoder spent 8 s of 12 on them)
    assert compiles == [(), ()], compiles
    assert any("convolution(s) written per tap were left whole" in str(w.message)
               for w in caught), [str(w.message) for w in caught]
    assert "torch.aten.convolution" in art.records[0].ops  # the import it kept
    assert art.tuned == {}  # the stored per-tap choice did not decide the code
    with torch.no_grad():
        assert compare(art(x), front(x)).ok


# slow on a 2-core Zen 3 (the suite's budget is 20 min): 20 s: two rejected rungs compiled in
# turn; each rung alone stays covered
@pytest.mark.slow
def test_per_tap_convolutions_take_a_safer_rung_when_whole_ones_need_one_too(tmp_path,
                                                                             monkeypatch):
    """The fast configuration rejects the program per tap and whole alike (a stand-in
    iree-compile that refuses it): the per-tap program, as its import and the stored choice
    wrote it, goes down the ladder, as it did before whole was tried first."""
    from lowerkit import tuning
    from lowerkit.errors import StageError

    from lowerkit.ingress import decompositions

    # one tap a matmul: data tiling fails on it (three a matmul, on CPUs without AVX-512, not)
    monkeypatch.setattr(decompositions, "TAPS_PER_MATMUL", 1)
    db = tuning.TuningDatabase(tmp_path / "tuning.json")
    stored = "conv1d in1x16x200 w384x16x3 s1 p1 d1 bias"
    db.record(tuning.cpu_key("cpu"), stored, tuning.TAPS, {"why": "written by the test"})
    db.save()
    monkeypatch.setenv(tuning.ENV, str(db.path))
    compiles = _spy_compiles(monkeypatch, lambda dropped: None if dropped else StageError(
        "iree-compile", "refused by the test's stand-in"))
    torch.manual_seed(0)
    front, x = _ConvFront().eval(), torch.randn(1, 16, 200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        art = lowerkit.compile(front, (x,), cache=False)
    assert not art.compile_rung.startswith("fast"), art.compile_rung
    # per tap and whole on the fast rung, then per tap down the ladder (data tiling is what
    # fails on this program: its fast rung, and the two rungs that keep data tiling)
    assert compiles[:3] == [(), (), ()] and len(compiles) == 6, compiles
    assert "torch.aten.convolution" not in art.records[0].ops  # both convolutions per tap
    assert art.tuned == {stored: tuning.TAPS}, art.tuned
    with torch.no_grad():
        assert compare(art(x), front(x)).ok


def test_a_per_tap_program_the_target_cannot_run_is_refused_after_one_compile(monkeypatch):
    """An UnsupportedError (the target lacks what the program asks, e.g. Int64 on portable
    Vulkan) is not a configuration the whole-convolution retry can help: refused at once."""
    from lowerkit.errors import UnsupportedError

    compiles = _spy_compiles(monkeypatch, lambda dropped: UnsupportedError(
        "iree-compile", "refused by the test's stand-in"))
    torch.manual_seed(0)
    with pytest.raises(UnsupportedError, match="stand-in"):
        lowerkit.compile(_ConvFront().eval(), (torch.randn(1, 16, 200),), cache=False)
    assert compiles == [()], compiles


def _spy_compiles(monkeypatch, refuse=None) -> list:
    """The flags each iree-compile run drops, in order; ``refuse(dropped)`` may return an error
    that the run raises instead of compiling (a stand-in iree-compile)."""

    compiles, real = [], compiler._compile_once

    def spy(bytecode, target, extra, dropped, *args, **kwargs):
        compiles.append(dropped)
        error = refuse(dropped) if refuse else None
        if error is not None:
            raise error
        return real(bytecode, target, extra, dropped, *args, **kwargs)

    monkeypatch.setattr(compiler, "_compile_once", spy)
    return compiles


def test_rejected_data_tiled_convolutions_compile_as_the_rule_writes_them(monkeypatch):
    """`tuning.DATA_TILED` rejected on the fast rung: the program is imported again with its
    convolutions as the rule writes them (per tap here) and compiled on the fast rung, not
    sent down the ladder, whose safer rungs drop data tiling (ResNet-50: 71 against 57 ms)."""
    from lowerkit import tuning

    flags_seen = []
    real = compiler._compile_once

    def once(bytecode, target, extra, dropped, *rest, **kwargs):
        flags_seen.append((tuple(extra), dropped))
        if tuning.DATA_TILED_FLAGS[2] in extra:
            raise StageError(compiler.STAGE, "iree-compile exited with status 1: planted", [],
                             None, "iree-compile planted.mlir")
        return real(bytecode, target, extra, dropped, *rest, **kwargs)
    monkeypatch.setattr(compiler, "_compile_once", once)
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(16, 16, 3, padding=1).eval()
    x = torch.randn(1, 16, 10, 10)
    with tuning.forced_convolutions(tuning.DATA_TILED), pytest.warns(UserWarning, match="rule"):
        art = lowerkit.compile(conv, (x,), cache=False)
    assert len(flags_seen) == 2, flags_seen
    assert tuning.DATA_TILED_FLAGS[2] in flags_seen[0][0] and not flags_seen[0][1]
    assert tuning.DATA_TILED_FLAGS[2] not in flags_seen[1][0] and not flags_seen[1][1]
    assert art.compile_rung == "fast, convolutions by the rule", art.compile_rung
    with torch.inference_mode():
        check = compare(art(x), conv(x))
    assert check.ok, check.message


_NORMED_HEAD = """
import torch

class NormedHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return torch.nn.functional.gelu(self.norm(self.linear(x))).softmax(-1)
"""


@pytest.mark.parametrize("source", ["test_compile_ladder_head.py", "<string>"])
def test_a_failure_iree_blames_on_its_optimization_level_keeps_the_other_fast_flags(monkeypatch,
                                                                                     source):
    """IREE 3.13 at -O2/-O3 rejects this training graph's forward on every x86 CPU ("write
    affecting operations on global resources are restricted to workgroup distributed
    contexts"); at its default level it compiles. The ladder drops that flag alone, at once:
    one failed compile, not four, and data tiling and microkernels stay. Defined in
    ``<string>`` (``python -c``, a notebook), the ops' locations are not a file's, and IREE's
    message was not among the diagnostics lowerkit parses: the ladder reads all of it."""
    namespace: dict = {}
    exec(compile(_NORMED_HEAD, source, "exec"), namespace)
    _NormedHead = namespace["NormedHead"]
    real, tried = compiler._compile_once, []

    def once(bytecode, target, extra, dropped, *rest):
        tried.append(dropped)
        return real(bytecode, target, extra, dropped, *rest)
    monkeypatch.setattr(compiler, "_compile_once", once)
    monkeypatch.setattr(compiler, "_WARNED", set())
    torch.manual_seed(0)
    model = _NormedHead()
    x = torch.randn(4, 16)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="lowerkit", options={"strict": True, "cache": False})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(x)
    assert compare(got, model(x)).ok
    forward = [t for t in tried if "--iree-opt-level=O3" in t]
    assert tried[0] == () and forward == [("--iree-opt-level=O3",)], tried
    said = [str(w.message) for w in caught if "safer rung" in str(w.message)]
    assert said and "'fast, no O3'" in said[0], said


@pytest.mark.parametrize("channels,size", [(256, 12), (320, 7)], ids=["efficientnet-v2-s",
                                                                       "mobilenet-v2"])
def test_a_cnn_head_and_its_global_pool_compile_on_the_fast_rung(channels, size):
    """A 1x1 convolution to 1280 channels, BatchNorm and an activation, then the global average
    pool: fused into one dispatch, its tiles overflowed IREE's stack limit and the whole model
    fell to a slower rung (`fence-reduced-convolutions` keeps them apart)."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(1280)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    head = torch.nn.Sequential(torch.nn.Conv2d(channels, 1280, 1, bias=False), bn,
                               torch.nn.SiLU(), torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten()).eval()
    x = torch.randn(1, channels, size, size)
    art = lowerkit.compile(head, (x,), target="cpu", cache=False)
    assert art.compile_rung == "fast"
    with torch.no_grad():
        result = compare(art(x), head(x))
    assert result.ok, result.message


def test_fenced_dynamic_values_compile_on_the_fast_rung():
    """A packed projection's transpose (`fence-transposed-matmul-results`) and a convolution
    head's pool (`fence-reduced-convolutions`) over a dynamic size: the fence's barrier carries
    the value's dynamic dims (``compute_barrier.start`` takes them as operands; without them
    the module failed to verify)."""
    torch.manual_seed(0)

    class Fenced(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(32, 96)
            self.head = torch.nn.Conv2d(8, 16, 1)

        def forward(self, tokens, image):
            q, k, v = self.proj(tokens).unflatten(-1, (3, 32)).transpose(0, 1).unbind(0)
            return q * k + v, self.head(image).relu().mean((2, 3))

    model = Fenced().eval()
    args = (torch.randn(7, 32), torch.randn(1, 8, 9, 9))
    seq, side = torch.export.Dim("seq", min=2, max=64), torch.export.Dim("side", min=2, max=32)
    art = lowerkit.compile(model, args, target="cpu", cache=False,
                           dynamic_shapes=({0: seq}, {2: side, 3: side}))
    assert art.compile_rung == "fast"
    for n, s in ((7, 9), (20, 5)):
        inputs = (torch.randn(n, 32), torch.randn(1, 8, s, s))
        with torch.no_grad():
            for got, want in zip(art(*inputs), model(*inputs)):
                result = compare(got, want)
                assert result.ok, result.message
