"""Bad input gives a clear Python error naming what is wrong; the interpreter never dies."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit import InputError, StageError, Target, TargetError
from lowerkit.runtime.artifact import Artifact


class Scale(torch.nn.Module):
    def forward(self, x, y, *, alpha: float = 2.0):
        return x * alpha + y


@pytest.fixture(scope="module")
def scale_art():
    return lowerkit.compile(Scale(), (torch.randn(2, 3), torch.randn(2, 3)), {"alpha": 0.5})


def test_float_kwarg_is_baked_in_and_the_call_works(scale_art):
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    torch.testing.assert_close(scale_art(x, y, alpha=0.5), x * 0.5 + y)
    assert "constant 0.5" in scale_art.signature.describe_inputs()


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda a: a(torch.randn(2, 3)), r"do not match the compiled signature"),
        (lambda a: a(torch.randn(2, 3), torch.randn(3, 3), alpha=0.5), r"input 1 has shape \[3, 3\], expected tensor\[2, 3\]"),
        (lambda a: a(torch.randn(2, 3), torch.randn(2, 3).double(), alpha=0.5), r"input 1 has dtype float64, expected float32"),
        (lambda a: a(torch.randn(2, 3), 1.0, alpha=0.5), r"input 1 must be a tensor\[2, 3\] float32, got float"),
        (lambda a: a(torch.randn(2, 3), torch.randn(2, 3), alpha=0.25), r"was 0.5 when the program was compiled"),
        (lambda a: a(torch.randn(2, 3), torch.randn(2, 3)), r"do not match the compiled signature"),
    ],
)
def test_bad_calls_raise_input_error_with_signature(scale_art, call, pattern):
    with pytest.raises(InputError, match=pattern) as info:
        call(scale_art)
    assert "tensor[2, 3] float32" in str(info.value)  # the expected signature is shown


def test_dynamic_dims_must_agree_between_inputs():
    b = torch.export.Dim("b")
    art = lowerkit.compile(lambda x, y: x + y, (torch.randn(3, 2), torch.randn(3, 2)),
                           dynamic_shapes=({0: b}, {0: b}))
    assert art(torch.ones(5, 2), torch.ones(5, 2)).shape == (5, 2)
    with pytest.raises(InputError, match=r"expected tensor\[b, 2\].*b=5"):
        art(torch.ones(5, 2), torch.ones(4, 2))


def test_unknown_target_lists_valid_ones():
    with pytest.raises(TargetError, match=r"unknown target 'tpu'.*valid targets: .*cpu"):
        lowerkit.compile(Scale(), (torch.randn(2), torch.randn(2)), target="tpu")


def test_missing_driver_is_a_target_error(scale_art):
    broken = Artifact(scale_art.vmfb, Target("cpu", "llvm-cpu", "no-such-driver"),
                      scale_art.signature)
    with pytest.raises(TargetError, match=r"driver 'no-such-driver' is not available.*local-task"):
        broken(torch.randn(2, 3), torch.randn(2, 3), alpha=0.5)


class Unlowerable(torch.nn.Module):
    def forward(self, x):
        y = torch.special.i1(x)  # the line the error must point at
        return y + 1


def test_op_that_will_not_lower_names_stage_op_and_source_line():
    with pytest.raises(StageError) as info:
        lowerkit.compile(Unlowerable(), (torch.randn(3),))
    err = info.value
    assert err.stage == "torch-backend-contract"
    assert [d.op for d in err.diagnostics] == ["torch.aten.special_i1"]
    line = next(i for i, l in enumerate(open(__file__), 1) if "the line the error must point" in l)
    assert err.diagnostics[0].location == f"{__file__}:{line}"
    assert err.reproducer.exists() and "torch.aten.special_i1" in err.reproducer.read_text()
    program, flag = err.command.split()[:2]  # the tool by name, or by path outside an active venv
    assert Path(program).name == "torch-mlir-opt" and flag.startswith("--pass-pipeline=")


def test_export_failure_is_an_ingress_error():
    def data_dependent(x):
        if x.sum() > 0:  # control flow on data: torch.export refuses it
            return x
        return -x

    with pytest.raises(lowerkit.IngressError, match="torch-export"):
        lowerkit.compile(data_dependent, (torch.randn(3),))


def test_unsupported_argument_type_is_named():
    with pytest.raises(lowerkit.IngressError, match="argument of type object"):
        lowerkit.compile(lambda x, o: x, (torch.randn(2), object()))
