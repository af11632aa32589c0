"""Where torch-import's time goes: torch.export, then the second trace that decomposes.

    .venv/bin/python benchmarks/import_trace.py resnet50 bert_small mobilenet_v2 \\
        --json benchmarks/results/import-trace.json

lowerkit exports a model (``torch.export``, the training IR: one trace) and then decomposes it
(``ExportedProgram.run_decompositions``: a second, functionalized trace of the whole program
through lowerkit's and torch-mlir's tables). Timed per model, interleaved, median of
``--repeats``:

* ``export``: ``torch.export.export``, as lowerkit calls it;
* ``decompose``: ``run_decompositions`` with lowerkit's table (what lowerkit runs);
* ``decompose, torch-mlir's table only``: the same trace without lowerkit's decompositions
  (the per-tap convolutions, sorts, scans);
* ``one trace``: a single ATen-level trace of the model with the same table (torch.export's
  private ``_export(pre_dispatch=False)`` given the table: what "one trace" would cost);
* ``ops``: call nodes after export and after decomposition.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))


def one_trace(model, args, kwargs, table):
    """The model traced once at ATen level with ``table`` (torch 2.13's private export path,
    with the table split as ``run_decompositions`` splits it)."""
    from torch.export import _trace
    from torch.export.exported_program import (_override_composite_implicit_decomp,
                                               _split_decomp_table_to_cia_and_python_decomp)

    cia, python_table = _split_decomp_table_to_cia_and_python_decomp(dict(table))
    original = _trace._export_to_aten_ir

    def with_table(*a, **kw):
        kw["decomp_table"] = python_table
        return original(*a, **kw)

    _trace._export_to_aten_ir = with_table
    try:
        with _override_composite_implicit_decomp(cia):
            return _trace._export(model, args, kwargs, strict=False, pre_dispatch=False)
    finally:
        _trace._export_to_aten_ir = original


def _calls(program) -> int:
    return sum(n.op == "call_function" for n in program.graph.nodes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", type=Path, required=True)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    from lowerkit.ingress.importer import decomposition_table
    from lowerkit.tools.bench import run_metadata
    from lowerkit.zoo import get

    meta = run_metadata(" ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]))
    rows = []
    for name in a.models:
        model, args, kwargs = get(name).make()
        times: dict[str, list[float]] = {}
        ops = {}
        for _ in range(a.repeats):
            for what, run in (
                    ("export", lambda: torch.export.export(model, args, kwargs, strict=False)),
                    ("decompose", lambda: exported.run_decompositions(decomposition_table())),
                    ("decompose, torch-mlir's table only",
                     lambda: exported.run_decompositions(get_decomposition_table())),
                    ("one trace", lambda: one_trace(model, args, kwargs, decomposition_table()))):
                start = time.perf_counter()
                result = run()
                times.setdefault(what, []).append(time.perf_counter() - start)
                if what == "export":
                    exported = result
                ops[what] = _calls(result)
        rows.append({"model": name, "median_s": {k: statistics.median(v) for k, v in times.items()},
                     "ops": ops})
        print(json.dumps(rows[-1]))
    a.json.write_text(json.dumps({"meta": meta, "repeats": a.repeats, "models": rows}, indent=1)
                      + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
