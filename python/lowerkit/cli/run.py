"""``lowerkit run FILE.py:FACTORY``: compile, run, and optionally check against eager."""

from __future__ import annotations

import argparse
import time

import torch

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="FILE.py:FACTORY", help="factory returning (model, args[, kwargs])")
    p.add_argument("--target", default="cpu", help="compilation target (default: cpu)")
    p.add_argument("--pipeline", default=None, help="registered pipeline name (default: torch-to-linalg)")
    p.add_argument("--check", action="store_true", help="compare with eager PyTorch and fail on mismatch")
    p.add_argument("--rtol", type=float, default=None,
                   help="with --atol: an elementwise check instead of the default, an error "
                        "relative to each output's scale (lowerkit.runtime.numerics)")
    p.add_argument("--atol", type=float, default=None)
    p.add_argument("--dump-dir", default=None, help="write every stage's IR into this folder")
    p.add_argument("--output", "-o", default=None, help="save the compiled artifact to this file")
    p.add_argument("--phases", action="store_true",
                   help="also time IREE's twelve phases, in the table (iree-compile prints each: "
                        "a slower compile; implies --no-cache)")
    p.add_argument("--no-cache", action="store_true",
                   help="compile even if the compile cache holds this program (cold timings)")
    p.add_argument("--convolutions", choices=("rule", "data-tiled", "im2col"), default=None,
                   help="how dense 2-D convolutions reach a CPU target: per tap or im2col by "
                        "shape (rule, the default), whole for IREE's data tiling, or every "
                        "convolution whole (im2col: the shortest compile)")


def main(args: argparse.Namespace) -> int:

    import lowerkit
    from lowerkit.runtime.numerics import compare

    from ._factory import load_case

    console = console_()
    case = load_case(args.model)
    start = time.perf_counter()
    with console.status(f"compiling {case.name} for {args.target}"):
        art = lowerkit.compile(case.fn, case.args, case.kwargs, target=args.target,
                               pipeline=args.pipeline, dynamic_shapes=case.dynamic_shapes,
                               dump_dir=args.dump_dir, cache=False if args.no_cache else None,
                               iree_phases=args.phases, convolutions=args.convolutions)
    wall = time.perf_counter() - start
    console.print(art.stage_table(title=f"{case.name} → {art.target.name}"))
    if art.cache_hit:
        # A hit carries the stage records of the compile that stored it: say so, with the
        # time this call took (import and key, then loading the entry).
        console.print(f"[yellow]compile cache hit in {wall:.2f} s ({art.cache_note}): the table "
                      f"shows the compile that stored it ({art.compile_seconds:.2f} s); "
                      "--no-cache recompiles")
    start = time.perf_counter()
    out = art(*case.args, **case.kwargs)
    first_call = time.perf_counter() - start
    console.print(f"compiled in {wall:.2f} s; first call {first_call * 1e3:.1f} ms; "
                  f"vmfb {len(art.vmfb) / 1024:.1f} KiB")
    if args.output:
        console.print(f"saved {art.save(args.output)}")
    if args.check and art.signature.seeded:
        console.print("[yellow]not compared with eager: the program draws random numbers, and "
                      "lowerkit's samples differ from eager's by design (README: random ops)")
        return 0
    if args.check:
        with torch.no_grad():
            expected = case.fn(*case.args, **case.kwargs)
        result = compare(out, expected, rtol=args.rtol, atol=args.atol)
        console.print(("[green]" if result.ok else "[red]") + str(result))
        return 0 if result.ok else 1
    return 0
