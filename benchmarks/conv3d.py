"""3-D convolutions at a video model's sizes (issue 22): eager, torch.compile and lowerkit
interleaved, with and without lowerkit's split of each 3-D convolution by kernel depth.

    .venv/bin/python benchmarks/conv3d.py --json benchmarks/results/conv3d.json

Cases, batch 1, float32, random weights:

- ``r3d18``: the topology of torchvision's R3D-18 (a 3x7x7 stem with stride 1x2x2, four stages
  of two BasicBlocks of 3x3x3 convolutions with BatchNorm and ReLU, 1x1x1 strided shortcuts,
  global pooling, a 400-way linear) on an 8x112x112 clip; written here so that it needs no
  torchvision.
- ``block-64``: one 64->64 3x3x3 convolution, BatchNorm and ReLU over 8x28x28.

``lowerkit`` is ``lowerkit.compile`` as it is; ``lowerkit, no split`` the same with
``LOWERKIT_DECOMPOSITIONS=0`` (IREE's own 3-D convolution, what lowerkit did before; it also
turns off the other decompositions of `lowerkit.ingress.decompositions`, which these models do
not reach). ``error`` is the largest difference from eager relative to the output's scale.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table
from torch import nn

from lowerkit.tools.bench import BenchResult, measure, prepare, run_metadata, warm_up

TOLERANCE = 1e-4  # fp32 sums over up to 27 x 512 products, in another order than eager's


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv3d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm3d(cout)
        self.conv2 = nn.Conv3d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm3d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv3d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm3d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class R3D18(nn.Module):
    def __init__(self, classes: int = 400):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(64), nn.ReLU())
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(self.layers(self.stem(x)).mean((2, 3, 4)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(64, 64, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm3d(64)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def _randomised(model: nn.Module) -> nn.Module:
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for m in model.modules():
            if isinstance(m, nn.BatchNorm3d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


CASES = {
    "r3d18": lambda: (_randomised(R3D18()), (torch.randn(1, 3, 8, 112, 112),)),
    "block-64": lambda: (_randomised(Block()), (torch.randn(1, 64, 8, 28, 28),)),
}


def bench_case(name: str, rounds: int) -> dict:
    torch.manual_seed(0)
    model, args = CASES[name]()
    result = BenchResult(name)
    with torch.inference_mode():
        expected = model(*args)
    errors = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls = prepare(model, args, {}, "cpu", result)
        os.environ["LOWERKIT_DECOMPOSITIONS"] = "0"
        try:
            plain = BenchResult(name)
            calls["lowerkit, no split"] = prepare(model, args, {}, "cpu", plain,
                                                  ("lowerkit",))["lowerkit"]
        finally:
            del os.environ["LOWERKIT_DECOMPOSITIONS"]
        for label in ("lowerkit", "lowerkit, no split"):
            got = calls[label]()
            errors[label] = ((got - expected).abs().max() / expected.abs().max()).item()
        measure(calls, result, rounds=rounds)
    row = result.to_json()
    row["error"] = errors
    row["matches"] = all(e <= TOLERANCE for e in errors.values())
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    torch.set_num_threads(a.torch_threads)
    meta = run_metadata()
    warm_up("cpu")
    rows = [bench_case(name, a.rounds) for name in a.cases.split(",")]
    table = Table(title="3-D convolutions, batch 1, fp32: ms a call (median, interleaved)")
    contenders = ("eager", "torch.compile", "lowerkit", "lowerkit, no split")
    for col in ("case", *contenders, "lowerkit × eager", "no split × eager", "error / scale"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in rows:
        ms = r["median_ms"]
        table.add_row(r["model"], *(f"{ms.get(k, float('nan')):.1f}" for k in contenders),
                      f"{ms['eager'] / ms['lowerkit']:.2f}",
                      f"{ms['eager'] / ms['lowerkit, no split']:.3f}",
                      f"{max(r['error'].values()):.2g}" + ("" if r["matches"] else " ✗"))
    Console(width=200).print(table)
    if a.json:
        meta["load_average_end"] = list(os.getloadavg())
        a.json.write_text(json.dumps({"meta": meta, "tolerance": TOLERANCE, "cases": rows},
                                     indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
