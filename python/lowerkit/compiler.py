"""IREE compilation of a lowered module to a vmfb, in a child ``iree-compile`` process.

A child process keeps a crash inside IREE (an abort or a segfault) from killing the user's
interpreter, gives the exact command to replay a failure, and exposes IREE's own phases
(``--compile-to``, ``--dump-compilation-phases-to``).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import OpDiagnostic, StageError
from .stage import reproducer_dir
from .target import Target

STAGE = "iree-compile"

# IREE's compilation phases, in order (iree-compile --compile-to=...).
PHASES = (
    "input", "abi", "preprocessing", "global-optimization", "dispatch-creation", "flow",
    "stream", "executable-sources", "executable-configurations", "executable-targets",
    "hal", "vm",
)

_DIAG = re.compile(r"^(?P<loc>[^\n]*?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)
_OP = re.compile(r"^'([\w$.]+)' op |operation '([\w$.]+)'")


def iree_compile_tool() -> str:
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


@dataclass
class CompileResult:
    vmfb: bytes
    seconds: float
    command: list[str]


def compile_to_vmfb(
    bytecode: bytes,
    target: Target,
    extra_flags: list[str] | tuple[str, ...] = (),
    *,
    phases_dir: str | os.PathLike | None = None,
    timeout: float | None = None,
) -> CompileResult:
    """Compile MLIR bytecode (linalg on tensors) for ``target``; raise StageError on failure."""
    with tempfile.TemporaryDirectory(prefix="lowerkit-") as tmp:
        src = Path(tmp) / "input.mlirbc"
        out = Path(tmp) / "module.vmfb"
        src.write_bytes(bytecode)
        flags = target.compile_flags() + list(extra_flags)
        if phases_dir is not None:
            flags.append(f"--dump-compilation-phases-to={phases_dir}")
        cmd = [iree_compile_tool(), str(src), *flags, "-o", str(out)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise _failure(bytecode, cmd, f"timed out after {timeout}s", "") from None
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            if proc.returncode < 0:
                sig = signal.Signals(-proc.returncode).name
                summary = f"iree-compile crashed with {sig}"
            else:
                summary = f"iree-compile exited with status {proc.returncode}"
            raise _failure(bytecode, cmd, summary, proc.stderr)
        return CompileResult(out.read_bytes(), seconds, cmd)


def parse_diagnostics(stderr: str) -> list[OpDiagnostic]:
    """The errors in IREE's console output, each with its op and source location."""
    out = []
    for m in _DIAG.finditer(stderr):
        msg = m.group("msg").strip()
        op = _OP.search(msg)
        loc = m.group("loc").strip().strip('"')
        location = None if loc in ("", "-", "<unknown>") else f"{loc}:{m.group('line')}"
        out.append(OpDiagnostic(msg, (op.group(1) or op.group(2)) if op else None, location))
    return out


def _failure(bytecode: bytes, cmd: list[str], summary: str, stderr: str) -> StageError:
    import hashlib

    digest = hashlib.sha256(bytecode).hexdigest()[:12]
    repro = reproducer_dir() / f"{STAGE}-{digest}.mlirbc"
    repro.write_bytes(bytecode)
    replay = [Path(cmd[0]).name, str(repro), *[c for c in cmd[2:-2]], "-o", "/dev/null"]
    diags = parse_diagnostics(stderr)
    if not diags and stderr.strip():
        tail = stderr.strip().splitlines()[-8:]
        diags = [OpDiagnostic(" | ".join(tail))]
    return StageError(STAGE, summary, diags, repro, shlex.join(replay))
