"""Calls that keep their transient memory against IREE's slab mapped afresh at every call
(issue 71).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/transients.py --json benchmarks/results/transients-zen4.json

IREE allocates a call's intermediate tensors as one slab and frees it when the call ends; past
glibc's largest mmap threshold (32 MiB) the kernel maps it afresh each time, and the call
faults it in page by page. lowerkit's CPU programs have a twin entry point that takes the slab
from the caller (`lowerkit.iree.transients`), and each loaded program keeps its buffers,
advised as huge pages (`lowerkit.runtime.transients`). ``IREE's, per call`` is the same
compile without the twin: what lowerkit did before. The shape is R3D-18's 64-channel 3x3x3
convolution with BatchNorm and ReLU, on 16 frames of 56x56; the models are issue 71's. All are
timed interleaved with eager and torch.compile, medians of rounds, and checked against eager.
"""

from __future__ import annotations

import contextlib
import warnings

MODELS = ["r3d_18", "deeplabv3_mobilenet_v3_large", "efficientnet_v2_s", "inception_v3",
          "convnext_tiny", "vit_b_16", "resnet50", "regnet_y_400mf", "mobilenet_v3_small"]
FORMS = ("kept", "IREE's, per call")


@contextlib.contextmanager
def _form(name: str):
    from lowerkit.iree import transients

    keep = transients.caller_storage
    if name != "kept":
        transients.caller_storage = lambda bytecode, function="main": bytecode
    try:
        yield
    finally:
        transients.caller_storage = keep


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")

    import torch

    from lowerkit.tools.tune import form_benchmark, form_benchmark_options, model_cases

    opts = form_benchmark_options(__doc__, MODELS, 7, argv)
    cases = []
    if opts.shapes == "all":
        def make():
            torch.manual_seed(0)
            block = torch.nn.Sequential(
                torch.nn.Conv3d(64, 64, 3, 1, 1, bias=False), torch.nn.BatchNorm3d(64),
                torch.nn.ReLU()).eval()
            return block, (torch.randn(1, 64, 16, 56, 56),)
        cases.append(("64->64 3x3x3 @16x56x56", make, "shape"))
    cases += model_cases(opts.models)
    form_benchmark(cases, {f: (lambda f=f: _form(f)) for f in FORMS}, opts.rounds, opts.json,
                   [("per call / kept",
                     lambda r: f"{r['ms'][FORMS[1]] / r['ms']['kept']:.2f}"),
                    ("kept x eager", lambda r: f"{r['ms']['eager'] / r['ms']['kept']:.2f}")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
