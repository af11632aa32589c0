"""Random ops draw new samples at each call, from a stream that ``torch.manual_seed`` governs.

torch-mlir keys its generator with a module global that starts at 0 in every loaded context,
so every call of an Artifact returned the same "random" numbers (`passes/seed_input.py`). The
compiled function now takes a seed drawn from torch's default generator at each call.

The samples are lowerkit's, not eager's bits, so the distributions are checked by their
moments. Each draw has N = 65536 elements; a bound is 6 standard errors of the statistic
under the true distribution (a correct generator fails one check with probability ~2e-9; the
draws are seeded, so the tests are deterministic anyway). ``multinomial`` draws 4096 classes
(its lowering is slow in the draws); its bound is for that many:

- mean of N values of variance s2: standard error sqrt(s2 / N);
- sample variance: standard error sqrt((mu4 - s2**2) / N) (mu4 the fourth central moment:
  1/80 for U[0, 1), 3 for N(0, 1));
- a rate p (bernoulli, a dropout mask, a value of randint, |z| < 1 for a normal):
  sqrt(p (1 - p) / N).
"""

from __future__ import annotations

import math

import pytest
import torch

import lowerkit
from lowerkit import backend

N = 256 * 256
SIGMAS = 6


def _bound(variance: float, n: int = N) -> float:
    """SIGMAS standard errors of a statistic of ``n`` samples whose variance is ``variance``."""
    return SIGMAS * math.sqrt(variance / n)


X = torch.randn(256, 256)
P_DROP = 0.4
CLASS_DRAWS = 4096  # multinomial's lowering costs ~quadratic time in the draws (0.26 s for 8192)

PROGRAMS = {
    "rand": lambda x: torch.rand(256, 256) + x * 0,
    "rand_like": lambda x: torch.rand_like(x),
    "randn": lambda x: torch.randn(256, 256) + x * 0,
    "randint": lambda x: torch.randint(0, 10, (256, 256)),
    "bernoulli": lambda x: torch.bernoulli(torch.full_like(x, 0.3)),
    "dropout": lambda x: torch.nn.functional.dropout(torch.ones_like(x), P_DROP, training=True),
    "normal": lambda x: torch.normal(x * 0 + 3.0, 2.0),
    "multinomial": lambda x: torch.multinomial(torch.arange(1.0, 5.0) + x[0, :4] * 0,
                                               CLASS_DRAWS, replacement=True),
}


@pytest.fixture(scope="module")
def compiled():
    arts: dict[str, lowerkit.Artifact] = {}

    def get(name: str) -> lowerkit.Artifact:
        if name not in arts:
            arts[name] = lowerkit.compile(PROGRAMS[name], (X,))
        return arts[name]
    return get


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_each_call_draws_new_samples_and_manual_seed_repeats_them(compiled, name):
    art = compiled(name)
    assert art.signature.seeded
    torch.manual_seed(7)
    a, b = art(X), art(X)
    torch.manual_seed(7)
    c, d = art(X), art(X)
    assert not torch.equal(a, b), f"{name}: two calls returned the same samples"
    assert torch.equal(a, c) and torch.equal(b, d), f"{name}: manual_seed did not repeat them"
    torch.manual_seed(8)
    assert not torch.equal(art(X), a), f"{name}: another seed gave the same samples"


def test_ten_calls_draw_ten_different_samples(compiled):
    art = compiled("rand")
    torch.manual_seed(0)
    firsts = {float(art(X)[0, 0]) for _ in range(10)}
    assert len(firsts) == 10, firsts


def _moments(values: torch.Tensor) -> tuple[float, float]:
    v = values.double().flatten()
    return float(v.mean()), float(v.var())


def test_rand_is_uniform_on_0_1(compiled):
    torch.manual_seed(1)
    for name in ("rand", "rand_like"):
        u = compiled(name)(X)
        assert u.dtype is torch.float32 and u.shape == (256, 256)
        assert 0 <= float(u.min()) < 1e-3 and 1 - 1e-3 < float(u.max()) < 1, name
        mean, var = _moments(u)
        assert abs(mean - 0.5) < _bound(1 / 12), (name, mean)
        assert abs(var - 1 / 12) < _bound(1 / 80 - 1 / 144), (name, var)
        below = float((u < 0.25).double().mean())  # the shape, not only two moments
        assert abs(below - 0.25) < _bound(0.25 * 0.75), (name, below)


def test_randn_is_standard_normal(compiled):
    torch.manual_seed(2)
    z = compiled("randn")(X)
    mean, var = _moments(z)
    assert abs(mean) < _bound(1.0), mean
    assert abs(var - 1) < _bound(3 - 1), var
    inside = float((z.abs() < 1).double().mean())  # 68.27 % within one sigma
    p = math.erf(1 / math.sqrt(2))
    assert abs(inside - p) < _bound(p * (1 - p)), inside


