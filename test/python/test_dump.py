"""Dumps: every stage numbered and named, IREE phases and executables, the report's index."""

from __future__ import annotations

import json
import re

import torch

import lowerkit
from lowerkit.cli import main as cli_main
from lowerkit.iree.compiler import PHASES
from lowerkit.runtime.numerics import compare


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


def tiny():
    torch.manual_seed(0)
    return Tiny(), (torch.randn(2, 8),)


def conv_bn():
    """Two convolutions with BatchNorms, then a pooling: a program of many dispatches (one
    convolution with its BatchNorm folded in is two)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1))
    return model.eval(), (torch.randn(1, 3, 16, 16),)


def test_dump_api_writes_every_stage_and_keeps_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "sub").mkdir()
    model, args = tiny()
    dump = lowerkit.DumpInstrument(tmp_path, print_passes_of="torch-backend-contract")
    art = lowerkit.compile(model, args, dump_dir=dump)
    torch.testing.assert_close(art(*args), model(*args), rtol=1e-4, atol=1e-4)

    names = sorted(p.name for p in tmp_path.iterdir())
    numbered = [n for n in names if re.match(r"^\d\d-", n) and not n.endswith(".passes")
                and not n.endswith(".graph.json")]
    assert [int(n[:2]) for n in numbered] == list(range(len(numbered)))  # numbered, no gaps
    graphs = {n for n in names if n.endswith(".graph.json")}  # each stage's graph beside it
    assert graphs == {n[:-len(".mlir")] + ".graph.json" for n in numbered if n.endswith(".mlir")}
    stems = [n[3:] for n in numbered]
    assert stems[:2] == ["fx-graph.py", "torch-import.mlir"]
    for stage in ("torch-backend-contract.mlir", "linalg-on-tensors.mlir"):
        assert stage in stems
    phases = [s[len("iree-"):-len(".mlir")] for s in stems if s.startswith("iree-") and s.endswith(".mlir")]
    assert phases == list(PHASES)
    assert stems[-2:] == ["iree-executables", "module.vmfb"]
    assert stems.index("linalg-on-tensors.mlir") < stems.index("iree-input.mlir")

    # the user's files are untouched; the staging folder is gone
    assert (tmp_path / "notes.txt").read_text() == "mine" and (tmp_path / "sub").is_dir()
    assert not any(n.startswith(".lowerkit-staging") for n in names)

    fx = next(tmp_path.glob("00-fx-graph.py")).read_text()
    assert "aten.linear" in fx or "aten.addmm" in fx
    linalg = next(tmp_path.glob("*-linalg-on-tensors.mlir")).read_text()
    assert "linalg." in linalg
    # the 4x8 weight is an argument of @main, then an IREE parameter: its name, not its bytes
    assert '{lowerkit.parameter = "fc.weight"}' in linalg
    assert "torch_tensor_4_8" not in linalg
    iree_input = next(tmp_path.glob("*-iree-input.mlir")).read_text()
    assert '#stream.parameter.named<"model"::"fc.weight">' in iree_input

    execs = next(tmp_path.glob("*-iree-executables"))
    suffixes = {p.suffix for p in execs.iterdir()}
    assert {".mlir", ".ll", ".s", ".so"} <= suffixes
    passes = next(tmp_path.glob("*-torch-backend-contract.passes"))
    assert len(list(passes.rglob("*.mlir"))) > 3

    index = json.loads((tmp_path / "index.json").read_text())
    assert index["ok"] and index["dispatches"] >= 1 and index["vmfb_bytes"] == len(art.vmfb)
    by_name = {s["name"]: s for s in index["stages"]}
    assert by_name["linalg-on-tensors"]["dialects"]["linalg"] >= 1
    assert "torch.aten.mm" in by_name["linalg-on-tensors"]["disappeared"]
    assert "linalg.matmul" in by_name["linalg-on-tensors"]["appeared"]
    assert by_name["iree-flow"]["dispatches"] >= 1 and by_name["iree-vm"]["functions"] >= 1
    assert all(by_name[f"iree-{p}"]["seconds"] is not None for p in PHASES)
    assert (tmp_path / "index.html").read_text().count("class='stage'") >= len(numbered)

    # statistics reach the artifact and `lowerkit run`'s table
    stats = art.compile_stats
    assert [p["name"] for p in stats["phases"]] == list(PHASES)
    assert stats["dispatches"] >= 1 and stats["binary_bytes"] > 0
    from rich.console import Console

    console = Console(record=True, width=160)
    console.print(art.stage_table())
    text = console.export_text()
    assert "└ dispatch-creation" in text and "dispatches" in text


def test_iree_phases_are_asked_for():
    """A plain compile skips IREE's phase dumps (their printing slows iree-compile); asking
    for them records all twelve, and the stage table says how to ask."""
    from rich.console import Console

    model, args = conv_bn()
    plain = lowerkit.compile(model, args, cache=False)
    assert plain.compile_stats["phases"] == [] and plain.compile_stats["dispatches"] >= 1
    console = Console(record=True, width=160)
    console.print(plain.stage_table())
    assert "iree_phases=True" in console.export_text()

    seen = lowerkit.compile(model, args, cache=False, iree_phases=True)
    assert [p["name"] for p in seen.compile_stats["phases"]] == list(PHASES)
    # printing the phases changes nothing that is compiled, and both answers are eager's
    assert seen.vmfb == plain.vmfb
    # one program, one count: the flow phase's, or the dispatch names the vmfb keeps (each
    # initializer numbers its dispatches from 0, as the program's own do)
    assert plain.compile_stats["dispatches"] == seen.compile_stats["dispatches"] > 2
    with torch.no_grad():
        expected = model(*args)
    for art in (plain, seen):  # within f32's default, a share of the output's scale
        result = compare(art(*args), expected)
        assert result.ok, result


def test_dump_cli(tmp_path, capsys):
    model_file = tmp_path / "model.py"
    model_file.write_text(
        "import torch\n"
        "def factory():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh()), (torch.randn(1, 4),)\n"
    )
    out = tmp_path / "dump"
    assert cli_main(["dump", f"{model_file}:factory", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "index.html" in printed and "iree-vm" in printed
    assert (out / "index.html").exists() and any(out.glob("*-module.vmfb"))
