"""F.scaled_dot_product_attention at real sequence lengths (issue 22): eager, torch.compile and
lowerkit interleaved, each case's numerics against eager, and where lowerkit's time goes per
IREE dispatch before and after `passes/attention.py`.

    .venv/bin/python benchmarks/attention.py --json benchmarks/results/attention.json
    .venv/bin/python benchmarks/attention.py --cases d16-plain-1500,d64-causal-1024   # some
    .venv/bin/python benchmarks/attention.py --list

Each case is batch 1, float32, 4 heads: ``d{head dim}-{plain|causal|mask|boolmask|keymask}-{L}``
(``mask``: an additive float mask ``[1, 1, L, L]``; ``boolmask``: a boolean one; ``keymask``:
a key-padding mask ``[1, 1, 1, L]``, its last eighth of keys at -inf). Contenders
run interleaved (`lowerkit.tools.bench.measure`), torch on 2 threads (``--torch-threads``);
lowerkit's CPU code runs on IREE's workers, one per core. ``error`` is lowerkit's largest
difference from eager relative to the largest eager output (the output's scale).

The dispatch profile (``--profile``, on by default) compiles ``d16-plain-1500`` twice, with
``LOWERKIT_DECOMPOSITIONS=0`` (torch's math decomposition, what lowerkit did before: scores
materialised) and as lowerkit does now, with ``--iree-hal-dump-executable-benchmarks-to``, and
times every dispatch alone with ``iree-benchmark-module`` (median of 3).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from rich.console import Console
from rich.table import Table

from lowerkit.tools.bench import BenchResult, geomean, measure, prepare, run_metadata, warm_up

HEADS = 4
CASES = [
    *(f"d16-plain-{n}" for n in (128, 512, 1024, 1500, 2048, 4096)),
    *(f"d64-plain-{n}" for n in (128, 512, 1024, 2048, 4096)),
    *(f"d64-causal-{n}" for n in (128, 1024, 4096)),
    *(f"d64-mask-{n}" for n in (128, 1024, 4096)),
    "d64-boolmask-1024",
    *(f"d64-keymask-{n}" for n in (1024, 4096)),
]
# fp32 attention over up to 4096 keys: both sides sum in float32 in other orders
TOLERANCE = 1e-4


class Attention(torch.nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def forward(self, q, k, v, *mask):
        if self.kind == "causal":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None)


def case(name: str) -> tuple[torch.nn.Module, tuple, float]:
    """The model, its arguments and its matmul FLOPs (2 x 2 x H x L x L x D) for a case name."""
    m = re.fullmatch(r"d(\d+)-(plain|causal|mask|boolmask|keymask)-(\d+)", name)
    if not m:
        raise SystemExit(f"unknown case {name!r}; see --list")
    d, kind, n = int(m.group(1)), m.group(2), int(m.group(3))
    gen = torch.Generator().manual_seed(n * 131 + d)
    args = tuple(torch.randn(1, HEADS, n, d, generator=gen) for _ in range(3))
    if kind == "mask":
        args += (torch.randn(1, 1, n, n, generator=gen),)
    elif kind == "boolmask":
        keep = torch.rand(1, 1, n, n, generator=gen) > 0.2
        keep[..., 0] = True  # no row entirely masked (eager gives NaN there)
        args += (keep,)
    elif kind == "keymask":
        pad = torch.zeros(1, 1, 1, n)
        pad[..., n - n // 8:] = float("-inf")
        args += (pad,)
    return Attention(kind), args, 4.0 * HEADS * n * n * d


def _with_tiles(model, args, tiles: tuple[int, int, int]):
    """lowerkit's compile of ``model`` with every attention op at ``tiles`` (rows per
    workgroup, rows per vector tile, keys per step) instead of `cpu_tiles`' choice."""
    import lowerkit
    from lowerkit.passes import attention

    chosen = attention.cpu_tiles
    attention.cpu_tiles = lambda m, s, d, limit=0: tiles
    try:
        art = lowerkit.compile(model, args, target="cpu", cache=False)
    finally:
        attention.cpu_tiles = chosen
    return lambda: art(*args)


