"""``lowerkit.compile(..., verify=True)``: every call also runs eager and raises on a mismatch."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.runtime.numerics import Tolerance
from lowerkit.runtime.verify import VerifiedArtifact


def _two(x, y):
    return {"sum": x + y, "rows": (x * y).sum(1)}


def test_verify_passes_and_returns_outputs():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    art = lowerkit.compile(_two, (x, y), verify=True)
    assert isinstance(art, VerifiedArtifact) and isinstance(art, lowerkit.Artifact)
    out = art(x, y)
    torch.testing.assert_close(out["sum"], x + y)
    torch.testing.assert_close(out["rows"], (x * y).sum(1))
    assert art.calls_verified == 1
    art(torch.randn(3, 4), torch.randn(3, 4))
    assert art.calls_verified == 2


def test_verify_names_first_differing_output():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    art = lowerkit.compile(_two, (x, y), verify=True)
    # the reference now disagrees on "rows" only: the compiled program is "wrong" there
    art.reference = lambda a, b: {"sum": a + b, "rows": (a * b).sum(1) + 1}
    with pytest.raises(lowerkit.VerificationError) as info:
        art(x, y)
    e = info.value
    assert isinstance(e, lowerkit.LowerkitError)
    assert e.path == "output['rows']"
    assert e.max_abs_error == pytest.approx(1.0, abs=1e-3)
    assert "output['rows']" in str(e) and "cpu" in str(e)


def test_verify_dtype_and_shape_mismatch_are_reported():
    x = torch.randn(2, 3)
    art = lowerkit.compile(lambda a: (a * 2,), (x,), verify=True)
    art.reference = lambda a: ((a * 2).double(),)
    with pytest.raises(lowerkit.VerificationError, match=r"output\[0\].*dtype"):
        art(x)


def test_verify_tolerances_and_bad_options():
    x = torch.randn(4)
    art = lowerkit.compile(torch.sin, (x,), verify={"rtol": 0.0, "atol": 0.5})
    art.reference = lambda a: torch.sin(a) + 0.25  # within atol=0.5
    art(x)
    with pytest.raises(TypeError, match="rtol and atol"):
        lowerkit.compile(torch.sin, (x,), verify={"tolerance": 1})
    with pytest.raises(TypeError, match="not both"):
        lowerkit.compile(torch.sin, (x,), verify={"tol": Tolerance(1e-5), "atol": 1e-3})


def test_verify_default_is_relative_to_scale():
    # 1e-4 of each value: the old default (rtol=atol=1e-4, elementwise) let it through; it is
    # ten times f32's default of 1e-5 of the output's scale
    x = torch.linspace(-3, 3, 64)
    art = lowerkit.compile(torch.sin, (x,), verify=True)
    art.reference = lambda a: torch.sin(a) * (1 + 1e-4)
    with pytest.raises(lowerkit.VerificationError, match=r"of the output's scale.*1e-05"):
        art(x)
    # large outputs with an error of 1e-6 of their scale pass, near-zero values included
    y = torch.linspace(-1, 1, 65) * 1e4       # holds 0.0 exactly
    art = lowerkit.compile(lambda a: a * 3, (y,), verify=True)
    art.reference = lambda a: a * 3 + 3e4 * 1e-6
    art(y)
    assert art.calls_verified == 1


def test_verify_takes_a_tolerance_per_output():
    x = torch.randn(3, 4)
    loose = Tolerance(1e-3, "test: the reference is 1e-4 off on purpose")
    art = lowerkit.compile(_two, (x, x), verify={"tol": {"output['rows']": loose}})
    art.reference = lambda a, b: {"sum": a + b, "rows": (a * b).sum(1) * (1 + 1e-4)}
    art(x, x)
    art.reference = lambda a, b: {"sum": (a + b) * (1 + 1e-4), "rows": (a * b).sum(1)}
    with pytest.raises(lowerkit.VerificationError) as info:
        art(x, x)
    assert info.value.path == "output['sum']"


def test_verify_eager_sees_copies_of_inputs():
    # an in-place op in the model must not change the user's tensor twice (once per run)
    def f(a):
        a.add_(1)
        return a * 2

    x = torch.zeros(3)
    art = lowerkit.compile(f, (x.clone(),), verify=True)
    out = art(x)
    torch.testing.assert_close(out, torch.full((3,), 2.0))


def test_verify_follows_to_and_keep_on_device():
    x = torch.randn(2, 2)
    art = lowerkit.compile(torch.relu, (x,), verify=True)
    moved = art.to("cpu")
    assert isinstance(moved, VerifiedArtifact)
    dev = moved(x, keep_on_device=True)
    torch.testing.assert_close(dev.cpu(), torch.relu(x))
    # a DeviceTensor input: eager runs on its host copy
    torch.testing.assert_close(moved(dev), torch.relu(torch.relu(x)))
