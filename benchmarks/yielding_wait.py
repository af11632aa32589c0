"""A compiled call's time with the caller's wait as IREE spins it, and as lowerkit yields it
(`lowerkit.runtime.yielding_wait`), interleaved call by call in one process.

    .venv/bin/python benchmarks/yielding_wait.py
    .venv/bin/python benchmarks/yielding_wait.py gemm_vit_qkv,sdpa_1500 --calls 60
    .venv/bin/python benchmarks/yielding_wait.py --json benchmarks/results/yielding-wait.json

Each program is compiled for the CPU and called ``--rounds`` x ``--calls`` times each way,
the two ways alternating every ``--calls`` calls. A spinning wait shows as a long tail, not
as a slower median: the table gives the median, the mean and the 90th percentile of single
calls (ms), and eager PyTorch's median for scale. ``mlp`` is a call of microseconds, under
`LONG_CALL_S`: both ways then run the same code.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

CASES = ("gemm_vit_qkv", "sdpa_1500", "dw_separable", "bert_base_layer", "vit_b_stack", "mlp")


def _case(name: str):
    """(fn, args) of a zoo or real-shape model, or the ViT-B QKV projection as a linear layer."""
    import torch

    if name == "gemm_vit_qkv":
        torch.manual_seed(0)
        return torch.nn.Linear(768, 2304).eval(), (torch.randn(1, 197, 768),)
    from lowerkit.cli._factory import model_case

    case = model_case(name)
    return case.fn, case.args


def _quantiles(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "mean": statistics.mean(times),
            "p90": statistics.quantiles(times, n=10)[-1]}


def measure(name: str, rounds: int, calls: int) -> dict:
    import torch

    import lowerkit
    from lowerkit.runtime import yielding_wait

    fn, args = _case(name)
    art = lowerkit.compile(fn, args, target="cpu")
    with torch.no_grad():
        expected = fn(*args)
    from torch.utils._pytree import tree_leaves

    pairs = list(zip(tree_leaves(art(*args)), tree_leaves(expected)))
    scale = max(e.abs().max().item() for _, e in pairs) or 1.0
    error = max((g - e).abs().max().item() for g, e in pairs) / scale
    ways = {"spinning": False, "yielding": True}
    times: dict[str, list[float]] = {w: [] for w in ways}
    eager: list[float] = []
    with torch.no_grad():
        for _ in range(3):
            art(*args)
            fn(*args)
    was = yielding_wait._Switch.on
    try:
        for _ in range(rounds):
            for way, on in ways.items():
                yielding_wait._Switch.on = on
                for _ in range(calls):
                    start = time.perf_counter()
                    art(*args)
                    times[way].append((time.perf_counter() - start) * 1e3)
            with torch.no_grad():
                for _ in range(max(calls // 4, 1)):
                    start = time.perf_counter()
                    fn(*args)
                    eager.append((time.perf_counter() - start) * 1e3)
    finally:
        yielding_wait._Switch.on = was
    return {"model": name, "driver": art.executable.driver, "error_over_scale": error,
            "eager_median_ms": statistics.median(eager),
            **{way: _quantiles(t) for way, t in times.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="?", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=25)
    parser.add_argument("--threads", type=int, default=2, help="torch threads, for eager")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata

    torch.set_num_threads(args.threads)
    meta = run_metadata()
    rows = [measure(m, args.rounds, args.calls) for m in args.models.split(",")]
    table = Table(title=f"one call, ms: {args.rounds} rounds x {args.calls} calls each way")
    for col in ("model", "driver", "eager median", "spinning median", "mean", "p90",
                "yielding median", "mean", "p90"):
        table.add_column(col, justify="left" if col in ("model", "driver") else "right")
    for r in rows:
        s, y = r["spinning"], r["yielding"]
        table.add_row(r["model"], r["driver"], f"{r['eager_median_ms']:.3g}",
                      *(f"{s[k]:.3g}" for k in ("median", "mean", "p90")),
                      *(f"{y[k]:.3g}" for k in ("median", "mean", "p90")))
    Console(width=160).print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rounds": args.rounds, "calls": args.calls,
                       "models": rows}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
