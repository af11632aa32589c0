"""Target: which IREE backend compiles a program and which runtime driver runs it.

A target is named by a string (``"cpu"``, ``"vulkan:llvmpipe"``, ``"cuda:sm_90"``, or several
joined by ``+`` for one artifact that runs on any of them) or built by a factory here with
options. Names are checked in Python before IREE sees them, because IREE aborts with a native
stack dump on a GPU name it does not know.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from dataclasses import dataclass, field, replace
from typing import Iterable

from .errors import TargetError


@dataclass(frozen=True)
class Target:
    """An IREE compilation target: the backend, its device options, and the runtime driver.

    ``drivers`` lists every runtime driver the compiled module can run on, for an artifact
    compiled for several devices (empty means just ``driver``, the default one).
    """

    name: str                 # "cpu", "cpu:znver4", "vulkan:llvmpipe", "cpu+vulkan", ...
    backend: str              # IREE's name: llvm-cpu, vulkan-spirv, cuda
    driver: str               # IREE runtime driver: local-task, vulkan, cuda
    flags: tuple[str, ...] = field(default_factory=tuple)
    drivers: tuple[str, ...] = field(default_factory=tuple)
    # Element widths (bits) every device of the target can load and store in the buffers a
    # call hands it; tensors of other widths cross the call as 32-bit (`widen-narrow-io`).
    storage_bits: tuple[int, ...] = (8, 16, 32, 64)
    # Whether every device computes in float64. Where one does not (IREE's portable Vulkan),
    # iree-compile demotes the program's internal f64 (torch-mlir's variance, Python floats)
    # to f32, and a float64 input or output is refused (`lowerkit.api`).
    float64: bool = True

    @property
    def narrow_io(self) -> bool:
        """Whether 8- and 16-bit tensors can cross a call as they are."""
        return 8 in self.storage_bits and 16 in self.storage_bits

    @property
    def runtime_drivers(self) -> tuple[str, ...]:
        return self.drivers or (self.driver,)

    def compile_flags(self) -> list[str]:
        return list(self.flags)

    def with_flags(self, *flags: str) -> "Target":
        """The same target with extra ``iree-compile`` flags (e.g. backend tuning options)."""
        return replace(self, flags=self.flags + tuple(flags))

    def driver_for(self, device: str | None) -> str:
        """The runtime driver for a device name (``cpu``, ``vulkan``, ``cuda`` or a driver)."""
        if device is None:
            return self.driver
        driver = DEVICE_DRIVERS.get(device, device)
        if driver == "local-sync" and "local-task" in self.runtime_drivers:
            return driver
        if driver not in self.runtime_drivers:
            have = ", ".join(_device_name(d) for d in self.runtime_drivers)
            if driver not in IREE_DRIVERS:
                raise TargetError(
                    f"unknown device {device!r}; a device is one of {', '.join(DEVICE_DRIVERS)} "
                    f"or an IREE driver ({', '.join(IREE_DRIVERS)}); this artifact runs on: {have}")
            raise TargetError(
                f"this artifact was compiled for {self.name!r} and cannot run on {device!r}; "
                f"it runs on: {have}. Compile with target='{self.name}+{device}' to add it"
            )
        return driver

    def to_json(self) -> dict:
        return {"name": self.name, "backend": self.backend, "driver": self.driver,
                "flags": list(self.flags), "drivers": list(self.drivers),
                "storage_bits": list(self.storage_bits), "float64": self.float64}

    @staticmethod
    def from_json(d: dict) -> "Target":
        return Target(d["name"], d["backend"], d["driver"], tuple(d["flags"]),
                      tuple(d.get("drivers", ())), tuple(d.get("storage_bits", (8, 16, 32, 64))),
                      d.get("float64", True))

    @staticmethod
    def parse(spec: "str | Target | Iterable[str | Target]") -> "Target":
        """``"cpu"``, ``"cpu:CPU"``, ``"vulkan[:ARCH]"``, ``"cuda[:sm_NN]"``, a `Target`, or
        several of them (``"cpu+vulkan"`` or a list) for one artifact that runs on each."""
        if isinstance(spec, Target):
            return spec
        if isinstance(spec, str):
            parts = [p.strip() for p in spec.split("+")]
            if len(parts) > 1:
                return combine(*(Target.parse(p) for p in parts))
            kind, _, arch = spec.partition(":")
            factory = _FACTORIES.get(kind)
            if factory is None:
                raise TargetError(f"unknown target {spec!r}; {valid_targets_text()}")
            return factory(arch)
        if isinstance(spec, (list, tuple)) and spec:
            return combine(*(Target.parse(p) for p in spec))
        raise TargetError(
            f"target must be a string, a Target or a list of them, got {type(spec).__name__}")


def valid_targets_text() -> str:
    return ("valid targets: 'cpu', 'cpu:CPU' (an LLVM CPU name, e.g. 'cpu:znver4'), "
            "'vulkan', 'vulkan:ARCH' (e.g. 'vulkan:llvmpipe', 'vulkan:rdna3', 'vulkan:ampere'), "
            "'cuda', 'cuda:sm_NN' (e.g. 'cuda:sm_80', 'cuda:sm_90'), "
            "or several joined by '+' (e.g. 'cpu+vulkan')")


# Runtime driver of each device name a user may give (Artifact(device=...), art.to(...)).
DEVICE_DRIVERS = {"cpu": "local-task", "local": "local-task", "vulkan": "vulkan", "cuda": "cuda"}
# IREE 3.13's runtime drivers (iree.runtime.query_available_drivers() on Linux).
IREE_DRIVERS = ("local-task", "local-sync", "vulkan", "cuda", "hip")


def _device_name(driver: str) -> str:
    return {"local-task": "cpu", "local-sync": "cpu"}.get(driver, driver)


def cpu(arch: str = "") -> Target:
    """IREE's llvm-cpu backend, tuned for ``arch`` (the host's CPU by default)."""
    arch = arch or "host"
    return Target(
        f"cpu:{arch}" if arch != "host" else "cpu",
        "llvm-cpu",
        "local-task",
        (
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            f"--iree-llvmcpu-target-cpu={arch}",
            *CPU_SPEED_FLAGS,
        ),
    )


HOST = "host"
_LLVMCPU_FLAG = "--iree-llvmcpu-target-"
_EXECUTABLE_TARGET = re.compile(r'#hal\.executable\.target<"llvm-cpu", "[^"]*", \{(.*?)\}>')
_TARGET_FIELD = re.compile(r'\b(cpu|cpu_features|target_triple|data_layout) = "([^"]*)"')


def host_dependent_cpu_flags(flags: Iterable[str]) -> tuple[str, ...]:
    """The ``--iree-llvmcpu-target-*`` flags among ``flags`` when one of them says ``host``
    (the code then depends on the machine that compiles it); empty otherwise."""
    cpu_flags = llvmcpu_flags(flags)
    if any(f.split("=", 1)[-1] == HOST for f in cpu_flags):
        return cpu_flags
    return ()


def llvmcpu_flags(flags: Iterable[str]) -> tuple[str, ...]:
    """The ``--iree-llvmcpu-target-*`` flags among ``flags`` (what decides the CPU code)."""
    return tuple(f for f in flags if f.startswith(_LLVMCPU_FLAG))


_DEFAULT_CPU_FLAGS = (f"{_LLVMCPU_FLAG}cpu={HOST}",)
_RESOLVE_PROGRAM = "func.func @f(%a: tensor<1xf32>) -> tensor<1xf32> { return %a : tensor<1xf32> }"
_RESOLVE_TIMEOUT_S = 120
# cpu flags -> iree-compile's answer, once per process; and the questions asked ahead
# (`prefetch_host_cpu`) whose child process has not been read yet
_HOST_CPUS: dict[tuple[str, ...], dict] = {}
_ASKED: dict[tuple[str, ...], subprocess.Popen] = {}
_HOST_CPUS_LOCK = threading.Lock()


def resolve_host_cpu(cpu_flags: tuple[str, ...] = _DEFAULT_CPU_FLAGS) -> dict:
    """What iree-compile makes of ``cpu_flags`` (``host`` or a named CPU): the LLVM CPU name,
    its features, triple and data layout, read off the executable target it builds for a
    one-op module (the same resolution its real compiles do). A child process of about
    0.05-0.1 s, so asked once per process (a failure is asked again)."""
    cpu_flags = tuple(cpu_flags)
    with _HOST_CPUS_LOCK:
        if cpu_flags not in _HOST_CPUS:
            child = _ASKED.pop(cpu_flags, None) or _ask(cpu_flags)
            _HOST_CPUS[cpu_flags] = _answer(child, cpu_flags)
        return _HOST_CPUS[cpu_flags]


def prefetch_host_cpu(flags: Iterable[str]) -> None:
    """Start iree-compile's child process for `resolve_host_cpu` now, if ``flags`` name the
    ``host`` CPU: a compile's cache key needs the answer first thing, and the child runs
    meanwhile (`lowerkit.compile` starts it before it traces the program). Its answer is read
    when asked for."""
    cpu_flags = host_dependent_cpu_flags(flags)
    with _HOST_CPUS_LOCK:
        if cpu_flags and cpu_flags not in _HOST_CPUS and cpu_flags not in _ASKED:
            _ASKED[cpu_flags] = _ask(cpu_flags)


def _ask(cpu_flags: tuple[str, ...]) -> subprocess.Popen:
    from iree.compiler.tools.binaries import find_tool

    cmd = [find_tool("iree-compile"), "-", "--compile-to=preprocessing",
           "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
           *cpu_flags]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    child.stdin.write(_RESOLVE_PROGRAM)  # a few bytes: the pipe takes them without a reader
    child.stdin.close()
    child.stdin = None  # written: `communicate` only reads
    return child


def _answer(child: subprocess.Popen, cpu_flags: tuple[str, ...]) -> dict:
    try:
        stdout, stderr = child.communicate(timeout=_RESOLVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise TargetError(f"iree-compile did not resolve the host CPU for {list(cpu_flags)} "
                          f"within {_RESOLVE_TIMEOUT_S} s") from None
    found = _EXECUTABLE_TARGET.search(stdout)
    if child.returncode != 0 or found is None:
        raise TargetError(f"iree-compile could not resolve the host CPU for {list(cpu_flags)} "
                          f"(exit status {child.returncode}): {stderr.strip()[:400]}")
    return dict(_TARGET_FIELD.findall(found.group(1)))


def _forget_asked() -> None:
    """In a forked child: the parent's child processes are not this one's to read."""
    _ASKED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_asked)


def resolved_cpu(target: "Target") -> dict:
    """`resolve_host_cpu` for a llvm-cpu ``target``: the CPU its ``--iree-llvmcpu-target-*``
    flags name, or the host's when they name none. Raises `TargetError` as that does."""
    return resolve_host_cpu(llvmcpu_flags(target.flags) or _DEFAULT_CPU_FLAGS)


