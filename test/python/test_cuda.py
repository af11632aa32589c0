"""Models on a real CUDA GPU (sm_90 on an H100) against eager on the same GPU: numerics and
latency. Opt-in (LOWERKIT_CUDA=1 or -m cuda): CI has no GPU; CUDA compilation itself is
checked without one by test_targets.py and test/lit/targets/."""

from __future__ import annotations

import time

import pytest
import torch

import lowerkit
from lowerkit.numerics import compare
from lowerkit.runtime import usable_drivers

from models import CASES

pytestmark = pytest.mark.cuda

CUDA_CASES = ["mlp", "conv_bn_relu", "residual_block", "reductions_softmax", "sdpa",
              "embedding_layernorm", "transformer_encoder_layer", "dict_outputs"]


def _arch() -> str:
    major, minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)
    return f"sm_{major}{minor}"


@pytest.fixture(scope="module")
def target():
    if "cuda" not in usable_drivers():
        pytest.skip("IREE's cuda driver opens no device here")
    return f"cuda:{_arch()}"


def _latency(fn, *args, n=20) -> float:
    fn(*args)
    start = time.perf_counter()
    for _ in range(n):
        out = fn(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    del out
    return (time.perf_counter() - start) / n


@pytest.mark.parametrize("name", [c for c in CUDA_CASES if c in CASES])
def test_model_matches_eager_on_cuda(name, target):
    fn, args, kwargs = CASES[name]()
    art = lowerkit.compile(fn, args, kwargs, target=target)
    got = art(*args, **kwargs)
    with torch.no_grad():
        expected = fn(*args, **kwargs)
    result = compare(got, expected, rtol=1e-3, atol=1e-4)
    assert result.ok, result.message
    lat = _latency(lambda *a: art(*a, **kwargs), *args)
    eager = float("nan")
    if torch.cuda.is_available() and isinstance(fn, torch.nn.Module):
        gpu_fn = fn.to("cuda")
        gpu_args = [a.to("cuda") if isinstance(a, torch.Tensor) else a for a in args]
        with torch.no_grad():
            eager = _latency(gpu_fn, *gpu_args)
    print(f"\n{name} on {target}: lowerkit {lat * 1e3:.3f} ms, eager cuda {eager * 1e3:.3f} ms, "
          f"max error {result.max_abs_error:.3g}")


def test_chain_stays_on_cuda(target):
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh()).eval()
    x = torch.randn(8, 64)
    art = lowerkit.compile(layer, (x,), target=target)
    h = art(x, keep_on_device=True)
    for _ in range(3):
        h = art(h, keep_on_device=True)
    expected = x
    with torch.no_grad():
        for _ in range(4):
            expected = layer(expected)
    assert compare(h.cpu(), expected, rtol=1e-3, atol=1e-4).ok
