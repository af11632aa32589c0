"""A convolution's bias added after it, and its BatchNorm folded into its weights (issues 19, 22).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_folding.py --json benchmarks/results/conv-folding.json
    .venv/bin/python benchmarks/conv_folding.py --models resnet18 --repeats 1   # one model, no file

Each program is compiled four ways: as before (torch-mlir's convolution with its bias as the
sum's initial value, and a BatchNorm's four vectors applied to the result), with the bias added
after the convolution (`lowerkit.ingress.decompositions.BIAS_AFTER`), with that and the fold
(`lowerkit.ingress.conv_folding`) of convolution ops only (``taps unfolded``: a depthwise
convolution that goes per tap keeps its chain, `conv_folding.FOLD_TAPS`), and with the fold of
its taps too, which is what lowerkit now does. Calls are timed
interleaved with eager and torch.compile (`lowerkit.tools.tune.compare_forms`, medians of
rounds); each form is then compiled ``--repeats`` more times, interleaved, for the median
compile time (cache off, in a process that has compiled before), iree-compile's share and the
number of parameters the program reads (the model's tensors and the derived weights).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import warnings

FORMS = ("before", "bias after", "taps unfolded", "both (now)")
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "dw_separable", "dw_separable_fused",
          "pointwise_bias")


@contextlib.contextmanager
def _form(bias_after: bool, fold: bool, taps: bool):
    from lowerkit.ingress import conv_folding, decompositions

    keep = decompositions.BIAS_AFTER, conv_folding.FOLD, conv_folding.FOLD_TAPS
    decompositions.BIAS_AFTER, conv_folding.FOLD, conv_folding.FOLD_TAPS = bias_after, fold, taps
    try:
        yield
    finally:
        decompositions.BIAS_AFTER, conv_folding.FOLD, conv_folding.FOLD_TAPS = keep


CONTEXTS = {"before": lambda: _form(False, False, False),
            "bias after": lambda: _form(True, False, False),
            "taps unfolded": lambda: _form(True, True, False),
            "both (now)": lambda: _form(True, True, True)}


def _program(name: str):
    """(model, args): a zoo model, issue 22's depthwise-separable CNN as written and with its
    BatchNorms fused into biased convolutions by torch.fx (as a user who fused them gets), or
    a 1x1 convolution with a bias over a 224x224 image."""
    import torch
    import torch.fx.experimental.optimization as fx_opt

    from lowerkit.zoo import ZOO
    from lowerkit.zoo.real_shapes import dw_separable

    if name == "pointwise_bias":
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 1, bias=False),
                                    torch.nn.Conv2d(32, 64, 1), torch.nn.ReLU6()).eval()
        return model, (torch.randn(1, 3, 224, 224),)
    if name.startswith("dw_separable"):
        model, args = dw_separable()
        model = model.eval()
        return (fx_opt.fuse(model) if name.endswith("_fused") else model), args
    model, args, _ = ZOO[name].make()
    return model.eval(), args


def compile_times(model, args, repeats: int) -> dict:
    """Per form, the median seconds of ``repeats`` compiles (interleaved) and of their
    iree-compile."""
    import lowerkit
    from lowerkit.tools.tune import iree_compile_seconds

    total: dict[str, list[float]] = {f: [] for f in FORMS}
    iree: dict[str, list[float]] = {f: [] for f in FORMS}
    parameters: dict[str, int] = {}
    for _ in range(repeats):
        for form in FORMS:
            with CONTEXTS[form]():
                start = time.perf_counter()
                art = lowerkit.compile(model, args, cache=False)
                total[form].append(time.perf_counter() - start)
            iree[form].append(iree_compile_seconds(art))
            parameters[form] = len(art.parameters)
    return {"compile_s": {f: statistics.median(v) for f, v in total.items()},
            "iree_compile_s": {f: statistics.median(v) for f, v in iree.items()},
            "compile_samples": total, "iree_compile_samples": iree, "parameters": parameters}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=3, help="compiles per form for times")
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import start_run, write_results
    from lowerkit.tools.tune import compare_forms

    meta = start_run(threads=2)
    console = Console(width=170)
    rows = []
    for name in filter(None, opts.models.split(",")):
        model, args = _program(name)
        with console.status(name):
            timed = compare_forms(model, args, CONTEXTS, opts.rounds)
            row = {"name": name, **timed, "single_compile": {
                "compile_s": timed.pop("compile_s"), "iree_compile_s": timed.pop("iree_compile_s")}}
            row.update(compile_times(model, args, opts.repeats))
        rows.append(row)
    table = Table(title=f"ms a call (median of {opts.rounds}); compile s (median of "
                        f"{opts.repeats}), {' / '.join(FORMS)}")
    for col in ("", "eager", "torch.compile", *FORMS, "before / now", "taps unfolded / now",
                "now × eager", "compile s", "iree-compile s", "dispatches", "parameters",
                "matches eager"):
        table.add_column(col)
    for r in rows:
        ms = r["ms"]
        table.add_row(r["name"], *(f"{ms[k]:.3f}" for k in ("eager", "torch.compile", *FORMS)),
                      f"{ms['before'] / ms['both (now)']:.2f}",
                      f"{ms['taps unfolded'] / ms['both (now)']:.2f}",
                      f"{ms['eager'] / ms['both (now)']:.2f}",
                      " / ".join(f"{r['compile_s'][f]:.2f}" for f in FORMS),
                      " / ".join(f"{r['iree_compile_s'][f]:.2f}" for f in FORMS),
                      " / ".join(str(r["dispatches"][f]) for f in FORMS),
                      " / ".join(str(r["parameters"][f]) for f in FORMS),
                      str(r["matches_eager"]))
    console.print(table)
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds, "repeats": opts.repeats,
                                  "forms": list(FORMS), "rows": rows})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