def native_vector_bytes(target: "Target") -> int:
    """The widest SIMD register of the CPU a llvm-cpu ``target`` compiles for (64 bytes with
    AVX-512, 32 with AVX, else 16), as iree-compile resolves its CPU. IREE's llvm-cpu refuses
    vectors of 512 such registers (LLVMCPUVerifyVectorSizeLegality), so lowerkit's own tile
    sizes (`passes/attention.py`) stay under that."""
    try:
        features = resolved_cpu(target).get("cpu_features", "")
    except TargetError:
        return 16
    return 64 if "+avx512f" in features else 32 if "+avx" in features else 16


# Why these flags: O3, data tiling and IREE's microkernels (mmt4d & co.) speed up matmul-heavy
# models; im2col turns convolutions into those same packed matmuls. Constant evaluation
# (packing weights inside iree-compile) is off: the packing runs once, when the module loads.
# The measurement is benchmarks/results/cpu-flags.json (README, "Speed"): on its Xeon, ResNet-18
# ran 31.5 ms a call with these flags, 103 ms with IREE's defaults, and compiled 10.7 s in
# iree-compile against 11.8 s with constant evaluation on. Every zoo model matches eager.
CPU_SPEED_FLAGS = (
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling",
    "--iree-llvmcpu-enable-ukernels=all",
    "--iree-global-opt-use-im2col-for-convs",
    "--iree-opt-const-eval=false",
)


