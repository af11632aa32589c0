"""What `fence-batched-matmul-operands` costs on the CPU: the same programs with and without it,
against eager PyTorch and ``torch.compile``, interleaved in one process.

    .venv/bin/python benchmarks/batched_fence.py --json benchmarks/results/batched-fence.json

The fence writes a computed batched-matmul operand to memory before IREE packs it (its
docstring says why: without it such programs gave wrong answers). ``unfenced`` is the same
compile with the fence turned off, timed only to price the fence; its error against eager is
printed beside it, since for these shapes it may be wrong.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from rich.console import Console
from rich.table import Table


def _attention(q, k, v):  # hand-written attention: two batched matmuls, both fenced
    return torch.softmax(q * 0.125 @ k.mT, -1) @ v


def _projected(x, k):  # a linear layer's result into a batched matmul
    return _PROJ(x) @ k.mT


torch.manual_seed(0)
_PROJ = torch.nn.Linear(64, 64)
CASES = {  # name: (fn, args); rows of 197 (a ViT's tokens) and 77 are no multiple of 16
    "attention-12x197x64": (_attention, (torch.randn(12, 197, 64), torch.randn(12, 197, 64),
                                         torch.randn(12, 197, 64))),
    "attention-8x77x64": (_attention, (torch.randn(8, 77, 64), torch.randn(8, 77, 64),
                                       torch.randn(8, 77, 64))),
    "projected-4x197x64": (_projected, (torch.randn(4, 197, 64), torch.randn(4, 197, 64))),
}


def _time(fn, rounds: int) -> dict[str, float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _rel(got, expected) -> float:
    return float((got - expected).abs().max() / expected.abs().max())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    torch.set_num_threads(a.torch_threads)
    warnings.filterwarnings("ignore")
    import lowerkit
    from lowerkit.passes import batched_operand_fence
    from lowerkit.tools.bench import run_metadata

    meta = run_metadata()
    rows = {}
    for name, (fn, args) in CASES.items():
        with torch.no_grad():
            expected = fn(*args)
            fenced = lowerkit.compile(fn, args, cache=False)
            keep = batched_operand_fence.needs_fence
            batched_operand_fence.needs_fence = lambda value, ir: False
            try:
                unfenced = lowerkit.compile(fn, args, cache=False)
            finally:
                batched_operand_fence.needs_fence = keep
            compiled = torch.compile(fn)
            compiled(*args)
            parts = {"eager": lambda: fn(*args), "torch.compile": lambda: compiled(*args),
                     "lowerkit": lambda: fenced(*args), "unfenced": lambda: unfenced(*args)}
            for f in parts.values():  # warm
                _time(f, 5)
            samples = {k: [] for k in parts}
            for _ in range(a.rounds):  # interleaved
                for k, f in parts.items():
                    samples[k] += _time(f, 1)
            rows[name] = {
                "ms": {k: statistics.median(v) * 1e3 for k, v in samples.items()},
                "error": {"lowerkit": _rel(fenced(*args), expected),
                          "unfenced": _rel(unfenced(*args), expected)},
            }
    table = Table(title=f"batched-matmul fence: ms a call, median of {a.rounds} "
                        f"({meta['cpu']['model']}, load {meta['load_average'][0]:.1f})")
    for col in ("case", "eager", "torch.compile", "lowerkit", "unfenced", "fenced / unfenced",
                "vs eager", "vs torch.compile", "error", "unfenced error"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for name, r in rows.items():
        ms = r["ms"]
        table.add_row(name, *(f"{ms[k]:.3f}" for k in ("eager", "torch.compile", "lowerkit",
                                                      "unfenced")),
                      f"{ms['lowerkit'] / ms['unfenced']:.2f}×",
                      f"{ms['eager'] / ms['lowerkit']:.2f}×",
                      f"{ms['torch.compile'] / ms['lowerkit']:.2f}×",
                      f"{r['error']['lowerkit']:.1e}", f"{r['error']['unfenced']:.1e}")
    Console().print(table)
    if a.json:
        a.json.write_text(json.dumps({"meta": meta, "rounds": a.rounds, "cases": rows},
                                     indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
