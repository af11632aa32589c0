"""``torch.compile(model, backend="lowerkit")``: every graph Dynamo captures is compiled by
lowerkit, a graph it cannot take runs eagerly with the reason recorded, dynamic sizes are
passed at each call, and training runs forward and backward graphs through lowerkit."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch

from lowerkit import UnsupportedError, backend, tuning
from lowerkit.runtime.numerics import compare


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    backend.reset()
    yield
    torch._dynamo.reset()


class Broken(torch.nn.Module):
    """Two regions split by a graph break (a print)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        print("graph break")
        return self.b(y).softmax(-1)


def test_each_subgraph_of_a_program_with_a_graph_break_runs_in_lowerkit(capsys):
    torch.manual_seed(0)
    model, x = Broken(), torch.randn(2, 8)
    with torch.no_grad():
        got = torch.compile(model, backend=backend.backend)(x)
        assert compare(got, model(x)).ok
    records = backend.graphs()
    assert [(r.kind, r.ran) for r in records] == [("inference", "lowerkit")] * 2
    assert all(r.ops > 0 and r.artifact is not None for r in records)


def bessel_then_linear(x, w):
    y = torch.special.bessel_j0(x)
    print("graph break")  # LINE break
    return y @ w


def test_a_graph_lowerkit_refuses_runs_eagerly_and_says_why():
    x, w = torch.randn(3, 4), torch.randn(4, 2)
    got = torch.compile(bessel_then_linear, backend=backend.backend)(x, w)
    assert compare(got, bessel_then_linear(x, w)).ok
    first, second = backend.graphs()
    assert first.ran == "eager" and second.ran == "lowerkit"
    assert "bessel_j0" in first.reason and "test_backend.py" in first.reason, first.reason


def test_strict_raises_instead_of_running_eagerly():
    x, w = torch.randn(3, 4), torch.randn(4, 2)
    compiled = torch.compile(bessel_then_linear, backend=backend.backend,
                             options={"strict": True})
    with pytest.raises(Exception) as caught:
        compiled(x, w)
    chain, e = [], caught.value
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    assert any(isinstance(c, UnsupportedError) for c in chain), chain


def sqrt_of_a_value_read_from_data(t):
    return float(torch.ops.aten.sqrt(int(t)))


@torch._dynamo.config.patch(capture_scalar_outputs=True)
def test_a_graph_aot_autograd_cannot_trace_runs_eagerly_and_says_why():
    """With scalars captured, Dynamo keeps ``int(t)`` in its graph and aot_autograd then fails
    on the value read from data (torch-mlir's e2e ``SqrtIntModule``; ``backend="aot_eager"``
    fails the same way): the graph runs as Dynamo gave it, the record names aot_autograd, the
    op and the user's line, and ``strict`` raises."""
    import inspect

    t = torch.tensor(7)
    got = torch.compile(sqrt_of_a_value_read_from_data, backend=backend.backend)(t)
    assert got == sqrt_of_a_value_read_from_data(t)
    (record,) = backend.graphs()
    line = inspect.getsourcelines(sqrt_of_a_value_read_from_data)[1] + 1
    assert record.ran == "eager" and record.reason.startswith("stage 'aot_autograd' failed at "
                                                              "aten.sqrt"), record.reason
    assert f"test_backend.py:{line})" in record.reason, record.reason

    torch._dynamo.reset()
    strict = torch.compile(sqrt_of_a_value_read_from_data, backend=backend.backend,
                           options={"strict": True})
    with pytest.raises(Exception, match="GuardOnDataDependentSymNode"):
        strict(t)


def test_a_fault_in_lowerkits_own_compile_is_raised_not_run_eagerly(monkeypatch):
    """Only aot_autograd's tracing falls back: an exception out of lowerkit's compile of a graph
    that is not a `LowerkitError` (a bug of lowerkit's) reaches the caller."""
    def fault(*args, **kwargs):
        raise KeyError("planted")

    monkeypatch.setattr(backend, "_compile_graph", fault)
    with pytest.raises(Exception) as caught:
        torch.compile(torch.nn.Linear(4, 2), backend=backend.backend)(torch.randn(3, 4))
    chain, e = [], caught.value
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    assert any(isinstance(c, KeyError) for c in chain), chain
    assert backend.graphs() == []


def clamped(x, limit: float):
    return torch.clamp(x, max=limit) * 2


def test_a_float_argument_dynamo_traces_again_runs_in_lowerkit(monkeypatch):
    """With ``dynamic=True`` a float argument is a symbolic float; one that ``clamp`` takes as a
    number cannot stay a tensor, and aot_autograd asks Dynamo to trace the frame again with it
    specialized (``TensorifyScalarRestartAnalysis``). The backend lets that through, so the
    frame is traced again and runs in lowerkit; swallowing it ran the graph eagerly (the
    default tier's twin of test_backend_generate's ``dynamic=True`` decoders)."""
    from torch._dynamo import exc

    restarts = []
    raised = exc.TensorifyScalarRestartAnalysis.__init__

    def counted(self, *args, **kwargs):
        restarts.append(1)
        raised(self, *args, **kwargs)

    monkeypatch.setattr(exc.TensorifyScalarRestartAnalysis, "__init__", counted)
    compiled = torch.compile(clamped, backend=backend.backend, dynamic=True)
    x = torch.randn(4, 6)
    for limit in (0.25, 0.75):
        assert compare(compiled(x, limit), clamped(x, limit)).ok
    assert restarts, "Dynamo no longer traces this frame again: find another trigger"
    records = backend.graphs()
    assert records and all(r.ran == "lowerkit" for r in records), [
        (r.ran, r.reason) for r in records]


