"""Artifact: a compiled program, callable with torch tensors, saved and loaded as one file.

It holds the vmfb, the target, the call signature and the record of every stage that made it.
The file format is a zip with ``module.vmfb`` and ``artifact.json``.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from .build import Build
from .pipeline import StageRecord
from .runtime import Executable
from .signature import CallSignature
from .target import Target

FORMAT_VERSION = 1


class Artifact:
    """A compiled program. ``artifact(*args, **kwargs)`` runs it like the original model."""

    def __init__(
        self,
        vmfb: bytes,
        target: Target,
        signature: CallSignature,
        records: list[StageRecord] | None = None,
    ):
        self.vmfb = vmfb
        self.target = target
        self.signature = signature
        self.records = list(records or [])
        self._executable: Executable | None = None

    @property
    def executable(self) -> Executable:
        if self._executable is None:
            self._executable = Executable(self.vmfb, self.target.driver)
        return self._executable

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors = self.signature.flatten_inputs(args, kwargs)
        outputs = self.executable.invoke(tensors, len(self.signature.tensor_outputs))
        return self.signature.unflatten_outputs(outputs)

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
        for i, r in enumerate(self.records):
            dialects = ", ".join(f"{d} {n}" for d, n in r.dialects().most_common(4))
            ops = str(r.op_count) if r.ops else "-"
            table.add_row(str(i), r.name, r.build.value, f"{r.seconds * 1e3:.1f}", ops, dialects)
        return table

    @property
    def compile_seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def __repr__(self) -> str:
        return (f"Artifact(target={self.target.name!r}, inputs={self.signature.describe_inputs()}, "
                f"vmfb={len(self.vmfb)} bytes)")

    # -- files -----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        meta = {
            "format": FORMAT_VERSION,
            "target": self.target.to_json(),
            "signature": self.signature.to_json(),
            "records": [
                {"name": r.name, "build": r.build.value, "seconds": r.seconds, "ops": dict(r.ops)}
                for r in self.records
            ],
        }
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
            z.writestr("artifact.json", json.dumps(meta, indent=1))
            z.writestr("module.vmfb", self.vmfb)
        os.replace(tmp, path)
        return path

    @staticmethod
    def load(path: str | os.PathLike) -> "Artifact":
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("artifact.json"))
            vmfb = z.read("module.vmfb")
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"{path}: artifact format {meta.get('format')} is not {FORMAT_VERSION}")
        records = [
            StageRecord(r["name"], Build(r["build"]), r["seconds"], Counter(r["ops"]))
            for r in meta["records"]
        ]
        return Artifact(vmfb, Target.from_json(meta["target"]),
                        CallSignature.from_json(meta["signature"]), records)
