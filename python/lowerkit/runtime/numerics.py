"""Comparing a compiled program's outputs with eager PyTorch's, leaf by leaf, relative to scale.

An error is judged against the output's scale (max |expected| over its finite values), not
elementwise: an absolute atol lets a 1 % error through on outputs of magnitude 0.05, and an
elementwise rtol fails on values that cancel to near zero. The zoo, the fuzzer, ``verify`` and
the tests all compare through `compare`, so there is one meaning of "matches eager".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

__all__ = ["Tolerance", "DEFAULT_TOLERANCES", "tolerance_for", "compare", "Comparison"]


@dataclass(frozen=True)
class Tolerance:
    """Largest |actual - expected| allowed for one output, as a fraction of that output's scale:
    max |expected| over its finite values (1.0 when that is 0 or there are none). `reason` says
    why a tolerance looser than its dtype's default is needed (required for a looser one)."""

    rel: float
    reason: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.rel, (int, float)) and math.isfinite(self.rel) and self.rel >= 0):
            raise ValueError(f"Tolerance.rel must be a finite number >= 0, got {self.rel!r}")


DEFAULT_TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float32: Tolerance(1e-5, "float32: eps 1.2e-7; about 100 ulps of the scale for sums "
                                   "and library calls evaluated in another order than eager's"),
    torch.float64: Tolerance(1e-12, "float64: eps 2.2e-16; about 5000 ulps of the scale for "
                                    "sums and library calls evaluated in another order"),
    torch.float16: Tolerance(1e-2, "float16: eps 9.8e-4; about 10 ulps of the scale, each op "
                                   "rounds to float16 and the compiled order differs from eager's"),
    torch.bfloat16: Tolerance(6e-2, "bfloat16: eps 7.8e-3; about 8 ulps of the scale, each op "
                                    "rounds to bfloat16 and the compiled order differs from eager's"),
}
DEFAULT_TOLERANCES[torch.complex64] = DEFAULT_TOLERANCES[torch.float32]
DEFAULT_TOLERANCES[torch.complex128] = DEFAULT_TOLERANCES[torch.float64]


def tolerance_for(dtype: torch.dtype) -> Tolerance:
    """The default tolerance of a floating dtype (exact, rel=0, for ints and bools)."""
    if dtype in DEFAULT_TOLERANCES:
        return DEFAULT_TOLERANCES[dtype]
    if dtype.is_floating_point:   # float8 variants and the like
        eps = torch.finfo(dtype).eps
        return Tolerance(8 * eps, f"{dtype}: eps {eps:.2g}; 8 ulps of the scale")
    return Tolerance(0.0, f"{dtype} is compared exactly")


@dataclass
class Comparison:
    """How far the compiled outputs are from eager's: the worst leaf and whether all fit."""

    ok: bool
    max_abs_error: float
    worst_leaf: str | None
    message: str
    max_rel_error: float = 0.0   # worst |a-e| / scale over the float leaves

    def __str__(self) -> str:
        return self.message


def _path(keypath) -> str:
    return "output" + "".join(str(k) for k in keypath)


def _scale(finite_expected_abs: torch.Tensor) -> float:
    if finite_expected_abs.numel() == 0:
        return 1.0
    s = float(finite_expected_abs.max())
    return s if s > 0 else 1.0


def _tolerance_of(tol: Any, name: str, dtype: torch.dtype) -> Tolerance:
    """The tolerance one leaf is judged by; refuses a looser-than-default one with no reason."""
    default = tolerance_for(dtype)
    if tol is None:
        return default
    chosen = tol
    if isinstance(tol, Mapping):
        chosen = default
        # the longest key that names this leaf or a subtree holding it
        best = -1
        for key, value in tol.items():
            if (name == key or (name.startswith(key) and name[len(key)] in "[.")) and len(key) > best:
                chosen, best = value, len(key)
    if not isinstance(chosen, Tolerance):
        raise TypeError(f"a tolerance is a lowerkit.runtime.numerics.Tolerance, got {chosen!r} for {name}")
    if chosen.rel > default.rel and not chosen.reason.strip():
        raise ValueError(
            f"Tolerance(rel={chosen.rel:g}) for {name} is looser than the {dtype} default "
            f"{default.rel:g} and gives no reason; say why, e.g. "
            f"Tolerance({chosen.rel:g}, reason=\"K=4096 reduction in f32\")")
    return chosen


def _check_mapping_keys(tol: Mapping, names: list[str]) -> None:
    for key in tol:
        if not any(n == key or (n.startswith(key) and n[len(key)] in "[.") for n in names):
            raise ValueError(f"tolerance given for {key!r}, which names no output; the outputs "
                             f"are {', '.join(names) or 'none'}")


