"""DumpInstrument: writes every stage's output as a numbered file in a folder.

Files are named ``NN-stage-name.mlir``. A dump only ever writes its own files: it never
deletes or empties a folder, so pointing it at a folder that holds other files is safe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .build import module_asm
from .instrument import Instrument


class DumpInstrument(Instrument):
    """Numbered dumps of every stage's output (constants elided unless ``elide=False``)."""

    def __init__(self, directory: str | Path, *, elide: bool = True, start: int = 0):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.elide = elide
        self.counter = start
        self.written: list[Path] = []

    def write(self, name: str, text: str | bytes, suffix: str = ".mlir") -> Path:
        path = self.directory / f"{self.counter:02d}-{name}{suffix}"
        self.counter += 1
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        self.written.append(path)
        return path

    def write_module(self, name: str, module: Any) -> Path:
        return self.write(name, module_asm(module, elide=self.elide, debug_info=False))

    def after_stage(self, stage, module, record) -> None:
        self.write_module(stage.name, module)
