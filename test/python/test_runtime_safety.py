"""Run-time safety of a compiled `Artifact`: odd inputs give the right answer or a clear error.

Non-contiguous inputs (transposed, sliced with a step, expanded), zero-size inputs, tensors on
another device, wrong shapes and dtypes, and concurrent calls from several threads.
"""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

import lowerkit
from lowerkit.runtime.numerics import compare

warnings.filterwarnings("ignore", category=FutureWarning)


def _f(x, y):
    return torch.relu(x) * 2 + y, x.sum(0)


@pytest.fixture(scope="module")
def art():
    return lowerkit.compile(_f, (torch.randn(3, 4), torch.randn(3, 4)))


def _check(art, *args):
    result = compare(art(*args), _f(*args))
    assert result.ok, result.message


def test_transposed_input(art):
    x = torch.randn(4, 3).t()
    assert not x.is_contiguous()
    _check(art, x, torch.randn(3, 4))


def test_step_sliced_input(art):
    big = torch.randn(6, 8)
    x = big[::2, ::2]
    y = big[1::2, 1::2]
    assert not x.is_contiguous() and x.shape == (3, 4)
    _check(art, x, y)


def test_expanded_and_offset_inputs(art):
    x = torch.randn(1, 4).expand(3, 4)  # stride 0
    y = torch.randn(5, 4)[2:]           # storage offset
    _check(art, x, y)


def test_channels_last_input():
    x = torch.randn(1, 3, 4, 5).to(memory_format=torch.channels_last)
    a = lowerkit.compile(lambda t: t * 3 - 1, (torch.randn(1, 3, 4, 5),))
    out = a(x)
    torch.testing.assert_close(out, x * 3 - 1)


def test_inputs_are_not_written():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    x0, y0 = x.clone(), y.clone()
    a = lowerkit.compile(_f, (x, y))
    a(x, y)
    assert torch.equal(x, x0) and torch.equal(y, y0)


def test_a_program_sorting_its_input_leaves_the_callers_tensor_alone():
    """IREE sorts in place in its argument's buffer: the caller's tensor must not be it."""
    x = torch.randn(5, 300)
    x0 = x.clone()
    a = lowerkit.compile(lambda v: torch.sort(v, dim=-1), (x,))
    for _ in range(3):  # the first calls try both CPU drivers
        values, indices = a(x)
        assert torch.equal(x, x0)
    want = torch.sort(x0, dim=-1)
    assert torch.equal(values, want.values) and torch.equal(indices, want.indices)


def test_a_result_never_aliases_an_input():
    """IREE hands an argument the program returns straight back: the result must still be
    the caller's own tensor."""
    def passthrough(x, y):
        return x, y * 2, x.reshape(-1)

    x, y = torch.randn(4, 4), torch.randn(4)
    a = lowerkit.compile(passthrough, (x, y))
    for _ in range(3):  # the first calls try both CPU drivers
        same, doubled, flat = a(x, y)
    assert torch.equal(same, x) and torch.equal(flat, x.reshape(-1))
    assert same.data_ptr() != x.data_ptr() and flat.data_ptr() != x.data_ptr()
    x0 = x.clone()
    same.add_(1.0)
    flat.mul_(0.0)
    assert torch.equal(x, x0)


def test_outputs_are_the_callers_own(art):
    """Outputs alias IREE's result buffers (no copy on host drivers): each call's are its own,
    writable, and outlive later calls."""
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    first = art(x, y)
    kept = [t.clone() for t in first]
    for _ in range(50):
        art(torch.randn(3, 4), torch.randn(3, 4))
    for got, was in zip(first, kept):
        assert torch.equal(got, was)
    first[0].add_(1.0)
    assert torch.equal(first[0], kept[0] + 1.0)
    second = art(x, y)
    assert torch.equal(second[0], kept[0]) and second[0].data_ptr() != first[0].data_ptr()


