"""The differential fuzzer (`lowerkit.tools.fuzz`): generated programs, and lowerkit against eager.

* ``test_fuzz_ci``: a fixed-seed (``derandomize=True``) subset on CPU, a smaller one on Vulkan
  where it opens a device; ``LOWERKIT_FUZZ_CI_EXAMPLES`` changes its size. Any failure (wrong,
  crash, error) fails it, and so does a share of passed programs under the measured floor
  (`CI_FLOORS`): a lowerkit that refuses most programs must not pass. The breakdown by verdict
  is printed.

The long campaign (2000 programs a target) is not a test: it is ``lowerkit fuzz`` or
``benchmarks/fuzz_campaign.py``, whose journal is stored (a test CI cannot run guards nothing).

On a failure hypothesis shrinks the program and prints the minimal one's source (a `Program`'s
repr is its source); paste it into test_fuzz_regressions.py.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, given, settings

import lowerkit
from lowerkit.tools.fuzz import (FAILURES, FAMILIES, VERDICTS, FuzzFailure, InputSpec, Outcome,
                                 Program, fuzz_targets, half_dependent_outputs, output_tolerances,
                                 programs, run_program, well_conditioned,
                                 AS_ACCURATE_AS_EAGER)

warnings.filterwarnings("ignore", category=FutureWarning)

# 150, not the 200 of the narrower space: its programs (convs, norms, attention at up to 64
# channels) take 1.31x the CPU time to compile; 200 of them took 177 s of CPU against 135 s
# for the old space's 200 (2026-11-25, `time pytest -k test_fuzz_ci_cpu`, 2-core machine)
# 60 of the widened space (issue 21 item 4): the suite's 20 minutes on 2 cores (150 took 515 s
# of one worker in the fresh-clone run at 0515495, the suite 22 min 47 s); the campaign the
# README cites (benchmarks/fuzz_campaign.py) is what measures the space, this is its smoke test.
# CI's sweep is a smoke check sized to the suite's 20-minute budget (30 CPU programs took 105 s
# of a 35-minute suite on 2026-11-27); the 2000-program campaigns the README cites are the
# measure of correctness. 12 CPU programs took 43 s of a 1182 s pytest run on a 2-core Zen 3
# (2026-11-29), still over the budget: 8.
CI_EXAMPLES = int(os.environ.get("LOWERKIT_FUZZ_CI_EXAMPLES", "8"))
CI_VULKAN_EXAMPLES = max(1, CI_EXAMPLES // 2)

# Defects the fuzzer found that have an xfail regression in test_fuzz_regressions.py and whose
# fix is not in the default pipeline yet: the sweep counts them apart instead of failing.
KNOWN_DEFECTS: dict = {
    # name -> predicate on an Outcome, for defects with an xfail regression and no fix yet.
    # ("f64-on-portable-vulkan", float64 constants on the portable vulkan target, is fixed by
    # Target.float64; test_fuzz_regressions.py::test_f64_constants_on_the_portable_*)
    # ("llvm-translation-of-index-cast", a strided slice fused into a gather, is fixed by
    # fence-gathered-slices; test_fuzz_regressions.py::test_strided_slice_into_a_gather)
}


def known_defect(outcome: Outcome) -> str | None:
    for name, matches in KNOWN_DEFECTS.items():
        if matches(outcome):
            return name
    return None


def check(program: Program, target: str, tally: Counter | None = None) -> None:
    outcome = run_program(program, target)
    if tally is not None:
        tally[outcome.kind] += 1
    if outcome.failed and known_defect(outcome) is None:
        raise FuzzFailure(outcome)


# -- the generator ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_generated_programs_are_printable_and_run_eagerly(program):
    src = program.source
    assert src.startswith("def program(") and "return (" in src
    assert repr(program).strip() == src.strip()
    args = program.make_inputs()
    assert len(args) == len(program.inputs)
    for a, spec in zip(args, program.inputs):
        assert a.dtype == spec.dtype and tuple(a.shape) == spec.shape
    # the same seed gives the same inputs, and exec'd source gives the same outputs
    again = program.make_inputs()
    assert all(torch.equal(a, b) for a, b in zip(args, again))
    out = program.function()(*args)
    assert isinstance(out, tuple) and len(out) == len(program.outputs)
    assert all(isinstance(o, torch.Tensor) for o in out)
    # a journal's source parses back to the same program, inputs included
    assert Program.parse(src) == program


def _sample(n: int, **kwargs) -> list[Program]:
    """``n`` programs of a fixed sample (``derandomize``) of ``programs(**kwargs)``."""
    seen: list[Program] = []

    @settings(max_examples=n, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs(**kwargs))
    def collect(p):
        seen.append(p)

    collect()
    return seen


def test_generator_reaches_the_odd_cases():
    """Over a fixed sample, the generator makes every dtype, odd shape and model-like size."""
    seen = _sample(200)  # 150 drew no 64-channel input once max pooling drew its indices
    dtypes = {i.dtype for p in seen for i in p.inputs}
    assert {torch.float32, torch.float16, torch.int64, torch.bool} <= dtypes
    shapes = [i.shape for p in seen for i in p.inputs]
    assert any(0 in s for s in shapes) and any(1 in s for s in shapes)
    # sizes that make IREE tile: 64 channels, 32 wide
    assert any(len(s) >= 3 and s[1] == 64 for s in shapes) and any(32 in s for s in shapes)
    # int64 index inputs (in range)
    assert any(i.high is not None for p in seen for i in p.inputs)


# what each family of ops must make over a fixed sample of programs drawn from it alone
FAMILY_NEEDLES = {
    "shape": ("torch.cat", "F.pad", ":3]", ".permute("),  # :3]: a step
    "mask": ("torch.where", "masked_fill", ".to(torch.float16)"),
    "reduce": (".argmax(", "torch.softmax(", "torch.cumsum("),
    "pool": ("F.max_pool2d", "F.avg_pool2d", "ceil_mode=True", "F.max_pool1d", "F.avg_pool1d",
             "F.adaptive_", "dilation=2"),
    "conv": ("F.conv1d", "F.conv2d", "padding='same'", "dilation=2", "stride=2"),
    "norm": ("F.batch_norm", "training=False", "F.layer_norm", "F.group_norm", "F.instance_norm"),
    "gather": ("F.embedding", "torch.index_select", "torch.gather", ".argmax("),
    "attention": ("F.scaled_dot_product_attention", "is_causal=True", "attn_mask=",
                  "dtype=torch.bool", "torch.softmax(", ".transpose(-2, -1)"),
    "interpolate": ("F.interpolate", "mode='nearest'", "mode='bilinear'", "mode='linear'",
                    "align_corners=True", "align_corners=False", "scale_factor="),
    "matmul": ("@", "F.linear"),
    "promote": (" / ", "torch.where(", " * 1.5"),
    "random": ("torch.rand_like(", "torch.randn_like(", "torch.bernoulli(torch.full_like(",
               "F.dropout(", "training=True"),
}


@pytest.mark.parametrize("family", sorted(FAMILY_NEEDLES))
def test_generator_reaches_what_real_models_do(family):
    chosen = tuple(f for f in FAMILIES if f.name == family)
    assert chosen, f"no family {family!r} in the space"
    seen = _sample(40, families=chosen)
    text = "\n".join(p.source for p in seen)
    for needle in FAMILY_NEEDLES[family]:
        assert needle in text, needle
    if family == "conv":  # grouped (1 < groups < channels) and depthwise (groups == channels)
        groups = _conv_groups(seen)
        assert any(1 < g == c for g, c in groups), "no depthwise conv"
        assert any(1 < g < c for g, c in groups), "no grouped conv"
    if family == "promote":  # ops mixing dtypes, whose result dtype eager promotes
        promoted = {pair for p in seen for pair in _mixed_operands(p)}
        assert {("float16", "float32"), ("int64", "float32"), ("bool", "float32")} <= promoted


def _conv_groups(seen: list[Program]) -> list[tuple[int, int]]:
    """(groups, input channels) of each convolution of the programs, read off the weights."""
    found = []
    for p in seen:
        shapes = {i.name: i.shape for i in p.inputs}
        for line in p.lines:
            m = re.search(r"F\.conv[12]d\(\w+, (\w+),.*groups=(\d+)\)", line)
            if m:
                g = int(m[2])
                found.append((g, shapes[m[1]][1] * g))
    return found


def _mixed_operands(p: Program) -> list[tuple[str, str]]:
    """The (dtype, dtype) pairs of the binary ops of ``p`` whose operands' dtypes differ."""
    env = dict(zip((i.name for i in p.inputs), p.make_inputs()))
    env.update(torch=torch, F=torch.nn.functional)
    pairs = []
    for line in p.lines:
        name, expr = (s.strip() for s in line.split("=", 1))
        m = re.fullmatch(r"(\w+) [-+*/] (\w+)|torch\.maximum\((\w+), (\w+)\)", expr)
        if m and all(g in env for g in m.groups() if g):
            x, y = [g for g in m.groups() if g]
            a, b = (str(env[x].dtype).removeprefix("torch."), str(env[y].dtype).removeprefix("torch."))
            if a != b:
                pairs += [(a, b), (b, a)]
        env[name] = eval(expr, env)
    return pairs


