"""What a batch runs on each item: a `Job`, and `run_one`, the one place an item is run."""

from __future__ import annotations

import os
import socket
import time
import traceback

from .outcome import Item, Outcome, tail


class Job:
    """A batch job. Subclasses are small picklable objects (a Ray worker gets a copy): their
    fields say what to run, `setup` does the expensive imports once per process, `run` turns an
    item into an outcome. Nothing here may hold an open device or a thread pool before `setup`.
    """

    name = "job"

    def setup(self) -> None:
        """Once per process before its first item (imports, loading a suite)."""

    def run(self, item: Item) -> Outcome:
        raise NotImplementedError

    def reproducer(self, item: Item, outcome: Outcome, folder: str) -> str | None:
        """In the driver, for an outcome that is not ok: write a file that reproduces it under
        ``folder`` and return its path (None: nothing to write)."""
        return None


_STATE: dict = {}  # per process: a job's identity -> what its `setup` made


def _identity(job: Job) -> tuple:
    return type(job).__module__, type(job).__qualname__, repr(job)


def process_state(job: Job) -> dict:
    """This process's state of ``job`` (what its `setup` made, for its `run`): kept here, not
    on the job or in the job's module, because a Ray worker gets a fresh copy of both with
    every item when the job's module is not importable there (a script's)."""
    return _STATE.setdefault(_identity(job), {})


def _setup_once(job: Job) -> None:
    state = process_state(job)
    if not state.get("__ready__"):
        job.setup()
        state["__ready__"] = True


class ItemTimeout(BaseException):
    """Raised into an item that ran past its time (a BaseException: jobs catch Exception)."""


def run_one(job: Job, item: Item) -> Outcome:
    """``job.run(item)`` with its time and place; an exception out of the job itself is a
    ``fail`` with verdict ``error`` at stage ``job`` (a failure found, with its traceback)."""
    start = time.perf_counter()
    try:
        _setup_once(job)
        outcome = job.run(item)
    except Exception as e:  # noqa: BLE001 -- the job's own error: the item's outcome says it
        outcome = Outcome(item.key, "fail", "error", "job", f"{type(e).__name__}: {e}",
                          tail(traceback.format_exc()))
    outcome.run.update(seconds=round(time.perf_counter() - start, 3),
                       worker=f"{socket.gethostname()}:{os.getpid()}",
                       attempts=outcome.run.get("attempts", 1))
    return outcome
