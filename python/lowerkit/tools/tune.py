"""Measure, per convolution shape of a model, which form is faster on this CPU, and store the
choice (`lowerkit.tuning`) for later compiles (``lowerkit tune``, `tune`).

The choice is between one matmul per kernel tap and IREE's im2col. No fixed rule held:
`benchmarks/conv_taps.py` found per tap faster on ResNet-18's shallow shapes and im2col on its
deep ones, and a second run disagreed on several rows. So each shape the model's import asks
about is compiled alone both ways, at the model's own sizes, and timed interleaved. There are
``rounds`` rounds, and each times both forms back to back, in alternating order. A form is
chosen only if it is faster by ``margin`` at its median and at its lower quartile, and in most
rounds (`decide`). Anything else is a tie, and im2col is stored: issue 19 asks to keep the
per-tap form only where it pays at run time, since it has more dispatches to compile
(ResNet-18: 104 against 41, and twice the iree-compile time, `benchmarks/tuned.py`).

Then one choice for the whole CPU: the data-tiled matmuls' workgroup tile
(`tuning.MATMUL_TILE`, `measure_matmul_tiles`), timed on the whole model, since what it
changes is how each layer's weights come from memory.
"""

from __future__ import annotations

import datetime
import math
import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from .. import tuning
from ..tuning import IM2COL, TAPS, ConvShape, TuningDatabase, TuningError
from .timing import beats, interleaved
from .timing import quartiles as _quartiles

ROUNDS = 15
MARGIN = 0.05
KEEP_SLACK = 0.01  # how much slower at its median a model with searched configs may be, and kept
# the part of `tune`'s budget the whole-model stages leave to the dispatch search; the
# dispatch search stops starting dispatches when the budget is spent
BUDGET_KEPT_FOR_DISPATCHES = 0.5
SAMPLE_SECONDS = 0.02  # each timed sample: enough calls to last about this long


@dataclass
class Measurement:
    """One shape, both forms timed: what was chosen, and on what evidence."""

    shape: ConvShape
    choice: str
    why: str
    ms: dict[str, float]            # median of the rounds, per form
    ratio: float                    # median over rounds of per-tap time / im2col time
    taps_wins: int
    rounds: int
    compile_s: dict[str, float]
    dispatches: dict[str, int | None]
    error_over_scale: dict[str, float]
    before: str | None = None       # the stored choice this run replaced, if any

    def evidence(self) -> dict:
        return {"op": self.shape.to_json(), "why": self.why,
                "ms": {k: round(v, 5) for k, v in self.ms.items()},
                "ratio": round(self.ratio, 4), "taps_wins": self.taps_wins,
                "rounds": self.rounds,
                "compile_s": {k: round(v, 2) for k, v in self.compile_s.items()},
                "dispatches": self.dispatches,
                "error_over_scale": self.error_over_scale}


@dataclass
class TuneReport:
    """What a `tune` run measured, kept and skipped, and where it stored the choices."""

    cpu: str
    database: Path | None
    measured: list[Measurement] = field(default_factory=list)
    known: dict[str, str] = field(default_factory=dict)   # shapes already stored, skipped
    matmul_tile: MatmulTileMeasurement | None = None
    convolutions: ProgramChoiceMeasurement | None = None
    flag_set: ProgramChoiceMeasurement | None = None
    dispatches: "DispatchesMeasurement | None" = None
    skipped: list[str] = field(default_factory=list)  # what the budget left out

    def table(self, title: str | None = None):
        from rich.table import Table

        table = Table(title=title or f"lowerkit tune: {self.cpu}")
        for col, just in (("convolution", "left"), ("per tap ms", "right"),
                          ("im2col ms", "right"), ("per tap / im2col", "right"),
                          ("per tap won", "right"), ("choice", "left"), ("before", "left")):
            table.add_column(col, justify=just)
        for m in self.measured:
            table.add_row(m.shape.key, f"{m.ms[TAPS]:.3f}", f"{m.ms[IM2COL]:.3f}",
                          f"{m.ratio:.2f}", f"{m.taps_wins}/{m.rounds}", m.choice,
                          m.before or "rule")
        for key, choice in self.known.items():
            table.add_row(key, "", "", "", "", choice, "stored (--retune measures again)",
                          style="dim")
        where = self.database or "not stored"
        table.caption = (f"a form is chosen when it is {MARGIN:.0%} faster at its median and "
                         f"lower quartile and in most rounds; a tie stores im2col · database: "
                         f"{where}")
        return table




