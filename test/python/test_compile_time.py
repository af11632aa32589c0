"""Issue 7's compile-time work changes how, never what: the one-trace import gives the same
torch-dialect module as torch.export + run_decompositions, also for composite ops kept whole
and for programs that mutate buffers. (Timings: benchmarks/compile_time.py.)"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import lowerkit
from lowerkit import ingress


class ConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Upsample(torch.nn.Module):
    """upsample_nearest2d.vec is a composite op torch-mlir lowers whole: it must stay whole."""

    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="nearest")


class Counter(torch.nn.Module):
    """Mutates a buffer: exported twice (the second time as a stateful program)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        return x * self.count


def _cases():
    torch.manual_seed(0)
    return {
        "conv-bn": (ConvBN().eval(), (torch.randn(1, 3, 8, 8),)),
        "upsample": (Upsample(), (torch.randn(1, 2, 4, 4),)),
        "counter": (Counter(), (torch.randn(3),)),
    }


@pytest.mark.parametrize("case", ["conv-bn", "upsample", "counter"])
def test_one_trace_import_matches_two_traces(case):
    assert ingress._one_trace_available()  # the pinned torch has the entry points it uses
    model, args = _cases()[case]
    one = lowerkit.import_program(model, args)
    two = lowerkit.import_program(model, args, keep_user_graph=True)
    assert one.as_exported is None and two.as_exported is not None
    assert str(one.module) == str(two.module)
    assert one.signature.to_json() == two.signature.to_json()
    assert list(one.state) == list(two.state)


def test_upsample_stays_whole():
    model, args = _cases()["upsample"]
    text = str(lowerkit.import_program(model, args).module)
    assert "torch.aten.upsample_nearest2d" in text and "torch.aten.index.Tensor" not in text


def test_without_private_entry_points_the_two_trace_path_runs(monkeypatch):
    monkeypatch.setattr(ingress, "_one_trace_available", lambda: False)
    model, args = _cases()["conv-bn"]
    imported = lowerkit.import_program(model, args)
    assert imported.as_exported is not None  # it went through torch.export.export
    art = lowerkit.compile(model, args, cache=False)
    with torch.no_grad():
        assert torch.allclose(art(*args), model(*args), atol=1e-5)


def test_export_failure_is_an_ingress_error():
    def data_dependent(x):
        if x.sum() > 0:  # control flow on a value: torch.export cannot trace it
            return x + 1
        return x - 1

    with pytest.raises(lowerkit.IngressError, match="torch-export"):
        lowerkit.import_program(data_dependent, (torch.randn(3),))


def test_dump_shows_the_users_own_ops(tmp_path):
    model, args = _cases()["conv-bn"]
    lowerkit.compile(model, args, dump_dir=tmp_path)
    fx = next(tmp_path.rglob("*fx-graph*.py")).read_text()
    assert "batch_norm" in fx  # before decompositions, as the user wrote it
