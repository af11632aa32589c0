"""Where a compiled program's time goes, dispatch by dispatch (``lowerkit profile``, `profile`).

A whole call's time says that a model is slow, not where. IREE 3.13's runtime records every
dispatch a device runs (HAL-native profiling: ``host-execution`` events on the CPU drivers,
device-timestamped ``dispatch-events`` elsewhere), and ``iree-profile`` sums them per
dispatch. IREE's Python bindings do not expose the profile sink, so the artifact's own vmfb and
weights archive go to ``iree-benchmark-module`` with the call's real inputs, and lowerkit reads
``iree-profile``'s per-dispatch rows.

Timed inside the program, not one dispatch alone: on Whisper's encoder the dispatches dumped
and timed alone (``--iree-hal-dump-executable-benchmarks-to``) summed to 122 ms of a 180 ms
call, and two of them did not compile alone at all; inside the call the attention dispatch
took 52 ms where alone it took 39.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from ..errors import LowerkitError
from ..runtime import worker_stack
from ..runtime.yielding_wait import batch_child

# "BM_main/process_time/real_time_median   177 ms   338 ms   5 items_per_second=..."
_CALL = re.compile(r"^BM_\S+?/\S*real_time(?:_median)?\s+([\d.]+) (ns|us|ms|s)\b")
_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
# the profiling families each runtime driver records dispatch times with
_MODE = {"local-task": "host-execution", "local-sync": "host-execution"}
_DEFAULT_MODE = "dispatch-events"
MAX_CALLS = 10000
# calls made before the timed ones while the artifact still tries its CPU drivers (five a driver)
SETTLING_CALLS = 12


@dataclass
class DispatchTime:
    """One dispatch inside the program: its export name (IREE names it after its root op and
    shape), the milliseconds it took per call, and how many times a call runs it."""

    name: str
    ms_per_call: float
    runs_per_call: float


@dataclass
class Profile:
    """A program's dispatches, slowest first, with the call they were measured in."""

    target: str
    driver: str
    rung: str
    calls: int
    call_ms: float          # iree-benchmark-module's call, with profiling on
    lowerkit_call_ms: float  # the artifact called from Python, profiling off
    dispatches: list[DispatchTime]
    notes: list[str] = field(default_factory=list)
    # command-buffer executions a call: between two, IREE returns to the host (a
    # `util.optimization_barrier` makes one; `passes._source_fence.COMPUTE_BARRIER` does not);
    # 0 where the driver records no host execution (Vulkan, CUDA)
    executions_per_call: float = 0.0

    @property
    def dispatch_ms(self) -> float:
        return sum(d.ms_per_call for d in self.dispatches)

    def share(self, d: DispatchTime) -> float:
        """The dispatch's part of the call (iree-benchmark-module's)."""
        return d.ms_per_call / self.call_ms if self.call_ms else 0.0

    def by_kind(self) -> dict[str, float]:
        """Milliseconds per call for each kind of root op (``matmul_like``, ``attention``...)."""
        out: dict[str, float] = {}
        for d in self.dispatches:
            out[kind_of(d.name)] = out.get(kind_of(d.name), 0.0) + d.ms_per_call
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def to_json(self) -> dict:
        return {"target": self.target, "driver": self.driver, "rung": self.rung,
                "calls": self.calls, "call_ms": self.call_ms,
                "lowerkit_call_ms": self.lowerkit_call_ms, "dispatch_ms": self.dispatch_ms,
                "executions_per_call": self.executions_per_call,
                "by_kind": self.by_kind(),
                "dispatches": [{"name": d.name, "ms_per_call": d.ms_per_call,
                                "runs_per_call": d.runs_per_call} for d in self.dispatches],
                "notes": self.notes}

    def table(self, top: int | None = 20, title: str | None = None):
        from rich.table import Table

        t = Table(title=title or f"dispatches inside a call on {self.target}")
        for col, just in (("dispatch", "left"), ("runs", "right"), ("ms a call", "right"),
                          ("share", "right")):
            t.add_column(col, justify=just)
        shown = self.dispatches if top is None else self.dispatches[:top]
        for d in shown:
            t.add_row(d.name, f"{d.runs_per_call:g}", f"{d.ms_per_call:.4g}",
                      f"{100 * self.share(d):.1f} %")
        rest = self.dispatches[len(shown):]
        if rest:
            ms = sum(d.ms_per_call for d in rest)
            t.add_row(f"[dim]{len(rest)} more", "", f"{ms:.4g}", f"{100 * ms / self.call_ms:.1f} %")
        t.caption = (f"a call: {self.call_ms:.4g} ms in iree-benchmark-module ({self.calls} calls, "
                     f"profiling on), {self.lowerkit_call_ms:.4g} ms from Python; dispatches "
                     f"{self.dispatch_ms:.4g} ms"
                     + (f" in {self.executions_per_call:g} execution(s)" if self.executions_per_call
                        else "") + " · "
                     f"{self.driver} · rung: {self.rung}")
        return t