def scaled(x):
    return (x * 2 + 1).sum(0) / x.shape[0]


def test_three_batch_sizes_make_two_compiles_and_the_dynamic_one_is_reused():
    compiled = torch.compile(scaled, backend=backend.backend)
    for n in (2, 3, 5, 7):
        x = torch.randn(n, 6)
        assert compare(compiled(x), scaled(x)).ok, n
    records = backend.graphs()
    assert [r.ran for r in records] == ["lowerkit", "lowerkit"], [r.reason for r in records]
    dynamic = records[1].artifact.signature
    assert any(type(leaf).__name__ == "ScalarSpec" for leaf in dynamic.in_leaves)


def sizes(x):
    return x * 2, x.shape[0] * 3, (x.shape[1] + 1) // 2, x.shape


def test_sizes_a_graph_returns_are_each_calls_own():
    """SymInt outputs (sizes and expressions of them) are computed from each call's inputs."""
    compiled = torch.compile(sizes, backend=backend.backend)
    for shape in [(2, 4), (3, 7), (5, 9), (4, 4)]:
        x = torch.randn(*shape)
        got, want = compiled(x), sizes(x)
        assert compare(got[0], want[0]).ok and got[1:] == want[1:], (shape, got[1:], want[1:])
    assert [r.ran for r in backend.graphs()] == ["lowerkit", "lowerkit"], \
        [r.reason for r in backend.graphs()]


def test_training_with_changing_batch_sizes_runs_every_graph_in_lowerkit():
    """A dynamic forward graph returns sizes for its backward: nothing runs eagerly."""
    torch.manual_seed(0)
    batches = [(torch.randn(n, 8), torch.randint(0, 3, (n,))) for n in (4, 3, 5, 2, 6)]
    make = lambda: torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                       torch.nn.Linear(16, 3))
    torch.manual_seed(1)
    eager = make()
    torch.manual_seed(1)
    compiled = make()
    xs, ys = zip(*batches)
    want = _train(eager, eager, xs, ys)
    got = _train(compiled, torch.compile(compiled, backend=backend.backend), xs, ys)
    assert compare(got, want).ok
    for p, q in zip(eager.parameters(), compiled.parameters()):
        assert compare(q.detach(), p.detach()).ok
    records = backend.graphs()
    assert [r.ran for r in records] == ["lowerkit"] * 4, [r.reason for r in records]
    assert [r.kind for r in records] == ["forward", "backward"] * 2


def _train(model, step, xs, ys):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(step(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def _cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 3))


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)),
     (4, 8)),
    (_cnn, (4, 3, 8, 8)),
], ids=["mlp", "cnn-batchnorm-train"])
def test_twenty_sgd_steps_match_eager(make, shape):
    """Losses, parameters and (BatchNorm in train mode) running statistics after 20 steps."""
    torch.manual_seed(0)
    xs, ys = torch.randn(20, *shape), torch.randint(0, 3, (20, shape[0]))
    torch.manual_seed(1)
    eager = make()
    torch.manual_seed(1)
    compiled = make()
    want = _train(eager, eager, xs, ys)
    got = _train(compiled, torch.compile(compiled, backend=backend.backend), xs, ys)
    assert compare(got, want).ok
    for (name, p), q in zip([*eager.named_parameters(), *eager.named_buffers()],
                            [*compiled.parameters(), *compiled.buffers()]):
        assert compare(q.detach(), p.detach()).ok, name
    assert {(r.kind, r.ran) for r in backend.graphs()} == {("forward", "lowerkit"),
                                                         ("backward", "lowerkit")}


def test_unknown_option_is_refused():
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(scaled, backend=backend.backend, options={"taget": "cpu"})(torch.ones(2))