def test_outputs_of_every_dtype_outlive_the_artifact_without_warnings():
    """Outputs are read through the buffer protocol (read-only arrays): every dtype comes back
    right, writable, with no warning, and the memory stays valid once the artifact is gone."""
    import gc

    def f(x):
        return (x * 2, x > 0, (x * 10).to(torch.int64), x.to(torch.float16),
                x.to(torch.bfloat16), (x * 10).to(torch.int8), (x * 10).to(torch.uint8))

    x = torch.randn(5, 3)
    a = lowerkit.compile(f, (x,), cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = a(x)
    expected = f(x)
    del a
    gc.collect()
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and torch.equal(g, e)
    got[1][0, 0] = not got[1][0, 0]
    got[2].add_(1)
    assert torch.equal(got[2], expected[2] + 1)


def test_zero_size_inputs():
    def g(x, y):
        return x + 1, y.sum(1), torch.cat([x, x], 1)

    x, y = torch.randn(0, 3), torch.randn(2, 0)
    a = lowerkit.compile(g, (x, y))
    got = a(x, y)
    assert compare(got, g(x, y)).ok
    assert got[0].shape == (0, 3) and got[2].shape == (0, 6)
    torch.testing.assert_close(got[1], torch.zeros(2))


def test_wrong_shape_and_dtype_are_clear(art):
    with pytest.raises(lowerkit.InputError, match="shape"):
        art(torch.randn(4, 3), torch.randn(3, 4))
    with pytest.raises(lowerkit.InputError, match="dtype"):
        art(torch.randn(3, 4).double(), torch.randn(3, 4))
    with pytest.raises(lowerkit.InputError):
        art(torch.randn(3, 4))


def test_meta_device_is_a_clear_error(art):
    x = torch.empty(3, 4, device="meta")
    with pytest.raises(lowerkit.InputError, match="meta tensor"):
        art(x, torch.randn(3, 4))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for a cross-device input")
def test_cuda_input_runs_on_cpu_artifact(art):
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    out = art(x.cuda(), y.cuda())
    assert compare(out, _f(x, y)).ok


def test_unknown_device_is_a_clear_error(monkeypatch):
    from lowerkit.iree import compiler

    def refuse(*a, **k):
        raise AssertionError("compiled before the device name was checked")

    monkeypatch.setattr(compiler, "compile_to_vmfb", refuse)
    args = (torch.randn(3, 4), torch.randn(3, 4))
    with pytest.raises(lowerkit.TargetError) as info:
        lowerkit.compile(_f, args, device="no-such-device", cache=False)
    assert str(info.value) == (
        "unknown device 'no-such-device'; a device is one of cpu, local, vulkan, cuda or an IREE "
        "driver (local-task, local-sync, vulkan, cuda, hip); this artifact runs on: cpu")
    # a real device the artifact was not compiled for says how to add it
    with pytest.raises(lowerkit.TargetError) as info:
        lowerkit.compile(_f, args, device="vulkan", cache=False)
    assert str(info.value) == (
        "this artifact was compiled for 'cpu' and cannot run on 'vulkan'; it runs on: cpu. "
        "Compile with target='cpu+vulkan' to add it")


def test_concurrent_calls_from_four_threads(art):
    inputs = [(torch.randn(3, 4), torch.randn(3, 4)) for _ in range(4)]
    errors: list[BaseException] = []
    results: dict[int, list] = {i: [] for i in range(4)}
    start = threading.Barrier(4)

    def worker(i):
        try:
            start.wait()
            for _ in range(25):
                results[i].append(art(*inputs[i]))
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for i in range(4):
        assert len(results[i]) == 25
        expected = _f(*inputs[i])
        for got in results[i]:
            assert compare(got, expected).ok


def test_concurrent_first_calls_load_once():
    """Threads racing on the first call (which loads the module) all get right answers."""
    a = lowerkit.compile(_f, (torch.randn(3, 4), torch.randn(3, 4)))
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    outs, errors = [], []
    start = threading.Barrier(4)

    def worker():
        try:
            start.wait()
            outs.append(a(x, y))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(outs) == 4 and all(compare(o, _f(x, y)).ok for o in outs)


# local-task is what "auto" starts on; forcing it is the slow tier's (22 s: a child process)
@pytest.mark.parametrize("driver", ["auto", pytest.param("local-task", marks=pytest.mark.slow)])
def test_outputs_alive_at_exit_do_not_crash_the_interpreter(tmp_path, driver):
    # CPU outputs are tensors over IREE's buffers; a module-level one is
    # released in the interpreter's final teardown, after lowerkit's atexit dropped the
    # device: SIGSEGV at exit, until the CPU devices were kept for the process's life.
    import os
    import subprocess
    import sys

    script = tmp_path / "outputs_at_exit.py"
    script.write_text(
        "import torch, lowerkit\n"
        "a = torch.ones(3, 4)\n"
        "art = lowerkit.compile(lambda a: (a * 2,), (a,), cache=False)\n"
        "y = art(a)[0]\n"
        "print(y[0].tolist())\n")
    env = dict(os.environ, LOWERKIT_CPU_DRIVER=driver)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "[2.0, 2.0, 2.0, 2.0]" in run.stdout
    assert "leaked" not in run.stderr  # the devices kept on purpose are not reported
