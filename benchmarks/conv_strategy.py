"""How dense 2-D convolutions reach IREE (`lowerkit.tuning.CONVOLUTIONS`): the rule (per tap
or im2col, `decompositions.taps_pay`) against IREE's data-tiled convolutions, channels-last
(``data-tiled``), per convolution model, interleaved with eager in one process.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_strategy.py \\
        --json benchmarks/results/conv-strategy-xeon.json
    .venv/bin/python benchmarks/conv_strategy.py --models resnet18,unet_small

Each model is compiled both ways, cache off, with no tuning database (the compile times are
each compile's seconds in this warm process), both checked against eager; then the three are
timed by `lowerkit bench`'s harness (`lowerkit.tools.bench.measure`: interleaved rounds, a
settle before each sample). ``data-tiled rung`` names a data-tiled compile that iree-compile
rejected, so that the program was compiled as the rule writes it
(`api._data_tiled_or_rule`).

``--forms`` picks the forms compiled (default ``rule,data-tiled``; ``--im2col`` adds
``im2col``). ``rule-before`` is the rule as it was before thick convolutions (128+ channels
in and out) went whole when strided or small (`decompositions.THICK_CHANNELS`): every dense
one with 8+ input channels per tap, so that one run times the rule against its predecessor.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

import lowerkit
from lowerkit import tuning
from lowerkit.ingress import decompositions
from lowerkit.runtime.numerics import compare
from lowerkit.tools.bench import BenchResult, measure, run_metadata, warm_up
from lowerkit.zoo import ZOO, get, real_models, real_shapes

MODELS = ("resnet18,resnet_small,simple_cnn,unet_small,mobilenet_v2_small,tcn,resnet50,"
          "dw_separable,whisper_encoder_1500")


# ``--im2col``: a third form, every convolution whole for IREE's im2col, data tiling off for
# them (`lowerkit.compile`'s ``convolutions="im2col"``): on a CPU where data tiling loses, fewer
# dispatches to compile than the rule's per-tap ones.
IM2COL = tuning.IM2COL


RULE_BEFORE = "rule-before"
FORMS = (*tuning.CONVOLUTION_STRATEGIES, IM2COL, RULE_BEFORE)


@contextlib.contextmanager
def _rule_before():
    """The rule with no convolution too thick to go per tap (its form before THICK_CHANNELS)."""
    keep = decompositions.THICK_CHANNELS
    decompositions.THICK_CHANNELS = sys.maxsize
    try:
        with tuning.forced_convolutions(tuning.RULE):
            yield
    finally:
        decompositions.THICK_CHANNELS = keep


def _compiling(form: str):
    """The context a compile of ``form`` runs in."""
    return _rule_before() if form == RULE_BEFORE else tuning.forced_convolutions(form)


def bench_model(name: str, rounds: int, forms: tuple[str, ...]) -> dict:
    if name in ZOO:
        model, args, kwargs = get(name).make()
    elif name in real_models.REAL_MODELS:  # torchvision and timm at published sizes
        model, args, kwargs = real_models.REAL_MODELS[name].make()
    else:  # a real-shape program (`lowerkit bench real`)
        (model, args), kwargs = getattr(real_shapes, name)(), {}
    calls, errors, seconds, dispatches, rungs = {}, {}, {}, {}, {}
    with torch.inference_mode():
        want = model(*args, **kwargs)
    calls["eager"] = lambda: model(*args, **kwargs)
    for strategy in forms:
        with _compiling(strategy):
            start = time.perf_counter()
            art = lowerkit.compile(model, args, kwargs, cache=False)
            seconds[strategy] = time.perf_counter() - start
        with torch.inference_mode():
            check = compare(art(*args, **kwargs), want)
        if not check.ok:
            raise SystemExit(f"{name} with the {strategy} convolutions: {check.message}")
        errors[strategy] = check.max_rel_error
        dispatches[strategy] = (art.compile_stats or {}).get("dispatches")
        rungs[strategy] = art.compile_rung
        calls[strategy] = lambda art=art: art(*args, **kwargs)
    result = BenchResult(name)
    with torch.inference_mode():
        measure(calls, result, rounds=rounds)
    timed = result.to_json()
    ms = timed["median_ms"]
    return {"model": name, "median_ms": ms, "samples_ms": timed["samples_ms"],
            **({"rule_over_data_tiled": ms[tuning.RULE] / ms[tuning.DATA_TILED]}
               if tuning.DATA_TILED in ms else {}),
            "compile_s": seconds, "dispatches": dispatches, "rungs": rungs,
            "error_over_scale": errors}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=MODELS)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--im2col", action="store_true",
                   help="also every convolution whole for IREE's im2col, not data-tiled")
    p.add_argument("--forms", default=",".join(tuning.CONVOLUTION_STRATEGIES),
                   help=f"forms compiled, comma-separated, of {', '.join(FORMS)}")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    forms = tuple(a.forms.split(",")) + ((IM2COL,) if a.im2col else ())
    unknown = [f for f in forms if f not in FORMS]
    if unknown or tuning.RULE not in forms:
        p.error(f"--forms: {', '.join(unknown) or 'rule missing'}; forms are {', '.join(FORMS)}"
                f", the rule among them")
    os.environ[tuning.ENV] = "off"  # each strategy alone, not a stored one
    torch.set_num_threads(a.torch_threads)
    meta = run_metadata()
    warm_up("cpu")
    rows = [bench_model(m, a.rounds, forms) for m in a.models.split(",")]
    table = Table(title="dense 2-D convolutions by form: ms a call (median, interleaved), "
                        "compile s, dispatches")
    table.add_column("model")
    for form in ("eager", *forms):
        table.add_column(f"{form} ms", justify="right")
    for form in forms:
        table.add_column(f"{form}: compile s, dispatches, rung", justify="right")
    for r in rows:
        ms, s, d = r["median_ms"], r["compile_s"], r["dispatches"]
        table.add_row(r["model"], *(f"{ms[f]:.3g}" for f in ("eager", *forms)),
                      *(f"{s[f]:.1f}, {d[f]}, {r['rungs'][f]}" for f in forms))
    Console(width=250).print(table)
    if IM2COL in forms:
        forms = Table(title="every convolution through IREE's im2col, against the rule")
        for col in ("model", "rule ms", "im2col ms", "compile s: rule / im2col", "dispatches"):
            forms.add_column(col, justify="left" if col == "model" else "right")
        for r in rows:
            ms, s, d = r["median_ms"], r["compile_s"], r["dispatches"]
            forms.add_row(r["model"], f"{ms[tuning.RULE]:.3g}", f"{ms[IM2COL]:.3g}",
                          f"{s[tuning.RULE]:.1f} / {s[IM2COL]:.1f}",
                          f"{d[tuning.RULE]} / {d[IM2COL]}")
        Console().print(forms)
    if a.json:
        a.json.write_text(json.dumps({"meta": meta, "rounds": a.rounds, "models": rows},
                                     indent=1))
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