def test_normal_takes_its_mean_and_std(compiled):
    torch.manual_seed(3)
    y = compiled("normal")(X)
    mean, var = _moments(y)
    assert abs(mean - 3) < _bound(4.0), mean
    assert abs(var - 4) < _bound((3 - 1) * 16), var


def test_randint_draws_each_value_of_its_range_equally(compiled):
    torch.manual_seed(4)
    k = compiled("randint")(X)
    assert k.dtype is torch.int64 and int(k.min()) == 0 and int(k.max()) == 9
    rates = torch.bincount(k.flatten(), minlength=10).double() / N
    assert len(rates) == 10
    assert float((rates - 0.1).abs().max()) < _bound(0.1 * 0.9), rates


def test_multinomial_draws_each_class_at_its_weight(compiled):
    torch.manual_seed(9)
    k = compiled("multinomial")(X)
    assert k.shape == (CLASS_DRAWS,) and int(k.min()) >= 0 and int(k.max()) <= 3
    rates = torch.bincount(k, minlength=4).double() / CLASS_DRAWS
    for rate, p in zip(rates.tolist(), (0.1, 0.2, 0.3, 0.4)):  # weights 1:2:3:4
        assert abs(rate - p) < _bound(p * (1 - p), CLASS_DRAWS), rates


def test_bernoulli_rate(compiled):
    torch.manual_seed(5)
    b = compiled("bernoulli")(X)
    assert set(b.unique().tolist()) <= {0.0, 1.0}
    assert abs(float(b.double().mean()) - 0.3) < _bound(0.3 * 0.7)


def test_training_dropout_masks_at_rate_p_and_scales_by_1_over_1_minus_p(compiled):
    torch.manual_seed(6)
    y = compiled("dropout")(X)  # dropout of ones: 0 or 1 / (1 - p)
    kept = y != 0
    assert torch.allclose(y[kept], torch.full_like(y[kept], 1 / (1 - P_DROP)), rtol=1e-6)
    assert abs(float((~kept).double().mean()) - P_DROP) < _bound(P_DROP * (1 - P_DROP))


def test_two_random_ops_of_one_call_draw_different_samples():
    art = lowerkit.compile(lambda x: (torch.rand_like(x), torch.rand_like(x)), (X,))
    a, b = art(X)
    assert not torch.equal(a, b)
    assert abs(float(torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1])) \
        < _bound(1.0)  # independent: their correlation's standard error is 1 / sqrt(N)


def test_two_artifacts_a_cached_and_a_reloaded_one_give_the_same_stream_under_one_seed(
        tmp_path):
    def program(x):
        return torch.nn.functional.dropout(x, 0.5, training=True)

    one = lowerkit.compile(program, (X,), cache=False)
    two = lowerkit.compile(program, (X,), cache=tmp_path / "cache")
    cached = lowerkit.compile(program, (X,), cache=tmp_path / "cache")
    reloaded = lowerkit.Artifact.load(one.save(tmp_path / "dropout.lkz"))
    assert cached.cache_hit and cached.signature.seeded and reloaded.signature.seeded
    runs = []
    for art in (one, two, cached, reloaded):
        torch.manual_seed(11)
        runs.append([art(X), art(X)])
    for other in runs[1:]:
        assert torch.equal(runs[0][0], other[0]) and torch.equal(runs[0][1], other[1])


def test_eager_draws_between_calls_advance_the_same_stream(compiled):
    art = compiled("rand")
    torch.manual_seed(12)
    art(X)
    torch.rand(1)  # eager code between two calls
    after_eager = art(X)
    torch.manual_seed(12)
    art(X)
    without = art(X)
    torch.manual_seed(12)
    art(X)
    torch.rand(1)
    assert not torch.equal(after_eager, without)
    assert torch.equal(after_eager, art(X))


def test_samples_kept_on_the_device_are_fresh_too(compiled):
    art = compiled("rand")
    a = art(X, keep_on_device=True).cpu()
    b = art(X, keep_on_device=True).cpu()
    assert not torch.equal(a, b)


def test_a_program_without_random_ops_takes_no_seed():
    art = lowerkit.compile(lambda x: x * 2, (X,))
    assert not art.signature.seeded
    assert torch.equal(art(X), X * 2)


def test_a_random_program_with_state_takes_its_seed_after_the_state():
    class Counted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

        def forward(self, x):
            self.calls += 1
            return torch.rand_like(x) + self.calls

    art = lowerkit.compile(Counted(), (X[:4],))
    a, b = art(X[:4]), art(X[:4])
    assert art.signature.seeded and int(art.state[0]) == 2
    assert torch.all((a >= 1) & (a < 2)) and torch.all((b >= 2) & (b < 3))
    assert not torch.equal(a - 1, b - 2)


