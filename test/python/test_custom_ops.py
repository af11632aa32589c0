"""Custom PyTorch ops lowered by Python lowerings registered with lowerkit."""

import torch
import pytest

import lowerkit
from lowerkit import registry


@torch.library.custom_op("pytest_demo::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x) * 3.0


@scaled_tanh.register_fake
def _(x):
    return torch.empty_like(x)


class UsesCustomOp(torch.nn.Module):
    def forward(self, x):
        return scaled_tanh(x) + x


@pytest.fixture
def lowering():
    def lower(b, x):
        t = b.op("torch.aten.tanh", x)
        return b.op("torch.aten.mul.Scalar", t, b.float(3.0))

    lowerkit.custom_op_lowering("pytest_demo::scaled_tanh")(lower)
    yield lower
    registry.custom_ops.unregister("pytest_demo::scaled_tanh")


def test_custom_op_compiles_and_matches_eager(lowering, tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", str(tmp_path))
    x = torch.linspace(-3, 3, 8).reshape(2, 4)
    art = lowerkit.compile(UsesCustomOp(), (x,))
    torch.testing.assert_close(art(x), UsesCustomOp()(x), rtol=1e-5, atol=1e-5)


def test_custom_op_without_lowering_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", str(tmp_path))
    imported = lowerkit.import_program(UsesCustomOp(), (torch.ones(2, 4),))
    with pytest.raises(lowerkit.StageError) as info:
        lowerkit.registry.pipelines.get("torch-to-linalg").run(imported.module)
    assert info.value.stage == "lower-custom-ops"
    assert "pytest_demo::scaled_tanh" in str(info.value)
    assert "test_custom_ops.py" in str(info.value.diagnostics[0].location)


def test_lowering_names_are_namespaced():
    with pytest.raises(ValueError):
        lowerkit.custom_op_lowering("no_namespace")


def test_registering_a_lowering_twice_is_an_error(lowering):
    with pytest.raises(lowerkit.RegistryError):
        lowerkit.custom_op_lowering("pytest_demo::scaled_tanh")(lowering)
