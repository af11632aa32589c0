"""DumpInstrument: writes every stage's output as a numbered file in a folder.

Files are named ``NN-stage-name.mlir``: the FX graph (``.py``), every pipeline stage, each
IREE compilation phase (``NN-iree-PHASE.mlir``), the executables' sources and target code
(``NN-iree-executables/``) and the vmfb. ``index.json`` and ``index.html`` (see
`lowerkit.stages.dump_index`) describe them. A dump only ever writes its own files: it never deletes or
empties a folder, so pointing it at a folder that holds other files is safe.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ir import module_asm
from . import dump_graph
from .instrument import Instrument
from .stage import pass_manager_hook

IREE_PASSES = "iree-compile"  # ``print_passes_of`` value that prints every pass of IREE


def fx_op_histogram(exported: Any) -> Counter:
    """The ATen ops an exported FX graph calls, named like ``aten.linear.default``."""
    return Counter(str(n.target) for n in exported.graph.nodes if n.op == "call_function")


@dataclass
class DumpEntry:
    """One numbered thing in a dump: a file (or a folder of executables) and what it holds."""

    number: int
    name: str
    path: Path
    kind: str  # fx-graph, stage, phase, executables, vmfb, passes, error
    build: str | None = None
    seconds: float | None = None
    ops: Counter = field(default_factory=Counter)
    files: list[dict] = field(default_factory=list)  # executables: name, dispatch, kind, size
    graph: Path | None = None  # the stage as Model Explorer graph JSON (`dump_graph`)
    graph_ids: list[str] = field(default_factory=list)  # its graphs, the largest first

    @property
    def size(self) -> int:
        if self.path.is_dir():
            return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        return self.path.stat().st_size if self.path.exists() else 0


class DumpInstrument(Instrument):
    """Numbered dumps of every stage's output (constants elided unless ``elide=False``).

    ``print_passes_of`` names one stage (or ``"iree-compile"``) whose IR is also written
    after every pass, into ``NN-STAGE.passes/``. Each stage's ``.mlir`` keeps its locations
    (as ``#loc`` aliases at the end of the file) and, unless ``graphs=False``, gets a
    ``.graph.json`` beside it for Model Explorer (`lowerkit.stages.dump_graph`).
    """

    def __init__(self, directory: str | os.PathLike, *, elide: bool = True,
                 print_passes_of: str | None = None, start: int = 0, graphs: bool = True):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.elide = elide
        self.graphs = graphs
        self._last_graph: tuple[str, dict] | None = None  # (stage text, its graph)
        self.print_passes_of = print_passes_of
        self.counter = start
        self.entries: list[DumpEntry] = []
        self._hook_token = None

    @property
    def written(self) -> list[Path]:
        return [e.path for e in self.entries]

    def _next(self, name: str, suffix: str) -> tuple[int, Path]:
        number = self.counter
        self.counter += 1
        return number, self.directory / f"{number:02d}-{name}{suffix}"

    def write(self, name: str, text: str | bytes, suffix: str = ".mlir", *,
              kind: str = "stage", **info: Any) -> Path:
        number, path = self._next(name, suffix)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        self.entries.append(DumpEntry(number, name, path, kind, **info))
        return path

    def write_module(self, name: str, module: Any, record: Any = None) -> Path:
        info = {}
        if record is not None:
            info = {"build": record.build.value, "seconds": record.seconds, "ops": Counter(record.ops)}
        path = self.write(name, module_asm(module, elide=self.elide, debug_info=True), **info)
        self.add_graph(self.entries[-1])
        return path

    def add_graph(self, entry: DumpEntry, failed: tuple = ()) -> None:
        """Write ``entry``'s graph JSON; a stage Model Explorer's graph cannot be made of is
        said in a warning, never a failed dump."""
        if not self.graphs or entry.path.suffix != ".mlir":
            return
        try:
            text = entry.path.read_text()
            if not failed and self._last_graph is not None and self._last_graph[0] == text:
                # a stage that changed nothing: the graph before it, under its own name
                collection = dict(self._last_graph[1], label=entry.path.stem)
                dump_graph.graph_path(entry.path).write_text(json.dumps(collection, separators=(",", ":")))
            else:
                collection = dump_graph.write_graph(entry.path, failed=failed)
            if not failed:
                self._last_graph = (text, collection)
            entry.graph = dump_graph.graph_path(entry.path)
            entry.graph_ids = dump_graph.graph_ids(collection)
        except Exception as e:  # noqa: BLE001 - a view is never worth a failed compile
            import warnings

            warnings.warn(f"lowerkit dump: no graph of {entry.path.name}: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}", stacklevel=2)

    # -- pipeline stages -------------------------------------------------------------------
    def before_stage(self, stage, module) -> None:
        if stage.name != self.print_passes_of:
            return
        folder = self.directory / f"{self.counter:02d}-{stage.name}.passes"
        limit = 16 if self.elide else None

        def enable_printing(s, pm):
            if s is stage:
                folder.mkdir(exist_ok=True)
                pm.enable_ir_printing(print_after_all=True, large_elements_limit=limit,
                                      tree_printing_dir_path=str(folder))

        self._hook_token = pass_manager_hook.set(enable_printing)

    def _end_hook(self) -> None:
        if self._hook_token is not None:
            pass_manager_hook.reset(self._hook_token)
            self._hook_token = None

    def after_stage(self, stage, module, record) -> None:
        self._end_hook()
        passes = self.directory / f"{self.counter:02d}-{stage.name}.passes"
        self.write_module(stage.name, module, record)
        if stage.name == self.print_passes_of and passes.is_dir():
            self.entries.append(DumpEntry(self.entries[-1].number, f"{stage.name} passes",
                                          passes, "passes"))

    def stage_failed(self, stage, error) -> None:
        self._end_hook()
        self.write(f"{stage.name}.error", str(error) + "\n", ".txt", kind="error")
        self.add_failed_graph(error)

    def add_failed_graph(self, error: Any) -> None:
        """The failed stage's input (the last stage written) drawn again with the ops the
        error names marked: ``NN-STAGE.error.graph.json`` beside the error's text."""
        inputs = [e for e in self.entries[:-1] if e.kind in ("stage", "phase")]
        failed = tuple(dump_graph.FailedOp(d.op, d.location, d.message)
                       for d in getattr(error, "diagnostics", None) or [] if d.op or d.location)
        if not inputs or not failed or not self.graphs:
            return
        entry = self.entries[-1]
        out = entry.path.with_name(entry.path.stem + ".graph.json")
        try:
            collection = dump_graph.write_graph(inputs[-1].path, out, failed=failed)
            entry.graph, entry.graph_ids = out, dump_graph.graph_ids(collection)
        except Exception as e:  # noqa: BLE001
            import warnings

            warnings.warn(f"lowerkit dump: no graph of the failed stage: {type(e).__name__}",
                          stacklevel=2)

    # -- IREE ------------------------------------------------------------------------------
    def iree_options(self) -> dict:
        """Keyword arguments for `compiler.compile_to_vmfb` that keep IREE's files for the dump."""
        staging = self.directory / f".lowerkit-staging-{os.getpid()}"
        opts = {"phases_dir": staging / "phases", "executables_dir": staging / "executables",
                "elide": self.elide, "debug_info": True}
        if self.print_passes_of == IREE_PASSES:
            opts["print_passes_dir"] = self.directory / f"{self.counter:02d}-{IREE_PASSES}.passes"
        return opts

    def add_compile(self, result: Any) -> None:
        """Number IREE's phases and executable files, after a successful compilation."""
        passes = self.iree_options().get("print_passes_dir")
        if passes is not None and Path(passes).is_dir():
            self.entries.append(DumpEntry(self.counter, "iree-compile passes", Path(passes), "passes"))
        for phase in result.phases:
            number, path = self._next(f"iree-{phase.name}", ".mlir")
            if phase.path is not None:
                shutil.move(phase.path, path)
                phase.path = path
            self.entries.append(DumpEntry(number, f"iree-{phase.name}", path, "phase", "iree",
                                          phase.seconds, Counter(phase.ops)))
            if phase.path is not None:
                self.add_graph(self.entries[-1])
        number, folder = self._next("iree-executables", "")
        folder.mkdir(exist_ok=True)
        files = []
        for f in result.executables:
            if f.path is not None:
                shutil.move(f.path, folder / f.name)
                f.path = folder / f.name
            files.append({"name": f.name, "dispatch": f.dispatch, "kind": f.kind, "size": f.size})
            if f.name.endswith(".spv") and shutil.which("spirv-dis") and f.path is not None:
                asm = f.path.with_suffix(".spvasm")
                subprocess.run(["spirv-dis", str(f.path), "-o", str(asm)], check=False)
                if asm.exists():
                    files.append({"name": asm.name, "dispatch": f.dispatch, "kind": "spirv",
                                  "size": asm.stat().st_size})
        self.entries.append(DumpEntry(number, "iree-executables", folder, "executables", "iree",
                                      files=files))
        self.write("module", result.vmfb, ".vmfb", kind="vmfb", build="iree")
        self.clean_staging()

    def clean_staging(self) -> None:
        """Remove the staging folder this dump made (only empty folders of its own)."""
        staging = self.directory / f".lowerkit-staging-{os.getpid()}"
        for sub in (staging / "phases", staging / "executables", staging):
            try:
                sub.rmdir()
            except OSError:
                pass
