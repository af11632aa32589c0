"""Whether this host's CPU can run code compiled for an LLVM CPU.

iree-compile bakes the target CPU's features into the llvm-cpu code; IREE's runtime loads it on
any x86-64 host without a check, and the first instruction the host lacks kills the process
(SIGILL). An artifact therefore records the features it was compiled with (`Artifact.cpu`), and
loading it for a CPU driver compares them with ``/proc/cpuinfo`` first.

Only instruction-set extensions that compiled tensor code can contain are compared (`CPUINFO`:
SIMD, FMA, AMX, bit manipulation, crypto). System features (``xsave``, ``rdpid``, ``shstk``,
...) are never emitted by codegen and vary between hypervisors, so they are not. Hosts that are
not x86-64 Linux are not checked.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

# LLVM's x86 feature name -> the flag Linux prints in /proc/cpuinfo for it.
CPUINFO = {
    "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1",
    "sse4.2": "sse4_2", "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
    "popcnt": "popcnt", "lzcnt": "abm", "bmi": "bmi1", "bmi2": "bmi2", "movbe": "movbe",
    "adx": "adx", "cx16": "cx16", "aes": "aes", "pclmul": "pclmulqdq", "sha": "sha_ni",
    "gfni": "gfni", "vaes": "vaes", "vpclmulqdq": "vpclmulqdq",
    "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512bw": "avx512bw",
    "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2", "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16", "avxvnni": "avx_vnni",
    "avxvnniint8": "avx_vnni_int8", "avxifma": "avx_ifma", "avxneconvert": "avx_ne_convert",
    "amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16",
    "amx-fp16": "amx_fp16", "amx-complex": "amx_complex",
}


@functools.lru_cache(maxsize=1)
def cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo; empty where it cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():  # the first processor's block ends here
            break
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def host_flags() -> frozenset[str] | None:
    """The host CPU's flags from /proc/cpuinfo; None where they cannot be read (not Linux)."""
    flags = cpuinfo().get("flags")
    return None if flags is None else frozenset(flags.split())


def host_model() -> str:
    return cpuinfo().get("model name") or platform.processor() or "unknown CPU"


def enabled(features: str) -> list[str]:
    """The features an LLVM feature string (``"+avx2,+amx-tile,-amx-tile"``) leaves on. A later
    entry overrides an earlier one, as in LLVM: iree-compile's ``host`` lists the CPU model's
    features, then what the host actually offers (a VM may switch AMX off)."""
    state: dict[str, bool] = {}
    for f in features.split(","):
        if f[:1] in "+-" and len(f) > 1:
            state[f[1:]] = f[0] == "+"
    return [name for name, on in state.items() if on]


def missing(features: str, flags: frozenset[str] | None = None) -> list[str]:
    """The features (LLVM names) that code compiled with ``features`` may use and this host
    lacks; empty when the host cannot be checked."""
    if flags is None:
        flags = host_flags() if platform.machine() in ("x86_64", "AMD64") else None
    if flags is None:
        return []
    return [f for f in enabled(features) if f in CPUINFO and CPUINFO[f] not in flags]