def test_the_portable_vulkan_target_refuses_random_ops_at_the_users_line():
    """IREE's portable Vulkan target has no 64-bit arithmetic, which torch-mlir's generator
    needs: a clear refusal (compiling needs no device), not iree-compile's f64 failure."""
    with pytest.raises(lowerkit.UnsupportedError, match="refused on 'vulkan'") as caught:
        lowerkit.compile(PROGRAMS["rand_like"], (X,), target="vulkan")
    assert "test_random_ops.py" in str(caught.value) and "vulkan:llvmpipe" in str(caught.value)


def test_an_explicit_generator_is_refused_saying_why():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(lowerkit.IngressError, match=r"aten\.rand.*its own torch\.Generator"):
        lowerkit.compile(lambda x: torch.rand(4, 4, generator=g) + x, (X[:4, :4],))


def test_verify_refuses_a_random_program_saying_why():
    with pytest.raises(lowerkit.LowerkitError, match="random numbers"):
        lowerkit.compile(PROGRAMS["rand_like"], (X,), verify=True)


def _dropout_factory():
    return (lambda x: torch.nn.functional.dropout(x, 0.5, training=True)), (X[:4],)


def test_run_check_says_it_does_not_compare_a_random_program(capsys, monkeypatch):
    from lowerkit.cli import main as cli_main

    monkeypatch.setenv("COLUMNS", "250")
    assert cli_main(["run", f"{__file__}:_dropout_factory", "--check"]) == 0
    assert "not compared with eager: the program draws random numbers" in capsys.readouterr().out


class DropoutMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 64)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


def test_backend_training_step_draws_a_new_dropout_mask_and_backward_uses_it():
    torch._dynamo.reset()
    backend.reset()
    torch.manual_seed(0)
    model = DropoutMLP().train()
    compiled = torch.compile(model, backend="lowerkit")
    x = torch.randn(32, 64)
    masks, grads = [], []
    for _ in range(2):
        model.zero_grad()
        y = compiled(x)
        y.sum().backward()
        masks.append(y != 0)
        grads.append(model.fc.bias.grad.clone())
    torch._dynamo.reset()
    assert [r.kind for r in backend.graphs() if r.ran == "lowerkit"] == ["forward", "backward"], \
        [(r.kind, r.ran, r.reason) for r in backend.graphs()]
    assert not torch.equal(masks[0], masks[1]), "dropout applied the same mask at both steps"
    rate = 1 - float(torch.cat(masks).double().mean())
    assert abs(rate - 0.5) < SIGMAS * math.sqrt(0.25 / (2 * 32 * 64)), rate
    for mask, grad in zip(masks, grads):  # d sum(y) / d bias = the kept share of each column, x2
        assert torch.allclose(grad, mask.float().sum(0) * 2), "backward used another mask"


@pytest.mark.runs_target
@pytest.mark.parametrize("target", ["vulkan:llvmpipe"])
def test_random_ops_on_vulkan_llvmpipe(target):
    art = lowerkit.compile(lambda x: (torch.rand_like(x), torch.nn.functional.dropout(
        x, P_DROP, training=True)), (X,), target=target)
    torch.manual_seed(13)
    (u, d), (u2, _) = art(X), art(X)
    torch.manual_seed(13)
    assert torch.equal(art(X)[0], u) and not torch.equal(u, u2)
    mean, var = _moments(u)
    assert abs(mean - 0.5) < _bound(1 / 12) and abs(var - 1 / 12) < _bound(1 / 80 - 1 / 144)
    assert abs(float((d == 0).double().mean()) - P_DROP) < _bound(P_DROP * (1 - P_DROP))


def _rows_and_a_single_draw(p):
    return torch.multinomial(p, CLASS_DRAWS, replacement=True), torch.multinomial(p, 1)


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_multinomial_rows_with_zero_weights_and_a_single_draw(via):
    """Two rows with classes of weight 0 (never drawn), and the one draw a sampling
    ``generate()`` makes (without replacement); eager's refusal of a negative weight holds."""
    p = torch.tensor([[1.0, 2.0, 0.0, 6.0, 1.0], [0.0, 0.0, 1.0, 2.0, 1.0]])
    if via == "compile":
        fn = lowerkit.compile(_rows_and_a_single_draw, (p,))
    else:
        torch._dynamo.reset()
        fn = torch.compile(_rows_and_a_single_draw, backend="lowerkit", options={"strict": True})
    torch.manual_seed(3)
    many, single = fn(p)
    assert many.shape == (2, CLASS_DRAWS) and single.shape == (2, 1)
    for row, weights in zip(many, p):
        rates = torch.bincount(row, minlength=5).double() / CLASS_DRAWS
        for rate, w in zip(rates.tolist(), (weights / weights.sum()).tolist()):
            assert rate == 0.0 if w == 0 else abs(rate - w) < _bound(w * (1 - w), CLASS_DRAWS)
    assert all(p[r, int(single[r, 0])] > 0 for r in range(2))
    bad = p.clone()
    bad[0, 1] = -1.0
    with pytest.raises(RuntimeError):
        torch.multinomial(bad, 1)
    with pytest.raises(lowerkit.CheckError, match="invalid multinomial distribution"):
        fn(bad)
