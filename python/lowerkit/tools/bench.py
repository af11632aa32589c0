"""Benchmarks: eager PyTorch, torch.compile (Inductor) and lowerkit on one model, in one process.

The three run interleaved (round after round, each contender in turn) and warm, so that the
noise of a shared machine falls on all of them alike; each sample times a batch of calls
long enough to be well above the clock's resolution. Reported: median time per call with the
interquartile spread, ratios against eager and torch.compile, compile time cold and cached,
and the peak resident memory each contender adds to the process from before its compile
through its first calls (Linux's VmHWM, reset before each). A GEMM line relates achieved
GFLOP/s to this machine's measured matmul peak.

Before each sample the process idles for a short *settle* time. Without it a contender pays
for the one timed before it: torch's OpenMP workers spin-wait for a while after every
multi-threaded op (libgomp's default wait policy), holding the cores that the next
contender's threads want (measured: ResNet-18 through lowerkit 19.3 ms alone, 31.3 ms right
after 2-thread eager calls; `lowerkit bench --settle-ms 0` shows it).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .. import api
from ..stages.isolation import proc_field_bytes
from ..target import CPU_SPEED_FLAGS
from ..zoo import models

CONTENDERS = ("eager", "torch.compile", "lowerkit")
# Contenders a run may add (`lowerkit bench --peers`): OpenVINO, the best CPU peer on Intel
# hosts (the `bench` extra; never a runtime dependency), and lowerkit's own import compiled
# with IREE's defaults for a CPU and none of lowerkit's per-shape rules: every convolution
# whole to IREE (its im2col or its depthwise kernel) and IREE's own matmul tile. A rule of
# lowerkit's that loses to "iree-defaults" on some host is a rule to fix (issue 71).
PEERS = ("openvino", "iree-defaults")
# lowerkit compiling with a tuning database (`lowerkit bench --tuned DB`), beside "lowerkit"
# compiling with the default one: what `lowerkit tune` gained, timed in the same rounds
TUNED = "lowerkit-tuned"
TUNED_DATABASE: str | None = None


# -- where a stored result comes from ----------------------------------------------------------
def _git(*args: str, here: str | None = None) -> str | None:
    here = here or os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, *args], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def checkout_dirty(here: str | None = None) -> bool | None:
    """Whether the checkout holding lowerkit (or ``here``) has uncommitted changes to tracked
    files anywhere in it, stored results aside; None outside a git checkout. The pathspecs are
    from the top: relative ones would look only below ``here``."""
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ":(top)",
                  ":(top,exclude)benchmarks/results", here=here)
    return None if status is None else bool(status)


def _program() -> str:
    """``sys.argv[0]`` relative to the repository's root when inside it (the command as typed
    there: ``.venv/bin/lowerkit``, ``benchmarks/compile_time.py``), else its base name."""
    root = _git("rev-parse", "--show-toplevel")
    path = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if root and path.startswith(os.path.join(root, "")):
        return os.path.relpath(path, root)
    return os.path.basename(path)


def cpu_description() -> dict:
    """/proc/cpuinfo's model name and its AVX-512/AMX flags: what IREE's ``host`` CPU tunes
    for, so two stored results can be told apart by the machine that took them."""
    from ..runtime.cpu_features import cpuinfo, host_flags

    info = cpuinfo()
    flags = {x for x in host_flags() or () if x.startswith(("avx512", "amx"))}
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    # a virtual machine's model name may be only the vendor's ("AMD EPYC"): the family and
    # model numbers tell its generations apart (AMD's 25 is Zen 3/4, 26 is Zen 5)
    return {"model": info.get("model name"), "family": info.get("cpu family"),
            "model_number": info.get("model"), "flags": sorted(flags),
            "cores": os.cpu_count(), "cores_usable": affinity}


def run_metadata(command: str | None = None) -> dict:
    """Provenance of a benchmark run, stored beside its numbers: the commit (and whether the
    tree had uncommitted changes outside ``benchmarks/results/``), the command (``sys.argv``
    unless given), the date, the CPU, the thread counts, the load, the toolchain and the CPU
    target's iree-compile flags. A README figure is only as good as this record (issue 16)."""
    from importlib import metadata

    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": checkout_dirty(),
        "command": command or shlex.join([_program(), *sys.argv[1:]]),
        "cpu": cpu_description(),
        # lowerkit's CPU programs run on IREE's local-task workers, one per usable core,
        # whatever torch's thread count is
        "threads": {"torch": torch.get_num_threads(),
                    "torch_interop": torch.get_num_interop_threads()},
        "load_average": list(os.getloadavg()),
        "cpu_ticks": cpu_ticks(),
        "versions": {d: version(d) for d in ("torch", "torch-mlir", "iree-base-compiler",
                                             "iree-base-runtime", "lowerkit")},
        "iree_cpu_flags": list(CPU_SPEED_FLAGS),
        "env": {k: os.environ[k] for k in ("LOWERKIT_CPU_DRIVER", "LOWERKIT_DECOMPOSITIONS",
                                            "OMP_WAIT_POLICY", "OMP_NUM_THREADS",
                                            "LOWERKIT_TUNING_DB", "LOWERKIT_YIELDING_WAIT",
                                            "LOWERKIT_HOLD_COLLECTIONS",
                                            "LOWERKIT_CPU_KERNELS")
                if k in os.environ},
        "tuning": _tuning_in_use(),
    }


