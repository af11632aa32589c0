"""Reproducers: a failing stage's input saved where the user can replay it.

Every failure (a lowerkit stage or iree-compile) writes its input here, content-addressed,
and names the command that replays it; `tool` says how a shell finds that command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path


def reproducer_dir() -> Path:
    """``$LOWERKIT_REPRO_DIR``, else ``<tmp>/lowerkit-repro``."""
    d = Path(os.environ.get("LOWERKIT_REPRO_DIR") or Path(tempfile.gettempdir()) / "lowerkit-repro")
    d.mkdir(parents=True, exist_ok=True)
    return d


def save_reproducer(stage: str, content: "str | bytes", suffix: str = ".mlir") -> Path:
    """Write ``content`` (MLIR text or bytecode) as ``<stage>-<digest><suffix>``, atomically."""
    data = content.encode() if isinstance(content, str) else content
    digest = hashlib.sha256(data).hexdigest()[:12]
    path = reproducer_dir() / f"{stage}-{digest}{suffix}"
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def tool(name: str) -> str:
    """How a shell finds one of the toolchain's commands: by name when it is on PATH, else by
    its path beside this interpreter (a virtual environment that is not activated)."""
    beside = Path(sys.executable).parent / name
    if shutil.which(name) is None and beside.exists():
        return str(beside)
    return name
