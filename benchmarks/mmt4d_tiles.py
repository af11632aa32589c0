"""Does the data-tiled matmul's vector tile hold lowerkit's fp32 GEMM on this CPU? (issue 22)

    .venv/bin/python benchmarks/mmt4d_tiles.py --json benchmarks/results/mmt4d-tiles.json
    .venv/bin/python benchmarks/mmt4d_tiles.py --shapes vit-b-fc2 --rounds 5

lowerkit's GEMMs are IREE 3.13's data-tiled ``linalg.mmt4d`` (``CPU_SPEED_FLAGS``). On AVX-512
IREE packs float32 operands into 16x16x1 tiles, whatever the core: each step of the inner
loop is one 16-wide load of the right-hand side and sixteen broadcast-FMAs, one per row. A
core with two 512-bit FMA units (Intel's server cores) must then issue 17 loads for every 16
FMAs, where a Zen 4 core (one 512-bit FMA a cycle) has time to spare.

Each variant compiles one matmul (both operands function inputs, so each call also packs
them), with the CPU target's own flags: IREE's microkernel (what lowerkit runs), then IREE's
code generation for the same ``mmt4d`` with the vector tile IREE chose and with others, set
by editing the dispatch's ``lowering_config`` between ``--compile-to`` and
``--compile-from=executable-configurations`` (a tuning spec cannot reach a data-tiled
dispatch). Every variant is timed by ``iree-benchmark-module`` under ``SCHED_BATCH`` (as
lowerkit's calls wait), in interleaved rounds; the median over rounds is kept.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lowerkit.runtime.yielding_wait import batch_child
from lowerkit.target import cpu
from lowerkit.tools.bench import run_metadata
from lowerkit.iree.compiler import iree_compile_tool
from lowerkit.tools.profile import runtime_tool

SHAPES = {"square-2048": (2048, 2048, 2048), "vit-b-fc2": (197, 3072, 768),
          "vit-b-qkv": (197, 768, 2304)}
# (name, ukernels, the mmt4d's vector_common_parallel tile: M1, N1, K1, M0, N0, K0; None keeps
# IREE's). The fill of the accumulator takes the same tile over its four dims.
VARIANTS = (
    ("microkernel (lowerkit)", "all", None),
    ("codegen, IREE's tile", "none", None),
    ("codegen, 2 N-tiles a step", "none", (1, 2, 0, 16, 16, 0)),
    ("codegen, 8 rows x 2 N-tiles", "none", (1, 2, 0, 8, 16, 0)),
)
_TILE = re.compile(r"(linalg\.mmt4d \{lowering_config = #iree_cpu\.lowering_config<[^>]*?"
                   r"vector_common_parallel = \[)([\d, ]+)(\])")
_FILL = re.compile(r"(linalg\.fill \{lowering_config = #iree_cpu\.lowering_config<"
                   r"vector_common_parallel = \[)([\d, ]+)(\]>\} ins\(%\w+ : f32\) outs\(%\w+ : "
                   r"tensor<\d+x\d+x\d+x\d+xf32>\))")
# the median line when there are repetitions, else the one line
_MEDIAN = re.compile(r"real_time(?:_median)?\s+([\d.]+) (us|ms|s)\b")


def matmul_mlir(m: int, k: int, n: int) -> str:
    return f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
"""


def _flags(ukernels: str) -> list[str]:
    flags = [f for f in cpu().compile_flags()
             if not f.startswith("--iree-llvmcpu-enable-ukernels")]
    return flags + [f"--iree-llvmcpu-enable-ukernels={ukernels}"]


