"""A long CPU call waits for IREE's workers as SCHED_BATCH (`lowerkit.runtime.yielding_wait`):
the policy is on during the call only, the thread's own policy and nice value come back
after it, even when the call raises, and short calls are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch

import lowerkit
from lowerkit.runtime import yielding_wait
from lowerkit.runtime.yielding_wait import LONG_CALL_S, YieldingWait, as_batch, batch_child

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SCHED_BATCH is Linux's")


@pytest.fixture(autouse=True)
def switch_on(monkeypatch):
    monkeypatch.setattr(yielding_wait._Switch, "on", True)


class _Context:
    """A stand-in for VmContext that records the calling thread's policy during invoke."""

    def __init__(self, fail: bool = False, seconds: float = 0.0):
        self.policies: list[int] = []
        self.fail = fail
        self.seconds = seconds

    def invoke(self, fn, args, results):
        self.policies.append(os.sched_getscheduler(0))
        if self.seconds:
            time.sleep(self.seconds)
        if self.fail:
            raise RuntimeError("the program failed")


def test_the_call_runs_batch_scheduled_and_the_policy_comes_back():
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    ctx = _Context()
    assert as_batch(lambda: ctx.invoke(None, None, None)) is None
    assert ctx.policies == [os.SCHED_BATCH]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    assert os.getpriority(os.PRIO_PROCESS, 0) == nice


def test_a_failing_call_still_restores_the_policy():
    ctx = _Context(fail=True)
    with pytest.raises(RuntimeError, match="the program failed"):
        as_batch(lambda: ctx.invoke(None, None, None))
    assert ctx.policies == [os.SCHED_BATCH]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_only_a_call_after_a_long_one_is_wrapped():
    """Only lower bounds on times: a loaded machine only ever makes a call longer."""
    wait, ctx = YieldingWait(), _Context()
    wait.invoke(ctx, None, None, None)  # the first call: nothing known yet
    wait.last_s = LONG_CALL_S / 10
    wait.invoke(ctx, None, None, None)
    assert ctx.policies == [os.SCHED_OTHER, os.SCHED_OTHER]
    slow = _Context(seconds=2 * LONG_CALL_S)
    wait.last_s = LONG_CALL_S / 10
    seconds = wait.invoke(slow, None, None, None)
    assert seconds >= 2 * LONG_CALL_S and wait.last_s == seconds
    wait.invoke(ctx, None, None, None)  # after that long call: wrapped
    assert ctx.policies == [os.SCHED_OTHER, os.SCHED_OTHER, os.SCHED_BATCH]
    assert slow.policies == [os.SCHED_OTHER]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_a_thread_under_another_policy_is_left_alone():
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    try:
        ctx = _Context()
        as_batch(lambda: ctx.invoke(None, None, None))
        assert os.sched_getscheduler(0) == os.SCHED_BATCH  # not turned to SCHED_OTHER
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def test_a_refused_switch_turns_it_off_and_the_call_still_runs(monkeypatch):
    def refuse(*_):
        raise PermissionError("not allowed here")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    ctx = _Context()
    as_batch(lambda: ctx.invoke(None, None, None))
    assert ctx.policies == [os.SCHED_OTHER]
    assert yielding_wait._Switch.on is False


def test_a_long_local_task_program_is_called_batch_scheduled(monkeypatch):
    """Through `Artifact.__call__`: a program on local-task whose last call was long waits as
    SCHED_BATCH, and its results stay right."""
    monkeypatch.setenv("LOWERKIT_CPU_DRIVER", "local-task")
    seen = []
    real = yielding_wait.as_batch

    def spy(call):
        seen.append(os.sched_getscheduler(0))
        return real(call)

    monkeypatch.setattr(yielding_wait, "as_batch", spy)
    w, x = torch.randn(64, 64), torch.randn(64, 64)
    art = lowerkit.compile(lambda x: torch.relu(x @ w), (x,), target="cpu", cache=False)
    assert art.executable.driver == "local-task"
    art(x)
    art.executable._wait.last_s = 1.0  # as if the call before had taken a second
    torch.testing.assert_close(art(x), torch.relu(x @ w), rtol=1e-5, atol=1e-5 * 64)
    assert seen == [os.SCHED_OTHER]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


@pytest.mark.parametrize("on", [True, False])
def test_a_child_process_runs_batch_scheduled_when_waits_yield(monkeypatch, on):
    """`lowerkit profile` starts iree-benchmark-module with `batch_child`, so that its calls
    are timed as lowerkit makes them; with the yielding wait off, the child is left alone."""
    monkeypatch.setattr(yielding_wait._Switch, "on", on)
    out = subprocess.run([sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
                         capture_output=True, text=True, check=True, preexec_fn=batch_child)
    assert int(out.stdout) == (os.SCHED_BATCH if on else os.SCHED_OTHER)
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # this process is untouched