# Added to a llvm-cpu compile whose module carries lowerkit's own tile sizes (a
# `compilation_info` on an op: the CPU attention's, `passes/attention.py`), and dropped with
# them by the compile ladder's first fallback. IREE's large-vector check refuses a vector
# contraction of 512 native vectors; the attention tiles at head dim 64 need twice that (four
# query rows by thirty-two keys), and IREE's own tile choices stay under the limit anyway.
CPU_OP_CONFIG_FLAGS = ("--iree-llvmcpu-fail-on-large-vector=false",)
# How many native vectors lowerkit's own tiles may span with those flags (IREE's limit is 512).
CPU_OP_CONFIG_NATIVE_VECTORS = 1024


# --iree-vulkan-target names IREE 3.13 knows (any other makes iree-compile abort). `llvmpipe`
# is Mesa's software rasteriser (lavapipe), what CI runs on.
VULKAN_ARCHS = frozenset("""
    llvmpipe vp_android_baseline_2022
    rdna1 rdna2 rdna3 rdna4 cdna1 cdna2 cdna3 cdna4
    gfx908 gfx90a gfx942 gfx950 gfx1010 gfx1011 gfx1012 gfx1013 gfx1030 gfx1031 gfx1032
    gfx1033 gfx1034 gfx1035 gfx1036 gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151 gfx1200
    gfx1201 mi100 mi210 mi250 mi250x mi300a mi300x mi308x mi325x mi350x mi355x
    rx7900xtx rx7900xt rx7800xt rx7700xt rx9070xt rx9070 v710 w7900 w7800 w7700
    phoenix strix-point strix-halo
    valhall valhall1 valhall2 valhall3 valhall4 mali-g715 mali-g615 mali-g710 mali-g510
    mali-g310 mali-g78 mali-g77 mali-g57
    ampere turing volta pascal ada sm_60 sm_61 sm_62 sm_70 sm_72 sm_75 sm_80 sm_86 sm_87 sm_89
    a100 rtx3090ti rtx3090 rtx3080ti rtx3080 rtx3070ti rtx3070 rtx4090 rtx4080
    adreno
""".split())


