"""`lowerkit bisect` finds planted wrong-answer faults: a Python stage, an iree-compile flag, and
says nothing of a clean program."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.ir import Build
from lowerkit.stages.stage import FunctionStage
from lowerkit.tools.bisect import bisect
from lowerkit.zoo import ZOO


def _add_to_sub(module):
    """The planted fault: the first arith.addf becomes arith.subf (the bias add of a linear)."""
    from torch_mlir import ir

    text = module.operation.get_asm(enable_debug_info=True)
    if "arith.addf" not in text:
        return module
    return ir.Module.parse(text.replace("arith.addf", "arith.subf", 1), module.context)


def _faulty_pipeline():
    """The default pipeline with the fault right after the lowering to linalg, three stages
    before its end: the search has to find it, not take the last stage."""
    stages = list(lowerkit.resolve_pipeline(None).leaf_stages())
    at = [s.name for s in stages].index("linalg-on-tensors") + 1
    fault = FunctionStage("swap-add", _add_to_sub, Build.TORCH_MLIR)
    return lowerkit.Pipeline("faulty", [*stages[:at], fault, *stages[at:]])


def test_names_the_faulty_python_stage_and_op():
    model, args, kwargs = ZOO["mlp"].make()
    report = bisect(model, args, kwargs, pipeline=_faulty_pipeline())
    assert report.diverged, report.message
    assert report.stage == "swap-add"
    # the first linear's bias add is the first addf: its value is the first that differs
    assert (report.op, report.node) == ("aten.linear.default", "linear")
    assert report.location is not None and report.location.endswith(".py:168")  # zoo/ops.py
    assert report.op_rel_error > 1e-3


def test_clean_program_has_no_divergence():
    model, args, kwargs = ZOO["mlp"].make()
    report = bisect(model, args, kwargs)
    assert not report.diverged, report.message
    assert report.stage is None and report.op is None


# IREE 3.13 demotes contraction inputs (to bf16 unless told otherwise) only below -O3, where
# lowerkit compiles at O3; two harmless flags come first, one after.
DEMOTE = ["--iree-llvmcpu-enable-ukernels=all",
          "--iree-opt-const-eval=false",
          "--iree-global-opt-demote-contraction-inputs-operations=all",
          "--iree-global-opt-demote-contraction-inputs-type=bf16"]

def test_names_the_flag_that_changes_the_answer():
    model, args, kwargs = ZOO["mlp"].make()
    report = bisect(model, args, kwargs, flags=DEMOTE, iree_flags=["--iree-opt-level=O1"])
    assert report.diverged, report.message
    assert report.flag == "--iree-global-opt-demote-contraction-inputs-operations=all"
    assert report.stage == "iree-compile"
    assert report.op == "aten.linear.default"


FACTORY = '''
import lowerkit
from lowerkit.ir import Build
from lowerkit.stages.stage import FunctionStage
from lowerkit.zoo import ZOO


def _add_to_sub(module):
    from torch_mlir import ir

    text = module.operation.get_asm(enable_debug_info=True)
    return ir.Module.parse(text.replace("arith.addf", "arith.subf", 1), module.context)


def _faulty():
    base = lowerkit.resolve_pipeline(None)
    return lowerkit.Pipeline("faulty-cli", [*base.leaf_stages(),
                                            FunctionStage("swap-add", _add_to_sub, Build.TORCH_MLIR)])


if "faulty-cli" not in lowerkit.registry.pipelines:
    lowerkit.registry.pipelines.register("faulty-cli", _faulty)


def make():
    return ZOO["mlp"].make()
'''


def test_cli_finds_a_pipeline_the_file_registers(tmp_path, capsys):
    from lowerkit.cli import main

    file = tmp_path / "faulty_model.py"
    file.write_text(FACTORY)
    try:
        assert main(["bisect", f"{file}:make", "--pipeline", "faulty-cli", "--no-op"]) == 1
    finally:
        lowerkit.registry.pipelines.unregister("faulty-cli")
    out = capsys.readouterr().out
    assert "swap-add" in out and "diverges" in out


def test_cli_usage_errors_exit_2(capsys):
    from lowerkit.cli import main

    assert main(["bisect", "mlp", "--pipeline", "no-such-pipeline"]) == 2
    assert main(["bisect", "mlp", "--without-stage", "no-such-stage"]) == 2
    assert main(["bisect", "no_such_model"]) == 2
    err = capsys.readouterr().err
    assert "no-such-stage" in err and "no_such_model" in err
    with pytest.raises(SystemExit) as e:  # argparse's own
        main(["bisect"])
    assert e.value.code == 2


def test_reference_without_the_stage():
    model, args, kwargs = ZOO["mlp"].make()
    report = bisect(model, args, kwargs, pipeline=_faulty_pipeline(), without_stage="swap-add",
                    find_op=False)
    assert report.diverged and report.stage == "swap-add"
    assert "without stage 'swap-add'" in report.reference
    with pytest.raises(lowerkit.LowerkitError, match="no stage 'nope'"):
        bisect(model, args, kwargs, without_stage="nope")
