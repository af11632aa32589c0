"""Where iree-compile's code generation goes, by kind of executable (issue 19: which stage holds
ResNet-18's compile, and what would move it).

    .venv/bin/python benchmarks/executable_kinds.py --json benchmarks/results/executable-kinds.json
    .venv/bin/python benchmarks/executable_kinds.py --models resnet18          # a quick look

Per model (random weights, batch 1, cache off, lowerkit's default choices for this CPU):

1. ``lowerkit.compile`` with ``--iree-hal-dump-executable-sources-to``: every executable IREE
   makes, as it goes to code generation. The compile's wall and CPU seconds are recorded
   (iree-compile is a child process: ``getrusage`` of the children).
2. Each executable is compiled alone (``iree-compile --compile-mode=hal-executable``, its
   target and configuration as dumped), one process each, and its CPU seconds recorded. The
   cheapest executable's compile (a copy: mostly loading the compiler) is taken off each as a
   process's fixed cost, so the figures less it are, if anything, low.

The kinds: ``main`` (the program's dispatches), ``encoding`` (IREE's data-tiling packs, of the
weights and of activations) and ``initializer`` (what IREE hoisted out of the weights to run
once at load: transposes, folded BatchNorm scales). Compiled alone, an executable is not
linked with the others: its share is a measure of code generation, not of the linked module's
LLVM pass.
"""

from __future__ import annotations

import resource
import subprocess
import tempfile
import time
from pathlib import Path

MODELS = ["resnet18", "resnet50"]
KINDS = ("main", "encoding", "initializer")


def _kind(name: str) -> str:
    if "_encoding_" in name:
        return "encoding"
    if "_initializer_" in name:
        return "initializer"
    return "main"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _compile_alone(tool: str, source: Path, out: Path) -> float:
    """CPU seconds of one executable's compile, in its own process."""
    before = _children_cpu()
    subprocess.run([tool, "--compile-mode=hal-executable", str(source), "-o", str(out)],
                   check=True, capture_output=True)
    return _children_cpu() - before


def bench_model(name: str, make, repeats: int) -> dict:
    import statistics

    import lowerkit
    from lowerkit.iree.compiler import iree_compile_tool

    model, args = make()
    tool = iree_compile_tool()
    with tempfile.TemporaryDirectory(prefix="lowerkit-kinds-") as folder:
        sources = Path(folder) / "sources"
        before, start = _children_cpu(), time.perf_counter()
        art = lowerkit.compile(model, args, cache=False,
                               iree_flags=[f"--iree-hal-dump-executable-sources-to={sources}"])
        wall = time.perf_counter() - start
        children_cpu = _children_cpu() - before
        stats = art.compile_stats or {}
        files = sorted(sources.glob("*.mlir"))
        cpu = {}
        for f in files:
            cpu[f.name] = statistics.median(
                _compile_alone(tool, f, Path(folder) / "out.so") for _ in range(repeats))
        # a process's fixed cost, at most: the cheapest executable's whole compile (a copy)
        floor = min(cpu.values())
    by_kind = {k: {"executables": 0, "cpu_s": 0.0, "cpu_less_floor_s": 0.0} for k in KINDS}
    for file, seconds in cpu.items():
        entry = by_kind[_kind(file)]
        entry["executables"] += 1
        entry["cpu_s"] += seconds
        entry["cpu_less_floor_s"] += seconds - floor
    return {
        "model": name,
        "convolutions": stats.get("convolutions"),
        "compile_wall_s": wall,
        "iree_compile_s": stats.get("seconds"),
        "children_cpu_s": children_cpu,
        "dispatches": stats.get("dispatches"),
        "floor_cpu_s": floor,
        "by_kind": by_kind,
        "executables": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    from rich.table import Table

    from compile_cold import each_model, script_options, store

    # the same programs as the model-to-first-result table
    opts = script_options(__doc__, argv, MODELS, "repeats", 3,
                          "compiles of each executable alone (the median is kept)")
    meta, rows, console = each_model(
        opts.models, "compiling, then each executable alone",
        lambda name, make: bench_model(name, make, opts.repeats))
    table = Table(title="code generation by kind of executable, CPU s (each compiled alone, "
                        "less a process's fixed cost)")
    for col in ("model", "iree-compile s", "child processes' CPU s",
                *(f"{k}: n, CPU s" for k in KINDS), "not the program's own"):
        table.add_column(col)
    for r in rows:
        k = r["by_kind"]
        total = sum(v["cpu_less_floor_s"] for v in k.values())
        table.add_row(r["model"], f"{r['iree_compile_s']:.2f}", f"{r['children_cpu_s']:.2f}",
                      *(f"{k[x]['executables']}, {k[x]['cpu_less_floor_s']:.2f}" for x in KINDS),
                      f"{1 - k['main']['cpu_less_floor_s'] / total:.0%}")
    console.print(table)
    if opts.json:
        store(opts.json, meta, rows, repeats=opts.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
