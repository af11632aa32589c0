"""IREE compilation of a lowered module to a vmfb, in a child ``iree-compile`` process.

A child process keeps a crash inside IREE (an abort or a segfault) from killing the user's
interpreter, gives the exact command to replay a failure, and exposes IREE's own phases:
every compilation writes its executable binaries to a scratch folder (their sizes come from
there) and, when asked, its phases (``--dump-compilation-phases-to``: per-phase times and op
histograms). A dump asks for both and for the files to be kept.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from typing import Any
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import Diagnostic, source_location
from ..errors import StageError, TargetError, UnsupportedError
from ..ir import CHECK_MARK, KERNEL_FALLBACK, to_bytecode
from ..reproducer import save_reproducer, tool
from ..target import CPU_OP_CONFIG_FLAGS, CPU_SPEED_FLAGS, Target

STAGE = "iree-compile"

# A hung or runaway iree-compile is stopped after this long (seconds); big models on few cores
# take minutes, never an hour. LOWERKIT_COMPILE_TIMEOUT overrides it (0: no limit).
DEFAULT_TIMEOUT = 1800.0


def default_timeout() -> float | None:
    value = float(os.environ.get("LOWERKIT_COMPILE_TIMEOUT", DEFAULT_TIMEOUT))
    return value if value > 0 else None

# IREE's compilation phases, in order (iree-compile --compile-to=...).
PHASES = (
    "input", "abi", "preprocessing", "global-optimization", "dispatch-creation", "flow",
    "stream", "executable-sources", "executable-configurations", "executable-targets",
    "hal", "vm",
)

# What iree-compile prints so that dumps stay readable; printing only, the vmfb is unchanged.
ELIDE_FLAGS = ("--mlir-elide-elementsattrs-if-larger=16",
               "--mlir-elide-resource-strings-if-larger=64")

_DIAG = re.compile(r"^(?P<loc>[^\n]*?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)
_OP = re.compile(r"^'([\w$.]+)' op |operation '([\w$.]+)'")
_PHASE_FILE = re.compile(r"^.*?\.(\d+)\.([\w-]+)\.mlir$")
# An op at the start of a line of printed MLIR: `%0 = dialect.op`, `dialect.op @sym`, `"d.op"(`.
_TEXT_OP = re.compile(r'^\s*(?:%[^=]*?=\s*)?"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"?(?=[\s(<{@%"\[]|$)',
                      re.M)
_BARE_RETURN = re.compile(r"^\s*return\b", re.M)
_DISPATCH = re.compile(r"(\w+?_dispatch_\d+)")
_MESSAGE_LIMIT = 400
_TARGET_ATTR = re.compile(r'(#hal\.executable\.target<"[^"]*", "[^"]*"), \{.*$')


# Flags for every target. IREE demotes f64 to f32 by default, which changes the program's
# signature and its dtypes: a float64 program must compute and return float64, as in eager.
# A target without float64 (`Target.float64`) keeps IREE's demotion: its f64 is internal.
COMMON_FLAGS = ("--iree-input-demote-f64-to-f32=false",)


def common_flags(target: Target) -> tuple[str, ...]:
    return COMMON_FLAGS if target.float64 else ("--iree-input-demote-f64-to-f32=true",)


SYSTEM_LINKING_FLAG = "--iree-llvmcpu-link-embedded=false"

# iree-compile flags that compile and then give wrong answers together with lowerkit's own
# flags: flag -> (iree-base-compiler versions, backend, what was seen). A caller's flag here is
# refused on those versions and that backend, not passed on: nothing after the compile would
# notice (a call returns the wrong numbers) unless the caller checks against eager.
MISCOMPILING_FLAGS = {
    "--iree-dispatch-creation-enable-fuse-padding-into-linalg-producer-ops": (
        "3.13.", "llvm-cpu", "NaN in the outputs of ResNet-18 and ResNet-50 (lowerkit's zoo, "
        "random weights), where the same compile without it matches eager"),
}


@functools.lru_cache(maxsize=1)
def _iree_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("iree-base-compiler")
    except PackageNotFoundError:
        return ""


def refuse_miscompiling_flags(flags: "list[str] | tuple[str, ...]", target: Target) -> None:
    """Raise `TargetError` for a flag of `MISCOMPILING_FLAGS` turned on, on the IREE version
    and backend it gave wrong answers with."""
    for flag in flags:
        name, _, value = flag.partition("=")
        known = MISCOMPILING_FLAGS.get(name)
        if known is None or value.lower() in ("false", "0"):
            continue
        versions, backend, seen = known
        if _iree_version().startswith(versions) and backend in target.backend.split("+"):
            raise TargetError(
                f"stage 'iree-compile': the flag {name} gives wrong answers with "
                f"iree-base-compiler {_iree_version()} on {backend} ({seen}); lowerkit does "
                "not pass it on")


def _needs_system_linking(stderr: str, cmd: list[str]) -> bool:
    return ("undefined symbol" in stderr and SYSTEM_LINKING_FLAG not in cmd
            and any("llvm-cpu" in c for c in cmd))


def iree_compile_tool() -> str:
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


def text_op_histogram(text: str) -> Counter:
    """Op counts of printed MLIR, read from the text (the phase dumps are not re-parsed)."""
    text = text.split("\n{-#", 1)[0]  # the resources section holds no ops
    counts = Counter(m.group(1) for m in _TEXT_OP.finditer(text))
    returns = len(_BARE_RETURN.findall(text))  # func.return prints without its dialect
    if returns:
        counts["func.return"] += returns
    return counts


@dataclass
class PhaseRecord:
    """One IREE compilation phase: when its output was written, and what it holds."""

    name: str
    seconds: float
    ops: Counter
    path: Path | None = None  # the phase's dump while it exists (scratch, or moved by a dump)
    size: int = 0


@dataclass
class ExecutableFile:
    """A file IREE wrote for one executable: its source, target code or binary."""

    name: str
    dispatch: str  # "module_main_dispatch_0", or "linked" for linked executables
    kind: str      # source, configured, benchmark, llvm-ir, bitcode, assembly, object, binary, spirv, ptx
    size: int
    path: Path | None = None


# a dispatch function's name in the vmfb: "main_dispatch_4_conv_…", "_initializer_3_dispatch_0_…"
# (an initializer's, hoisted from the weights), or its executable's "module_main_dispatch_4"
_EXPORT_NAME = re.compile(rb"(?<![A-Za-z0-9_])(?:module_)?([A-Za-z0-9_]+?_dispatch_\d+)(?![0-9])")


@dataclass
class CompileResult:
    vmfb: bytes
    seconds: float
    command: list[str]
    phases: list[PhaseRecord] = field(default_factory=list)
    executables: list[ExecutableFile] = field(default_factory=list)
    rung: str = "fast"  # the compile ladder's rung that compiled it (`LADDER`)
    tuned_dispatches: int = 0  # dispatches given a stored lowering config (`lowerkit tune`)

    @property
    def dispatch_count(self) -> int:
        """Distinct dispatch functions (exports of the flow phase's executables)."""
        for phase in self.phases:
            if phase.name == "flow":
                return phase.ops.get("flow.executable.export", 0)
        # Without the phases: the dispatches' names, which the vmfb keeps: the flow phase's
        # count, less any dispatch that IREE folds away after it. By whole name, not number:
        # each initializer numbers its own dispatches from 0.
        return len(set(_EXPORT_NAME.findall(self.vmfb)))

    @property
    def binary_bytes(self) -> int:
        return sum(f.size for f in self.executables if f.kind == "binary")


def program_key(bytecode: bytes) -> str:
    """What `lowerkit tune` keys a program's flag set by: a hash of the module iree-compile is
    given. Weights passed by reference are IREE parameters by then, so the same architecture
    at the same shapes keys the same, whatever its weights."""
    return hashlib.sha256(bytecode).hexdigest()[:16]


def statistics(result: CompileResult) -> dict:
    """What a compilation made, as plain data: per-phase times and ops, dispatches, sizes."""
    return {
        "seconds": result.seconds,
        "phases": [{"name": p.name, "seconds": p.seconds, "ops": dict(p.ops)} for p in result.phases],
        "dispatches": result.dispatch_count,
        "executables": [{"name": f.name, "dispatch": f.dispatch, "kind": f.kind, "size": f.size}
                        for f in result.executables if f.kind == "binary"],
        "binary_bytes": result.binary_bytes,
        "vmfb_bytes": len(result.vmfb),
        "rung": result.rung,
        **({"tuned_dispatches": result.tuned_dispatches} if result.tuned_dispatches else {}),
    }


def _kind(name: str) -> str:
    if name.endswith("_benchmark.mlir"):
        return "benchmark"
    if name.startswith("configured_") and name.endswith(".mlir"):
        return "configured"
    suffix = name.rsplit(".", 1)[-1]
    return {"mlir": "source", "ll": "llvm-ir", "bc": "bitcode", "s": "assembly", "o": "object",
            "so": "binary", "spv": "binary", "spvasm": "spirv", "ptx": "ptx", "fatbin": "binary",
            "cubin": "binary", "vmfb": "binary", "hsaco": "binary"}.get(suffix, suffix)


def executable_files(directory: Path) -> list[ExecutableFile]:
    """The files IREE dumped for its executables, sorted by dispatch and kind."""
    out = []
    for p in sorted(directory.iterdir()) if directory.is_dir() else []:
        if p.is_file():
            m = _DISPATCH.search(p.name)
            out.append(ExecutableFile(p.name, m.group(1) if m else "linked", _kind(p.name),
                                      p.stat().st_size, p))
    return out


def phase_records(directory: Path, started_ns: int) -> list[PhaseRecord]:
    """Phases from their dump files; a phase's time is from the previous file's write to its own."""
    found = []
    for p in directory.iterdir() if directory.is_dir() else []:
        m = _PHASE_FILE.match(p.name)
        if m:
            found.append((int(m.group(1)), m.group(2), p))
    out, last = [], started_ns
    for _, name, p in sorted(found):
        st = p.stat()
        text = p.read_text(errors="replace")
        out.append(PhaseRecord(name, max(st.st_mtime_ns - last, 0) / 1e9, text_op_histogram(text),
                               p, st.st_size))
        last = st.st_mtime_ns
    return out


def compile_to_vmfb(
    bytecode: bytes,
    target: Target,
    extra_flags: list[str] | tuple[str, ...] = (),
    *,
    phases_dir: str | os.PathLike | None = None,
    executables_dir: str | os.PathLike | None = None,
    print_passes_dir: str | os.PathLike | None = None,
    elide: bool = True,
    timeout: float | None = None,
    phases: bool = False,
    debug_info: bool = False,
    last_rung: int | None = None,
    dispatch_configs: "dict[str, str] | None" = None,
    first_rung: str | None = None,
) -> CompileResult:
    """Compile MLIR bytecode (linalg on tensors) for ``target``; raise StageError on failure.
    ``last_rung``: go no further down the ladder than this rung (0: the fast one only).

    ``phases`` records IREE's phases (time and ops of each, from their dumps): printing twelve
    modules costs iree-compile time (the README's compile-time table, column `phases`), so it
    is asked for, not default.
    ``phases_dir``/``executables_dir`` keep IREE's phase dumps and every executable file
    (sources, LLVM IR, assembly, binaries) there instead of in a scratch folder (a
    ``phases_dir`` implies ``phases``); ``print_passes_dir`` receives the IR after every pass
    (a tree of files). ``debug_info`` prints the phases with their locations (a dump's
    graphs name layers after them).
    ``dispatch_configs``: lowering configs by dispatch fingerprint (`lowerkit tune`'s records),
    given to those dispatches on the fast rung (`_compile_configured`); if iree-compile rejects
    them, the same rung compiles with IREE's own.
    ``first_rung``: start the ladder at this rung (`lowerkit tune`'s measured flag set for the
    program, `tuning.flag_set`); a name the target's ladder lacks starts at the fast one.
    """
    refuse_miscompiling_flags(extra_flags, target)
    rungs = ladder(target.compile_flags())
    names = [name for name, _ in rungs]
    if first_rung in names:
        rungs = rungs[names.index(first_rung):]
    if last_rung is not None:  # the caller has another way down than the ladder's next rungs
        rungs = rungs[:last_rung + 1]
    if "cuda" in target.backend.split("+"):
        rungs.append((CUDA_REDUCTION_RUNG, ()))
    first: StageError | None = None
    at = 0
    while at < len(rungs):
        rung, dropped = rungs[at]
        if at == 0 and first is None and dispatch_configs and "llvm-cpu" in target.backend:
            result = _compile_configured(bytecode, target, extra_flags, dispatch_configs,
                                         timeout, phases_dir, executables_dir,
                                         print_passes_dir, elide, phases, debug_info)
            if result is not None:
                result.rung = rung
                return result
        try:
            result = _compile_once(bytecode, target, (*extra_flags, *RUNG_FLAGS.get(rung, ())),
                                   dropped, phases_dir,
                                   executables_dir, print_passes_dir, elide, timeout, phases,
                                   debug_info)
        except UnsupportedError:
            raise  # the target cannot do what the program asks: no configuration helps
        except StageError as e:
            if "timed out after" in e.summary:
                raise (first or e) from None
            first = first or e
            untiled = without_op_configs(bytecode) if at == 0 else None
            if untiled is not None:  # the same rung without lowerkit's own tile sizes first
                bytecode, rung = untiled, f"{rung}, IREE's tile sizes"
                rungs[0] = (rung, dropped)
                continue
            cause = _known_cause(e, target, dropped)
            if cause is not None:  # the one flag IREE's message blames: drop it, keep the rest
                name, flag = cause
                rungs.insert(at + 1, (f"{rung}, {name}", (*dropped, flag)))
            if at == len(rungs) - 1:
                raise first from None
            at += 1
            continue
        result.rung = rung
        if first is not None:
            _warn_rung(rung, first)
        return result
    raise AssertionError("unreachable: the last rung returns or raises")


# Failures whose message names their cause among CPU_SPEED_FLAGS: (what IREE says, rung name,
# the flag that causes it). The ladder tries the same rung without that flag before climbing
# down, which would drop data tiling, microkernels and im2col first and compile up to four times.
KNOWN_CAUSES = (
    # IREE 3.13 at -O2 and above, llvm-cpu (host, znver4, sapphirerapids, x86-64-v3): the
    # training forward of a 16-wide Linear, LayerNorm, GELU and softmax "failed on workgroup
    # distribution verification" (256-wide ones compiled); at IREE's default level it
    # compiles, with data tiling and microkernels on
    ("write affecting operations on global resources are restricted to workgroup distributed "
     "contexts", "no O3", "--iree-opt-level=O3"),
)


def _known_cause(error: StageError, target: Target,
                 dropped: tuple[str, ...]) -> tuple[str, str] | None:
    """(rung name, flag) for a failure in `KNOWN_CAUSES` whose flag this rung still passes."""
    text = error.tool_output or str(error)
    for message, name, flag in KNOWN_CAUSES:
        if message in text and flag in target.compile_flags() and flag not in dropped:
            return name, flag
    return None


# IREE 3.13's aggressive fusion (part of --iree-opt-level=O3) fuses a training-mode batch norm
# over dynamic shapes wrongly on llvm-cpu: its normalised output was 2.5 off, its mean and
# variance right (torch-mlir's e2e NativeBatchNorm2DTrainingModule_basic, every dim dynamic).
DYNAMIC_SHAPE_CPU_FLAGS = ("--iree-dispatch-creation-enable-aggressive-fusion=false",)


def dynamic_shape_flags(signature: Any, target: Target) -> tuple[str, ...]:
    """`DYNAMIC_SHAPE_CPU_FLAGS` for a llvm-cpu program with a dynamic input dim."""
    dynamic = any(isinstance(d, str) for spec in signature.tensor_inputs for d in spec.shape)
    return DYNAMIC_SHAPE_CPU_FLAGS if dynamic and "llvm-cpu" in target.backend.split("+") else ()


def op_config_flags(bytecode: bytes, target: Target) -> tuple[str, ...]:
    """`CPU_OP_CONFIG_FLAGS` for a llvm-cpu module that carries lowerkit's own tile sizes."""
    if "llvm-cpu" in target.backend.split("+") and b"compilation_info" in bytecode:
        return CPU_OP_CONFIG_FLAGS
    return ()


def check_flags(bytecode: bytes) -> tuple[str, ...]:
    """Keep a program's assertions (IREE strips them past ``-O0``) when it holds a run-time
    check of lowerkit's (`lowerkit.ingress.checks`)."""
    return ("--iree-opt-strip-assertions=false",) if CHECK_MARK.encode() in bytecode else ()


def without_op_configs(bytecode: bytes) -> bytes | None:
    """``bytecode`` without the ``compilation_info`` that lowerkit's stages put on ops (the
    CPU attention's tile sizes, `passes/attention.py`) and with IREE's own attention where
    lowerkit's kernel was called (`iree.cpu_kernels`), or None when it has neither: the
    compile ladder's first fallback, before any flag is dropped."""
    if b"compilation_info" not in bytecode and KERNEL_FALLBACK.encode() not in bytecode:
        return None
    from iree.compiler import ir

    with ir.Context() as ctx:
        module = ir.Module.parse(bytecode, ctx)
        found, calls = [], []

        def visit(op):
            if "compilation_info" in op.attributes:
                found.append(op)
            if KERNEL_FALLBACK in op.attributes:
                calls.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        for op in found:
            del op.attributes["compilation_info"]
        for op in calls:  # lowerkit's kernel's call: IREE's form of the same op instead
            op.attributes["callee"] = op.attributes[KERNEL_FALLBACK]
            del op.attributes[KERNEL_FALLBACK]
        return to_bytecode(module) if found or calls else None


# The compile ladder: when iree-compile rejects the fast configuration (a dispatch over the
# stack limit with data tiling, a vector op the microkernels' layouts leave illegal), the same
# program is compiled again with the next safer one, each dropping more of CPU_SPEED_FLAGS.
LADDER = (
    ("fast", ()),
    ("no im2col", ("--iree-global-opt-use-im2col-for-convs",)),
    ("no ukernels", ("--iree-global-opt-use-im2col-for-convs",
                     "--iree-llvmcpu-enable-ukernels=all")),
    ("no data tiling", ("--iree-global-opt-use-im2col-for-convs",
                        "--iree-llvmcpu-enable-ukernels=all", "--iree-opt-data-tiling")),
    ("IREE defaults", CPU_SPEED_FLAGS),
)
# CUDA's second rung: IREE 3.13's reduction pipeline for NVIDIA GPUs "failed to distribute"
# any reduction of 64-bit elements (an int64 sum, or torch-mlir's var_mean in f64, hence every
# LayerNorm); its older per-dispatch pipeline compiles them, in their own dtype.
CUDA_REDUCTION_RUNG = "no reduction vector distribution"
RUNG_FLAGS = {
    CUDA_REDUCTION_RUNG: ("--iree-codegen-llvmgpu-use-reduction-vector-distribution=false",),
}
_WARNED: set[str] = set()


def ladder(flags: tuple[str, ...] | list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The rungs (name, flags dropped) that change ``flags``: the first rung for a target
    without CPU_SPEED_FLAGS (a GPU), all five for the CPU."""
    rungs, seen = [], set()
    for name, dropped in LADDER:
        kept = tuple(f for f in flags if f not in dropped)
        if kept not in seen:
            seen.add(kept)
            rungs.append((name, tuple(f for f in dropped if f in flags)))
    return rungs


def _warn_rung(rung: str, error: StageError) -> None:
    if rung in _WARNED:
        return
    _WARNED.add(rung)
    import warnings

    warnings.warn(f"iree-compile rejected lowerkit's fast configuration ({error.summary}); "
                  f"compiled with the safer rung '{rung}' (Artifact.compile_rung); the program "
                  f"may run slower. The failure replays with: {error.command}", stacklevel=3)


def _compile_configured(bytecode: bytes, target: Target, extra_flags: list[str] | tuple[str, ...],
                        configs: dict[str, str], timeout: float | None,
                        *dumps: Any) -> CompileResult | None:
    """The fast rung with ``configs`` on the dispatches they name: iree-compile stops after
    choosing each dispatch's configuration, lowerkit rewrites the root ops' lowering configs
    (`dispatch_configs.rewrite`), and iree-compile resumes. A tuning spec cannot do this for a
    data-tiled dispatch in IREE 3.13. None when no dispatch has a record, or when iree-compile
    rejects the rewritten module (a warning says so; the caller compiles without them).
    ``dumps``: `_compile_once`'s dump arguments, for the second step (IREE's phases before the
    configurations are not dumped then)."""
    from . import dispatch_configs as configured

    flags = module_flags(bytecode, target, (), extra_flags)
    with tempfile.TemporaryDirectory(prefix="lowerkit-configs-") as tmp:
        src, conf = Path(tmp) / "input.mlirbc", Path(tmp) / "configured.mlir"
        src.write_bytes(bytecode)
        first = [iree_compile_tool(), str(src), *flags,
                 "--compile-to=executable-configurations", "-o", str(conf)]
        try:
            seconds = _run(first, list(first), bytecode, target, timeout)
            rewritten, done = configured.rewrite(conf.read_bytes(), configs)
        except (StageError, configured.ConfigError) as e:
            _warn_configs(e)
            return None
        if not done:
            return None
        # the flags the input asked for, once: the configured module may not carry their marks
        again = {*op_config_flags(rewritten, target), *check_flags(rewritten)}
        resumed = [*(f for f in (*op_config_flags(bytecode, target), *check_flags(bytecode))
                     if f not in again), *extra_flags, "--compile-from=executable-configurations"]
        phases_dir, executables_dir, print_passes_dir, elide, phases, debug_info = dumps
        try:
            result = _compile_once(rewritten, target, resumed, (), phases_dir, executables_dir,
                                   print_passes_dir, elide, timeout, phases, debug_info)
        except StageError as e:
            _warn_configs(e)
            return None
    result.seconds += seconds
    result.tuned_dispatches = len(done)
    return result


def _warn_configs(error: Exception) -> None:
    import warnings

    summary = getattr(error, "summary", None) or str(error)
    said = [ln.strip() for ln in (getattr(error, "tool_output", None) or "").splitlines()
            if "error:" in ln]
    if said:
        summary += f": {said[0][:300]}"
    warnings.warn(f"iree-compile rejected the lowering configs lowerkit tune stored for this "
                  f"CPU ({summary}); compiled with IREE's own (retune with lowerkit tune "
                  f"--retune)", stacklevel=4)


def module_flags(bytecode: bytes, target: Target, dropped: tuple[str, ...] = (),
                 extra_flags: list[str] | tuple[str, ...] = ()) -> list[str]:
    """iree-compile's flags for ``bytecode``: the target's less ``dropped`` (a ladder rung),
    those its marks ask for (lowerkit's own tile sizes, checked ops), then ``extra_flags``."""
    return [*common_flags(target), *(f for f in target.compile_flags() if f not in dropped),
            *op_config_flags(bytecode, target), *check_flags(bytecode), *extra_flags]


def _compile_once(bytecode: bytes, target: Target, extra_flags: list[str] | tuple[str, ...],
                  dropped: tuple[str, ...], phases_dir: str | os.PathLike | None,
                  executables_dir: str | os.PathLike | None,
                  print_passes_dir: str | os.PathLike | None, elide: bool,
                  timeout: float | None, phases: bool, debug_info: bool = False) -> CompileResult:
    with tempfile.TemporaryDirectory(prefix="lowerkit-") as tmp:
        src = Path(tmp) / "input.mlirbc"
        out = Path(tmp) / "module.vmfb"
        src.write_bytes(bytecode)
        if phases_dir is None:
            phases_dir = Path(tmp) / "phases"
            keep_phases = False
        else:
            keep_phases = True
        execs = Path(executables_dir) if executables_dir is not None else Path(tmp) / "executables"
        flags = module_flags(bytecode, target, dropped, extra_flags)
        replay_flags = list(flags)
        if keep_phases or phases:
            flags.append(f"--dump-compilation-phases-to={phases_dir}")
        if executables_dir is not None:
            flags.append(f"--iree-hal-dump-executable-files-to={execs}")
        else:
            flags.append(f"--iree-hal-dump-executable-binaries-to={execs}")
        if print_passes_dir is not None:
            flags += ["--mlir-print-ir-after-all", f"--mlir-print-ir-tree-dir={print_passes_dir}"]
        if elide:
            flags += list(ELIDE_FLAGS)
        if debug_info:
            flags.append("--mlir-print-debuginfo")
        cmd = [iree_compile_tool(), str(src), *flags, "-o", str(out)]
        replay = [iree_compile_tool(), str(src), *replay_flags, "-o", str(out)]
        started_ns = time.time_ns()
        seconds = _run(cmd, replay, bytecode, target, timeout)
        result = CompileResult(out.read_bytes(), seconds, cmd,
                               phase_records(Path(phases_dir), started_ns), executable_files(execs))
        if not keep_phases:
            for p in result.phases:
                p.path = None
        if executables_dir is None:
            for f in result.executables:
                f.path = None
        return result


def _run(cmd: list[str], replay: list[str], bytecode: bytes, target: Target,
         timeout: float | None) -> float:
    """Run iree-compile; its seconds, or the StageError (an `UnsupportedError` for what the
    target cannot do) with the input saved and the command that replays it."""
    start = time.perf_counter()
    try:
        if timeout is None:
            timeout = default_timeout()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 and _needs_system_linking(proc.stderr, cmd):
            # f64 math (sin, cos, ...) calls libm, which IREE's embedded ELF cannot link:
            # link a system library instead, for which IREE uses the host's linker.
            cmd.insert(-2, SYSTEM_LINKING_FLAG)
            replay.insert(-2, SYSTEM_LINKING_FLAG)
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise _failure(bytecode, replay, f"timed out after {timeout}s", "") from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        if proc.returncode < 0:
            summary = f"iree-compile crashed with {signal.Signals(-proc.returncode).name}"
        else:
            summary = f"iree-compile exited with status {proc.returncode}"
        hint = _hint(proc.stderr, target)
        refused = bool(hint) and proc.returncode > 0  # a crash is never a refusal
        raise _failure(bytecode, replay, summary + hint, proc.stderr,
                       UnsupportedError if refused else StageError)
    return seconds


_I64_ILLEGAL = re.compile(r"failed to legalize operation .*i64\b")


def _hint(stderr: str, target: Target) -> str:
    """What to do about a failure whose cause is the target rather than the program."""
    types_only = re.sub(r"<\{.*?\}>", "", stderr)  # not an attribute's `predicate = 8 : i64`
    if "from ('i64') to ('vector<2xi32>')" in stderr or (
            64 not in target.storage_bits and _I64_ILLEGAL.search(types_only)):
        # SPIR-V without Int64 emulates i64 as two i32 and some ops have no emulation (an i64
        # sum of sums fails as an illegal `vector.broadcast` of i64)
        return (f" (64-bit integer arithmetic is not supported on '{target.name}': the GPU has "
                "no Int64; compute in int32, or compile for a named GPU, e.g. 'vulkan:rdna3')")
    return ""


def _short(message: str) -> str:
    """IREE quotes whole target attributes in messages; keep the start of such a line."""
    message = _TARGET_ATTR.sub(r"\1, …>", message)
    return message if len(message) <= _MESSAGE_LIMIT else message[:_MESSAGE_LIMIT] + " …"


def parse_diagnostics(stderr: str) -> list[Diagnostic]:
    """The errors in IREE's console output, each with its op and source location."""
    out = []
    for m in _DIAG.finditer(stderr):
        msg = m.group("msg").strip()
        op = _OP.search(msg)
        loc = m.group("loc").strip().strip('"')
        location = None if loc in ("", "-", "<unknown>") else f"{loc}:{m.group('line')}"
        if location and "callsite(" in location:
            location = source_location(location) or location
        diag = Diagnostic(_short(msg), (op.group(1) or op.group(2)) if op else None, location)
        if all(str(d) != str(diag) for d in out):
            out.append(diag)
    return out


def _failure(bytecode: bytes, cmd: list[str], summary: str, stderr: str,
             error: type[StageError] = StageError) -> StageError:
    """A StageError (an `UnsupportedError` for a refusal `_hint` explains) with the input
    saved as readable .mlir (bytecode if that fails)."""
    try:
        from iree.compiler import ir

        with ir.Context() as ctx:
            module = ir.Module.parse(bytecode, ctx)
            repro = save_reproducer(STAGE, module.operation.get_asm(enable_debug_info=True))
    except Exception:
        repro = save_reproducer(STAGE, bytecode, ".mlirbc")
    replay = [tool(Path(cmd[0]).name), str(repro), *cmd[2:-2], "-o", "/dev/null"]
    diags = parse_diagnostics(stderr)
    if not diags and stderr.strip():
        tail = stderr.strip().splitlines()[-8:]
        diags = [Diagnostic(" | ".join(_short(t) for t in tail))]
    ops = sorted({d.op for d in diags if d.op})
    if ops:
        summary += f": {len(diags)} error(s) on {', '.join(ops)}"
    # all of stderr, for the ladder's `KNOWN_CAUSES`: the diagnostics parsed above can miss a
    # line (an op located in ``<string>``, a message past the last eight lines)
    return error(STAGE, summary, diags, repro, shlex.join(replay), tool_output=stderr)
