"""A compile with a dump never reads or writes the compile cache: a dump shows a compilation,
so it must run one, and it must not store code that a dump's flags made."""

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
