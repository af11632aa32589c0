"""``lowerkit explain FILE.py:FACTORY``: what ``torch.compile(model, backend="lowerkit")`` does
with the model: its graph breaks and why, and where each graph runs (lowerkit or eager, why)."""

from __future__ import annotations

import argparse

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="FILE.py:FACTORY", help="factory returning (model, args[, kwargs])")
    p.add_argument("--target", default="cpu", help="compilation target (default: cpu)")
    p.add_argument("--pipeline", default=None, help="registered pipeline name (default: torch-to-linalg)")
    p.add_argument("--check", action="store_true",
                   help="also compare the result with eager PyTorch and fail on a mismatch")


def main(args: argparse.Namespace) -> int:
    import torch

    from lowerkit.backend import explain
    from lowerkit.runtime.numerics import compare

    from ._factory import load_case

    console = console_()
    case = load_case(args.model)
    with console.status(f"compiling {case.name} with torch.compile(backend='lowerkit')"), \
            torch.no_grad():
        found = explain(case.fn, *case.args, options={"target": args.target,
                                                      "pipeline": args.pipeline}, **case.kwargs)
    console.print(found.table(title=f"{case.name}: {len(found.graphs)} graph(s), "
                                    f"{len(found.breaks)} graph break(s)"))
    for i, why in enumerate(found.breaks, 1):
        console.print(f"break {i}: {why}")
    if args.check:
        with torch.no_grad():
            result = compare(found.result, case.fn(*case.args, **case.kwargs))
        console.print(result.message)
        return 0 if result.ok else 1
    return 0