@pytest.mark.parametrize("strategy", ["data-tiled", "im2col"])
def test_convolutions_option(strategy):
    """options={"convolutions": ...}: the graph's dense convolution reaches IREE whole through
    aot_autograd's trace, data-tiled or with every convolution whole (im2col), and the result
    matches eager; a misspelt strategy is refused at once."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 16, 10, 10)
    compiled = torch.compile(net, backend="lowerkit",
                             options={"convolutions": strategy, "strict": True, "cache": False})
    with torch.inference_mode():
        check = compare(compiled(x), net(x))
    assert check.ok, check.message
    (record,) = backend.graphs()
    assert record.ran == "lowerkit"
    said = record.artifact.compile_stats.get("convolutions", "")
    if strategy == "im2col":
        assert said.startswith("im2col, as asked"), said
    else:  # on a CPU without AVX-512 the stats add that IREE compiled direct convolutions
        assert said.split(" (")[0] == "data-tiled", said
        assert ("direct convolutions" in said) == (not tuning.data_tiling_pays("cpu")), said
    # whole through aot_autograd's trace, not per tap (the trace decomposes before the compile)
    ops = record.artifact.records[0].ops
    assert ops.get("torch.aten.convolution") == 1, ops
    with pytest.raises(Exception, match="convolutions='winograd'"):
        torch.compile(net, backend="lowerkit", options={"convolutions": "winograd"})(x)


def test_a_strided_convolution_over_rgb_goes_by_phases_through_torch_compile():
    """aot_autograd's trace decomposes as `lowerkit.compile`'s import does: data-tiled for a
    CPU with AVX-512, a 7x7 stride-2 convolution over RGB is the stride-1 one over its
    input's 12 phase channels (its filter, derived on the host, is 4x4x12 in IREE's layout),
    and matches eager, also after an in-place change to its weight."""
    torch._dynamo.reset()
    backend.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 7, 2, 3), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 32, 30)
    compiled = torch.compile(net, backend="lowerkit", options={
        "convolutions": "data-tiled", "strict": True, "cache": False})
    with torch.inference_mode():
        check = compare(compiled(x), net(x))
    assert check.ok, check.message
    (record,) = backend.graphs()
    assert record.ran == "lowerkit"
    shapes = {tuple(p.shape) for p in record.artifact.parameters}
    phased = tuning.data_tiling_pays("cpu")
    assert ((4, 4, 12, 16) in shapes) == phased and ((7, 7, 3, 16) in shapes) != phased, shapes
    with torch.no_grad():
        net[0].weight.mul_(-0.5)
    with torch.inference_mode():
        check = compare(compiled(x), net(x))
    assert check.ok, check.message


def test_lowerkits_own_convolution_choice_applies_to_torch_compile_graphs():
    """An inference graph of a dense convolution net is data-tiled as `lowerkit.compile` would
    (`tuning.choose_convolutions`, on a host with AVX-512); ``convolutions="rule"`` keeps the
    rule; a training graph keeps the rule."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(32, 32, 3, padding=1)).eval()
    x = torch.randn(1, 16, 64, 64)
    chosen = 2 if tuning.data_tiling_pays("cpu") else 0  # lowerkit's choice needs AVX-512
    for options, whole in (({}, chosen), ({"convolutions": "rule"}, 0)):
        backend.reset()
        torch._dynamo.reset()
        compiled = torch.compile(net, backend="lowerkit",
                                 options={"strict": True, "cache": False, **options})
        with torch.inference_mode():
            check = compare(compiled(x), net(x))
        assert check.ok, check.message
        (record,) = backend.graphs()
        ops = record.artifact.records[0].ops
        assert ops.get("torch.aten.convolution", 0) == whole, (options, ops)
        said = (record.artifact.compile_stats or {}).get("convolutions") or ""
        assert said.startswith(f"data-tiled ({tuning.CHOSEN}") == bool(whole), said
    backend.reset()
    torch._dynamo.reset()
    compiled = torch.compile(net, backend="lowerkit", options={"strict": True, "cache": False})
    check = compare(compiled(x), net(x))  # gradients wanted: a training graph
    assert check.ok, check.message
    forward = [r for r in backend.graphs() if r.kind == "forward"]
    assert forward and forward[0].artifact.records[0].ops.get("torch.aten.convolution", 0) == 0


def test_found_by_name_without_importing_lowerkit():
    """The torch_dynamo_backends entry point: backend="lowerkit" in a fresh interpreter."""
    code = ("import sys, torch\n"
            "assert 'lowerkit' not in sys.modules\n"
            "f = torch.compile(lambda x: x * 2 + 1, backend='lowerkit')\n"
            "y = f(torch.ones(3))\n"
            "assert y.tolist() == [3.0, 3.0, 3.0], y\n"
            "from lowerkit import backend\n"
            "assert [r.ran for r in backend.graphs()] == ['lowerkit'], backend.graphs()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_gradients_match_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    x = torch.randn(5, 8, requires_grad=True)
    model(x).square().mean().backward()
    want = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    torch.compile(model, backend=backend.backend)(x).square().mean().backward()
    got = [p.grad for p in model.parameters()] + [x.grad]
    for g, w in zip(got, want):
        assert compare(g, w).ok
    assert [r.ran for r in backend.graphs()] == ["lowerkit", "lowerkit"]


def test_explain_shows_the_breaks_and_where_each_graph_ran(capsys, monkeypatch):
    from lowerkit.cli import main as cli_main

    x, w = torch.randn(3, 4), torch.randn(4, 2)
    found = backend.explain(bessel_then_linear, x, w)
    assert [r.ran for r in found.graphs] == ["eager", "lowerkit"]
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "# LINE break" in t)
    assert len(found.breaks) == 1 and f"test_backend.py:{line}" in found.breaks[0], found.breaks
    assert "print" in found.breaks[0]
    assert compare(found.result, bessel_then_linear(x, w)).ok

    monkeypatch.setenv("COLUMNS", "250")
    assert cli_main(["explain", f"{__file__}:broken_model", "--check"]) == 0
    out = capsys.readouterr().out
    assert "2 graph(s), 1 graph break(s)" in out and "matches eager" in out
    assert out.count("lowerkit") >= 2 and "break 1:" in out


def broken_model():
    torch.manual_seed(0)
    return Broken(), (torch.randn(2, 8),)


