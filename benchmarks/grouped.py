"""Grouped convolutions per tap against IREE's grouped convolution (issue 71).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/grouped.py --json benchmarks/results/grouped-zen4.json
    .venv/bin/python benchmarks/grouped.py --models "" --rounds 5      # shapes only, no file

IREE 3.13 lowers a grouped convolution (neither dense nor depthwise) to
``linalg.conv_2d_ngchw_gfchw``, which it ran at about 5 GFLOP/s on RegNet-Y-400MF's shapes
(`lowerkit profile regnet_y_400mf`: 73 % of the call). lowerkit's import writes one per tap
(`lowerkit.ingress.decompositions._grouped_taps`) in one of two forms: ``multiplies`` (each
tap's window times its weights, broadcast over a group's output channels and summed over its
input channels) and ``matmul`` (the taps' windows stacked, one batched matmul over the
groups). ``whole`` leaves the convolution to IREE, as lowerkit did before. Each shape is a
3x3 grouped convolution and ReLU at RegNet-Y's or ResNeXt-50's group widths; the models are
torchvision's RegNet-Y-400MF and ResNeXt-50 32x4d. All are timed interleaved with eager and
torch.compile, medians of rounds, and checked against eager.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings

# (channels, groups, size, stride): RegNet-Y-400MF's (8 channels a group) and ResNeXt-50
# 32x4d's (4 to 32 a group) at 224x224, and two wider groups
SHAPES = [(48, 6, 56, 1), (104, 13, 28, 1), (208, 26, 14, 1), (440, 55, 7, 1), (208, 26, 28, 2),
          (128, 32, 56, 1), (256, 16, 14, 1), (512, 16, 14, 1), (1024, 32, 7, 1),
          (512, 8, 14, 1)]
MODELS = ["regnet_y_400mf", "resnext50_32x4d"]


@contextlib.contextmanager
def _form(name: str):
    """Grouped convolutions compiled in one form: ``whole`` (to IREE), or per tap by
    ``multiplies`` or ``matmul`` whatever their width."""
    from lowerkit.ingress import decompositions

    keep_pay, keep_width = decompositions.taps_pay, decompositions.MAX_GROUP_WIDTH_BY_MULTIPLIES
    if name == "whole":
        decompositions.taps_pay = lambda x, w, stride, groups=1, positions=None, **kw: (
            False if groups != 1 and w.shape[1] != 1 else
            keep_pay(x, w, stride, groups, positions, **kw))
    else:
        decompositions.MAX_GROUP_WIDTH_BY_MULTIPLIES = 1 << 30 if name == "multiplies" else 0
    try:
        yield
    finally:
        decompositions.taps_pay = keep_pay
        decompositions.MAX_GROUP_WIDTH_BY_MULTIPLIES = keep_width


def _model(name: str):
    import torch

    from lowerkit.zoo.ecosystem import patch_torchvision

    patch_torchvision()
    import torchvision

    torch.manual_seed(0)
    return getattr(torchvision.models, name)().eval(), (torch.randn(1, 3, 224, 224),)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import torch

    from lowerkit.tools.tune import form_benchmark

    cases = []
    if opts.shapes:
        for c, groups, size, stride in SHAPES:
            torch.manual_seed(0)
            conv = torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, stride, 1, groups=groups,
                                                       bias=False), torch.nn.ReLU()).eval()
            label = (f"{c}ch / {groups} groups ({c // groups} wide) @{size}"
                     + (f" /{stride}" if stride != 1 else ""))
            cases.append((label, lambda conv=conv, c=c, size=size:
                          (conv, (torch.randn(1, c, size, size),)), "shape"))
    for name in filter(None, opts.models.split(",")):
        cases.append((name, lambda name=name: _model(name), "model"))
    forms = ("whole", "multiplies", "matmul")
    form_benchmark(cases, {f: (lambda f=f: _form(f)) for f in forms}, opts.rounds, opts.json,
                   [("whole / best per tap", lambda r: "{:.2f}".format(
                       r["ms"]["whole"] / min(r["ms"]["multiplies"], r["ms"]["matmul"])))])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
