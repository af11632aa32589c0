"""``lowerkit fuzz``: differential fuzzing of lowerkit against eager PyTorch (`lowerkit.tools.fuzz`)."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=int, default=100, help="programs to generate (default: 100)")
    p.add_argument("--target", default=None,
                   help="cpu, vulkan:llvmpipe, several joined by ',' or 'all' (every usable one); "
                   "default cpu, or with --replay the target each program was journaled for")
    p.add_argument("--seed", type=int, default=0, help="hypothesis seed (default: 0)")
    p.add_argument("--chains", type=int, default=3, help="independent op chains a program (default: 3)")
    p.add_argument("--shrink", action="store_true",
                   help="stop at the first failure and shrink it to a minimal program")
    p.add_argument("--show", type=int, default=5, help="failing programs to print (default: 5)")
    p.add_argument("--replay", default=None, metavar="JOURNAL",
                   help="instead of generating, run again the programs of a --json journal that "
                   "did not pass (all of them with --replay-all), on the current code")
    p.add_argument("--replay-all", action="store_true", help="with --replay: every program")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="also write every outcome as JSON, one line each as it comes (JSON Lines); "
                   "failing programs get a pytest reproducer each in FILE's -reproducers folder")
    from lowerkit.tools.executor import add_arguments as executor_arguments

    executor_arguments(p)


def main(args: argparse.Namespace) -> int:
    """Exit status 1 when any program failed (wrong, crash or error), else 0."""
    import time
    import warnings
    from collections import Counter

    from rich.console import Console
    from rich.table import Table

    from lowerkit.errors import LowerkitError
    from lowerkit.tools.fuzz import (VERDICTS, fuzz_targets, journal_header, journal_row, replay,
                                     sweep)

    warnings.simplefilter("ignore")
    console = Console(width=None if Console().is_terminal else 160)
    if args.replay and args.target is None:
        with open(args.replay) as f:  # each program on the target it was journaled for
            rows = [json.loads(line) for line in f]
        targets = list(dict.fromkeys(journal_row(r)[1] for r in rows if journal_row(r)[2]))
        replay_targets = None
    else:
        targets = fuzz_targets() if args.target == "all" else (args.target or "cpu").split(",")
        replay_targets = targets
    counts = {t: Counter() for t in targets}
    start = time.perf_counter()
    batch = not (args.replay or args.shrink)
    if not batch and (args.executor != "inprocess" or args.resume or args.shard or args.isolate):
        raise LowerkitError("--executor, --isolate, --resume and --shard run a generated sweep; "
                            "not with --replay or --shrink")
    if args.resume and not args.json:
        raise LowerkitError("--resume needs the --json journal to resume from")
    # Outcomes go to the file as they come, so that a long run can be read (or stopped) midway;
    # the first row says what replaying the run needs.
    journal = open(args.json, "w") if (args.json and not batch) else None
    if args.replay:
        run = dict(replay=args.replay, everything=args.replay_all, targets=replay_targets)
    else:
        run = dict(seed=args.seed, examples=args.examples, chains=args.chains,
                   targets=targets, shrink=args.shrink)
    command = (f"lowerkit fuzz --seed {args.seed} --examples {args.examples} "
               f"--chains {args.chains} --target {','.join(targets)}")
    if journal is not None:
        journal.write(json.dumps(journal_header(**run, command=command)) + "\n")
        journal.flush()

    def seen(o):
        if journal is not None:
            journal.write(json.dumps({"n": sum(counts[o.target].values()) + 1, "kind": o.kind,
                                      "target": o.target, "message": o.message,
                                      "max_rel_error": o.max_rel_error,
                                      "source": o.program.source if o.program else None}) + "\n")
            journal.flush()
        counts[o.target][o.kind] += 1
        n = sum(counts[o.target].values())
        mark = {"passed": "[green]✓", "unsupported": "[dim]·"}.get(o.kind, "[red]✗")
        console.print(f"{mark} {n:5d} {o.target:16s} {o.kind:12s} {o.message.splitlines()[0][:100] if o.kind != 'passed' else ''}",
                      highlight=False)

    if args.replay:
        outcomes = replay(args.replay, replay_targets, everything=args.replay_all,
                          on_outcome=seen)
    elif args.shrink:
        outcomes = sweep(args.examples, targets, seed=args.seed, on_outcome=seen,
                         max_chains=args.chains, shrink=args.shrink)
    else:
        outcomes = _batch(args, targets, run, command, seen, console)
        # with --resume, the journal's outcomes count too
        counts = {t: Counter(o.kind for o in outcomes if o.target == t) for t in targets}
    seconds = time.perf_counter() - start

    what = f"replay of {args.replay}" if args.replay else f"seed {args.seed}"
    table = Table(title=f"lowerkit fuzz · {what} · {seconds:.0f} s · verdicts "
                  "(wrong, crash and error are failures)")
    table.add_column("target")
    table.add_column("programs", justify="right")
    for kind in VERDICTS:
        table.add_column(kind, justify="right")
    for t in targets:
        c = counts[t]
        table.add_row(t, str(sum(c.values())), *(str(c[k]) for k in VERDICTS))
    console.print(table)

    groups = Counter((o.kind, o.message.splitlines()[0][:140]) for o in outcomes if o.kind != "passed")
    if groups:
        g = Table(title="what went wrong (first line)")
        g.add_column("verdict")
        g.add_column("n", justify="right")
        g.add_column("message", overflow="fold")
        for (kind, msg), n in groups.most_common():
            g.add_row(kind, str(n), msg)
        console.print(g)

    failures = [o for o in outcomes if o.failed]
    shown = set()
    for o in (failures[-1:] if args.shrink else failures):
        key = o.message.splitlines()[0]
        if key in shown or len(shown) >= args.show:
            continue
        shown.add(key)
        title = "minimal failing program" if args.shrink else "failing program"
        console.print(f"[bold red]{title}[/] ({o.kind} on {o.target}): {o.message}", highlight=False)
        console.print(o.program.source, markup=False, highlight=False)
    if journal is not None:
        journal.close()
    return 1 if failures else 0


def _batch(args, targets, run, command, seen, console):
    """The sweep's programs as executor items (`lowerkit.tools.executor`): journaled to
    ``--json``, resumable, sharded, in this process or on Ray."""
    from lowerkit.tools import executor
    from lowerkit.tools.fuzz import FuzzJob, fuzz_items, generate, journal_header, outcome_of

    programs = generate(args.examples, args.seed, args.chains)
    items = fuzz_items(programs, targets, args.item_timeout)
    shard = args.shard
    if shard:
        command += f" --shard {shard[0]}/{shard[1]}"
    runner = executor.make_executor(args.executor, isolate=args.isolate)
    if args.executor == "ray":
        console.print(f"executor: {runner.describe()}", highlight=False)
    header = journal_header(**run, command=command)
    header["run"] = {"job": "fuzz", **run}
    outcomes = executor.run_items(FuzzJob(), items, runner, journal=args.json, header=header,
                                  resume=args.resume, shard=shard,
                                  on_outcome=lambda o: seen(outcome_of(o)))
    return [outcome_of(o) for o in outcomes]
