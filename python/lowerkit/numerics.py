"""Comparing a compiled program's outputs with eager PyTorch's, leaf by leaf."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree


@dataclass
class Comparison:
    """How far the compiled outputs are from eager's: the worst leaf and whether all fit."""

    ok: bool
    max_abs_error: float
    worst_leaf: str | None
    message: str

    def __str__(self) -> str:
        return self.message


def _path(keypath) -> str:
    return "output" + "".join(str(k) for k in keypath)


def compare(actual: Any, expected: Any, *, rtol: float = 1e-4, atol: float = 1e-4) -> Comparison:
    """Compare two output structures: the same tree, dtypes and shapes, values within tolerance."""
    a_leaves, a_spec = pytree.tree_flatten_with_path(actual)
    e_leaves, e_spec = pytree.tree_flatten_with_path(expected)
    if a_spec != e_spec:
        return Comparison(False, float("inf"), None,
                          f"output structure differs: got {a_spec}, expected {e_spec}")
    worst, worst_leaf, bad = 0.0, None, None
    for (path, a), (_, e) in zip(a_leaves, e_leaves):
        name = _path(path)
        if not isinstance(e, torch.Tensor):
            if a != e and not (a != a and e != e):
                bad = bad or f"{name}: got {a!r}, expected {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            bad = bad or f"{name}: got {type(a).__name__}, expected a tensor"
            continue
        if a.dtype != e.dtype:
            bad = bad or f"{name}: dtype {a.dtype}, expected {e.dtype}"
            continue
        if a.shape != e.shape:
            bad = bad or f"{name}: shape {list(a.shape)}, expected {list(e.shape)}"
            continue
        e = e.detach().cpu()
        a = a.detach().cpu()
        if a.numel() == 0:
            continue
        if e.dtype == torch.bool or not (e.is_floating_point() or e.is_complex()):
            diff = (a != e)
            err = float(diff.sum())
            if err:
                bad = bad or f"{name}: {int(err)} of {e.numel()} elements differ"
        else:
            af, ef = a.double(), e.double()
            finite = torch.isfinite(ef)
            if not torch.equal(torch.isnan(af), torch.isnan(ef)) or not torch.equal(
                af[~finite & ~torch.isnan(ef)], ef[~finite & ~torch.isnan(ef)]
            ):
                bad = bad or f"{name}: non-finite values differ"
            delta = (af - ef)[finite].abs()
            err = float(delta.max()) if delta.numel() else 0.0
            allowed = (atol + rtol * ef[finite].abs())
            if delta.numel() and bool((delta > allowed).any()):
                idx = int(torch.argmax((delta - allowed)))
                bad = bad or (f"{name}: max abs error {err:.3g} exceeds atol={atol}, rtol={rtol} "
                              f"(at flat index {idx} of the finite values)")
        if err >= worst:
            worst, worst_leaf = err, name
    if bad:
        return Comparison(False, worst, worst_leaf, f"mismatch against eager: {bad}")
    return Comparison(True, worst, worst_leaf,
                      f"matches eager: max abs error {worst:.3g} (rtol={rtol}, atol={atol})")
