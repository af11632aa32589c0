"""``lowerkit zoo``: run the model zoo through lowerkit and print the coverage table; with
``--ecosystem``, the models built from ``transformers``/``torchvision``/``timm`` in a second
table beside it (`lowerkit.zoo.ecosystem`)."""

from __future__ import annotations

import argparse
import json

from ._console import console as console_


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*",
                   help="zoo models to check, of either zoo (default: all non-slow ones)")
    p.add_argument("--target", default="cpu", help="compilation target (default: cpu)")
    p.add_argument("--slow", action="store_true",
                   help="include the models tagged slow (with --ecosystem: all of its models)")
    p.add_argument("--ecosystem", action="store_true",
                   help="also the ecosystem zoo (transformers, torchvision, timm; its fast "
                        "models unless --slow)")
    p.add_argument("--list", action="store_true", help="list the zoo and exit")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON")
    p.add_argument("--journal", default=None, metavar="FILE",
                   help="each model's outcome as it comes (JSON Lines); with --resume, the "
                   "models it has are not run again")
    from lowerkit.tools.executor import add_arguments as executor_arguments

    executor_arguments(p)


def _entries(args: argparse.Namespace) -> list:
    from lowerkit.zoo import models

    if args.names:
        from lowerkit.zoo.ecosystem import find

        return [find(n) for n in args.names]
    entries = models(include_slow=args.slow)
    if args.ecosystem:
        from lowerkit.zoo.ecosystem import ecosystem_models

        entries += ecosystem_models(fast_only=not args.slow)
    return entries


def main(args: argparse.Namespace) -> int:
    import warnings

    from rich.table import Table

    console = console_()
    entries = _entries(args)
    if args.list:
        table = Table(title="lowerkit model zoo")
        for col in ("model", "group", "tags", "factory", "note"):
            table.add_column(col, overflow="fold")
        for m in entries:
            table.add_row(m.name, m.group, ", ".join(sorted(m.tags)),
                          f"lowerkit.zoo.{m.factory_path}", m.known or m.note)
        console.print(table)
        return 0

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
        outcomes = executor.run_items(ZooJob(args.target, by_name), items, runner, journal=args.journal,
                                      header=header, resume=args.resume, shard=args.shard,
                                      on_outcome=seen)
    results = [(by_name[r.name], r) for r in (result_of(o) for o in outcomes)]
    for title, ecosystem in (("zoo", False), ("ecosystem zoo", True)):
        group = [(m, r) for m, r in results if (m.group == "ecosystem") == ecosystem]
        if not group:
            continue
        table = Table(title=f"{title} coverage → {args.target}")
        for col, just in (("model", "left"), ("group", "left"), ("stage reached", "left"),
                          ("rung", "left"), ("max abs error", "right"),
                          ("error / scale", "right"), ("compile (s)", "right"),
                          ("note", "left")):
            table.add_column(col, justify=just, overflow="fold")
        for m, r in group:
            stage = f"[green]{r.stage} ✓" if r.ok else f"[red]{r.stage} ✗"
            expected = " (known)" if "known-failure" in m.tags and not r.ok else ""
            err = "-" if r.max_abs_error is None else f"{r.max_abs_error:.2e}"
            rel = "-" if r.max_rel_error is None else f"{r.max_rel_error:.2e}"
            group_name = m.group if m.group != "ecosystem" else next(
                (t for t in ("transformers", "torchvision", "timm") if t in m.tags), m.group)
            note = r.message[:160] if not r.ok else getattr(m, "note", "")
            table.add_row(m.name, group_name, stage + expected, r.rung or "-", err, rel,
                          f"{r.compile_seconds:.1f}", note)
        console.print(table)
    passed = sum(r.ok for _, r in results)
    console.print(f"{passed}/{len(results)} models match eager on {args.target}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.to_json() for _, r in results], f, indent=1)
    unexpected = [r for m, r in results if not r.ok and "known-failure" not in m.tags]
    return 1 if unexpected else 0
