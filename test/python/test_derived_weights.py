"""Weights torch derives at bind time (issue 19): what a program computes from its weights
alone, and a data-tiled convolution's filter in IREE's layout, are made on the host when the
weights are bound, so that IREE has no initializer to generate code for; new weights, in-place
changes and saved artifacts still give the right answer."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit.derived_weights import Derivation, Step
from lowerkit.errors import LowerkitError
from lowerkit.runtime.numerics import compare


class ConvBN(torch.nn.Module):
    """A 3x3 and a 3x2 convolution with BatchNorm, a 1x1 one, and a weight used only through
    ``exp``."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.c2, self.b2 = torch.nn.Conv2d(16, 16, (3, 2), padding=1), torch.nn.BatchNorm2d(16)
        self.c3 = torch.nn.Conv2d(16, 16, 1)
        self.gate = torch.nn.Parameter(torch.randn(16) * 0.1)

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x)))
        return self.c3(self.b2(self.c2(h))) * torch.exp(self.gate)[:, None, None]


def _model(seed: int) -> ConvBN:
    torch.manual_seed(seed)
    m = ConvBN().eval()
    with torch.no_grad():
        for bn in (m.b1, m.b2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    return m


X = torch.randn(1, 3, 12, 12, generator=torch.Generator().manual_seed(5))


def _check(art, model) -> None:
    with torch.no_grad():
        result = compare(art(X), model(X))
    assert result.ok, result.message


def _compile(model, folder: Path, **options):
    with warnings.catch_warnings():  # data-tiled on a CPU without AVX-512 warns; it still runs
        warnings.simplefilter("ignore")
        return lowerkit.compile(model, (X,), cache=False, **options, iree_flags=[
            f"--iree-hal-dump-executable-sources-to={folder}"])


def _initializers(folder: Path) -> list[str]:
    """The executables IREE hoisted out of the weights, to run when the module loads."""
    return sorted(p.name for p in folder.glob("*_initializer_*"))


def test_what_the_program_computes_from_weights_alone_is_made_at_bind_time(tmp_path):
    model = _model(0)
    art = _compile(model, tmp_path / "rule", convolutions="rule")
    _check(art, model)
    derived = {s.key: s.derivation for s in art.parameters if s.derivation is not None}
    ops = {st.op for d in derived.values() for st in d.steps}
    # the BatchNorms' 1/sqrt(var + eps) and exp(gate): each one more parameter
    assert {"aten::sqrt.default", "aten::reciprocal.default", "aten::exp.default"} <= ops, derived
    assert {"b1.running_var", "b2.running_var", "gate"} <= {
        k for d in derived.values() for k in d.inputs}
    # so IREE hoisted none of it to run at load (the rule's per-tap matmuls still have IREE
    # transpose a filter and broadcast a bias there: IREE's own layouts, not the program's)
    hoisted = "".join(p.read_text() for p in (tmp_path / "rule").glob("*_initializer_*"))
    assert not any(op in hoisted for op in ("math.sqrt", "math.rsqrt", "math.exp", "arith.divf"))


def test_data_tiled_filters_are_bound_in_irees_layout(tmp_path):
    model = _model(0)
    art = _compile(model, tmp_path / "tiled", convolutions="data-tiled")
    _check(art, model)
    filters = {s.key.partition("@")[0]: s for s in art.parameters
               if s.key.endswith("@permute(2,3,1,0)")}
    # a 1x1 filter is left as it is: its transpose is 2-D, and IREE folds it into its packing
    assert set(filters) == {"c1.weight", "c2.weight"}
    assert filters["c2.weight"].shape == (3, 2, 16, 16)  # HWCF
    # the filter scaled by its BatchNorm (`conv_folding`), then laid out
    assert filters["c2.weight"].derivation.inputs[0] == "c2.weight"
    assert filters["c2.weight"].state_shapes[0] == (16, 16, 3, 2)
    assert {"b2.weight", "b2.running_var"} <= set(filters["c2.weight"].derivation.inputs)
    # IREE's own transpose to channels-last met the program's and both went
    assert not _initializers(tmp_path / "tiled")
    other = _model(1)
    art.bind_weights(other)  # another checkpoint: the same code, the filters laid out again
    _check(art, other)


def test_derived_weights_follow_new_weights_and_saved_artifacts(tmp_path):
    model, other = _model(0), _model(2)
    art = _compile(model, tmp_path / "src", convolutions="data-tiled")
    path = art.save(tmp_path / "net.lkart")
    _check(lowerkit.Artifact.load(path), model)  # the .irpa holds the derived values
    _check(lowerkit.Artifact.load(path, weights=other), other)  # derived again from these
    with torch.no_grad():  # what an optimizer step or load_state_dict does
        model.b1.running_var.mul_(3.0)
        model.c2.weight.mul_(-1.0)
        model.gate.add_(0.5)
    _check(art, model)


def test_views_of_weights_stay_in_the_program():
    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(8, 4))
            self.b = torch.nn.Parameter(torch.randn(8))

        def forward(self, x):
            return x @ self.w.t() + self.b[None, :]

    m, x = Linear(), torch.randn(2, 4)
    art = lowerkit.compile(m, (x,), cache=False)
    assert {s.key for s in art.parameters} == {"w", "b"}
    assert all(s.derivation is None for s in art.parameters)
    with torch.no_grad():
        assert compare(art(x), m(x)).ok