def kind_of(name: str) -> str:
    """``main_dispatch_3_matmul_like_4x1500x16_f32`` -> ``matmul_like``;
    ``_encoding_0_encode_4x1500x16xf32_to_...`` -> ``encode``."""
    body = re.sub(r"^\w*?_dispatch_\d+_|^_encoding_\d+_", "", name)
    words = []
    for word in body.split("_"):
        if not word or word[0].isdigit():
            break
        words.append(word)
    return "_".join(words) or name


def runtime_tool(name: str) -> str:
    """The path of one of IREE's runtime tools (iree-benchmark-module, iree-profile)."""
    tool = Path(sys.executable).with_name(name)
    if tool.exists():
        return str(tool)
    from iree import runtime

    found = Path(runtime.__file__).parent.parent / "_runtime_libs" / name
    if not found.exists():
        raise LowerkitError(f"lowerkit profile needs IREE's {name} (iree-base-runtime); not found")
    return str(found)


def _inputs(art: Any, args: tuple, kwargs: dict, folder: Path) -> list[str]:
    """``--input=`` flags for one call: each tensor as an .npy file, each size as a number."""
    from ..runtime.artifact import draw_seed

    tensors = art.signature.flatten_inputs(args, kwargs)
    tensors += list(art.state or [])
    if art.signature.seeded:
        tensors.append(draw_seed())
    widen = art.executable.widen
    flags = []
    for i, t in enumerate(tensors):
        if type(t) is int:
            flags.append(f"--input={t}")
            continue
        t = t.detach()
        if widen and t.dtype in widen:
            t = t.to(widen[t.dtype])
        if t.dtype is torch.bfloat16:
            raise LowerkitError("lowerkit profile: a bfloat16 input cannot be handed to "
                                "iree-benchmark-module as .npy; profile a float32 twin")
        path = folder / f"input{i}.npy"
        np.save(path, t.contiguous().numpy())
        flags.append(f"--input=@{path}")
    return flags


def _profile_rows(command: str, bundle: Path) -> list[dict]:
    """``iree-profile COMMAND --format=jsonl BUNDLE``, one dict a row."""
    text = subprocess.run([runtime_tool("iree-profile"), command, "--format=jsonl", str(bundle)],
                          capture_output=True, text=True, timeout=300, check=True).stdout
    return [json.loads(line) for line in text.splitlines()]


def _executions(bundle: Path) -> int:
    """Command-buffer executions the profile recorded (host-side queue operations)."""
    return sum(row.get("sample_count", 0) for row in _profile_rows("statistics", bundle)
               if row.get("row_type") == "host_execution_queue_operation"
               and row.get("event_name") == "execute")


def _dispatch_rows(bundle: Path) -> list[dict]:
    return [row for row in _profile_rows("dispatch", bundle)
            if row.get("type") in ("host_dispatch_group", "dispatch_group")]


