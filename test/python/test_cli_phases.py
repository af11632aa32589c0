"""``lowerkit run --phases`` (IREE's twelve phases in the stage table) and ``lowerkit dump
--print-passes-of STAGE`` (the IR after every pass of one stage, or of iree-compile)."""

from __future__ import annotations

import re

from lowerkit.cli import main as cli_main
from lowerkit.iree.compiler import PHASES

FACTORY = """
import torch
def tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), (torch.randn(2, 8),)
"""


def _model(tmp_path) -> str:
    f = tmp_path / "model.py"
    f.write_text(FACTORY)
    return f"{f}:tiny"


def _phase_rows(out: str) -> list[str]:
    return re.findall(r"└ ([a-z-]+)\s", out)


def test_run_phases_puts_iree_phases_in_the_table(tmp_path, capsys):
    spec = _model(tmp_path)
    assert cli_main(["run", spec, "--no-cache"]) == 0
    plain = capsys.readouterr().out
    assert _phase_rows(plain) == [] and "lowerkit run --phases" in plain  # says how to ask

    assert cli_main(["run", spec, "--phases", "--check"]) == 0
    out = capsys.readouterr().out
    assert _phase_rows(out) == list(PHASES)
    assert "compile cache hit" not in out and "matches eager" in out


def _passes_folder(out_dir, stage):
    folders = sorted(out_dir.glob("*.passes"))
    assert [f.name[3:] for f in folders] == [f"{stage}.passes"]
    return folders[0]


def test_dump_print_passes_of_a_pipeline_stage(tmp_path):
    out = tmp_path / "dump"
    assert cli_main(["dump", _model(tmp_path), "--out", str(out),
                     "--print-passes-of", "torch-backend-contract"]) == 0
    folder = _passes_folder(out, "torch-backend-contract")
    stage_file = next(out.glob("*-torch-backend-contract.mlir"))
    assert folder.name[:2] == stage_file.name[:2]  # numbered as the stage
    files = [p.name for p in folder.rglob("*.mlir")]
    # passes of torch-mlir's backend-contract pipeline, each its own file
    assert any(n.endswith("_torch-reduce-op-variants.mlir") for n in files), files[:20]
    assert any(n.endswith("_torch-decompose-complex-ops.mlir") for n in files)
    assert any(n.endswith("_canonicalize.mlir") for n in files) and len(files) >= 8


def test_dump_print_passes_of_iree_compile(tmp_path):
    out = tmp_path / "dump"
    assert cli_main(["dump", _model(tmp_path), "--out", str(out),
                     "--print-passes-of", "iree-compile"]) == 0
    folder = _passes_folder(out, "iree-compile")
    files = [p.name for p in folder.rglob("*.mlir")]
    assert any("_iree-flow-" in n for n in files) and any("_iree-hal-" in n for n in files), files[:20]
    assert len(files) > 100  # every pass of iree-compile, not its twelve phases