def start_run(threads: int = 2) -> dict:
    """A benchmark script's start: torch on ``threads`` threads, the run's provenance
    (`run_metadata`), and a tiny compile, so that the first program measured is not billed
    for loading the compile path."""
    torch.set_num_threads(threads)
    meta = run_metadata()
    api.compile(torch.nn.Linear(4, 4), (torch.randn(1, 4),), cache=False)
    return meta


def write_results(path: str, payload: dict) -> None:
    """A benchmark's stored run: ``payload`` (its numbers beside `run_metadata`'s ``meta``) as
    indented JSON, with the load average at the end of the run (``load_after``), which the
    start's in ``meta`` does not tell."""
    import json

    payload = {**payload, "load_after": os.getloadavg()[0]}
    meta = payload.get("meta")
    start, now = (meta or {}).get("cpu_ticks"), cpu_ticks()
    if start and now:
        spent = {k: now[k] - start[k] for k in now}
        if sum(spent.values()) > 0:
            payload["meta"] = {**meta, "steal_share": spent["steal"] / sum(spent.values())}
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)
        f.write("\n")


def cpu_ticks() -> dict[str, int] | None:
    """This machine's CPU time so far, by kind (/proc/stat): a run's share of ``steal`` (time
    the hypervisor gave the vCPUs to another guest) says how far a shared host's noise reached
    its numbers. None where /proc/stat is not there."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 1 + len(names):
        return None
    return dict(zip(names, map(int, fields[1:1 + len(names)])))


def _tuning_in_use() -> dict | None:
    """The tuned choices this host's compiles read (`lowerkit.tuning`), if any: they change
    what is timed."""
    from .. import tuning

    db = tuning.open_database()
    if db is None or not db.entries:
        return None
    return {"path": str(db.path), "choices": db.choices(tuning.cpu_key("cpu"))}


@dataclass
class Timing:
    """Per-call times of one contender (seconds), from interleaved samples."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (0.05 = ±5 % band)."""
        if len(self.samples) < 4:
            return math.nan
        q = statistics.quantiles(self.samples, n=4)
        return (q[2] - q[0]) / self.median


