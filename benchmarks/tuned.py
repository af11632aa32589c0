"""Whole models with their convolution forms tuned on this CPU (`lowerkit tune`), against the
fixed rule, no convolution per tap, eager and torch.compile (issues 19 and 22).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/tuned.py --json benchmarks/results/tuned.json
    .venv/bin/python benchmarks/tuned.py --models tcn --rounds 5      # a quick look, no file

Per model:

1. ``lowerkit.tune`` into an empty database: every convolution shape of the model whose form is
   a choice is measured alone, both ways (`lowerkit.tools.tune`), and the choices are stored;
2. the model is compiled three ways, cache off: ``rule`` (no database: `taps_pay`), ``tuned``
   (that database) and ``no per tap`` (every convolution to IREE's im2col). Compile seconds and
   dispatch counts are recorded for each;
3. eager, torch.compile (Inductor) and the three are timed interleaved, in rounds, and each
   is checked against eager.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

MODELS = ["resnet18", "resnet50", "unet_small", "tcn"]


def bench_model(name: str, rounds: int, tune_rounds: int) -> dict:
    import torch

    import lowerkit
    from lowerkit import tuning
    from lowerkit.runtime.numerics import compare
    from lowerkit.tools.tune import time_interleaved, tune
    from lowerkit.zoo import ZOO

    model, args, kwargs = ZOO[name].make()
    with tempfile.TemporaryDirectory() as folder:
        db = tuning.TuningDatabase(Path(folder) / "tuning.json")
        start = time.perf_counter()
        # the convolution forms alone: the matmul tile is a whole-compile choice of its own
        report = tune(model, args, kwargs, database=db, rounds=tune_rounds, matmul_tile=False)
        tune_s = time.perf_counter() - start
        arts, compile_s = {}, {}
        for label in ("rule", "tuned", "no per tap"):
            # the compile reads the database $LOWERKIT_TUNING_DB names (none: the rule)
            os.environ[tuning.ENV] = str(db.path if label == "tuned" else Path(folder) / "none")
            with tuning.forced(tuning.IM2COL if label == "no per tap" else None):
                start = time.perf_counter()
                arts[label] = lowerkit.compile(model, args, kwargs, cache=False)
                compile_s[label] = time.perf_counter() - start
        del os.environ[tuning.ENV]
    inductor = torch.compile(model)
    with torch.inference_mode():
        want = model(*args, **kwargs)
        start = time.perf_counter()
        inductor(*args, **kwargs)
        inductor_s = time.perf_counter() - start
        errors = {}
        for label, art in arts.items():
            c = compare(art(*args, **kwargs), want, tol=ZOO[name].tol)
            errors[label] = {"ok": c.ok, "max_rel_error": c.max_rel_error}
        samples = time_interleaved(
            {"eager": lambda: model(*args, **kwargs),
             "torch.compile": lambda: inductor(*args, **kwargs),
             **{label: (lambda a=art: a(*args, **kwargs)) for label, art in arts.items()}},
            rounds)
    return {
        "model": name,
        "ms": {k: statistics.median(v) for k, v in samples.items()},
        "compile_s": {**{k: round(v, 2) for k, v in compile_s.items()},
                      "torch.compile": round(inductor_s, 2)},
        "tune_s": round(tune_s, 1),
        "dispatches": {k: (a.compile_stats or {}).get("dispatches") for k, a in arts.items()},
        "choices": dict(Counter(m.choice for m in report.measured)),
        "shapes": [{"op": m.shape.key, "choice": m.choice, "why": m.why,
                    "ms": m.ms, "ratio": m.ratio} for m in report.measured],
        "tuned": arts["tuned"].tuned,
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds, whole models")
    parser.add_argument("--tune-rounds", type=int, default=15, help="rounds per shape, tuning")
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata, write_results

    torch.set_num_threads(2)
    meta = run_metadata()
    rows = []
    console = Console(width=170)
    for name in opts.models.split(","):
        with console.status(f"{name}: tuning, compiling three ways, timing"):
            rows.append(bench_model(name, opts.rounds, opts.tune_rounds))
    table = Table(title="ms a call (median), compile s, dispatches")
    for col in ("model", "eager", "torch.compile", "rule", "tuned", "no per tap",
                "compile s rule / tuned / none", "dispatches", "choices", "tune s"):
        table.add_column(col)
    for r in rows:
        ms, cs, d = r["ms"], r["compile_s"], r["dispatches"]
        table.add_row(r["model"], *(f"{ms[k]:.2f}" for k in ("eager", "torch.compile", "rule",
                                                              "tuned", "no per tap")),
                      f"{cs['rule']} / {cs['tuned']} / {cs['no per tap']}",
                      f"{d['rule']} / {d['tuned']} / {d['no per tap']}",
                      str(r["choices"]), str(r["tune_s"]))
    console.print(table)
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds,
                                  "tune_rounds": opts.tune_rounds, "models": rows})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