def decide(taps: list[float], im2col: list[float],
           margin: float = MARGIN) -> tuple[str, str, float, int]:
    """The choice from paired per-round timings: (choice, why, median ratio, per-tap wins).

    A form wins when it is faster by ``margin`` at its median and at its lower quartile (the
    rounds least disturbed by other work: on a shared machine noise only slows a call down),
    and in more than half of the paired rounds. Anything else is a tie."""
    if not taps or len(taps) != len(im2col):
        raise TuningError(f"need paired timings, got {len(taps)} and {len(im2col)}")
    ratios = [t / i for t, i in zip(taps, im2col)]
    ratio = statistics.median(ratios)
    wins, n = sum(r < 1 for r in ratios), len(ratios)
    (t_q1, t_med), (i_q1, i_med) = _quartiles(taps), _quartiles(im2col)
    evidence = (f"median {t_med:.3g} against {i_med:.3g} ms, lower quartile {t_q1:.3g} against "
                f"{i_q1:.3g}, per tap faster in {wins}/{n} rounds")

    if beats(taps, im2col, margin):
        return TAPS, f"per tap faster ({evidence})", ratio, wins
    if beats(im2col, taps, margin):
        return IM2COL, f"im2col faster ({evidence})", ratio, wins
    return IM2COL, f"tie ({evidence}): im2col, per tap only where it pays", ratio, wins


class _OneConvolution(torch.nn.Module):
    """``shape`` as a program of its own, its weight and bias parameters as in the model."""

    def __init__(self, shape: ConvShape):
        super().__init__()
        self.shape = shape
        self.weight = torch.nn.Parameter(torch.randn(shape.weight) / math.sqrt(
            math.prod(shape.weight[1:])))
        self.bias = torch.nn.Parameter(torch.randn(shape.weight[0])) if shape.bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.shape
        return torch.ops.aten.convolution(x, self.weight, self.bias, list(s.stride),
                                          list(s.padding), list(s.dilation), False,
                                          [0] * len(s.stride), s.groups)


def _calls_per_sample(fns: dict[str, Callable]) -> int:
    slowest = 0.0
    for f in fns.values():
        f()
        start = time.perf_counter()
        f()
        slowest = max(slowest, time.perf_counter() - start)
    return max(1, math.ceil(SAMPLE_SECONDS / max(slowest, 1e-6)))


def time_interleaved(fns: dict[str, Callable], rounds: int) -> dict[str, list[float]]:
    """Per round, each function's mean ms a call over one sample; the order alternates."""
    calls = _calls_per_sample(fns)

    def sampler(f: Callable) -> Callable[[], float]:
        def sample() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                f()
            return (time.perf_counter() - start) / calls * 1e3
        return sample

    return interleaved({name: sampler(f) for name, f in fns.items()}, rounds)


def iree_compile_seconds(art: Any) -> float:
    """The seconds ``art``'s compile spent in iree-compile (its stage record)."""
    return sum(r.seconds for r in art.records if r.name == "iree-compile")


def compare_forms(model, args: tuple, forms: dict[str, Callable[[], Any]], rounds: int,
                  **options: Any) -> dict:
    """Two or more ways lowerkit could compile ``model`` against each other: each form compiled
    (`lowerkit.compile` with ``options``, cache off) inside the context manager its factory in
    ``forms`` returns, checked against eager, and timed interleaved with eager and
    torch.compile (`time_interleaved`, medians in ms). The benchmarks of one
    decomposition against another (depthwise.py, conv_phases.py, conv_folding.py) store
    this."""
    from ..api import compile as compile_program
    from ..runtime.numerics import compare
    from .bench import as_close_as_eager, float64_answer

    arts, compile_s = {}, {}
    for form, context in forms.items():
        with context():
            start = time.perf_counter()
            arts[form] = compile_program(model, args, cache=False, **options)
            compile_s[form] = time.perf_counter() - start
            arts[form].executable.loaded  # loaded inside it too: a form may decide the load
    # each program another module of one class: past 8 recompiles Dynamo would run it eager
    torch._dynamo.reset()
    inductor = torch.compile(model)
    with torch.inference_mode():
        want = model(*args)
        inductor(*args)
        outs = {f: a(*args) for f, a in arts.items()}
        checks = {f: compare(out, want) for f, out in outs.items()}
        # a deep net's f32 answer may be over the tolerance from eager's and as close to the
        # exact one (`bench.as_close_as_eager`)
        exact = float64_answer(model, args, {})  # run in float64 only when first asked
        near = {f: exact() is not None and as_close_as_eager(outs[f], want, exact())[0]
                for f, c in checks.items() if not c.ok}
        samples = time_interleaved({"eager": lambda: model(*args),
                                    "torch.compile": lambda: inductor(*args),
                                    **{f: (lambda a=a: a(*args)) for f, a in arts.items()}},
                                   rounds)
    stats = {f: a.compile_stats or {} for f, a in arts.items()}
    return {"ms": {k: statistics.median(v) for k, v in samples.items()},
            "compile_s": compile_s,
            "iree_compile_s": {f: iree_compile_seconds(a) for f, a in arts.items()},
            "error_over_scale": {f: c.max_rel_error for f, c in checks.items()},
            "matches_eager": all(c.ok or near[f] for f, c in checks.items()),
            "as_close_as_eager_in_float64": sorted(f for f, ok in near.items() if ok),
            "convolutions": {f: st.get("convolutions") for f, st in stats.items()},
            "dispatches": {f: st.get("dispatches") for f, st in stats.items()}}


