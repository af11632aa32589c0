"""How far above eager any compiler could take the real-shape set on this host (issue 22): each
program's floating-point work against this CPU's measured fp32 peak, beside eager's and
lowerkit's times from a stored ``lowerkit bench real`` run of the same host.

    .venv/bin/python benchmarks/real_ceiling.py --run benchmarks/results/real-shapes-zen4-s62.json \\
        --json benchmarks/results/real-ceiling-zen4.json

A program's work is what ``torch.utils.flop_counter.FlopCounterMode`` counts in one eager call
(matmuls and convolutions, two FLOPs a multiply-add), with torch's CPU attention kernel counted
by torch's own attention formula (the counter knows only the GPU kernels), and with autograd on,
so that ``nn.TransformerEncoderLayer``'s fused inference path, which the counter cannot see
into, is not taken. Elementwise work, normalisations and softmax's exponentials are left out,
so the work is a lower bound and the time at peak below it is a bound no program can beat.
Eager's time over that is the most any compiler can be ahead of eager on that program, on
these cores: a program whose bound is under 2× cannot meet issue 22's "2× eager" by itself.
The peak is `benchmarks/gemm.py`'s FMA loop, measured at the start and the end of this run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm import measured_peak  # noqa: E402  (a sibling script)

from lowerkit.tools.bench import cpu_description, run_metadata  # noqa: E402


def _attention_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    """torch's formula for an attention's two matmuls, for its CPU flash kernel."""
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query, key, value)


def program_flops(name: str) -> dict:
    """FLOPs of one eager call of the real-shape program ``name``, by op."""
    from torch.utils.flop_counter import FlopCounterMode

    from lowerkit.zoo.real_shapes import REAL_SHAPES

    model, args, kwargs = REAL_SHAPES[name].make()
    cpu_attention = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with FlopCounterMode(display=False, custom_mapping={cpu_attention: _attention_flops}) as fc:
            model(*args, **kwargs)
    counts = fc.get_flop_counts().get("Global", {})
    return {"total": fc.get_total_flops(), "by_op": {str(op): n for op, n in counts.items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, required=True,
                   help="a stored `lowerkit bench real --json` run of this host")
    p.add_argument("--json", type=Path, help="store the result here")
    args = p.parse_args(argv)
    run = json.loads(args.run.read_text())
    here = cpu_description()
    if run["meta"].get("cpu") != here:
        raise SystemExit(f"{args.run} was taken on {run['meta'].get('cpu')!r}, this host is "
                         f"{here!r}: the peak must be measured where the times were")
    peaks = [measured_peak()]
    rows = []
    for entry in run["models"]:
        flops = program_flops(entry["model"])
        rows.append({"model": entry["model"], "flops": flops["total"], "by_op": flops["by_op"],
                     "eager_ms": entry["median_ms"]["eager"],
                     "torch_compile_ms": entry["median_ms"]["torch.compile"],
                     "lowerkit_ms": entry["median_ms"]["lowerkit"]})
    peaks.append(measured_peak())
    peak = max(pk["gflops"] for pk in peaks)
    for r in rows:
        r["at_peak_ms"] = r["flops"] / (peak * 1e9) * 1e3
        r["ceiling_vs_eager"] = r["eager_ms"] / r["at_peak_ms"] if r["at_peak_ms"] else math.inf
        for who in ("eager", "lowerkit"):
            r[f"{who}_share_of_peak"] = r["at_peak_ms"] / r[f"{who}_ms"]
    table = Table(title=f"the real-shape set against this host's fp32 peak, {peak:.0f} GFLOP/s")
    for col in ("program", "GFLOP", "ms at peak", "eager ms", "lowerkit ms", "eager % of peak",
                "lowerkit % of peak", "most × eager any compiler can reach"):
        table.add_column(col, justify="left" if col == "program" else "right")
    for r in rows:
        table.add_row(r["model"], f"{r['flops'] / 1e9:.2f}", f"{r['at_peak_ms']:.2f}",
                      f"{r['eager_ms']:.1f}", f"{r['lowerkit_ms']:.1f}",
                      f"{100 * r['eager_share_of_peak']:.0f}",
                      f"{100 * r['lowerkit_share_of_peak']:.0f}", f"{r['ceiling_vs_eager']:.2f}×")
    Console(width=160).print(table)
    if args.json:
        record = {"meta": run_metadata(), "run": str(args.run), "run_commit": run["meta"].get("commit"),
                  "peaks": peaks, "peak_gflops": peak, "models": rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
