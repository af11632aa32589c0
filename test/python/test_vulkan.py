"""Models on IREE's Vulkan driver (lavapipe, Mesa's software device, in CI) against eager.

Not opt-in: runs wherever the vulkan driver can open a device (scripts/setup installs
mesa-vulkan-drivers and libvulkan1), skipped with the reason elsewhere.
"""

from __future__ import annotations

import os
import tempfile

import pytest
import torch

import lowerkit
from lowerkit.numerics import compare
from lowerkit.runtime import usable_drivers

from models import CASES

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

pytestmark = pytest.mark.skipif(
    "vulkan" not in usable_drivers(),
    reason="IREE's vulkan driver opens no device here (apt-get install mesa-vulkan-drivers libvulkan1)",
)

# A fast subset of the CPU suite covering matmul, conv, norm, attention, reductions, structure.
VULKAN_CASES = ["mlp", "conv_bn_relu", "residual_block", "reductions_softmax", "sdpa",
                "embedding_layernorm", "dict_outputs", "function_kwargs"]
VULKAN_CASES = [c for c in VULKAN_CASES if c in CASES]


@pytest.mark.parametrize("name", VULKAN_CASES)
def test_model_matches_eager_on_vulkan(name):
    fn, args, kwargs = CASES[name]()
    art = lowerkit.compile(fn, args, kwargs, target="vulkan:llvmpipe")
    got = art(*args, **kwargs)
    with torch.no_grad():
        expected = fn(*args, **kwargs)
    result = compare(got, expected, rtol=1e-4, atol=1e-4)
    assert result.ok, result.message


def test_one_artifact_for_cpu_and_vulkan_picks_the_device_at_load(tmp_path):
    fn, args, kwargs = CASES["mlp"]()
    art = lowerkit.compile(fn, args, kwargs, target="cpu+vulkan")
    expected = fn(*args).detach()
    assert art.driver == "local-task"
    assert compare(art(*args), expected).ok
    on_gpu = art.to("vulkan")
    assert on_gpu.driver == "vulkan" and compare(on_gpu(*args), expected).ok
    loaded = lowerkit.Artifact.load(art.save(tmp_path / "m.lkz"), device="vulkan")
    assert loaded.driver == "vulkan" and compare(loaded(*args), expected).ok


def test_vulkan_only_artifact_refuses_cpu():
    fn, args, kwargs = CASES["mlp"]()
    art = lowerkit.compile(fn, args, kwargs, target="vulkan")
    with pytest.raises(lowerkit.TargetError, match="cannot run on 'cpu'"):
        art.to("cpu")


def test_chain_stays_on_device():
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh()).eval()
    x = torch.randn(4, 16)
    art = lowerkit.compile(layer, (x,), target="vulkan:llvmpipe")
    h = art(x, keep_on_device=True)
    assert isinstance(h, lowerkit.DeviceTensor) and h.driver == "vulkan"
    assert h.shape == (4, 16) and h.dtype == torch.float32
    for _ in range(3):
        h = art(h, keep_on_device=True)   # no host round trip between calls
    expected = x
    with torch.no_grad():
        for _ in range(4):
            expected = layer(expected)
    assert compare(h.cpu(), expected, rtol=1e-4, atol=1e-5).ok
    # a device tensor given without keep_on_device comes back as a torch tensor
    assert isinstance(art(h), torch.Tensor)