# Storage widths of the Vulkan targets that lack 8- or 16-bit storage buffer access, read off
# IREE 3.13's `#iree_gpu.target` (`storage = b32` ...); every other name has b64|b32|b16|b8.
# IREE's portable default is `vp_android_baseline_2022`.
VULKAN_STORAGE_BITS = {"": (32,), "vp_android_baseline_2022": (32,), "adreno": (16, 32, 64)}
# ... and those whose `compute` lacks fp64 (the portable one: `compute = fp32|int32`).
VULKAN_WITHOUT_FLOAT64 = frozenset({"", "vp_android_baseline_2022"})


def vulkan(arch: str = "", *, features: str | None = None) -> Target:
    """IREE's vulkan-spirv backend for a GPU family (IREE's portable default when empty).

    ``features`` replaces the SPIR-V environment (``--iree-vulkan-target-features``); lowerkit
    then assumes 32-bit storage only, so 8- and 16-bit tensors cross calls widened.
    """
    if arch and arch.lower() not in VULKAN_ARCHS:
        raise TargetError(
            f"unknown Vulkan target 'vulkan:{arch}'; IREE 3.13 knows: "
            f"{', '.join(sorted(VULKAN_ARCHS))} ('vulkan:llvmpipe' is the software device)")
    flags = ["--iree-hal-target-device=vulkan"]
    if arch:
        flags.append(f"--iree-vulkan-target={arch.lower()}")
    if features:
        flags.append(f"--iree-vulkan-target-features={features}")
    bits = (32,) if features else VULKAN_STORAGE_BITS.get(arch.lower(), (8, 16, 32, 64))
    if 16 not in bits:
        # SPIR-V without 16-bit storage computes f16 as f32 but sizes IREE's buffers for f16:
        # f16 values between dispatches come back as zeros. Promoted, they never exist.
        flags += ["--iree-input-promote-f16-to-f32", "--iree-input-promote-bf16-to-f32"]
    return Target(f"vulkan:{arch}" if arch else "vulkan", "vulkan-spirv", "vulkan", tuple(flags),
                  storage_bits=bits, float64=arch.lower() not in VULKAN_WITHOUT_FLOAT64)


# --iree-cuda-target names in IREE 3.13's table of known CUDA GPUs.
CUDA_ARCHS = frozenset("""
    sm_60 sm_61 sm_62 sm_70 sm_72 sm_75 sm_80 sm_86 sm_87 sm_89 sm_120 sm_121
    pascal volta turing ampere ada a100 rtx3090ti rtx3090 rtx3080ti rtx3080 rtx3070ti rtx3070
    rtx4090 rtx4080
""".split())


@dataclass(frozen=True)
class CudaArch:
    """What IREE needs to know about a CUDA GPU missing from its table (iree-org/iree#22147)."""

    arch: str
    ptx: int                      # PTX ISA version * 10 (78 = PTX 7.8)
    workgroup_memory_bytes: int   # max shared memory per block (opt-in)
    sm_count: int

    def device_attribute(self) -> str:
        """A ``#hal.device.target`` literal with the ``#iree_gpu.target`` IREE would build."""
        mma = ", ".join(f"<{m}>" for m in (
            "NV_MMA_SYNC_F32_16x8x16_F16", "NV_MMA_SYNC_F16_16x8x16_F16",
            "NV_MMA_SYNC_F32_16x8x16_BF16", "NV_WMMA_F32_16x16x16_F16",
            "NV_WMMA_F16_16x16x16_F16"))
        wgp = (
            "compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, "
            "subgroup = shuffle|arithmetic, dot = dp4xi8toi32, "
            f"mma = [{mma}], subgroup_size_choices = [32], "
            "max_workgroup_sizes = [1024, 1024, 1024], max_thread_count_per_workgroup = 1024, "
            f"max_workgroup_memory_bytes = {self.workgroup_memory_bytes}, "
            "max_workgroup_counts = [2147483647, 65535, 65535]"
        )
        gpu = (f'#iree_gpu.target<arch = "{self.arch}", features = "+ptx{self.ptx}", '
               f"wgp = <{wgp}>, chip = <wgp_count = {self.sm_count}>>")
        return ('#hal.device.target<"cuda", [#hal.executable.target<"cuda", "cuda-nvptx-fb", '
                f"{{iree_codegen.target_info = {gpu}}}>]>")


