"""Dense convolutions per tap: one tap a matmul against three (issue 71).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/tap_rows.py --json benchmarks/results/tap-rows-zen3.json

On a CPU without AVX-512 lowerkit writes a dense convolution per kernel tap (2-D ones by
`decompositions.taps_pay`, 3-D ones of one clip by `_taps_3d`), each tap a matmul over
K = C_in that accumulates into the running sum. ``three a matmul`` stacks three taps' windows
as one operand, K = 3 x C_in (`decompositions.TAPS_PER_MATMUL`): the running sum is read and
written a third as often and each matmul is deeper. The shapes are ResNet's and R3D-18's
per-tap convolutions, each with BatchNorm and ReLU, and the models are the real models whose
dense convolutions go per tap there. All are timed interleaved with eager and torch.compile,
medians of rounds, and checked against eager.
"""

from __future__ import annotations

import contextlib
import warnings

# (input channels, output channels, frames (0: a 2-D image), size, stride)
SHAPES = [(64, 64, 0, 56, 1), (128, 128, 0, 28, 1), (32, 32, 0, 112, 1),
          (64, 64, 16, 56, 1), (128, 128, 8, 28, 1)]
MODELS = ["r3d_18", "efficientnet_v2_s", "inception_v3", "resnet50"]
FORMS = {"three a matmul": 3, "one a matmul": 1}


@contextlib.contextmanager
def _form(name: str):
    from lowerkit.ingress import decompositions

    keep = decompositions.TAPS_PER_MATMUL
    decompositions.TAPS_PER_MATMUL = FORMS[name]
    try:
        yield
    finally:
        decompositions.TAPS_PER_MATMUL = keep


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")

    import torch

    from lowerkit.tools.tune import form_benchmark, form_benchmark_options, model_cases

    opts = form_benchmark_options(__doc__, MODELS, 5, argv)
    cases = []
    for c_in, c_out, frames, size, stride in SHAPES if opts.shapes == "all" else []:
        where = f"{frames}x{size}x{size}" if frames else f"{size}x{size}"
        label = f"{c_in}->{c_out} 3x3{'x3' if frames else ''} @{where}" + (
            f" /{stride}" if stride != 1 else "")

        def make(c_in=c_in, c_out=c_out, frames=frames, size=size, stride=stride):
            torch.manual_seed(0)
            nn = torch.nn
            conv, norm = (nn.Conv3d, nn.BatchNorm3d) if frames else (nn.Conv2d, nn.BatchNorm2d)
            block = nn.Sequential(conv(c_in, c_out, 3, stride, 1, bias=False), norm(c_out),
                                  nn.ReLU()).eval()
            return block, (torch.randn(1, c_in, *([frames] if frames else []), size, size),)
        cases.append((label, make, "shape"))
    cases += model_cases(opts.models)
    form_benchmark(cases, {f: (lambda f=f: _form(f)) for f in FORMS}, opts.rounds, opts.json,
                   [("one / three", lambda r: f"{r['ms']['one a matmul'] / r['ms']['three a matmul']:.2f}"),
                    ("three x eager", lambda r: f"{r['ms']['eager'] / r['ms']['three a matmul']:.2f}")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
