"""Hand-written CPU kernels linked into IREE's llvm-cpu executables as object files.

IREE links objects named by ``hal.executable.objects`` into the embedded ELF it builds for
each executable (an ``#hal.executable.object`` per target), and a dispatch of a
``stream.executable`` calls the kernel as an imported function. lowerkit builds its kernels'
objects from the sources beside this module with the machine's C++ compiler, once per
source, ISA and compiler, into the compile cache's folder. Where there is no compiler, no
x86-64 target with AVX2 and FMA, or the build fails, `attention_object` answers None and the
program keeps IREE's own code for the op. ``LOWERKIT_CPU_KERNELS=0`` turns them off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import cache_folder

ENV = "LOWERKIT_CPU_KERNELS"
SOURCES = Path(__file__).parent / "kernels"
# freestanding: no libc, no globals, no unwind tables, no calls the loader cannot resolve
# (a zeroing loop turned into memset was one)
_FLAGS = ("-O3", "-std=c++17", "-ffreestanding", "-fno-exceptions", "-fno-rtti",
          "-fno-asynchronous-unwind-tables", "-fno-stack-protector", "-fPIC", "-fno-plt",
          "-fvisibility=hidden", "-fno-tree-loop-distribute-patterns", "-fno-builtin",
          "-Wno-psabi")
# the x86-64 levels the kernels are built for, widest first, with every feature the level lets
# the compiler use (x86-64-v3's BMI and MOVBE too); LANES: query rows per vector, one
# register's worth of floats (16 with AVX-512, 8 with AVX2)
_V3 = ("+avx", "+avx2", "+bmi", "+bmi2", "+f16c", "+fma", "+lzcnt", "+movbe")
_ISAS = (
    ("x86-64-v4", (*_V3, "+avx512f", "+avx512bw", "+avx512cd", "+avx512dq", "+avx512vl"), 16),
    ("x86-64-v3", _V3, 8),
)
_LOCK = threading.Lock()


@dataclass(frozen=True)
class KernelObject:
    """A built object: its path, the ISA level it needs and the rows per vector it uses."""

    path: Path
    isa: str
    lanes: int


def enabled() -> bool:
    """Whether lowerkit's CPU kernels may be used (``LOWERKIT_CPU_KERNELS``, on by default)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def isa_for(cpu_features: str, triple: str) -> "tuple[str, int] | None":
    """The ISA level (gcc's ``-march``) and rows per vector for a llvm-cpu target with these
    features, or None where lowerkit has no kernel for it."""
    if not triple.startswith("x86_64"):
        return None
    features = set(cpu_features.split(","))
    for isa, needs, lanes in _ISAS:
        if all(f in features for f in needs):
            return isa, lanes
    return None


def _compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")


def fingerprint() -> str:
    """What decides the kernels' code besides their sources (which the compile cache's key
    holds): whether they are on, and which compiler builds them (its path and its file's
    time, no child process: this is in every compile's key)."""
    if not enabled():
        return "off"
    compiler = _compiler()
    if compiler is None:
        return "no compiler"
    try:
        return f"{compiler} {os.stat(shutil.which(compiler) or compiler).st_mtime_ns}"
    except OSError:
        return compiler


def _folder() -> Path:
    base = cache_folder.default_directory()
    return (base / "kernels") if base is not None else Path(tempfile.gettempdir()) / "lowerkit-kernels"


@functools.lru_cache(maxsize=None)
def _compiler_version(compiler: str) -> str | None:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else None


@functools.lru_cache(maxsize=None)
def _object_name(source: str, isa: str, flags: tuple[str, ...], version: str) -> str:
    """The object's file name: its source, flags and compiler hashed (read once a process;
    every program with an attention asks, from ingress and from `lower-attention`)."""
    text = (SOURCES / source).read_bytes()
    key = hashlib.sha256(repr((text, flags, version)).encode()).hexdigest()[:16]
    return f"{Path(source).stem}-{isa}-{key}.o"


def _build(source: str, isa: str, lanes: int) -> "KernelObject | None":
    """The object for ``source`` at ``isa``, from the folder if built before (by this process
    or another: the folder may change, or be emptied, between two calls), else built now."""
    compiler = _compiler()
    version = compiler and _compiler_version(compiler)
    if not version:
        return None
    flags = (*_FLAGS, f"-march={isa}", f"-DLANES={lanes}")
    folder = _folder()
    path = folder / _object_name(source, isa, flags, version)
    if path.exists():
        return KernelObject(path, isa, lanes)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".o", dir=folder)
    os.close(fd)
    try:
        built = subprocess.run([compiler, *flags, "-c", str(SOURCES / source), "-o", tmp],
                               capture_output=True, text=True, timeout=120)
        if built.returncode != 0 or _undefined(tmp):
            return None
        os.replace(tmp, path)  # whole or not at all, for other processes reading the folder
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return KernelObject(path, isa, lanes)


def _undefined(path: str) -> bool:
    """Whether the object needs a symbol from outside (IREE's loader would refuse it)."""
    nm = shutil.which("nm")
    if nm is None:
        return True
    out = subprocess.run([nm, "-u", path], capture_output=True, text=True, timeout=30)
    return out.returncode != 0 or bool(out.stdout.strip())


def attention_object(cpu_features: str, triple: str) -> "KernelObject | None":
    """The attention kernel's object for a llvm-cpu target (`passes/attention.py`), or None."""
    if not enabled():
        return None
    isa = isa_for(cpu_features, triple)
    if isa is None:
        return None
    with _LOCK:
        return _build("attention.cc", *isa)


def attention_object_for(target) -> "KernelObject | None":
    """`attention_object` for a llvm-cpu `Target`, its CPU as iree-compile resolves it."""
    from .. import target as targets

    if not enabled():
        return None
    try:
        resolved = targets.resolved_cpu(target)
    except targets.TargetError:
        return None
    return attention_object(resolved.get("cpu_features", ""), resolved.get("target_triple", ""))
