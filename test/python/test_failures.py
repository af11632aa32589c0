"""Failures that point somewhere: the stage, every offending op, the user's source line, and
a reproducer with the command that replays it; ``lowerkit check`` lists all ops at once."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit import FunctionStage, Pipeline, PythonPassStage, StageError
from lowerkit.cli import main as cli_main

HERE = Path(__file__).name


@torch.library.custom_op("lk_fail::first", mutates_args=())
def first(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@first.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("lk_fail::second", mutates_args=())
def second(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@second.register_fake
def _(x):
    return torch.empty_like(x)


class TwoCustomOps(torch.nn.Module):
    def forward(self, x):
        y = torch.ops.lk_fail.first(x)  # LINE first
        y = torch.sin(y)
        return torch.ops.lk_fail.second(y)  # LINE second


class TwoUnsupportedAten(torch.nn.Module):
    def forward(self, x):
        y = torch.special.bessel_j0(x)  # LINE bessel
        return torch.digamma(y + 1)  # LINE digamma


class TwoErf(torch.nn.Module):
    def forward(self, x):
        a = torch.erf(x)  # LINE erf-a
        b = a @ a.T  # a dispatch of its own between the two
        return torch.erf(b * 3)  # LINE erf-b


def _line(tag: str) -> str:
    lines = inspect.getsource(inspect.getmodule(_line)).splitlines()
    return f"{HERE}:{next(i for i, l in enumerate(lines, 1) if l.endswith(f'# LINE {tag}'))}"


def _locations(error: StageError) -> set[str]:
    """``file.py:line`` of each diagnostic (file names only)."""
    out = set()
    for d in error.diagnostics:
        if d.location:
            file, _, line = d.location.rpartition(":")
            out.add(f"{Path(file).name}:{line}")
    return out


def _check_reproducer(error: StageError, tool: str, message: str) -> None:
    """The saved input is printed with the error, and its command, run in a shell, is ``tool``
    and fails again with ``message``."""
    assert error.reproducer is not None and error.reproducer.exists()
    assert error.reproducer.suffix == ".mlir" and error.reproducer.read_text().strip()
    assert Path(error.command.split()[0]).name == tool, error.command
    assert str(error.reproducer) in str(error)  # the path is printed with the error
    replay = subprocess.run(error.command, shell=True, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1, f"{error.command}\n{replay.stderr}"
    assert message in replay.stderr, f"{error.command}\n{replay.stderr}"


def test_two_custom_ops_without_lowering_are_both_reported():
    with pytest.raises(StageError) as info:
        lowerkit.compile(TwoCustomOps(), (torch.rand(4),))
    e = info.value
    text = str(e)
    assert "lk_fail::first" in text and "lk_fail::second" in text
    assert {_line("first"), _line("second")} <= _locations(e)
    _check_reproducer(e, "lowerkit-opt", "custom op 'lk_fail::first' has no lowering")


def test_every_unsupported_aten_op_at_once_with_its_line():
    with pytest.raises(StageError) as info:
        lowerkit.compile(TwoUnsupportedAten(), (torch.rand(4),))
    e = info.value
    assert e.stage == "torch-backend-contract"
    assert {d.op for d in e.diagnostics} == {"torch.aten.special_bessel_j0", "torch.aten.digamma"}
    assert {_line("bessel"), _line("digamma")} <= _locations(e)
    _check_reproducer(e, "torch-mlir-opt", "failed to legalize operation 'torch.operator'")


def _use_erfc(module):
    """Turn math.erf into math.erfc, which IREE's CPU backend does not lower."""
    from torch_mlir import ir

    found = []
    module.operation.walk(lambda op: (found.append(op) if op.name == "math.erf" else None)
                          or ir.WalkResult.ADVANCE)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            new = ir.Operation.create("math.erfc", results=[op.results[0].type],
                                      operands=[op.operands[0]])
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()


def test_op_iree_rejects_names_iree_compile_every_op_and_line():
    pipe = Pipeline("erfc-for-iree", [lowerkit.resolve_pipeline(None), FunctionStage("use-erfc", _use_erfc)])
    with pytest.raises(StageError) as info:
        lowerkit.compile(TwoErf(), (torch.rand(4, 4),), pipeline=pipe)
    e = info.value
    assert e.stage == "iree-compile" and "math.erfc" in e.summary
    erfc = [d for d in e.diagnostics if d.op == "math.erfc"]
    assert {_line("erf-a"), _line("erf-b")} <= _locations(e) and len(erfc) == 2
    assert all(len(d.message) < 600 for d in e.diagnostics)  # target attributes shortened
    _check_reproducer(e, "iree-compile", "math.erfc")