# Hopper: H100 SXM has 132 SMs and 227 KiB of shared memory per block; sm_90 needs PTX >= 7.8.
CUDA_CUSTOM_ARCHS = {
    "sm_90": CudaArch("sm_90", 78, 227 * 1024, 132),
    "sm_90a": CudaArch("sm_90a", 80, 227 * 1024, 132),
    "hopper": CudaArch("sm_90", 78, 227 * 1024, 132),
    "h100": CudaArch("sm_90", 78, 227 * 1024, 132),
}

DEFAULT_CUDA_ARCH = "sm_80"  # Ampere; its PTX also JIT-compiles for newer GPUs


def cuda(arch: str = "", *, ptx: int | None = None, workgroup_memory_bytes: int | None = None,
         sm_count: int | None = None) -> Target:
    """IREE's CUDA backend (PTX) for ``sm_NN`` (``sm_80`` by default).

    GPUs in IREE's table go by ``--iree-cuda-target``; the others (sm_90 / H100) get a device
    attribute built here. Giving any of the keyword options builds the attribute too.
    """
    arch = (arch or DEFAULT_CUDA_ARCH).lower()
    custom = CUDA_CUSTOM_ARCHS.get(arch)
    options = (ptx, workgroup_memory_bytes, sm_count)
    if custom is None and any(o is not None for o in options):
        if not arch.startswith("sm_") or not arch[3:].rstrip("a").isdigit():
            raise TargetError(f"a CUDA target with options needs an 'sm_NN' name, got {arch!r}")
        custom = CudaArch(arch, 78, 48 * 1024, 1)
    if custom is not None:
        custom = replace(custom, **{k: v for k, v in zip(
            ("ptx", "workgroup_memory_bytes", "sm_count"), options) if v is not None})
        flags = (f"--iree-hal-target-device={custom.device_attribute()}",)
    elif arch in CUDA_ARCHS:
        flags = ("--iree-hal-target-device=cuda", f"--iree-cuda-target={arch}")
    else:
        known = sorted(CUDA_ARCHS | set(CUDA_CUSTOM_ARCHS))
        raise TargetError(f"unknown CUDA target 'cuda:{arch}'; known: {', '.join(known)}")
    return Target(f"cuda:{arch}", "cuda", "cuda", flags)


def combine(*targets: Target) -> Target:
    """One target compiling for several devices; the artifact picks one when it is loaded.

    IREE builds one module whose device is selected at load time among the listed ones
    (``--iree-hal-target-device=local,vulkan``), with executables for each.
    """
    if len(targets) == 1:
        return targets[0]
    devices, rest, drivers = [], [], []
    for t in targets:
        if t.drivers:
            raise TargetError(f"cannot nest the multi-device target {t.name!r}")
        if t.driver in drivers:
            raise TargetError(f"two targets for the same driver '{t.driver}' in one artifact")
        drivers.append(t.driver)
        for f in t.flags:
            if f.startswith("--iree-hal-target-device="):
                device = f.split("=", 1)[1]
                if device.startswith("#"):
                    raise TargetError(
                        f"{t.name!r} is described by a device attribute and cannot share an "
                        "artifact with other targets in IREE 3.13; compile it on its own")
                devices.append(device)
            elif f != "--iree-opt-data-tiling":  # whole-program: only for a CPU-only module
                rest.append(f)
    # IREE 3.13's executable linking keeps only one backend's variant of a linked executable
    # when a device has several targets; unlinked, every dispatch keeps all its variants.
    flags = (f"--iree-hal-target-device={','.join(devices)}", *rest,
             "--iree-hal-link-executables=false")
    bits = tuple(b for b in (8, 16, 32, 64) if all(b in t.storage_bits for t in targets))
    return Target("+".join(t.name for t in targets), "+".join(t.backend for t in targets),
                  targets[0].driver, flags, tuple(drivers), bits,
                  all(t.float64 for t in targets))


_FACTORIES = {"cpu": cpu, "vulkan": vulkan, "cuda": cuda}