def test_dump_dir_gets_a_numbered_dump_per_graph(tmp_path):
    torch.manual_seed(0)
    model, x = Broken(), torch.randn(2, 8)
    with torch.no_grad():
        torch.compile(model, backend=backend.backend, options={"dump_dir": tmp_path})(x)
    dumps = sorted(p.name for p in tmp_path.iterdir())
    assert dumps == ["graph-000-inference", "graph-001-inference"]
    for d in dumps:
        assert (tmp_path / d / "index.html").exists()
        assert any(f.name.endswith("linalg-on-tensors.mlir") for f in (tmp_path / d).iterdir())


def test_verify_checks_each_call_against_the_graph_run_eagerly(monkeypatch):
    from lowerkit import VerificationError
    from lowerkit.runtime.artifact import Artifact

    real_call = Artifact.__call__
    compiled = torch.compile(scaled, backend=backend.backend, options={"verify": True})
    assert compare(compiled(torch.ones(3, 6)), scaled(torch.ones(3, 6))).ok
    torch._dynamo.reset()
    monkeypatch.setattr(Artifact, "__call__", lambda self, *a, **k: tuple(
        t * (1 + 1e-3) for t in real_call(self, *a, **k)))  # a planted wrong answer
    compiled = torch.compile(scaled, backend=backend.backend, options={"verify": True})
    with pytest.raises(Exception) as caught:
        compiled(torch.ones(3, 6))
    assert isinstance(caught.value, VerificationError) or isinstance(
        caught.value.__cause__, VerificationError), caught.value


@pytest.mark.runs_target
@pytest.mark.parametrize("target", ["vulkan:llvmpipe", "vulkan"])
def test_graphs_run_on_vulkan(target):
    torch.manual_seed(0)
    model, x = Broken(), torch.randn(2, 8)
    with torch.no_grad():
        got = torch.compile(model, backend=backend.backend, options={"target": target})(x)
        assert compare(got, model(x)).ok
    assert [r.ran for r in backend.graphs()] == ["lowerkit", "lowerkit"]
    assert all(r.artifact.target.name == target for r in backend.graphs())
    # Vulkan reads no IREE parameters by default (lavapipe hung loading them): arguments
    assert [r.weights for r in backend.graphs()] == [0, 0]


@pytest.mark.runs_target
@pytest.mark.parametrize("target", ["vulkan:llvmpipe"])
@pytest.mark.parametrize("name", ["mlp", "conv_bn_relu", "residual_block", "reductions_softmax",
                                  "sdpa", "embedding_layernorm", "dict_outputs",
                                  "function_kwargs"])
def test_spine_models_through_the_backend_on_vulkan(name, target):
    """The spine's Vulkan subset (test_vulkan.py) through torch.compile on lavapipe."""
    from models import CASES

    fn, args, kwargs = CASES[name]()
    with torch.no_grad():
        want = fn(*args, **kwargs)
        got = torch.compile(fn, backend=backend.backend, options={"target": target})(
            *args, **kwargs)
    assert compare(got, want).ok
    records = backend.graphs()
    assert records and all(r.ran == "lowerkit" and r.artifact.target.name == target
                           for r in records), [r.reason for r in records]


@pytest.mark.parametrize("name", ["views_inplace", "normalisations", "bert_tiny"])
def test_zoo_models_through_the_backend_match_eager(name):
    """Graphs with constants (get_attr) and as_strided views are imported through a module that
    owns them; every graph runs in lowerkit and matches eager."""
    from lowerkit.zoo import ZOO

    entry = ZOO[name]
    model, args, kwargs = entry.make()
    with torch.inference_mode():
        want = model(*args, **kwargs)
        got = torch.compile(model, backend=backend.backend)(*args, **kwargs)
    assert compare(got, want, tol=entry.tol).ok
    assert [r.ran for r in backend.graphs()] == ["lowerkit"], [r.reason for r in backend.graphs()]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.linear(x))
        torch._dynamo.graph_break()
        return x * 2


class Repeated(torch.nn.Module):
    """Three blocks of the same shapes, each broken at the same place."""

    def __init__(self):
        super().__init__()
        self.one, self.two, self.three = Block(), Block(), Block()

    def forward(self, x):
        return self.three(self.two(self.one(x)))


def test_identical_subgraphs_compile_once(tmp_path):
    """Repeated blocks broken at the same place run one compiled graph (Dynamo's); a recompile
    after torch._dynamo.reset() reuses the first compile (the compile cache, on by default).
    The cache is this test's own: the session's is shared by xdist's workers, and another test
    compiles the same graph (`test_repeated_blocks_each_read_their_own_weights`), which made
    the first compile here a hit when it ran first."""
    torch.manual_seed(0)
    model, x = Repeated(), torch.randn(2, 8)
    options = {"cache": str(tmp_path / "cache")}
    with torch.no_grad():
        want = model(x)
        assert compare(torch.compile(model, backend=backend.backend, options=options)(x),
                       want).ok
        torch._dynamo.reset()
        assert compare(torch.compile(model, backend=backend.backend, options=options)(x),
                       want).ok
    records = backend.graphs()
    # per pass: linear+gelu, then x * 2 after the break; blocks two and three reuse them
    assert [(r.ran, r.cached) for r in records] == [("lowerkit", False)] * 2 + [
        ("lowerkit", True)] * 2, [(r.ran, r.cached, r.reason) for r in records]


def _norm_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.BatchNorm1d(16),
                               torch.nn.Linear(16, 4))


