"""`lowerkit.tools.executor` without Ray: one outcome per item, the journal, resuming and
shards, and the in-process backend's isolation (a segfault, a hang and a Python error planted
in a batch). The Ray backend's fault tests are in test_executor_ray.py."""

from __future__ import annotations

import json

import pytest

from lowerkit.tools.executor import (InProcessExecutor, Item, JournalError, Outcome, parse_shard,
                                     run_items, select_shard)
from lowerkit.tools.executor.faults import EchoJob, FaultyJob


def _items(n: int, timeout_s: float | None = None) -> list[Item]:
    return [Item(f"i{k:02d}", {"n": k}, timeout_s) for k in range(n)]


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in open(path)]


def _without_run(rows: list[dict]) -> list[dict]:
    """A journal's rows without how each ran (seconds, worker, attempts)."""
    return [{k: v for k, v in r.items() if k != "run"} for r in rows]


def test_isolated_items_crash_hang_and_raise_alone(tmp_path):
    """In forked children, each planted fault is its own item's outcome; the others pass."""
    faults = {"i01": "segfault", "i02": "hang", "i03": "raise"}
    job = FaultyJob(EchoJob(), faults, str(tmp_path))
    out = run_items(job, _items(6, timeout_s=1.5), InProcessExecutor(isolate=True),
                    journal=tmp_path / "j.jsonl")
    status = {o.key: o.status for o in out}
    assert status == {"i00": "ok", "i01": "crash", "i02": "timeout", "i03": "fail",
                      "i04": "ok", "i05": "ok"}
    by = {o.key: o for o in out}
    assert "SIGSEGV" in by["i01"].message
    assert "planted Python error" in by["i03"].message and by["i03"].stage == "job"
    assert [r["key"] for r in _rows(tmp_path / "j.jsonl")[1:]] == [f"i{k:02d}" for k in range(6)]


def test_a_python_hang_times_out_in_process():
    job = FaultyJob(EchoJob(), {"i01": "hang"})
    out = run_items(job, _items(3, timeout_s=0.5), InProcessExecutor())
    assert [o.status for o in out] == ["ok", "timeout", "ok"]


def test_a_run_stopped_halfway_and_resumed_ends_as_the_same_file(tmp_path):
    items = _items(8)
    header = {"run": {"job": "echo", "n": 8}}
    whole = tmp_path / "whole.jsonl"
    run_items(EchoJob(), items, journal=whole, header=header)

    part = tmp_path / "part.jsonl"
    seen = []

    def stop_after_three(o):
        seen.append(o.key)
        if len(seen) == 3:
            raise KeyboardInterrupt  # the run is stopped while its journal is open

    with pytest.raises(KeyboardInterrupt):
        run_items(EchoJob(), items, journal=part, header=header, on_outcome=stop_after_three)
    assert len(_rows(part)) == 1 + 3
    again = []
    out = run_items(EchoJob(), items, journal=part, header=header, resume=True,
                    on_outcome=lambda o: again.append(o.key))
    assert again == [i.key for i in items[3:]]  # the done ones are not run again
    assert [o.key for o in out] == [i.key for i in items]
    assert _without_run(_rows(part)) == _without_run(_rows(whole))


def test_resume_refuses_another_batchs_journal(tmp_path):
    path = tmp_path / "j.jsonl"
    run_items(EchoJob(), _items(2), journal=path, header={"run": {"seed": 1}})
    with pytest.raises(JournalError, match="another batch"):
        run_items(EchoJob(), _items(2), journal=path, header={"run": {"seed": 2}}, resume=True)


@pytest.mark.parametrize("now,dirty", [("b" * 40, False), ("a" * 40, True)])
def test_resume_refuses_a_journal_of_other_code(tmp_path, now, dirty):
    """A part run on other code (another commit, or uncommitted changes) would pass as the
    commit the kept header names."""
    path = tmp_path / "j.jsonl"
    ran = {"run": {"seed": 1}, "lowerkit_commit": "a" * 40, "lowerkit_dirty": False}
    run_items(EchoJob(), _items(2), journal=path, header=ran)
    run_items(EchoJob(), _items(2), journal=path, header=ran, resume=True)  # the same code
    with pytest.raises(JournalError, match="run at lowerkit commit a{40}"):
        run_items(EchoJob(), _items(2), journal=path, resume=True,
                  header={**ran, "lowerkit_commit": now, "lowerkit_dirty": dirty})


def test_resume_runs_infrastructure_outcomes_again(tmp_path):
    path = tmp_path / "j.jsonl"
    header = {"run": {"job": "echo"}}
    run_items(EchoJob(), _items(2), journal=path, header=header)
    rows = _rows(path)
    rows[2]["status"] = "infrastructure"  # e.g. its node was lost
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again = []
    run_items(EchoJob(), _items(2), journal=path, header=header, resume=True,
              on_outcome=lambda o: again.append(o.key))
    assert again == ["i01"]


def test_shards_split_the_items_once_each():
    items = _items(10)
    shards = [select_shard(items, (k, 3)) for k in (1, 2, 3)]
    keys = [i.key for s in shards for i in s]
    assert sorted(keys) == [i.key for i in items] and len(keys) == len(set(keys))
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


def test_an_outcome_has_one_of_the_five_statuses():
    with pytest.raises(ValueError, match="status"):
        Outcome("k", "passed")


class _EagerConvJob(EchoJob):
    """An eager oneDNN convolution, on torch's threads (OpenMP)."""

    def run(self, item: Item) -> Outcome:
        import torch

        x = torch.ones(1, 16, 4096)
        y = torch.nn.functional.conv1d(x, torch.ones(16, 16, 3), padding=1)
        return Outcome(item.key, "ok", "passed", data={"sum": float(y.sum())})


def test_an_isolated_item_runs_after_the_parent_ran_openmp():
    """``lowerkit fuzz`` runs each candidate op eagerly while it generates; a forked child then
    inherited a libgomp pool without its threads and hung in its first parallel region."""
    import torch

    if torch.get_num_threads() < 2:
        pytest.skip("one torch thread: no OpenMP pool to inherit")
    _EagerConvJob().run(Item("parent", {}))  # the parent's OpenMP region
    out = run_items(_EagerConvJob(), _items(2, timeout_s=60), InProcessExecutor(isolate=True))
    assert [o.status for o in out] == ["ok", "ok"], [o.message for o in out]
