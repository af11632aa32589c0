"""A call that waits for IREE's CPU workers without taking a core from them.

On IREE 3.13's ``local-task`` driver, ``VmContext.invoke`` waits for the task system's
workers in ``iree_async_semaphore_multi_wait``, and that wait spins (``perf``: a ``pause``
loop, 14 % of the samples of a GEMM run under ``iree-benchmark-module``). With one worker per
core the spinning caller is a thread too many, and the scheduler lets it preempt a worker:
a third to a half of the calls of a 3.3 ms GEMM took 8 ms (`benchmarks/yielding_wait.py`).
Under Linux's ``SCHED_BATCH`` a thread does not preempt others when it wakes, so the caller
is switched to it for the call and back after. An unprivileged thread may make both switches
(not so for a higher nice value or ``SCHED_IDLE``, which it could never take back), and
they leave the thread's nice value as it was. They cost a few microseconds, so only a call
whose previous call took `LONG_CALL_S` or more is wrapped. ``LOWERKIT_YIELDING_WAIT=0``
turns this off.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable

ENV = "LOWERKIT_YIELDING_WAIT"
# A call this long pays at most ~1.5 % for the two policy switches (about 3.6 µs together).
LONG_CALL_S = 250e-6

_POLICY = getattr(os, "SCHED_BATCH", None)
_NORMAL = getattr(os, "SCHED_OTHER", None)
_PARAM = os.sched_param(0) if hasattr(os, "sched_param") else None


class _Switch:
    """Whether this process can switch a thread's policy; off for good after a refusal."""

    on = (_POLICY is not None and hasattr(os, "sched_setscheduler")
          and os.environ.get(ENV, "1") != "0")


def as_batch(call: Callable[[], Any]) -> Any:
    """``call()`` with the calling thread under ``SCHED_BATCH``, its policy restored after.
    A thread under another policy than the normal one (a real-time caller) is left as it is."""
    if not _Switch.on:
        return call()
    try:
        if os.sched_getscheduler(0) != _NORMAL:
            return call()
        os.sched_setscheduler(0, _POLICY, _PARAM)
    except OSError:  # a sandbox that forbids it: call as usual from now on
        _Switch.on = False
        return call()
    try:
        return call()
    finally:
        try:
            os.sched_setscheduler(0, _NORMAL, _PARAM)
        except OSError as e:  # not seen; the thread would stay batch-scheduled
            warnings.warn(f"lowerkit could not restore the calling thread's scheduling "
                          f"policy after an IREE call: {e}", RuntimeWarning, stacklevel=2)


def batch_child() -> None:
    """A ``preexec_fn`` that puts a child process under ``SCHED_BATCH`` when this process
    yields its waits: ``iree-benchmark-module`` (`lowerkit profile`) then times calls the way
    lowerkit makes them from Python. Its threads inherit the policy; a refusal is ignored."""
    if _Switch.on:
        try:
            os.sched_setscheduler(0, _POLICY, _PARAM)
        except OSError:
            pass


class YieldingWait:
    """One executable's calls: each wrapped in `as_batch` when the one before was long."""

    def __init__(self) -> None:
        self.last_s = 0.0

    def invoke(self, context: Any, fn: Any, args: Any, results: Any) -> float:
        """``context.invoke(fn, args, results)``; the seconds it took."""
        start = time.perf_counter()
        if self.last_s >= LONG_CALL_S:
            as_batch(lambda: context.invoke(fn, args, results))
        else:
            context.invoke(fn, args, results)
        self.last_s = time.perf_counter() - start
        return self.last_s
