"""Depthwise convolutions per tap against IREE's depthwise kernel (issue 22).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/depthwise.py --json benchmarks/results/depthwise.json
    .venv/bin/python benchmarks/depthwise.py --models "" --rounds 5        # shapes only, no file

IREE 3.13 lowers a depthwise convolution to ``linalg.depthwise_conv_2d_nchw_chw``. lowerkit's
import now writes one as a sum over kernel taps, ``per tap``: a shifted window of the input
times its channel's weight, strided windows read from phases of the input
(`lowerkit.ingress.decompositions`). ``whole`` is the same compile with the depthwise
convolutions left to IREE, which is what lowerkit did before.
Each shape is MobileNetV2's at 224×224, or a wider kernel of MobileNetV3, DeepLabV3 or
ConvNeXt (`WIDE_SHAPES`), as a one-convolution program. The models are the
issue's depthwise-separable CNN (3×3 depthwise + 1×1, BatchNorm, ReLU6, 112×112) and the zoo's
MobileNetV2. All are timed interleaved with eager and torch.compile, medians of rounds, and
checked against eager.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings

# MobileNetV2's depthwise convolutions at 224x224: (channels, size, stride), 3x3
SHAPES = [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (192, 28, 2),
          (384, 14, 1), (576, 14, 1), (576, 14, 2), (960, 7, 1)]
# Wider kernels (channels, size, stride, kernel, dilation): DeepLabV3-MobileNetV3-large's 5x5
# ones at 520x520 (its last, dilated), MobileNetV3's at 224, ConvNeXt-tiny's 7x7 ones
WIDE_SHAPES = [(960, 33, 1, 5, 2), (120, 65, 1, 5, 1), (672, 65, 2, 5, 1), (72, 130, 2, 5, 1),
               (40, 56, 2, 5, 1), (96, 56, 1, 7, 1), (384, 14, 1, 7, 1), (768, 7, 1, 7, 1)]
MODELS = ["dw_separable", "mobilenet_v2"]


@contextlib.contextmanager
def _depthwise_whole(on: bool):
    """Depthwise convolutions left whole to IREE (lowerkit before this change) when ``on``."""
    from lowerkit.ingress import decompositions

    keep = decompositions.taps_pay
    if on:
        decompositions.taps_pay = lambda x, w, stride, groups=1, positions=None, **kw: (
            False if groups != 1 else keep(x, w, stride, groups, positions, **kw))
    try:
        yield
    finally:
        decompositions.taps_pay = keep


def _make(name: str):
    if name == "dw_separable":
        from lowerkit.zoo.real_shapes import dw_separable

        return dw_separable()
    from lowerkit.zoo import ZOO

    model, args, _ = ZOO[name].make()
    return model, args


def bench(label: str, model, args, rounds: int) -> dict:
    from lowerkit.tools.tune import compare_forms

    forms = {"per tap": lambda: _depthwise_whole(False), "whole": lambda: _depthwise_whole(True)}
    return {"name": label, **compare_forms(model, args, forms, rounds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata, write_results

    torch.set_num_threads(2)
    meta = run_metadata()
    rows = []
    console = Console(width=170)
    if opts.shapes:
        for c, size, stride, kernel, dilation in [(*s, 3, 1) for s in SHAPES] + WIDE_SHAPES:
            torch.manual_seed(0)
            conv = torch.nn.Conv2d(c, c, kernel, stride, dilation * (kernel // 2), dilation,
                                   groups=c, bias=False).eval()
            label = (f"dw {c}ch @{size}" + (f" /{stride}" if stride != 1 else "")
                     + (f" {kernel}x{kernel}" if kernel != 3 else "")
                     + (f" dilated {dilation}" if dilation != 1 else ""))
            with console.status(label):
                rows.append({**bench(label, conv, (torch.randn(1, c, size, size),), opts.rounds),
                             "kind": "shape", "stride": stride})
    for name in filter(None, opts.models.split(",")):
        with console.status(name):
            rows.append({**bench(name, *_make(name), opts.rounds), "kind": "model"})
    table = Table(title="ms a call (median)")
    for col in ("", "eager", "torch.compile", "per tap", "whole", "whole / per tap",
                "compile s per tap / whole", "matches eager"):
        table.add_column(col)
    for r in rows:
        ms = r["ms"]
        table.add_row(r["name"], *(f"{ms[k]:.3f}" for k in ("eager", "torch.compile", "per tap",
                                                            "whole")),
                      f"{ms['whole'] / ms['per tap']:.2f}",
                      f"{r['compile_s']['per tap']:.1f} / {r['compile_s']['whole']:.1f}",
                      str(r["matches_eager"]))
    console.print(table)
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds, "rows": rows})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
