"""Differential fuzzing: small random torch programs, compiled by lowerkit, checked against eager.

A generated `Program` is plain Python source (``def program(a, b): ...``) plus a seed for its
inputs, so that any failure can be pasted into a regression test as it is. Programs are drawn
by a hypothesis strategy (`programs`), which shrinks a failing program to a minimal one.

Generation runs every candidate op eagerly on the real inputs and keeps only those eager
accepts, so a program always runs in eager PyTorch; what is tested is lowerkit against it.
Inputs are quantised (multiples of 1/4 in [-4, 4] for floats, small integers for i64) and each
value remembers whether it is still *exact* (no rounding so far): comparisons, masks, argmax and
float-to-int casts are only taken of exact values, so that a last-bit rounding difference never
flips a mask and shows up as a false "wrong answer".

Each run ends in one verdict (`Outcome.kind`): ``passed``; ``unsupported``, an
`UnsupportedError` (lowerkit knowingly refuses an op, e.g. int64 arithmetic on the portable
``vulkan`` target); and the failures: ``wrong`` (numbers, dtypes or shapes differ from eager),
``crash`` (a native crash of iree-compile or of an isolated stage) and ``error`` (any other
exception, from lowerkit's own code or not: a bug in a pass, invalid IR for iree-compile).
Floats are compared relative to each output's scale (`lowerkit.runtime.numerics`): float32 at its
default, float16's looser tolerance only for outputs that depend on a float16 value.
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

    def make(self, gen: torch.Generator) -> torch.Tensor:
        if self.dtype == torch.bool:
            return torch.randint(0, 2, self.shape, generator=gen).bool()
        if self.dtype == torch.int64:
            return torch.randint(-5, 6, self.shape, generator=gen)
        return (torch.randint(-16, 17, self.shape, generator=gen).float() / 4).to(self.dtype)

    def render(self) -> str:
        return f"{self.name}: {list(self.shape)} {DTYPE_NAMES[self.dtype].removeprefix('torch.')}"


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
            name, shape, dtype = re.fullmatch(r"\s*(\w+): \[([\d, ]*)\] (\w+)\s*", spec).groups()
            inputs.append(InputSpec(name, tuple(int(d) for d in shape.split(",") if d.strip()),
                                    by_name[f"torch.{dtype}"]))
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
    result = compare(got, expected, tol=output_tolerances(program))
    kind = "passed" if result.ok else "wrong"
    return Outcome(kind, result.message, target, program, result.max_abs_error,
                   result.max_rel_error)


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

    def new_input(self, shape: tuple[int, ...], dtype: torch.dtype) -> _Value:
        spec = InputSpec(f"w{len(self.inputs)}", tuple(shape), dtype)
        self.inputs.append(spec)
        value = _Value(spec.name, spec.make(self.gen), True)
        self.values.append(value)
        return value

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
        if result.numel() > 4096 or result.dim() > 5:
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


# Each op: (name, applies(value) -> bool, make(builder, value) -> (expr, exact) | None)
def _float(v): return v.dtype in FLOATS
def _num(v): return v.dtype != torch.bool
def _spatial(v): return v.dtype in FLOATS and v.example.dim() in (3, 4)


def _op_unary(b, v):
    name = b.draw(st.sampled_from(["relu", "neg", "abs", "tanh", "sigmoid", "clamp", "scale",
                                   "square", "floor", "sign"] if _float(v) else
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
    }[name]


def _partner(b, v, same_dtype=True):
    """Another value that broadcasts with ``v`` (or ``v`` itself)."""
    cands = [u for u in b.values if u is not v and (u.dtype == v.dtype or not same_dtype)]
    ok = []
    for u in cands:
        try:
            torch.broadcast_shapes(u.shape, v.shape)
            ok.append(u)
        except RuntimeError:
            pass
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


def _op_reduce(b, v):
    if v.example.dim() == 0:
        return None
    d = b.draw(st.integers(-v.example.dim(), v.example.dim() - 1))
    keep = b.draw(st.booleans())
    if v.dtype == torch.bool:
        op = b.draw(st.sampled_from(["any", "all"]))
        return f"{v.name}.{op}({d}, keepdim={keep})", True
    ops = ["sum", "amax", "amin", "argmax", "mean", "softmax", "cumsum"] if _float(v) else \
          ["sum", "amax", "amin", "argmax", "cumsum"]
    op = b.draw(st.sampled_from(ops))
    if op == "argmax" and not v.exact:
        op = "amax"
    if op == "mean":
        return f"{v.name}.mean({d}, keepdim={keep})", False
    if op == "softmax":
        return f"torch.softmax({v.name}, {d})", False
    if op == "cumsum":
        return f"torch.cumsum({v.name}, {d})", v.exact and v.dtype != torch.float16
    exact = v.exact and (op != "sum" or v.dtype != torch.float16)
    return f"{v.name}.{op}({d}, keepdim={keep})", exact


def _op_shape(b, v):
    r = v.example.dim()
    x = v.name
    choice = b.draw(st.sampled_from(["slice", "step", "transpose", "flip", "reshape", "unsqueeze",
                                     "pad", "cat", "permute", "expand", "contiguous_t", "index"]))
    if r == 0 and choice not in ("reshape", "unsqueeze", "expand"):
        choice = "unsqueeze"
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


def _op_window(b, v):
    x = v.name
    k = b.draw(st.integers(1, 4))
    s = b.draw(st.integers(1, 3))
    p = b.draw(st.integers(0, k // 2))
    ceil = b.draw(st.booleans())
    choice = b.draw(st.sampled_from(["max_pool2d", "avg_pool2d", "conv2d", "adaptive", "max_pool1d"]))
    if choice == "max_pool2d":
        return f"F.max_pool2d({x}, {k}, stride={s}, padding={p}, ceil_mode={ceil})", v.exact
    if choice == "max_pool1d":
        return f"F.max_pool1d({x}, {k}, stride={s}, padding={p}, ceil_mode={ceil})", v.exact
    if choice == "avg_pool2d":
        cip = b.draw(st.booleans())
        return (f"F.avg_pool2d({x}, {k}, stride={s}, padding={p}, ceil_mode={ceil}, "
                f"count_include_pad={cip})", False)
    if choice == "adaptive":
        out = b.draw(st.integers(1, 3))
        op = b.draw(st.sampled_from(["adaptive_avg_pool2d", "adaptive_max_pool2d"]))
        return f"F.{op}({x}, {out})" + ("[0]" if op == "adaptive_max_pool2d" and False else ""), False
    if v.example.dim() != 4 or v.dtype != torch.float32:
        return None
    cin = v.shape[1]
    cout = b.draw(st.integers(1, 3))
    w = b.new_input((cout, cin, k, k), v.dtype)
    d = b.draw(st.integers(1, 2))
    return f"F.conv2d({x}, {w.name}, stride={s}, padding={p}, dilation={d})", False


def _op_matmul(b, v):
    r = v.example.dim()
    if r not in (1, 2, 3) or not _float(v) or (v.dtype == torch.float16):
        return None
    n = b.draw(st.sampled_from([0, 1, 2, 3]))
    w = b.new_input((v.shape[-1], n) if r >= 2 else (v.shape[-1],), v.dtype)
    return f"{v.name} @ {w.name}", False


_OPS = [
    (_num, _op_unary, 3),
    (lambda v: True, _op_binary, 3),
    (lambda v: True, _op_reduce, 2),
    (lambda v: True, _op_shape, 3),
    (lambda v: True, _op_mask, 2),
    (_spatial, _op_window, 3),
    (_float, _op_matmul, 1),
]


def _step(b: _Builder, v: _Value) -> _Value | None:
    ops = [make for applies, make, weight in _OPS if applies(v) for _ in range(weight)]
    make = b.draw(st.sampled_from(ops))
    made = make(b, v)
    if made is None:
        return None
    expr, exact = made
    return b.try_line(expr, exact)


if st is not None:
    @st.composite
    def programs(draw, max_inputs: int = 2, max_chains: int = 3, max_ops: int = 4) -> Program:
        """A strategy of small programs: 1..``max_chains`` chains of 1..``max_ops`` ops each."""
        seed = draw(st.integers(0, 2**16))
        gen = torch.Generator().manual_seed(seed)
        n_inputs = draw(st.integers(1, max_inputs))
        specs = []
        for i in range(n_inputs):
            if i == 0 and draw(st.booleans()):  # image-like first input, for windows
                shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 5, 0, 1, 2]),
                                            min_size=4, max_size=4)))
            else:
                shape = draw(_shape())
            specs.append(InputSpec("abcd"[i], shape, draw(_dtype())))
        examples = [s.make(gen) for s in specs]
        b = _Builder(draw, [_Value(s.name, e, True) for s, e in zip(specs, examples)],
                     [], torch.Generator().manual_seed(seed + 1))
        outputs: list[str] = []
        for _ in range(draw(st.integers(1, max_chains))):
            start = draw(st.sampled_from(b.values[:n_inputs]))
            v = start
            for _ in range(draw(st.integers(1, max_ops))):
                v = _step(b, v) or v
            if v is not start and v.name not in outputs:
                outputs.append(v.name)
        if not outputs:  # nothing eager accepted: a trivial program
            v = b.try_line(f"{b.values[0].name} + {b.values[0].name}", True)
            outputs.append(v.name)
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
            dirty = bool(subprocess.run(["git", "-C", here, "status", "--porcelain",
                                         "--untracked-files=no"],
                                        capture_output=True, text=True, timeout=10).stdout.strip())
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
