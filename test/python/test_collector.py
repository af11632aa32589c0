"""A process's first compile holds Python's full collections off (`lowerkit.collector`): full
collections of the caller's whole heap cost a cold ResNet-18 compile 0.7 s
(benchmarks/compile_cold.py). The caller's garbage and the compile's own are still collected,
at its start and end, later compiles run as they are, and the caller's collector settings are
left as they were."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

import lowerkit
from lowerkit import collector
from lowerkit.stages.instrument import Instrument


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def no_automatic_collection(monkeypatch):
    """Only an explicit ``gc.collect`` may run while the test looks; the next compile is taken
    for the process's first."""
    monkeypatch.setattr(collector, "_first_done", False)
    saved = gc.get_threshold()
    gc.set_threshold(10**9)
    try:
        yield
    finally:
        gc.set_threshold(*saved)


class _Watch(Instrument):
    """Records the collector's state at each stage, and leaves one garbage cycle behind."""

    def __init__(self) -> None:
        self.states: list[tuple[bool, int, int]] = []
        self.garbage: list[weakref.finalize] = []

    def before_stage(self, stage, module) -> None:
        self.states.append((gc.isenabled(), gc.get_threshold()[2], gc.get_freeze_count()))
        if not self.garbage:
            self.garbage.append(weakref.finalize(_Cycle(), lambda: None))


def test_a_compile_holds_the_collector_off_and_collects_its_own_garbage(no_automatic_collection):
    assert gc.isenabled() and gc.get_freeze_count() == 0
    watch = _Watch()
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    art = lowerkit.compile(model, (x,), cache=False, instruments=[watch])
    assert watch.states, "no stage ran"
    # every stage ran with full collections held off and the caller's heap frozen
    assert all(enabled and oldest == collector.NO_FULL_COLLECTION and frozen > 0
               for enabled, oldest, frozen in watch.states), watch.states
    # the cycle a stage left is collected by the compile's own collection, not a later one
    assert not watch.garbage[0].alive
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_threshold()[2] != collector.NO_FULL_COLLECTION
    torch.testing.assert_close(art(x), model(x))


def test_only_the_first_compile_is_held(no_automatic_collection):
    with collector.held():
        assert gc.get_threshold()[2] == collector.NO_FULL_COLLECTION
    thresholds = gc.get_threshold()
    with collector.held():
        assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_the_callers_garbage_goes_before_the_compile(no_automatic_collection):
    before = weakref.finalize(_Cycle(), lambda: None)
    with collector.held():
        assert not before.alive


def test_the_start_collects_only_the_young_generations(no_automatic_collection):
    """The caller's old garbage is not worth a walk of the whole heap at the start (0.1 s of a
    cold ResNet-18 compile, which found none): it waits for Python's next full collection."""
    cycle = _Cycle()
    old = weakref.finalize(cycle, lambda: None)
    gc.collect()  # survived a full collection: now in the oldest generation
    del cycle  # garbage there
    young = weakref.finalize(_Cycle(), lambda: None)
    with collector.held():
        assert not young.alive and old.alive
    assert old.alive
    gc.collect()
    assert not old.alive


def test_held_can_be_turned_off(no_automatic_collection, monkeypatch):
    monkeypatch.setenv("LOWERKIT_HOLD_COLLECTIONS", "0")
    thresholds = gc.get_threshold()
    with collector.held():
        assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_held_leaves_a_disabled_collector_alone(no_automatic_collection):
    gc.disable()
    try:
        with collector.held():
            assert not gc.isenabled() and gc.get_freeze_count() == 0
            cycle = weakref.finalize(_Cycle(), lambda: None)
        assert not gc.isenabled()
        assert cycle.alive  # nothing collected on the caller's behalf
    finally:
        gc.enable()
        gc.collect()


def test_held_leaves_the_callers_frozen_objects_frozen(no_automatic_collection):
    gc.freeze()
    try:
        thresholds = gc.get_threshold()
        with collector.held():
            assert gc.get_threshold() == thresholds  # not held
        # still frozen (the count itself drops as frozen objects die, so it is not compared)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_nested_holds_release_once_at_the_outermost(no_automatic_collection):
    thresholds = gc.get_threshold()
    with collector.held():
        with collector.held():
            cycle = weakref.finalize(_Cycle(), lambda: None)
        assert gc.get_threshold()[2] == collector.NO_FULL_COLLECTION
        assert gc.get_freeze_count() > 0
        assert cycle.alive
    assert not cycle.alive
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_loading_holds_full_collections_off_without_freezing(no_automatic_collection):
    thresholds = gc.get_threshold()
    with collector.loading():
        assert gc.get_threshold() == (*thresholds[:2], collector.NO_FULL_COLLECTION)
        assert gc.get_freeze_count() == 0
        with collector.loading():  # nested loads release once, at the outermost
            pass
        assert gc.get_threshold()[2] == collector.NO_FULL_COLLECTION
    assert gc.get_threshold() == thresholds
    assert gc.get_count()[0] == 0  # the youngest generation collected: room before the next


