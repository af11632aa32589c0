"""`lowerkit.ingress.composite_overrides`: the cheap composite-op overrides change no graph,
see every composite op torch would, and leave torch as it was."""

from __future__ import annotations

import pytest
import torch
import torch._ops as ops
import torch.export.exported_program as exported_program

from lowerkit.ingress import composite_overrides
from lowerkit.ingress.composite_overrides import cheap_overrides
from lowerkit.ingress.importer import decomposition_table

pytestmark = pytest.mark.skipif(not composite_overrides.ACTIVE,
                                reason=f"written for torch {composite_overrides.MEASURED_ON}x")


class Mixed(torch.nn.Module):
    """Composites lowerkit's table decomposes (linear, conv2d, layer_norm, softmax), one torch
    keeps whole (fft_rfft: outside the table), and BatchNorm's buffers."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.norm = torch.nn.BatchNorm2d(4)
        self.linear = torch.nn.Linear(144, 8)
        self.ln = torch.nn.LayerNorm(8)

    def forward(self, x):
        h = self.norm(self.conv(x)).relu().flatten(1)
        h = self.ln(self.linear(h))
        return torch.nn.functional.gelu(h).softmax(-1), torch.fft.rfft(h).abs()


def test_decomposed_graphs_are_torchs_own():
    model, x = Mixed().eval(), torch.randn(2, 3, 8, 8)
    graphs = []
    for cheap in (False, True):
        exported = torch.export.export(model, (x,), strict=False)
        if cheap:
            with cheap_overrides():
                graphs.append(exported.run_decompositions(decomposition_table()).graph_module.code)
        else:
            graphs.append(exported.run_decompositions(decomposition_table()).graph_module.code)
    assert graphs[0] == graphs[1]
    assert "aten.fft_rfft" in graphs[1]  # a composite kept whole, as torch keeps it


def test_torch_is_put_back_after_the_outermost_span_also_on_an_error():
    originals = (ops.OperatorBase.py_impl, exported_program._collect_all_valid_cia_ops)
    with pytest.raises(ValueError):
        with cheap_overrides():
            with cheap_overrides():
                assert ops.OperatorBase.py_impl is not originals[0]
            assert ops.OperatorBase.py_impl is not originals[0]  # the outer span still holds
            raise ValueError
    assert (ops.OperatorBase.py_impl, exported_program._collect_all_valid_cia_ops) == originals


def test_a_composite_op_registered_later_is_in_the_list():
    """The reused list of composite ops is made again when an op is registered: torch keeps a
    new functional composite whole, and so must the list."""
    with cheap_overrides():
        before = exported_program._collect_all_valid_cia_ops()
        lib = torch.library.Library("lowerkit_overrides_test", "DEF")
        try:
            lib.define("twice(Tensor x) -> Tensor")
            lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
            op = torch.ops.lowerkit_overrides_test.twice.default
            after = exported_program._collect_all_valid_cia_ops()
        finally:
            lib._destroy()
    assert op not in before and op in after


def test_a_second_registration_of_a_key_is_refused_as_torch_refuses_it():
    op = torch.ops.aten.relu.default
    key = torch._C.DispatchKey.AutogradCPU
    assert key not in op.py_kernels
    try:
        with cheap_overrides():
            op.py_impl(key)(lambda *a: NotImplemented)
            with pytest.raises(RuntimeError, match="Trying to override a python impl"):
                op.py_impl(key)(lambda *a: NotImplemented)
    finally:
        op.py_kernels.pop(key, None)
        op._dispatch_cache.clear()
