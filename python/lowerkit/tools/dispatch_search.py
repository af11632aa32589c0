"""Search each dispatch's tile sizes on this CPU (``lowerkit tune``'s per-dispatch stage).

IREE picks a dispatch's tiles from per-CPU heuristics, and a heuristic that suits one CPU
loses on the next (issue 71). So, as MetaSchedule and IREE's own tuner do on other targets,
lowerkit measures: each dispatch of the model, heaviest first as the model's own profile
ranks them, is dumped as a standalone benchmark (``--iree-hal-dump-executable-benchmarks-to``),
and a hill climb from IREE's config tries neighbours (each tiled dim's workgroup tile halved
or doubled; a lone root op's vector tiles too). Each generation is compiled, run in this
process, and timed interleaved with the best so far; a neighbour replaces it only if it
`timing.beats` it. IREE rejects an impossible tile quickly, and such a candidate is skipped.
The time budget is shared out by the dispatches' weight. Found configs are checked by a
whole-model compile against eager before the caller stores them (`tune.tune`).

No CPU tuner exists upstream to reuse: IREE's amdsharktuner is ROCm-only, and IREE 3.13
emits no search constraints for llvm-cpu (``../shared/TUNING-FACTS.md``).
"""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..iree import dispatch_configs as configured
from ..iree.dispatch_configs import Dispatch, LoweringConfig
from .executor.job import Job
from .executor.outcome import Item, Outcome
from .timing import beats, interleaved
from .timing import quartiles as _quartiles

SAMPLE_SECONDS = 0.01   # each timed sample: enough repeats of the dispatch to last this long
ROUNDS = 9              # interleaved samples per candidate and generation
NEIGHBOURS = 4          # candidates a generation times beside the best so far
MIN_TASK_SECONDS = 15.0
_BENCHMARK_FN = re.compile(r"util\.func public @(\w+)\(%\w+: i32\)")


@dataclass
class Task:
    """One dispatch to tune: its benchmark source and its weight in the model's call."""

    dispatch: Dispatch
    source: str
    ms_per_call: float      # inside the model's call (`profile.profile_artifact`)


@dataclass
class Climb:
    """What one dispatch's search found: the best config, how it compared with IREE's, and
    every candidate tried."""

    function: str
    fingerprint: str
    pipeline: str
    default: str
    best: str
    default_ms: float
    best_ms: float
    tried: int
    failed: int
    generations: int
    seconds: float
    history: list[dict] = field(default_factory=list)
    cpu: str | None = None   # the CPU key of the process that measured (a Ray node's own)

    @property
    def improved(self) -> bool:
        return self.best != self.default

    @property
    def speedup(self) -> float:
        return self.default_ms / self.best_ms if self.best_ms else 1.0

    def evidence(self) -> dict:
        return {"function": self.function, "pipeline": self.pipeline, "default": self.default,
                "ms": {"iree": round(self.default_ms, 5), "tuned": round(self.best_ms, 5)},
                "tried": self.tried, "failed": self.failed, "generations": self.generations,
                "seconds": round(self.seconds, 1)}


def _scaled(sizes: tuple[int, ...], i: int, factor: float, bound: int | None) -> tuple | None:
    """``sizes`` with entry ``i`` times ``factor`` (an odd size halves to the nearest below;
    below 4, a step of one), bounded by the dim; None for no change."""
    value = sizes[i] * factor
    if sizes[i] < 4:
        value = sizes[i] + (1 if factor > 1 else -1)
    value = int(value)
    if value < 1 or value == sizes[i]:
        return None
    if bound is not None and value > bound and sizes[i] >= bound:
        return None  # already covers the whole dim: a larger tile changes nothing
    if bound is not None:
        value = min(value, bound)
    return sizes[:i] + (value,) + sizes[i + 1:]


