"""Artifact: a compiled program, callable with torch tensors, saved and loaded as one file.

It holds the vmfb, the target, the call signature and the record of every stage that made it.
The file format is a zip with ``module.vmfb`` and ``artifact.json``.
"""

from __future__ import annotations

import copy
import functools
import io
import math
import json
import threading
import os
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..errors import LowerkitError, TargetError
from ..ingress.signature import CallSignature
from ..ir import Build
from ..stages.stage import StageRecord
from ..target import Target
from ..iree.parameters import ParameterSlot
from . import cpu_features
from .executable import DeviceTensor, Executable, invoke_resident, wide_dtypes
from .weights import (TensorVersions, WeightBinding, archive_path, slot_dtype, slots_json,
                      state_of)

FORMAT_VERSION = 1


def draw_seed() -> torch.Tensor:
    """The seed of one call's random ops (`CallSignature.seeded`): one int64 from torch's
    default generator, so that ``torch.manual_seed`` makes the calls reproducible, each call
    draws new samples, and eager code between calls advances the same stream."""
    return torch.randint(-(1 << 63), (1 << 63) - 1, (), dtype=torch.int64)


class Artifact:
    """A compiled program. ``artifact(*args, **kwargs)`` runs it like the original model."""

    # what IREE made: per-phase times and ops, dispatches, sizes (`compiler.statistics`)
    compile_stats: dict | None = None
    # True when the compile cache returned this artifact instead of compiling (`lowerkit.cache`)
    cache_hit: bool = False
    # what the compile cache did and why ("hit: fingerprint ...", "miss: ...", "off: ...")
    cache_note: str = "off"
    # the per-shape choices its import took from the tuning database, by op (`lowerkit.tuning`)
    tuned: dict = {}
    # the LLVM CPU its CPU code was compiled for: {"cpu": name, "cpu_features": "+avx2,..."}
    cpu: dict | None = None
    # the weights the program reads at load as IREE parameters (`lowerkit.iree.parameters`);
    # empty when they are compiled in
    parameters: list[ParameterSlot] = []
    _weights: WeightBinding | None = None
    # weights compiled in by default (Vulkan) and their versions then: see watch_inlined_weights
    _inlined: TensorVersions | None = None

    def __init__(
        self,
        vmfb: bytes,
        target: Target,
        signature: CallSignature,
        records: list[StageRecord] | None = None,
        device: str | None = None,
    ):
        self.vmfb = vmfb
        self.target = target
        self.signature = signature
        self.records = list(records or [])
        # runtime driver this artifact runs on; one of the target's (see `to`)
        self.driver = target.driver_for(device)
        self._executable: Executable | None = None
        # Current values of the buffers the program mutates (signature.state), updated by
        # every call as eager PyTorch updates the module's buffers.
        self.state: list[torch.Tensor] = [torch.zeros(s.shape, dtype=s.dtype)
                                          for s in signature.state]
        self._state_lock = threading.Lock()

    @property
    def executable(self) -> Executable:
        weights = self._weights
        if weights is not None and weights.stale():  # changed in place: hoisted values too
            self._executable = None
        if self._executable is None:
            self.check_cpu()
            if self.parameters and weights is None:
                raise LowerkitError(
                    f"this artifact reads its {len(self.parameters)} weights at load and none "
                    "are bound: art.bind_weights(model) (or a state dict, or an .irpa file; "
                    "Artifact.load finds the .irpa that Artifact.save wrote beside it)")
            self._executable = Executable(self.vmfb, self.driver,
                                          widen=wide_dtypes(self.target.storage_bits),
                                          weights=weights)
        return self._executable

    def bind_weights(self, source: Any) -> "Artifact":
        """Read the weights from ``source`` at the next call: an ``nn.Module`` (its parameters
        and buffers, by reference), a state dict (names it lacks keep their tensors), or an
        ``.irpa`` archive's path. The compiled code is reused as is: another checkpoint of the
        same architecture needs no compile."""
        if not self.parameters:
            raise LowerkitError("this artifact has its weights compiled in (weights='inline'); "
                                "compile it with weights='external' to bind others")
        if isinstance(source, (str, os.PathLike)):
            binding = WeightBinding(self.parameters, archive=source, float64=self.target.float64)
        else:
            # names the source lacks keep their tensors (a state dict leaves out the
            # non-persistent buffers, which are the program's, not the checkpoint's)
            bound = dict(self._weights.tensors) if self._weights is not None else {}
            binding = WeightBinding(self.parameters, tensors={**bound, **state_of(source)},
                                    float64=self.target.float64)
        self._weights = binding
        self._executable = None
        return self

    def with_weights(self, source: Any) -> "Artifact":
        """This compiled code reading other weights (what `bind_weights` takes), as another
        artifact beside this one: each loads its own module, so both stay usable (two
        checkpoints side by side, or the repeated blocks of one model)."""
        twin = copy.copy(self)
        twin._executable = None
        twin.state = [t.clone() for t in self.state]
        twin._state_lock = threading.Lock()
        return twin.bind_weights(source)

    @functools.cached_property
    def _result_dtypes(self) -> list[torch.dtype]:
        """Every result's dtype for the caller: mutated inputs, outputs, then state."""
        inputs = self.signature.tensor_inputs
        return ([inputs[i].dtype for i in self.signature.mutated_inputs]
                + [s.dtype for s in self.signature.tensor_outputs]
                + [s.dtype for s in self.signature.state])

    def _narrowed(self, outputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Outputs that the target returned widened (`widen-narrow-io`), as their own dtype."""
        return [o.to(d) if o.dtype is not d and o.dtype.itemsize > d.itemsize else o
                for o, d in zip(outputs, self._result_dtypes)]

    def check_cpu(self) -> None:
        """Raise `TargetError` when this artifact runs on the CPU and was compiled for features
        this host lacks: IREE would load it and die of an illegal instruction."""
        if self.cpu is None or self.driver not in ("local-task", "local-sync"):
            return
        lacking = cpu_features.missing(self.cpu.get("cpu_features", ""))
        if lacking:
            raise TargetError(
                f"this artifact was compiled for CPU '{self.cpu.get('cpu')}' ({self.target.name}), "
                f"whose code may use {', '.join(lacking)}, which this host "
                f"({cpu_features.host_model()}) lacks; running it would die of an illegal "
                "instruction. Compile it here with target='cpu' (this host's CPU) or for a CPU "
                "this host covers, e.g. 'cpu:x86-64-v3'")

    def to(self, device: str) -> "Artifact":
        """The same compiled program on another of its target's devices (``cpu``, ``vulkan``,
        ``cuda``), e.g. for an artifact compiled with ``target="cpu+vulkan"``."""
        moved = Artifact(self.vmfb, self.target, self.signature, self.records, device)
        moved.compile_stats = self.compile_stats
        moved.cpu = self.cpu
        moved.parameters = self.parameters
        moved._weights = self._weights
        moved._inlined = self._inlined
        moved.state = [t.clone() for t in self.state]
        return moved

    def watch_inlined_weights(self, module: torch.nn.Module) -> None:
        """Remember the versions of ``module``'s weights, compiled into this program without
        the caller asking (Vulkan's default): a call after an in-place change raises instead
        of answering with the old weights."""
        self._inlined = TensorVersions([*module.parameters(), *module.buffers()])

    def __call__(self, *args: Any, keep_on_device: bool = False, **kwargs: Any) -> Any:
        """Run like the original model. With ``keep_on_device=True`` the outputs are
        `DeviceTensor`s left on the device, which later calls take as inputs."""
        if self._inlined is not None and self._inlined.changed():
            raise LowerkitError(
                "the model's weights changed in place since they were compiled into this "
                f"program (inline weights, the default on '{self.target.name}'): compile "
                "it again, or with weights='external' to read them at every load")
        plain = not kwargs and all(type(a) is torch.Tensor for a in args)
        if keep_on_device or (not plain and _has_device_tensor(args, kwargs)):
            if self.state:
                raise LowerkitError("a program that mutates its buffers cannot keep data on the "
                                    "device yet; call it with host tensors")
            return self._call_resident(args, kwargs, keep_on_device)
        tensors = self.signature.flatten_inputs(args, kwargs)
        mutated = self.signature.mutated_inputs
        n_outputs = len(mutated) + len(self.signature.tensor_outputs)
        executable = self.executable
        seed = [draw_seed()] if self.signature.seeded else []  # the last input, after the state
        if not self.state:
            outputs = executable.invoke(tensors + seed if seed else tensors, n_outputs)
            if executable.widen:
                outputs = self._narrowed(outputs)
        else:
            with self._state_lock:  # calls update the state one after another, as in eager
                outputs = executable.invoke(tensors + self.state + seed,
                                            n_outputs + len(self.state))
                if executable.widen:
                    outputs = self._narrowed(outputs)
                self.state = outputs[n_outputs:]
                outputs = outputs[:n_outputs]
        for index, value in zip(mutated, outputs):  # in-place changes, as eager makes them
            _tensor_leaf(args, kwargs, index).copy_(value)
        return self.signature.unflatten_outputs(
            outputs[len(mutated):], tensors if self.signature.sizes_out else None)

    @property
    def compile_rung(self) -> str:
        """Which configuration of the compile ladder built it: "fast", or a safer one after
        iree-compile rejected the faster (`lowerkit.iree.compiler.LADDER`)."""
        return (self.compile_stats or {}).get("rung", "fast")

    def _call_resident(self, args: tuple, kwargs: dict, keep_on_device: bool) -> Any:
        # The signature checks placeholders with the DeviceTensors' shapes and dtypes.
        swapped: dict[int, DeviceTensor] = {}

        def placeholder(v: Any) -> Any:
            if isinstance(v, DeviceTensor):
                p = torch.empty((), dtype=v.dtype).expand(v.shape)
                swapped[id(p)] = v
                return p
            return v

        args, kwargs = pytree.tree_map(placeholder, (tuple(args), dict(kwargs)))
        values = [swapped.get(id(t), t) for t in self.signature.flatten_inputs(args, kwargs)]
        seed = [draw_seed()] if self.signature.seeded else []
        outputs = invoke_resident(self.executable, values + seed,
                                  len(self.signature.tensor_outputs),
                                  [s.dtype for s in self.signature.tensor_outputs])
        if not keep_on_device:
            outputs = [o.cpu() for o in outputs]
        return self.signature.unflatten_outputs(outputs, values)

    # -- inspection ------------------------------------------------------------------------
    def stage_table(self, title: str | None = None):
        """A ``rich`` table of the stages: build, time, op count and the top dialects."""
        from rich.table import Table

        table = Table(title=title or f"lowerkit → {self.target.name}")
        table.add_column("#", justify="right")
        table.add_column("stage", no_wrap=True)
        table.add_column("build")
        table.add_column("time (ms)", justify="right")
        table.add_column("ops", justify="right")
        table.add_column("dialects", overflow="fold")
        stats = self.compile_stats or {}
        for i, r in enumerate(self.records):
            dialects = ", ".join(f"{d} {n}" for d, n in r.dialects().most_common(4))
            ops = str(r.op_count) if r.ops else "-"
            table.add_row(str(i), r.name, r.build.value, f"{r.seconds * 1e3:.1f}", ops, dialects)
            if r.name == "iree-compile" and stats and not stats.get("phases"):
                table.add_row("", "  └ (IREE's phases: iree_phases=True, lowerkit run --phases)",
                              "", "", "", "", style="dim")
            if r.name == "iree-compile":  # its phases, from iree-compile's phase dumps
                for p in stats.get("phases", []):
                    top = Counter()
                    for name, n in p["ops"].items():
                        top[name.split(".", 1)[0]] += n
                    table.add_row("", f"  └ {p['name']}", "", f"{p['seconds'] * 1e3:.1f}",
                                  str(sum(p["ops"].values())),
                                  ", ".join(f"{d} {n}" for d, n in top.most_common(4)), style="dim")
        lines = []
        if stats:
            lines.append(f"{stats['dispatches']} dispatches · executable binaries "
                         f"{stats['binary_bytes'] / 1024:.1f} KiB · vmfb {stats['vmfb_bytes'] / 1024:.1f} KiB"
                         f" · iree-compile rung: {self.compile_rung}")
        if self.parameters:
            size = sum(math.prod(p.shape) * slot_dtype(p).itemsize for p in self.parameters)
            derived = sum(p.derivation is not None for p in self.parameters)
            made = (f", {derived} of them made by torch from the model's tensors when bound"
                    if derived else "")
            lines.append(f"weights: {len(self.parameters)} IREE parameters, "
                         f"{size / 2**20:.1f} MiB, read at load (not in the vmfb){made}")
        if stats and stats.get("convolutions"):
            lines.append(f"dense 2-D convolutions: {stats['convolutions']}")
        if self.tuned:
            from ..tuning import CONVOLUTIONS, DISPATCH, FLAG_SET, MATMUL_TILE, program_op

            convs = {k: v for k, v in self.tuned.items()
                     if k not in (MATMUL_TILE, DISPATCH, FLAG_SET) and not program_op(k)}
            parts = [f"{len(convs)} convolution(s), " + ", ".join(
                f"{n} {c}" for c, n in sorted(Counter(convs.values()).items()))] if convs else []
            parts += [f"this program's convolutions {v}" for k, v in self.tuned.items()
                      if program_op(k) and k != CONVOLUTIONS]
            if MATMUL_TILE in self.tuned:
                parts.append(f"matmul tile {self.tuned[MATMUL_TILE]} bytes")
            if FLAG_SET in self.tuned:
                parts.append(f"flag set '{self.tuned[FLAG_SET]}'")
            if DISPATCH in self.tuned:
                parts.append(self.tuned[DISPATCH])
            lines.append(f"tuned on this CPU (lowerkit tune): {'; '.join(parts)}")
        lines.append(f"compile cache: {self.cache_note}")
        table.caption = "\n".join(lines)
        return table

    @property
    def compile_seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def __repr__(self) -> str:
        on = f", device={self.driver!r}" if self.target.drivers else ""
        return (f"Artifact(target={self.target.name!r}{on}, inputs={self.signature.describe_inputs()}, "
                f"vmfb={len(self.vmfb)} bytes)")

    # -- files -----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, weights: bool = True) -> Path:
        """One file with the code, signature and records; the weights it reads as parameters go
        into an ``.irpa`` archive beside it (`archive_path`), unless ``weights=False``."""
        path = Path(path)
        meta = {
            "format": FORMAT_VERSION,
            "target": self.target.to_json(),
            "signature": self.signature.to_json(),
            "records": [
                {"name": r.name, "build": r.build.value, "seconds": r.seconds, "ops": dict(r.ops)}
                for r in self.records
            ],
            "compile_stats": self.compile_stats,
            "cpu": self.cpu,
            "parameters": slots_json(self.parameters),
            "tuned": self.tuned,
        }
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
            z.writestr("artifact.json", json.dumps(meta, indent=1))
            z.writestr("module.vmfb", self.vmfb)
            if self.state:
                buf = io.BytesIO()
                torch.save(self.state, buf)
                z.writestr("state.pt", buf.getvalue())
        os.replace(tmp, path)
        if weights and self.parameters and self._weights is not None:
            archive = archive_path(path)
            staged = archive.with_name(archive.name + f".{os.getpid()}.tmp")
            self._weights.save_archive(staged)
            os.replace(staged, archive)
        return path

    @staticmethod
    def load(path: "str | os.PathLike | io.BytesIO", device: str | None = None,
             weights: Any = None) -> "Artifact":
        """Read a saved artifact; ``device`` picks one of its target's devices. A program that
        reads its weights as parameters binds ``weights`` (see `bind_weights`), else the
        ``.irpa`` archive beside ``path``, mapped rather than read."""
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("artifact.json"))
            vmfb = z.read("module.vmfb")
            state = (torch.load(io.BytesIO(z.read("state.pt")), weights_only=True)
                     if "state.pt" in z.namelist() else None)
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"{path}: artifact format {meta.get('format')} is not {FORMAT_VERSION}")
        records = [
            StageRecord(r["name"], Build(r["build"]), r["seconds"], Counter(r["ops"]))
            for r in meta["records"]
        ]
        art = Artifact(vmfb, Target.from_json(meta["target"]),
                       CallSignature.from_json(meta["signature"]), records, device)
        art.compile_stats = meta.get("compile_stats")
        art.cpu = meta.get("cpu")  # checked against this host when the module loads
        art.tuned = meta.get("tuned") or {}
        art.parameters = [ParameterSlot.from_json(d) for d in meta.get("parameters", [])]
        if art.parameters:
            if weights is not None:
                art.bind_weights(weights)
            elif isinstance(path, (str, os.PathLike)) and archive_path(path).exists():
                art.bind_weights(archive_path(path))
        if state is not None:
            art.state = state
        return art


def _tensor_leaf(args: tuple, kwargs: dict, index: int) -> torch.Tensor:
    leaves = [v for v in pytree.tree_leaves((tuple(args), dict(kwargs))) if isinstance(v, torch.Tensor)]
    return leaves[index]


def _has_device_tensor(args: tuple, kwargs: dict) -> bool:
    """Cheap for the usual call of plain tensors: only containers are walked."""
    for v in (*args, *kwargs.values()):
        if isinstance(v, DeviceTensor):
            return True
        if isinstance(v, (list, tuple, dict)) and any(
                isinstance(leaf, DeviceTensor) for leaf in pytree.tree_leaves(v)):
            return True
    return False