@dataclass
class BenchResult:
    """One model's benchmark: per-contender timing, compile times, memory, and errors."""

    model: str
    timings: dict[str, Timing] = field(default_factory=dict)
    compile_cold: dict[str, float] = field(default_factory=dict)
    compile_cached: dict[str, float] = field(default_factory=dict)
    peak_memory_mb: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    # each contender's largest error against eager, as a fraction of the output's scale
    error_vs_eager: dict[str, float] = field(default_factory=dict)
    # where one is over the f32 tolerance: eager's and that contender's error against eager
    # in float64 (`_error_vs_eager`)
    error_vs_float64: dict[str, float] = field(default_factory=dict)
    flops: float | None = None   # per call, when known (the GEMM line)
    settle_s: float = 0.0        # idle before each sample
    tuned: dict = field(default_factory=dict)  # what the TUNED contender read from its database
    # the compile ladder's rung each lowerkit contender compiled on (`Artifact.compile_rung`):
    # off "fast", iree-compile rejected lowerkit's fast configuration for this model
    rungs: dict[str, str] = field(default_factory=dict)

    def median(self, name: str) -> float:
        t = self.timings.get(name)
        return t.median if t else math.nan

    def speedup(self, name: str, baseline: str) -> float:
        """How many times faster ``name`` is than ``baseline`` (>1 is faster)."""
        return self.median(baseline) / self.median(name)

    def to_json(self) -> dict:
        return {
            "model": self.model,
            "median_ms": {k: t.median * 1e3 for k, t in self.timings.items()},
            "spread": {k: t.spread for k, t in self.timings.items()},
            "samples_ms": {k: [s * 1e3 for s in t.samples] for k, t in self.timings.items()},
            **({"tuned": self.tuned} if self.tuned else {}),
            **({"compile_rung": self.rungs} if self.rungs else {}),
            "lowerkit_vs_eager": self.speedup("lowerkit", "eager"),
            "lowerkit_vs_torch_compile": self.speedup("lowerkit", "torch.compile"),
            "compile_cold_s": self.compile_cold,
            "compile_cached_s": self.compile_cached,
            "peak_memory_mb": self.peak_memory_mb,
            "settle_s": self.settle_s,
            "errors": self.errors,
            "error_vs_eager": self.error_vs_eager,
            "error_vs_float64": self.error_vs_float64,
            "gflops": {k: self.flops / t.median / 1e9 for k, t in self.timings.items()}
            if self.flops else None,
        }


# -- memory ------------------------------------------------------------------------------------
def _status_kb(field_name: str) -> int | None:
    value = proc_field_bytes(field_name, "/proc/self/status")
    return None if value is None else value // 1024


class _PeakMemory:
    """Peak RSS growth (MiB) over a block: VmHWM reset via clear_refs on entry, read on exit.

    Measured over a contender's compile and first calls, not its warm calls: warm calls reuse
    memory their allocators already hold, so they add nothing to measure. What it counts is
    what the contender costs this process (weights it copies, compiled code, arenas, an
    in-process compiler's peak); lowerkit's stages run in forked children, not counted."""

    def __init__(self, result: "BenchResult", name: str):
        self.result, self.name, self.base = result, name, None

    def __enter__(self) -> "_PeakMemory":
        gc.collect()
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            return self
        self.base = _status_kb("VmRSS")
        return self

    def __exit__(self, *exc: Any) -> None:
        peak = _status_kb("VmHWM")
        if self.base is not None and peak is not None:
            self.result.peak_memory_mb[self.name] = max(0.0, (peak - self.base) / 1024)


# -- contenders --------------------------------------------------------------------------------
_CACHE_DIR: str | None = None


def _compile_lowerkit(model, args, kwargs, target: str, result: "BenchResult"):
    """Compile through a compile cache of this process's own, twice: the first compile misses
    (cold) and writes it, the second finds it (cached). The first call opens the device."""
    global _CACHE_DIR
    import tempfile

    options = {}
    if "cache" in inspect.signature(api.compile).parameters:
        if _CACHE_DIR is None:
            _CACHE_DIR = tempfile.mkdtemp(prefix="lowerkit-bench-cache-")
        options["cache"] = _CACHE_DIR
    for label in ("cold", "cached"):
        start = time.perf_counter()
        art = api.compile(model, args, kwargs, target=target, **options)
        getattr(result, f"compile_{label}")["lowerkit"] = time.perf_counter() - start
    result.rungs["lowerkit"] = getattr(art, "compile_rung", "fast")
    for _ in range(3):
        art(*args, **kwargs)
    return art


