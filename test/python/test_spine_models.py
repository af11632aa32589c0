"""The spine end to end on CPU: every model in models.CASES against eager PyTorch."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.runtime.numerics import compare

from models import CASES, DynamicMLP


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_matches_eager_on_cpu(name):
    fn, args, kwargs = CASES[name]()
    art = lowerkit.compile(fn, args, kwargs, target="cpu")
    got = art(*args, **kwargs)
    with torch.no_grad():
        expected = fn(*args, **kwargs)
    result = compare(got, expected)
    assert result.ok, result.message
    # every stage of the default pipeline ran and was recorded
    names = [r.name for r in art.records]
    default = lowerkit.resolve_pipeline(None).stage_names
    assert "torch-backend-contract" in default and "linalg-on-tensors" in default
    # then the target's own fixes: the seed's calling convention in the build the pipeline
    # ended in, then (in IREE's build: the module crosses over first) attention's form and the
    # fences, then the weights (a program with any) become IREE parameters
    weights = ["externalize-weights"] if art.parameters else []
    assert names == ["torch-import", *default, "seed-as-input", "bridge-to-iree",
                     "lower-attention", "fence-reductions", "fence-gathered-slices",
                     "fence-batched-matmul-operands", "fence-transposed-matmul-results",
                     "fence-reduced-convolutions", *weights,
                     "iree-compile"]


def test_dynamic_batch_compiled_once_runs_at_three_sizes():
    torch.manual_seed(0)
    model = DynamicMLP().eval()
    batch = torch.export.Dim("batch", min=1, max=1024)
    art = lowerkit.compile(model, (torch.randn(4, 8),), dynamic_shapes=({0: batch},))
    assert art.signature.tensor_inputs[0].shape == ("batch", 8)
    for n in (1, 7, 64):
        x = torch.randn(n, 8)
        result = compare(art(x), model(x).detach())
        assert result.ok, f"batch {n}: {result.message}"


def test_saved_artifact_runs_after_load(tmp_path):
    fn, args, kwargs = CASES["dict_outputs"]()
    art = lowerkit.compile(fn, args, kwargs)
    loaded = lowerkit.Artifact.load(art.save(tmp_path / "m.lkz"))
    assert loaded.target == art.target
    assert [r.name for r in loaded.records] == [r.name for r in art.records]
    assert compare(loaded(*args), fn(*args)).ok


def test_dim_auto_dims_are_each_their_own_size():
    """Dim.AUTO names nothing: each dynamic dim keeps torch.export's symbol (all were named
    "DimHint(AUTO)", one size, and the compiled inputs themselves were refused)."""
    from torch.export import Dim

    torch.manual_seed(0)
    linear = torch.nn.Linear(2, 3)
    fn = lambda x, y: (linear(x), y * 2)  # noqa: E731
    art = lowerkit.compile(fn, (torch.randn(4, 2), torch.randn(5, 7)),
                           dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO, 1: Dim.AUTO}))
    for n in (4, 6):
        x, y = torch.randn(n, 2), torch.randn(n + 1, 3)
        with torch.no_grad():
            assert compare(art(x, y), fn(x, y)).ok
