"""This commit's share of the real-size zoo (`lowerkit.zoo.real`), each model at its published
size through the whole CPU path and checked against eager (slow tier: CI runs it).

The whole zoo takes over an hour on 2 cores (`lowerkit zoo --real`), more than CI has beside
the suite; each commit runs one of `SHARES` shards, picked by its commit count (``--shard
auto/16``), so any 16 commits in a row run every model. Each model runs in a forked child with
a time limit, so a crash or a hang is that model's failure, not the suite's."""

from __future__ import annotations

import importlib.util

import pytest

SHARES = 16
ITEM_TIMEOUT_S = 600   # the slowest model of the zoo (mvit_v2_s) took 105 s on Zen 4


def _this_commits_share() -> list:
    if any(importlib.util.find_spec(lib) is None for lib in ("torchvision", "timm",
                                                            "transformers")):
        return []
    from lowerkit.tools.executor import parse_shard
    from lowerkit.zoo.real import real_zoo

    try:
        k, n = parse_shard(f"auto/{SHARES}")
    except ValueError:  # not a git checkout (the installed wheel's tests): no commit to pick by
        return []
    return real_zoo()[k - 1::n]


@pytest.mark.slow
@pytest.mark.parametrize("entry", [pytest.param(m, id=m.name) for m in _this_commits_share()])
def test_this_commits_share_of_the_real_zoo_matches_eager(entry):
    from lowerkit.tools.executor import InProcessExecutor, Item, run_items
    from lowerkit.zoo.coverage import ZooJob, result_of

    [outcome] = run_items(ZooJob("cpu", {entry.name: entry}),
                          [Item(entry.name, timeout_s=ITEM_TIMEOUT_S)],
                          InProcessExecutor(isolate=True))
    result = result_of(outcome)
    assert result.ok, f"{entry.name} stopped at {result.stage}: {result.message}"
