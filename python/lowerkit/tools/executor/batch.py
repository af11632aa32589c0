"""`run_items`: a batch through a backend, journaled, resumable, sharded; and the command-line
options every batch command shares (``--executor``, ``--resume``, ``--shard``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Callable

from .inprocess import InProcessExecutor
from .job import Job
from .journal import Journal, parse_shard, select_shard
from .outcome import Item, Outcome

EXECUTORS = ("inprocess", "ray")


def add_arguments(p: argparse.ArgumentParser, default_timeout: float | None = None) -> None:
    p.add_argument("--executor", choices=EXECUTORS, default="inprocess",
                   help="inprocess: one item after another in this process (default); ray: one "
                   "Ray task per item, on a local Ray or the cluster at $RAY_ADDRESS "
                   "(pip install 'lowerkit[ray]')")
    p.add_argument("--isolate", action="store_true",
                   help="inprocess: each item in a forked child (a segfault or a hang is that "
                   "item's crash or timeout, not the run's end)")
    p.add_argument("--resume", action="store_true",
                   help="with --json: skip the items the journal already has an outcome for")
    p.add_argument("--shard", default=None, metavar="K/N", type=shard_argument,
                   help="run only shard K of N (every N-th item from the K-th): one CI job each")
    p.add_argument("--item-timeout", type=float, default=default_timeout, metavar="S",
                   help="seconds an item may run"
                   + (f" (default {default_timeout:g})" if default_timeout else " (default: none)"))


def shard_argument(text: str) -> tuple[int, int]:
    """``--shard K/N`` for argparse: (K, N), or the usage error saying what is wrong."""
    try:
        return parse_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def make_executor(name: str = "inprocess", isolate: bool = False, **ray_options):
    if name == "inprocess":
        return InProcessExecutor(isolate=isolate)
    if name == "ray":
        from .ray_backend import RayExecutor

        return RayExecutor(**ray_options)
    raise ValueError(f"executor {name!r} is not one of {EXECUTORS}")


def run_items(job: Job, items: list[Item], executor=None, journal: str | os.PathLike | None = None,
              header: dict | None = None, resume: bool = False,
              shard: tuple[int, int] | None = None,
              on_outcome: Callable[[Outcome], None] | None = None,
              reproducers: str | os.PathLike | None = None) -> list[Outcome]:
    """Every item of ``items`` (of ``shard``) through ``executor``; their outcomes in item order.

    ``journal``: a JSON Lines file getting ``header`` (its ``run`` entry says what the batch is)
    and each outcome as it arrives; with ``resume`` the items it already has done are not run
    again (their outcomes are returned as stored). ``reproducers``: where the job writes a file
    reproducing each outcome that is not ok (default: beside the journal)."""
    executor = executor or InProcessExecutor()
    items = select_shard(items, shard)
    keys = [i.key for i in items]
    if len(set(keys)) != len(keys):
        raise ValueError("the items' keys are not unique")
    header = dict(header or {})
    header.setdefault("run", {"job": job.name})
    if shard is not None:
        header["run"] = {**header["run"], "shard": f"{shard[0]}/{shard[1]}"}
    book = Journal(journal, header, resume=resume) if journal else None
    done = book.done() if (book and resume) else {}
    results: dict[str, Outcome] = {k: o for k, o in done.items() if k in set(keys)}
    if reproducers is None and journal:
        reproducers = Path(journal).with_suffix("").as_posix() + "-reproducers"

    def arrived(outcome: Outcome) -> None:
        if outcome.key in results:
            raise RuntimeError(f"item {outcome.key!r} got a second outcome")
        if outcome.status != "ok" and reproducers and outcome.reproducer is None:
            item = by_key[outcome.key]
            Path(reproducers).mkdir(parents=True, exist_ok=True)
            try:
                outcome.reproducer = job.reproducer(item, outcome, str(reproducers))
            except Exception as e:  # noqa: BLE001 -- the outcome stands without its file
                outcome.message += f" (no reproducer written: {type(e).__name__}: {e})"
        results[outcome.key] = outcome
        if book is not None:
            book.write(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    by_key = {i.key: i for i in items}
    todo = [i for i in items if i.key not in results]
    try:
        executor.execute(job, todo, arrived)
    finally:
        if book is not None:
            if all(k in results for k in keys):
                book.finish(items)
            else:
                book.close()
    missing = [k for k in keys if k not in results]
    if missing:
        raise RuntimeError(f"{len(missing)} items got no outcome (first: {missing[:3]}); "
                           "the executor lost them")
    return [results[k] for k in keys]
