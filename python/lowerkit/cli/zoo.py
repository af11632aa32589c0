"""``lowerkit zoo``: run the model zoo through lowerkit and print the coverage table."""

from __future__ import annotations

import argparse
import json

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", help="zoo models to check (default: all non-slow ones)")
    p.add_argument("--target", default="cpu", help="compilation target (default: cpu)")
    p.add_argument("--slow", action="store_true", help="include the models tagged slow")
    p.add_argument("--list", action="store_true", help="list the zoo and exit")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON")
    p.add_argument("--journal", default=None, metavar="FILE",
                   help="each model's outcome as it comes (JSON Lines); with --resume, the "
                   "models it has are not run again")
    from lowerkit.tools.executor import add_arguments as executor_arguments

    executor_arguments(p)


def main(args: argparse.Namespace) -> int:
    import warnings

    from rich.table import Table

    from lowerkit.zoo import models
    from lowerkit.zoo.coverage import check_model

    console = console_()
    entries = models(include_slow=args.slow, names=args.names)
    if args.list:
        table = Table(title="lowerkit model zoo")
        for col in ("model", "group", "tags", "factory"):
            table.add_column(col)
        for m in entries:
            table.add_row(m.name, m.group, ", ".join(sorted(m.tags)), f"lowerkit.zoo.{m.factory_path}")
        console.print(table)
        return 0

    table = Table(title=f"zoo coverage → {args.target}")
    for col, just in (("model", "left"), ("group", "left"), ("stage reached", "left"),
                      ("max abs error", "right"), ("error / scale", "right"),
                      ("compile (s)", "right"), ("note", "left")):
        table.add_column(col, justify=just, overflow="fold")
    from lowerkit.tools import executor
    from lowerkit.zoo.coverage import ZooJob, result_of

    if args.resume and not args.journal:
        from lowerkit.errors import LowerkitError

        raise LowerkitError("--resume needs the --journal to resume from")
    items = [executor.Item(m.name, timeout_s=args.item_timeout) for m in entries]
    by_name = {m.name: m for m in entries}
    runner = executor.make_executor(args.executor, isolate=args.isolate)
    header = {"journal": "lowerkit zoo",
              "run": {"job": "zoo", "target": args.target, "models": [m.name for m in entries]}}

    def seen(outcome):
        r = result_of(outcome)
        console.print(f"{'✓' if r.ok else '✗'} {r.name}", highlight=False)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcomes = executor.run_items(ZooJob(args.target), items, runner, journal=args.journal,
                                      header=header, resume=args.resume, shard=args.shard,
                                      on_outcome=seen)
    results = [result_of(o) for o in outcomes]
    entries = [by_name[r.name] for r in results]
    for m, r in zip(entries, results):
        stage = f"[green]{r.stage} ✓" if r.ok else f"[red]{r.stage} ✗"
        expected = " (known)" if "known-failure" in m.tags and not r.ok else ""
        err = "-" if r.max_abs_error is None else f"{r.max_abs_error:.2e}"
        rel = "-" if r.max_rel_error is None else f"{r.max_rel_error:.2e}"
        table.add_row(m.name, m.group, stage + expected, err, rel, f"{r.compile_seconds:.1f}",
                      r.message[:160])
    console.print(table)
    passed = sum(r.ok for r in results)
    console.print(f"{passed}/{len(results)} models match eager on {args.target}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.to_json() for r in results], f, indent=1)
    unexpected = [r for r, m in zip(results, entries) if not r.ok and "known-failure" not in m.tags]
    return 1 if unexpected else 0
