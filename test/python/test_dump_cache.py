"""A compile with a dump or an instrument never reads or writes the compile cache: both watch
a compilation, so one must run, and a dump's flags must not make what the cache stores."""

from __future__ import annotations

import torch

import lowerkit
from lowerkit.cache import CompileCache


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.Tanh()), (torch.randn(2, 6),)


def _entries(cache: CompileCache) -> list:
    return sorted(cache.directory.glob("*/*.lkc"))


def test_dump_neither_reads_nor_writes_the_cache(tmp_path):
    model, args = _model()
    cache = CompileCache(tmp_path / "cache")

    lowerkit.compile(model, args, dump_dir=tmp_path / "first", cache=cache)
    assert _entries(cache) == [] and (cache.stats.hits, cache.stats.misses, cache.stats.stores) == (0, 0, 0)

    plain = lowerkit.compile(model, args, cache=cache)  # stores the program
    assert len(_entries(cache)) == 1 and cache.stats.stores == 1 and not plain.cache_hit
    assert lowerkit.compile(model, args, cache=cache).cache_hit  # the entry is there to be hit

    dumped = lowerkit.compile(model, args, dump_dir=tmp_path / "second", cache=cache)
    assert not dumped.cache_hit and cache.stats.hits == 1  # the hit above, none for the dump
    # it compiled: IREE's phases and the vmfb are in the dump
    assert any((tmp_path / "second").glob("*-iree-vm.mlir"))
    assert any((tmp_path / "second").glob("*-module.vmfb"))
    torch.testing.assert_close(dumped(*args), model(*args), rtol=1e-5, atol=1e-6)


class _StageNames(lowerkit.Instrument):
    def __init__(self):
        self.seen = []

    def after_stage(self, stage, module, record):
        self.seen.append(stage.name)


def test_an_instrument_sees_every_stage_although_the_cache_holds_the_program(tmp_path):
    model, args = _model()
    cache = CompileCache(tmp_path / "cache")
    lowerkit.compile(model, args, cache=cache)
    assert cache.stats.stores == 1

    names = _StageNames()
    art = lowerkit.compile(model, args, cache=cache, instruments=[names])
    assert not art.cache_hit and cache.stats.hits == 0 and cache.stats.stores == 1
    assert {"torch-backend-contract", "linalg-on-tensors"} <= set(names.seen)
