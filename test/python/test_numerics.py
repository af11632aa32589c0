"""`lowerkit.runtime.numerics.compare`: errors judged against each output's scale, per-dtype defaults,
per-path overrides with reasons, exact ints, NaN/inf placement."""

from __future__ import annotations

import pytest
import torch

from lowerkit.runtime.numerics import DEFAULT_TOLERANCES, Tolerance, compare, tolerance_for

REASON = "test: a deliberately loose tolerance"


def _values(scale: float, n: int = 256, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g)
    return x / x.abs().max() * scale          # max |x| is exactly `scale`


def test_one_percent_error_at_scale_005_is_caught():
    expected = _values(0.05)
    actual = expected * 1.01                  # 1 % off everywhere: a wrong answer
    # the zoo's old check, atol=1e-3 (rtol=1e-4), let it through
    assert compare(actual, expected, rtol=1e-4, atol=1e-3).ok
    result = compare(actual, expected)
    assert not result.ok
    assert result.worst_leaf == "output"
    assert result.max_rel_error == pytest.approx(0.01, rel=1e-3)
    assert "0.01 of the output's scale 0.05" in result.message
    assert "tolerance 1e-05" in result.message and "float32" in result.message


def test_f32_rounding_noise_passes():
    expected = _values(0.05)
    # a sum in another order: a few ulps of each value
    actual = (expected.double() * (1 + 3e-7)).float()
    result = compare(actual, expected)
    assert result.ok, result.message
    assert 0 < result.max_rel_error < 1e-6


@pytest.mark.parametrize("scale", [1e6, 1e-8])
def test_error_is_relative_to_scale_for_large_and_tiny_outputs(scale):
    expected = _values(scale).double()
    expected[0] = scale * 1e-9                # a value that cancelled to near zero
    near_ok = expected.clone()
    near_ok += scale * 1e-13                  # 1e-13 of scale, well inside f64's 1e-12
    assert compare(near_ok, expected).ok
    # 1e-13 of the scale is far beyond elementwise rtol on the near-zero value: not our business
    assert not compare(near_ok, expected, rtol=1e-12, atol=0).ok
    off = expected.clone()
    off[5] += scale * 1e-10                   # 1e-10 of scale: beyond f64's 1e-12
    result = compare(off, expected)
    assert not result.ok
    assert result.max_rel_error == pytest.approx(1e-10, rel=1e-3)
    # f32 of the same outputs: 1e-6 of scale passes, 1e-4 does not, whatever the magnitude
    e32 = expected.float()
    assert compare(e32 + torch.where(torch.arange(256) == 7, scale * 1e-6, 0.0).float(), e32).ok
    bad32 = e32 + torch.where(torch.arange(256) == 7, scale * 1e-4, 0.0).float()
    assert not compare(bad32, e32).ok


def test_zero_output_uses_absolute_scale_one():
    z = torch.zeros(8)
    assert compare(z + 5e-6, z).ok
    assert not compare(z + 5e-5, z).ok


def test_nan_and_inf_must_sit_at_the_same_places():
    nan, inf = float("nan"), float("inf")
    expected = torch.tensor([0.5, nan, inf, -inf, 0.25])
    assert compare(expected.clone(), expected).ok
    # the infinities do not count towards the scale: 1e-6 of 0.5 is fine
    assert compare(expected + torch.tensor([5e-7, 0, 0, 0, 0]), expected).ok
    moved_nan = torch.tensor([nan, 0.5, inf, -inf, 0.25])
    r = compare(moved_nan, expected)
    assert not r.ok and "NaN at different places" in r.message and "[0]" in r.message
    flipped = torch.tensor([0.5, nan, -inf, -inf, 0.25])
    r = compare(flipped, expected)
    assert not r.ok and "inf at different places or signs" in r.message and "[2]" in r.message
    finite_for_inf = torch.tensor([0.5, nan, 3.0e38, -inf, 0.25])
    assert not compare(finite_for_inf, expected).ok
    inf_for_finite = torch.tensor([0.5, nan, inf, -inf, inf])
    assert not compare(inf_for_finite, expected).ok


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.bool])
def test_ints_and_bools_are_exact(dtype):
    if dtype == torch.bool:
        expected = torch.arange(1000) % 3 == 0
        actual = expected.clone()
        actual[10] = ~actual[10]
    else:
        expected = torch.arange(1000).to(dtype) * (100 if dtype != torch.int8 else 1)
        actual = expected.clone()
        actual[-1] += 1                       # off by one in a scale of 1e5: 1e-5 relative
    assert compare(expected.clone(), expected).ok
    for tol in (None, Tolerance(0.5, REASON)):
        r = compare(actual, expected, tol=tol)
        assert not r.ok, r.message
        assert "1 of 1000 elements differ" in r.message and "exact" in r.message