def neighbours(config: LoweringConfig, dispatch: Dispatch) -> list[LoweringConfig]:
    """Configs one step from ``config``: each tiled dim's workgroup tile halved or doubled
    (bounded by the dim), and, when no fused op follows the root's vector tiles and the
    pipeline is not the microkernel's, each vector tile halved or doubled. Nearest first."""
    out: list[LoweringConfig] = []
    dist = config.level("distribution") or ()
    for i, size in enumerate(dist):
        if size <= 0:
            continue
        bound = dispatch.bounds[i] if i < len(dispatch.bounds) else None
        for factor in (2, 0.5):
            sizes = _scaled(dist, i, factor, bound)
            if sizes is not None:
                out.append(config.with_level("distribution", sizes))
    if not dispatch.consumers_configured and dispatch.pipeline != "Mmt4dTilingExpert":
        for level in ("vector_common_parallel", "vector_reduction"):
            sizes = config.level(level) or ()
            for i, size in enumerate(sizes):
                if size <= 0:
                    continue
                limit = dist[i] if i < len(dist) and dist[i] > 0 else None
                for factor in (2, 0.5):
                    scaled = _scaled(sizes, i, factor, limit)
                    if scaled is not None:
                        out.append(config.with_level(level, scaled))
    seen, unique = {config.text}, []
    for c in out:
        if c.text not in seen:
            seen.add(c.text)
            unique.append(c)
    return unique


def benchmark_flags(target: Any) -> list[str]:
    """iree-compile's flags for one dumped dispatch benchmark: the model's target flags."""
    from ..iree.compiler import common_flags
    from ..target import Target

    t = Target.parse(target)
    return [*common_flags(t), *t.compile_flags()]


class MeasureDispatch(Job):
    """A hill climb for one dispatch (an `Item` carries its benchmark source and budget):
    a picklable job, so ``--executor ray`` spreads dispatches over a cluster's nodes. Each
    node measures on its own CPU and says which (`Climb.cpu`)."""

    name = "tune-dispatch"

    def __init__(self, target: Any = "cpu", rounds: int = ROUNDS, margin: float = 0.03):
        self.target = target
        self.rounds = rounds
        self.margin = margin

    def __repr__(self) -> str:
        return f"MeasureDispatch({self.target!r}, {self.rounds}, {self.margin})"

    def run(self, item: Item) -> Outcome:
        from .. import tuning

        d = item.data
        dispatch = configured.read(d["source"])
        match = [x for x in dispatch if x.fingerprint == d["fingerprint"]]
        if not match:
            return Outcome(item.key, "fail", "no-dispatch", "tune",
                           "the benchmark has no dispatch with this fingerprint")
        climb = climb_dispatch(Task(match[0], d["source"], d.get("ms_per_call", 0.0)),
                               self.target, d["seconds"], self.rounds, self.margin,
                               progress=_PROGRESS.get("report"))
        climb.cpu = tuning.cpu_key(self.target)
        return Outcome(item.key, "ok", "improved" if climb.improved else "kept", "tune",
                       data={"climb": climb.__dict__})


_PROGRESS: dict[str, Callable | None] = {}  # the driver's progress hook (in-process only)


