"""lowerkit's decomposition of an exported program (``ExportedProgram.run_decompositions`` with
lowerkit's table) with torch's own composite-op overrides and with lowerkit's cheap ones
(`lowerkit.ingress.composite_overrides`), interleaved in one process; the graphs must be equal.

    .venv/bin/python benchmarks/composite_overrides.py --json benchmarks/results/composite-overrides.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from lowerkit.ingress.composite_overrides import cheap_overrides
from lowerkit.ingress.importer import decomposition_table
from lowerkit.tools.bench import run_metadata
from lowerkit.zoo import ZOO

MODES = {"torch's": contextlib.nullcontext, "cheap": cheap_overrides}


def bench(name: str, rounds: int) -> dict:
    model, args = ZOO[name].factory()[:2]
    table = decomposition_table()
    seconds: dict[str, list[float]] = {m: [] for m in MODES}
    graphs: dict[str, str] = {}
    for _ in range(rounds):
        for mode, overrides in MODES.items():
            exported = torch.export.export(model, tuple(args), strict=False)
            start = time.perf_counter()
            with overrides():
                decomposed = exported.run_decompositions(dict(table))
            seconds[mode].append(time.perf_counter() - start)
            graphs.setdefault(mode, decomposed.graph_module.code)
    if graphs["cheap"] != graphs["torch's"]:
        raise SystemExit(f"{name}: the cheap overrides changed the decomposed graph")
    median = {m: statistics.median(v[1:]) for m, v in seconds.items()}  # the first warms up
    return {"model": name, "median_s": median, "samples_s": seconds,
            "saved_s": median["torch's"] - median["cheap"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="?", default="mlp,normalisations,simple_cnn,bert_tiny,resnet_small")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    meta = run_metadata()
    rows = [bench(m, a.rounds) for m in a.models.split(",")]
    out = Table(title=f"run_decompositions, s (medians of {a.rounds - 1}, interleaved)")
    for col in ("model", "torch's overrides", "cheap overrides", "saved"):
        out.add_column(col, justify="left" if col == "model" else "right")
    for r in rows:
        s = r["median_s"]
        theirs = s["torch's"]
        out.add_row(r["model"], f"{theirs:.3f}", f"{s['cheap']:.3f}", f"{r['saved_s']:.3f}")
    Console().print(out)
    if a.json:
        a.json.write_text(json.dumps({"meta": meta, "rounds": a.rounds, "models": rows},
                                     indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
