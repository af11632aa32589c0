"""Dilated convolutions: by padding regions and per tap, against per tap alone and whole
(issue 71).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/dilated.py --json benchmarks/results/dilated-zen4.json

DeepLabV3's atrous head runs 3x3 convolutions from 960 to 256 channels at rates 12, 24 and 36
over a 33x33 map, where most taps read only padding. lowerkit's import splits such a
convolution's output into regions by the taps that reach the input there
(`lowerkit.ingress.conv_regions`) and writes each region per tap (``regions, per tap``: what
lowerkit does now). ``per tap`` computes every tap over the whole output, as before;
``whole`` leaves the convolution to IREE's im2col. The shapes are the head's three rates, one
a dilated one without padding (9x15 outputs), and a dilated 3x3 of a DeepLabV3-ResNet's
last stage; the model is torchvision's DeepLabV3-MobileNetV3-large at 520x520. All are timed
interleaved with eager and torch.compile, medians of rounds, and checked against eager.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings

# (input channels, output channels, size, rate, padding)
SHAPES = [(960, 256, 33, 12, 12), (960, 256, 33, 24, 24), (960, 256, 33, 36, 36),
          (960, 256, (13, 19), 2, 0), (512, 512, 65, 2, 2)]
MODELS = ["deeplabv3_mobilenet_v3_large"]
FORMS = ("regions, per tap", "per tap", "whole")


@contextlib.contextmanager
def _form(name: str):
    from lowerkit.ingress import decompositions

    keep_regions, keep_pay = decompositions._conv_by_regions, decompositions.taps_pay
    if name != "regions, per tap":
        decompositions._conv_by_regions = lambda *a, **k: NotImplemented
    if name == "whole":
        decompositions.taps_pay = lambda x, w, stride, groups=1, positions=None, **kw: (
            keep_pay(x, w, stride, groups, positions, **kw) if groups != 1 else False)
    try:
        yield
    finally:
        decompositions._conv_by_regions, decompositions.taps_pay = keep_regions, keep_pay


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import torch

    from lowerkit.tools.tune import form_benchmark
    from lowerkit.zoo import real_models

    cases = []
    for c_in, c_out, size, rate, pad in SHAPES:
        h, w = size if isinstance(size, tuple) else (size, size)
        label = f"{c_in}->{c_out} 3x3 rate {rate} @{h}x{w}" + ("" if pad else " unpadded")

        def make(c_in=c_in, c_out=c_out, h=h, w=w, rate=rate, pad=pad):
            torch.manual_seed(0)
            conv = torch.nn.Sequential(torch.nn.Conv2d(c_in, c_out, 3, 1, pad, rate, bias=False),
                                       torch.nn.ReLU()).eval()
            return conv, (torch.randn(1, c_in, h, w),)
        cases.append((label, make, "shape"))
    for name in filter(None, opts.models.split(",")):
        cases.append((name, lambda name=name: getattr(real_models, name)()[:2], "model"))
    form_benchmark(cases, {f: (lambda f=f: _form(f)) for f in FORMS}, opts.rounds, opts.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
