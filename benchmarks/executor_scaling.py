"""Throughput of lowerkit's batch runners on each executor: the fuzzer and torch-mlir's e2e
suite, in process and on a local Ray with 1 and 2 workers, and Ray's own cost per item.

    .venv/bin/python benchmarks/executor_scaling.py --torch-mlir /tmp/torch-mlir-src \\
        --json benchmarks/results/executor-scaling.json

Each configuration runs in a fresh Python process (no warm state carried from the one
before): ``inprocess`` runs the items one after another in that process, ``ray-1`` and
``ray-2`` start a local Ray with that many CPUs (its start-up is timed apart) and run one task
per item. A configuration's wall time runs from the first item handed over to the last outcome
back, so it includes what each worker pays once (importing torch, the first compile).
Ray's overhead per item is timed with a job that does nothing (``EchoJob``), on one worker.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {"inprocess": None, "ray-1": 1, "ray-2": 2}
# one op each, quick: the e2e runner's cost, not lowerkit's on big models
E2E_PATTERN = r"^(Elementwise\w*Module_basic|Mm\w*Module_basic|Softmax\w*Module_basic)$"


def _e2e_module():
    spec = importlib.util.spec_from_file_location("lowerkit_e2e_suite",
                                                  ROOT / "benchmarks" / "e2e_suite.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _executor(config: str):
    from lowerkit.tools.executor import InProcessExecutor, RayExecutor

    if CONFIGS[config] is None:
        return InProcessExecutor(), 0.0
    start = time.perf_counter()
    ex = RayExecutor(num_cpus=CONFIGS[config])
    ex.describe()
    return ex, time.perf_counter() - start


def one(config: str, runner: str, args) -> dict:
    """Run ``runner``'s items on ``config`` in this process; its figures."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp/lowerkit-xdg")
    os.environ["LOWERKIT_CACHE_DIR"] = "off"  # every configuration compiles everything
    from collections import Counter

    from lowerkit.tools.executor import Item, run_items

    if runner == "fuzz":
        from lowerkit.tools.fuzz import FuzzJob, fuzz_items, generate

        job, items = FuzzJob(), fuzz_items(generate(args.programs, seed=args.seed), ["cpu"], 300)
    elif runner == "e2e":
        e2e = _e2e_module()
        import ray.cloudpickle

        ray.cloudpickle.register_pickle_by_value(e2e)  # Ray's workers cannot import the script
        suite = e2e.load_suite(args.torch_mlir)
        names = e2e.select_tests(suite.tests, E2E_PATTERN, args.tests, args.seed)
        job = e2e.E2EJob(str(Path(args.torch_mlir).resolve()), "backend", jobs=1)
        items = [Item(n, timeout_s=300) for n in names]
    else:  # Ray's own cost: a job that does nothing
        from lowerkit.tools.executor.faults import EchoJob

        job, items = EchoJob(), [Item(f"i{n:04d}") for n in range(args.echo_items)]
    executor, startup = _executor(config)
    start = time.perf_counter()
    outcomes = run_items(job, items, executor)
    wall = time.perf_counter() - start
    return {"config": config, "runner": runner, "items": len(items), "wall_s": round(wall, 3),
            "items_per_min": round(60 * len(items) / wall, 2),
            "ray_startup_s": round(startup, 3) if startup else None,
            "statuses": dict(Counter(o.status for o in outcomes)),
            "verdicts": {o.key: o.verdict for o in outcomes},
            "messages": {o.key: o.message[:200] for o in outcomes if o.status != "ok"}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--torch-mlir", default=os.environ.get("LOWERKIT_TORCH_MLIR"),
                   help="torch-mlir checkout for the e2e runner (without it: fuzz only)")
    p.add_argument("--programs", type=int, default=24, help="fuzz programs (default 24)")
    p.add_argument("--tests", type=int, default=16, help="e2e tests (default 16)")
    p.add_argument("--echo-items", type=int, default=200, help="items of the empty job")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    p.add_argument("--one", nargs=2, metavar=("CONFIG", "RUNNER"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print("RESULT " + json.dumps(one(*args.one, args)))
        return 0
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata

    meta = run_metadata()
    runners = ["fuzz"] + (["e2e"] if args.torch_mlir else [])
    rows = []
    plan = [(c, r) for r in runners for c in CONFIGS] + [("inprocess", "echo"), ("ray-1", "echo")]
    for config, runner in plan:
        cmd = [sys.executable, __file__, "--one", config, runner, "--programs", str(args.programs),
               "--tests", str(args.tests), "--echo-items", str(args.echo_items),
               "--seed", str(args.seed)] + (["--torch-mlir", args.torch_mlir] if args.torch_mlir else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        line = next((l for l in done.stdout.splitlines() if l.startswith("RESULT ")), None)
        if line is None:
            print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
            return 1
        rows.append(json.loads(line[len("RESULT "):]))
        r = rows[-1]
        print(f"{config:10s} {runner:5s} {r['items']:4d} items {r['wall_s']:8.2f} s "
              f"{r['items_per_min']:8.1f}/min {r['statuses']}", flush=True)
    by = {(r["config"], r["runner"]): r for r in rows}
    echo_in, echo_ray = by[("inprocess", "echo")], by[("ray-1", "echo")]
    overhead_ms = 1000 * (echo_ray["wall_s"] - echo_in["wall_s"]) / echo_ray["items"]
    agree = {r: all(by[(c, r)]["verdicts"] == by[("inprocess", r)]["verdicts"] for c in CONFIGS)
             for r in runners}
    table = Table(title="executor throughput (items a minute; wall from first item to last)")
    for col in ("runner", "items", *CONFIGS, "ray-2 / inprocess", "same verdicts"):
        table.add_column(col, justify="right")
    for r in runners:
        rate = {c: by[(c, r)]["items_per_min"] for c in CONFIGS}
        table.add_row(r, str(by[("inprocess", r)]["items"]), *(f"{rate[c]:.1f}" for c in CONFIGS),
                      f"{rate['ray-2'] / rate['inprocess']:.2f}×", str(agree[r]))
    Console().print(table)
    print(f"Ray overhead per item: {overhead_ms:.2f} ms; local Ray start: "
          f"{by[('ray-1', 'echo')]['ray_startup_s']:.1f} s")
    if args.json:
        meta["torch_mlir"] = args.torch_mlir
        record = {"meta": meta, "programs": args.programs, "tests": args.tests,
                  "e2e_pattern": E2E_PATTERN if args.torch_mlir else None,
                  "runs": [{k: v for k, v in r.items() if k != "verdicts"} for r in rows],
                  "same_verdicts": agree, "ray_overhead_ms_per_item": round(overhead_ms, 3),
                  "cpu_count": os.cpu_count()}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