def test_mapping_names_leaves_by_path_and_others_keep_their_default():
    e = {"logits": _values(2.0), "aux": (_values(1.0, seed=1), _values(3.0, seed=2))}
    a = {"logits": e["logits"] * (1 + 1e-3), "aux": (e["aux"][0] * (1 + 1e-3), e["aux"][1])}
    loose = Tolerance(2e-3, REASON)
    r = compare(a, e, tol={"output['logits']": loose})
    assert not r.ok
    assert r.worst_leaf == "output['aux'][0]"
    assert r.message.startswith("mismatch against eager: output['aux'][0]:")
    # naming both leaves lets both through; a key naming a subtree covers its leaves
    assert compare(a, e, tol={"output['logits']": loose, "output['aux'][0]": loose}).ok
    assert compare(a, e, tol={"output['logits']": loose, "output['aux']": loose}).ok
    # the longest matching key wins
    tight = Tolerance(1e-5)
    assert not compare(a, e, tol={"output['logits']": loose, "output['aux']": loose,
                                  "output['aux'][0]": tight}).ok
    # one Tolerance covers every float leaf
    assert compare(a, e, tol=loose).ok
    with pytest.raises(ValueError, match=r"output\['logit'\].*names no output"):
        compare(a, e, tol={"output['logit']": loose})


def test_looser_than_default_needs_a_reason():
    e = _values(1.0)
    with pytest.raises(ValueError, match=r"looser than the torch.float32 default 1e-05 and gives "
                                         r"no reason"):
        compare(e, e, tol=Tolerance(1e-3))
    with pytest.raises(ValueError, match="gives no reason"):
        compare((e, e), (e, e), tol={"output[1]": Tolerance(1e-3, "  ")})
    # with a reason it is used, and the reason shows in the message of a mismatch
    r = compare(e * 1.01, e, tol=Tolerance(1e-3, "K=4096 reduction in f32"))
    assert not r.ok and "tolerance 0.001 (K=4096 reduction in f32)" in r.message
    # tighter than the default needs no reason; neither does f16's own default for an f16 leaf
    assert compare(e, e, tol=Tolerance(1e-7)).ok
    assert compare(e.half(), e.half(), tol=Tolerance(1e-3)).ok
    with pytest.raises(ValueError):
        Tolerance(float("nan"))
    with pytest.raises(ValueError):
        Tolerance(-1e-5)


def test_each_leaf_gets_its_own_dtype_default():
    e16, e32 = _values(1.0).half(), _values(1.0, seed=3)
    a16, a32 = (e16.float() * (1 + 2e-3)).half(), e32 * (1 + 2e-3)
    r = compare((a16, a32), (e16, e32))
    assert not r.ok and r.message.startswith("mismatch against eager: output[1]:")
    assert compare((a16, e32), (e16, e32)).ok
    assert tolerance_for(torch.float32) == Tolerance(1e-5, DEFAULT_TOLERANCES[torch.float32].reason)
    for dtype, t in DEFAULT_TOLERANCES.items():
        assert t.reason, dtype
        if dtype.is_floating_point:
            assert t.rel >= torch.finfo(dtype).eps
    assert tolerance_for(torch.int32).rel == 0


def test_structure_dtype_and_shape_must_match():
    x = _values(1.0)
    assert "structure differs" in compare((x,), (x, x)).message
    assert "dtype torch.float64, expected torch.float32" in compare(x.double(), x).message
    assert "shape [128, 2], expected [256]" in compare(x.reshape(128, 2), x).message
    assert compare(torch.empty(0), torch.empty(0)).ok


def test_elementwise_rtol_atol_stay_for_explicit_callers():
    e = _values(1.0)
    a = e + 5e-4
    assert compare(a, e, rtol=0, atol=1e-3).ok
    r = compare(a, e, rtol=0, atol=1e-4)
    assert not r.ok and "exceeds atol=0.0001, rtol=0" in r.message
    with pytest.raises(TypeError, match="not both"):
        compare(a, e, tol=Tolerance(1e-3, REASON), atol=1e-3)


@pytest.mark.parametrize("got,expected", [(torch.float64, torch.float32), (torch.float16, torch.float32),
                                          (torch.int32, torch.int64), (torch.bool, torch.int64),
                                          (torch.float32, torch.int64)])
def test_a_dtype_other_than_expected_fails_even_with_equal_values(got, expected):
    result = compare((torch.ones(3, dtype=got),), (torch.ones(3, dtype=expected),))
    assert not result.ok and f"output[0]: dtype {got}, expected {expected}" in result.message