def test_in_place_updates_of_parameters_between_calls_are_seen():
    model, x = _norm_mlp().eval(), torch.randn(3, 8)
    compiled = torch.compile(model, backend=backend.backend)
    with torch.no_grad():
        compiled(x)
        model[0].weight.mul_(-2)
        model[2].running_mean.add_(1)
        assert compare(compiled(x), model(x)).ok
    assert [r.ran for r in backend.graphs()] == ["lowerkit"]


def test_freeze_compiles_parameters_in_as_constants():
    model, x = _norm_mlp().eval(), torch.randn(3, 8)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend=backend.backend, options={"freeze": True})(x)
    assert compare(got, want).ok
    (record,) = backend.graphs()
    # 2 Linear weights and biases, BatchNorm's weight, bias and running statistics
    assert record.ran == "lowerkit" and record.frozen == 8
    assert len(record.artifact.signature.tensor_inputs) == 1  # x alone crosses the call


def test_freeze_keeps_what_needs_gradients_or_is_mutated():
    """Under autograd nothing that needs a gradient is frozen; BatchNorm in train mode updates
    its running statistics, which therefore stay the caller's."""
    model, x = _norm_mlp().train(), torch.randn(3, 8)
    twin = _norm_mlp().train()
    compiled = torch.compile(model, backend=backend.backend, options={"freeze": True})
    compiled(x).square().sum().backward()
    twin(x).square().sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert compare(p.grad, q.grad).ok
    assert {r.frozen for r in backend.graphs()} == {0}
    torch._dynamo.reset()
    backend.reset()
    with torch.no_grad():
        for _ in range(2):
            assert compare(compiled(x), twin(x)).ok
    assert compare(model[2].running_mean, twin[2].running_mean).ok
    assert compare(model[2].running_var, twin[2].running_var).ok
    (record,) = backend.graphs()
    assert record.ran == "lowerkit" and record.frozen == 6  # Linear weights, biases; BN affine
    assert len(record.artifact.signature.tensor_inputs) == 4  # x, BN statistics and count


class TiedWeights(torch.nn.Module):
    """An output layer sharing the embedding's weight (GPT-2's): one constant, two uses."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.head = torch.nn.Linear(8, 16, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.embed(ids))


def test_freeze_takes_a_weight_used_twice():
    """torch-mlir's importer bound a constant at each use and failed at the second."""
    torch.manual_seed(0)
    model, ids = TiedWeights(), torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        got = torch.compile(model, backend=backend.backend,
                            options={"freeze": True, "strict": True})(ids)
        assert compare(got, model(ids)).ok
    assert [(r.ran, r.frozen) for r in backend.graphs()] == [("lowerkit", 1)]


def scalars_from_data(x, y):
    """``.item()``, ``int(t)`` and a comparison of them: scalars computed from tensor data,
    used in the graph and returned."""
    s = x.sum().item()
    n = int(x.abs().max() * 10)
    k = (x > 0).sum().item()
    return y * s + 1, n + 3, s > 0, x.mean().item(), y * float(k), s >= k, True, 2.5


def test_scalars_computed_from_data_stay_in_lowerkits_graph():
    """With Dynamo's ``capture_scalar_outputs``, ``.item()`` no longer breaks the graph: its
    value is used in the graph, and the ints, floats and bools it returns come back as eager's
    Python types (0-d tensors through the compiled program, `ItemSpec`)."""
    compiled = torch.compile(scalars_from_data, backend="lowerkit", options={"strict": True})
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        _check_scalars_from_data(compiled)
    assert {r.ran for r in backend.graphs()} == {"lowerkit"}, [r.reason for r in backend.graphs()]


def _float_comparisons(a, b, x):
    lhs, rhs, v = float(a), int(b), x.sum().item()
    return (lhs >= rhs, lhs != rhs, lhs > rhs, v < 0.25, v <= lhs, rhs == v,
            torch.tensor(lhs < rhs) & (x > v).any())


# slow on a 2-core Zen 3 (the suite's budget is 20 min): 15 s; scalars and bools read from data
# stay covered (test_scalars_computed_from_data_*, test_bools_read_from_data_*)
@pytest.mark.slow
def test_comparisons_with_a_float_read_from_data_stay_in_lowerkits_graph():
    """``float(t) >= int(u)`` imports as ``aten.ge.float`` and kin, which torch-mlir's backend
    contract refuses (torch-mlir's ``GeFloatIntModule``); lowerkit compares on 0-d tensors.
    Values on both sides of each comparison, and ties."""
    compiled = torch.compile(_float_comparisons, backend="lowerkit", options={"strict": True})
    cases = [(0.5, 3, [0.1, -0.3]), (7.0, 7, [0.2, 0.05]), (-2.5, -3, [7.0, 0.0]),
             (3.0, 2, [1.5, 1.5])]
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for lhs, rhs, x in cases:
            args = (torch.tensor(lhs, dtype=torch.float64), torch.tensor(rhs), torch.tensor(x))
            got, want = compiled(*args), _float_comparisons(*args)
            assert [bool(g) for g in got] == [bool(w) for w in want], (lhs, rhs, x)
            assert [type(g) for g in got] == [type(w) for w in want]
    assert {r.ran for r in backend.graphs()} == {"lowerkit"}, [r.reason for r in backend.graphs()]


