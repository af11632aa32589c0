"""Compile time, import to vmfb, per stage (issue 7): variants interleaved, medians.

    .venv/bin/python benchmarks/compile_time.py resnet18,resnet50 --repeats 3
    .venv/bin/python benchmarks/compile_time.py resnet18,mobilenet_v2 --calls 20 \\
        --variant default --variant flags:--iree-llvmcpu-debug-symbols=false
    .venv/bin/python benchmarks/compile_time.py resnet18 --json benchmarks/results/X.json

Every repeat compiles each model once per variant, round-robin (A B A B ...), with the cache
off, so that load from other processes falls on every variant alike. Variants: ``default``
(what ``lowerkit.compile`` does), ``flags:F1,F2`` (extra iree-compile flags), ``phases``
(``iree_phases=True``: iree-compile prints every phase, which gives its per-phase times),
``iree-defaults`` (the cpu target without ``lowerkit.target.CPU_SPEED_FLAGS``) and ``cached``
(a compile through a warm compile cache). ``--calls`` also times each variant's artifact.
Reports the load average too: timings taken on a busy machine are only comparable inside one
run. ``--json`` stores the medians with the run's provenance (``lowerkit.tools.bench.run_metadata``)
for ``benchmarks/readme.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import tempfile
import time
import warnings
from collections import defaultdict


_WARMED: set[str] = set()


def _compile(name: str, variant: str, cache_dir: str):
    """One compilation: (seconds per stage, IREE's phases as ``iree/<phase>``, and total;
    the artifact; the model's arguments)."""
    import lowerkit
    from lowerkit.zoo import ZOO

    model, args, kwargs = ZOO[name].make()
    flags: list[str] = []
    cache: object = False
    options: dict = {}
    if variant.startswith("flags:"):
        flags = [f for f in variant[len("flags:"):].split(",") if f]
    elif variant == "phases":
        options["iree_phases"] = True
    elif variant == "iree-defaults":
        from lowerkit.target import CPU_SPEED_FLAGS, cpu

        plain = cpu()
        options["target"] = dataclasses.replace(
            plain, flags=tuple(f for f in plain.flags if f not in CPU_SPEED_FLAGS))
    elif variant == "cached":
        cache = cache_dir
        if name not in _WARMED:  # the first compile fills the cache (not timed)
            lowerkit.compile(model, args, kwargs, cache=cache)
            _WARMED.add(name)
    elif variant != "default":
        raise SystemExit(f"unknown variant {variant!r}")
    start = time.perf_counter()
    art = lowerkit.compile(model, args, kwargs, iree_flags=flags, cache=cache, **options)
    total = time.perf_counter() - start
    if variant == "cached" and not getattr(art, "cache_hit", False):
        raise SystemExit(f"{name}: the cached variant missed the cache")
    out = {"total": total}
    if variant == "cached":  # a hit carries the records of the compile that stored it
        return out, art, (args, kwargs)
    for r in art.records:
        out[r.name] = r.seconds
    for p in (art.compile_stats or {}).get("phases", []):
        out[f"iree/{p['name']}"] = p["seconds"]
    return out, art, (args, kwargs)


def _latency(calls: dict[str, tuple], rounds: int) -> dict[str, float]:
    """Median seconds per call of each variant's artifact, the variants interleaved by round."""
    times: dict[str, list[float]] = defaultdict(list)
    for art, (args, kwargs) in calls.values():
        art(*args, **kwargs)  # opens the device, picks the driver
    for _ in range(rounds):
        for variant, (art, (args, kwargs)) in calls.items():
            start = time.perf_counter()
            for _ in range(3):
                art(*args, **kwargs)
            times[variant].append((time.perf_counter() - start) / 3)
    return {v: statistics.median(t) for v, t in times.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", help="zoo models, comma-separated")
    p.add_argument("--variant", action="append", default=None,
                   help="default, phases, iree-defaults, cached, flags:F1,F2 "
                        "(repeatable; default: default)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--calls", type=int, default=0,
                   help="also time this many rounds of calls of every variant's artifact")
    p.add_argument("--json", metavar="FILE", help="store the medians and the run's provenance")
    a = p.parse_args()
    variants = a.variant or ["default"]
    warnings.simplefilter("ignore")
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata

    meta = run_metadata()  # before the run: its load average, not the run's own
    cache_dir = tempfile.mkdtemp(prefix="lowerkit-ct-cache-")
    samples: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    loads = []
    artifacts: dict[str, dict[str, tuple]] = defaultdict(dict)
    for _ in range(a.repeats):
        for name in a.models.split(","):
            for variant in variants:
                loads.append(os.getloadavg()[0])
                stages, art, call_args = _compile(name, variant, cache_dir)
                samples[name, variant].append(stages)
                if a.calls:
                    artifacts[name][variant] = (art, call_args)
    latency = {name: _latency(calls, a.calls) for name, calls in artifacts.items()}
    console = Console()
    stored: dict[str, dict] = {}
    for name in a.models.split(","):
        stages: list[str] = []
        for variant in variants:
            for s in samples[name, variant]:
                stages += [k for k in s if k not in stages]
        stages.remove("total")
        stages.append("total")
        table = Table(title=f"{name}: compile seconds, median of {a.repeats} "
                            f"(load average {min(loads):.1f}-{max(loads):.1f}, {os.cpu_count()} cores)")
        table.add_column("stage")
        for variant in variants:
            table.add_column(variant, justify="right")
        stored[name] = {v: {"seconds": {}, "samples": samples[name, v]} for v in variants}
        for stage in stages:
            cells = []
            for variant in variants:
                values = [s[stage] for s in samples[name, variant] if stage in s]
                cells.append(f"{statistics.median(values):.2f}" if values else "-")
                if values:
                    stored[name][variant]["seconds"][stage] = statistics.median(values)
            if all(c == "-" or float(c) < 0.05 for c in cells) and stage != "total":
                continue
            table.add_row(stage, *cells)
        if name in latency:
            table.add_row("per call (ms)", *(f"{latency[name][v] * 1e3:.2f}" for v in variants))
            for v in variants:
                stored[name][v]["per_call_ms"] = latency[name][v] * 1e3
        console.print(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "repeats": a.repeats, "calls": a.calls,
                       "variants": variants, "load_average": [min(loads), max(loads)],
                       "models": stored}, f, indent=1)
        console.print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