def test_a_compile_begun_while_loading_takes_the_hold_over(no_automatic_collection):
    """A compile that starts inside a load (``lowerkit.compile`` loaded, then called) restores
    the caller's thresholds at its end, not the load's."""
    thresholds = gc.get_threshold()
    with collector.loading():
        with collector.held():
            assert gc.get_threshold()[2] == collector.NO_FULL_COLLECTION
            assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == thresholds
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_loading_after_the_first_compile_changes_nothing(no_automatic_collection):
    with collector.held():
        pass
    thresholds = gc.get_threshold()
    with collector.loading():
        assert gc.get_threshold() == thresholds


FIRST_COMPILE = """
import gc, json, sys
import torch, lowerkit

full = []  # where each full collection began: lowerkit's own is in lowerkit/collector.py
walked = set()  # the ids of what a full collection walks (not frozen)

def watch(phase, info):
    if phase == "start" and info["generation"] == 2:
        frame, where = sys._getframe(1), []
        while frame is not None:
            where.append(f"{frame.f_code.co_filename}:{frame.f_lineno}")
            frame = frame.f_back
        full.append(where)
        walked.update(id(o) for g in range(3) for o in gc.get_objects(g))

model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8),
                            torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LazyLinear(4)).eval()
x = torch.randn(1, 3, 8, 8)
model(x)
gc.callbacks.append(watch)
compile_ = lowerkit.compile
loaded = set(sys.modules)
art = compile_(model, (x,), cache=False)
gc.callbacks.remove(watch)
torch.testing.assert_close(art(x), model(x), rtol=1e-4, atol=1e-4 * model(x).abs().max().item())
late = sorted(set(sys.modules) - loaded)
print(json.dumps({"full": full, "loaded_in_the_compile": late,
                  "walked": [m for m in late if id(vars(sys.modules[m])) in walked]}))
"""


def test_a_first_compile_in_a_fresh_process_makes_no_full_collection_but_its_own():
    """From ``lowerkit.compile``'s first use: loading lowerkit's compile path (sympy, IREE's
    bindings) set off one or two full collections of the whole heap (0.1 s each in a cold
    ResNet-18 compile) before `collector.held` began; and what a compile that traces loads
    (Dynamo, sympy, torch-mlir's importer), loaded inside the first compile since a cache hit
    needs none of it, is frozen with what the hold froze (`collector.loaded`)."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LOWERKIT_HOLD_COLLECTIONS"}
    run = subprocess.run([sys.executable, "-c", FIRST_COMPILE], capture_output=True,
                         text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    full = found["full"]
    others = [where for where in full
              if not any(f"lowerkit{os.sep}collector.py" in place for place in where)]
    assert not others, "full collections outside lowerkit's own:\n" + "\n\n".join(
        "\n".join(where[:12]) for where in others)
    assert len(full) == 1, full  # the compile's own, at its end
    # the closing collection must not walk them (0.11 s of a cold ResNet-18 compile when it did)
    heavy = ("torch._dynamo", "torch.export", "torch._functorch.aot_autograd", "sympy",
             "torch_mlir.fx", "torch_mlir.extras.fx_importer", "iree.compiler.ir")
    late = [m for m in found["loaded_in_the_compile"] if m.startswith(heavy)]
    assert late, "the compile path was loaded before the compile: this test checks nothing"
    walked = [m for m in found["walked"] if m.startswith(heavy)]
    assert not walked, f"loaded inside the first compile and walked by its collection: {walked}"


def test_lowerkit_compile_is_held_from_its_first_line(no_automatic_collection, monkeypatch):
    """The host-CPU question, `lowerkit.compile`'s first act, imports IREE's bindings when they
    are not loaded yet: it runs inside the hold, not before it."""
    from lowerkit import api

    seen = []

    class Stop(Exception):
        pass

    def prefetch(flags):
        seen.append((gc.get_threshold()[2], gc.get_freeze_count() > 0))
        raise Stop

    monkeypatch.setattr(api, "prefetch_host_cpu", prefetch)
    with pytest.raises(Stop):
        lowerkit.compile(lambda x: x + 1, (torch.randn(3),), cache=False)
    assert seen == [(collector.NO_FULL_COLLECTION, True)]
    assert gc.get_freeze_count() == 0 and gc.get_threshold()[2] != collector.NO_FULL_COLLECTION