def _refuse(op, pass_):
    op.location.emit_error("refuse-everything: refused")
    pass_.signal_pass_failure()


def test_python_pass_signalling_failure(tmp_path):
    pipe = Pipeline("refusing", [lowerkit.resolve_pipeline(None), PythonPassStage("refuse-everything", _refuse)])
    with pytest.raises(StageError) as info:
        lowerkit.compile(TwoErf(), (torch.rand(4, 4),), pipeline=pipe, dump_dir=tmp_path)
    e = info.value
    assert e.stage == "refuse-everything" and "refuse-everything" in str(e)
    _check_reproducer(e, Path(sys.executable).name, "refuse-everything: refused")  # a replay script
    # the dump keeps what was done so far, the error, and an index saying it failed
    assert any(tmp_path.glob("*-linalg-on-tensors.mlir"))
    assert any(tmp_path.glob("*-refuse-everything.error.txt"))
    assert "refuse-everything" in (tmp_path / "index.html").read_text()


def test_check_lists_all_ops_with_lines(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # rich folds long op names in a narrow table
    spec = f"{__file__}:_check_factory"
    assert cli_main(["check", spec, "--no-iree"]) == 1
    out = capsys.readouterr().out
    for op in ("torch.lk_fail.first", "torch.lk_fail.second", "special_bessel_j0", "torch.aten.digamma"):
        assert op in out, op
    assert f"{HERE}:" in out and "4 op(s) cannot be lowered" in out


class _Everything(torch.nn.Module):
    def forward(self, x):
        y = torch.ops.lk_fail.first(x)
        y = torch.special.bessel_j0(y)
        y = torch.digamma(y)
        return torch.ops.lk_fail.second(y)


def _check_factory():
    return _Everything(), (torch.rand(4),)


def _uneven_adaptive_max(a):
    y = a.abs()
    return torch.nn.functional.adaptive_max_pool2d(y, 2)  # LINE plain-function


def test_a_plain_function_points_at_its_own_line(monkeypatch):
    # torch.export keeps only frames of forward methods; lowerkit anchors the user's function,
    # so a failure points at its line, not at lowerkit's wrapper (ingress.py). The failure:
    # torch-mlir's uneven adaptive max pooling, with lowerkit's decomposition and its
    # gather-adaptive-max-pool stage both off
    monkeypatch.setenv("LOWERKIT_DECOMPOSITIONS", "0")
    base = lowerkit.resolve_pipeline(None)
    pipe = Pipeline("no-adaptive-fix", [s for s in base.stages if s.name != "gather-adaptive-max-pool"])
    with pytest.raises(StageError) as info:
        lowerkit.compile(_uneven_adaptive_max, (torch.randn(4, 4, 1, 4),), pipeline=pipe, cache=False)
    assert _line("plain-function") in _locations(info.value)


def test_check_keeps_each_source_line_whole_in_its_table():
    """A long path folded at its ``:line`` (the suite failed so in a clone one folder name
    longer): each location stays on one line, and the message wraps instead."""
    from rich.console import Console

    from lowerkit.stages.scan import UnsupportedOp
    from lowerkit.tools.check import CoverageReport

    where = "/a/rather/long/checkout/path/that/goes/on/and/on/test/python/test_failures.py:165"
    report = CoverageReport([UnsupportedOp("torch.lk_fail.first", "lower-custom-ops", where,
                                           "custom op 'lk_fail::first' has no lowering; " * 3)])
    console = Console(width=160, record=True)
    console.print(report.table())
    assert where in console.export_text()


def _quantized(x):
    return torch.quantize_per_tensor(x, 0.04, -110, torch.qint8).dequantize()  # LINE quantized


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_quantized_tensor_names_its_dtype_op_and_line(via):
    """torch-mlir's importer has no type for quantized dtypes and said only "KeyError:
    torch.qint8"."""
    x = torch.randn(3, 4)
    with pytest.raises(Exception) as caught:
        if via == "compile":
            lowerkit.compile(_quantized, (x,))
        else:
            torch._dynamo.reset()
            torch.compile(_quantized, backend="lowerkit", options={"strict": True})(x)
    message = str(caught.value)
    assert "stage 'torch-import' failed: torch-mlir's importer has no type for torch.qint8" in message
    assert "quantize_per_tensor" in message and _line("quantized") in message
