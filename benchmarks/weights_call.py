"""Steady-state call with the weights as IREE parameters against the weights compiled in
(issue 19: "steady-state call time unchanged, ±5 %").

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/weights_call.py \\
        --json benchmarks/results/weights-call.json
    .venv/bin/python benchmarks/weights_call.py --models resnet18 --rounds 5   # a quick look

Per model (random weights, batch 1, cache off): ``lowerkit.compile`` with ``weights="external"``
(the CPU default: the vmfb holds code, the model's tensors are bound at load) and with
``weights="inline"`` (the weights as constants in the vmfb). Both are checked against eager,
called once (the load and IREE's initializers), then timed interleaved with eager in rounds
(`lowerkit.tools.tune.time_interleaved`: the order alternates each round). The ratio is
external over inline, so above 1 means parameters cost time at each call.
"""

from __future__ import annotations

import statistics
import time

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2_base"]


def bench_model(name: str, make, rounds: int) -> dict:
    import torch

    import lowerkit
    from lowerkit.runtime.numerics import compare
    from lowerkit.tools.tune import time_interleaved

    model, args = make()
    arts, compile_s, first_ms, checks = {}, {}, {}, {}
    with torch.inference_mode():
        want = model(*args)
        for weights in ("external", "inline"):
            start = time.perf_counter()
            art = lowerkit.compile(model, args, cache=False, weights=weights)
            compile_s[weights] = time.perf_counter() - start
            start = time.perf_counter()
            got = art(*args)
            first_ms[weights] = (time.perf_counter() - start) * 1e3
            result = compare(got, want)
            checks[weights] = {"ok": result.ok, "text": str(result)}
            arts[weights] = art
        samples = time_interleaved(
            {"eager": lambda: model(*args),
             **{w: (lambda a=a: a(*args)) for w, a in arts.items()}}, rounds)
    ms = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "model": name,
        "ms": ms,
        "samples_ms": samples,
        "external_over_inline": ms["external"] / ms["inline"],
        "compile_s": {k: round(v, 2) for k, v in compile_s.items()},
        "first_call_ms": first_ms,
        "vmfb_bytes": {k: (a.compile_stats or {}).get("vmfb_bytes") for k, a in arts.items()},
        "parameters": len(arts["external"].parameters),
        "checks": checks,
    }


def main(argv: list[str] | None = None) -> int:
    from rich.table import Table

    from compile_cold import each_model, script_options, store

    # the same programs as the model-to-first-result table
    opts = script_options(__doc__, argv, MODELS, "rounds", 21,
                          "interleaved rounds")
    meta, rows, console = each_model(
        opts.models, "compiling twice (parameters, inline), timing",
        lambda name, make: bench_model(name, make, opts.rounds))
    table = Table(title=f"ms a call, median of {opts.rounds} interleaved rounds")
    for col in ("model", "eager", "parameters", "inline", "parameters / inline",
                "vmfb KiB parameters / inline", "matches eager"):
        table.add_column(col)
    for r in rows:
        ms, v = r["ms"], r["vmfb_bytes"]
        table.add_row(r["model"], f"{ms['eager']:.2f}", f"{ms['external']:.2f}",
                      f"{ms['inline']:.2f}", f"{r['external_over_inline']:.3f}",
                      f"{v['external'] / 1024:.0f} / {v['inline'] / 1024:.0f}",
                      "yes" if all(c["ok"] for c in r["checks"].values()) else "NO")
    console.print(table)
    if opts.json:
        store(opts.json, meta, rows, rounds=opts.rounds)
    return 0 if all(c["ok"] for r in rows for c in r["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
