"""Derived weights off and on, each model compiled both ways, interleaved in one process.

Issue 19: what leaving IREE's initializers to torch saves in iree-compile, and what it costs at
the first call.

    .venv/bin/python benchmarks/derived_weights.py --json benchmarks/results/derived-weights.json
    .venv/bin/python benchmarks/derived_weights.py --models resnet18 --rounds 3   # a quick look

Per model (random weights, batch 1, cache off, lowerkit's default choices for this CPU), each
round compiles it twice, with ``LOWERKIT_DERIVED_WEIGHTS=0`` (every weight computation left to
IREE's initializers, as before) and with derived weights (the default), in alternating order.
Each compile records iree-compile's wall time and its CPU time (a child process:
``getrusage``), and the first call (the module's load, IREE's initializers or torch's derived
values, the call), checked against eager. A compile of each with the executables' sources
dumped counts the initializers IREE generated code for. Medians over the rounds: on these
2-core hosts two runs of one compile differ by more than the change.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

MODELS = ["resnet18", "resnet50", "mobilenet_v2"]
MODES = {"off": "0", "on": "1"}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _compile(model, args, mode: str, flags: list[str] = ()) -> tuple[object, float]:
    import lowerkit

    os.environ["LOWERKIT_DERIVED_WEIGHTS"] = MODES[mode]
    before = _children_cpu()
    art = lowerkit.compile(model, args, cache=False, iree_flags=list(flags))
    return art, _children_cpu() - before


def bench_model(name: str, make, rounds: int) -> dict:
    import torch

    from lowerkit.runtime.numerics import compare

    model, args = make()
    with torch.no_grad():
        expected = model(*args)
    counts = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory(prefix="lowerkit-derived-") as folder:
            art, _ = _compile(model, args, mode,
                              [f"--iree-hal-dump-executable-sources-to={folder}"])
            files = [p.name for p in Path(folder).glob("*.mlir")]
        counts[mode] = {"initializers": sum("_initializer_" in f for f in files),
                        "executables": len(files),
                        "derived": sum(s.derivation is not None for s in art.parameters),
                        "parameters": len(art.parameters),
                        "dispatches": (art.compile_stats or {}).get("dispatches")}
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    worst = {m: 0.0 for m in MODES}
    for r in range(rounds):
        for mode in (list(MODES) if r % 2 == 0 else list(reversed(MODES))):
            art, cpu = _compile(model, args, mode)
            start = time.perf_counter()
            got = art(*args)
            first = time.perf_counter() - start
            result = compare(got, expected)
            if not result.ok:
                raise SystemExit(f"{name} ({mode}): {result.message}")
            worst[mode] = max(worst[mode], result.max_rel_error)
            runs[mode].append({"iree_compile_s": art.compile_stats["seconds"],
                               "iree_compile_cpu_s": cpu, "first_call_s": first})
    os.environ.pop("LOWERKIT_DERIVED_WEIGHTS", None)
    medians = {m: {k: statistics.median(run[k] for run in runs[m]) for k in runs[m][0]}
               for m in MODES}
    return {"model": name, "rounds": rounds, "counts": counts, "medians": medians,
            "error_over_scale": worst, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    from rich.table import Table

    from compile_cold import each_model, script_options, store

    # the same programs as the model-to-first-result table
    opts = script_options(__doc__, argv, MODELS, "rounds", 5,
                          "interleaved rounds (the median is kept)")
    meta, rows, console = each_model(
        opts.models, "compiling with derived weights off and on, interleaved",
        lambda name, make: bench_model(name, make, opts.rounds))
    table = Table(title=f"derived weights off / on, medians of {opts.rounds} interleaved rounds")
    for col in ("model", "initializers", "dispatches", "derived parameters",
                "iree-compile s", "iree-compile CPU s", "first call s", "error / scale"):
        table.add_column(col)
    for r in rows:
        c, m = r["counts"], r["medians"]

        def pair(key, fmt="{:.2f}"):
            return " / ".join(fmt.format(m[x][key]) for x in MODES)

        table.add_row(r["model"], f"{c['off']['initializers']} / {c['on']['initializers']}",
                      f"{c['off']['dispatches']} / {c['on']['dispatches']}",
                      f"{c['off']['derived']} / {c['on']['derived']}",
                      pair("iree_compile_s"), pair("iree_compile_cpu_s"),
                      pair("first_call_s", "{:.3f}"),
                      " / ".join(f"{r['error_over_scale'][x]:.2g}" for x in MODES))
    console.print(table)
    if opts.json:
        store(opts.json, meta, rows, rounds=opts.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