def _compile(source: str, config: LoweringConfig, dispatch: Dispatch, flags: list[str],
             folder: Path, label: str) -> tuple[bytes | None, str, float]:
    """(vmfb or None, why not, seconds) for the benchmark with ``config`` on its root op."""
    from ..iree.compiler import iree_compile_tool

    start = time.perf_counter()
    text, done = configured.rewrite(source, {dispatch.fingerprint: config.text})
    if not done:
        return None, "the benchmark lost its dispatch", 0.0
    src = folder / f"{label}.mlirbc"
    out = folder / f"{label}.vmfb"
    src.write_bytes(text)
    try:
        run = subprocess.run([iree_compile_tool(), str(src), *flags, "-o", str(out)],
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "iree-compile timed out after 120 s", time.perf_counter() - start
    seconds = time.perf_counter() - start
    if run.returncode:
        errors = [ln for ln in run.stderr.splitlines() if "error:" in ln]
        return None, (errors[0] if errors else run.stderr.strip()[-200:])[:300], seconds
    return out.read_bytes(), "", seconds


class _Timer:
    """A compiled benchmark loaded in this process: ``sample()`` times one batch of its
    dispatch and returns milliseconds per dispatch."""

    def __init__(self, vmfb: bytes, function: str):
        import iree.runtime as rt

        from ..runtime.worker_stack import ensure_worker_stacks

        ensure_worker_stacks()
        self.ctx = rt.SystemContext(config=rt.Config("local-task"))
        self.ctx.add_vm_module(rt.VmModule.copy_buffer(self.ctx.instance, vmfb))
        self.fn = self.ctx.modules.module[function]
        self.fn(1)
        start = time.perf_counter()
        self.fn(1)
        once = time.perf_counter() - start
        self.repeats = max(1, min(1000, math.ceil(SAMPLE_SECONDS / max(once, 1e-6))))

    def sample(self, repeats: int) -> float:
        start = time.perf_counter()
        self.fn(repeats)
        return (time.perf_counter() - start) / repeats * 1e3


def _time(timers: dict[str, _Timer], rounds: int) -> dict[str, list[float]]:
    repeats = max(t.repeats for t in timers.values())
    return interleaved({n: (lambda t=t: t.sample(repeats)) for n, t in timers.items()}, rounds)


def climb_dispatch(task: Task, target: Any = "cpu", seconds: float = 60.0,
                   rounds: int = ROUNDS, margin: float = 0.03,
                   progress: Callable[[str, "Climb"], None] | None = None) -> Climb:
    """Hill-climb ``task``'s dispatch from IREE's config for about ``seconds``: each
    generation times up to `NEIGHBOURS` untried neighbours of the best beside it; the
    fastest that `timing.beats` the best (by ``margin``) becomes the best. Stops at a local
    optimum or when the time is spent."""
    started = time.perf_counter()
    d = task.dispatch
    function = _BENCHMARK_FN.search(task.source)
    if function is None:
        raise ValueError(f"{d.function}: no benchmark function in its dumped benchmark")
    flags = benchmark_flags(target)
    climb = Climb(d.function, d.fingerprint, d.pipeline, d.config.text, d.config.text,
                  math.nan, math.nan, 0, 0, 0, 0.0)
    best = d.config
    tried = {best.text}
    with tempfile.TemporaryDirectory(prefix="lowerkit-tune-") as tmp:
        folder = Path(tmp)
        vmfb, why, _ = _compile(task.source, best, d, flags, folder, "best")
        if vmfb is None:
            climb.history.append({"config": best.text, "error": why})
            climb.seconds = time.perf_counter() - started
            return climb
        best_timer = _Timer(vmfb, function.group(1))
        default_samples: list[float] = []
        while time.perf_counter() - started < seconds:
            candidates = [c for c in neighbours(best, d) if c.text not in tried][:NEIGHBOURS]
            if not candidates:
                break
            timers: dict[str, _Timer] = {"best": best_timer}
            configs = {"best": best}
            for i, c in enumerate(candidates):
                tried.add(c.text)
                climb.tried += 1
                vmfb, why, _ = _compile(task.source, c, d, flags, folder, f"c{len(tried)}")
                if vmfb is None:
                    climb.failed += 1
                    climb.history.append({"config": c.text, "error": why})
                    continue
                try:
                    timers[f"c{i}"] = _Timer(vmfb, function.group(1))
                    configs[f"c{i}"] = c
                except Exception as e:  # noqa: BLE001 -- a candidate that will not run is out
                    climb.failed += 1
                    climb.history.append({"config": c.text, "error": f"{type(e).__name__}: {e}"})
            if len(timers) == 1:
                if time.perf_counter() - started >= seconds:
                    break
                continue
            samples = _time(timers, rounds)
            climb.generations += 1
            if not default_samples:
                default_samples = samples["best"]
            for name, xs in samples.items():
                if name != "best":
                    climb.history.append({"config": configs[name].text,
                                          "ms": round(_quartiles(xs)[1], 5),
                                          "best_ms": round(_quartiles(samples["best"])[1], 5)})
            winners = [n for n in samples if n != "best"
                       and beats(samples[n], samples["best"], margin)]
            if not winners:
                break
            win = min(winners, key=lambda n: _quartiles(samples[n])[1])
            best, best_timer = configs[win], timers[win]
            climb.best = best.text
            if progress:
                climb.best_ms = _quartiles(samples[win])[1]
                climb.default_ms = _quartiles(default_samples)[1]
                progress(d.function, climb)
        # the last word: the best against IREE's own, interleaved, when they differ
        if best.text != d.config.text:
            vmfb, _, _ = _compile(task.source, d.config, d, flags, folder, "iree")
            final = _time({"iree": _Timer(vmfb, function.group(1)), "best": best_timer},
                          rounds)
            if not beats(final["best"], final["iree"], margin):
                climb.history.append({"config": best.text, "rejected":
                                      "not faster than IREE's in the final comparison"})
                best = d.config
                climb.best = d.config.text
            climb.default_ms = _quartiles(final["iree"])[1]
            climb.best_ms = _quartiles(final["best" if best.text != d.config.text
                                             else "iree"])[1]
        else:
            climb.default_ms = climb.best_ms = (_quartiles(default_samples)[1]
                                                if default_samples else math.nan)
    climb.seconds = time.perf_counter() - started
    return climb


def tasks_of(benchmarks: Path, profile: Any, top: int | None = None,
             share: float = 0.97) -> tuple[list[Task], list[str]]:
    """The dispatches worth tuning, heaviest first: those of ``profile`` (the model's call)
    with a dumped benchmark and a tunable root op, until ``share`` of the dispatch time is
    covered. And a note for each heavy dispatch left out, with why."""
    by_name: dict[str, Task] = {}
    for path in sorted(benchmarks.glob("*_benchmark.mlir")):
        source = path.read_text()
        for d in configured.read(source):
            if d.tunable:
                by_name.setdefault(d.function, Task(d, source, 0.0))
    total = sum(x.ms_per_call for x in profile.dispatches) or 1.0
    tasks, notes, covered = [], [], 0.0
    for x in profile.dispatches:
        if covered / total >= share or (top is not None and len(tasks) >= top):
            break
        covered += x.ms_per_call
        task = by_name.get(x.name)
        if task is None:
            notes.append(f"{x.name} ({x.ms_per_call:.3g} ms a call): no standalone benchmark "
                         f"with a tunable root op (IREE dumps none for a dispatch with a "
                         f"dynamic workload)")
            continue
        task.ms_per_call = x.ms_per_call
        tasks.append(task)
    return tasks, notes


def budgets(tasks: list[Task], seconds: float) -> list[float]:
    """Each task's share of ``seconds``, by its weight, at least `MIN_TASK_SECONDS`."""
    weight = sum(t.ms_per_call for t in tasks) or 1.0
    return [max(MIN_TASK_SECONDS, seconds * t.ms_per_call / weight) for t in tasks]


def search(tasks: list[Task], seconds: float, target: Any = "cpu", executor: Any = None,
           rounds: int = ROUNDS, progress: Callable[[str, Climb], None] | None = None,
           deadline: float | None = None) -> tuple[list[Climb], list[str]]:
    """Every task's `climb_dispatch`, through ``executor`` (in this process by default; Ray
    spreads them), each within its `budgets` share of ``seconds``. Tasks past ``deadline``
    (a `time.perf_counter` value) are not started. Returns the climbs and, for each dispatch
    whose search failed, why."""
    from .executor.batch import run_items
    from .executor.inprocess import InProcessExecutor
    from .executor.job import run_one

    job = MeasureDispatch(target, rounds)
    climbs: list[Climb] = []
    failures: list[str] = []
    items = [Item(f"{i:03d} {t.dispatch.function}",
                  {"source": t.source, "fingerprint": t.dispatch.fingerprint,
                   "ms_per_call": t.ms_per_call, "seconds": s})
             for i, (t, s) in enumerate(zip(tasks, budgets(tasks, seconds)))]

    def arrived(outcome: Outcome) -> None:
        if outcome.status == "ok":
            climb = Climb(**outcome.data["climb"])
            climbs.append(climb)
            if progress:
                progress(climb.function, climb)
        else:
            failures.append(f"{outcome.key.split(' ', 1)[1]}: {outcome.message}")

    if executor is None or isinstance(executor, InProcessExecutor):
        _PROGRESS["report"] = progress
        try:
            for item in items:
                if deadline is not None and time.perf_counter() > deadline:
                    break
                arrived(run_one(job, item))
        finally:
            _PROGRESS.pop("report", None)
    else:
        run_items(job, items, executor, on_outcome=arrived)
    return climbs, failures


def statistics_of(climbs: list[Climb]) -> dict:
    improved = [c for c in climbs if c.improved]
    return {"dispatches": len(climbs), "improved": len(improved),
            "candidates": sum(c.tried for c in climbs),
            "rejected_by_iree": sum(c.failed for c in climbs),
            "geomean_speedup": (statistics.geometric_mean([c.speedup for c in improved])
                                if improved else 1.0)}