def _compile_inductor(model, args, kwargs, result: "BenchResult"):
    """torch.compile twice, timing the first call of each: cold, then with Inductor's caches."""
    from torch import _dynamo

    for label in ("cold", "cached"):
        _dynamo.reset()
        compiled = torch.compile(model)
        start = time.perf_counter()
        with torch.inference_mode():
            compiled(*args, **kwargs)
        getattr(result, f"compile_{label}")["torch.compile"] = time.perf_counter() - start
    with torch.inference_mode():
        for _ in range(2):
            compiled(*args, **kwargs)
    return compiled


@contextlib.contextmanager
def iree_defaults():
    """Compiles inside take IREE's defaults for the rules lowerkit chooses per shape: every
    convolution whole, IREE's matmul tile, no dispatch configurations (the "iree-defaults"
    peer, and the form benchmarks that time it)."""
    from .. import tuning

    with tuning.forced_matmul_tile(tuning.IREE_DEFAULT), tuning.forced_dispatch_configs({}), \
            tuning.forced_convolutions(tuning.IM2COL):
        yield


def _compile_iree_defaults(model, args, kwargs, target: str, result: "BenchResult"):
    """lowerkit's import with IREE's defaults for the rules lowerkit chooses per shape (see
    PEERS); no compile cache, so the cold time is a real compile."""
    start = time.perf_counter()
    with iree_defaults():
        art = api.compile(model, args, kwargs, target=target, cache=False)
    result.compile_cold["iree-defaults"] = time.perf_counter() - start
    for _ in range(3):
        art(*args, **kwargs)
    return art


def _compile_tuned(model, args, kwargs, target: str, result: "BenchResult"):
    """lowerkit reading the tuning database at `TUNED_DATABASE` (what ``lowerkit tune``
    stored), no compile cache."""
    from .. import tuning

    if TUNED_DATABASE is None:
        raise ValueError(f"{TUNED} needs a tuning database (lowerkit bench --tuned FILE)")
    with tuning.reading(TUNED_DATABASE):
        start = time.perf_counter()
        art = api.compile(model, args, kwargs, target=target, cache=False)
        result.compile_cold[TUNED] = time.perf_counter() - start
    result.tuned = {k: str(v) for k, v in art.tuned.items()}
    result.rungs[TUNED] = art.compile_rung
    for _ in range(3):
        art(*args, **kwargs)
    return art


def openvino_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None