def compare_cases(cases: list, forms: dict[str, Callable[[], Any]], rounds: int,
                  console: Any) -> list[dict]:
    """`compare_forms` for each of ``cases`` (label, a factory of ``(model, args)``, kind),
    with a status line each: the rows the form benchmarks (grouped.py, dilated.py) store."""
    rows = []
    for label, make, kind in cases:
        with console.status(label):
            model, args = make()
            rows.append({"name": label, "kind": kind,
                         **compare_forms(model, args, forms, rounds)})
    return rows


def form_benchmark_options(doc: str, models: list[str], rounds: int,
                           argv: list[str] | None = None) -> Any:
    """A form benchmark's command line (conv3d_forms.py, tap_rows.py): the models, whether to
    time the shapes too, the rounds, and the file the run is stored in."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--models", default=",".join(models),
                        help="names in lowerkit.zoo.real_models or lowerkit.zoo.real_shapes")
    parser.add_argument("--shapes", default="all", help="'all' or 'none'")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--json", metavar="FILE")
    return parser.parse_args(argv)


def model_cases(names: str) -> list:
    """`compare_cases`'s cases for comma-separated real models (`zoo.real_models`) or
    real-shape programs (`zoo.real_shapes`)."""
    from ..zoo import real_models, real_shapes

    cases = []
    for name in filter(None, names.split(",")):
        where = real_models if hasattr(real_models, name) else real_shapes
        cases.append((name, lambda name=name, where=where: getattr(where, name)()[:2], "model"))
    return cases


def form_benchmark(cases: list, forms: dict[str, Callable[[], Any]], rounds: int,
                   json_path: str | None, ratios: tuple = ()) -> list[dict]:
    """A form benchmark's run (grouped.py, dilated.py, conv3d_forms.py): `compare_cases` on
    2 torch threads, a table of each contender's median and of ``ratios`` (each a header and
    the cell it makes of a row), and the rows stored with the run's metadata at ``json_path``
    (if given)."""
    from rich.console import Console
    from rich.table import Table

    from .bench import run_metadata, write_results

    torch.set_num_threads(2)
    meta = run_metadata()
    console = Console(width=170)
    rows = compare_cases(cases, forms, rounds, console)
    timed = ("eager", "torch.compile", *forms)
    table = Table(title="ms a call (median)")
    for header in ("", *timed, *(h for h, _ in ratios), "matches eager"):
        table.add_column(header)
    for r in rows:
        table.add_row(r["name"], *(f"{r['ms'][k]:.3f}" for k in timed),
                      *(cell(r) for _, cell in ratios), str(r["matches_eager"]))
    console.print(table)
    if json_path:
        write_results(json_path, {"meta": meta, "rounds": rounds, "rows": rows})
        print(f"wrote {json_path}")
    return rows


def measure(shape: ConvShape, target: Any = "cpu", rounds: int = ROUNDS,
            margin: float = MARGIN) -> Measurement:
    """Compile ``shape`` both ways for ``target``, check both against eager, and time them."""
    from ..api import compile as compile_program
    from ..runtime.numerics import compare

    torch.manual_seed(0)
    program = _OneConvolution(shape).eval()
    x = torch.randn(shape.input)
    arts, seconds = {}, {}
    for form in (TAPS, IM2COL):
        with tuning.forced(form), tuning.asking() as asked:
            start = time.perf_counter()
            arts[form] = compile_program(program, (x,), target=target, cache=False)
            seconds[form] = time.perf_counter() - start
        if shape not in asked:  # the import never reached the choice: nothing was compared
            raise TuningError(f"{shape.key}: the import did not ask for a choice; it is not a "
                              f"convolution lowerkit writes per tap")
    with torch.inference_mode():
        want = program(x)
        checks = {form: compare(art(x), want) for form, art in arts.items()}
        wrong = {f: c.message for f, c in checks.items() if not c.ok}
        if wrong:
            raise TuningError(f"{shape.key}: a form does not match eager, nothing stored: {wrong}")
        errors = {f: c.max_rel_error for f, c in checks.items()}
        samples = time_interleaved({form: (lambda a=art: a(x)) for form, art in arts.items()},
                                   rounds)
    choice, why, ratio, wins = decide(samples[TAPS], samples[IM2COL], margin)
    return Measurement(shape, choice, why, {k: statistics.median(v) for k, v in samples.items()},
                       ratio, wins, rounds, seconds,
                       {f: (a.compile_stats or {}).get("dispatches") for f, a in arts.items()},
                       errors)


# The matmul tile sizes tried (`tuning.MATMUL_TILE`): IREE's default, then from a quarter of a
# MiB to two MiB of each matrix operand per workgroup.
MATMUL_TILE_CANDIDATES = (tuning.IREE_DEFAULT, "262144", "524288", "1048576", "2097152")


@dataclass
class MatmulTileMeasurement:
    """The whole model timed with each matmul tile: what was chosen, and on what evidence."""

    choice: str
    why: str
    ms: dict[str, float]              # median of the rounds, per candidate
    rounds: int
    compile_s: dict[str, float]
    error_over_scale: dict[str, float]
    before: str | None = None

    def evidence(self) -> dict:
        return {"why": self.why, "ms": {k: round(v, 5) for k, v in self.ms.items()},
                "rounds": self.rounds,
                "compile_s": {k: round(v, 2) for k, v in self.compile_s.items()},
                "error_over_scale": self.error_over_scale}


def _whole_model(fn: Callable, args: Any, kwargs: dict, candidates: dict[str, Callable],
                 target: Any, rounds: int, dynamic_shapes: Any, what: str):
    """Compile the whole of ``fn`` once per candidate (each inside its context), check each
    against eager, and time them interleaved: (samples, compile seconds, artifacts, checks)."""
    from ..api import compile as compile_program
    from ..runtime.numerics import compare

    arts, seconds = {}, {}
    for name, context in candidates.items():
        with context():
            start = time.perf_counter()
            arts[name] = compile_program(fn, tuple(args), kwargs, target=target, cache=False,
                                         dynamic_shapes=dynamic_shapes)
            seconds[name] = time.perf_counter() - start
    with torch.inference_mode():
        want = fn(*args, **kwargs)
        checks = {n: compare(a(*args, **kwargs), want) for n, a in arts.items()}
        wrong = {n: c.message for n, c in checks.items() if not c.ok}
        if wrong:
            raise TuningError(f"{what}: a candidate does not match eager, nothing stored: "
                              f"{wrong}")
        samples = time_interleaved({n: (lambda a=a: a(*args, **kwargs)) for n, a in arts.items()},
                                   rounds)
    return samples, seconds, arts, checks


def measure_matmul_tiles(fn: Callable, args: Any = (), kwargs: dict | None = None, *,
                         target: Any = "cpu", rounds: int = ROUNDS, margin: float = MARGIN,
                         candidates: tuple[str, ...] = MATMUL_TILE_CANDIDATES,
                         dynamic_shapes: Any = None) -> MatmulTileMeasurement:
    """Compile the whole of ``fn`` once per matmul tile candidate, check each against eager,
    and time them interleaved. The fastest is chosen only if it beats IREE's default
    (`beats`); otherwise IREE's default is stored."""
    if candidates[0] != tuning.IREE_DEFAULT:
        raise TuningError(f"the first matmul tile candidate must be {tuning.IREE_DEFAULT!r}, "
                          f"the baseline the others must beat")
    samples, seconds, _, checks = _whole_model(
        fn, args, kwargs or {}, {t: (lambda t=t: tuning.forced_matmul_tile(t)) for t in candidates},
        target, rounds, dynamic_shapes, "matmul tile")
    ms = {t: statistics.median(v) for t, v in samples.items()}
    best = min(candidates[1:], key=ms.__getitem__) if len(candidates) > 1 else candidates[0]
    base = tuning.IREE_DEFAULT
    evidence = ", ".join(f"{t}: {ms[t]:.3g} ms" for t in candidates)
    if best != base and beats(samples[best], samples[base], margin):
        choice, why = best, f"{best} bytes faster than IREE's default ({evidence})"
    else:
        choice, why = base, f"no candidate beats IREE's default by {margin:.0%} ({evidence})"
    return MatmulTileMeasurement(choice, why, ms, rounds, seconds,
                                 {t: c.max_rel_error for t, c in checks.items()})