def _bools_read_from_data(m, x):
    return bool(m), (x.sum() > 0).item(), x * (x.max() < 1).item()


def test_bools_read_from_data_stay_in_lowerkits_graph():
    """A bool tensor's item (``bool(t)``) imports as ``aten.Int.Tensor`` typed ``!torch.bool``,
    which fails to verify, and Dynamo range-checks it with ``sym_ite``, which torch-mlir's
    importer does not know (torch-mlir's ``TensorToBool`` tests)."""
    compiled = torch.compile(_bools_read_from_data, backend="lowerkit", options={"strict": True})
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for m, x in ((True, [0.5, -0.2]), (False, [-1.0, 0.5]), (True, [2.0, 0.1])):
            args = (torch.tensor([[m]]), torch.tensor(x))
            got, want = compiled(*args), _bools_read_from_data(*args)
            assert got[:2] == want[:2] and type(got[1]) is bool, (m, x, got, want)
            assert torch.equal(got[2], want[2])
    assert {r.ran for r in backend.graphs()} == {"lowerkit"}, [r.reason for r in backend.graphs()]


def _check_scalars_from_data(compiled):
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        x, y = torch.randn(4, 4), torch.randn(4)
        got, want = compiled(x, y), scalars_from_data(x, y)
        assert compare([got[0], got[4]], [want[0], want[4]]).ok
        assert [type(v) for v in got] == [type(v) for v in want]
        assert got[1:3] == want[1:3] and got[5] == want[5]
        assert got[3] == pytest.approx(want[3], rel=1e-6)


def _composites(x, m):
    spectrum = torch.fft.rfft(x, dim=-1)
    frames = torch.stft(x[0], n_fft=8, hop_length=2, window=torch.hann_window(8),
                        return_complex=True)
    sign, logdet = torch.linalg.slogdet(m)
    return torch.view_as_real(spectrum), torch.view_as_real(frames), sign, logdet


def test_composites_that_torch_mlir_lowers_whole_reach_it_whole():
    """An inference graph keeps the composites ``torch.export`` keeps (``fft_rfft``, ``stft``,
    ``linalg_slogdet``): decomposed by the dispatcher they became ``_fft_r2c`` and
    ``_linalg_slogdet``, which torch-mlir cannot lower (torch-mlir's e2e ``AtenFftRfft*``,
    ``AtenStft*``, ``SignAndLogarithmOfDeterminant*``)."""
    torch.manual_seed(0)
    x, m = torch.randn(2, 32), torch.randn(3, 4, 4)
    with torch.no_grad():
        got = torch.compile(_composites, backend=backend.backend,
                            options={"strict": True})(x, m)
    result = compare(got, _composites(x, m))
    assert result.ok, result.message
    assert [r.ran for r in backend.graphs()] == ["lowerkit"]


