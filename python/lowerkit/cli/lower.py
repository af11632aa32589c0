"""``lowerkit lower FILE.py:FACTORY``: print the IR a pipeline makes, or one stage's."""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="FILE.py:FACTORY")
    p.add_argument("--pipeline", default=None, help="registered pipeline name (default: torch-to-linalg)")
    p.add_argument("--until", default=None, help="stop after this stage")
    p.add_argument("--print-all", action="store_true", help="print the IR after every stage")
    p.add_argument("--keep-constants", action="store_true", help="do not elide large constants")


def main(args: argparse.Namespace) -> int:
    import lowerkit
    from lowerkit.ir import module_asm

    from ._factory import load_case

    case = load_case(args.model)
    imported = lowerkit.import_program(case.fn, case.args, case.kwargs, case.dynamic_shapes)
    pipeline = lowerkit.resolve_pipeline(args.pipeline)
    elide = not args.keep_constants

    class _Printer(lowerkit.Instrument):
        def after_stage(self, stage, module, record):
            if args.print_all:
                print(f"// ----- after {stage.name} ({record.seconds * 1e3:.1f} ms)")
                print(module_asm(module, elide=elide))

    lowering = pipeline.run(imported.module, until=args.until, instruments=[_Printer()])
    if not args.print_all:
        sys.stdout.write(module_asm(lowering.module, elide=elide))
    return 0