@dataclass
class ProgramChoiceMeasurement:
    """One per-program choice (the convolution strategy, the flag set): the whole model
    compiled once per candidate, what was chosen, and why."""

    key: str                          # the program's op key in the database
    choice: str
    why: str
    ms: dict[str, float]
    rounds: int
    compile_s: dict[str, float]
    compiled_as: dict[str, str]       # how each candidate was compiled in the end
    error_over_scale: dict[str, float]
    before: str | None = None

    def evidence(self) -> dict:
        return {"why": self.why, "ms": {k: round(v, 5) for k, v in self.ms.items()},
                "rounds": self.rounds, "compiled_as": self.compiled_as,
                "compile_s": {k: round(v, 2) for k, v in self.compile_s.items()},
                "error_over_scale": self.error_over_scale}


def flag_set_candidates(target: Any) -> tuple[str, ...]:
    """The ladder rungs that change a compile for ``target``, the fast one first."""
    from ..iree.compiler import ladder
    from ..target import Target

    return tuple(name for name, _ in ladder(Target.parse(target).compile_flags()))


def program_key_of(fn: Callable, args: Any = (), kwargs: dict | None = None, *,
                   target: Any = "cpu", dynamic_shapes: Any = None) -> str:
    """`iree.compiler.program_key` of ``fn`` as a compile for ``target`` gives it to
    iree-compile (with the stored choices that change the program): what its flag set is
    stored under."""
    from ..api import compile as compile_program

    try:
        with tuning.program_key_only():
            compile_program(fn, tuple(args), kwargs or {}, target=target, cache=False,
                            dynamic_shapes=dynamic_shapes)
    except tuning.ProgramKeyFound as found:
        return found.key
    raise TuningError("the compile ended without reaching iree-compile: no program key")