def test_a_composite_in_a_training_graph_is_decomposed_for_its_gradient():
    """Kept whole, a composite has no derivative in the joint graph: a graph that needs
    gradients decomposes them all (here ``linear`` and ``layer_norm``)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.LayerNorm(8))
    x, weights = torch.randn(4, 6), torch.randn(4, 8)
    # a weighted sum: the sum of a normalised row's squares is constant, its gradient all
    # cancellation
    compiled = torch.compile(model, backend=backend.backend, options={"strict": True})
    (compiled(x) * weights).sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    (model(x) * weights).sum().backward()
    for g, want in zip(got, (p.grad for p in model.parameters())):
        assert compare(g, want).ok
    assert [r.kind for r in backend.graphs()] == ["forward", "backward"]


def _prims_and_numbers(x):
    prims = torch.ops.prims
    squeezed = prims.squeeze(x, [1])
    return squeezed * 2, prims.view_of(x) + 1, prims.split_dim(squeezed, 1, 3)


def test_prims_views_and_num_to_tensor_through_the_backend():
    """Dynamo's graph calls prims' views by their packets, with keywords: ``aot_autograd``
    refused them as non-ATen ops whose output aliases an input; ``prim.NumToTensor`` came out
    without tensor metadata (torch-mlir's e2e ``Prims*``, ``SplitDim*``, ``NumToTensor*``)."""
    x = torch.rand(2, 1, 6, 3)
    with torch.no_grad():
        got = torch.compile(_prims_and_numbers, backend=backend.backend,
                            options={"strict": True})(x)
        result = compare(got, _prims_and_numbers(x))
        assert result.ok, result.message
        for number in (3, 2.5, True):
            torch._dynamo.reset()
            out = torch.compile(lambda: torch.ops.prim.NumToTensor(number),
                                backend=backend.backend, options={"strict": True})()
            want = torch.ops.prim.NumToTensor(number)
            assert out.dtype == want.dtype and out.item() == want.item(), (number, out)


def test_weights_are_read_by_reference_as_iree_parameters():
    """Without ``freeze``, an inference graph reads the module's parameters and buffers at
    load as IREE parameters bound to the module's own tensors: only ``x`` crosses each call,
    and an in-place change is seen (the module loads again)."""
    model, x = _norm_mlp().eval(), torch.randn(3, 8)
    compiled = torch.compile(model, backend=backend.backend, options={"strict": True})
    with torch.inference_mode():
        assert compare(compiled(x), model(x)).ok
    (record,) = backend.graphs()
    assert (record.ran, record.weights, record.frozen) == ("lowerkit", 8, 0)
    assert len(record.artifact.signature.tensor_inputs) == 1
    assert len(record.artifact.parameters) == 8
    with torch.no_grad():
        model[3].bias.add_(5)
        assert compare(compiled(x), model(x)).ok


class AddsToItsInput(torch.nn.Module):
    """Mutates its input: aot_autograd's runtime wrapper writes the new value back."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        x.add_(1)
        return self.linear(x)


class ReturnsAViewOfItsInput(torch.nn.Module):
    """Returns a view of its input: aot_autograd's runtime wrapper makes it one of ``x``."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x), x.view(-1)


def test_a_graph_that_only_passes_inputs_is_called_past_aot_autograds_wrappers():
    """An inference graph is called straight from Dynamo's inputs (`GraphRecord.direct`) when
    aot_autograd's runtime wrappers would only pass inputs on; a graph that mutates an input or
    returns a view of one keeps them, and the caller sees the mutation and the view."""
    with torch.inference_mode():
        model, x = _norm_mlp().eval(), torch.randn(3, 8)
        compiled = torch.compile(model, backend=backend.backend, options={"strict": True})
        for batch in (x, torch.randn(5, 8), torch.randn(7, 8)):  # static, then dynamic sizes
            assert compare(compiled(batch), model(batch)).ok
        assert [r.direct for r in backend.graphs()] == [True, True]
        assert _called_column(backend.graphs()) == ["direct", "direct"]  # `lowerkit explain`

        torch._dynamo.reset()
        backend.reset()
        model, x = AddsToItsInput().eval(), torch.randn(3, 8)
        compiled, theirs = torch.compile(model, backend=backend.backend,
                                         options={"strict": True}), x.clone()
        for _ in range(2):
            assert compare(compiled(x), model(theirs)).ok
            assert torch.equal(x, theirs)  # each call added 1 to the caller's tensor
        assert [r.direct for r in backend.graphs()] == [False]
        assert _called_column(backend.graphs()) == ["aot_autograd"]

        torch._dynamo.reset()
        backend.reset()
        model, x = ReturnsAViewOfItsInput().eval(), torch.randn(3, 8)
        out, view = torch.compile(model, backend=backend.backend, options={"strict": True})(x)
        assert compare(out, model(x)[0]).ok
        assert view.data_ptr() == x.data_ptr() and view.shape == (24,)
        assert [r.direct for r in backend.graphs()] == [False]


def _called_column(records) -> list[str]:
    """The ``called`` column of `lowerkit explain`'s table for these graphs."""
    table = backend.Explanation(records, []).table()
    return [str(cell) for cell in next(c for c in table.columns if c.header == "called").cells]


class Bessel(torch.nn.Module):
    """A block whose graph lowerkit refuses (bessel_j0): it runs eagerly on the tensors
    aot_autograd passes, which must be each block's own."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        x = torch.special.bessel_j0(self.linear(x))
        torch._dynamo.graph_break()
        return x * 2


@pytest.mark.parametrize("block", [Block, Bessel])
def test_repeated_blocks_each_read_their_own_weights(block):
    """Dynamo calls one compiled function for three blocks of the same code, each with its
    own parameters: each call computes with its block's weights, call after call, and the
    code is compiled once."""
    torch.manual_seed(0)
    model, x = Repeated(), torch.randn(2, 8)
    model.one, model.two, model.three = block(), block(), block()
    compiled = torch.compile(model, backend=backend.backend)
    with torch.no_grad():
        for _ in range(3):
            assert compare(compiled(x), model(x)).ok
        model.two.linear.weight.mul_(-1)  # in place, in the middle block only
        assert compare(compiled(x), model(x)).ok
    ran = [r.ran for r in backend.graphs()]
    assert ran == (["lowerkit"] * 2 if block is Block else ["eager", "lowerkit"]), ran


def test_a_replaced_parameter_is_read_in_place_of_the_old_one():
    torch.manual_seed(0)
    model, x = _norm_mlp().eval(), torch.randn(3, 8)
    compiled = torch.compile(model, backend=backend.backend)
    with torch.no_grad():
        compiled(x)
        model[0].weight = torch.nn.Parameter(torch.randn(16, 8))
        model[2].running_var = torch.rand(16) + 0.5
        assert compare(compiled(x), model(x)).ok
        assert compare(compiled(x), model(x)).ok


def test_torchs_guard_filter_for_built_in_modules_still_reads_each_calls_weights():
    """``guard_filter_fn=torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe`` (torch's, in
    the same options): Dynamo checks no attribute of a built-in module, so a replaced parameter
    or buffer does not recompile; lowerkit still computes with the tensors of each call."""
    torch.manual_seed(0)
    model, x = _norm_mlp().eval(), torch.randn(3, 8)
    compiled = torch.compile(model, backend="lowerkit", options={
        "strict": True, "guard_filter_fn": torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe})
    with torch.no_grad():
        assert compare(compiled(x), model(x)).ok
        model[0].weight = torch.nn.Parameter(torch.randn(16, 8))
        model[2].running_var = torch.rand(16) + 0.5
        assert compare(compiled(x), model(x)).ok
        model[3].bias.add_(1.0)
        assert compare(compiled(x), model(x)).ok
    assert [r.ran for r in backend.graphs()] == ["lowerkit"]  # no recompile


def test_freeze_runs_other_modules_weights_eagerly_not_with_the_frozen_ones():
    """Frozen constants are one block's: the same code called with another block's
    parameters runs eagerly (recorded), or raises with ``strict``; never the first block's
    answer."""
    torch.manual_seed(0)
    model, x = Repeated(), torch.randn(2, 8)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend=backend.backend, options={"freeze": True})(x)
        assert compare(got, want).ok
        assert any(r.ran == "eager" and "other than those compiled in" in r.reason
                   for r in backend.graphs())
        torch._dynamo.reset()
        strict = torch.compile(model, backend=backend.backend,
                               options={"freeze": True, "strict": True})
        with pytest.raises(Exception, match="other than those compiled in"):
            strict(x)


class Scaled(torch.nn.Module):
    """A float attribute used in the graph: under ``dynamic=True`` Dynamo passes it as a 0-d
    tensor input whose source is the module, but it is not the module's state."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.scale = 0.5

    def forward(self, x):
        return self.linear(x) * self.scale


@pytest.mark.parametrize("freeze", [False, True])
def test_a_modules_float_attributes_are_not_its_weights(freeze):
    """GPT-2's ``generate()`` under ``dynamic=True`` gave other tokens than eager: its ``eps``,
    dropout ``p`` and attention ``scaling`` were taken for weights (compiled in, or bound)."""
    torch.manual_seed(0)
    model, x = Scaled().eval(), torch.randn(2, 8)
    compiled = torch.compile(model, backend=backend.backend, dynamic=True,
                             options={"freeze": freeze, "strict": True})
    with torch.no_grad():
        assert compare(compiled(x), model(x)).ok
        model.scale = 3.0
        assert compare(compiled(x), model(x)).ok
    records = backend.graphs()
    assert {r.ran for r in records} == {"lowerkit"}
    assert {r.frozen if freeze else r.weights for r in records} == {2}  # weight and bias


def test_the_backends_short_call_answers_as_the_artifact_does():
    """`lowerkit.runtime.host_call.host_caller`, what the backend calls for each graph's
    artifact: once the CPU driver is chosen it takes the short path, with the Artifact's
    answers; a weight changed in place is read at the next call, and a call of another shape
    raises the Artifact's error."""
    import lowerkit
    from lowerkit.runtime import host_call

    model, x = _norm_mlp().eval(), torch.randn(3, 8)
    art = lowerkit.compile(model, (x,), target="cpu")
    call = host_call.host_caller(art)
    with torch.no_grad():
        for _ in range(20):  # past the drivers' trials (`executable._HostPath`)
            assert compare(call(x), model(x)).ok
        assert call.short()
        model[0].weight.mul_(-2)
        model[2].running_mean.add_(1)
        for _ in range(20):  # the full call loads them, its drivers' trials, the short path
            assert compare(call(x), model(x)).ok
        assert call.short()
        with pytest.raises(lowerkit.InputError, match="shape"):
            call(torch.randn(4, 8))
        assert compare(call(x.t().contiguous().t()), model(x)).ok  # not contiguous


def cumulative(x):
    return torch.cumsum(x, 1) * 2 + 1


def test_a_graph_that_reads_no_module_state_is_called_past_aot_autograds_wrappers():
    """A function's inference graph, no module's parameters in it, is called straight from
    Dynamo's inputs too (`GraphRecord.direct`)."""
    with torch.inference_mode():
        x = torch.randn(3, 8)
        compiled = torch.compile(cumulative, backend=backend.backend, options={"strict": True})
        for _ in range(12):
            for batch in (x, x + 1):
                assert compare(compiled(batch), cumulative(batch)).ok
    assert [(r.ran, r.direct) for r in backend.graphs()] == [("lowerkit", True)]


class Recurrent(torch.nn.Module):
    """torch.nn's LSTM or GRU, two layers, and a linear head on the last step."""

    def __init__(self, cell: type):
        super().__init__()
        self.rnn = cell(8, 16, 2, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


@pytest.mark.parametrize("cell", [torch.nn.LSTM, torch.nn.GRU])
def test_recurrent_layers_run_in_lowerkit_not_eagerly(cell):
    """Dynamo breaks the graph at torch.nn's LSTM and GRU unless ``allow_rnn``, which the
    backend turns on; an LSTM's inference graph decomposes into what torch-mlir lowers (not
    oneDNN's ``mkldnn_rnn_layer``): one graph, in lowerkit, called direct, as eager answers."""
    torch.manual_seed(0)
    model, x = Recurrent(cell).eval(), torch.randn(2, 5, 8)
    with torch.inference_mode():
        compiled = torch.compile(model, backend="lowerkit", options={"strict": True})
        for _ in range(3):
            assert compare(compiled(x), model(x)).ok
    assert [(r.ran, r.direct) for r in backend.graphs()] == [("lowerkit", True)]

    # under autograd: forward and backward graphs in lowerkit, eager's gradients
    twin = copy.deepcopy(model)
    compiled(x).square().sum().backward()
    twin(x).square().sum().backward()
    for ours, theirs in zip(model.parameters(), twin.parameters()):
        assert compare(ours.grad, theirs.grad).ok
    assert [(r.kind, r.ran) for r in backend.graphs()[1:]] == [("forward", "lowerkit"),
                                                               ("backward", "lowerkit")]