def _compile_openvino(model, args, kwargs, result: "BenchResult"):
    """``openvino.convert_model`` then ``compile_model("CPU")`` at f32 on torch's thread
    count, as a user who wants OpenVINO's speed without its lower precisions would."""
    import openvino as ov

    if kwargs:
        raise TypeError("the OpenVINO contender takes positional tensor inputs only")
    start = time.perf_counter()
    try:
        converted = ov.convert_model(model, example_input=args)
    except Exception:  # noqa: BLE001 - TorchScript's trace fails on some (torchvision's ViT)
        converted = ov.convert_model(torch.export.export(model, tuple(args)))
    compiled = ov.Core().compile_model(converted, "CPU", {
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": torch.get_num_threads(),
        "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    inputs = [a.numpy() for a in args]
    request.infer(inputs)
    result.compile_cold["openvino"] = time.perf_counter() - start

    def call():
        request.infer(inputs)
        outs = [torch.from_numpy(request.get_output_tensor(i).data.copy())
                for i in range(len(compiled.outputs))]
        return outs[0] if len(outs) == 1 else tuple(outs)
    return call


def _error_vs_eager(result: "BenchResult", name: str, out: Any, expected: Any,
                    float64: Callable[[], Any] | None = None) -> None:
    """Record ``name``'s error against eager's answer; a mismatch at the f32 tolerance is an
    error of the contender unless ``float64`` (eager in float64) shows eager itself that far
    off: a deep net's f32 answer may differ from eager's by more than the tolerance and still
    be as close to the exact one (Inception-v3: eager 2.9e-5 of scale from float64, lowerkit
    2.6e-5, the two 4.7e-5 apart)."""
    from ..runtime.numerics import compare

    if isinstance(out, (tuple, list)) and not isinstance(expected, (tuple, list)):
        out = out[0]
    if isinstance(expected, (tuple, list)) and isinstance(out, (tuple, list)):
        out = type(expected)(out)
    check = compare(out, expected)
    result.error_vs_eager[name] = check.max_rel_error
    if check.ok:
        return
    exact = float64() if float64 is not None else None
    if exact is not None:
        close, mine, eager = as_close_as_eager(out, expected, exact)
        result.error_vs_float64[name] = mine
        result.error_vs_float64["eager"] = eager
        if close:
            return
    result.errors[name] = check.message[:300]


def as_close_as_eager(out: Any, expected: Any, exact: Any) -> tuple[bool, float, float]:
    """Whether ``out`` is as close to ``exact`` (eager in float64) as eager's ``expected``
    is, give or take 2x: an f32 answer over the tolerance from eager's that is no worse an
    answer. With the two errors against ``exact``, as fractions of scale."""
    from ..runtime.numerics import compare

    mine, eager = compare(out, exact), compare(expected, exact)
    close = mine.message.startswith("matches") or (
        eager.max_rel_error > 0 and mine.max_rel_error <= 2 * eager.max_rel_error
        and "differ" not in mine.message and "NaN" not in mine.message)
    return close, mine.max_rel_error, eager.max_rel_error


def float64_answer(model, args, kwargs) -> Callable[[], Any]:
    """Eager's answer in float64, cast back to each output's dtype, computed once when first
    asked; None for a model that cannot be run in float64 (not a module, or it fails)."""
    import copy

    answer: list = []

    def get():
        if not answer:
            try:
                wide = copy.deepcopy(model).double()
                cast = lambda t: t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
                with torch.inference_mode():
                    out = wide(*[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})
                answer.append(torch.utils._pytree.tree_map(
                    lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == torch.float64 else t, out))
            except Exception:  # noqa: BLE001 - a model that does not run in float64
                answer.append(None)
        return answer[0]
    return get if isinstance(model, torch.nn.Module) else (lambda: None)


def prepare(model, args, kwargs, target: str, result: "BenchResult",
            contenders: tuple[str, ...] = CONTENDERS) -> dict[str, Callable[[], Any]]:
    """Compile every contender (timing cold and cached compiles, and the memory each adds);
    return zero-arg callables."""
    calls: dict[str, Callable[[], Any]] = {}
    if "eager" in contenders:
        def eager():
            with torch.inference_mode():
                return model(*args, **kwargs)
        with _PeakMemory(result, "eager"):
            for _ in range(3):
                eager()
        calls["eager"] = eager
    if "torch.compile" in contenders:
        try:
            with _PeakMemory(result, "torch.compile"):
                compiled = _compile_inductor(model, args, kwargs, result)

            def inductor():
                with torch.inference_mode():
                    return compiled(*args, **kwargs)
            calls["torch.compile"] = inductor
        except Exception as e:  # noqa: BLE001 - a contender that cannot run is reported
            result.errors["torch.compile"] = f"{type(e).__name__}: {e}"[:300]
    def lowerkit():
        with _PeakMemory(result, "lowerkit"):
            art = _compile_lowerkit(model, args, kwargs, target, result)
        return lambda: art(*args, **kwargs)

    def iree_defaults():
        plain = _compile_iree_defaults(model, args, kwargs, target, result)
        return lambda: plain(*args, **kwargs)

    def openvino():
        with _PeakMemory(result, "openvino"):
            return _compile_openvino(model, args, kwargs, result)

    def tuned():
        art = _compile_tuned(model, args, kwargs, target, result)
        return lambda: art(*args, **kwargs)

    for name, make in (("lowerkit", lowerkit), ("iree-defaults", iree_defaults),
                       ("openvino", openvino), (TUNED, tuned)):
        if name in contenders:
            try:
                calls[name] = make()
            except Exception as e:  # noqa: BLE001 - a contender that cannot run is reported
                first = str(e).splitlines()
                result.errors[name] = f"{type(e).__name__}: {first[0] if first else ''}"[:300]
    if "eager" in calls:
        expected = calls["eager"]()
        float64 = float64_answer(model, args, kwargs)
        for name, fn in calls.items():
            if name != "eager":
                try:
                    _error_vs_eager(result, name, fn(), expected, float64)
                except Exception as e:  # noqa: BLE001 - an output eager's structure lacks
                    result.errors[name] = f"output not comparable with eager's: {e}"[:300]
    return calls


def warm_up(target: str, contenders: tuple[str, ...] = CONTENDERS) -> None:
    """Compile and run a tiny function with every contender, so that the first model measured
    is not billed for loading the compilers' and runtimes' libraries (time and memory)."""
    def tiny(x):
        return torch.relu(x) + 1

    prepare(tiny, (torch.randn(4),), {}, target, BenchResult("warm-up"), contenders)


SETTLE_S = 0.03  # idle before each sample: longer than torch's OpenMP workers spin


def measure(calls: dict[str, Callable[[], Any]], result: BenchResult, *, rounds: int = 15,
            min_sample_s: float = 0.02, max_seconds: float = 20.0,
            settle_s: float = SETTLE_S) -> None:
    """Size each sample, then take interleaved samples of every contender, each after
    ``settle_s`` of idling (see the module's docstring)."""
    per_call = {}
    for name, fn in calls.items():
        fn()
        times = []
        for _ in range(5):  # the fastest of a few: one slow call (a driver trial, a page
            start = time.perf_counter()  # fault) made samples of 5 calls where 1000 were due,
            fn()  # and a 20 µs program then measured 100 µs, its first call after the settle
            times.append(time.perf_counter() - start)
        per_call[name] = max(min(times), 1e-7)
    reps = {n: max(1, int(min_sample_s / t)) for n, t in per_call.items()}
    # keep the whole run under max_seconds on slow models
    round_cost = sum(reps[n] * per_call[n] + settle_s for n in calls)
    rounds = max(5, min(rounds, int(max_seconds / max(round_cost, 1e-9))))
    result.settle_s = settle_s
    for name in calls:
        result.timings[name] = Timing()
    for _ in range(rounds):
        for name, fn in calls.items():
            n = reps[name]
            if settle_s:
                time.sleep(settle_s)
            start = time.perf_counter()
            for _ in range(n):
                fn()
            result.timings[name].samples.append((time.perf_counter() - start) / n)


def bench_model(name: str, model, args, kwargs=None, *, target: str = "cpu",
                contenders: tuple[str, ...] = CONTENDERS, rounds: int = 15,
                flops: float | None = None, settle_s: float = SETTLE_S) -> BenchResult:
    """Compile and measure one model with every contender."""
    kwargs = dict(kwargs or {})
    result = BenchResult(name, flops=flops)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls = prepare(model, args, kwargs, target, result, contenders)
        measure(calls, result, rounds=rounds, settle_s=settle_s)
    return result

def zoo_models(include_slow: bool = False) -> list[str]:
    """The zoo models `lowerkit bench zoo` times: not the GEMM (a line of its own), not the
    known failures."""
    return [m.name for m in models(include_slow=include_slow)
            if "gemm" not in m.tags and "known-failure" not in m.tags]


# -- the GEMM line -----------------------------------------------------------------------------
def torch_mm_gflops(n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of the best of a few large float32 ``torch.mm`` on every core (whatever
    ``torch.set_num_threads`` says: IREE's workers use every core too). A reference for the
    GEMM line, not the machine's peak: lowerkit's GEMM has measured above it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or threads)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.mm(a, b)
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return 2 * n ** 3 / best / 1e9


def geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan
