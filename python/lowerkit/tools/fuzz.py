"""Differential fuzzing: small random torch programs, compiled by lowerkit, checked against eager.

A generated `Program` is plain Python source (``def program(a, b): ...``) plus a seed for its
inputs, so that any failure can be pasted into a regression test as it is. Programs are drawn
by a hypothesis strategy (`programs`), which shrinks a failing program to a minimal one.

The space (`FAMILIES`) holds the odd cases (zero-size dims, windows larger than the input,
negative pads, strided slices) and what real models do, at sizes that make IREE tile (up to 64
channels, 32 wide): dense, grouped and depthwise convolutions (1-D and 2-D, strides, padding,
dilation), batch norm in eval with running statistics, layer, group and instance norm,
embeddings, gathers and index_select (int64 index inputs in range), attention (SDPA without a
mask, causal, with a bool or an additive mask, and written out), interpolation, pooling, and
mixed dtypes (int64 with float, float16 with float32, bool masks, true division), and random
ops (``rand_like``, ``randn_like``, ``bernoulli``, dropout in training): each draw is an output,
checked by its distribution and for fresh samples at a second call, and the values computed
from it are compared with eager fed the same samples (`SIGMAS`).

Generation runs every candidate op eagerly on the real inputs and keeps only those eager
accepts, so a program always runs in eager PyTorch; what is tested is lowerkit against it.
Inputs are quantised (multiples of 1/4 in [-4, 4] for floats, small integers for i64) and each
value remembers whether it is still *exact* (no rounding so far): comparisons, masks, argmax and
float-to-int casts are only taken of exact values, so that a last-bit rounding difference never
flips a mask and shows up as a false "wrong answer". Attention masks keep each row's first key,
so that no row is all masked (eager's NaN there is no defined answer to compare).

Each run ends in one verdict (`Outcome.kind`): ``passed``; ``unsupported``, an
`UnsupportedError` (lowerkit knowingly refuses an op, e.g. int64 arithmetic on the portable
``vulkan`` target); and the failures: ``wrong`` (numbers, dtypes or shapes differ from eager;
an output of another dtype is wrong even with equal values), ``crash`` (a native crash of
iree-compile or of an isolated stage) and ``error`` (any other exception, from lowerkit's own
code or not: a bug in a pass, invalid IR for iree-compile).
Floats are compared relative to each output's scale (`lowerkit.runtime.numerics`): float32 at its
default, float16's looser tolerance only for outputs that depend on a float16 value. An output
off from eager past that is still ``passed`` where it is no further from the program evaluated in
float64 than `AS_ACCURATE_AS_EAGER` times eager's own error (`as_accurate_as_eager`: the
program is ill-conditioned, and eager is not the truth either); the verdict says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

from .. import api
from ..errors import UnsupportedError
from ..runtime.executable import usable_drivers
from ..runtime.numerics import Tolerance, compare, tolerance_for
from .executor.job import Job

try:  # hypothesis is a test-time dependency; `Program` and `run_program` work without it
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    st = None

FLOATS = (torch.float32, torch.float16)
DTYPE_NAMES = {torch.float32: "torch.float32", torch.float16: "torch.float16",
               torch.int64: "torch.int64", torch.bool: "torch.bool"}

# verdicts of a run; only the first two are not failures
VERDICTS = ("passed", "unsupported", "wrong", "crash", "error")
FAILURES = ("wrong", "crash", "error")
# an output computed from float16 values keeps float16's rounding, whatever its own dtype
HALF_ON_THE_WAY = Tolerance(tolerance_for(torch.float16).rel,
                            "computed from float16 values: keeps float16's rounding "
                            f"({tolerance_for(torch.float16).reason})")


# -- programs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    high: int | None = None  # an int64 index input: values in [0, high)

    def make(self, gen: torch.Generator) -> torch.Tensor:
        if self.high is not None:
            return torch.randint(0, self.high, self.shape, generator=gen)
        if self.dtype == torch.bool:
            return torch.randint(0, 2, self.shape, generator=gen).bool()
        if self.dtype == torch.int64:
            return torch.randint(-5, 6, self.shape, generator=gen)
        return (torch.randint(-16, 17, self.shape, generator=gen).float() / 4).to(self.dtype)

    def render(self) -> str:
        dtype = DTYPE_NAMES[self.dtype].removeprefix('torch.')
        within = f" in [0, {self.high})" if self.high is not None else ""
        return f"{self.name}: {list(self.shape)} {dtype}{within}"


@dataclass(frozen=True)
class Program:
    """A generated program: its inputs, its body (one assignment a line) and its outputs."""

    inputs: tuple[InputSpec, ...]
    lines: tuple[str, ...]
    outputs: tuple[str, ...]
    seed: int = 0

    @property
    def source(self) -> str:
        params = ", ".join(i.name for i in self.inputs)
        body = "".join(f"    {line}\n" for line in self.lines)
        outs = ", ".join(self.outputs)
        shapes = "; ".join(i.render() for i in self.inputs)
        return (f"def program({params}):  # {shapes}; seed {self.seed}\n"
                f"{body}    return ({outs},)\n")

    @property
    def ops(self) -> list[str]:
        """The ops of the body, for the summary (``F.max_pool2d``, ``torch.cat``, ``[]``...)."""
        import re
        found = []
        for line in self.lines:
            expr = line.split("=", 1)[1]
            found += re.findall(r"((?:torch|F)\.\w+|\.\w+\(|\[|[-+*@&|~^]|[<>]=?)", expr)
        return found

    @property
    def draws(self) -> tuple[str, ...]:
        """The values drawn by a random op (`RANDOM_OPS`), in order: compared by distribution,
        and fed to eager as they came out of lowerkit for everything computed from them."""
        return tuple(line.split("=", 1)[0].strip() for line in self.lines
                     if random_draw(line.split("=", 1)[1]) is not None)

    def replay(self, args: tuple, samples: dict[str, torch.Tensor],
               each: Callable[[str, Any], Any] | None = None) -> tuple:
        """The outputs eager computes from ``args`` with each draw taken from ``samples``;
        ``each(name, value)`` replaces every value a line computes (a rounding, a record)."""
        env: dict[str, Any] = {"torch": torch, "F": F}
        env.update({spec.name: a for spec, a in zip(self.inputs, args)})
        with torch.no_grad():
            for line in self.lines:
                name, expr = (part.strip() for part in line.split("=", 1))
                env[name] = samples[name] if name in samples else eval(expr, env)
                if each is not None and name not in samples:
                    env[name] = each(name, env[name])
        return tuple(env[o] for o in self.outputs)

    def function(self) -> Callable:
        namespace = {"torch": torch, "F": F}
        exec(compile(self.source, "<lowerkit.tools.fuzz program>", "exec"), namespace)
        return namespace["program"]

    def make_inputs(self) -> tuple[torch.Tensor, ...]:
        # the proper inputs from ``seed``, the weights (named ``w*``) from ``seed + 1``
        gen = torch.Generator().manual_seed(self.seed)
        wgen = torch.Generator().manual_seed(self.seed + 1)
        return tuple(i.make(wgen if i.name.startswith("w") else gen) for i in self.inputs)

    def test_source(self, name: str = "test_regression", target: str = "cpu") -> str:
        """A self-contained pytest function reproducing a run of this program."""
        if self.draws:  # compared by distribution and replay: the fuzzer's own check
            return (f"SOURCE = {self.source!r}\n\n\n"
                    f"def {name}():\n"
                    f"    from lowerkit.tools.fuzz import Program, check_program\n"
                    f"    check_program(Program.parse(SOURCE), {target!r})\n")
        inputs = self.make_inputs()
        args = ",\n        ".join(_tensor_literal(t) for t in inputs)
        return (f"{self.source}\n\n"
                f"def {name}():\n"
                f"    args = (\n        {args},\n    )\n"
                f"    art = lowerkit.compile(program, args, target={target!r})\n"
                f"    assert_matches_eager(art(*args), program(*args))\n")

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with this
        return "\n" + self.source

    @classmethod
    def parse(cls, source: str) -> "Program":
        """The program that `source` printed (as in a ``lowerkit fuzz --json`` journal), with
        the same inputs: the header comment names their shapes, dtypes and seed."""
        import re

        head, *body = source.strip("\n").splitlines()
        m = re.fullmatch(r"def program\(([^)]*)\):\s+#\s*(.*);\s*seed (\d+)", head.strip())
        if not m or not body or not body[-1].strip().startswith("return ("):
            raise ValueError(f"not a lowerkit fuzz program: {head!r}")
        by_name = {v: k for k, v in DTYPE_NAMES.items()}
        inputs = []
        for spec in m.group(2).split(";"):
            name, shape, dtype, high = re.fullmatch(
                r"\s*(\w+): \[([\d, ]*)\] (\w+)(?: in \[0, (\d+)\))?\s*", spec).groups()
            inputs.append(InputSpec(name, tuple(int(d) for d in shape.split(",") if d.strip()),
                                    by_name[f"torch.{dtype}"], int(high) if high else None))
        outputs = [o.strip() for o in body[-1].strip()[len("return ("):-len(")")].split(",")]
        return cls(tuple(inputs), tuple(line.strip() for line in body[:-1]),
                   tuple(o for o in outputs if o), int(m.group(3)))


def _tensor_literal(t: torch.Tensor) -> str:
    dtype = DTYPE_NAMES[t.dtype]
    if t.numel() == 0:
        return f"torch.zeros({list(t.shape)}, dtype={dtype})"
    return f"torch.tensor({t.tolist()}, dtype={dtype})"


# -- running ---------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What happened to one program on one target: a verdict of `VERDICTS`."""

    kind: str
    message: str = ""
    target: str = "cpu"
    program: Program | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None

    @property
    def failed(self) -> bool:
        return self.kind not in ("passed", "unsupported")

    def describe(self) -> str:
        src = self.program.source if self.program is not None else ""
        return f"[{self.kind} on {self.target}] {self.message}\n{src}"


def half_dependent_outputs(program: Program) -> set[str]:
    """The outputs of ``program`` that depend, through its lines, on a float16 value."""
    import ast

    env: dict[str, Any] = {"torch": torch, "F": F}
    half = set()
    for spec, value in zip(program.inputs, program.make_inputs()):
        env[spec.name] = value
        if value.dtype == torch.float16:
            half.add(spec.name)
    with torch.no_grad():
        for line in program.lines:
            name, expr = (part.strip() for part in line.split("=", 1))
            env[name] = eval(expr, env)
            used = {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
            if env[name].dtype == torch.float16 or used & half:
                half.add(name)
    return {o for o in program.outputs if o in half}


def output_tolerances(program: Program) -> dict[str, Tolerance]:
    """Per-output tolerances for `compare`: float16's for the float outputs that depend on a
    float16 value; the others (absent here) keep their own dtype's default."""
    half = half_dependent_outputs(program)
    return {f"output[{i}]": HALF_ON_THE_WAY for i, o in enumerate(program.outputs) if o in half}


def _is_crash(e: BaseException) -> bool:
    """A native crash (iree-compile killed by a signal, an isolated stage's child dying)."""
    text = str(getattr(e, "summary", e))
    return any(s in text for s in ("crashed with", "and no result", "SIGSEGV", "SIGABRT",
                                   "Segmentation fault", "core dumped", "died with"))


def run_program(program: Program, target: str = "cpu", cache: Any = None) -> Outcome:
    """Compile ``program`` with lowerkit for ``target``, run it and compare with eager."""
    fn = program.function()
    args = program.make_inputs()
    with torch.no_grad():
        expected = fn(*args)
    try:
        art = api.compile(fn, args, target=target, cache=cache)
        got = art(*args)
    except UnsupportedError as e:  # a deliberate refusal: the only error that is not a failure
        return Outcome("unsupported", _message(e), target, program)
    except Exception as e:  # noqa: BLE001 -- any other error, lowerkit's or not, is a failure
        return Outcome("crash" if _is_crash(e) else "error", _message(e), target, program)
    if program.draws:
        return _run_random(program, art, args, got, expected, target)
    tols = output_tolerances(program)
    result = compare(got, expected, tol=tols)
    if not result.ok:
        why = as_accurate_as_eager(program, args, got, expected, tols)
        if why is not None:
            return Outcome("passed", f"{why} ({result.message})", target, program,
                           result.max_abs_error, result.max_rel_error)
    kind = "passed" if result.ok else "wrong"
    return Outcome(kind, result.message, target, program, result.max_abs_error,
                   result.max_rel_error)


# -- random ops: by distribution, then eager fed lowerkit's samples -----------------------------
# lowerkit's samples need not equal eager's bits (its streams are its own, seeded from torch's):
# each draw is checked against its distribution (range, mean, variance, mask rate, within
# SIGMAS standard errors) and for freshness (a second call draws anew), and every other output
# is compared with eager run on the same samples (`Program.replay`).
SIGMAS = 6.0
RANDOM_OPS = {"rand": "torch.rand_like(", "randn": "torch.randn_like(",
              "bernoulli": "torch.bernoulli(", "dropout": "F.dropout("}
_RANDOM = ("rand", "bernoulli", "dropout", "multinomial", "normal_")


def random_draw(expr: str) -> tuple[str, float | None] | None:
    """``(kind, p)`` of a line's expression that is a random op of `RANDOM_OPS`, else None."""
    import re

    expr = expr.strip()
    for kind, call in RANDOM_OPS.items():
        if expr.startswith(call):
            m = re.search(r"(?:full_like\([^,]+, |p=)([0-9.]+)", expr)
            return kind, float(m.group(1)) if m else None
    return None


def distribution_error(kind: str, p: float | None, drawn: torch.Tensor,
                       source: torch.Tensor | None = None) -> str | None:
    """Why ``drawn`` is not a sample of ``kind`` (``source``: dropout's input), or None."""
    x = drawn.double()
    n = x.numel()
    if n == 0:
        return None
    if not x.isfinite().all():
        return "not finite"
    slack = 1e-3 if drawn.dtype == torch.float16 else 0.0  # float16 rounds each sample
    if kind == "rand":
        if x.min() < 0 or x.max() > 1:
            return f"outside [0, 1]: {x.min().item():.4g}..{x.max().item():.4g}"
        return _off("mean", x.mean().item(), 0.5, (1 / 12 / n) ** 0.5, slack)
    if kind == "randn":
        off = _off("mean", x.mean().item(), 0.0, (1 / n) ** 0.5, slack)
        if off or n < 8:
            return off
        return _off("variance", x.var().item(), 1.0, (2 / (n - 1)) ** 0.5, slack)
    if kind == "bernoulli":
        if not ((x == 0) | (x == 1)).all():
            return "not 0 or 1"
        return _off("rate of ones", x.mean().item(), p, (p * (1 - p) / n) ** 0.5, 0.0)
    # dropout: zero, or the input scaled by 1 / (1 - p); zeros kept zero
    src = source.double()
    keep = src != 0
    if not torch.equal(x[~keep], torch.zeros_like(x[~keep])):
        return "a zero input came out non-zero"
    if not keep.any():
        return None
    ratio = x[keep] / src[keep]
    scale = 1 / (1 - p)
    kept = (ratio - scale).abs() <= 1e-2 * scale
    if not (kept | (ratio == 0)).all():
        return f"an element neither dropped nor scaled by {scale:.4g}"
    m = int(keep.sum())
    return _off("rate dropped", 1 - kept.double().mean().item(), p, (p * (1 - p) / m) ** 0.5,
                0.0)


def _off(what: str, got: float, want: float, sigma: float, slack: float) -> str | None:
    bound = SIGMAS * sigma + slack
    if abs(got - want) <= bound:
        return None
    return f"{what} {got:.4g}, expected {want:.4g} +- {bound:.3g}"


def _run_random(program: Program, art: Any, args: tuple, got: Any, eager: Any,
                target: str) -> Outcome:
    """The verdict of a program with random ops (see `SIGMAS`)."""
    outputs = list(program.outputs)
    samples = {d: got[outputs.index(d)] for d in program.draws if d in outputs}
    for i, (g, e) in enumerate(zip(got, eager)):  # every output: eager's dtype and shape
        if g.dtype != e.dtype or g.shape != e.shape:
            return Outcome("wrong", f"output[{i}]: {g.dtype} {list(g.shape)}, eager gives "
                           f"{e.dtype} {list(e.shape)}", target, program)
    lines = {line.split("=", 1)[0].strip(): line.split("=", 1)[1] for line in program.lines}
    replayed = program.replay(args, samples)
    support = {}  # per draw: how many elements a fresh draw could change
    for name in samples:
        kind, p = random_draw(lines[name])
        source = None
        if kind == "dropout":  # its input, as eager computes it from the same samples
            source_name = lines[name].strip()[len("F.dropout("):].split(",", 1)[0].strip()
            source = _value_of(program, args, samples, source_name)
        why = distribution_error(kind, p, samples[name], source)
        if why is not None:
            return Outcome("wrong", f"{name} = {lines[name].strip()}: {why}", target, program)
        support[name] = int((source != 0).sum()) if source is not None else samples[name].numel()
    again = art(*args)
    for name in samples:
        kind, _ = random_draw(lines[name])
        # two draws alike by chance: under 1e-5 for 64 Bernoulli trials (p in 0.1..0.8), nil
        # for 8 floats
        enough = support[name] >= (8 if kind in ("rand", "randn") else 64)
        if enough and torch.equal(samples[name], again[outputs.index(name)]):
            return Outcome("wrong", f"{name}: the second call drew the same samples", target,
                           program)
    tols = output_tolerances(program)
    result = compare(got, replayed, tol=tols)
    if not result.ok:
        why = as_accurate_as_eager(program, args, got, replayed, tols, samples)
        if why is not None:
            return Outcome("passed", f"{why} ({result.message})", target, program,
                           result.max_abs_error, result.max_rel_error)
    kind = "passed" if result.ok else "wrong"
    message = result.message if not result.ok else \
        f"{len(samples)} draw(s) as distributed and fresh; the rest as eager on the same samples"
    return Outcome(kind, message, target, program, result.max_abs_error, result.max_rel_error)


def _value_of(program: Program, args: tuple, samples: dict, name: str) -> torch.Tensor:
    """The value ``name`` (an input or a line) eager computes with ``samples`` drawn."""
    replay = Program(program.inputs, program.lines, (name,), program.seed)
    return replay.replay(args, samples)[0]


# How much further from a float64 evaluation than eager a compiled output may be where eager
# itself is off from it (torch._dynamo's accuracy check against a float64 reference allows
# the same multiple), or than the output moves when the inputs move by one rounding.
AS_ACCURATE_AS_EAGER = 3.0
_ROUNDING = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
_NEARBY = 8  # evaluations with every value moved at random by one rounding: the worst counts


def as_accurate_as_eager(program: Program, args: tuple, got: Any, expected: Any,
                         tols: dict[str, Tolerance],
                         samples: dict[str, torch.Tensor] | None = None) -> str | None:
    """Why ``got``, off from eager, is still right, or None: every output off from eager is a
    float one, no further from ``program`` evaluated in float64 than `AS_ACCURATE_AS_EAGER`
    times the larger of eager's own error and the program's conditioning: how far the float64
    outputs move when every float input, every random draw and every value a line computes
    moves by one rounding of its dtype (the standard model of floating point: each op's result
    is the exact one times 1 + d, |d| <= one rounding; no evaluation in that dtype can promise
    less). An ill-conditioned program has no answer closer than that, and eager is not the
    truth there either: a group norm of one-element groups, where 1/sqrt(eps) amplifies the
    last bit (seed 2111, programs 754-756); attention over logits of 2000, whose softmax the
    rounding of the scaled queries moves by 1e-4 (seed 2118); the mean of an instance norm's
    outputs, zero but for their rounding, which moving the inputs alone cannot show (seed 2118).
    ``samples``: a random program's draws, fed to every evaluation (`Program.replay`)."""
    floats = [a for a in args if a.is_floating_point()]
    floats += [v for v in (samples or {}).values() if v.is_floating_point()]
    if not floats or (samples is None and any(r in program.source for r in _RANDOM)):
        return None

    draws = dict(samples or {})
    dtypes: dict[str, torch.dtype] = {}  # each line's dtype in the program as written

    def record(name: str, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            dtypes[name] = value.dtype
        return value

    def moved(t: torch.Tensor, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
        """``t`` (float64), each element moved by one rounding of ``dtype`` with ``gen``."""
        sign = torch.randint(0, 2, t.shape, generator=gen).double() * 2 - 1
        return t * (1 + _ROUNDING.get(dtype, 2.0 ** -53) * sign)

    def wide(t: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
        """``t`` in float64, moved by one rounding of its dtype where ``gen`` is given."""
        if not t.is_floating_point():
            return t
        return t.double() if gen is None else moved(t.double(), t.dtype, gen)

    def evaluate(inputs: tuple, drawn: dict, gen: torch.Generator | None = None) -> tuple:
        def rounded(name: str, value: Any) -> Any:
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                # a cast to a narrower float (``.to(torch.float16)``) rounds once, as the
                # program says, and what reads it runs in float64 again: otherwise every line
                # after the cast ran in float16, and the portable Vulkan target's float32
                # arithmetic (closer to float64) was judged by float16's (seed 2120, program 407)
                value = value.double()
            if (gen is None or not isinstance(value, torch.Tensor)
                    or value.dtype != torch.float64 or name not in dtypes):
                return value
            return moved(value, dtypes[name], gen)
        return program.replay(inputs, drawn, rounded)

    try:
        program.replay(args, draws, record)
        reference = evaluate(tuple(wide(a) for a in args), {k: wide(v) for k, v in draws.items()})
        gen = torch.Generator().manual_seed(0)
        nearby = [evaluate(tuple(wide(a, gen) for a in args),
                           {k: wide(v, gen) for k, v in draws.items()}, gen)
                  for _ in range(_NEARBY)]
    except Exception:  # noqa: BLE001 -- an op eager has no float64 kernel for: no second look
        return None
    worst = None  # (ratio, lowerkit's error, eager's error, conditioning)
    settled = 0  # elements where eager's NaN-ness differs from float64's and lowerkit's
    for i, (g, e, r) in enumerate(zip(got, expected, reference)):
        if compare(g, e, tol=tols.get(f"output[{i}]")).ok:
            continue
        if not (isinstance(g, torch.Tensor) and e.is_floating_point() and g.dtype == e.dtype
                and g.shape == e.shape == r.shape and torch.equal(g.isnan(), r.isnan())):
            return None
        # eager's NaN where float64 has an infinity, or its infinity where float64 has NaN:
        # eager's kernels disagree with themselves there (F.gelu(inf) is NaN in its vectorised
        # float32 kernel, inf in its scalar one and in float64: seed 2119, program 930); an
        # output that has float64's value at each such place is right there
        eager_alone = e.isnan() != g.isnan()
        if eager_alone.any():
            if not torch.equal(g[eager_alone].double().nan_to_num(), r[eager_alone].nan_to_num()):
                return None
            settled += int(eager_alone.sum())
        finite = r.isfinite() & ~eager_alone

        def off(x: torch.Tensor) -> float:
            return (x.double() - r)[finite].abs().max().item() if finite.any() else 0.0

        ours, eager = off(g), off(e)
        conditioning = max((off(n[i]) for n in nearby if n[i].shape == r.shape), default=0.0)
        allowed = AS_ACCURATE_AS_EAGER * max(eager, conditioning)
        if not ours <= allowed:
            return None
        worst = max(worst or (0, 0, 0, 0), (ours / allowed if allowed else 0.0, ours, eager,
                                            conditioning))
    if worst is None:
        return None
    nans = (f"; {settled} element(s) where eager alone has or lacks NaN have float64's value"
            if settled else "")
    return (f"as accurate as eager against float64: {worst[1]:.3g} off where eager is "
            f"{worst[2]:.3g} off and one rounding of each value moves it {worst[3]:.3g} "
            f"(within {AS_ACCURATE_AS_EAGER:g}x){nans}")


def _message(e: BaseException) -> str:
    """The error's type and whole text (its diagnostics name the op and the source line)."""
    return f"{type(e).__name__}: {e}"


class FuzzFailure(AssertionError):
    def __init__(self, outcome: Outcome):
        self.outcome = outcome
        super().__init__(outcome.describe())


def check_program(program: Program, target: str = "cpu", cache: Any = None) -> Outcome:
    """`run_program`, raising `FuzzFailure` (with the program's source) on a failure."""
    outcome = run_program(program, target, cache)
    if outcome.failed:
        raise FuzzFailure(outcome)
    return outcome


def fuzz_targets() -> list[str]:
    """``cpu``, and where IREE's vulkan driver opens a device here ``vulkan:llvmpipe`` and
    ``vulkan`` (IREE's portable target: 32-bit storage only, so `widen-narrow-io` runs)."""
    targets = ["cpu"]
    if os.environ.get("LOWERKIT_FUZZ_VULKAN", "1") != "0" and "vulkan" in usable_drivers():
        targets += ["vulkan:llvmpipe", "vulkan"]
    return targets


# -- generation ------------------------------------------------------------------------------
# Sizes: small odd shapes (0, 1, 7...) for the edge cases, and model-like ones (channels up to
# 64, spatial sizes up to 32, sequences up to 32) that are large enough for IREE to tile.
MAX_INPUT_ELEMENTS = 8192
MAX_VALUE_ELEMENTS = 16384
CHANNELS = [1, 2, 3, 4, 8, 16, 32, 64]
SPATIAL = [1, 2, 3, 5, 7, 8, 16, 32]


@dataclass
class _Value:
    name: str
    example: torch.Tensor
    exact: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.example.shape)

    @property
    def dtype(self) -> torch.dtype:
        return self.example.dtype


@dataclass
class _Builder:
    draw: Any
    values: list[_Value]
    inputs: list[InputSpec]
    gen: torch.Generator
    lines: list[str] = field(default_factory=list)
    n: int = 0

    def fresh(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def new_input(self, shape: tuple[int, ...], dtype: torch.dtype,
                  high: int | None = None) -> _Value:
        """A weight (``w*`` input); ``high`` makes it an int64 index input in [0, high)."""
        spec = InputSpec(f"w{len(self.inputs)}", tuple(shape), dtype, high)
        self.inputs.append(spec)
        value = _Value(spec.name, spec.make(self.gen), True)
        self.values.append(value)
        return value

    def new_index(self, shape: tuple[int, ...], high: int) -> _Value:
        return self.new_input(shape, torch.int64, high)

    def try_line(self, expr: str, exact: bool) -> _Value | None:
        """Evaluate ``expr`` eagerly; keep it when eager accepts it."""
        env = {"torch": torch, "F": F, **{v.name: v.example for v in self.values}}
        try:
            with torch.no_grad():
                result = eval(expr, env)
        except Exception:  # noqa: BLE001 -- eager refuses: not a program to test
            return None
        if not isinstance(result, torch.Tensor) or result.dtype not in DTYPE_NAMES:
            return None
        if result.numel() > MAX_VALUE_ELEMENTS or result.dim() > 5:
            return None
        name = self.fresh()
        self.lines.append(f"{name} = {expr}")
        value = _Value(name, result, exact)
        self.values.append(value)
        return value


def _dims(rank: int):
    return st.lists(st.sampled_from([1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 7]), min_size=rank, max_size=rank)


def _shape():
    return st.integers(1, 4).flatmap(_dims).map(tuple)


def _dtype():
    return st.sampled_from([torch.float32, torch.float32, torch.float32, torch.float16,
                            torch.int64, torch.bool])


def _fit(shape: list[int], limit: int = MAX_INPUT_ELEMENTS) -> tuple[int, ...]:
    """``shape`` with its largest dims halved until it holds at most ``limit`` elements."""
    shape = list(shape)
    while shape and torch.Size(shape).numel() > limit:
        i = max(range(len(shape)), key=lambda j: shape[j])
        shape[i] //= 2
    return tuple(shape)


def _model_shape(draw, kind: str) -> tuple[int, ...]:
    """A model-like input: an image (N, C, H, W), a signal (N, C, L) or a sequence (N, L, E)."""
    n = draw(st.sampled_from([1, 2]))
    if kind == "image":
        return _fit([n, draw(st.sampled_from(CHANNELS)), draw(st.sampled_from(SPATIAL)),
                     draw(st.sampled_from(SPATIAL))])
    if kind == "signal":
        return _fit([n, draw(st.sampled_from(CHANNELS)), draw(st.sampled_from(SPATIAL))])
    return _fit([n, draw(st.sampled_from(SPATIAL)), draw(st.sampled_from([4, 8, 16, 32, 64]))])


# The op families. Each: applies(value) -> bool, and make(builder, value) -> (expr, exact) or
# None. ``exact`` says the result has had no rounding (see the module docstring): only exact
# values are compared, masked, argmax'd or cast to integers downstream.
def _float(v): return v.dtype in FLOATS
def _f32(v): return v.dtype == torch.float32
def _num(v): return v.dtype != torch.bool
def _spatial(v): return v.dtype in FLOATS and v.example.dim() in (3, 4)
def _spatial32(v): return v.dtype == torch.float32 and v.example.dim() in (3, 4)
def _ranked(v): return v.example.dim() >= 1
def _any(v): return True


def _op_unary(b, v):
    name = b.draw(st.sampled_from(["relu", "neg", "abs", "tanh", "sigmoid", "clamp", "scale",
                                   "square", "floor", "sign", "gelu", "silu", "hardswish"]
                                  if _float(v) else
                                  ["neg", "abs", "clamp", "scale", "square", "sign"]))
    x = v.name
    return {
        "relu": (f"torch.relu({x})", v.exact),
        "neg": (f"-{x}", v.exact),
        "abs": (f"{x}.abs()", v.exact),
        "tanh": (f"torch.tanh({x})", False),
        "sigmoid": (f"torch.sigmoid({x})", False),
        "clamp": (f"{x}.clamp(-1, 2)", v.exact),
        "scale": (f"{x} * 2" if not _float(v) else f"{x} * 0.5", v.exact),
        "square": (f"{x} * {x}", v.exact and v.dtype != torch.float16),
        "floor": (f"torch.floor({x} * 0.75)", v.exact),
        "sign": (f"torch.sign({x})", v.exact),
        "gelu": (f"F.gelu({x})", False),
        "silu": (f"F.silu({x})", False),
        "hardswish": (f"F.hardswish({x})", False),
    }[name]


def _broadcasts(u: _Value, v: _Value) -> bool:
    try:
        torch.broadcast_shapes(u.shape, v.shape)
        return True
    except RuntimeError:
        return False


def _partner(b, v, same_dtype=True):
    """Another value that broadcasts with ``v`` (or ``v`` itself)."""
    ok = [u for u in b.values if u is not v and (u.dtype == v.dtype or not same_dtype)
          and _broadcasts(u, v)]
    return b.draw(st.sampled_from(ok)) if ok and b.draw(st.booleans()) else v


def _op_binary(b, v):
    u = _partner(b, v)
    x, y = v.name, u.name
    if v.dtype == torch.bool:
        op = b.draw(st.sampled_from(["&", "|", "^"]))
        return f"{x} {op} {y}", True
    op = b.draw(st.sampled_from(["+", "-", "*", "max", "min"]))
    exact = v.exact and u.exact and (op != "*" or v.dtype != torch.float16)
    if op in ("max", "min"):
        return f"torch.{op}imum({x}, {y})", exact
    return f"{x} {op} {y}", exact


def _op_promote(b, v):
    """Mixed dtypes: int64 with float, float16 with float32, bool with numbers, Python scalars
    and true division; the result takes torch's promoted dtype, which the comparison checks."""
    x = v.name
    choice = b.draw(st.sampled_from(["binary", "scalar", "where", "divide"]))
    if choice == "scalar":
        if v.dtype == torch.bool:
            return f"{x} * 1.5", v.exact
        scalar = b.draw(st.sampled_from(["0.5", "1.5", "3", "-2"]))
        op = b.draw(st.sampled_from(["+", "*"]))
        return f"{x} {op} {scalar}", v.exact and not (op == "*" and v.dtype == torch.float16)
    others = [u for u in b.values if u.dtype != v.dtype and _broadcasts(u, v)]
    if others:
        u = b.draw(st.sampled_from(others))
    else:
        u = b.new_input(v.shape, b.draw(st.sampled_from([d for d in (torch.float32, torch.float16,
                                                                     torch.int64, torch.bool)
                                                         if d != v.dtype])))
    y = u.name
    if choice == "divide":
        if torch.bool in (v.dtype, u.dtype):
            return None
        return f"{x} / {y}", False
    if choice == "where":
        if v.dtype == torch.bool:
            return f"torch.where({x}, {y}, 2)", u.exact
        if u.dtype == torch.bool:
            return f"torch.where({y}, {x}, -1)", v.exact
        if not v.exact:
            return None
        return f"torch.where({x} > 0, {x}, {y})", v.exact and u.exact
    op = b.draw(st.sampled_from(["+", "*", "max"]))
    half = torch.float16 in (v.dtype, u.dtype)
    exact = v.exact and u.exact and not (op == "*" and half)
    if op == "max":
        return f"torch.maximum({x}, {y})", exact
    return f"{x} {op} {y}", exact


def _op_reduce(b, v):
    if v.example.dim() == 0:
        return None
    d = b.draw(st.integers(-v.example.dim(), v.example.dim() - 1))
    keep = b.draw(st.booleans())
    if v.dtype == torch.bool:
        op = b.draw(st.sampled_from(["any", "all"]))
        return f"{v.name}.{op}({d}, keepdim={keep})", True
    ops = ["sum", "amax", "amin", "argmax", "mean", "softmax", "cumsum", "log_softmax"] \
        if _float(v) else ["sum", "amax", "amin", "argmax", "cumsum"]
    op = b.draw(st.sampled_from(ops))
    if op == "argmax" and not v.exact:
        op = "amax"
    if op == "mean":
        return f"{v.name}.mean({d}, keepdim={keep})", False
    if op in ("softmax", "log_softmax"):
        return f"torch.{op}({v.name}, {d})", False
    if op == "cumsum":
        return f"torch.cumsum({v.name}, {d})", v.exact and v.dtype != torch.float16
    exact = v.exact and (op != "sum" or v.dtype != torch.float16)
    return f"{v.name}.{op}({d}, keepdim={keep})", exact


def _op_shape(b, v):
    r = v.example.dim()
    x = v.name
    choice = b.draw(st.sampled_from(["slice", "step", "transpose", "flip", "reshape", "unsqueeze",
                                     "pad", "cat", "permute", "expand", "contiguous_t", "index",
                                     "shuffle"]))
    if r == 0 and choice not in ("reshape", "unsqueeze", "expand"):
        choice = "unsqueeze"
    if choice == "shuffle":  # ShuffleNet's channel shuffle of an (N, C, H, W) value
        if r != 4 or v.shape[1] % 2:
            return None
        n, c, h, w = v.shape
        g = 4 if c % 4 == 0 and b.draw(st.booleans()) else 2
        return (f"{x}.reshape({n}, {g}, {c // g}, {h}, {w}).transpose(1, 2)"
                f".reshape({n}, {c}, {h}, {w})"), v.exact
    if choice in ("slice", "step", "index"):
        d = b.draw(st.integers(0, r - 1))
        lo = b.draw(st.integers(-2, 3))
        hi = b.draw(st.sampled_from(["", "-1", "1", "2", "5"]))
        step = b.draw(st.sampled_from(["", ":2", ":3"])) if choice == "step" else ""
        idx = ", ".join([":"] * d + [f"{lo}:{hi}{step}"])
        if choice == "index":
            idx = ", ".join([":"] * d + [str(b.draw(st.integers(-1, 1)))])
        return f"{x}[{idx}]", v.exact
    if choice == "transpose":
        if r < 2:
            return None
        d0, d1 = b.draw(st.permutations(range(r)))[:2]
        return f"{x}.transpose({d0}, {d1})", v.exact
    if choice == "contiguous_t":
        return f"{x}.t().contiguous()" if r == 2 else f"{x}.contiguous()", v.exact
    if choice == "permute":
        perm = b.draw(st.permutations(range(r)))
        return f"{x}.permute({', '.join(map(str, perm))})", v.exact
    if choice == "flip":
        return f"{x}.flip({b.draw(st.integers(0, r - 1))})", v.exact
    if choice == "reshape":
        return (f"{x}.reshape(-1)" if b.draw(st.booleans()) or r == 0
                else f"{x}.reshape({v.shape[0]}, -1)"), v.exact
    if choice == "unsqueeze":
        return f"{x}.unsqueeze({b.draw(st.integers(0, r))})", v.exact
    if choice == "expand":
        if r == 0:
            return f"{x}.expand(3)", v.exact
        shape = [s if s != 1 else b.draw(st.sampled_from([1, 3])) for s in v.shape]
        return f"{x}.expand({', '.join(map(str, shape))})", v.exact
    if choice == "pad":
        if v.dtype == torch.bool:
            return None
        n = b.draw(st.integers(1, min(r, 2)))
        pads = b.draw(st.lists(st.integers(-1, 2), min_size=2 * n, max_size=2 * n))
        mode = b.draw(st.sampled_from(["constant", "constant", "reflect", "replicate"]))
        value = ", value=1.5" if mode == "constant" and _float(v) and b.draw(st.booleans()) else ""
        return f"F.pad({x}, {tuple(pads)}, mode={mode!r}{value})", v.exact
    # cat with a partner of the same dtype along a dim where the other dims agree
    d = b.draw(st.integers(0, r - 1))
    cands = [u for u in b.values if u.dtype == v.dtype and u.example.dim() == r
             and all(a == c for i, (a, c) in enumerate(zip(u.shape, v.shape)) if i != d)]
    u = b.draw(st.sampled_from(cands))
    return f"torch.cat([{x}, {u.name}], {d})", v.exact and u.exact


def _op_mask(b, v):
    x = v.name
    choice = b.draw(st.sampled_from(["compare", "where", "masked_fill", "cast"]))
    if v.dtype == torch.bool:
        if choice == "compare":
            return f"~{x}", True
        if choice == "cast":
            to = b.draw(st.sampled_from(["torch.float32", "torch.int64", "torch.float16"]))
            return f"{x}.to({to})", True
        # where with two fresh-ish float values of a broadcastable shape
        u = _partner(b, v, same_dtype=False)
        other = u.name if u.dtype != torch.bool else f"{u.name}.float()"
        return f"torch.where({x}, {other}, -1.0)", u.exact
    if not v.exact:
        if choice == "cast" and _float(v):
            to = "torch.float16" if v.dtype == torch.float32 else "torch.float32"
            return f"{x}.to({to})", False
        return None
    zero = b.draw(st.sampled_from(["0", "1", "-1"]))
    cmp = b.draw(st.sampled_from([">", "<", ">=", "<=", "==", "!="]))
    if choice == "compare":
        return f"{x} {cmp} {zero}", True
    if choice == "where":
        u = _partner(b, v)
        return f"torch.where({x} {cmp} {zero}, {x}, {u.name})", v.exact and u.exact
    if choice == "masked_fill":
        fill = "7" if v.dtype == torch.int64 else "-2.5"
        return f"{x}.masked_fill({x} {cmp} {zero}, {fill})", True
    to = b.draw(st.sampled_from(["torch.float32", "torch.float16", "torch.int64", "torch.bool"]))
    if to == "torch.float16" and v.dtype == torch.int64:
        to = "torch.float32"
    return f"{x}.to({to})", True


def _op_pool(b, v):
    x = v.name
    k = b.draw(st.integers(1, 4))
    s = b.draw(st.integers(1, 3))
    p = b.draw(st.integers(0, k // 2))
    ceil = b.draw(st.booleans())
    d2 = v.example.dim() == 4
    # max pooling's indices: where each window's maximum (or NaN) lies, a pick among its
    # elements, so only of an exact value (a last-bit difference would move it)
    indices = ["max_pool_indices"] if v.exact else []
    choice = b.draw(st.sampled_from(["max_pool", "avg_pool", "adaptive", "max_pool_dilated"]
                                    + indices))
    nd = "2d" if d2 else "1d"
    if choice == "max_pool":
        return f"F.max_pool{nd}({x}, {k}, stride={s}, padding={p}, ceil_mode={ceil})", v.exact
    if choice == "max_pool_dilated":
        return f"F.max_pool{nd}({x}, {k}, stride={s}, padding={p}, dilation=2)", v.exact
    if choice == "max_pool_indices":
        dilation = b.draw(st.integers(1, 3))
        return (f"F.max_pool{nd}({x}, {k}, stride={s}, padding={p}, dilation={dilation}, "
                f"ceil_mode={ceil}, return_indices=True)[1]"), True
    if choice == "avg_pool":
        cip = b.draw(st.booleans())
        return (f"F.avg_pool{nd}({x}, {k}, stride={s}, padding={p}, ceil_mode={ceil}, "
                f"count_include_pad={cip})", False)
    out = b.draw(st.sampled_from([1, 2, 3, 5, 7]))
    op = b.draw(st.sampled_from(["adaptive_avg_pool", "adaptive_max_pool"]
                                + (["adaptive_max_index"] if v.exact else [])))
    if op == "adaptive_max_index":
        return f"F.adaptive_max_pool{nd}({x}, {out}, return_indices=True)[1]", True
    return f"F.{op}{nd}({x}, {out})", op == "adaptive_max_pool" and v.exact


def _op_conv(b, v):
    """conv1d / conv2d, grouped and depthwise among them, with strides, padding and dilation."""
    x = v.name
    d2 = v.example.dim() == 4
    cin = v.shape[1]
    if cin == 0:
        return None
    kind = b.draw(st.sampled_from(["dense", "depthwise", "grouped", "pointwise"]))
    divisors = [g for g in range(2, cin) if cin % g == 0]
    groups = {"dense": 1, "pointwise": 1, "depthwise": cin,
              "grouped": b.draw(st.sampled_from(divisors)) if divisors else 1}[kind]
    if kind == "depthwise":
        cout = cin * b.draw(st.sampled_from([1, 1, 2]))
    else:
        cout = groups * max(1, b.draw(st.sampled_from([1, 2, 3, 4, 8, 16, 32, 64])) // groups)
    k = 1 if kind == "pointwise" else b.draw(st.sampled_from([1, 2, 3, 3, 5]))
    stride = b.draw(st.sampled_from([1, 1, 2, 3]))
    dilation = b.draw(st.sampled_from([1, 1, 2]))
    padding = b.draw(st.sampled_from(["0", "1", "2", "'same'"])) if k > 1 else "0"
    if padding == "'same'" and stride != 1:
        padding = str(k // 2)
    kshape = (k, k) if d2 else (k,)
    w = b.new_input((cout, cin // groups, *kshape), v.dtype)
    bias = f"{b.new_input((cout,), v.dtype).name}" if b.draw(st.booleans()) else "None"
    return (f"F.conv{'2d' if d2 else '1d'}({x}, {w.name}, {bias}, stride={stride}, "
            f"padding={padding}, dilation={dilation}, groups={groups})", False)


def well_conditioned(groups: torch.Tensor) -> bool:
    """Whether normalising each row of ``groups`` by its own statistics is well conditioned.

    1/sqrt(var + eps) of a (near-)constant group of several elements amplifies a last-bit
    difference in its mean ~300 times (eps 1e-5): a constant group of 11.75 normalises to 0 in
    eager and to 1.8e-3 in float32's ``(x - sum/N) / sqrt(eps)``, both valid evaluations (fuzz
    campaign seed 2111, program 63). Only rows whose spread is at least 1/8 of their magnitude
    are normalised; a row of one element is exact (its mean is itself)."""
    rows = groups.double().reshape(-1, groups.shape[-1]) if groups.numel() else None
    if rows is None or rows.shape[-1] < 2:
        return True
    var = rows.var(-1, unbiased=False)
    return bool((var + 1e-5 >= (rows.abs().amax(-1) / 8) ** 2).all())


def _op_norm(b, v):
    """batch_norm in eval with running statistics, layer_norm, group_norm, instance_norm; the
    last three only where they are well conditioned (`well_conditioned`)."""
    x = v.name
    r = v.example.dim()
    choice = b.draw(st.sampled_from(["batch", "layer", "group", "instance"]))
    affine = b.draw(st.booleans())
    if choice == "layer":
        n = b.draw(st.integers(1, min(2, r)))
        shape = v.shape[r - n:]
        if v.example.numel() and not well_conditioned(v.example.reshape(*v.shape[:r - n], -1)):
            return None
        if affine:
            w, bias = b.new_input(shape, v.dtype), b.new_input(shape, v.dtype)
            return f"F.layer_norm({x}, {shape}, {w.name}, {bias.name})", False
        return f"F.layer_norm({x}, {shape})", False
    if r < 2:
        return None
    c = v.shape[1]
    w, bias = ((b.new_input((c,), v.dtype).name, b.new_input((c,), v.dtype).name) if affine
               else ("None", "None"))
    if choice == "batch":
        mean, var = b.new_input((c,), v.dtype), b.new_input((c,), v.dtype)
        return (f"F.batch_norm({x}, {mean.name}, {var.name}.abs() + 0.5, {w}, {bias}, "
                f"training=False)"), False
    if choice == "instance":
        if r < 3 or v.example.numel() and not well_conditioned(
                v.example.reshape(*v.shape[:2], -1)):
            return None
        return f"F.instance_norm({x}, weight={w}, bias={bias})", False
    groups = [g for g in (1, 2, 4, 8, c) if c and c % g == 0]
    if not groups:
        return None
    g = b.draw(st.sampled_from(groups))
    if v.example.numel() and not well_conditioned(v.example.reshape(v.shape[0], g, -1)):
        return None
    return f"F.group_norm({x}, {g}, {w}, {bias})", False


def _op_gather(b, v):
    """index_select, gather, embedding and advanced indexing with int64 indices (inputs in
    range, or an argmax taken of an exact value)."""
    x = v.name
    r = v.example.dim()
    d = b.draw(st.integers(0, r - 1))
    n = v.shape[d]
    choice = b.draw(st.sampled_from(["index_select", "gather", "embedding", "index",
                                     "argmax_gather"]))
    if choice == "embedding":
        if v.dtype == torch.int64:  # ``v`` as the indices, into a new table
            dim = b.draw(st.sampled_from([4, 8, 16, 32, 64]))
            table = b.new_input((16, dim), torch.float32)
            return f"F.embedding({x}.abs(), {table.name})", True
        if r != 2 or not _float(v) or v.shape[0] == 0:
            return None
        idx = b.new_index(tuple(b.draw(st.lists(st.sampled_from([1, 2, 3, 8]), min_size=1,
                                                max_size=2))), v.shape[0])
        return f"F.embedding({idx.name}, {x})", v.exact
    if choice == "argmax_gather":
        if v.dtype == torch.bool or not v.exact:
            return None
        return f"torch.gather({x}, {d}, {x}.argmax({d}, keepdim=True))", v.exact
    if n == 0:
        return None
    if choice == "index_select":
        idx = b.new_index((b.draw(st.sampled_from([1, 2, 3, 5, 8, 16])),), n)
        return f"torch.index_select({x}, {d}, {idx.name})", v.exact
    if choice == "index":
        idx = b.new_index(tuple(b.draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=1,
                                                max_size=2))), n)
        return f"{x}[{', '.join([':'] * d + [idx.name])}]", v.exact
    shape = tuple(b.draw(st.integers(1, 5)) if i == d else b.draw(st.integers(0, s))
                  for i, s in enumerate(v.shape))
    idx = b.new_index(shape, n)
    return f"torch.gather({x}, {d}, {idx.name})", v.exact


def _op_attention(b, v):
    """``F.scaled_dot_product_attention`` (no mask, causal, a bool or an additive mask) and the
    same written out, softmax(Q K^T / sqrt(E)) V; ``v`` is the query (..., L, E)."""
    x = v.name
    *batch, seq, e = v.shape
    if e == 0:
        return None
    s = b.draw(st.sampled_from([1, 2, 5, 8, 16, 32]))
    ev = b.draw(st.sampled_from([e, 4, 8]))
    k = b.new_input((*batch, s, e), v.dtype)
    val = b.new_input((*batch, s, ev), v.dtype)
    choice = b.draw(st.sampled_from(["plain", "causal", "bool_mask", "float_mask", "explicit"]))
    if choice == "explicit":
        return (f"torch.softmax({x} @ {k.name}.transpose(-2, -1) * {e ** -0.5!r}, -1) "
                f"@ {val.name}"), False
    sdpa = f"F.scaled_dot_product_attention({x}, {k.name}, {val.name}"
    if choice == "causal":
        return f"{sdpa}, is_causal=True)", False
    if choice == "bool_mask":  # every row keeps its first key: no row is all masked (NaN)
        m = b.new_input((seq, s), torch.bool)
        return (f"{sdpa}, attn_mask={m.name} | torch.ones({seq}, {s}, dtype=torch.bool)"
                f".tril())"), False
    if choice == "float_mask":
        m = b.new_input((seq, s), v.dtype)
        return f"{sdpa}, attn_mask={m.name})", False
    return f"{sdpa})", False


def _op_interpolate(b, v):
    """nearest, (bi)linear with and without align_corners, by size or by scale factor."""
    x = v.name
    d2 = v.example.dim() == 4
    mode = b.draw(st.sampled_from(["nearest", "linear", "linear_corners"]))
    if b.draw(st.booleans()):
        how = f"scale_factor={b.draw(st.sampled_from(['2', '0.5', '3']))}"
    else:
        sizes = [b.draw(st.sampled_from([1, 2, 3, 5, 8, 16, 32])) for _ in range(2 if d2 else 1)]
        how = f"size={tuple(sizes) if d2 else sizes[0]}"
    if mode == "nearest":
        return f"F.interpolate({x}, {how}, mode='nearest')", v.exact
    linear = "bilinear" if d2 else "linear"
    corners = mode == "linear_corners"
    return f"F.interpolate({x}, {how}, mode={linear!r}, align_corners={corners})", False


def _op_matmul(b, v):
    r = v.example.dim()
    if r not in (1, 2, 3) or not _float(v) or (v.dtype == torch.float16):
        return None
    n = b.draw(st.sampled_from([0, 1, 2, 3, 8, 32]))
    w = b.new_input((v.shape[-1], n) if r >= 2 else (v.shape[-1],), v.dtype)
    if r >= 2 and b.draw(st.booleans()):  # a linear layer, as models write it
        bias = b.new_input((n,), v.dtype)
        return f"F.linear({v.name}, {w.name}.t(), {bias.name})", False
    return f"{v.name} @ {w.name}", False


def _op_random(b, v):
    """A random op on ``v`` (its shape and dtype; dropout of ``v`` itself), see `SIGMAS`."""
    kind = b.draw(st.sampled_from(list(RANDOM_OPS)))
    p = b.draw(st.sampled_from([0.1, 0.5, 0.8]))
    x = v.name
    return {"rand": (f"torch.rand_like({x})", False),
            "randn": (f"torch.randn_like({x})", False),
            "bernoulli": (f"torch.bernoulli(torch.full_like({x}, {p}))", True),
            "dropout": (f"F.dropout({x}, p={p}, training=True)", False)}[kind]


@dataclass(frozen=True)
class Family:
    """A family of ops the generator draws from: which values it applies to, how it makes a
    line from one, and its weight in the draw."""

    name: str
    applies: Callable[[_Value], bool]
    make: Callable[[_Builder, _Value], tuple[str, bool] | None]
    weight: int


FAMILIES: tuple[Family, ...] = (
    Family("unary", _num, _op_unary, 3),
    Family("binary", _any, _op_binary, 3),
    Family("promote", _any, _op_promote, 2),
    Family("reduce", _any, _op_reduce, 2),
    Family("shape", _any, _op_shape, 3),
    Family("mask", _any, _op_mask, 2),
    Family("pool", _spatial, _op_pool, 3),
    Family("conv", _spatial32, _op_conv, 6),
    Family("norm", lambda v: _f32(v) and _ranked(v), _op_norm, 3),
    Family("gather", _ranked, _op_gather, 3),
    Family("attention", lambda v: _f32(v) and v.example.dim() in (3, 4), _op_attention, 3),
    Family("interpolate", _spatial, _op_interpolate, 2),
    Family("matmul", _float, _op_matmul, 1),
    Family("random", _float, _op_random, 2),
)


def _step(b: _Builder, v: _Value, families: tuple[Family, ...]) -> _Value | None:
    ops = [f.make for f in families if f.applies(v) for _ in range(f.weight)]
    if not ops:
        return None
    make = b.draw(st.sampled_from(ops))
    made = make(b, v)
    if made is None:
        return None
    expr, exact = made
    return b.try_line(expr, exact)


if st is not None:
    @st.composite
    def programs(draw, max_inputs: int = 2, max_chains: int = 3, max_ops: int = 4,
                 families: tuple[Family, ...] = FAMILIES) -> Program:
        """A strategy of small programs: 1..``max_chains`` chains of 1..``max_ops`` ops each,
        drawn from ``families``. The first input is small and odd-shaped, or model-like."""
        seed = draw(st.integers(0, 2**16))
        gen = torch.Generator().manual_seed(seed)
        n_inputs = draw(st.integers(1, max_inputs))
        specs = []
        for i in range(n_inputs):
            kind = draw(st.sampled_from(["small", "image", "signal", "sequence"])) if i == 0 \
                else "small"
            shape = draw(_shape()) if kind == "small" else _model_shape(draw, kind)
            dtype = draw(_dtype()) if kind == "small" else \
                draw(st.sampled_from([torch.float32, torch.float32, torch.float16]))
            specs.append(InputSpec("abcd"[i], shape, dtype))
        examples = [s.make(gen) for s in specs]
        b = _Builder(draw, [_Value(s.name, e, True) for s, e in zip(specs, examples)],
                     [], torch.Generator().manual_seed(seed + 1))
        outputs: list[str] = []
        for _ in range(draw(st.integers(1, max_chains))):
            start = draw(st.sampled_from(b.values[:n_inputs]))
            v = start
            for _ in range(draw(st.integers(1, max_ops))):
                v = _step(b, v, families) or v
            if v is not start and v.name not in outputs:
                outputs.append(v.name)
        if not outputs:  # nothing eager accepted: a trivial program
            v = b.try_line(f"{b.values[0].name} + {b.values[0].name}", True)
            outputs.append(v.name)
        for line in b.lines:  # every draw is an output: checked by distribution
            name, expr = line.split("=", 1)
            if random_draw(expr) is not None and name.strip() not in outputs:
                outputs.append(name.strip())
        # weights (``w*`` inputs) come from their own generator, seeded ``seed + 1``
        return _finalise(tuple(specs) + tuple(b.inputs), b.lines, outputs, seed)


def _finalise(inputs, lines, outputs, seed) -> Program:
    return Program(tuple(inputs), tuple(lines), tuple(outputs), seed)


# -- sweeping --------------------------------------------------------------------------------


def sweep(examples: int, targets: list[str], seed: int = 0, on_outcome: Callable | None = None,
          max_chains: int = 3, shrink: bool = False) -> list[Outcome]:
    """Run ``examples`` generated programs on each of ``targets``; return every outcome.

    With ``shrink``, the sweep stops at the first failure and hypothesis shrinks it: the last
    outcome is then the minimal failing program's."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    outcomes: list[Outcome] = []
    current = os.path.join(os.environ.get("TMPDIR", "/tmp"), "lowerkit-fuzz-current.py")

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck),
              phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate])
    @given(programs(max_chains=max_chains))
    def one(program: Program) -> None:
        with open(current, "w") as f:  # left behind if the interpreter dies on this program
            f.write(program.source)
        for target in targets:
            outcome = run_program(program, target)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
            if shrink and outcome.failed:
                raise FuzzFailure(outcome)

    try:
        one()
    except FuzzFailure:
        pass
    return outcomes


def generate(examples: int, seed: int = 0, max_chains: int = 3) -> list[Program]:
    """The programs `sweep` runs for these options, in its order, generated here without
    running them: a batch of independent items for `lowerkit.tools.executor`."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    found: list[Program] = []

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(programs(max_chains=max_chains))
    def one(program: Program) -> None:
        found.append(program)

    one()
    return found


def fuzz_items(programs_: list[Program], targets: list[str], timeout_s: float | None = None):
    """One executor item per program and target: its source (a program is plain data) and the
    target; keyed ``NNNNN:target`` by the program's place in the sweep."""
    from .executor import Item

    return [Item(f"{n:05d}:{t}", {"source": p.source, "target": t}, timeout_s)
            for n, p in enumerate(programs_) for t in targets]


# a fuzz verdict -> the executor's status
STATUS_OF = {"passed": "ok", "unsupported": "ok", "wrong": "fail", "error": "fail",
             "crash": "crash"}


def journal_row(row: dict) -> tuple[str | None, str | None, str | None]:
    """(verdict, target, source) of a journal row, an executor outcome's (`run_items`) or an
    older journal's."""
    return row.get("kind") or row.get("verdict"), row.get("target"), row.get("source")


@dataclass(frozen=True)
class FuzzJob(Job):
    """`run_program` as an executor job: one item is one program on one target."""

    name = "fuzz"

    def setup(self) -> None:
        from .. import api  # noqa: F401 -- torch, torch-mlir and IREE's bindings, once

    def run(self, item):
        from .executor import Outcome

        program = Program.parse(item.data["source"])
        o = run_program(program, item.data["target"])
        stage = None
        if o.kind not in ("passed", "wrong"):
            import re

            m = re.search(r"stage '([^']+)'", o.message)
            stage = m.group(1) if m else None
        elif o.kind == "wrong":
            stage = "run"
        return Outcome(item.key, STATUS_OF[o.kind], o.kind, stage, o.message.splitlines()[0]
                       if o.message else "", o.message[-4000:] if o.failed else "",
                       data={"kind": o.kind, "target": o.target, "source": program.source,
                             "max_rel_error": o.max_rel_error})

    def reproducer(self, item, outcome, folder: str) -> str | None:
        """A pytest file (also a script) that runs the program again and fails as it did."""
        name = "test_fuzz_" + item.key.replace(":", "_").replace("-", "_")
        path = os.path.join(folder, f"{name}.py")
        with open(path, "w") as f:
            f.write(f'"""lowerkit fuzz item {item.key}: {outcome.verdict or outcome.status} '
                    f'on {item.data["target"]}. Run: pytest {name}.py (or python)."""\n\n'
                    "from lowerkit.tools.fuzz import Program, check_program\n\n"
                    f"SOURCE = {item.data['source']!r}\n\n\n"
                    f"def {name}():\n"
                    f"    check_program(Program.parse(SOURCE), {item.data['target']!r})\n\n\n"
                    f'if __name__ == "__main__":\n    {name}()\n')
        return path


def outcome_of(row) -> Outcome:
    """A fuzz `Outcome` from an executor outcome (for the summary tables)."""
    source = row.data.get("source")
    kind = row.verdict if row.verdict in VERDICTS else {"timeout": "crash"}.get(row.status, "error")
    message = row.log_tail or row.message if kind != "passed" else row.message
    return Outcome(kind, message or row.message, row.data.get("target", "cpu"),
                   Program.parse(source) if source else None, None,
                   row.data.get("max_rel_error"))


def journal_header(**run: Any) -> dict:
    """The first row of a ``lowerkit fuzz --json`` journal: what replaying it needs. The
    programs of a sweep are a function of its seed, example count and chains and of the
    hypothesis version (pinned in pyproject.toml); ``run`` adds those and the targets."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    here = os.path.dirname(os.path.abspath(__file__))
    commit = dirty = None
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        if commit:
            # stored results (a campaign's journal, being written) are not the code that ran
            from .bench import checkout_dirty

            dirty = checkout_dirty(here)
    except (OSError, subprocess.SubprocessError):
        pass
    return {"journal": "lowerkit fuzz", **run, "lowerkit_commit": commit,
            "lowerkit_dirty": dirty, "hypothesis": installed("hypothesis"),
            "torch": torch.__version__, "iree": installed("iree-base-compiler"),
            "python": platform.python_version()}


def replay(journal: str, targets: list[str] | None = None, everything: bool = False,
           on_outcome: Callable | None = None) -> list[Outcome]:
    """Run again the programs of a ``lowerkit fuzz --json`` journal that did not pass (or
    ``everything``) on ``targets``, or where None on the target each was journaled for: did a
    fix work, on the very programs that found the bug?"""
    import json

    seen, outcomes = set(), []
    with open(journal) as f:
        for line in f:
            row = json.loads(line)
            kind, journaled, source = journal_row(row)
            if not source or (kind == "passed" and not everything):
                continue
            key = (source, None if targets else journaled)
            if key in seen:
                continue
            seen.add(key)
            program = Program.parse(source)
            for target in targets or [journaled]:
                outcome = run_program(program, target)
                outcomes.append(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)
    return outcomes
