"""The default backend: items one after another in this process, no new dependency.

Directly (the default), an item runs in this interpreter as ``lowerkit fuzz`` always ran its
programs: lowerkit's own isolation (native stages in a forked child, iree-compile a
subprocess) keeps most crashes out, and a timeout interrupts Python code (not a hung native
call). With ``isolate=True`` each item runs in a forked child of this process instead: a
segfault is that item's ``crash``, a hang of any kind its ``timeout``, at the price of each
child's first-compile set-up (a process's first compile costs seconds). This process must not
have run an item itself before it forks: a child inherits no thread pool (IREE's, MLIR's,
OpenMP's), and one that needs them hangs; torch's eager kernels, which the parent may have run
(``lowerkit fuzz`` generates by running ops), run on one thread in the child.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import tempfile
import threading
import time
from typing import Callable

from .job import ItemTimeout, Job, run_one
from .outcome import Item, Outcome, tail


class InProcessExecutor:
    name = "inprocess"

    def __init__(self, isolate: bool = False):
        self.isolate = isolate

    def describe(self) -> dict:
        return {"executor": self.name, "isolate": self.isolate, "workers": 1}

    def execute(self, job: Job, items: list[Item], on_outcome: Callable[[Outcome], None]) -> None:
        for item in items:
            outcome = _forked(job, item) if self.isolate else _direct(job, item)
            on_outcome(outcome)


def _direct(job: Job, item: Item) -> Outcome:
    if not item.timeout_s or threading.current_thread() is not threading.main_thread():
        return run_one(job, item)

    def expire(signum, frame):
        raise ItemTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, item.timeout_s)
    start = time.perf_counter()
    try:
        return run_one(job, item)
    except ItemTimeout:
        return Outcome(item.key, "timeout", "timeout", "run",
                       f"no result within {item.timeout_s:g} s (interrupted)",
                       run={"seconds": round(time.perf_counter() - start, 3)})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _no_inherited_openmp() -> None:
    """In a forked child: torch's eager kernels on one thread. A parent that ran an OpenMP
    region (``lowerkit fuzz`` runs each candidate op eagerly while it generates) leaves the
    child a libgomp thread pool whose threads did not survive the fork, and the child's first
    parallel region waited on them forever (a oneDNN ``conv1d``, seed 4242's third program)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _forked(job: Job, item: Item) -> Outcome:
    """``run_one`` in a forked child (its own process group, its output in a log file)."""
    log = tempfile.NamedTemporaryFile(prefix="lowerkit-item-", suffix=".log", delete=False)
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.setpgid(0, 0)
            os.close(read_fd)
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            import faulthandler

            faulthandler.enable(file=log)  # a crash's Python stack goes to the item's log
            _no_inherited_openmp()
            payload = json.dumps(run_one(job, item).to_row(), default=str).encode()
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks, timed_out = [], False
    deadline = start + item.timeout_s if item.timeout_s else None
    with os.fdopen(read_fd, "rb") as pipe:
        while True:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                chunk = os.read(pipe.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    if timed_out:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
    _, status = os.waitpid(pid, 0)
    seconds = round(time.perf_counter() - start, 3)
    log.close()
    with open(log.name, errors="replace") as f:
        log_tail = tail(f.read())
    os.unlink(log.name)
    run = {"seconds": seconds, "worker": f"forked child {pid}"}
    if timed_out:
        return Outcome(item.key, "timeout", "timeout", "run",
                       f"no result within {item.timeout_s:g} s (child killed)", log_tail, run=run)
    data = b"".join(chunks)
    if os.WIFSIGNALED(status) or not data:
        how = (f"crashed with {signal.Signals(os.WTERMSIG(status)).name}"
               if os.WIFSIGNALED(status) else
               f"exited with status {os.waitstatus_to_exitcode(status)} and no result")
        return Outcome(item.key, "crash", "crash", "run", f"the item's process {how}", log_tail,
                       run=run)
    return Outcome.from_row(json.loads(data))
