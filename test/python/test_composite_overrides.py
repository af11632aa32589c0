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


_FIRST_LISTING = """
import json
import torch
import torch._export.utils as export_utils
from torch.export import exported_program
from lowerkit.ingress.composite_overrides import cheap_overrides
from lowerkit.ingress.importer import decomposition_table

made = []
real = export_utils._materialize_cpp_cia_ops
export_utils._materialize_cpp_cia_ops = lambda: (made.append(1), real())[1]
with cheap_overrides():
    table = decomposition_table()
    while_building = len(made)
    ours = exported_program._collect_all_valid_cia_ops()
    when_decomposing = len(made) - while_building
theirs = export_utils._collect_all_valid_cia_ops()
print(json.dumps([while_building, when_decomposing, sorted(map(str, ours)) == sorted(map(str, theirs)),
                  len(ours), torch.ops.aten.fft_rfft.default in ours]))
"""


def test_a_process_lists_the_composite_ops_once_and_as_torch_does():
    """In a fresh process, where no op is materialized yet: building the decomposition table
    lists the composite ops with the dispatcher's ops materialized once (torch materialized
    them once per op namespace, 16 times), so does run_decompositions' listing after it if it
    does not reuse that list, and the list is torch's own."""
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _FIRST_LISTING], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    while_building, when_decomposing, same, count, has_fft = json.loads(
        run.stdout.strip().splitlines()[-1])
    # torch's own list of aten's composite ops (cached by torch) materializes once, the full
    # list once more
    assert while_building == 2, while_building
    # reused, or made again once where building the table populated more of torch.ops
    assert when_decomposing <= 1, when_decomposing
    assert same and count > 400 and has_fft


def test_torch_is_put_back_after_the_outermost_span_also_on_an_error():
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils

    originals = (ops.OperatorBase.py_impl, exported_program._collect_all_valid_cia_ops)
    others = (decomp_utils._collect_all_valid_cia_ops, export_utils._materialize_cpp_cia_ops)
    with pytest.raises(ValueError):
        with cheap_overrides():
            with cheap_overrides():
                assert ops.OperatorBase.py_impl is not originals[0]
            assert ops.OperatorBase.py_impl is not originals[0]  # the outer span still holds
            raise ValueError
    assert (ops.OperatorBase.py_impl, exported_program._collect_all_valid_cia_ops) == originals
    assert (decomp_utils._collect_all_valid_cia_ops, export_utils._materialize_cpp_cia_ops) == others


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
