"""``lowerkit check`` through IREE: an op that the torch pipeline lowers but iree-compile
rejects is reported by check, with its stage and the user's source line."""

from __future__ import annotations

import torch

from lowerkit.cli import main as cli_main

HERE = __file__


class KthSmallest(torch.nn.Module):
    def forward(self, x):
        # torch-mlir lowers kthvalue to tm_tensor.topk, whose region iree-compile 3.13 rejects
        # ("region block must end with a linalg_ext.yield i1!")
        return torch.kthvalue(x, 2, 1).values * 2  # LINE kthvalue


def kth_smallest():
    torch.manual_seed(0)
    return KthSmallest(), (torch.rand(4, 6),)


def _line(tag: str) -> int:
    return next(i for i, text in enumerate(open(HERE).read().splitlines(), 1) if f"# LINE {tag}" in text)


def test_check_reports_an_op_iree_compile_rejects(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    spec = f"{HERE}:kth_smallest"
    assert cli_main(["check", spec, "--no-iree"]) == 0  # the torch pipeline lowers it ...
    assert "kth_smallest: every op lowers" in capsys.readouterr().out

    assert cli_main(["check", spec]) == 1  # ... IREE does not
    out = capsys.readouterr().out
    assert "1 op(s) cannot be lowered" in out
    row = next(line for line in out.splitlines() if "tm_tensor.topk" in line)
    assert "iree-compile" in row and f"{HERE}:{_line('kthvalue')}" in row
    assert "linalg_ext.yield" in row
