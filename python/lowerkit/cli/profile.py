"""``lowerkit profile MODEL``: where a compiled model's call goes, dispatch by dispatch, slowest
first, timed inside the call by IREE's runtime profiling (`lowerkit.tools.profile`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="a zoo or real-shape model name, or FILE.py:FACTORY returning "
                        "(model, args[, kwargs])")
    p.add_argument("--target", default="cpu", help="target to compile for (default: cpu)")
    p.add_argument("--top", type=int, default=20, help="dispatches to list (default: 20; 0: all)")
    p.add_argument("--calls", type=int, default=5,
                   help="calls profiled at least (default: 5); each dispatch's time is its sum "
                        "over the calls, divided by them")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="profile more calls if they take less than this long (default: 1)")
    p.add_argument("--json", type=Path, help="write the profile here")


def main(args: argparse.Namespace) -> int:
    from lowerkit.tools.profile import profile

    console = console_()
    from ._factory import model_case

    case = model_case(args.model)
    with console.status(f"profiling {case.name}") as status:
        prof = profile(case.fn, case.args, case.kwargs, target=args.target, calls=args.calls,
                       seconds=args.seconds,
                       dynamic_shapes=case.dynamic_shapes)
    console.print(prof.table(top=args.top or None,
                             title=f"{case.name} on {prof.target}: each dispatch inside a call"))
    kinds = ", ".join(f"{k} {ms:.3g} ms" for k, ms in list(prof.by_kind().items())[:6])
    console.print(f"by root op: {kinds}")
    for note in prof.notes:
        console.print(f"[yellow]{note}")
    if args.json:
        args.json.write_text(json.dumps({"model": case.name, **prof.to_json()}, indent=1))
    return 0
