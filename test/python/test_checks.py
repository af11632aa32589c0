"""A program's own run-time checks hold in compiled code: ``torch._assert_async`` and a
``torch._check`` of a scalar read from data fail the call, as in eager, with the check's words
and the user's line (`lowerkit.ingress.checks`). torch-mlir's importer drops the first and
IREE strips the assertions the second becomes, so a call eager refuses gave an answer."""

from __future__ import annotations

import re

import pytest
import torch

import lowerkit


def positive_scale(x: torch.Tensor) -> torch.Tensor:
    torch._assert_async((x > 0).all(), "every scale must be positive")
    return torch.log(x) * 2


def at_least_two_positive(x: torch.Tensor) -> torch.Tensor:
    n = (x > 0).sum().item()
    torch._check(n >= 2)
    return x * n


def _compiled(fn, example, via: str):
    if via == "compile":
        return lowerkit.compile(fn, (example,))
    torch._dynamo.reset()
    return torch.compile(fn, backend="lowerkit", options={"strict": True})


def _fails_as_in_eager(fn, good, bad, words: str, via: str) -> None:
    good, bad = torch.tensor(good), torch.tensor(bad)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        compiled = _compiled(fn, good, via)
        assert torch.allclose(compiled(good), fn(good), rtol=1e-6)
        with pytest.raises(RuntimeError):
            fn(bad)
        with pytest.raises(lowerkit.CheckError, match=words) as caught:
            compiled(bad)
        # the check's words and the user's line, nothing of IREE's status around them
        assert re.fullmatch(r"run-time check failed: [^;]+ \(\S+test_checks\.py:\d+\); eager "
                            r"PyTorch refuses such a call too", str(caught.value)), caught.value
        assert torch.allclose(compiled(good), fn(good), rtol=1e-6)  # still usable after


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_programs_assert_async_fails_the_call_as_in_eager(via):
    _fails_as_in_eager(positive_scale, [1.0, 2.0, 3.0], [1.0, -2.0, 3.0],
                       "every scale must be positive", via)


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_check_of_a_scalar_read_from_data_fails_the_call_as_in_eager(via):
    _fails_as_in_eager(at_least_two_positive, [1.0, 2.0, -3.0], [1.0, -2.0, -3.0], "u0 >= 2",
                       via)


@pytest.mark.runs_target
@pytest.mark.parametrize("target", ["vulkan", "vulkan:llvmpipe"])
def test_a_check_holds_on_vulkan(target):
    """The check reads its condition back from the GPU; the same words come out."""
    good, bad = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, -2.0, 3.0])
    compiled = lowerkit.compile(positive_scale, (good,), target=target)
    assert torch.allclose(compiled(good), positive_scale(good), rtol=1e-6)
    with pytest.raises(lowerkit.CheckError, match="every scale must be positive"):
        compiled(bad)
