"""torch.compile(backend="lowerkit") on the zoo: per-call time against eager, Inductor and the
same program's `Artifact` called directly, with compile times and where each graph ran.

    .venv/bin/python benchmarks/backend.py --json benchmarks/results/backend-cpu.json
    .venv/bin/python benchmarks/backend.py resnet18,mlp          # some models, no file

Contenders are interleaved round by round (`lowerkit.tools.bench.measure`): ``eager``,
``torch.compile`` (Inductor), ``lowerkit`` (``lowerkit.compile``'s Artifact), ``backend``
(``torch.compile(model, backend="lowerkit")``: parameters read by reference as IREE
parameters, as ``lowerkit.compile`` reads them), ``frozen`` (the same with
``options={"freeze": True}``: parameters compiled in as constants) and ``dynamo`` (``torch.compile`` with a backend that runs Dynamo's graph
as it is: what Dynamo's guards and frame handling cost on top of eager). The backend's compile
is its first call, cold (a fresh compile cache) and again after ``torch._dynamo.reset()`` (the
cache warm). ``backend / lowerkit`` is the steady-state cost of the same program reached
through torch.compile; ``dynamo - eager`` is the part of it no backend can avoid, and
``(backend - (dynamo - eager)) / lowerkit`` what is left: the backend's own cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from lowerkit import backend as lowerkit_backend
from lowerkit.tools.bench import (BenchResult, geomean, measure, prepare, run_metadata, warm_up,
                                  zoo_models)
from lowerkit.zoo import ZOO


def _prepare_backend(model, args, kwargs, result: BenchResult, cache: str, name: str = "backend",
                     freeze: bool = False) -> dict:
    """The backend's callable (cold and cached first calls timed) and what it did per graph."""
    for label in ("cold", "cached"):
        torch._dynamo.reset()
        lowerkit_backend.reset()
        compiled = torch.compile(model, backend="lowerkit",
                                 options={"cache": cache, "freeze": freeze})
        start = time.perf_counter()
        with torch.inference_mode():
            compiled(*args, **kwargs)
        getattr(result, f"compile_{label}")[name] = time.perf_counter() - start
    graphs = lowerkit_backend.graphs()
    with torch.inference_mode():
        for _ in range(2):
            compiled(*args, **kwargs)

    def call():
        with torch.inference_mode():
            return compiled(*args, **kwargs)
    return {"call": call, "graphs": [{"kind": g.kind, "ops": g.ops, "ran": g.ran,
                                      "frozen": g.frozen,
                                      "reason": g.reason.splitlines()[0][:300] if g.reason else None}
                                     for g in graphs]}


def _prepare_dynamo(model, args, kwargs) -> Any:
    """torch.compile with a backend that runs Dynamo's graph itself: Dynamo's own cost."""
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=lambda gm, inputs: gm.forward)

    def call():
        with torch.inference_mode():
            return compiled(*args, **kwargs)
    call()
    return call


def bench(name: str, rounds: int) -> dict:
    model, args, kwargs = ZOO[name].make()
    result = BenchResult(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls = prepare(model, args, kwargs, "cpu", result)
        graphs = {}
        for label, freeze in (("backend", False), ("frozen", True)):
            try:
                done = _prepare_backend(model, args, kwargs, result,
                                        tempfile.mkdtemp(prefix="lowerkit-bench-backend-"),
                                        label, freeze)
                calls[label] = done["call"]
                graphs[label] = done["graphs"]
            except Exception as e:  # noqa: BLE001 - reported in the table
                result.errors[label] = f"{type(e).__name__}: {str(e).splitlines()[0]}"[:300]
                graphs[label] = []
        calls["dynamo"] = _prepare_dynamo(model, args, kwargs)
        measure(calls, result, rounds=rounds)
    row = result.to_json()
    row["graphs"] = graphs["backend"]
    row["frozen_graphs"] = graphs["frozen"]
    row["frozen_vs_lowerkit"] = result.median("frozen") / result.median("lowerkit")
    row["frozen_vs_eager"] = result.speedup("frozen", "eager")
    ms = row["median_ms"]
    # what Dynamo's guards and frame handling cost on top of eager (any backend pays it)
    row["dynamo_overhead_ms"] = ms["dynamo"] - ms["eager"]
    row["backend_vs_lowerkit"] = result.median("backend") / result.median("lowerkit")
    # the backend's own cost: its call less Dynamo's, against the Artifact called directly
    row["backend_less_dynamo_vs_lowerkit"] = (
        (ms["backend"] - row["dynamo_overhead_ms"]) / ms["lowerkit"]
        if "backend" in ms else None)
    row["backend_vs_eager"] = result.speedup("backend", "eager")
    row["backend_vs_torch_compile"] = result.speedup("backend", "torch.compile")
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="?", help="comma-separated zoo models (default: the zoo)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--torch-threads", type=int, default=None)
    p.add_argument("--json", type=Path, help="store the run here")
    a = p.parse_args(argv)
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    names = a.models.split(",") if a.models else zoo_models()
    warm_up("cpu")
    rows = []
    for name in names:
        rows.append(bench(name, a.rounds))
        r = rows[-1]["median_ms"]
        print(f"{name}: backend {r.get('backend', float('nan')):.3f} ms, "
              f"frozen {r.get('frozen', float('nan')):.3f} ms, "
              f"lowerkit {r.get('lowerkit', float('nan')):.3f} ms, eager {r['eager']:.3f} ms",
              flush=True)
    table = Table(title="torch.compile(backend='lowerkit'), ms a call (median)")
    for col in ("model", "eager", "torch.compile", "lowerkit", "backend", "frozen", "dynamo",
                "backend / lowerkit", "frozen / lowerkit", "frozen × eager",
                "graphs lowerkit/eager", "compile s cold/cached"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in rows:
        ms = r["median_ms"]
        ran = [g["ran"] for g in r["graphs"]]
        table.add_row(r["model"], *(f"{ms.get(k, float('nan')):.3f}" for k in
                                    ("eager", "torch.compile", "lowerkit", "backend", "frozen",
                                     "dynamo")),
                      f"{r['backend_vs_lowerkit']:.2f}", f"{r['frozen_vs_lowerkit']:.2f}",
                      f"{r['frozen_vs_eager']:.2f}×",
                      f"{ran.count('lowerkit')}/{ran.count('eager')}"
                      + (f" (frozen {frozen.count('lowerkit')}/{frozen.count('eager')})"
                         if (frozen := [g["ran"] for g in r["frozen_graphs"]]) != ran else ""),
                      f"{r['compile_cold_s'].get('backend', float('nan')):.2f} / "
                      f"{r['compile_cached_s'].get('backend', float('nan')):.2f}")
    Console(width=200).print(table)
    print(f"geomean backend / lowerkit {geomean([r['backend_vs_lowerkit'] for r in rows]):.3f}, "
          f"backend less Dynamo's own / lowerkit "
          f"{geomean([r['backend_less_dynamo_vs_lowerkit'] for r in rows]):.3f}, "
          f"frozen / lowerkit {geomean([r['frozen_vs_lowerkit'] for r in rows]):.3f}, "
          f"backend × eager {geomean([r['backend_vs_eager'] for r in rows]):.3f}, "
          f"frozen × eager {geomean([r['frozen_vs_eager'] for r in rows]):.3f}")
    if a.json:
        a.json.write_text(json.dumps({"meta": run_metadata(), "models": rows}, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