def measure_flag_sets(fn: Callable, args: Any = (), kwargs: dict | None = None, *,
                      target: Any = "cpu", rounds: int = ROUNDS, margin: float = MARGIN,
                      dynamic_shapes: Any = None) -> ProgramChoiceMeasurement:
    """Compile the whole of ``fn`` from each rung of the compile ladder, check each against
    eager, and time them interleaved. A rung other than the fast one is chosen only if it
    `beats` the fast one: IREE's plain defaults are a candidate, so a tuned program is never
    measured slower than them."""
    names = flag_set_candidates(target)
    samples, seconds, arts, checks = _whole_model(
        fn, args, kwargs or {}, {n: (lambda n=n: tuning.forced_flag_set(n)) for n in names},
        target, rounds, dynamic_shapes, "flag set")
    ms = {n: statistics.median(v) for n, v in samples.items()}
    base = names[0]
    program = arts[base].compile_stats["program"]
    # a rung under which the program reached iree-compile in another form (a data-tiled
    # convolution net that rung rejects goes by the rule): its record would not be read back
    other = [n for n in names if arts[n].compile_stats["program"] != program]
    kept = [n for n in names if n not in other]
    best = min(kept, key=ms.__getitem__)
    evidence = ", ".join(f"{n}: {ms[n]:.4g} ms" for n in names)
    if other:
        evidence += f"; {', '.join(other)} compiled another form of the program, not a candidate"
    if best != base and beats(samples[best], samples[base], margin):
        choice, why = best, f"'{best}' faster than '{base}' ({evidence})"
    else:
        choice, why = base, f"no rung beats '{base}' by {margin:.0%} ({evidence})"
    return ProgramChoiceMeasurement(f"{tuning.FLAG_SET} {program}", choice, why, ms, rounds,
                                    seconds,
                                    {n: a.compile_stats["rung"] for n, a in arts.items()},
                                    {n: c.max_rel_error for n, c in checks.items()})


def measure_convolutions(fn: Callable, key: str, args: Any = (), kwargs: dict | None = None, *,
                         target: Any = "cpu", rounds: int = ROUNDS, margin: float = MARGIN,
                         dynamic_shapes: Any = None) -> ProgramChoiceMeasurement:
    """Compile the whole of ``fn`` with each of `tuning.CONVOLUTION_STRATEGIES`, check both
    against eager, and time them interleaved. One that `beats` the other is chosen; on a tie,
    the one that compiled faster (issue 19: the compile is what a user waits for). A data-tiled
    compile that iree-compile rejected is the rule's code, so the rule is chosen."""
    samples, seconds, arts, checks = _whole_model(
        fn, args, kwargs or {},
        {s: (lambda s=s: tuning.forced_convolutions(s)) for s in tuning.CONVOLUTION_STRATEGIES},
        target, rounds, dynamic_shapes, "convolution strategy")
    rule, tiled = tuning.RULE, tuning.DATA_TILED
    compiled_as = {s: (a.compile_stats or {}).get("convolutions") or rule
                   for s, a in arts.items()}
    ms = {s: statistics.median(v) for s, v in samples.items()}
    evidence = (f"rule {ms[rule]:.3g} ms, data-tiled {ms[tiled]:.3g} ms; compile "
                f"{seconds[rule]:.1f} / {seconds[tiled]:.1f} s")
    if not compiled_as[tiled].startswith(tiled):
        choice, why = rule, f"iree-compile rejected data-tiled ({evidence})"
    elif beats(samples[tiled], samples[rule], margin):
        choice, why = tiled, f"data-tiled faster ({evidence})"
    elif beats(samples[rule], samples[tiled], margin):
        choice, why = rule, f"the rule faster ({evidence})"
    else:
        choice = min((rule, tiled), key=seconds.__getitem__)
        why = f"a tie at {margin:.0%}: {choice} compiled faster ({evidence})"
    return ProgramChoiceMeasurement(key, choice, why, ms, rounds, seconds, compiled_as,
                                   {s: c.max_rel_error for s, c in checks.items()})


def shapes_of(fn: Callable, args: Any = (), kwargs: dict | None = None,
              dynamic_shapes: Any = None) -> list[ConvShape]:
    """The convolutions of ``fn(*args, **kwargs)`` whose form is a choice, as its import sees
    them (the same eligibility: static float32 1-D and 2-D, 2 to 9 taps, ``groups=1``)."""
    return program_of(fn, args, kwargs, dynamic_shapes)[0]


