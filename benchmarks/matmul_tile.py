"""The data-tiled matmuls' workgroup tile (`lowerkit.tuning.MATMUL_TILE`), IREE's default
against a stored or given one, per real-shape model, interleaved with eager in one process.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/matmul_tile.py \\
        --database benchmarks/results/tuning-xeon.json --json benchmarks/results/matmul-tile-xeon.json
    .venv/bin/python benchmarks/matmul_tile.py --tile 524288 --models vit_b_stack,bert_base_layer

Each model is compiled twice, cache off: with IREE's default tile (``iree``) and with the
tile (``tuned``), both checked against eager; then the three are timed by `lowerkit bench`'s
harness (`lowerkit.tools.bench.measure`: interleaved rounds, a settle before each sample).
Two separate ``lowerkit bench`` runs cannot show this: eager's figures move between runs on
these 2-core machines by more than the tile's effect.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

import lowerkit
from lowerkit import tuning
from lowerkit.runtime.numerics import compare
from lowerkit.tools.bench import BenchResult, measure, run_metadata, warm_up
from lowerkit.zoo import real_shapes


def bench_model(name: str, tile: str, rounds: int) -> dict:
    model, args = getattr(real_shapes, name)()
    calls, errors = {}, {}
    with torch.inference_mode():
        want = model(*args)
    calls["eager"] = lambda: model(*args)
    for label, choice in (("iree", tuning.IREE_DEFAULT), ("tuned", tile)):
        with tuning.forced_matmul_tile(choice):
            art = lowerkit.compile(model, args, cache=False)
        with torch.inference_mode():
            check = compare(art(*args), want)
        if not check.ok:
            raise SystemExit(f"{name} with the matmul tile {choice}: {check.message}")
        errors[label] = check.max_rel_error
        calls[label] = lambda art=art: art(*args)
    result = BenchResult(name)
    with torch.inference_mode():
        measure(calls, result, rounds=rounds)
    timed = result.to_json()
    ms = timed["median_ms"]
    return {"model": name, "median_ms": ms, "samples_ms": timed["samples_ms"],
            "tuned_over_iree": ms["iree"] / ms["tuned"], "error_over_scale": errors}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="sdpa_1500,whisper_encoder_1500,vit_b_stack,dw_separable,"
                                        "resnet50,bert_base_layer")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--database", type=Path, help="take this CPU's stored tile from here")
    given.add_argument("--tile", help="a tile in bytes")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    torch.set_num_threads(a.torch_threads)
    tile = a.tile
    if a.database is not None:
        db = tuning.TuningDatabase(a.database)
        tile = db.choice(tuning.cpu_key("cpu"), tuning.MATMUL_TILE)
        if tile is None:
            raise SystemExit(f"{a.database} stores no matmul tile for {tuning.cpu_key('cpu')}")
    meta = run_metadata()
    warm_up("cpu")
    rows = [bench_model(m, tile, a.rounds) for m in a.models.split(",")]
    table = Table(title=f"matmul tile {tile} bytes against IREE's default, ms (median, interleaved)")
    for col in ("model", "eager", "IREE's default", f"{tile}", "default / tuned"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in rows:
        ms = r["median_ms"]
        table.add_row(r["model"], f"{ms['eager']:.3g}", f"{ms['iree']:.3g}", f"{ms['tuned']:.3g}",
                      f"{r['tuned_over_iree']:.2f}×")
    Console().print(table)
    if a.json:
        a.json.write_text(json.dumps({"meta": meta, "tile": tile, "rounds": a.rounds,
                                      "models": rows}, indent=1))
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
