"""A large input is copied into IREE's host memory in huge pages (`lowerkit.runtime.huge_pages`):
the same answer, the caller's tensors untouched, and the small inputs copied as before."""

from __future__ import annotations

import torch

import lowerkit
from lowerkit.runtime import huge_pages
from lowerkit.runtime.numerics import compare


def _program(x, y, z):
    return x * 2 + y, (z.float() * 3).sum(), x[-1, -1] + y[0]


def test_a_large_input_is_copied_in_huge_pages_with_the_same_answer(monkeypatch):
    rows = huge_pages.MIN_BYTES // 4 // 512 + 3  # float32 rows of 512: a little over the size
    g = torch.Generator().manual_seed(0)
    args = [(torch.randn(rows, 512, generator=g), torch.randn(512, generator=g),
             torch.randn(2 * rows, 512, generator=g).to(torch.bfloat16)) for _ in range(2)]
    art = lowerkit.compile(_program, args[0], cache=False)
    sizes = []
    original = huge_pages.copy_in

    def counted(rt, device, memory, usage, arr, element_type):
        sizes.append(arr.nbytes)
        return original(rt, device, memory, usage, arr, element_type)

    monkeypatch.setattr(huge_pages, "copy_in", counted)
    for x, y, z in args:  # another call, other values in buffers of the same sizes
        kept = [t.clone() for t in (x, y, z)]
        result = compare(art(x, y, z), _program(x, y, z))
        assert result.ok, result.message
        assert all(torch.equal(a, b) for a, b in zip((x, y, z), kept))
    assert sorted(sizes) == sorted([x.numel() * 4, z.numel() * 2] * 2), sizes  # not y's