def program_of(fn: Callable, args: Any = (), kwargs: dict | None = None,
               dynamic_shapes: Any = None) -> "tuple[list[ConvShape], tuning.ConvWork | None]":
    """`shapes_of`, and the program's 2-D convolutions as a whole (`tuning.ConvWork`), from
    one import."""
    from ..ingress.importer import import_program

    with tuning.asking() as asked, tuning.weighing() as weighed:
        import_program(fn, tuple(args), kwargs, dynamic_shapes)
    return list(asked), (weighed[0] if weighed else None)


def tune(fn: Callable, args: Any = (), kwargs: dict | None = None, *, target: Any = "cpu",
         database: "str | Path | TuningDatabase | None" = None, rounds: int = ROUNDS,
         retune: bool = False, dynamic_shapes: Any = None, matmul_tile: bool = True,
         convolutions: bool = True, flag_sets: bool = True, dispatches: bool = True,
         budget_s: float = 600.0,
         executor: Any = None,
         progress: Callable[[str], None] | None = None,
         on_dispatch: "Callable[[str, Any], None] | None" = None) -> TuneReport:
    """Measure the per-shape choices of ``fn``'s convolutions on this CPU and store them in
    ``database`` (default: `tuning.default_path`). Shapes already stored for this CPU and IREE
    are kept unless ``retune``. Later compiles for ``target`` on this CPU read them.
    ``flag_sets``: then time the whole program from each rung of the compile ladder
    (`measure_flag_sets`) and store the fastest for this program.
    ``dispatches``: then search each dispatch's tile sizes (`dispatch_search`) with what is
    left of ``budget_s`` seconds, through ``executor`` (default: this process), calling
    ``on_dispatch(function, climb)`` as the best so far changes. Every compile inside reads
    ``database``: each stage measures with the choices the stages before it stored."""
    started = time.perf_counter()

    cpu = tuning.cpu_key(target)
    if cpu is None:
        raise TuningError(f"target {target!r} has no llvm-cpu device: only CPU choices are "
                          f"tuned")
    if isinstance(database, TuningDatabase):
        db = database
    else:
        path = Path(database) if database is not None else tuning.default_path()
        if path is None:
            raise TuningError(f"{tuning.ENV} turns the tuning database off: nowhere to store "
                              f"the choices (pass database=PATH or set {tuning.ENV}=PATH)")
        db = TuningDatabase(path)
    report = TuneReport(cpu, db.path)
    with tuning.reading(db.path):  # each stage measures with the choices stored before it
        _tune_into(db, report, fn, args, kwargs, target, rounds, retune, dynamic_shapes,
                   matmul_tile, convolutions, flag_sets, dispatches, budget_s, executor,
                   progress, on_dispatch, started)
    return report


