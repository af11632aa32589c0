"""A fresh process's cost on checkouts set up differently: how much of a first compile is
Python compiling torch's, IREE's and lowerkit's own modules (bytecode; README, "Bytecode").

    .venv/bin/python benchmarks/fresh_process.py --tree CHECKOUT_BEFORE --tree . --rounds 5 \\
        --json benchmarks/results/fresh-process.json

Each ``--tree`` is a checkout with its own ``.venv`` (made by its ``scripts/setup``). Each round
runs, for every tree in turn, one fresh interpreter of that venv that imports torch, then
lowerkit, compiles ResNet-18 (random weights, the compile cache off) and calls it once, checked
against eager: the user's first compile in a new process. It reports each step's seconds, the
process's whole wall time, and how many of the site-packages modules it imported had valid
bytecode (what ``PYTHONDONTWRITEBYTECODE``, set on these machines, keeps Python from writing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lowerkit.tools.bench import run_metadata

PROBE = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import importlib.util, json, os, sys, sysconfig, warnings
    warnings.simplefilter("ignore")
    import torch
    t1 = time.perf_counter()
    import lowerkit
    from lowerkit.runtime.numerics import compare
    from lowerkit.zoo.vision import resnet18
    t2 = time.perf_counter()
    model, args = resnet18()[:2]
    # lowerkit's fixed costs inside the compile: its garbage collections, and the time the
    # compile waits in the host-CPU question (patched before lowerkit.api is first loaded)
    import gc
    import lowerkit.target as target_module
    collections, waits = [], []
    def timed(fn, into, with_args=False):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                seconds = time.perf_counter() - start
                into.append([list(a), seconds] if with_args else seconds)
        return wrapper
    # each with its arguments: a generation-0 collection is `collector.loading`'s, not the
    # compile's opening one
    gc.collect = timed(gc.collect, collections, with_args=True)
    target_module.resolve_host_cpu = timed(target_module.resolve_host_cpu, waits)
    # every full collection in the compile, Python's own and lowerkit's, from its callbacks
    full, began = [], []
    def watch(phase, info):
        if info["generation"] == 2:
            if phase == "start":
                began.append(time.perf_counter())
            elif began:
                full.append(time.perf_counter() - began.pop())
    gc.callbacks.append(watch)
    t3 = time.perf_counter()
    art = lowerkit.compile(model, args, cache=False)
    t4 = time.perf_counter()
    gc.callbacks.remove(watch)
    out = art(*args)
    t5 = time.perf_counter()
    with torch.no_grad():
        ok = compare(out, model(*args)).ok
    site = os.path.realpath(sysconfig.get_path("purelib"))
    imported = with_bytecode = 0
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if not source or not source.endswith(".py") or not os.path.isabs(source) \\
                or not os.path.realpath(source).startswith(site + os.sep):
            continue
        imported += 1
        cached = importlib.util.cache_from_source(source)
        if os.path.exists(cached) and os.path.getmtime(cached) >= os.path.getmtime(source):
            with_bytecode += 1
    print(json.dumps({"import_torch_s": t1 - t0, "import_lowerkit_s": t2 - t1,
                      "compile_s": t4 - t3, "first_call_s": t5 - t4, "matches_eager": ok,
                      "site_modules": imported, "site_modules_with_bytecode": with_bytecode,
                      "dont_write_bytecode": bool(sys.flags.dont_write_bytecode),
                      "collections_s": collections, "host_cpu_wait_s": sum(waits),
                      "full_collections": len(full), "full_collections_s": sum(full),
                      "stages_s": {r.name: r.seconds for r in art.records},
                      "iree_side_python_s": sum(r.seconds for r in art.records
                                                if r.build.value == "iree" and r.name != "iree-compile")}))
""")

STEPS = ("process_s", "import_torch_s", "import_lowerkit_s", "compile_s", "first_call_s")
# parts of the compile: lowerkit's garbage collections, its wait for the host-CPU question, and
# its own Python stages in IREE's build (the first of which loads what IREE's Python needs);
# and every full collection in it, Python's own and lowerkit's (at the end), with their count
PARTS = ("gc_start_s", "gc_end_s", "host_cpu_wait_s", "iree_side_python_s",
         "full_collections", "full_collections_s")


def one(tree: Path, env: dict) -> dict:
    start = time.perf_counter()
    done = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", PROBE], cwd=tree,
                          env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the probe failed:\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # [arguments, seconds] per explicit collection: the compile opens with its first of a
    # generation above 0 (a load's own, generation 0, comes before it) and ends with its last
    collections = [c for c in found.get("collections_s") or [] if c[0] != [0]]
    found["gc_start_s"] = collections[0][1] if collections else 0.0
    found["gc_end_s"] = collections[-1][1] if len(collections) > 1 else 0.0
    return {"process_s": wall, **found}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", type=Path, action="append", required=True,
                   help="a checkout with its .venv (repeat: they are interleaved)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path, help="store the run here")
    args = p.parse_args(argv)
    trees = [t.resolve() for t in args.tree]
    env = {**os.environ, "LOWERKIT_CACHE_DIR": "off", "LOWERKIT_TUNING_DB": "off",
           "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp/lowerkit-xdg")}
    samples: dict[Path, list[dict]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            samples[tree].append(one(tree, env))
    rows = []
    for tree in trees:
        runs = samples[tree]
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"],
                                capture_output=True, text=True).stdout.strip() or None
        rows.append({"tree": str(tree), "commit": commit, "runs": runs,
                     "median": {k: statistics.median(r[k] for r in runs) for k in (*STEPS, *PARTS)},
                     "matches_eager": all(r["matches_eager"] for r in runs),
                     "site_modules": runs[-1]["site_modules"],
                     "site_modules_with_bytecode": runs[-1]["site_modules_with_bytecode"],
                     "dont_write_bytecode": runs[-1]["dont_write_bytecode"]})
    table = Table(title=f"a fresh process: import, compile ResNet-18, first call "
                        f"(medians of {args.rounds}, interleaved)")
    for col in ("checkout", "modules with bytecode", *STEPS, *PARTS, "matches eager"):
        table.add_column(col, justify="left" if col == "checkout" else "right")
    for row in rows:
        table.add_row(f"{Path(row['tree']).name} at {(row['commit'] or '?')[:10]}",
                      f"{row['site_modules_with_bytecode']} of {row['site_modules']}",
                      *(f"{row['median'][k]:.2f}" for k in (*STEPS, *PARTS)),
                      "yes" if row["matches_eager"] else "NO")
    Console(width=220).print(table)
    if args.json:
        record = {"meta": run_metadata(), "rounds": args.rounds, "trees": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(r["matches_eager"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
