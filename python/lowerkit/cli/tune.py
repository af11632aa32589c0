"""``lowerkit tune MODEL``: measure which form each convolution of a model runs
fastest in on this CPU, and store the choices for later compiles (`lowerkit.tools.tune`)."""

from __future__ import annotations

import argparse

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    from lowerkit.tools.tune import ROUNDS

    p.add_argument("model", metavar="MODEL",
                   help="a zoo or real-shape model name, or FILE.py:FACTORY returning "
                        "(model, args[, kwargs])")
    p.add_argument("--target", default="cpu",
                   help="CPU target whose compiles read the choices (default: cpu, this host)")
    p.add_argument("--database", default=None,
                   help="tuning database to update (default: $LOWERKIT_TUNING_DB, else "
                        "$XDG_DATA_HOME/lowerkit/tuning.json)")
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help=f"interleaved rounds per shape (default: {ROUNDS})")
    p.add_argument("--retune", action="store_true",
                   help="measure shapes already stored for this CPU again")
    p.add_argument("--no-convolutions", action="store_true",
                   help="leave out the strategy for the model's dense 2-D convolutions (the "
                        "rule or data-tiled), which compiles the whole model once per strategy")
    p.add_argument("--no-matmul-tile", action="store_true",
                   help="leave out the matmul tile, which compiles the whole model once per "
                        "candidate; the choice applies to every compile for this CPU")


def main(args: argparse.Namespace) -> int:
    from lowerkit.tools.tune import tune

    from ._factory import model_case

    console = console_()
    case = model_case(args.model)
    with console.status(f"tuning {case.name}") as status:
        report = tune(case.fn, case.args, case.kwargs, target=args.target,
                      database=args.database, rounds=args.rounds, retune=args.retune,
                      dynamic_shapes=case.dynamic_shapes, matmul_tile=not args.no_matmul_tile,
                      convolutions=not args.no_convolutions,
                      progress=lambda text: status.update(f"{case.name}: {text}"))
    from lowerkit.tuning import MATMUL_TILE, program_op

    found = len(report.measured) + len({k for k in report.known
                                        if k != MATMUL_TILE and not program_op(k)})
    console.print(report.table(title=f"{case.name}: {found} convolution shape(s) with a choice, "
                                     f"on {report.cpu}"))
    for m in report.measured:
        console.print(f"{m.shape.key}: {m.why}")
    if report.convolutions is not None:
        console.print(f"dense 2-D convolutions of this model on this CPU: "
                      f"{report.convolutions.choice} ({report.convolutions.why})")
    if report.matmul_tile is not None:
        console.print(f"matmul tile for every compile on this CPU: {report.matmul_tile.choice} "
                      f"({report.matmul_tile.why})")
    return 0
