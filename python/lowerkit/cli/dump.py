"""``lowerkit dump FILE.py:FACTORY --out DIR``: every stage's IR, IREE's phases and
executables, the vmfb, and a browsable ``index.html`` in DIR."""

from __future__ import annotations

import argparse

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="FILE.py:FACTORY", help="factory returning (model, args[, kwargs])")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="folder to write into (kept, never emptied)")
    p.add_argument("--target", default="cpu", help="compilation target (default: cpu)")
    p.add_argument("--pipeline", default=None, help="registered pipeline name (default: torch-to-linalg)")
    p.add_argument("--print-passes-of", default=None, metavar="STAGE",
                   help="also write the IR after every pass of this stage ('iree-compile' for IREE's)")
    p.add_argument("--keep-constants", action="store_true", help="do not elide large constants")


def main(args: argparse.Namespace) -> int:
    from rich.table import Table

    import lowerkit
    from lowerkit.errors import LowerkitError

    from ._factory import load_case

    console = console_()
    case = load_case(args.model)
    dump = lowerkit.DumpInstrument(args.out, elide=not args.keep_constants,
                                   print_passes_of=args.print_passes_of)
    failed = None
    with console.status(f"dumping {case.name} for {args.target} into {args.out}"):
        try:
            lowerkit.compile(case.fn, case.args, case.kwargs, target=args.target,
                             pipeline=args.pipeline, dynamic_shapes=case.dynamic_shapes,
                             dump_dir=dump)
        except LowerkitError as e:
            failed = e
    table = Table(title=f"{case.name} → {args.out}")
    for col, justify in (("file", "left"), ("time (ms)", "right"), ("ops", "right"), ("size", "right")):
        table.add_column(col, justify=justify, no_wrap=col == "file")
    for e in dump.entries:
        table.add_row(e.path.name + ("/" if e.path.is_dir() else ""),
                      "-" if e.seconds is None else f"{e.seconds * 1e3:.1f}",
                      str(sum(e.ops.values())) if e.ops else "-", f"{e.size / 1024:.1f} KiB")
    console.print(table)
    console.print(f"report: {dump.directory / 'index.html'}")
    if failed is not None:
        raise failed
    return 0
