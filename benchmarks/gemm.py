"""Large float32 GEMMs (issue 22): GFLOP/s of eager, torch.compile and lowerkit against this
host's measured fp32 peak, interleaved in one process; and lowerkit's matmul dispatch alone,
timed inside the call by IREE's runtime profiling (`lowerkit profile`).

    .venv/bin/python benchmarks/gemm.py --json benchmarks/results/gemm.json
    .venv/bin/python benchmarks/gemm.py --shapes square-2048          # some shapes

Shapes: ``square-2048`` (``a @ b``, both operands inputs) and the four linear layers of a
ViT-B/16 block at batch 1 (197 tokens, hidden 768, MLP 3072: ``qkv``, ``proj``, ``fc1``,
``fc2``; weights are the module's parameters, as in a model: lowerkit compiles them in and IREE
packs them once when the module loads). Torch runs on ``--torch-threads`` threads (2),
lowerkit on IREE's workers, one per usable core.

The peak is measured, not taken from a data sheet: a C loop of independent fused multiply-adds
on the widest vectors ``gcc -march=native`` gives (no memory traffic), on one OpenMP thread per
usable core, best of several runs. Sixteen accumulators with AVX-512's 32 vector registers;
twelve with AVX2's 16, where sixteen accumulators and the two operands spilled to the stack and
the loop measured 117 GFLOP/s on a 2-core Zen 3 whose unspilled loop gives 205. On a loaded
machine it comes out low, as everything else does; the stored run records the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from lowerkit.tools.bench import BenchResult, measure, prepare, run_metadata, warm_up

SHAPES = {  # name: (M, K, N)
    "square-2048": (2048, 2048, 2048),
    "vit-b-qkv": (197, 768, 2304),
    "vit-b-proj": (197, 768, 768),
    "vit-b-fc1": (197, 768, 3072),
    "vit-b-fc2": (197, 3072, 768),
}

PEAK_C = r"""
#include <omp.h>
#include <stdio.h>
#include <time.h>
typedef float vec __attribute__((vector_size(VEC_BYTES)));
#define LANES (VEC_BYTES / 4)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
  long iters = 20000000;
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    double start = now();
    float sink = 0;
    #pragma omp parallel reduction(+:sink)
    {
      vec a = {0}, b = {0};
      for (int i = 0; i < LANES; i++) { a[i] = 0.999999f; b[i] = 1e-7f; }
#define ACC(j) vec c##j = a * (float)j;
#define STEP(j) c##j = c##j * a + b;
#define SUM(j) sink += c##j[0];
#if ACCUMULATORS == 16
#define ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#else
#define ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#endif
      ALL(ACC)
      for (long i = 0; i < iters; i++) { ALL(STEP) }
      ALL(SUM)
    }
    double s = now() - start;
    double flops = 2.0 * ACCUMULATORS * LANES * iters * omp_get_max_threads();
    if (flops / s > best) best = flops / s;
    if (sink == 12345.f) printf("-");
  }
  printf("%f\n", best / 1e9);
  return 0;
}
"""


def measured_peak() -> dict:
    """fp32 GFLOP/s of `PEAK_C` on every usable core, and how it was built."""
    features = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    vec_bytes = 64 if " avx512f" in features else 32 if " avx" in features else 16
    # every accumulator and both operands in registers: 32 of them with AVX-512, 16 below it
    accumulators = 16 if vec_bytes == 64 else 12
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "peak.c", Path(tmp) / "peak"
        src.write_text(PEAK_C)
        cmd = ["gcc", "-O3", "-march=native", "-ffp-contract=fast", "-fopenmp",
               f"-DVEC_BYTES={vec_bytes}", f"-DACCUMULATORS={accumulators}",
               str(src), "-o", str(exe)]
        subprocess.run(cmd, check=True, capture_output=True)
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                             env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    return {"gflops": float(out.stdout.strip().splitlines()[-1]), "threads": threads,
            "vector_bytes": vec_bytes, "accumulators": accumulators, "build": " ".join(cmd[:-3])}


class Square(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def shape_case(name: str) -> tuple[torch.nn.Module, tuple, float]:
    m, k, n = SHAPES[name]
    torch.manual_seed(0)
    if name.startswith("square"):
        return Square(), (torch.randn(m, k), torch.randn(k, n)), 2.0 * m * k * n
    layer = torch.nn.Linear(k, n, bias=False).eval()
    return layer, (torch.randn(m, k),), 2.0 * m * k * n


def bench_shape(name: str, rounds: int) -> dict:
    model, args, flops = shape_case(name)
    result = BenchResult(name, flops=flops)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        calls = prepare(model, args, {}, "cpu", result)
        if "lowerkit" in calls:
            expected = model(*args)
            got = calls["lowerkit"]()
            error = ((got - expected).abs().max() / expected.abs().max()).item()
        else:
            error = float("nan")
        measure(calls, result, rounds=rounds)
    row = result.to_json()
    row["shape"] = list(SHAPES[name])
    row["error"] = error
    if "lowerkit" in calls:  # the matmul dispatch alone, inside the call (`lowerkit profile`)
        import lowerkit
        from lowerkit.tools.profile import kind_of, profile_artifact

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prof = profile_artifact(lowerkit.compile(model, args), args, seconds=2.0)
        matmul_ms = sum(d.ms_per_call for d in prof.dispatches if kind_of(d.name) == "matmul_like")
        row["profile"] = {"call_ms": prof.call_ms, "matmul_ms": matmul_ms,
                          "dispatch_ms": prof.dispatch_ms, "calls": prof.calls,
                          "matmul_gflops": flops / matmul_ms / 1e6}
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", help=f"comma-separated, of {', '.join(SHAPES)} (default: all)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--json", type=Path, help="store the run here")
    a = p.parse_args(argv)
    torch.set_num_threads(a.torch_threads)
    names = a.shapes.split(",") if a.shapes else list(SHAPES)
    meta = run_metadata()
    peak = measured_peak()
    print(f"measured fp32 peak: {peak['gflops']:.1f} GFLOP/s on {peak['threads']} threads "
          f"({peak['vector_bytes']}-byte vectors)", flush=True)
    warm_up("cpu")
    rows = []
    for name in names:
        rows.append(bench_shape(name, a.rounds))
        g = rows[-1]["gflops"]
        print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in g.items()) + " GFLOP/s",
              flush=True)
    peak_after = measured_peak()
    table = Table(title=f"fp32 GEMM, GFLOP/s (median, interleaved); measured peak "
                        f"{peak['gflops']:.0f} before, {peak_after['gflops']:.0f} after")
    for col in ("shape", "M×K×N", "eager", "torch.compile", "lowerkit", "lowerkit % of peak",
                "eager % of peak", "lowerkit's matmul dispatch", "its % of peak", "error / scale"):
        table.add_column(col, justify="left" if col == "shape" else "right")
    best_peak = max(peak["gflops"], peak_after["gflops"])
    for r in rows:
        g = r["gflops"]
        table.add_row(r["model"], "×".join(map(str, r["shape"])),
                      *(f"{g.get(k, float('nan')):.1f}" for k in ("eager", "torch.compile", "lowerkit")),
                      f"{100 * g.get('lowerkit', float('nan')) / best_peak:.0f}",
                      f"{100 * g.get('eager', float('nan')) / best_peak:.0f}",
                      f"{r.get('profile', {}).get('matmul_gflops', float('nan')):.1f}",
                      f"{100 * r.get('profile', {}).get('matmul_gflops', float('nan')) / best_peak:.0f}",
                      f"{r['error']:.2g}")
    Console(width=200).print(table)
    if a.json:
        meta["load_average_end"] = list(os.getloadavg())
        a.json.write_text(json.dumps({"meta": meta, "peak": peak, "peak_after": peak_after,
                                      "shapes": rows}, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
