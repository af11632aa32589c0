"""Nets with depthwise convolutions: the rule against data tiling, by their depthwise share (issue 71).

    OMP_WAIT_POLICY=PASSIVE LOWERKIT_TUNING_DB=off .venv/bin/python benchmarks/depthwise_share.py \\
        --json benchmarks/results/conv-strategy-grouped-zen4.json

On a CPU with 512-bit vectors lowerkit data-tiles a net's dense convolutions whole
(`lowerkit.tuning.choose_convolutions`), but its depthwise ones, and dilated dense ones, stay
per tap, channels-first, with layout changes between the two. ``per-tap share`` is their part
of the net's convolution work (`tuning.ConvWork.per_tap_share`); a net at or under
`tuning.AUTO_MAX_PER_TAP_SHARE` is data-tiled where nobody chose. Each net is compiled three
ways: ``rule`` (per tap or im2col, channels-first), ``data-tiled`` and ``iree-defaults`` (every
convolution whole, IREE's matmul tile: `lowerkit bench`'s peer). All are timed interleaved
with eager and torch.compile, medians of rounds, and checked against eager. The nets are the
real models with depthwise convolutions, then four held out from the choice: timm's
EfficientNetV2-B0 and -RW-T (Fused-MBConv stages first, like EfficientNet-V2-S) and
torchvision's EfficientNet-B0 and MnasNet (depthwise blocks throughout).
"""

from __future__ import annotations

import argparse
import warnings

REAL = ["efficientnet_v2_s", "deeplabv3_mobilenet_v3_large", "regnet_y_400mf",
        "mobilenet_v3_small", "convnext_tiny", "convnext_atto"]
# held out: (library, name, input size)
HELD_OUT = [("timm", "tf_efficientnetv2_b0", 224), ("timm", "efficientnetv2_rw_t", 288),
            ("torchvision", "efficientnet_b0", 224), ("torchvision", "mnasnet1_0", 224)]


def _held_out(library: str, name: str, size: int):
    import torch

    from lowerkit.zoo import ecosystem, real_models

    image = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(7))
    torch.manual_seed(0)
    if library == "timm":
        model = ecosystem._timm().create_model(name, pretrained=False)
    else:
        model = getattr(ecosystem.import_torchvision().models, name)(weights=None)
    return real_models._calibrated(model, image), (image,)


def _share(row: dict, make) -> None:
    """Adds the net's per-tap share and lowerkit's own choice for it on this host."""
    import torch

    from lowerkit import tuning
    from lowerkit.ingress.decompositions import conv_work

    model, args = make()
    work = conv_work(torch.export.export(model, tuple(args)).graph)
    with tuning.applied("cpu", tuning.TuningDatabase("/nonexistent/tuning.json")):
        tuning.choose_convolutions(work)
        chose = tuning.DATA_TILED if tuning.dense_convolutions_whole() else tuning.RULE
    row.update(per_tap_share=work.per_tap_share, lowerkits_choice=chose)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(REAL), help="names in zoo.real_models")
    parser.add_argument("--held-out", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    from rich.console import Console
    from rich.table import Table

    from lowerkit import tuning
    from lowerkit.tools.bench import iree_defaults, run_metadata, write_results
    from lowerkit.tools.tune import form_benchmark, model_cases

    meta = run_metadata()

    cases = model_cases(opts.models)
    for library, name, size in HELD_OUT if opts.held_out else []:
        cases.append((f"{name} @{size}", lambda a=(library, name, size): _held_out(*a),
                      "held out"))
    forms = {"rule": lambda: tuning.forced_convolutions(tuning.RULE),
             "data-tiled": lambda: tuning.forced_convolutions(tuning.DATA_TILED),
             "iree-defaults": iree_defaults}
    rows = form_benchmark(cases, forms, opts.rounds, None)
    for row, (_, make, _) in zip(rows, cases):
        _share(row, make)
    table = Table(title="by per-tap share: data-tiled against the rule, lowerkit's choice "
                        "against IREE's defaults")
    for header in ("", "per-tap share", "rule / data-tiled", "lowerkit's choice",
                   "iree-defaults / choice"):
        table.add_column(header, justify="left" if not header else "right")
    for r in rows:
        ms = r["ms"]
        table.add_row(r["name"], f"{r['per_tap_share']:.3f}",
                      f"{ms['rule'] / ms['data-tiled']:.2f}", r["lowerkits_choice"],
                      f"{ms['iree-defaults'] / ms[r['lowerkits_choice']]:.2f}")
    Console(width=170).print(table)
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds,
                                  "max_per_tap_share": tuning.AUTO_MAX_PER_TAP_SHARE,
                                  "rows": rows})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
