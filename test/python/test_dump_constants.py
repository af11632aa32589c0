"""Dumps elide large constants by default; ``--keep-constants`` (``elide=False``) keeps their
bytes, in lowerkit's stages and in IREE's phases alike."""

from __future__ import annotations

import re

import torch

from lowerkit.cli import main as cli_main

# The 4x8 matrix is a plain tensor the program holds (a constant of its code, inlined), not a
# parameter: parameters are IREE parameters, never in the IR (test_weights.py).
FACTORY = """
import torch
class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Linear(8, 4).weight.detach()
    def forward(self, x):
        return torch.relu(x @ self.w.t())
def linear():
    return Affine(), (torch.randn(2, 8),)
"""


def _weight_hex() -> str:
    """The 4x8 weight's bytes as MLIR prints a resource blob (upper-case hex)."""
    torch.manual_seed(0)
    return torch.nn.Linear(8, 4).weight.detach().numpy().tobytes().hex().upper()


def _dump(tmp_path, name, *flags):
    model = tmp_path / "model.py"
    model.write_text(FACTORY)
    out = tmp_path / name
    assert cli_main(["dump", f"{model}:linear", "--out", str(out), *flags]) == 0
    return {re.sub(r"^\d\d-", "", p.name): p.read_text() for p in out.glob("*.mlir")}


def test_default_dump_elides_large_constants(tmp_path):
    files = _dump(tmp_path, "elided")
    weight = _weight_hex()
    for name in ("torch-import.mlir", "linalg-on-tensors.mlir", "iree-input.mlir"):
        assert "dense_resource<torch_tensor_4_8" in files[name], name  # the weight is used ...
    assert not [n for n, text in files.items() if weight in text]  # ... its bytes are nowhere


def test_keep_constants_keeps_every_byte(tmp_path):
    files = _dump(tmp_path, "kept", "--keep-constants")
    weight = _weight_hex()
    for name in ("torch-import.mlir", "torch-backend-contract.mlir", "linalg-on-tensors.mlir",
                 "iree-input.mlir", "iree-global-optimization.mlir"):
        assert weight in files[name], name