def test_regression_source_is_self_contained():
    p = Program((InputSpec("a", (2, 0), torch.float32), InputSpec("b", (3,), torch.int64)),
                ("v1 = a.sum(1)", "v2 = b * 2"), ("v1", "v2"), seed=3)
    src = p.test_source("test_example")
    assert "def program(a, b):" in src and "def test_example():" in src
    assert "torch.zeros([2, 0], dtype=torch.float32)" in src
    ns = {}
    exec(src, {"torch": torch, "F": torch.nn.functional, "lowerkit": None, "assert_matches_eager": None}, ns)
    assert callable(ns["test_example"])


@torch.library.custom_op("lk_fuzz::no_lowering", mutates_args=())
def _no_lowering(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@_no_lowering.register_fake
def _(x):
    return torch.empty_like(x)


def _program(line: str, dtype=torch.float32, shape=(2, 3)) -> Program:
    return Program((InputSpec("a", shape, dtype),), (f"v1 = {line}",), ("v1",), seed=1)


def test_only_a_deliberate_refusal_is_not_a_failure():
    assert [k for k in VERDICTS if not Outcome(k).failed] == ["passed", "unsupported"]
    assert set(FAILURES) == {"wrong", "crash", "error"}


@pytest.mark.parametrize("line", ["torch.special.bessel_j0(a)",  # torch-mlir has no such op
                                  "torch.ops.lk_fuzz.no_lowering(a)"])  # a custom op, no lowering
def test_refused_ops_are_unsupported(line):
    outcome = run_program(_program(line), cache=False)
    assert outcome.kind == "unsupported", outcome.describe()
    assert outcome.message.startswith("UnsupportedError: ")


@pytest.mark.skipif("vulkan" not in fuzz_targets(), reason="no Vulkan device here")
def test_int64_on_the_portable_vulkan_target_is_unsupported_with_its_hint():
    outcome = run_program(_program("a.abs().clamp(-1, 2)", torch.int64), "vulkan", cache=False)
    assert outcome.kind == "unsupported", outcome.describe()
    assert "64-bit integer arithmetic is not supported on 'vulkan'" in outcome.message


def test_a_bug_in_lowerkits_own_pass_is_an_error(monkeypatch):
    """An AttributeError inside one of lowerkit's passes is a failure, not "unsupported"."""
    from lowerkit.passes import reduction_fence

    def broken(op):
        return op.no_such_attribute

    monkeypatch.setattr(reduction_fence, "fence_for_cpu", broken)
    outcome = run_program(_program("torch.relu(a) * 0.5"), "cpu", cache=False)
    assert outcome.kind == "error" and outcome.failed, outcome.describe()
    assert "fence-reductions" in outcome.message and "no_such_attribute" in outcome.message


def test_an_iree_compile_failure_is_an_error(monkeypatch):
    """iree-compile rejecting lowerkit's IR is a failure (it was "compiler-error", not one)."""
    from lowerkit.iree import compiler

    flags = compiler.COMMON_FLAGS
    monkeypatch.setattr(compiler, "COMMON_FLAGS", [*flags, "--no-such-iree-flag"])
    outcome = run_program(_program("torch.relu(a) * 0.5"), "cpu", cache=False)
    assert outcome.kind == "error" and outcome.failed, outcome.describe()
    assert "StageError: stage 'iree-compile' failed" in outcome.message


def test_a_correct_program_passes_and_a_wrong_answer_is_wrong(monkeypatch):
    p = _program("torch.relu(a) * 0.5")
    assert run_program(p, cache=False).kind == "passed"
    _perturb_compiled_outputs(monkeypatch, torch.float32, 1e-3)
    outcome = run_program(p, cache=False)
    assert outcome.kind == "wrong" and outcome.failed, outcome.describe()


# Mixed dtypes, each output's dtype by torch's promotion: int64 + float32 and float16 + float32
# -> float32, bool * 1.5 -> float32, int64 / int64 -> float32, where(bool, float16, int64) ->
# float16, int64 * 2 -> int64
PROMOTED = Program((InputSpec("a", (4, 8), torch.int64), InputSpec("b", (4, 8), torch.float16),
                    InputSpec("c", (4, 8), torch.float32), InputSpec("d", (4, 8), torch.bool)),
                   ("v1 = a + c", "v2 = b + c", "v3 = d * 1.5", "v4 = a / (a.abs() + 1)",
                    "v5 = torch.where(d, b, a)", "v6 = a * 2"),
                   ("v1", "v2", "v3", "v4", "v5", "v6"), 5)


def test_mixed_dtype_outputs_take_eagers_dtypes():
    assert [o.dtype for o in PROMOTED.function()(*PROMOTED.make_inputs())] == [
        torch.float32, torch.float32, torch.float32, torch.float32, torch.float16, torch.int64]
    outcome = run_program(PROMOTED)
    assert outcome.kind == "passed", outcome.describe()


@pytest.mark.parametrize("dtype,to", [(torch.float32, torch.float64), (torch.int64, torch.int32),
                                      (torch.float16, torch.float32)])
def test_an_output_dtype_differing_from_eager_is_wrong(monkeypatch, dtype, to):
    """The same values in another dtype are a wrong answer, not a pass."""
    from lowerkit.runtime.artifact import Artifact

    call = Artifact.__call__
    monkeypatch.setattr(Artifact, "__call__", lambda self, *args: tuple(
        o.to(to) if o.dtype == dtype else o for o in call(self, *args)))
    outcome = run_program(PROMOTED)
    assert outcome.kind == "wrong" and outcome.failed, outcome.describe()
    assert f"dtype {to}, expected {dtype}" in outcome.message


def test_norms_only_of_well_conditioned_groups():
    """A constant group of several elements normalises to 0 in eager and to ~1e-3 in a valid
    float32 order, (x - sum/N) / sqrt(eps) (fuzz campaign seed 2111, program 63: a false wrong
    answer on cpu and vulkan:llvmpipe): the generator normalises only groups with a spread."""
    assert not well_conditioned(torch.tensor([[11.7545] * 15, [-30.6972] * 15]))
    assert well_conditioned(torch.arange(30.0).reshape(2, 15))
    assert well_conditioned(torch.zeros(2, 4))  # exact: x - mean is 0
    assert well_conditioned(torch.ones(3, 1))  # one element: its mean is itself


def test_index_inputs_stay_in_range_and_parse_back():
    p = Program((InputSpec("a", (5, 3), torch.float32), InputSpec("w0", (64,), torch.int64, 5)),
                ("v1 = torch.index_select(a, 0, w0)",), ("v1",), seed=2)
    assert "w0: [64] int64 in [0, 5)" in p.source
    assert Program.parse(p.source) == p
    idx = p.make_inputs()[1]
    assert int(idx.min()) == 0 and int(idx.max()) == 4  # 64 draws: every index shows up
    assert p.function()(*p.make_inputs())[0].shape == (64, 3)


def _perturb_compiled_outputs(monkeypatch, dtype: torch.dtype, rel: float) -> None:
    """A planted fault: every compiled ``dtype`` output is off by ``rel`` of its scale."""
    from lowerkit.runtime.artifact import Artifact

    call = Artifact.__call__

    def perturbed(self, *args, **kwargs):
        out = call(self, *args, **kwargs)
        return tuple(o + rel * max(float(o.abs().max()), 1.0) if o.dtype == dtype and o.numel()
                     else o for o in out)

    monkeypatch.setattr(Artifact, "__call__", perturbed)


# A group norm of one-element groups after a log_softmax (fuzz campaign seed 2111, programs
# 754-756): 1/sqrt(eps) amplifies the last bit of x - mean, so eager itself is 8e-5 off from a
# float64 evaluation, and lowerkit 5.5e-5 off (on cpu, vulkan and vulkan:llvmpipe alike)
SINGLETON_GROUPS = Program.parse(
    "def program(a, w0, w1, w2, w3):  # a: [4, 1] float32; w0: [1] float32; w1: [1] float32; "
    "w2: [1, 3] float32; w3: [3] float32; seed 214\n"
    "    v1 = torch.log_softmax(a, -2)\n    v2 = F.group_norm(v1, 1, w0, w1)\n"
    "    v3 = F.layer_norm(a, (1,))\n    v4 = F.gelu(v3)\n    v5 = v4.clamp(-1, 2)\n"
    "    v6 = F.linear(v5, w2.t(), w3)\n    return (v2, v6,)\n")


def _compiled_outputs_are(monkeypatch, outputs) -> None:
    """A planted compiler whose every call returns ``outputs(*args)``."""
    from lowerkit.runtime.artifact import Artifact

    monkeypatch.setattr(Artifact, "__call__", lambda self, *args, **kwargs: outputs(*args))


def test_an_output_as_accurate_as_eager_against_float64_passes(monkeypatch):
    """Off from eager past the tolerance, but no further from a float64 evaluation than
    eager is: passed, saying why; off by more than AS_ACCURATE_AS_EAGER times eager's own
    error: wrong."""
    fn = SINGLETON_GROUPS.function()
    args = SINGLETON_GROUPS.make_inputs()
    exact = fn(*(a.double() for a in args))
    eager = fn(*args)
    off = float((eager[0].double() - exact[0]).abs().max())
    assert off > 1e-5 * float(eager[0].abs().max()), "eager is exact here: pick another program"
    _compiled_outputs_are(monkeypatch, lambda *a: tuple(t.float() for t in exact))
    # the session's cache: the compiled code is never run (its calls are planted), so the
    # second verdict need not compile it again
    outcome = run_program(SINGLETON_GROUPS)
    assert outcome.kind == "passed", outcome.describe()
    assert "as accurate as eager against float64" in outcome.message
    worse = (AS_ACCURATE_AS_EAGER + 1) * off
    _compiled_outputs_are(monkeypatch, lambda *a: (exact[0].float() + worse, exact[1].float()))
    outcome = run_program(SINGLETON_GROUPS)
    assert outcome.kind == "wrong", outcome.describe()


# The mean of an instance norm's outputs (fuzzer seed 2118, on cpu with fresh draws): zero but
# for the rounding of the normalised values, which no rounding of the input alone moves
CANCELLING_MEAN = Program.parse(
    "def program(a):  # a: [2, 8, 3] float32; seed 19158\n"
    "    v1 = F.instance_norm(a)\n    v2 = v1.mean(-1)\n    return (v2,)\n")


def test_the_rounding_of_every_value_counts_in_the_conditioning():
    """Judged against the correctly rounded result (as if eager were exact), an output off by
    less than AS_ACCURATE_AS_EAGER times what one rounding of the normalised values moves it is
    as good as float32 allows; off by ten times more, wrong."""
    from lowerkit.tools.fuzz import as_accurate_as_eager, output_tolerances

    args = CANCELLING_MEAN.make_inputs()
    exact = CANCELLING_MEAN.function()(*(a.double() for a in args))[0]
    rounded = (exact.float(),)
    tols = output_tolerances(CANCELLING_MEAN)
    step = 2.0 ** -24  # one rounding of the normalised values, whose scale is 1
    why = as_accurate_as_eager(CANCELLING_MEAN, args, (exact.float() + 2 * step,), rounded, tols)
    assert why is not None and "one rounding of each value moves it" in why, why
    assert as_accurate_as_eager(CANCELLING_MEAN, args, (exact.float() + 20 * step,), rounded,
                                tols) is None


def test_eagers_own_nan_where_float64_has_an_infinity_is_not_held_against_lowerkit():
    """``F.gelu(inf)`` is NaN in eager's vectorised AVX-512 float32 kernel, inf in its scalar one,
    in its AVX2 one and in float64 (seed 2119, program 930). Which eager a host runs is the
    host's: an AMD Zen 3 (AVX2 only) gives inf. So eager's NaN is set here, not taken from the
    host: lowerkit's inf, float64's value, passes; a NaN of lowerkit's own where eager and
    float64 agree on inf stays wrong. The whole run passes on any host."""
    from lowerkit.tools.fuzz import as_accurate_as_eager, output_tolerances

    p = _program("F.gelu(a.abs() / 0)", shape=(4, 16))  # inf, and NaN at 0 / 0
    outcome = run_program(p, cache=False)
    assert outcome.kind == "passed", outcome.describe()

    args = p.make_inputs()
    reference = p.function()(*(a.double() for a in args))[0]
    infinite = reference.isinf()
    assert infinite.any() and reference.isnan().any()
    if p.function()(*args)[0][infinite].isnan().any():  # this host's eager: the NaN kernel
        assert "eager alone" in outcome.message, outcome.describe()
    nan_at_inf = reference.float().masked_fill(infinite, float("nan"))  # the AVX-512 kernel's
    why = as_accurate_as_eager(p, args, (reference.float(),), (nan_at_inf,), output_tolerances(p))
    assert why is not None and f"{int(infinite.sum())} element(s) where eager alone" in why, why
    # the same NaNs as lowerkit's own, where eager has float64's inf: wrong
    assert as_accurate_as_eager(p, args, (nan_at_inf,), (reference.float(),),
                                output_tolerances(p)) is None


# campaign seed 2120, program 407 on the portable Vulkan target, which computes float16 in float32
FLOOR_OF_F16 = Program((InputSpec("a", (2, 2, 32, 16), torch.float16),),
                       ("v1 = a.to(torch.float16)", "v2 = torch.log_softmax(v1, 1)",
                        "v3 = torch.floor(v2 * 0.75)"), ("v3",), 35738)


def test_a_float16_program_computed_in_float32_is_judged_against_float64():
    """``floor(log_softmax(a) * 0.75)`` is -6.00025 before the floor at two elements: eager's
    float16 rounds it to -6, float32 keeps it and floors to -7, as float64 does. The float64
    evaluation used to run in float16 after the program's cast, and called float32 wrong."""
    from lowerkit.tools.fuzz import as_accurate_as_eager, output_tolerances

    args = FLOOR_OF_F16.make_inputs()
    eager = FLOOR_OF_F16.function()(*args)
    in_f32 = (torch.floor(torch.log_softmax(args[0].float(), 1) * 0.75).half(),)
    assert (in_f32[0] != eager[0]).sum() == 2
    why = as_accurate_as_eager(FLOOR_OF_F16, args, in_f32, eager, output_tolerances(FLOOR_OF_F16))
    assert why is not None and "0 off where eager is 1 off" in why, why
    # past AS_ACCURATE_AS_EAGER (3) times the floor's conditioning (1): wrong
    off_by_four = (in_f32[0] - 4 * (in_f32[0] != eager[0]),)
    assert as_accurate_as_eager(FLOOR_OF_F16, args, off_by_four, eager,
                                output_tolerances(FLOOR_OF_F16)) is None


def test_an_output_off_where_eager_is_exact_stays_wrong(monkeypatch):
    """Eager exact against float64 (quantised inputs, exact ops): any error is lowerkit's."""
    p = _program("torch.relu(a) * 0.5")
    _perturb_compiled_outputs(monkeypatch, torch.float32, 1e-4)
    outcome = run_program(p, cache=False)
    assert outcome.kind == "wrong" and "as accurate" not in outcome.message, outcome.describe()


# f16 sigmoid then to f32 (fuzzer seed 20261122, program 196: one f16 ulp = 4.9e-4), beside a
# pure f32 output of another input
MIXED = Program((InputSpec("a", (4, 8), torch.float16), InputSpec("b", (4, 8), torch.float32)),
                ("v1 = torch.sigmoid(a)", "v2 = v1.to(torch.float32)", "v3 = torch.tanh(b)",
                 "v4 = v2 * v3"), ("v2", "v3", "v4"), 196)


def test_f16_tolerance_only_for_outputs_that_depend_on_f16():
    assert half_dependent_outputs(MIXED) == {"v2", "v4"}
    assert set(output_tolerances(MIXED)) == {"output[0]", "output[2]"}
    assert "float16" in output_tolerances(MIXED)["output[0]"].reason


def test_an_f32_output_computed_from_f16_passes_at_f16s_tolerance():
    outcome = run_program(MIXED, cache=False)
    assert outcome.kind == "passed", outcome.describe()
    # f16's rounding shows in the f32 outputs: beyond f32's default, within f16's
    assert 1e-5 < outcome.max_rel_error <= 1e-2


def test_a_pure_f32_output_keeps_f32s_tolerance_beside_f16(monkeypatch):
    """An error of 1e-3 of scale in the f32 outputs: within f16's 1e-2, so only v3 (pure f32,
    at f32's 1e-5) can catch it (before, one f16 value loosened every output to 1e-2)."""
    _perturb_compiled_outputs(monkeypatch, torch.float32, 1e-3)
    outcome = run_program(MIXED, cache=False)
    assert outcome.kind == "wrong", outcome.describe()
    assert "output[1]" in outcome.message and "over the tolerance 1e-05" in outcome.message


# -- the sweeps ------------------------------------------------------------------------------
# The least share of programs that must pass (compile and match eager) in each CI sweep, a
# little under what was measured: a lowerkit that refuses most programs fails the sweep even
# though refusals are not failures. Measured 2026-11-25 on commit 01d93e3 (2-core machine, cold
# cache; `pytest -p no:xdist test/python/test_fuzz.py -k fuzz_ci`, 19 min):
#   cpu             200 programs: passed 200, unsupported 0, wrong 0, crash 0, error 0 (100 %)
#   vulkan:llvmpipe  40 programs: passed 40,  unsupported 0, wrong 0, crash 0, error 0 (100 %)
#   vulkan           40 programs: passed 40,  unsupported 0, wrong 0, crash 0, error 0 (100 %)
# The portable "vulkan" floor is lower: it refuses int64 arithmetic (UnsupportedError), 50 of
# 1610 random programs (3 %) in the long run the README cites; a sample of 40 may hold more.
# The space widened to what real models do (issue 21, item 4), measured 2026-11-25 on commit
# 338e3a8: cpu 200 programs, all passed; on c6d5fc6 the CI sizes: cpu 150 passed 150,
# vulkan:llvmpipe 30 passed 30, vulkan 30 passed 19 (10 errors, all the f64 known defect, 1
# unsupported: 63 %, under its floor). The floors were kept, not lowered to what the wider
# space finds: on the portable "vulkan" target the campaign the README cites (seed 2111) passed
# 42 of 75 programs: 15 errors are float64 constants the target lacks (a known defect above,
# strict xfail in test_fuzz_regressions.py), 18 refusals int64 index math, both item 1 of issue
# 21; test_fuzz_ci_vulkan[vulkan] stays under its floor until that work lands.
# The portable "vulkan" floor went from 0.90 to 0.70 with the wider space: its programs take
# int64 index inputs (gathers, embeddings), whose arithmetic the target refuses by design (an
# UnsupportedError, not a failure: any wrong/crash/error still fails the sweep). The campaign
# (seed 2111) refused 18 of 75 there (24 %); the CI sample of 12 refused 2 (83 % passed).
# Since then (2026-11-26) the portable target has float64 demoted (`Target.float64`) and its
# provable int64 math narrowed (`narrow-index-math`): the campaign at 9387ded passed 238 of 247
# programs there (9 refusals of int64 it cannot bound, 96 %). The floor stays until a CI-sized
# sample is measured at it.
CI_FLOORS = {"cpu": 0.97, "vulkan:llvmpipe": 0.95, "vulkan": 0.70}


def _ci_sweep(target: str, examples: int, capsys) -> None:
    tally: Counter = Counter()

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def sweep(program):
        check(program, target, tally)

    try:
        sweep()
    finally:
        total = sum(tally.values())
        share = tally["passed"] / total if total else 0.0
        line = ", ".join(f"{k} {tally[k]}" for k in VERDICTS)
        with capsys.disabled():
            print(f"\nfuzz CI sweep on {target}: {total} programs: {line}; "
                  f"{share:.1%} passed (floor {CI_FLOORS[target]:.0%})")
    assert total >= examples, f"hypothesis ran {total} of {examples} programs"
    assert share >= CI_FLOORS[target], (
        f"only {share:.1%} of {total} programs compiled and matched eager on {target}, under "
        f"the floor {CI_FLOORS[target]:.0%}: {line}")


def test_fuzz_ci_cpu(capsys):
    _ci_sweep("cpu", CI_EXAMPLES, capsys)


@pytest.mark.skipif("vulkan:llvmpipe" not in fuzz_targets(), reason="no Vulkan device here")
@pytest.mark.parametrize("target", ["vulkan:llvmpipe", "vulkan"])
def test_fuzz_ci_vulkan(target, capsys):
    # "vulkan" is IREE's portable target (32-bit storage): narrow dtypes cross calls widened
    _ci_sweep(target, CI_VULKAN_EXAMPLES, capsys)


def _journal(path) -> tuple[dict, list[dict]]:
    import json

    header, *rows = (json.loads(line) for line in path.read_text().splitlines())
    return header, rows


def test_cli_fuzz_prints_the_verdicts_and_fails_on_a_failure(tmp_path, capsys, monkeypatch):
    from lowerkit.cli import main

    args = ["fuzz", "--examples", "2", "--target", "cpu", "--seed", "1"]
    rc = main(args + ["--json", str(tmp_path / "ok.jsonl")])
    out = capsys.readouterr().out
    assert all(v in out for v in ("programs", *VERDICTS)), out
    _, rows = _journal(tmp_path / "ok.jsonl")
    assert len(rows) == 2 and rc == (1 if any(r["kind"] in FAILURES for r in rows) else 0)
    # the same run with every program refused: no failure, exit 0
    monkeypatch.setattr(lowerkit.tools.fuzz, "run_program", lambda p, t, cache=None:
                        Outcome("unsupported", "UnsupportedError: planted", t, p))
    assert main(args) == 0 and "unsupported" in capsys.readouterr().out
    # and with every program an error (a bug in lowerkit, a LowerkitError or not): exit 1
    monkeypatch.setattr(lowerkit.tools.fuzz, "run_program", lambda p, t, cache=None:
                        Outcome("error", "AttributeError: planted", t, p))
    assert main(args) == 1


# slow tier (14 s): a CLI run; test_cli_fuzz_prints_the_verdicts_and_fails_on_a_failure stays
@pytest.mark.slow
def test_cli_fuzz_journal_says_how_to_replay_it(tmp_path):
    """The header row names the seed, the hypothesis version (pinned), the commit and the
    targets; the same seed gives the same programs, and --replay-all runs them again."""
    from importlib.metadata import version

    from lowerkit.cli import main

    args = ["fuzz", "--examples", "3", "--target", "cpu", "--seed", "5", "--chains", "2"]
    main(args + ["--json", str(tmp_path / "first.jsonl")])
    header, rows = _journal(tmp_path / "first.jsonl")
    assert header["journal"] == "lowerkit fuzz" and header["seed"] == 5
    assert header["examples"] == 3 and header["chains"] == 2 and header["targets"] == ["cpu"]
    assert header["hypothesis"] == version("hypothesis")
    assert header["command"] == "lowerkit fuzz --seed 5 --examples 3 --chains 2 --target cpu"
    import subprocess
    head = subprocess.run(["git", "-C", os.path.dirname(lowerkit.__file__), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert header["lowerkit_commit"] == (head or None)
    assert len(rows) == 3 and all(r["target"] == "cpu" and r["source"] for r in rows)
    main(args + ["--json", str(tmp_path / "again.jsonl")])  # the header's seed, again
    assert [r["source"] for r in _journal(tmp_path / "again.jsonl")[1]] == [r["source"] for r in rows]
    main(["fuzz", "--replay", str(tmp_path / "first.jsonl"), "--replay-all",
          "--json", str(tmp_path / "replayed.jsonl")])
    replayed = _journal(tmp_path / "replayed.jsonl")[1]
    assert [(r["source"], r["kind"]) for r in replayed] == [(r["source"], r["kind"]) for r in rows]


def test_cli_fuzz_replay_runs_the_journal_programs_again(tmp_path, capsys):
    import json

    from lowerkit.cli import main

    program = Program((InputSpec("a", (2, 3), torch.float32), InputSpec("b", (3,), torch.int64)),
                      ("v1 = a * b", "v2 = v1.sum(-1)"), ("v1", "v2"), seed=7)
    journal = tmp_path / "fuzz.jsonl"
    rows = [{"journal": "lowerkit fuzz", "seed": 0},
            {"n": 1, "kind": "error", "target": "cpu", "message": "m", "source": program.source},
            {"n": 2, "kind": "passed", "target": "cpu", "message": "", "source": program.source}]
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_journal = tmp_path / "again.jsonl"
    rc = main(["fuzz", "--replay", str(journal), "--target", "cpu", "--json", str(out_journal)])
    _, again = _journal(out_journal)
    assert rc == 0 and [r["kind"] for r in again] == ["passed"]  # once: the same source
    assert again[0]["source"] == program.source
    with pytest.raises(ValueError, match="not a lowerkit fuzz program"):
        Program.parse("def f(x):\n    return (x,)\n")


def test_cli_fuzz_replay_uses_each_programs_own_target(tmp_path):
    # without --target, a program journaled on vulkan is run again on vulkan, not on cpu
    import json

    from lowerkit.cli import main

    program = Program((InputSpec("a", (2, 3), torch.float32),), ("v1 = a * 2",), ("v1",), seed=3)
    journal = tmp_path / "fuzz.jsonl"
    journal.write_text(json.dumps({"n": 1, "kind": "wrong", "target": "no-such-target",
                                   "message": "m", "source": program.source}) + "\n")
    out_journal = tmp_path / "again.jsonl"
    rc = main(["fuzz", "--replay", str(journal), "--json", str(out_journal)])
    _, again = _journal(out_journal)
    assert [r["target"] for r in again] == ["no-such-target"]
    # an unknown target is a TargetError: a failure (error), and the exit status says so
    assert again[0]["kind"] == "error" and "TargetError" in again[0]["message"] and rc == 1


# -- random ops: each draw by its distribution and freshness, the rest against eager fed the
# same samples
RANDOM = Program.parse(
    "def program(a):  # a: [4, 64] float32; seed 5\n"
    "    v1 = torch.rand_like(a)\n"
    "    v2 = torch.randn_like(a)\n"
    "    v3 = torch.bernoulli(torch.full_like(a, 0.1))\n"
    "    v4 = F.dropout(a, p=0.5, training=True)\n"
    "    v5 = a * v1 + v2.abs() * v3 - v4\n"
    "    return (v5, v1, v2, v3, v4,)\n")


def test_random_programs_list_their_draws_and_replay_them():
    assert RANDOM.draws == ("v1", "v2", "v3", "v4")
    a = RANDOM.make_inputs()
    samples = {d: torch.full((4, 64), 0.25) for d in RANDOM.draws}
    v5, *_ = RANDOM.replay(a, samples)
    assert torch.equal(v5, a[0] * 0.25 + 0.25 * 0.25 - 0.25)


def test_draws_off_their_distribution_are_named():
    from lowerkit.tools.fuzz import distribution_error

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, generator=g)
    assert distribution_error("rand", None, torch.rand(4096, generator=g)) is None
    assert distribution_error("randn", None, x) is None
    assert distribution_error("bernoulli", 0.1, torch.bernoulli(torch.full((4096,), 0.1), generator=g)) is None
    assert distribution_error("dropout", 0.5, torch.nn.functional.dropout(x, 0.5), x) is None
    assert "mean" in distribution_error("rand", None, torch.rand(4096, generator=g) * 0.9)
    assert "outside" in distribution_error("rand", None, torch.rand(4096, generator=g) + 0.5)
    assert "variance" in distribution_error("randn", None, x * 1.2)
    assert "rate of ones" in distribution_error("bernoulli", 0.1, torch.bernoulli(torch.full((4096,), 0.2), generator=g))
    assert "scaled" in distribution_error("dropout", 0.5, torch.nn.functional.dropout(x, 0.4), x)
    assert "rate dropped" in distribution_error("dropout", 0.5, x * 2 * (torch.rand(4096, generator=g) < 0.7), x)


@pytest.mark.parametrize("target", ["cpu", pytest.param("vulkan:llvmpipe", marks=pytest.mark.runs_target)])
def test_a_random_program_passes_by_distribution_and_replay(target):
    outcome = run_program(RANDOM, target, cache=False)
    assert outcome.kind == "passed", outcome.describe()
    assert "4 draw(s)" in outcome.message


def test_a_random_program_refused_where_the_target_cannot_draw():
    assert run_program(RANDOM, "vulkan", cache=False).kind == "unsupported"


def test_the_same_draws_at_every_call_are_wrong(monkeypatch):
    """A planted fault: the artifact answers its first call's outputs at every call."""
    from lowerkit.runtime.artifact import Artifact

    call, first = Artifact.__call__, {}

    def stale(self, *args, **kwargs):
        return first.setdefault(id(self), call(self, *args, **kwargs))

    monkeypatch.setattr(Artifact, "__call__", stale)
    outcome = run_program(RANDOM, cache=False)
    assert outcome.kind == "wrong" and "second call drew the same samples" in outcome.message


def test_values_computed_from_draws_are_compared_with_eager(monkeypatch):
    """A planted fault: the value computed from the draws (v5, output 0) is off by 1e-3."""
    from lowerkit.runtime.artifact import Artifact

    call = Artifact.__call__
    monkeypatch.setattr(Artifact, "__call__", lambda self, *a, **k: (
        lambda out: (out[0] + 1e-3 * float(out[0].abs().max()), *out[1:]))(call(self, *a, **k)))
    outcome = run_program(RANDOM, cache=False)
    assert outcome.kind == "wrong" and "output[0]" in outcome.message, outcome.describe()
