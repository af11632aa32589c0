"""``lowerkit tune MODEL``: measure which form each convolution of a model runs fastest in
on this CPU, search each dispatch's tile sizes, and store the choices for later compiles
(`lowerkit.tools.tune`, `lowerkit.tools.dispatch_search`)."""

from __future__ import annotations

import argparse
import re

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
    p.add_argument("--budget", type=duration, default=600.0, metavar="TIME",
                   help="time for the whole tune, e.g. 90s, 10m, 1h (default: 10m); the "
                        "dispatch search gets what the other stages leave")
    p.add_argument("--no-flag-sets", action="store_true",
                   help="leave out timing the whole program from each compile ladder rung "
                        "(data tiling, microkernels, im2col on or off; IREE's defaults)")
    p.add_argument("--no-dispatches", action="store_true",
                   help="leave out the per-dispatch search of tile sizes")
    p.add_argument("--executor", choices=("inprocess", "ray"), default="inprocess",
                   help="where dispatches are measured: this process (default), or one Ray "
                        "task per dispatch (a cluster's nodes must have this CPU: a result "
                        "measured on another is not kept)")
    p.add_argument("--no-matmul-tile", action="store_true",
                   help="leave out the matmul tile, which compiles the whole model once per "
                        "candidate; the choice applies to every compile for this CPU")


def duration(text: str) -> float:
    """``--budget``: seconds from ``90``, ``90s``, ``10m`` or ``1h``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90s, 10m or 1h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


class _Progress:
    """A live view of the search: the stage running, and each dispatch's best so far."""

    def __init__(self, name: str):
        self.name = name
        self.stage = "starting"
        self.climbs: dict = {}

    def __rich__(self):
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.table import Table

        table = Table(title="dispatch search: best so far", title_justify="left")
        for col, just in (("dispatch", "left"), ("IREE ms", "right"), ("best ms", "right"),
                          ("speed-up", "right"), ("tried", "right"), ("workgroup tile", "left")):
            table.add_column(col, justify=just)
        from lowerkit.tools.tune import _tile_change

        for function, c in self.climbs.items():
            table.add_row(function, f"{c.default_ms:.4g}", f"{c.best_ms:.4g}",
                          f"{c.speedup:.2f}x" if c.improved else "-", str(c.tried),
                          _tile_change(c.default, c.best))
        return Group(Spinner("dots", f"{self.name}: {self.stage}"), table)


def main(args: argparse.Namespace) -> int:
    from rich.live import Live

    from lowerkit.tools.executor.batch import make_executor
    from lowerkit.tools.tune import tune

    from ._factory import model_case

    console = console_()
    case = model_case(args.model)
    view = _Progress(case.name)

    def stage(text: str) -> None:
        view.stage = text

    def dispatch(function: str, climb) -> None:
        view.stage = f"searching {function}"
        view.climbs[function] = climb

    executor = make_executor(args.executor) if args.executor != "inprocess" else None
    with Live(view, console=console, refresh_per_second=4, transient=True):
        report = tune(case.fn, case.args, case.kwargs, target=args.target,
                      database=args.database, rounds=args.rounds, retune=args.retune,
                      dynamic_shapes=case.dynamic_shapes, matmul_tile=not args.no_matmul_tile,
                      convolutions=not args.no_convolutions, flag_sets=not args.no_flag_sets,
                      dispatches=not args.no_dispatches, budget_s=args.budget,
                      executor=executor, progress=stage, on_dispatch=dispatch)
    from lowerkit.tuning import MATMUL_TILE, flag_set_op, program_op

    found = len(report.measured) + len({k for k in report.known if k != MATMUL_TILE
                                        and not program_op(k) and not flag_set_op(k)})
    if report.measured or found:
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
    if report.flag_set is not None:
        console.print(f"flag set of this program on this CPU: '{report.flag_set.choice}' "
                      f"({report.flag_set.why})")
    if report.dispatches is not None:
        d = report.dispatches
        console.print(d.table(title=f"{case.name}: {len(d.climbs)} dispatch(es) searched in "
                                    f"{d.seconds:.0f} s on {report.cpu}"))
        for note in d.notes:
            console.print(f"[dim]{note}")
    for note in report.skipped:
        console.print(f"[yellow]{note} (--budget)")
    return 0