def bench_case(name: str, rounds: int, tiles: tuple[tuple[int, int, int], ...] = ()) -> dict:
    model, args, flops = case(name)
    result = BenchResult(name, flops=flops)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls = prepare(model, args, {}, "cpu", result)
        for t in tiles:  # timed interleaved with the rest, as contenders of their own
            calls["lowerkit@" + ",".join(map(str, t))] = _with_tiles(model, args, t)
        with torch.inference_mode():
            expected = model(*args)
        errors = {k: ((c() - expected).abs().max() / expected.abs().max()).item()
                  for k, c in calls.items() if k.startswith("lowerkit")}
        error = errors.pop("lowerkit", float("nan"))
        measure(calls, result, rounds=rounds)
    row = result.to_json()
    if tiles:
        from lowerkit.ingress.decompositions import MAX_KEY_TILE, _sdpa_tile_poor
        from lowerkit.passes import attention

        _, _, n, d = args[0].shape
        # the length `cpu_tiles` sees: `_sdpa_padded` pads a tile-poor one
        padded = -(-n // MAX_KEY_TILE) * MAX_KEY_TILE if _sdpa_tile_poor(n) else n
        row["tiles"] = {"lowerkit": list(attention.cpu_tiles(padded, padded, d, _cpu_limit())),
                        "tried": [list(t) for t in tiles], "errors": errors}
    row["error"] = error
    row["matches"] = bool(error <= TOLERANCE)
    return row


def _cpu_limit() -> int:
    from lowerkit.target import CPU_OP_CONFIG_NATIVE_VECTORS, Target, native_vector_bytes

    return native_vector_bytes(Target.parse("cpu")) * CPU_OP_CONFIG_NATIVE_VECTORS // 4


# -- per-dispatch profile ----------------------------------------------------------------------
def _dispatch_times(model, args, env: dict) -> dict:
    """Every dispatch of ``model``'s lowerkit compile, timed alone (µs, median of 3), and the
    whole call's median (ms, 5 calls)."""
    import lowerkit
    from lowerkit.iree.compiler import common_flags, iree_compile_tool
    from lowerkit.target import Target

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    folder = tempfile.mkdtemp(prefix="lowerkit-attention-dispatches-")
    try:
        art = lowerkit.compile(model, args, target="cpu", cache=False,
                               iree_flags=[f"--iree-hal-dump-executable-benchmarks-to={folder}"])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    target = Target.parse("cpu")
    tool = Path(sys.executable).with_name("iree-benchmark-module")
    out = []
    for source in sorted(glob.glob(os.path.join(folder, "*_benchmark.mlir"))):
        vmfb = source[:-len(".mlir")] + ".vmfb"
        subprocess.run([iree_compile_tool(), source, *common_flags(target),
                        *target.compile_flags(), "-o", vmfb], check=True, capture_output=True)
        text = subprocess.run([str(tool), f"--module={vmfb}", "--device=local-task",
                               "--benchmark_repetitions=3", "--benchmark_min_time=0.2s"],
                              capture_output=True, text=True, timeout=600).stdout
        for line in text.splitlines():
            m = re.match(r"BM_(\S+?)/.*real_time_median\s+([\d.]+) (ns|us|ms)", line)
            if m:
                scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[m.group(3)]
                dispatch = re.sub(r"^.*?_embedded_elf_x86_64_", "", m.group(1))
                out.append({"dispatch": dispatch, "us": float(m.group(2)) * scale})
    art(*args)
    calls = []
    for _ in range(5):
        start = time.perf_counter()
        art(*args)
        calls.append((time.perf_counter() - start) * 1e3)
    return {"call_ms": statistics.median(calls), "dispatches": out}


def profile(name: str = "d16-plain-1500") -> dict:
    model, args, _ = case(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"case": name,
                "before": _dispatch_times(model, args, {"LOWERKIT_DECOMPOSITIONS": "0"}),
                "after": _dispatch_times(model, args, {})}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", help="comma-separated case names (default: all, see --list)")
    p.add_argument("--list", action="store_true", help="print the case names and exit")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--no-profile", action="store_true", help="skip the per-dispatch profile")
    p.add_argument("--tiles", help="also time lowerkit with each attention tile triple R,r,k "
                   "(rows per workgroup, rows per vector tile, keys per step), ';'-separated")
    p.add_argument("--json", type=Path, help="store the run here")
    a = p.parse_args(argv)
    if a.list:
        print("\n".join(CASES))
        return 0
    torch.set_num_threads(a.torch_threads)
    names = a.cases.split(",") if a.cases else CASES
    meta = run_metadata()
    warm_up("cpu")
    rows = []
    tiles = tuple(tuple(int(x) for x in t.split(",")) for t in (a.tiles or "").split(";") if t)
    for name in names:
        rows.append(bench_case(name, a.rounds, tiles))
        r = rows[-1]
        ms = r["median_ms"]
        print(f"{name}: eager {ms.get('eager', float('nan')):.3f} ms, torch.compile "
              f"{ms.get('torch.compile', float('nan')):.3f} ms, lowerkit "
              f"{ms.get('lowerkit', float('nan')):.3f} ms, error {r['error']:.2g}", flush=True)
    table = Table(title=f"scaled_dot_product_attention, {HEADS} heads, batch 1, fp32: ms a call "
                        "(median, interleaved)")
    for col in ("case", "eager", "torch.compile", "lowerkit", "lowerkit × eager",
                "lowerkit × torch.compile", "lowerkit GFLOP/s", "error / scale"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        ms = r["median_ms"]
        table.add_row(r["model"], *(f"{ms.get(k, float('nan')):.3f}"
                                    for k in ("eager", "torch.compile", "lowerkit")),
                      f"{r['lowerkit_vs_eager']:.2f}", f"{r['lowerkit_vs_torch_compile']:.2f}",
                      f"{(r['gflops'] or {}).get('lowerkit', float('nan')):.1f}",
                      f"{r['error']:.2g}" + ("" if r["matches"] else " ✗"))
    Console(width=200).print(table)
    print(f"geomean lowerkit × eager {geomean([r['lowerkit_vs_eager'] for r in rows]):.3f}, "
          f"× torch.compile {geomean([r['lowerkit_vs_torch_compile'] for r in rows]):.3f}; "
          f"{sum(r['matches'] for r in rows)} of {len(rows)} within {TOLERANCE:g} of eager")
    if a.tiles:
        tried = [k for k in rows[0]["median_ms"] if k.startswith("lowerkit@")]
        t = Table(title="the same calls, ms, at other attention tiles (R,r,k: rows per workgroup, "
                        "rows per vector tile, keys per step)")
        for col in ("case", "eager", "lowerkit (its tiles)", *tried):
            t.add_column(col, justify="left" if col == "case" else "right")
        for r in rows:
            ms = r["median_ms"]
            t.add_row(r["model"], f"{ms['eager']:.3f}",
                      f"{ms['lowerkit']:.3f} ({','.join(map(str, r['tiles']['lowerkit']))})",
                      *(f"{ms[k]:.3f}" for k in tried))
        Console(width=200).print(t)
    dispatches = None if a.no_profile else profile()
    if dispatches:
        for label in ("before", "after"):
            t = Table(title=f"{dispatches['case']}, {label}: a call "
                            f"{dispatches[label]['call_ms']:.1f} ms; each dispatch alone, µs")
            t.add_column("dispatch")
            t.add_column("µs", justify="right")
            for d in dispatches[label]["dispatches"]:
                t.add_row(d["dispatch"][:90], f"{d['us']:.0f}")
            Console(width=200).print(t)
    if a.json:
        meta["load_average_end"] = list(os.getloadavg())
        a.json.write_text(json.dumps({"meta": meta, "tolerance": TOLERANCE, "cases": rows,
                                      "dispatches": dispatches}, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
