"""The compile cache answers a program this process traced before by its fingerprint, without
tracing it again, and never when anything that changes its results differs (issue 19)."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.ingress.fingerprint import fingerprint

SCALE = 2.0  # a flag at the top of the file a forward reads


class Config:
    """What `transformers` models hold: a plain object of settings."""

    def __init__(self):
        self.bias = 0.0


class Scaled(torch.nn.Module):
    def __init__(self, shift: float = 0.5, act: str = "tanh"):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.shift = shift
        self.act = act
        self.config = Config()

    def forward(self, x):
        y = self.lin(x) * SCALE + self.shift + self.config.bias
        return torch.tanh(y) if self.act == "tanh" else torch.relu(y)


ARGS = (torch.randn(4, 8),)


@pytest.fixture
def no_trace(monkeypatch):
    """Make tracing fail: a compile that returns traced nothing."""
    def refuse(*a, **k):
        raise AssertionError("traced although the fingerprint was known")

    def arm():
        monkeypatch.setattr("lowerkit.api.import_program", refuse)

    return arm


def _check(art, model):
    with torch.no_grad():
        torch.testing.assert_close(art(*ARGS), model(*ARGS), rtol=1e-5, atol=1e-6)


def test_a_known_program_is_answered_without_tracing(tmp_path, no_trace):
    torch.manual_seed(0)
    model = Scaled()
    first = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert first.cache_note.startswith("miss")
    no_trace()
    again = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert again.cache_hit and again.cache_note.startswith("hit: fingerprint")
    _check(again, model)
    other = Scaled()  # another checkpoint: same code, its own weights
    _check(lowerkit.compile(other, ARGS, cache=tmp_path), other)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One cache for the cases below: the unchanged program compiles once, then is a hit."""
    return tmp_path_factory.mktemp("fingerprint-cache")


@pytest.mark.parametrize("change", ["attribute", "string attribute", "config", "file flag",
                                    "code", "input shape", "input dtype", "training",
                                    "decompositions", "derived weights"])
def test_anything_that_changes_results_is_traced_again(shared_cache, monkeypatch, change):
    tmp_path = shared_cache
    torch.manual_seed(0)
    model, args = Scaled(), ARGS
    lowerkit.compile(model, args, cache=tmp_path)
    if change == "attribute":
        model.shift = 1.5
    elif change == "string attribute":
        model.act = "relu"
    elif change == "config":
        model.config.bias = 0.25
    elif change == "file flag":
        monkeypatch.setattr(__import__(__name__), "SCALE", -1.0)
    elif change == "code":
        monkeypatch.setattr(Scaled, "forward", lambda self, x: torch.sigmoid(self.lin(x)))
    elif change == "input shape":
        args = (torch.randn(3, 8),)
    elif change == "input dtype":
        model, args = model.double(), (ARGS[0].double(),)
    elif change == "training":
        model.eval()  # built in training mode: the flag flips
    elif change == "decompositions":
        monkeypatch.setenv("LOWERKIT_DECOMPOSITIONS", "0")
    elif change == "derived weights":
        monkeypatch.setenv("LOWERKIT_DERIVED_WEIGHTS", "0")
    art = lowerkit.compile(model, args, cache=tmp_path)
    assert not art.cache_note.startswith("hit: fingerprint"), art.cache_note
    with torch.no_grad():
        torch.testing.assert_close(art(*args), model(*args), rtol=1e-5, atol=1e-6)


def test_what_it_cannot_read_has_no_fingerprint():
    model = Scaled()
    assert fingerprint(model, ARGS, {}, None, {}) is not None
    hooked = Scaled()
    hooked.lin.register_forward_hook(lambda m, i, o: o * 2)
    assert fingerprint(hooked, ARGS, {}, None, {}) is None
    holder = Scaled()
    holder.table = torch.randn(8)  # a tensor that is neither parameter nor buffer
    assert fingerprint(holder, ARGS, {}, None, {}) is None
    assert fingerprint(lambda x: x + 1, ARGS, {}, None, {}) is None
