"""What the CPU executes for one step of lowerkit's attention dispatch (issue 22): the innermost
loop of the attention dispatch in the machine code iree-compile generates for this host, by
instruction kind, against the two matmuls' multiply-adds that a step cannot do without.

    .venv/bin/python benchmarks/attention_loop.py --json benchmarks/results/attention-loop-zen4.json
    .venv/bin/python benchmarks/attention_loop.py --cases d64-plain-1504 --tiles '32,2,32'

Each case (`attention.py`'s names) is compiled by ``lowerkit.compile`` with
``--iree-hal-dump-executable-files-to``, checked against eager, and timed (median of
``--calls`` calls). From the dump: the attention dispatch's tiles (its ``compilation_info``,
rows and keys per step) and, in the linked module's assembly, the dispatch's innermost loop
(the loop, closed by a backward branch, holding no other): one step over ``rows x keys``
scores. The matmuls' multiply-adds a step needs are ``2 x rows x keys x head_dim / lanes``
(``Q K^T`` and ``P V``, ``lanes`` float32 lanes a vector register holds on this CPU).
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention import TOLERANCE, case  # noqa: E402  (this folder's attention benchmark)

from lowerkit.tools.bench import run_metadata  # noqa: E402

# instruction kinds, first match wins; the register-to-register moves of vectors between lanes
# (shuffles, permutes, extracts, inserts) are what a reduction across a vector's lanes costs
KINDS = (
    ("fused multiply-add", re.compile(r"^v?fn?m(add|sub)")),
    ("stack load or store", re.compile(r"\(%rsp\)")),
    ("lane shuffle, extract or insert",
     re.compile(r"^v(shuf|perm|extract|insert|unpck|movshdup|movsldup|palignr|align)")),
    ("broadcast", re.compile(r"^vp?broadcast")),
    ("max or min", re.compile(r"^v(max|min)")),
    ("other vector arithmetic", re.compile(r"^v(add|sub|mul|div|rndscale|cvt|cmp|p|and|or|xor|blend|sqrt|rcp|rsqrt|scalef|getexp|fixup|ternlog)")),
    ("vector load or store", re.compile(r"^v(mov|gather|scatter|masked)")),
)
_DIRECTIVE = re.compile(r"^\s*(\.|#|$)")
_LABEL = re.compile(r"^(\.?[\w$.]+):")
_BRANCH = re.compile(r"^\s*j\w+\s+(\.?[\w$.]+)")


def _function(asm: list[str], name_part: str) -> tuple[str, list[str]]:
    """The body of the first function whose name holds ``name_part``."""
    start = name = None
    for i, line in enumerate(asm):
        m = _LABEL.match(line)
        if m and not m.group(1).startswith(".") and name_part in m.group(1):
            start, name = i, m.group(1)
            break
    if start is None:
        raise SystemExit(f"no function named like {name_part!r} in the assembly")
    end = next((i for i in range(start + 1, len(asm)) if asm[i].lstrip().startswith(".Lfunc_end")),
               len(asm))
    return name, asm[start:end]


def innermost_loop(body: list[str]) -> list[str]:
    """The instructions of the largest loop (a label and a later branch back to it) that
    holds no other loop."""
    labels = {m.group(1): i for i, line in enumerate(body) if (m := _LABEL.match(line))}
    loops = []
    for i, line in enumerate(body):
        m = _BRANCH.match(line)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            loops.append((labels[m.group(1)], i))
    inner = [(a, b) for a, b in loops
             if not any(a < c and d <= b and (c, d) != (a, b) for c, d in loops)]
    if not inner:
        raise SystemExit("no loop in the dispatch")
    a, b = max(inner, key=lambda ab: ab[1] - ab[0])
    return [line.strip() for line in body[a + 1:b + 1]
            if not _DIRECTIVE.match(line) and not _LABEL.match(line)]


def kind_of(instruction: str) -> str:
    mnemonic = instruction.split()[0]
    for kind, pattern in KINDS:
        if pattern.search(instruction if kind == "stack load or store" else mnemonic):
            return kind
    return "scalar and control"


def _tiles(configured: str) -> tuple[int, int]:
    """(rows, keys) a vector step of the attention op covers, from its ``compilation_info``."""
    rows = re.search(r"vector_common_parallel = \[1, (\d+),", configured)
    keys = re.search(r"vector_reduction = \[0, 0, 0, 0, (\d+)\]", configured)
    if not (rows and keys):
        raise SystemExit("the attention dispatch carries no lowerkit tiles")
    return int(rows.group(1)), int(keys.group(1))


def one(name: str, calls: int, tiles: tuple[int, int, int] | None = None) -> dict:
    import lowerkit
    from lowerkit.passes import attention
    from lowerkit.target import Target, native_vector_bytes

    model, args, flops = case(name)
    chosen = attention.cpu_tiles
    if tiles is not None:  # every attention op at these tiles instead of `cpu_tiles`' choice
        attention.cpu_tiles = lambda m, s, d, limit=0: tiles
    with tempfile.TemporaryDirectory(prefix="attention-loop-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            art = lowerkit.compile(model, args, cache=False,
                                   iree_flags=[f"--iree-hal-dump-executable-files-to={tmp}"])
        finally:
            attention.cpu_tiles = chosen
        with torch.inference_mode():
            expected = model(*args)
        got = art(*args)
        error = ((got - expected).abs().max() / expected.abs().max()).item()
        for _ in range(3):
            art(*args)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            art(*args)
            times.append(time.perf_counter() - start)
        configured = next(text for text in (Path(p).read_text() for p in
                                            sorted(glob.glob(f"{tmp}/configured_*.mlir")))
                          if "iree_linalg_ext.attention" in text or "online_attention" in text)
        asm = Path(glob.glob(f"{tmp}/*_linked_*.s")[0]).read_text().splitlines()
    dispatch, body = _function(asm, "attention")
    loop = innermost_loop(body)
    kinds: dict[str, int] = {}
    for instruction in loop:
        k = kind_of(instruction)
        kinds[k] = kinds.get(k, 0) + 1
    rows, keys = _tiles(configured)
    head_dim = args[0].shape[-1]
    lanes = native_vector_bytes(Target.parse("cpu")) // 4
    needed = 2 * rows * keys * head_dim // lanes
    return {"case": name, "tiles": list(tiles) if tiles else None, "dispatch": dispatch, "rows": rows, "keys": keys, "head_dim": head_dim,
            "lanes": lanes, "instructions": len(loop), "kinds": kinds, "matmul_fmas": needed,
            "call_ms": 1e3 * statistics.median(times), "gflops": flops / statistics.median(times) / 1e9,
            "error": error, "matches": bool(error <= TOLERANCE)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="d16-plain-1500,d64-plain-1504")
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--tiles", default="",
                   help="';'-separated R,r,k (rows a workgroup, rows a step, keys a step): each "
                        "case again at each, after lowerkit's own")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    tried = [tuple(int(v) for v in t.split(",")) for t in a.tiles.split(";") if t]
    rows = [one(n, a.calls, t) for n in a.cases.split(",") for t in (None, *tried)]
    table = Table(title="the attention dispatch's innermost loop: one step")
    for col in ("case", "rows x keys", "instructions", "per score", "FMAs (matmuls need)",
                "lane moves", "stack", "call ms", "matches eager"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        k = r["kinds"]
        table.add_row(r["case"] + (f" at {','.join(map(str, r['tiles']))}" if r["tiles"] else ""),
                      f"{r['rows']} x {r['keys']}", str(r["instructions"]),
                      f"{r['instructions'] / (r['rows'] * r['keys']):.1f}",
                      f"{k.get('fused multiply-add', 0)} ({r['matmul_fmas']})",
                      str(k.get("lane shuffle, extract or insert", 0)),
                      str(k.get("stack load or store", 0)), f"{r['call_ms']:.2f}",
                      "yes" if r["matches"] else "NO")
    Console(width=200).print(table)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"meta": run_metadata(), "cases": rows}, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0 if all(r["matches"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