def compare(actual: Any, expected: Any, *, tol: Tolerance | Mapping[str, Tolerance] | None = None,
            rtol: float | None = None, atol: float | None = None) -> Comparison:
    """Compare two output structures: the same tree, dtypes and shapes; ints and bools exact;
    NaN and inf at the same places; each float leaf within its tolerance of its scale.

    ``tol`` is None (each leaf by its dtype's default), one `Tolerance` for every float leaf, or
    a mapping from leaf path (``"output[0]"``, ``"output['logits']"``) to `Tolerance`, the other
    leaves taking their dtype's default. ``rtol``/``atol`` instead ask for the elementwise check
    ``|a - e| <= atol + rtol * |e|`` (a missing one counts as 0), for users who name them.
    """
    elementwise = rtol is not None or atol is not None
    if elementwise and tol is not None:
        raise TypeError("compare takes tol= or rtol=/atol=, not both")
    rtol_v = 0.0 if rtol is None else float(rtol)
    atol_v = 0.0 if atol is None else float(atol)
    a_leaves, a_spec = pytree.tree_flatten_with_path(actual)
    e_leaves, e_spec = pytree.tree_flatten_with_path(expected)
    if a_spec != e_spec:
        return Comparison(False, float("inf"), None,
                          f"output structure differs: got {a_spec}, expected {e_spec}",
                          float("inf"))
    names = [_path(p) for p, _ in e_leaves]
    if isinstance(tol, Mapping):
        _check_mapping_keys(tol, names)
    worst_abs, worst_rel, worst_leaf, bad = 0.0, 0.0, None, None
    for name, (_, a), (_, e) in zip(names, a_leaves, e_leaves):
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
        if e.dtype == torch.bool or not (e.is_floating_point() or e.is_complex()):
            differ = int((a != e).sum()) if a.numel() else 0
            if differ:
                worst_abs = max(worst_abs, float((a.double() - e.double()).abs().max()))
                bad = bad or f"{name}: {differ} of {e.numel()} elements differ ({e.dtype}, exact)"
            continue
        leaf_tol = None if elementwise else _tolerance_of(tol, name, e.dtype)
        if a.numel() == 0:
            continue
        wide = torch.complex128 if e.is_complex() else torch.float64
        af, ef = a.to(wide), e.to(wide)
        e_nan, a_nan = torch.isnan(ef), torch.isnan(af)
        e_fin, a_fin = torch.isfinite(ef), torch.isfinite(af)
        e_inf = ~e_fin & ~e_nan
        if not torch.equal(e_nan, a_nan):
            where = [int(i) for i in torch.nonzero(e_nan != a_nan)[0]]
            bad = bad or f"{name}: NaN at different places (first at index {where})"
        elif not torch.equal(e_fin, a_fin) or not torch.equal(af[e_inf], ef[e_inf]):
            where = [int(i) for i in torch.nonzero((e_fin != a_fin) | (e_inf & (af != ef)))[0]]
            bad = bad or f"{name}: inf at different places or signs (first at index {where})"
        both = e_fin & a_fin
        delta = (af - ef)[both].abs()
        scale = _scale(ef[e_fin].abs())
        err = float(delta.max()) if delta.numel() else 0.0
        rel = err / scale
        if rel >= worst_rel:
            worst_rel, worst_leaf = rel, name
        worst_abs = max(worst_abs, err)
        if elementwise:
            allowed = atol_v + rtol_v * ef[both].abs()
            if delta.numel() and bool((delta > allowed).any()):
                idx = int(torch.argmax(delta - allowed))
                bad = bad or (f"{name}: max abs error {err:.3g} exceeds atol={atol_v:g}, "
                              f"rtol={rtol_v:g} (at flat index {idx} of the finite values)")
        elif rel > leaf_tol.rel:
            flat = int(torch.nonzero(both.flatten())[int(torch.argmax(delta))])
            index = list(int(i) for i in torch.unravel_index(torch.tensor(flat), e.shape))
            why = f" ({leaf_tol.reason})" if leaf_tol.reason else ""
            bad = bad or (f"{name}: max error {err:.3g} at index {index} is {rel:.3g} of the "
                          f"output's scale {scale:.3g}, over the tolerance {leaf_tol.rel:g}{why}")
    if bad:
        bad_leaf = next((n for n in names if bad.startswith(n + ":")), None)
        return Comparison(False, worst_abs, bad_leaf, f"mismatch against eager: {bad}", worst_rel)
    how = f"rtol={rtol_v:g}, atol={atol_v:g}" if elementwise else "each within its tolerance"
    return Comparison(True, worst_abs, worst_leaf,
                      f"matches eager: max abs error {worst_abs:.3g}, {worst_rel:.3g} of the "
                      f"output's scale ({how})", worst_rel)
