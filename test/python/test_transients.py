"""Calls keep their transient memory (`lowerkit.runtime.transients`): a CPU program's twin
entry point takes IREE's intermediate tensors' memory from lowerkit, which keeps one buffer
per call in flight instead of IREE mapping (and faulting in) a fresh slab at every call."""

from __future__ import annotations

import threading

import pytest
import torch

import lowerkit
from lowerkit.iree import transients as twin
from lowerkit.runtime import transients as kept
from lowerkit.runtime.numerics import compare


@pytest.fixture
def every_program(monkeypatch):
    """The twin compiled and called whatever the sizes: the mechanism, on small programs."""
    monkeypatch.setattr(twin, "MIN_LARGEST_BYTES", 0)
    monkeypatch.setattr(kept, "MIN_SLAB_BYTES", 0)


def _mlp(width: int = 256) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.GELU(),
                               torch.nn.Linear(width, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, 16)).eval()


def test_a_cpu_program_runs_its_twin_with_one_kept_buffer(every_program):
    model, x = _mlp(), torch.randn(8, 64)
    art = lowerkit.compile(model, (x,), cache=False)
    with torch.no_grad():
        first = art(x)
        kept = first.clone()
        for scale in (2.0, -3.0, 0.5):  # later calls reuse the buffer: the first result stays
            assert compare(art(x * scale), model(x * scale)).ok
        assert compare(first, model(x)).ok and torch.equal(first, kept)
    rt, device, context, fn, storage = art.executable.loaded
    assert fn.name == twin.twin_name(art.executable.function)
    assert storage is not None and storage.size > 0 and storage.allocated == 1


def test_concurrent_calls_each_get_their_own_buffer(every_program):
    """Threads calling one program at once: a buffer shared by two calls in flight would mix
    their intermediate tensors (with one buffer handed to every call, answers went wrong)."""
    model = _mlp(512)
    inputs = [torch.randn(64, 64) * (i + 1) for i in range(4)]
    art = lowerkit.compile(model, (inputs[0],), cache=False)
    with torch.no_grad():
        wants = [model(x) for x in inputs]
        art(inputs[0])
    wrong: list[str] = []

    def calls(i: int) -> None:
        with torch.no_grad():
            for _ in range(40):
                check = compare(art(inputs[i]), wants[i])
                if not check.ok:
                    wrong.append(f"thread {i}: {check.message}")

    threads = [threading.Thread(target=calls, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, wrong[:3]
    storage = art.executable.loaded[4]
    assert 1 <= storage.allocated <= 4


def test_keep_transients_off_calls_the_plain_entry_point(monkeypatch, every_program):
    monkeypatch.setenv("LOWERKIT_KEEP_TRANSIENTS", "0")
    model, x = _mlp(), torch.randn(8, 64)
    art = lowerkit.compile(model, (x,), cache=False)
    with torch.no_grad():
        assert compare(art(x), model(x)).ok
    rt, device, context, fn, storage = art.executable.loaded
    assert fn.name == art.executable.function and storage is None


def test_the_plain_entry_point_stays_for_irees_own_tools(monkeypatch, every_program):
    """A user's IREE runtime (iree-run-module) calls ``main`` as it always did: the twin is
    an addition, and the module holds each dispatch once."""
    import iree.runtime as rt

    model, x = _mlp(), torch.randn(8, 64)
    art = lowerkit.compile(model, (x,), cache=False)
    instance = rt.VmInstance()
    module = rt.VmModule.copy_buffer(instance, art.vmfb)
    plain = module.lookup_function("main")
    kept = module.lookup_function(twin.twin_name("main"))
    assert "iree.abi.transients" not in plain.reflection["iree.abi.declaration"]
    assert "!hal.buffer {iree.abi.transients" in kept.reflection["iree.abi.declaration"]
    assert int(kept.reflection["iree.abi.transients.size.constant"]) > 0
    monkeypatch.setattr(lowerkit.api.transients, "caller_storage", lambda b: b)
    alone = lowerkit.compile(model, (x,), cache=False)
    assert alone.executable.loaded[4] is None
    assert art.compile_stats["dispatches"] == alone.compile_stats["dispatches"]


def test_a_dynamic_program_has_no_twin(every_program):
    """Its slab's size depends on the call: IREE would ask for it with a call of its own."""
    model = _mlp()
    x = torch.randn(8, 64)
    batch = torch.export.Dim("batch", min=2, max=64)
    art = lowerkit.compile(model, (x,), dynamic_shapes=({0: batch},), cache=False)
    y = torch.randn(5, 64)
    with torch.no_grad():
        assert compare(art(y), model(y)).ok
    rt, device, context, fn, storage = art.executable.loaded
    assert fn.name == "main" and storage is None


def test_caller_storage_adds_a_twin_that_calls_the_entry_point(every_program):
    from iree.compiler import ir

    text = """
    func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
      %0 = arith.addf %a, %b : tensor<4x8xf32>
      %1 = arith.mulf %0, %b : tensor<4x8xf32>
      return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
    }"""
    with ir.Context():
        source = ir.Module.parse(text)
        from lowerkit.ir import to_bytecode

        out = str(ir.Module.parse(twin.caller_storage(to_bytecode(source))))
    assert ("func.func @main$transients(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>, "
            "%arg2: !hal.buffer {iree.abi.transients})") in out
    assert "call @main(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> " in out
    dynamic = text.replace("4x8", "?x8").replace("%1 = arith.mulf", "%1 = arith.subf")
    with ir.Context():
        src = to_bytecode(ir.Module.parse(dynamic))
    assert twin.caller_storage(src) == src
    with pytest.raises(Exception):
        twin.caller_storage(b"not bytecode")


def test_by_default_only_a_slab_past_glibcs_heap_goes_through_the_twin():
    """A slab past glibc's largest mmap threshold was mapped afresh at every call; a smaller
    one comes from glibc's heap, and through the twin MobileNetV3-small's ran slower
    (benchmarks/transients.py): a small program has no twin, a large one runs through it."""
    import iree.runtime as rt

    small, x = _mlp(), torch.randn(8, 64)
    art = lowerkit.compile(small, (x,), cache=False)
    module = rt.VmModule.copy_buffer(rt.VmInstance(), art.vmfb)
    assert module.lookup_function(twin.twin_name("main")) is None
    assert art.executable.loaded[4] is None

    torch.manual_seed(0)
    wide = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(),
                               torch.nn.Linear(2048, 2048), torch.nn.GELU(),
                               torch.nn.Linear(2048, 512)).eval()
    x = torch.randn(4096, 512)
    art = lowerkit.compile(wide, (x,), cache=False)
    with torch.no_grad():
        assert compare(art(x), wide(x)).ok
    storage = art.executable.loaded[4]
    assert storage is not None and storage.size > kept.MIN_SLAB_BYTES


def test_a_twin_whose_slab_fits_glibcs_heap_is_not_called(monkeypatch):
    import iree.runtime as rt

    monkeypatch.setattr(twin, "MIN_LARGEST_BYTES", 0)  # compiled whatever its tensors
    small, x = _mlp(), torch.randn(8, 64)
    art = lowerkit.compile(small, (x,), cache=False)
    module = rt.VmModule.copy_buffer(rt.VmInstance(), art.vmfb)
    assert module.lookup_function(twin.twin_name("main")) is not None
    with torch.no_grad():
        assert compare(art(x), small(x)).ok
    rt_, device, context, fn, storage = art.executable.loaded
    assert fn.name == "main" and storage is None
