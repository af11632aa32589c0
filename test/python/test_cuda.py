"""Models on a real CUDA GPU against eager PyTorch. Opt-in (LOWERKIT_CUDA=1 or -m cuda): CI has
no GPU; CUDA compilation itself is checked without one by test_targets.py and test/lit/targets/.

The target is the GPU's own architecture (``cuda:sm_NN``), read from CUDA device 0, the one
IREE's cuda driver opens by default. What each test measures:

* ``test_model_matches_eager_on_cuda``: lowerkit's outputs computed on the GPU against eager's
  (on the GPU where torch has CUDA, else on the CPU), and lowerkit's mean call time on the GPU,
  inputs and outputs crossing from and to host memory (printed).
* ``test_latency_against_eager_on_the_same_gpu``: eager's mean call time on the same GPU beside
  lowerkit's (printed), and the numerics there. It needs a CUDA build of torch; under the
  pinned CPU build (torch 2.13.0+cpu) eager cannot run on a GPU and the test SKIPs saying so.
"""

from __future__ import annotations

import ctypes
import time

import pytest
import torch

import lowerkit
from lowerkit.runtime.numerics import compare
from lowerkit.runtime.executable import usable_drivers

from models import CASES

CUDA_CASES = ["mlp", "conv_bn_relu", "residual_block", "reductions_softmax", "sdpa",
              "embedding_layernorm", "transformer_encoder_layer", "dict_outputs"]
CUDA_CASES = [c for c in CUDA_CASES if c in CASES]

# cuda.h: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR
_CC_MAJOR, _CC_MINOR = 75, 76


def device_arch(libcuda: str = "libcuda.so.1") -> str:
    """``sm_NN`` of CUDA device 0, asked of libcuda (the library IREE's cuda driver loads), so
    that it is known with a CPU-only torch too."""
    lib = ctypes.CDLL(libcuda)
    device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    for name, status in (
        ("cuInit", lambda: lib.cuInit(0)),
        ("cuDeviceGet", lambda: lib.cuDeviceGet(ctypes.byref(device), 0)),
        ("cuDeviceGetAttribute", lambda: lib.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, device)),
        ("cuDeviceGetAttribute", lambda: lib.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, device)),
    ):
        code = status()
        if code != 0:
            raise RuntimeError(f"{libcuda}: {name} returned CUDA error {code}")
    return f"sm_{major.value}{minor.value}"


@pytest.fixture(scope="module")
def target():
    if "cuda" not in usable_drivers():
        pytest.skip("IREE's cuda driver opens no device here (no NVIDIA GPU or no libcuda)")
    arch = device_arch()
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        assert arch == f"sm_{major}{minor}", (arch, major, minor)
    return lowerkit.Target.parse(f"cuda:{arch}").name  # TargetError if lowerkit has no such target


def _mean_seconds(fn, *args, n=20, sync=lambda: None) -> float:
    fn(*args)  # warm-up: the first call loads the executables
    sync()
    start = time.perf_counter()
    for _ in range(n):
        fn(*args)
    sync()
    return (time.perf_counter() - start) / n


@pytest.mark.cuda
@pytest.mark.parametrize("name", CUDA_CASES)
def test_model_matches_eager_on_cuda(name, target):
    fn, args, kwargs = CASES[name]()
    art = lowerkit.compile(fn, args, kwargs, target=target)
    got = art(*args, **kwargs)
    with torch.no_grad():
        expected = fn(*args, **kwargs)
    result = compare(got, expected, rtol=1e-3, atol=1e-4)
    assert result.ok, result.message
    seconds = _mean_seconds(lambda *a: art(*a, **kwargs), *args)
    print(f"\n{name} on {target}: lowerkit {seconds * 1e3:.3f} ms per call (host tensors in and "
          f"out), max error against eager {result.max_abs_error:.3g}")


@pytest.mark.cuda
@pytest.mark.parametrize("name", CUDA_CASES)
def test_latency_against_eager_on_the_same_gpu(name, target):
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no CUDA: eager cannot run on the GPU, so "
                    "there is no eager GPU time to compare with")
    fn, args, kwargs = CASES[name]()
    art = lowerkit.compile(fn, args, kwargs, target=target)
    on_gpu = lambda v: v.to("cuda") if isinstance(v, (torch.Tensor, torch.nn.Module)) else v  # noqa: E731
    gpu_fn, gpu_args = on_gpu(fn), [on_gpu(a) for a in args]
    gpu_kwargs = {k: on_gpu(v) for k, v in kwargs.items()}
    with torch.no_grad():
        expected = gpu_fn(*gpu_args, **gpu_kwargs)
        eager = _mean_seconds(lambda *a: gpu_fn(*a, **gpu_kwargs), *gpu_args,
                              sync=torch.cuda.synchronize)
    result = compare(art(*args, **kwargs), torch.utils._pytree.tree_map(
        lambda v: v.cpu() if isinstance(v, torch.Tensor) else v, expected), rtol=1e-3, atol=1e-4)
    assert result.ok, result.message
    mine = _mean_seconds(lambda *a: art(*a, **kwargs), *args)
    print(f"\n{name} on {target}: lowerkit {mine * 1e3:.3f} ms, eager on the same GPU "
          f"{eager * 1e3:.3f} ms (both host tensors in; eager's outputs stay on the GPU)")


@pytest.mark.cuda
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


def test_device_arch_reads_the_compute_capability(tmp_path):
    """Without a GPU: a stand-in libcuda reporting compute capability 8.6 on device 0 gives
    ``sm_86``, and a failing call is an error naming it, never a guessed architecture."""
    import subprocess

    source = tmp_path / "fake_cuda.c"
    source.write_text("""
        static int failing = 0;
        int cuInit(unsigned flags) { return failing; }
        int cuDeviceGet(int *device, int ordinal) { *device = 40 + ordinal; return 0; }
        int cuDeviceGetAttribute(int *value, int attribute, int device) {
            if (device != 40) return 101;              /* CUDA_ERROR_INVALID_DEVICE */
            if (attribute == 75) { *value = 8; return 0; }
            if (attribute == 76) { *value = 6; return 0; }
            return 1;
        }
        void make_init_fail(void) { failing = 3; }  /* CUDA_ERROR_NOT_INITIALIZED */
    """)
    library = tmp_path / "libfakecuda.so"
    try:
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"no C compiler to build a stand-in libcuda: {e}")
    assert device_arch(str(library)) == "sm_86"
    ctypes.CDLL(str(library)).make_init_fail()
    with pytest.raises(RuntimeError, match="cuInit returned CUDA error 3"):
        device_arch(str(library))
