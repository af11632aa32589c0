"""``torch._higher_order_ops.while_loop`` and ``torch.cond`` through both front ends, against
eager.

torch-mlir (20261001) imports the loop as ``torch.prim.Loop``; its linalg pipeline folds a
first test known at compile time (a counter starting from a constant) to ``true`` and then
takes the loop for a ``for`` loop of 2**63 - 1 steps that never reads the test again: the call
never returned. lowerkit converts loops to ``scf`` before that fold (``linalg-on-tensors``).
torch-mlir has no import of ``torch.cond``; lowerkit's node importer writes it as
``torch.prim.If`` (`lowerkit.ingress.control_flow`)."""

from __future__ import annotations

import pytest
import torch
from torch._higher_order_ops.while_loop import while_loop

import lowerkit
from lowerkit.runtime.numerics import compare


class CountFromConstant(torch.nn.Module):
    """Three steps from a counter that starts at a constant: the first test is known."""

    def forward(self, x):
        return while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 0.5 + 1.0),
                          (torch.tensor(0), x))


class CountToInput(torch.nn.Module):
    """As many steps as ``n`` says, read at each call (zero when ``n <= 0``)."""

    def forward(self, x, n):
        return while_loop(lambda i, y: i < n, lambda i, y: (i + 1, torch.tanh(y) + i),
                          (torch.zeros((), dtype=torch.int64), x))


def _compiled(model, args, via):
    if via == "compile":
        return lowerkit.compile(model, args)
    torch._dynamo.reset()
    lowerkit.backend.reset()
    return torch.compile(model, backend="lowerkit", options={"strict": True})


def _same(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        result = compare(g, w)
        assert result.ok, result.message


@pytest.mark.timeout(120)  # the defect was a call that never returned
@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_loop_whose_first_test_is_known_still_tests_each_step(via):
    model, x = CountFromConstant(), torch.randn(7, 9)
    fn = _compiled(model, (x,), via)
    got = fn(x)
    assert int(got[0]) == 3
    _same(got, model(x))
    if via == "backend":
        assert [g.ran for g in lowerkit.backend.graphs()] == ["lowerkit"]


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_loop_runs_as_many_steps_as_its_input_says(via):
    model, x = CountToInput(), torch.randn(4, 5)
    fn = _compiled(model, (x, torch.tensor(2)), via)
    for n in (2, 5, 0, -1):  # zero steps: the inputs come back as they are
        n = torch.tensor(n)
        got = fn(x, n)
        assert int(got[0]) == max(int(n), 0)
        _same(got, model(x, n))
    if via == "backend":
        assert {g.ran for g in lowerkit.backend.graphs()} == {"lowerkit"}


class Branches(torch.nn.Module):
    """``torch.cond`` on data: two outputs, a layer's weights read inside each branch."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(6, 3)

    def forward(self, x):
        return torch.cond(x.mean() > 0,
                          lambda x: (torch.relu(self.layer(x)), x.sum(0)),
                          lambda x: (self.layer(x) * -2.0, x.amax(0)),
                          (x,))


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_condition_on_data_takes_the_branch_eager_takes(via):
    torch.manual_seed(0)
    model, x = Branches().eval(), torch.randn(5, 6)
    fn = _compiled(model, (x,), via)
    with torch.no_grad():
        for sign in (1.0, -1.0, 1.0):  # each branch, then back
            x = x.abs() * sign
            _same(fn(x), model(x))
    if via == "backend":
        assert {g.ran for g in lowerkit.backend.graphs()} == {"lowerkit"}


def _by_length(x):
    return torch.cond(x.shape[0] > 4, lambda y: (y + 1.0,), lambda y: (y * 2.0,), (x,))


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_condition_on_a_dynamic_size_is_decided_at_each_call(via):
    x = torch.randn(6)
    if via == "compile":
        fn = lowerkit.compile(_by_length, (x,),
                              dynamic_shapes=({0: torch.export.Dim("n", min=2)},))
    else:
        torch._dynamo.reset()
        lowerkit.backend.reset()
        fn = torch.compile(_by_length, backend="lowerkit", dynamic=True, options={"strict": True})
    for n in (6, 3, 7, 2):  # each branch, from one executable
        y = torch.randn(n)
        _same(fn(y), _by_length(y))
    if via == "backend":
        assert [g.ran for g in lowerkit.backend.graphs()] == ["lowerkit"]


class Recurrent(torch.nn.Module):
    """A cell applied ``steps`` times: its weights are the loop's additional inputs."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.Linear(8, 8)

    def forward(self, h, steps):
        return while_loop(lambda i, h: i < steps,
                          lambda i, h: (i + 1, torch.tanh(self.cell(h))),
                          (torch.zeros((), dtype=torch.int64), h))


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_loop_reads_its_layers_weights_and_sees_them_change(via):
    torch.manual_seed(0)
    model, h = Recurrent().eval(), torch.randn(2, 8)
    fn = _compiled(model, (h, torch.tensor(3)), via)
    with torch.no_grad():
        for steps in (3, 0):
            _same(fn(h, torch.tensor(steps)), model(h, torch.tensor(steps)))
        model.cell.weight.mul_(-0.5)  # in place, between calls
        _same(fn(h, torch.tensor(4)), model(h, torch.tensor(4)))
