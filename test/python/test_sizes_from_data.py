"""Sizes read from data, through both front ends: boolean-mask indexing (``x[mask]``,
``x[:, mask]``, ``masked_select``), whose length is the mask's true count, and ``torch.unique``,
whose length is the number of distinct values, each read at every call; and ``x[mask] = values``,
where ``values`` has a row per true position.

torch-mlir's own lowering failed on a 1-D mask and allocated without bound on a 2-D one, and
has no definition of ``_unique2``; `lowerkit.ingress.decompositions` writes them as ``nonzero``
and a gather (`_mask_index`, `_masked_select`, `_unique`). It wrote ``x[mask] = values`` as a
scatter at ``nonzero``'s positions, which iree-compile refused; lowerkit writes a gather by each
position's rank (`_mask_put`), with eager's check of the count kept at run time."""

from __future__ import annotations

import pytest
import torch

import lowerkit


def masks(x: torch.Tensor, cube: torch.Tensor):
    return (x[x > 0] * 2,                      # a mask over every dim
            x[x[:, 0] > 0] + 1,                # rows
            x[:, x[0] > 0] - 1,                # columns, after a slice
            cube[cube.sum(-1) > 0],            # a 2-D mask over a 3-D tensor
            x[x > 100.0],                      # nothing true: an empty result
            torch.masked_select(x, x[0] < 0))  # broadcast mask


def _inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(5, 7, generator=g), torch.randn(4, 5, 6, generator=g)


def _check(fn):
    for seed in (0, 1):  # another draw: other true counts from the same program
        args = _inputs(seed)
        got, want = fn(*args), masks(*args)
        assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in want]
        for g, w in zip(got, want):
            assert torch.equal(g, w)  # a gather: exact


def test_boolean_masks_through_lowerkit_compile(monkeypatch):
    monkeypatch.setenv("LOWERKIT_STAGE_MEMORY_GIB", "2")  # a regression fails, not the host
    _check(lowerkit.compile(masks, _inputs(0)))


def test_boolean_masks_through_the_backend(monkeypatch):
    monkeypatch.setenv("LOWERKIT_STAGE_MEMORY_GIB", "2")
    torch._dynamo.reset()
    lowerkit.backend.reset()
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        _check(torch.compile(masks, backend="lowerkit", options={"strict": True}))
    assert [g.ran for g in lowerkit.backend.graphs()] == ["lowerkit"]


def test_a_mask_beside_an_integer_index_keeps_torch_mlirs_path():
    def index(x, i):
        return x[i, x[0] > 0]

    x, i = torch.randn(5, 7, generator=torch.Generator().manual_seed(0)), torch.tensor(3)
    try:
        art = lowerkit.compile(index, (x, i))
    except lowerkit.LowerkitError:
        return  # refused with an error is fine: only a wrong answer is not
    assert torch.equal(art(x, i), index(x, i))


def uniques(ints: torch.Tensor, floats: torch.Tensor):
    values, inverse, counts = torch.unique(ints, return_inverse=True, return_counts=True)
    return values, inverse, counts, torch.unique(floats)


def _unique_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    floats = torch.randint(0, 3 + 5 * seed, (6,), generator=g).float()
    floats[[1, 4]] = float("nan")  # each NaN its own value, as in eager
    return torch.randint(0, 4 + 6 * seed, (4, 5), generator=g), floats


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_unique_with_its_inverse_and_counts(via, monkeypatch):
    monkeypatch.setenv("LOWERKIT_STAGE_MEMORY_GIB", "2")
    if via == "compile":
        fn = lowerkit.compile(uniques, _unique_inputs(0))
    else:
        torch._dynamo.reset()
        lowerkit.backend.reset()
        fn = torch.compile(uniques, backend="lowerkit", options={"strict": True})
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        for seed in (0, 1):  # another draw: another number of distinct values
            args = _unique_inputs(seed)
            got, want = fn(*args), uniques(*args)
            assert [(t.shape, t.dtype) for t in got] == [(t.shape, t.dtype) for t in want]
            for g, w in zip(got, want):
                assert torch.equal(g, w) or (torch.isnan(g).any() and
                                             torch.equal(g.nan_to_num(-1), w.nan_to_num(-1)))


