"""The CPU driver choice of a local-task program (`lowerkit.runtime.executable._HostPath`): decided from
each driver's fastest trial call, so that a few preempted local-sync trials on a loaded
machine do not hand a tiny program to local-task's worker threads."""

from __future__ import annotations

from types import SimpleNamespace

import torch

import lowerkit
from lowerkit.runtime.executable import _HostPath


def _path(monkeypatch) -> tuple[_HostPath, SimpleNamespace, SimpleNamespace]:
    monkeypatch.delenv("LOWERKIT_CPU_DRIVER", raising=False)
    main = SimpleNamespace(loaded=("rt", "task-device", object(), "fn"), _vmfb=b"", function="main")
    twin = SimpleNamespace(loaded=("rt", "sync-device", object(), "fn"))
    path = _HostPath(main)
    path._twin = twin
    return path, main, twin


def _feed(path, main, twin, task_times, sync_times):
    for t_task, t_sync in zip(task_times, sync_times):
        path.record(main.loaded[2], t_task)
        path.record(twin.loaded[2], t_sync)


def test_preempted_sync_trials_still_pick_local_sync(monkeypatch):
    path, main, twin = _path(monkeypatch)
    # local-sync: 35 µs a call, three of five trials preempted; local-task: 400 µs each.
    _feed(path, main, twin, [400e-6] * 5, [5e-3, 35e-6, 6e-3, 7e-3, 36e-6])
    assert path.decided and path.pick() is twin.loaded


def test_a_faster_local_task_is_kept(monkeypatch):
    path, main, twin = _path(monkeypatch)
    _feed(path, main, twin, [2e-3, 1.1e-3, 1.0e-3, 9e-3, 1.2e-3], [2.1e-3, 2.0e-3, 2.2e-3, 2.0e-3, 2.3e-3])
    assert path.decided and path.pick() is main.loaded


def test_no_decision_before_every_trial(monkeypatch):
    path, main, twin = _path(monkeypatch)
    _feed(path, main, twin, [1e-3] * (_HostPath.TRIALS - 1), [1e-5] * (_HostPath.TRIALS - 1))
    assert not path.decided


def test_a_real_program_settles_on_a_driver_and_stays_right():
    x = torch.randn(4, 8)
    art = lowerkit.compile(lambda x: (x * 2).sum(0), (x,))
    for _ in range(2 * _HostPath.TRIALS + 2):
        assert torch.allclose(art(x), (x * 2).sum(0))
    assert art.executable._host_path.decided


def test_a_long_first_call_keeps_local_task_without_loading_a_twin(monkeypatch):
    """A call of 20 ms or more is compute: local-sync (one thread) cannot win it, and loading
    its twin would load the program twice (and what IREE computes from its weights at load)."""
    monkeypatch.delenv("LOWERKIT_CPU_DRIVER", raising=False)
    main = SimpleNamespace(loaded=("rt", "task-device", object(), "fn"), _vmfb=b"",
                           function="main", widen={}, weights=None)
    path = _HostPath(main)
    assert path.pick() is main.loaded and path._twin is None
    path.record(main.loaded[2], 0.05)
    assert path.decided and path.pick() is main.loaded and path._twin is None
