"""3-D convolutions per tap against by kernel depth (issue 71).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv3d_forms.py --json benchmarks/results/conv3d-forms-zen3.json

Where a CPU does not data-tile convolutions whole (no AVX-512: `tuning.data_tiling_pays`),
lowerkit's import wrote each 3-D convolution as one 2-D convolution per kernel depth, with the
output depths folded into the batch (``by depth``, `decompositions._conv3d_by_depth`). Each of
those went per tap as a batched matmul whose weight is broadcast over the batch, a form IREE
3.13 does not data-tile: R3D-18 ran at 0.40x eager on a Zen 3 (real-models-zen3.json).
``per tap`` writes a dense 3-D convolution of one clip as one plain matmul per kernel tap over
all the clip's output positions (`decompositions._taps_3d`). The shapes are R3D-18's
convolutions on 16 frames of 112x112, each with BatchNorm and ReLU; the model is
torchvision's R3D-18. All are timed interleaved with eager and torch.compile, medians of
rounds, and checked against eager.
"""

from __future__ import annotations

import contextlib
import warnings

# (input channels, output channels, frames, size, stride): R3D-18's 3x3x3 convolutions at 16
# frames of 112x112 (its stem is 3 channels: by depth either way)
SHAPES = [(64, 64, 16, 56, 1), (64, 128, 16, 56, 2), (128, 128, 8, 28, 1),
          (256, 256, 4, 14, 1), (512, 512, 2, 7, 1)]
MODELS = ["r3d_18"]
FORMS = ("per tap", "by depth")


@contextlib.contextmanager
def _form(name: str):
    from lowerkit.ingress import decompositions

    keep = decompositions.TAPS_3D
    decompositions.TAPS_3D = name == "per tap"
    try:
        yield
    finally:
        decompositions.TAPS_3D = keep


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")

    import torch

    from lowerkit.tools.tune import form_benchmark, form_benchmark_options, model_cases

    opts = form_benchmark_options(__doc__, MODELS, 7, argv)
    cases = []
    for c_in, c_out, frames, size, stride in SHAPES if opts.shapes == "all" else []:
        label = f"{c_in}->{c_out} 3x3x3 @{frames}x{size}x{size}" + (
            f" /{stride}" if stride != 1 else "")

        def make(c_in=c_in, c_out=c_out, frames=frames, size=size, stride=stride):
            torch.manual_seed(0)
            block = torch.nn.Sequential(
                torch.nn.Conv3d(c_in, c_out, 3, stride, 1, bias=False),
                torch.nn.BatchNorm3d(c_out), torch.nn.ReLU()).eval()
            return block, (torch.randn(1, c_in, frames, size, size),)
        cases.append((label, make, "shape"))
    cases += model_cases(opts.models)
    form_benchmark(cases, {f: (lambda f=f: _form(f)) for f in FORMS}, opts.rounds, opts.json,
                   [("per tap x eager",
                     lambda r: f"{r['ms']['eager'] / r['ms']['per tap']:.2f}")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
