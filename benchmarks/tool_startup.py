"""How long the MLIR-only tools take to start, and the lit suite they dominate.

    .venv/bin/python benchmarks/tool_startup.py --calls 10 --lit --json benchmarks/results/tool-startup.json
    .venv/bin/python benchmarks/tool_startup.py --tree OTHER_CHECKOUT ...   # another commit's tree

Each ``lowerkit-opt`` call is a fresh process (what lit runs): ``--list`` (builds every
registered pipeline and pass) and a pass pipeline on a small file. ``--lit`` also times the
whole lit suite (``lit test/lit pipelines``) once. ``--tree`` measures another checkout with
its own ``.venv`` (e.g. a commit before a change), stored with that tree's commit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lowerkit.tools.bench import run_metadata

ROOT = Path(__file__).resolve().parent.parent


def _timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", type=Path, default=ROOT, help="checkout to measure (with its .venv)")
    p.add_argument("--calls", type=int, default=10, help="fresh processes per command")
    p.add_argument("--lit", action="store_true", help="also time the lit suite once")
    p.add_argument("--json", type=Path, help="store the run here")
    args = p.parse_args(argv)
    tree = args.tree.resolve()
    opt = tree / ".venv" / "bin" / "lowerkit-opt"
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp/lowerkit-xdg"),
           "LOWERKIT_CACHE_DIR": "off"}
    commands = {
        "lowerkit-opt --list": [str(opt), "--list"],
        "lowerkit-opt --pass=canonicalize,cse FILE": [
            str(opt), "--pass=canonicalize,cse", str(tree / "test/lit/Inputs/stage_kinds.mlir")],
    }
    rows = {}
    for name, cmd in commands.items():
        samples = []
        for _ in range(args.calls):
            seconds, done = _timed(cmd, tree, env)
            if done.returncode != 0:
                print(f"{name} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            samples.append(seconds)
        rows[name] = {"median_s": statistics.median(samples), "min_s": min(samples),
                      "max_s": max(samples), "samples_s": samples}
    lit = None
    if args.lit:
        seconds, done = _timed([str(tree / ".venv/bin/lit"), "-q", "test/lit", "pipelines"], tree,
                               {**env, "LOWERKIT_CACHE_DIR": str(tree / "build" / "cache-startup")})
        counts = dict(re.findall(r"^\s*(\w[\w ]*?)\s*:\s*(\d+)\b", done.stdout, re.M))
        lit = {"wall_s": seconds, "returncode": done.returncode,
               "counts": {k: int(v) for k, v in counts.items()}}
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    table = Table(title=f"tool startup, {tree} at {commit and commit[:10]} ({args.calls} calls each)")
    for col in ("command", "median s", "min s", "max s"):
        table.add_column(col, justify="left" if col == "command" else "right")
    for name, r in rows.items():
        table.add_row(name, f"{r['median_s']:.3f}", f"{r['min_s']:.3f}", f"{r['max_s']:.3f}")
    if lit is not None:
        table.add_row(f"lit test/lit pipelines ({lit['counts']})", f"{lit['wall_s']:.1f}", "", "")
    Console().print(table)
    if args.json:
        record = {"meta": run_metadata(), "tree": str(tree), "tree_commit": commit,
                  "calls": args.calls, "commands": rows, "lit": lit}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0 if lit is None or lit["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
