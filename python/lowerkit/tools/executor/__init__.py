"""One way to run a batch of independent items (fuzz programs, e2e tests, zoo models,
candidate configurations) on this machine or on a Ray cluster, with nothing lost.

Each `Item` is small data; a `Job` turns one item into one `Outcome` (``ok``, ``fail``,
``crash``, ``timeout`` or ``infrastructure``). `run_items` hands the items to a backend
(`InProcessExecutor`: one after another in this process, the default; `RayExecutor`: one Ray task
per item), streams every outcome to a JSON Lines journal as it arrives, skips what a journal
already holds (``resume``) and runs one shard of the items (``shard=(k, n)``).
"""

from __future__ import annotations

from .batch import add_arguments, make_executor, run_items
from .inprocess import InProcessExecutor
from .job import Job, run_one
from .journal import Journal, JournalError, parse_shard, select_shard
from .outcome import DONE, STATUSES, Item, Outcome

__all__ = ["DONE", "STATUSES", "InProcessExecutor", "Item", "Job", "Journal", "JournalError",
           "Outcome", "RayExecutor", "add_arguments", "make_executor", "parse_shard", "run_items",
           "run_one", "select_shard"]


def __getattr__(name: str):
    if name == "RayExecutor":  # imports nothing of Ray until used
        from .ray_backend import RayExecutor

        return RayExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
