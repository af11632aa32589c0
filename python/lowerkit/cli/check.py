"""``lowerkit check FILE.py:FACTORY``: every op the pipeline cannot lower, with its source line,
found in one run instead of one failure at a time."""

from __future__ import annotations

import argparse

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="FILE.py:FACTORY", help="factory returning (model, args[, kwargs])")
    p.add_argument("--pipeline", default=None, help="registered pipeline name (default: torch-to-linalg)")
    p.add_argument("--target", default="cpu",
                   help="also compile with IREE for this target when the pipeline passes (default: cpu)")
    p.add_argument("--no-iree", action="store_true", help="check the pipeline only, not IREE")


def main(args: argparse.Namespace) -> int:

    import lowerkit
    from lowerkit.api import default_weights
    from lowerkit.tools.check import check_program

    from ._factory import load_case

    console = console_()
    case = load_case(args.model)
    with console.status(f"checking {case.name}"):
        target = None if args.no_iree else lowerkit.Target.parse(args.target)
        # the weights as compile(target=...) takes them: compiled in on Vulkan
        weights = "external" if target is None else default_weights(target)
        imported = lowerkit.import_program(case.fn, case.args, case.kwargs, case.dynamic_shapes,
                                           weights)
        report = check_program(imported.module, lowerkit.resolve_pipeline(args.pipeline), target=target)
    if report.unsupported:
        console.print(report.table(title=f"{case.name}: {len(report.unsupported)} op(s) cannot be lowered"))
    for error in report.errors:
        console.print(f"[red]stopped at stage {report.stopped_at}:[/red]\n{error}")
    if report.ok:
        console.print(f"[green]{case.name}: every op lowers[/green] ({', '.join(report.passed)})")
        return 0
    return 1