def compile_variant(src: Path, out: Path, ukernels: str, tile: tuple | None) -> str | None:
    """The vmfb for one variant; the mmt4d tile IREE chose (or the one set) as text."""
    compiler = iree_compile_tool()
    configs = out.with_suffix(".configs.mlir")
    subprocess.run([compiler, *_flags(ukernels), str(src), "--compile-to=executable-configurations",
                    "-o", str(configs)], check=True, capture_output=True, text=True)
    text = configs.read_text()
    found = _TILE.search(text)
    if found is None:
        raise SystemExit(f"no mmt4d lowering_config in {configs}: is data tiling off?")
    chosen = found.group(2)
    if tile is not None:
        text = _TILE.sub(lambda m: m.group(1) + ", ".join(map(str, tile)) + m.group(3), text)
        fill = (tile[0], tile[1], tile[3], tile[4])
        text = _FILL.sub(lambda m: m.group(1) + ", ".join(map(str, fill)) + m.group(3), text)
        configs.write_text(text)
        chosen = ", ".join(map(str, tile))
    subprocess.run([compiler, *_flags(ukernels), "--compile-from=executable-configurations",
                    str(configs), "-o", str(out)], check=True, capture_output=True, text=True)
    return chosen


def time_call(vmfb: Path, m: int, k: int, n: int, repetitions: int) -> float:
    """Median ms of ``repetitions`` benchmark repetitions of a call, as lowerkit's calls wait."""
    done = subprocess.run(
        [runtime_tool("iree-benchmark-module"), f"--module={vmfb}", "--device=local-task",
         "--function=mm", f"--input={m}x{k}xf32", f"--input={k}x{n}xf32",
         f"--benchmark_repetitions={repetitions}", "--benchmark_min_time=0.3"],
        check=True, capture_output=True, text=True, preexec_fn=batch_child)
    found = ([m for m in _MEDIAN.finditer(done.stdout) if "_median" in m.group(0)]
             or list(_MEDIAN.finditer(done.stdout)) or [None])[0]
    if found is None:
        raise SystemExit(f"no median in iree-benchmark-module's output:\n{done.stdout}")
    return float(found.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[found.group(2)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"of {', '.join(SHAPES)}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repetitions", type=int, default=3, help="benchmark repetitions a round")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    meta = run_metadata()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mmt4d-tiles-") as scratch:
        folder = Path(scratch)
        for shape in a.shapes.split(","):
            m, k, n = SHAPES[shape]
            src = folder / f"{shape}.mlir"
            src.write_text(matmul_mlir(m, k, n))
            built = []
            for i, (name, ukernels, tile) in enumerate(VARIANTS):
                vmfb = folder / f"{shape}-{i}.vmfb"
                built.append((name, vmfb, compile_variant(src, vmfb, ukernels, tile)))
            samples: dict[str, list[float]] = {name: [] for name, _, _ in built}
            for r in range(a.rounds):  # interleaved, the order turned each round
                for name, vmfb, _ in (built if r % 2 == 0 else built[::-1]):
                    samples[name].append(time_call(vmfb, m, k, n, a.repetitions))
            flops = 2 * m * k * n
            for name, _, tile in built:
                ms = statistics.median(samples[name])
                rows.append({"shape": shape, "mkn": [m, k, n], "variant": name, "tile": tile,
                             "median_ms": ms, "gflops": flops / ms / 1e6, "samples_ms": samples[name]})
    table = Table(title="fp32 matmul with both operands packed each call: ms (median of rounds)")
    for col in ("shape", "variant", "mmt4d vector tile", "ms", "GFLOP/s", "× microkernel"):
        table.add_column(col, justify="right" if col in ("ms", "GFLOP/s", "× microkernel") else "left")
    base = {r["shape"]: r["median_ms"] for r in rows if r["variant"] == VARIANTS[0][0]}
    for r in rows:
        table.add_row(r["shape"], r["variant"], r["tile"] or "-", f"{r['median_ms']:.3g}",
                      f"{r['gflops']:.0f}", f"{base[r['shape']] / r['median_ms']:.2f}×")
    Console().print(table)
    if a.json:
        a.json.write_text(json.dumps({"meta": meta, "rounds": a.rounds, "rows": rows}, indent=1))
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