def profile_artifact(art: Any, args: Any = (), kwargs: dict | None = None, *, calls: int = 5,
                     seconds: float = 1.0, driver: str | None = None) -> Profile:
    """Run ``art`` on ``args`` under IREE's runtime profiling, ``calls`` times or for about
    ``seconds`` if that is more calls (a few calls of a millisecond program are noise on a
    shared machine), and divide each dispatch's summed time by the calls."""
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = kwargs or {}
    driver = driver or art.executable.driver
    art(*args, **kwargs)  # loads the module and binds the weights: both must work first
    for _ in range(SETTLING_CALLS):  # the local-task/local-sync trials are not the call timed
        if art.executable.settled:
            break
        art(*args, **kwargs)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        art(*args, **kwargs)
        times.append((time.perf_counter() - start) * 1e3)
    calls = max(calls, min(MAX_CALLS, math.ceil(seconds * 1e3 / max(statistics.median(times), 1e-3))))
    with tempfile.TemporaryDirectory(prefix="lowerkit-profile-") as scratch:
        folder = Path(scratch)
        saved = art.save(folder / "program.lowerkit")
        with zipfile.ZipFile(saved) as z:
            (folder / "module.vmfb").write_bytes(z.read("module.vmfb"))
        archive = saved.with_suffix(".irpa")
        cmd = [runtime_tool("iree-benchmark-module"), f"--module={folder / 'module.vmfb'}",
               f"--device={driver}", f"--function={art.executable.function}",
               *_inputs(art, args, kwargs, folder),
               f"--device_profiling_mode={_MODE.get(driver, _DEFAULT_MODE)}",
               f"--device_profiling_output={folder / 'call.ireeprof'}",
               f"--benchmark_min_time={calls}x", "--benchmark_repetitions=1"]
        if driver == "local-task":  # the stack lowerkit's own workers have (data-tiled code)
            cmd.append(f"{worker_stack.FLAG}={worker_stack.WORKER_STACK_BYTES}")
        if archive.exists():
            from ..iree.parameters import SCOPE

            cmd.insert(2, f"--parameters={SCOPE}={archive}")
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800,
                             env={**os.environ, "IREE_TRACE": "0"},
                             preexec_fn=batch_child if os.name == "posix" else None)
        if run.returncode:
            last = (run.stderr.strip() or run.stdout.strip()).splitlines()[-1:] or ["no output"]
            raise LowerkitError(f"lowerkit profile: iree-benchmark-module failed on the "
                                f"artifact ({driver}): {last[0][:400]}")
        call_ms = next((float(m.group(1)) * _UNIT_MS[m.group(2)]
                        for m in map(_CALL.match, run.stdout.splitlines()) if m), float("nan"))
        rows = _dispatch_rows(folder / "call.ireeprof")
        executions = _executions(folder / "call.ireeprof")
    dispatches = [DispatchTime(r["key"], r["total_ns"] / 1e6 / calls, r["count"] / calls)
                  for r in rows if not r["key"].startswith("_initializer")]
    dispatches.sort(key=lambda d: -d.ms_per_call)
    notes = []
    if not dispatches:
        notes.append(f"IREE recorded no dispatch time on {driver}")
    return Profile(art.target.name, driver, art.compile_rung, calls, call_ms,
                   statistics.median(times), dispatches, notes, executions / calls)


def profile(fn: Callable, args: Any = (), kwargs: dict | None = None, *, target: Any = "cpu",
            calls: int = 5, seconds: float = 1.0, **compile_options) -> Profile:
    """Compile ``fn`` for ``target`` (`lowerkit.compile`, with ``compile_options``) and
    `profile_artifact` it on ``args``."""
    from ..api import compile as compile_

    if not isinstance(args, tuple):
        args = (args,)
    art = compile_(fn, args, kwargs or {}, target=target, **compile_options)
    return profile_artifact(art, args, kwargs, calls=calls, seconds=seconds)
