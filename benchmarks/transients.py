"""Calls that keep their transient memory against IREE's slab mapped afresh at every call
(issue 71).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/transients.py --json benchmarks/results/transients-zen4.json

IREE allocates a call's intermediate tensors as one slab and frees it when the call ends; past
glibc's largest mmap threshold (32 MiB) the kernel maps it afresh each time, and the call
faults it in page by page. A lowerkit CPU program with a large intermediate tensor has a twin
entry point that takes the slab from the caller (`lowerkit.iree.transients`), and a loaded
program whose slab is past that threshold keeps its buffers, advised as huge pages
(`lowerkit.runtime.transients`): ``kept where it pays``, what lowerkit does now. ``kept, every
program`` compiles and calls the twin whatever the sizes (what decided the two thresholds);
``IREE's, per call`` is the compile without the twin, what lowerkit did before. The shape is
R3D-18's 64-channel 3x3x3 convolution with BatchNorm and ReLU, on 16 frames of 56x56; the
models are issue 71's. All are timed interleaved with eager and torch.compile, medians of
rounds, and checked against eager.
"""

from __future__ import annotations

import contextlib
import warnings

MODELS = ["r3d_18", "deeplabv3_mobilenet_v3_large", "convnext_tiny", "vit_b_16", "resnet50",
          "mobilenet_v3_small"]
FORMS = ("kept where it pays", "kept, every program", "IREE's, per call")


@contextlib.contextmanager
def _form(name: str):
    from lowerkit.iree import transients
    from lowerkit.runtime import transients as kept

    saved = transients.caller_storage, transients.MIN_LARGEST_BYTES, kept.MIN_SLAB_BYTES
    if name == FORMS[1]:
        transients.MIN_LARGEST_BYTES = kept.MIN_SLAB_BYTES = 0
    elif name == FORMS[2]:
        transients.caller_storage = lambda bytecode, function="main": bytecode
    try:
        yield
    finally:
        transients.caller_storage, transients.MIN_LARGEST_BYTES, kept.MIN_SLAB_BYTES = saved


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")

    import torch

    from lowerkit.tools.bench import run_metadata, write_results
    from lowerkit.tools.tune import form_benchmark, form_benchmark_options, model_cases

    opts = form_benchmark_options(__doc__, MODELS, 7, argv)
    meta = run_metadata()
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
    sizes = {label: _sizes(make) for label, make, _ in cases}
    rows = form_benchmark(cases, {f: (lambda f=f: _form(f)) for f in FORMS}, opts.rounds, None,
                   [(f"{f} / now", lambda r, f=f: f"{r['ms'][f] / r['ms'][FORMS[0]]:.2f}")
                    for f in FORMS[1:]]
                   + [("eager / now", lambda r: f"{r['ms']['eager'] / r['ms'][FORMS[0]]:.2f}")])
    for r in rows:
        r.update(sizes[r["name"]])
        print(f"{r['name']}: largest intermediate {r['largest_intermediate_bytes'] / 2**20:.1f} "
              f"MiB, slab {r['slab_bytes'] / 2**20:.1f} MiB")
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds, "rows": rows})
        print(f"wrote {opts.json}")
    return 0


def _sizes(make) -> dict:
    """The program's largest intermediate tensor (what decides whether the twin is compiled)
    and its slab (what decides whether it is called), from a compile with the twin."""
    import torch

    from lowerkit.api import compile as compile_program
    from lowerkit.iree import transients

    seen = []
    keep = transients._largest_intermediate

    def largest(entry):
        seen.append(keep(entry))
        return seen[-1]

    model, args = make()
    transients._largest_intermediate = largest
    try:
        with _form(FORMS[1]):
            art = compile_program(model, args, cache=False)
            with torch.inference_mode():
                art(*args)
            storage = art.executable.loaded[4]
    finally:
        transients._largest_intermediate = keep
    return {"largest_intermediate_bytes": seen[-1], "slab_bytes": storage.size}


if __name__ == "__main__":
    raise SystemExit(main())
