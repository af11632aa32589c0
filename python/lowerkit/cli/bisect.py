"""``lowerkit bisect MODEL``: the stage, op (with its source line) or iree-compile flag after which
a compiled answer first differs (`lowerkit.tools.bisect`). Exit status: 1 when it found a
divergence, 0 when none, 2 on a usage error."""

from __future__ import annotations

import argparse

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="a zoo model name, or FILE.py:FACTORY returning (model, args[, kwargs]); "
                        "a pipeline the file registers on import is found by name")
    p.add_argument("--pipeline", help="the pipeline to bisect (default: torch-to-linalg)")
    p.add_argument("--target", default="cpu", help="target to compile for (default: cpu)")
    p.add_argument("--without-stage", metavar="NAME",
                   help="compare with the same pipeline without this stage, not with eager")
    p.add_argument("--flag", action="append", default=[], metavar="FLAG",
                   help="an iree-compile flag under suspicion (repeatable): compare with the "
                        "compile without them and name the one that changes the answer; "
                        "give it as --flag=--iree-...")
    p.add_argument("--iree-flag", action="append", default=[], metavar="FLAG",
                   help="an iree-compile flag every compile gets (repeatable; --iree-flag=--iree-...)")
    p.add_argument("--no-op", action="store_true",
                   help="name the stage or flag only, not the first op (fewer compiles)")


def main(args: argparse.Namespace) -> int:
    import sys

    from lowerkit.errors import LowerkitError

    from ._factory import model_case

    console = console_()
    try:  # what the user named: a missing file, factory, pipeline or stage is a usage error
        case = model_case(args.model)  # first: its file may register the pipeline
        from lowerkit.api import resolve_pipeline

        pipe = resolve_pipeline(args.pipeline)
        if args.without_stage and args.without_stage not in pipe.stage_names:
            raise LowerkitError(f"pipeline {pipe.name!r} has no stage {args.without_stage!r}; "
                                f"stages: {', '.join(pipe.stage_names)}")
        if args.flag and args.without_stage:
            raise LowerkitError("give --flag or --without-stage, not both")
    except (LowerkitError, KeyError) as e:
        print(f"lowerkit bisect: error: {e}", file=sys.stderr)
        return 2
    from lowerkit.tools.bisect import bisect

    with console.status(f"bisecting {case.name}"):
        report = bisect(case.fn, case.args, case.kwargs, target=args.target, pipeline=pipe,
                        without_stage=args.without_stage, flags=args.flag,
                        iree_flags=args.iree_flag, find_op=not args.no_op)
    console.print(report.table(title=f"lowerkit bisect {case.name} ({pipe.name}, {args.target})"))
    for note in report.notes:
        console.print(f"[yellow]{note}")
    if report.diverged:
        where = report.flag or report.stage
        op = f", first op {report.op} at {report.location or 'an unknown line'}" if report.op else ""
        console.print(f"[red]diverges: {where}{op}")
        return 1
    console.print("[green]no divergence: the compiled answer matches the reference")
    return 0