def _tune_into(db, report, fn, args, kwargs, target, rounds, retune, dynamic_shapes,
               matmul_tile, convolutions, flag_sets, dispatches, budget_s, executor, progress,
               on_dispatch, started) -> None:
    """`tune`'s stages, in order, into ``db``: convolution shapes, the matmul tile, the
    convolution strategy, the flag set, then the dispatch search."""
    from .bench import cpu_description

    cpu = report.cpu
    measured_on = {"host": cpu_description()["model"], "machine": platform.machine(),
                   "torch_threads": torch.get_num_threads()}
    shapes, work = program_of(fn, args, kwargs, dynamic_shapes)

    def spent(share: float) -> bool:
        """Whether more than ``share`` of the budget is gone: the stages before the dispatch
        search leave it at least half (`BUDGET_KEPT_FOR_DISPATCHES`)."""
        return time.perf_counter() - started > share * budget_s

    first_share = 1.0 - BUDGET_KEPT_FOR_DISPATCHES if dispatches else 1.0
    for shape in shapes:
        before = db.choice(cpu, shape.key)
        if before is not None and not retune:
            report.known[shape.key] = before
            continue
        if spent(first_share):
            report.skipped.append(f"{shape.key}: not measured, the budget was spent")
            continue
        if progress:
            progress(f"measuring {shape.key}")
        m = measure(shape, target, rounds)
        m.before = before
        report.measured.append(m)
        db.record(cpu, shape.key, m.choice, {
            **m.evidence(), "measured_on": measured_on,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
        db.save()  # after each shape: an interrupted run keeps what it measured
    whole = {"measured_on": measured_on, "model": _name(fn)}
    if matmul_tile and spent(first_share / 2) and db.choice(cpu, tuning.MATMUL_TILE) is None:
        matmul_tile = False
        report.skipped.append("the matmul tile: not measured, the budget was spent")
    if matmul_tile:
        report.matmul_tile = _stored_or_measured(
            db, cpu, tuning.MATMUL_TILE, retune, report, whole, progress,
            "measuring the matmul tile (a compile per candidate)",
            lambda: measure_matmul_tiles(fn, args, kwargs, target=target, rounds=rounds,
                                         dynamic_shapes=dynamic_shapes))
    if (convolutions and work is not None and work.dense_flops > 0
            and tuning.cpu_only(target)):
        if spent(first_share) and db.choice(cpu, work.key) is None:
            convolutions = False
            report.skipped.append("the convolution strategy: not measured, the budget was "
                                  "spent")
    if (convolutions and work is not None and work.dense_flops > 0
            and tuning.cpu_only(target)):
        report.convolutions = _stored_or_measured(
            db, cpu, work.key, retune, report, whole, progress,
            "measuring the convolution strategy (a compile per strategy)",
            lambda: measure_convolutions(fn, work.key, args, kwargs, target=target,
                                         rounds=rounds, dynamic_shapes=dynamic_shapes))
    if flag_sets and tuning.cpu_only(target):
        if progress:
            progress("finding the program's key (its import, without iree-compile)")
        key = f"{tuning.FLAG_SET} " + program_key_of(fn, args, kwargs, target=target,
                                                       dynamic_shapes=dynamic_shapes)
        if spent(first_share) and db.choice(cpu, key) is None:
            report.skipped.append("the flag set: not measured, the budget was spent")
        else:
            report.flag_set = _stored_or_measured(
                db, cpu, key, retune, report, whole, progress,
                "measuring the flag set (a compile per ladder rung)",
                lambda: measure_flag_sets(fn, args, kwargs, target=target, rounds=rounds,
                                          dynamic_shapes=dynamic_shapes))
    if dispatches:
        if progress:
            progress("profiling the model's dispatches")
        report.dispatches = measure_dispatches(
            fn, args, kwargs, db=db, cpu=cpu, target=target,
            seconds=max(0.0, budget_s - (time.perf_counter() - started)), retune=retune,
            executor=executor, dynamic_shapes=dynamic_shapes, progress=on_dispatch,
            whole_rounds=rounds)
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        for key, choice, evidence in report.dispatches.records():
            db.record(cpu, key, choice, {**evidence, **whole, "date": stamp})
        db.save()


@dataclass
class DispatchesMeasurement:
    """The per-dispatch search of one model: each dispatch's climb, the model compiled with
    the found configs against IREE's own, and what was kept."""

    climbs: list = field(default_factory=list)       # `dispatch_search.Climb`
    known: dict[str, str] = field(default_factory=dict)  # stored before, skipped: function -> config
    notes: list[str] = field(default_factory=list)
    kept: bool = False
    why: str = ""
    ms: dict[str, float] = field(default_factory=dict)  # the whole model: "iree", "tuned"
    error_over_scale: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def records(self) -> list[tuple[str, str, dict]]:
        """(database key, choice, evidence) for every dispatch searched: its config when the
        whole model kept them, else IREE's (a later run skips what it measured)."""
        out = []
        for c in self.climbs:
            choice = c.best if (self.kept and c.improved) else tuning.IREE_DEFAULT
            out.append((f"{tuning.DISPATCH} {c.fingerprint}", choice,
                        {**c.evidence(), "model_ms": {k: round(v, 4) for k, v in self.ms.items()},
                         "model_kept": self.kept, "why": self.why}))
        return out

    def table(self, title: str = "dispatches"):
        from rich.table import Table

        table = Table(title=title)
        for col, just in (("dispatch", "left"), ("IREE ms", "right"), ("tuned ms", "right"),
                          ("speed-up", "right"), ("tried", "right"), ("rejected", "right"),
                          ("workgroup tile", "left")):
            table.add_column(col, justify=just)
        for c in sorted(self.climbs, key=lambda c: -c.default_ms if c.default_ms == c.default_ms
                        else 0):
            tile = _tile_change(c.default, c.best)
            table.add_row(c.function, f"{c.default_ms:.4g}", f"{c.best_ms:.4g}",
                          f"{c.speedup:.2f}x" if c.improved else "-", str(c.tried),
                          str(c.failed), tile, style=None if c.improved else "dim")
        for function, config in self.known.items():
            table.add_row(function, "", "", "", "", "", f"stored: {_tile_change(config, config)}",
                          style="dim")
        table.caption = self.why
        return table


def _tile_change(before: str, after: str) -> str:
    from ..iree.dispatch_configs import ConfigError, LoweringConfig

    try:
        a = LoweringConfig.parse(before).level("distribution")
        b = LoweringConfig.parse(after).level("distribution")
    except ConfigError:
        return after if after == tuning.IREE_DEFAULT else "?"
    return f"{list(a)} -> {list(b)}" if a != b else str(list(a))


def measure_dispatches(fn: Callable, args: Any = (), kwargs: dict | None = None, *,
                       db: TuningDatabase, cpu: str, target: Any = "cpu", seconds: float = 600.0,
                       retune: bool = False, executor: Any = None, dynamic_shapes: Any = None,
                       progress: Callable | None = None,
                       whole_rounds: int = ROUNDS) -> DispatchesMeasurement:
    """Compile ``fn`` with IREE's configs, dumping each dispatch's benchmark; profile a call;
    search the heaviest dispatches' tiles (`dispatch_search.search`) in ``seconds``; then
    compile the whole model with the found configs, check it against eager and time it
    against IREE's. The configs are kept only if that model matches eager, IREE's configs do
    not `beats` it, and its median is within `KEEP_SLACK` of theirs: the dispatches were timed
    alone, and inside the model their neighbours share the caches."""
    import tempfile

    from ..api import compile as compile_program
    from . import dispatch_search
    from .profile import profile_artifact

    started = time.perf_counter()
    kwargs = kwargs or {}
    out = DispatchesMeasurement()
    stored = {op.split(" ", 1)[1]: c for op, c in db.choices(cpu).items()
              if tuning.dispatch_op(op)}
    with tempfile.TemporaryDirectory(prefix="lowerkit-benchmarks-") as tmp:
        with tuning.forced_dispatch_configs({}):
            art = compile_program(fn, tuple(args), kwargs, target=target, cache=False,
                                  dynamic_shapes=dynamic_shapes,
                                  iree_flags=[f"--iree-hal-dump-executable-benchmarks-to={tmp}"])
        profile = profile_artifact(art, tuple(args), kwargs)
        tasks, out.notes = dispatch_search.tasks_of(Path(tmp), profile)
    if not retune:
        known = [t for t in tasks if t.dispatch.fingerprint in stored]
        out.known = {t.dispatch.function: stored[t.dispatch.fingerprint] for t in known}
        tasks = [t for t in tasks if t.dispatch.fingerprint not in stored]
    left = seconds - (time.perf_counter() - started)
    # the whole-model check compiles twice and times both: keep time for it
    search_s = max(0.0, left * 0.8)
    out.climbs, failures = dispatch_search.search(
        tasks, search_s, target, executor, progress=progress,
        deadline=time.perf_counter() + search_s)
    out.notes += [f"search failed: {f}" for f in failures]
    alone = [c for c in out.climbs if c.tried == 0 and c.history and "error" in c.history[0]]
    for c in alone:  # IREE's own config did not compile outside the model: nothing was timed
        out.notes.append(f"{c.function}: not searched, iree-compile rejects its own dumped "
                         f"benchmark ({c.history[0]['error'][:200]})")
    out.climbs = [c for c in out.climbs if c not in alone]
    foreign = [c for c in out.climbs if c.cpu is not None and c.cpu != cpu]
    if foreign:
        out.notes.append(f"{len(foreign)} dispatch(es) measured on another CPU "
                         f"({foreign[0].cpu}): not kept")
        out.climbs = [c for c in out.climbs if c not in foreign]
    found = {c.fingerprint: c.best for c in out.climbs if c.improved}
    if not found:
        out.why = "no dispatch config beat IREE's: nothing to check on the whole model"
        out.seconds = time.perf_counter() - started
        return out
    previous = {k: v for k, v in stored.items() if v != tuning.IREE_DEFAULT}
    candidates = {"iree": lambda: tuning.forced_dispatch_configs(previous),
                  "tuned": lambda: tuning.forced_dispatch_configs({**previous, **found})}
    try:
        samples, _, arts, checks = _whole_model(fn, args, kwargs, candidates, target,
                                                whole_rounds, dynamic_shapes, "dispatch configs")
    except TuningError as e:
        out.why = f"not kept: {e}"
        out.seconds = time.perf_counter() - started
        return out
    out.ms = {k: statistics.median(v) for k, v in samples.items()}
    out.error_over_scale = {k: c.max_rel_error for k, c in checks.items()}
    applied = (arts["tuned"].compile_stats or {}).get("tuned_dispatches", 0)
    evidence = (f"whole model: IREE's configs {out.ms['iree']:.4g} ms, tuned {out.ms['tuned']:.4g}"
                f" ms ({applied} dispatch(es) given a config)")
    if not applied:
        out.why = f"not kept: iree-compile took none of the configs ({evidence})"
    elif (beats(samples["iree"], samples["tuned"], MARGIN)
          or out.ms["tuned"] > out.ms["iree"] * (1 + KEEP_SLACK)):
        out.why = f"not kept: the tuned model is slower ({evidence})"
    else:
        out.kept = True
        out.why = f"kept ({evidence})"
    out.seconds = time.perf_counter() - started
    return out


def _stored_or_measured(db: TuningDatabase, cpu: str, key: str, retune: bool,
                        report: TuneReport, whole: dict, progress: Callable | None, what: str,
                        measure_it: Callable[[], Any]) -> Any:
    """A whole-model choice: the stored one (into ``report.known``) unless ``retune``, else
    measured, recorded with its evidence and saved. Returns the measurement, if any."""
    before = db.choice(cpu, key)
    if before is not None and not retune:
        report.known[key] = before
        return None
    if progress:
        progress(what)
    m = measure_it()
    m.before = before
    # under the measurement's own key where it has one: a flag set's is the program the fast
    # rung compiled, which ``key`` (looked up before measuring) names too unless it changed
    db.record(cpu, getattr(m, "key", key), m.choice, {
        **m.evidence(), **whole,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    db.save()
    return m


def _name(fn: Callable) -> str:
    return type(fn).__name__ if isinstance(fn, torch.nn.Module) else getattr(fn, "__name__", "?")
