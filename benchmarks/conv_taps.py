"""Per-tap convolutions against IREE's im2col, per convolution shape (issues 19 and 22).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_taps.py --json benchmarks/results/conv-taps.json
    .venv/bin/python benchmarks/conv_taps.py --shapes resnet18       # one set, no file

lowerkit's import writes a 3×3 convolution as 9 matmuls on shifted views (``per taps``,
`lowerkit.ingress.decompositions`) where `lowerkit.ingress.decompositions.taps_pay` says so;
otherwise IREE takes the convolution whole and builds its im2col matrix (``im2col``). Each
shape is compiled both ways as a one-convolution program (batch 1, float32, random weights),
and timed interleaved with eager, medians of rounds. ``rule`` is what the import picks for the
shape now. The per-tap form has about twice as many dispatches for IREE to compile, so compile
seconds are reported too. ``--models resnet18,...`` also compiles whole zoo models with no
convolution per tap and with the rule, with compile seconds, dispatch counts and call times.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

# (name, C_in, C_out, H = W, kernel, stride, padding)
SHAPES = {
    "resnet18": [
        ("r18 64→64 @56", 64, 64, 56, 3, 1, 1),
        ("r18 64→128 @56 /2", 64, 128, 56, 3, 2, 1),
        ("r18 128→128 @28", 128, 128, 28, 3, 1, 1),
        ("r18 128→256 @28 /2", 128, 256, 28, 3, 2, 1),
        ("r18 256→256 @14", 256, 256, 14, 3, 1, 1),
        ("r18 256→512 @14 /2", 256, 512, 14, 3, 2, 1),
        ("r18 512→512 @7", 512, 512, 7, 3, 1, 1),
    ],
    "unet": [
        ("unet 48→16 @64", 48, 16, 64, 3, 1, 1),
        ("unet 16→16 @64", 16, 16, 64, 3, 1, 1),
        ("unet 32→32 @32", 32, 32, 32, 3, 1, 1),
    ],
}


def _per_tap(on: bool | None):
    """Every eligible convolution per tap (True), none (False), or the rule (None)."""
    from lowerkit import tuning

    return tuning.forced(None if on is None else tuning.TAPS if on else tuning.IM2COL)


def _time(fns: dict, rounds: int, calls: int) -> dict[str, float]:
    import torch

    samples: dict[str, list[float]] = {k: [] for k in fns}
    with torch.inference_mode():
        for f in fns.values():
            f(), f()
        for _ in range(rounds):
            for name, f in fns.items():
                start = time.perf_counter()
                for _ in range(calls):
                    f()
                samples[name].append((time.perf_counter() - start) / calls * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def _compile(model, args, on: bool | None):
    import lowerkit

    with _per_tap(on):
        start = time.perf_counter()
        art = lowerkit.compile(model, args, cache=False)
        return art, time.perf_counter() - start


def bench_shape(spec, rounds: int, calls: int) -> dict:
    import torch

    from lowerkit.ingress import decompositions

    name, c, o, h, k, s, p = spec
    torch.manual_seed(0)
    model, x = torch.nn.Conv2d(c, o, k, s, p).eval(), torch.randn(1, c, h, h)
    taps, taps_s = _compile(model, (x,), True)
    im2col, im2col_s = _compile(model, (x,), False)
    ms = _time({"eager": lambda: model(x), "per tap": lambda: taps(x),
                "im2col": lambda: im2col(x)}, rounds, calls)
    with torch.inference_mode():
        want = model(x)
        scale = float(want.abs().max())
        err = max(float((a(x) - want).abs().max()) for a in (taps, im2col)) / scale
    rule = decompositions.taps_pay(x, model.weight, [s, s])
    return {"shape": name, "c_in": c, "c_out": o, "size": h, "kernel": k, "stride": s,
            "ms": ms, "compile_s": {"per tap": taps_s, "im2col": im2col_s},
            "rule": "per tap" if rule else "im2col",
            "faster": "per tap" if ms["per tap"] < ms["im2col"] else "im2col",
            "error_over_scale": err}


def bench_model(name: str, rounds: int) -> dict:
    from lowerkit.zoo import ZOO

    model, args, _ = ZOO[name].make()
    arts, seconds = {}, {}
    # (forcing every convolution per tap would also take the stem's 49 taps over 3 channels,
    # which the rule never does: not a configuration anyone would pick)
    for label, on in (("none per tap", False), ("rule", None)):
        arts[label], seconds[label] = _compile(model, args, on)
    ms = _time({"eager": lambda: model(*args),
                **{label: (lambda a=a: a(*args)) for label, a in arts.items()}}, rounds, 1)
    return {"model": name, "ms": ms, "compile_s": seconds,
            "dispatches": {label: a.compile_stats.get("dispatches") for label, a in arts.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help="shape sets: " + ", ".join(SHAPES))
    parser.add_argument("--models", default="", help="zoo models (default: none)")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=5, help="calls a sample (shapes)")
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import start_run, write_results

    meta = start_run(threads=2)
    shapes = [bench_shape(s, opts.rounds, opts.calls)
              for group in opts.shapes.split(",") if group for s in SHAPES[group]]
    table = Table(title="one convolution, batch 1, ms a call (median)")
    for col in ("shape", "eager", "per tap", "im2col", "faster", "rule",
                "compile s per tap / im2col"):
        table.add_column(col)
    for r in shapes:
        table.add_row(r["shape"], *(f"{r['ms'][k]:.3f}" for k in ("eager", "per tap", "im2col")),
                      r["faster"], r["rule"],
                      f"{r['compile_s']['per tap']:.1f} / {r['compile_s']['im2col']:.1f}")
    Console(width=160).print(table)
    models = [bench_model(m, opts.rounds) for m in opts.models.split(",") if m]
    for r in models:
        print(r["model"], {k: round(v, 2) for k, v in r["ms"].items()}, "compile s",
              {k: round(v, 1) for k, v in r["compile_s"].items()}, "dispatches", r["dispatches"])
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds, "calls": opts.calls,
                                  "shapes": shapes, "models": models})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