def puts(x: torch.Tensor, cube: torch.Tensor, rows: torch.Tensor, cells: torch.Tensor):
    rowmask = x[:, 0] > 0
    a = x.clone()
    a[rowmask] = rows                   # a row of values per true position
    b = x.clone()
    b[x > 0] = x[x > 0] * 10            # values read through the same mask
    c = cube.clone()
    c[cube > 0.5] = cells               # a mask over every dim of a 3-D tensor
    d = torch.ops.aten.index_put(x, (rowmask,), rows, accumulate=True)
    e = x.clone()
    e[rowmask] = rows[:1]               # one row, broadcast to every true position
    f = x.clone()
    f[:, x[0] > 0] = 0.5                # a scalar, after a slice
    return a, b, c, d, e, f


def _put_inputs(seed: int, extra_rows: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, cube = torch.randn(9, 7, generator=g), torch.rand(4, 5, 6, generator=g)
    rows = torch.randn(int((x[:, 0] > 0).sum()) + extra_rows, 7, generator=g)
    return x, cube, rows, torch.randn(int((cube > 0.5).sum()), generator=g)


def _put_function(via: str):
    if via == "compile":
        count, cells = torch.export.Dim("count", min=2), torch.export.Dim("cells", min=2)
        return lowerkit.compile(puts, _put_inputs(0),
                                dynamic_shapes=(None, None, {0: count}, {0: cells}))
    torch._dynamo.reset()
    lowerkit.backend.reset()
    return torch.compile(puts, backend="lowerkit", options={"strict": True})


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_assigning_values_through_a_boolean_mask(via, monkeypatch):
    monkeypatch.setenv("LOWERKIT_STAGE_MEMORY_GIB", "2")
    fn = _put_function(via)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        counts = set()
        for seed in (0, 1, 2):  # other draws: other true counts, other lengths of values
            args = _put_inputs(seed)
            counts.add((args[2].shape[0], args[3].shape[0]))
            got, want = fn(*args), puts(*args)
            for g, w in zip(got, want):
                assert torch.equal(g, w)  # a gather and a select: exact
        assert len(counts) == 3
        # values of another count than the mask's: eager refuses, and so does lowerkit
        bad = _put_inputs(0, extra_rows=1)
        with pytest.raises(RuntimeError, match="shape mismatch"):
            puts(*bad)
        with pytest.raises(lowerkit.CheckError, match="test_sizes_from_data.py:"):
            fn(*bad)
    if via == "backend":
        assert {g.ran for g in lowerkit.backend.graphs()} == {"lowerkit"}


def put_beside_rows(x: torch.Tensor, rows: torch.Tensor, mask: torch.Tensor,
                    values: torch.Tensor):
    return (torch.ops.aten.index_put(x, (rows, mask), values),  # x[rows, mask] = values
            torch.ops.aten.index_put(x, (rows, mask), values, accumulate=True))


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_assigning_through_a_mask_beside_an_integer_index(via, monkeypatch):
    monkeypatch.setenv("LOWERKIT_STAGE_MEMORY_GIB", "2")
    g = torch.Generator().manual_seed(0)
    x, values = torch.randn(5, 6, generator=g), torch.randn(3, generator=g)
    calls = [(torch.tensor([0, 2, 4]), torch.tensor([1, 0, 1, 1, 0, 0], dtype=torch.bool)),
             (torch.tensor([4, 1, 3]), torch.tensor([0, 1, 0, 0, 1, 1], dtype=torch.bool)),
             (torch.tensor([3, 0, 2]), torch.tensor([0, 0, 0, 1, 0, 0], dtype=torch.bool))]
    if via == "compile":
        fn = lowerkit.compile(put_beside_rows, (x, *calls[0], values))
    else:
        torch._dynamo.reset()
        lowerkit.backend.reset()
        fn = torch.compile(put_beside_rows, backend="lowerkit", options={"strict": True})
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        for rows, mask in calls:  # three true positions, then other ones, then one (broadcast)
            for g_, w in zip(fn(x, rows, mask, values), put_beside_rows(x, rows, mask, values)):
                assert torch.equal(g_, w)
        two = torch.tensor([1, 1, 0, 0, 0, 0], dtype=torch.bool)
        with pytest.raises(IndexError, match="shape mismatch"):
            put_beside_rows(x, calls[0][0], two, values)
        with pytest.raises(lowerkit.CheckError, match="could not be broadcast"):
            fn(x, calls[0][0], two, values)