def test_a_recipe_is_json_and_runs_torchs_own_ops_only():
    d = Derivation.of("w", (2, 3)).then("aten::permute.default", [1, 0]).then(
        "aten::mul.Tensor", 2.0)
    assert Derivation.loads(d.dumps()) == d
    w = torch.arange(6.0).reshape(2, 3)
    torch.testing.assert_close(d.evaluate({"w": w}), w.t() * 2.0)
    evil = Derivation(("w",), ((2, 3),), (Step("builtins::eval", ({"value": 0},), {}),))
    with pytest.raises(LowerkitError, match="builtins::eval.*does not run"):
        evil.evaluate({"w": w})


def test_torch_compile_graphs_derive_their_weights_too():
    from lowerkit import backend

    torch._dynamo.reset()
    backend.reset()
    model = _model(0)
    compiled = torch.compile(model, backend="lowerkit")
    with torch.no_grad():
        result = compare(compiled(X), model(X))
    assert result.ok, result.message
    arts = [r.artifact for r in backend.graphs() if r.ran == "lowerkit"]
    assert arts, backend.graphs()
    ops = {st.op for a in arts for s in a.parameters if s.derivation is not None
           for st in s.derivation.steps}
    assert {"aten::sqrt.default", "aten::exp.default"} <= ops, ops
    with torch.no_grad():  # an in-place change to a tensor only a recipe reads
        model.b2.running_var.mul_(4.0)
        result = compare(compiled(X), model(X))
    assert result.ok, result.message


def test_a_reload_after_an_in_place_change_frees_the_old_derived_values(monkeypatch):
    import gc
    import weakref

    # one driver throughout: a second one (the local-sync trial) would load afresh anyway
    monkeypatch.setenv("LOWERKIT_CPU_DRIVER", "local-task")
    model = _model(0)
    art = lowerkit.compile(model, (X,), cache=False)
    _check(art, model)
    derived = {s.key for s in art.parameters if s.derivation is not None}
    old = [weakref.ref(a) for s, a in zip(art.parameters, art.executable._weight_arrays)
           if s.key in derived]
    assert old
    for step in range(3):  # what a training loop that calls the model between steps does
        with torch.no_grad():
            model.b1.running_var.mul_(1.5)
        _check(art, model)
    gc.collect()
    assert all(r() is None for r in old), "the first load's derived values are still held"
