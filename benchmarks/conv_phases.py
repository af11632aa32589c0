"""Strided convolutions over few channels and strided max pooling, data-tiled: whole against
by phases (issues 19, 22).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_phases.py --json benchmarks/results/conv-phases.json
    .venv/bin/python benchmarks/conv_phases.py --no-shapes --models resnet18   # one model, no file

Where dense 2-D convolutions go whole to IREE's data tiling (lowerkit's choice on an AVX-512
CPU for a dense convolution net), a strided one over fewer than
`lowerkit.ingress.decompositions.PHASE_MAX_CHANNELS` input channels is imported as the stride-1
convolution over its input's phases (``by phases``, `decompositions._conv_by_phases`) rather
than as it is (``whole``), and a strided max pooling as the maximum of a window per tap over
the phases (`decompositions._max_pool_by_phases`). Each convolution shape is a convolution
and a ReLU, batch 1, float32, compiled both ways with ``convolutions="data-tiled"``, whichever
lowerkit would pick; the pooling likewise. Each model is compiled with lowerkit's own choices
and with nothing by phases. Calls are timed interleaved with eager and torch.compile, medians
of rounds; iree-compile's seconds and the dispatch count are reported for each form.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings

# (label, C_in, C_out, H = W, kernel, stride, padding): ResNet's stem, ViT-B/16's and a
# ConvNeXt-style patchify, and 3x3 stride-2 convolutions over 3 to 16 channels (both forms are
# timed whatever lowerkit picks: the "lowerkit's" column says which it picks)
SHAPES = [
    ("7x7 /2, 3→64 @224 (ResNet stem)", 3, 64, 224, 7, 2, 3),
    ("16x16 /16, 3→768 @224 (ViT-B/16 patches)", 3, 768, 224, 16, 16, 0),
    ("4x4 /4, 3→96 @224 (patchify)", 3, 96, 224, 4, 4, 0),
    ("3x3 /2, 3→32 @224", 3, 32, 224, 3, 2, 1),
    ("3x3 /2, 4→32 @112", 4, 32, 112, 3, 2, 1),
    ("3x3 /2, 8→32 @112", 8, 32, 112, 3, 2, 1),
    ("3x3 /2, 8→64 @224", 8, 64, 224, 3, 2, 1),
    ("3x3 /2, 12→48 @112", 12, 48, 112, 3, 2, 1),
    ("3x3 /2, 16→32 @112", 16, 32, 112, 3, 2, 1),
]
# (label, C, H = W, kernel, stride, padding): max pooling, data-tiled around it
POOLS = [("max pool 3x3 /2, 64 @112 (ResNet)", 64, 112, 3, 2, 1)]
MODELS = ("resnet18", "resnet50")
FORMS = ("whole", "by phases")


@contextlib.contextmanager
def _phases(on: bool | None):
    """The import's phases forms (convolutions and max pooling) for every eligible shape
    (True), for none (False), or where lowerkit picks them (None: convolutions below
    `PHASE_MAX_CHANNELS`, every strided max pooling)."""
    from lowerkit.ingress import decompositions

    keep = decompositions.PHASE_MAX_CHANNELS, decompositions.POOL_BY_PHASES
    decompositions.PHASE_MAX_CHANNELS = keep[0] if on is None else 1 << 30 if on else 0
    decompositions.POOL_BY_PHASES = keep[1] if on is None else on
    try:
        yield
    finally:
        decompositions.PHASE_MAX_CHANNELS, decompositions.POOL_BY_PHASES = keep


def _max_pool(k: int, s: int, p: int):
    """ResNet's max pooling after its stem."""
    import torch

    return torch.nn.MaxPool2d(k, s, p).eval()


def _conv_relu(c: int, o: int, k: int, s: int, p: int):
    """A convolution and a ReLU."""
    import torch

    return torch.nn.Sequential(torch.nn.Conv2d(c, o, k, s, p), torch.nn.ReLU()).eval()


def bench(label: str, model, args, rounds: int, convolutions: str | None,
          forced: bool = True) -> dict:
    """Both forms of ``model`` (every eligible convolution and pooling by phases, or none;
    with ``forced`` False, lowerkit's pick against none), timed interleaved with eager and
    torch.compile."""
    from lowerkit.tools.tune import compare_forms

    forms = {"whole": lambda: _phases(False),
             "by phases": lambda: _phases(True if forced else None)}
    return {"name": label, **compare_forms(model, args, forms, rounds, convolutions=convolutions)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--models", default=",".join(MODELS), help="zoo models")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.ingress.decompositions import PHASE_MAX_CHANNELS
    from lowerkit.tools.bench import start_run, write_results
    from lowerkit.zoo import ZOO

    meta = start_run(threads=2)
    rows = []
    console = Console(width=170)
    if opts.shapes:
        for label, c, o, size, k, s, p in SHAPES:
            torch.manual_seed(0)
            with console.status(label):
                rows.append({**bench(label, _conv_relu(c, o, k, s, p),
                                     (torch.randn(1, c, size, size),), opts.rounds, "data-tiled"),
                             "kind": "shape", "c_in": c,
                             "lowerkits": "by phases" if c < PHASE_MAX_CHANNELS else "whole"})
        for label, c, size, k, s, p in POOLS:
            torch.manual_seed(0)
            with console.status(label):
                rows.append({**bench(label, _max_pool(k, s, p),
                                     (torch.randn(1, c, size, size),), opts.rounds, "data-tiled"),
                             "kind": "shape", "c_in": c, "lowerkits": "by phases"})
    for name in filter(None, opts.models.split(",")):
        model, args, _ = ZOO[name].make()
        with console.status(name):
            rows.append({**bench(name, model, args, opts.rounds, None, forced=False),
                         "kind": "model", "lowerkits": "by phases"})
    table = Table(title="ms a call (median)")
    for col in ("", "eager", "torch.compile", *FORMS, "whole / by phases", "lowerkit's",
                "iree-compile s whole / by phases", "dispatches", "matches eager"):
        table.add_column(col)
    for r in rows:
        ms = r["ms"]
        table.add_row(r["name"], *(f"{ms[k]:.3f}" for k in ("eager", "torch.compile", *FORMS)),
                      f"{ms['whole'] / ms['by phases']:.2f}", r["lowerkits"],
                      " / ".join(f"{r['iree_compile_s'][f]:.2f}" for f in FORMS),
                      " / ".join(str(r["dispatches"][f]) for f in FORMS),
                      str(r["matches_eager"]))
    console.print(table)
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds, "rows": rows})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
