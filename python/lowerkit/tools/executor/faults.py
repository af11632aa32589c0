"""Faults planted in a batch, to show that an executor loses nothing: a job wrapper whose items
may segfault, hang, raise, or have their worker killed, the rest running the wrapped job.

    FaultyJob(FuzzJob(), {"00007:cpu": "segfault"})
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

from .job import Job
from .outcome import Item, Outcome

FAULTS = ("segfault", "hang", "raise", "kill-worker-once")
# the status each fault's item must end with (a killed worker's item runs again and passes)
EXPECTED_STATUS = {"segfault": "crash", "hang": "timeout", "raise": "fail",
                   "kill-worker-once": None}


@dataclass
class FaultyJob(Job):
    inner: Job
    faults: dict = field(default_factory=dict)  # item key -> one of FAULTS
    marker_dir: str = "/tmp"                   # where kill-worker-once remembers its first try

    name = "faulty"

    def setup(self) -> None:
        self.inner.setup()

    def run(self, item: Item) -> Outcome:
        fault = self.faults.get(item.key)
        if fault == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(5)  # the signal arrives before this returns
        elif fault == "hang":
            while True:
                time.sleep(0.05)
        elif fault == "raise":
            raise RuntimeError(f"planted Python error in item {item.key}")
        elif fault == "kill-worker-once":
            marker = os.path.join(self.marker_dir, f"killed-{item.key.replace(':', '_')}")
            if not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
        elif fault is not None:
            raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
        return self.inner.run(item)

    def reproducer(self, item: Item, outcome: Outcome, folder: str) -> str | None:
        return self.inner.reproducer(item, outcome, folder)


@dataclass(frozen=True)
class EchoJob(Job):
    """Returns each item's data as an ``ok`` outcome after ``sleep_s``: what an executor costs
    by itself, and a quick job to plant faults in."""

    sleep_s: float = 0.0

    name = "echo"

    def run(self, item: Item) -> Outcome:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return Outcome(item.key, "ok", "passed", data=dict(item.data))
