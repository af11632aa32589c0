"""lowerkit's import-time decompositions (`lowerkit.decompositions`): sort, topk and cumsum in
data-parallel form give eager's answers, apply only where they pay, and can be turned off."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.numerics import compare


def assert_matches(got, expected, rtol=1e-4, atol=1e-4):
    result = compare(got, expected, rtol=rtol, atol=atol)
    assert result.ok, result.message


def lowered_ops(fn, args) -> set[str]:
    imported = lowerkit.import_program(fn, args)
    module = lowerkit.resolve_pipeline(None).run(imported.module).module
    return set(lowerkit.op_histogram(module))


def _special(x: torch.Tensor) -> torch.Tensor:
    """NaN, inf and -inf in a float tensor (ties stay out: eager's unstable sort orders them
    as it likes)."""
    x = x.clone()
    flat = x.view(-1)
    flat[3], flat[7], flat[-2] = float("nan"), float("inf"), float("-inf")
    return x


SORTS = [
    ("descending-last", lambda x: torch.sort(x, dim=-1, descending=True)),
    ("ascending-dim0", lambda x: torch.sort(x, dim=0)),
    ("topk-largest", lambda x: torch.topk(x, 5, dim=-1)),
    ("topk-smallest-dim0", lambda x: torch.topk(x, 3, dim=0, largest=False)),
    ("argsort", lambda x: torch.argsort(x, dim=1, descending=True)),
]


@pytest.mark.parametrize("name,fn", SORTS, ids=[s[0] for s in SORTS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sort_and_topk_match_eager_with_nan_and_inf(name, fn, dtype):
    torch.manual_seed(0)
    x = _special(torch.randn(8, 64)).to(dtype)
    art = lowerkit.compile(fn, (x,), cache=False)
    assert_matches(art(x), fn(x), rtol=0, atol=0)


def test_stable_sort_orders_ties_as_eager():
    torch.manual_seed(0)
    x = torch.randint(-3, 3, (6, 40))
    fn = lambda x: torch.sort(x, dim=1, descending=True, stable=True)  # noqa: E731
    art = lowerkit.compile(fn, (x,), cache=False)
    assert_matches(art(x), fn(x), rtol=0, atol=0)


CUMSUMS = [
    ("f32-dim1", lambda x: torch.cumsum(x, 1), torch.randn(4, 32, 16)),
    ("logcumsumexp-by-hand", lambda x: torch.cumsum(x.exp(), -1).log(), torch.randn(4, 33)),
    ("int64", lambda x: torch.cumsum(x, 0), torch.randint(-9, 9, (37, 3))),
    ("int32-to-int64", lambda x: torch.cumsum(x, -1), torch.randint(-9, 9, (3, 5), dtype=torch.int32)),
    ("bool", lambda x: torch.cumsum(x, -1), torch.rand(3, 9) > 0.5),
    ("f16", lambda x: torch.cumsum(x, -1), torch.randn(5, 100).half()),
    ("to-f64", lambda x: torch.cumsum(x, 0, dtype=torch.float64), torch.randn(6, 2)),
    ("inf-and-nan", lambda x: torch.cumsum(x, -1), _special(torch.randn(2, 12))),
]


@pytest.mark.parametrize("name,fn,x", CUMSUMS, ids=[c[0] for c in CUMSUMS])
def test_cumsum_matches_eager(name, fn, x):
    art = lowerkit.compile(fn, (x,), cache=False)
    got, expected = art(x), fn(x)
    assert got.dtype == expected.dtype
    assert_matches(got, expected, rtol=1e-3 if x.dtype == torch.float16 else 1e-5, atol=1e-3)


def test_decompositions_replace_the_serial_ops():
    x = torch.randn(8, 64)
    ops = lowered_ops(lambda x: (torch.sort(x), torch.cumsum(x, 1)), (x,))
    assert not any(op.startswith("tm_tensor.") for op in ops), ops


def test_long_dimensions_keep_the_serial_ops():
    x = torch.randn(2, 5000)
    ops = lowered_ops(lambda x: (torch.sort(x), torch.cumsum(x, 1)), (x,))
    assert {"tm_tensor.sort", "tm_tensor.scan"} <= ops, ops


def test_decompositions_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("LOWERKIT_DECOMPOSITIONS", "0")
    ops = lowered_ops(lambda x: torch.topk(x, 2), (torch.randn(3, 8),))
    assert any(op.startswith("tm_tensor.") for op in ops), ops
