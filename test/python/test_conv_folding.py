"""A convolution's per-channel scale and shift folded into its weights at import
(`lowerkit.ingress.conv_folding`: an eval BatchNorm, or one written by hand), and its bias added
after it on a CPU (`decompositions.BIAS_AFTER`). The folded weights are derived weights: torch
makes them when weights are bound, so another checkpoint or an in-place change still gives
eager's answer without a compile."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lowerkit
from lowerkit import backend, tuning
from lowerkit.runtime.numerics import compare


def _bn(c: int, seed: int) -> nn.BatchNorm2d:
    """Running statistics and an affine far from the identity; one channel's scale is 0 and
    one negative (a pruned channel, a flipped one)."""
    g = torch.Generator().manual_seed(seed)
    bn = nn.BatchNorm2d(c).eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(c, generator=g))
        bn.running_var.copy_(torch.rand(c, generator=g) * 2 + 0.1)
        bn.weight.copy_(torch.randn(c, generator=g) * 2)
        bn.weight[0] = 0.0
        bn.weight[1] = -abs(bn.weight[1]) - 0.5
        bn.bias.copy_(torch.randn(c, generator=g))
    return bn


class Chains(nn.Module):
    """Convolutions followed by per-channel affines, some foldable and some not."""

    def __init__(self, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.a, self.a_bn = nn.Conv2d(3, 8, 3, padding=1), _bn(8, seed)  # bias, then BN
        self.b = nn.Conv2d(8, 8, 3, padding=1, bias=False)  # a hand-written affine
        self.b_scale = nn.Parameter(torch.randn(8, 1, 1))
        self.b_shift = nn.Parameter(torch.randn(1, 8, 1, 1))
        self.b_sub = nn.Parameter(torch.randn(8))
        self.c, self.c_bn = nn.Conv2d(8, 8, 1), _bn(8, seed + 1)  # its output read twice
        self.d = nn.Conv2d(8, 8, 3, 2, 1, groups=2)  # scaled by the input: not weights
        self.e = nn.Conv2d(8, 8, 1, bias=False)  # a shift that widens the batch
        self.e_shift = nn.Parameter(torch.randn(2, 8, 1, 1))

    def forward(self, x):
        y = torch.relu(self.a_bn(self.a(x)))
        y = self.b(y) * self.b_scale + self.b_shift
        y = torch.sub(y, self.b_sub[:, None, None], alpha=2)
        c = self.c(y)
        y = self.c_bn(c) + c
        y = self.d(y) * x.mean((2, 3), keepdim=True)[:, :1].expand(1, 8, 1, 1)
        return self.e(y) + self.e_shift


X = torch.randn(1, 3, 12, 12, generator=torch.Generator().manual_seed(3))
FOLDED = {"a": {"a_bn.running_var", "a_bn.weight"}, "b": {"b_scale"}}  # what scales a filter
SHIFTS = [{"a.bias", "a_bn.running_mean", "a_bn.running_var", "a_bn.weight", "a_bn.bias"},
          {"b_shift", "b_sub"}]  # what one shift vector is made from
KEPT = ("c", "d", "e")  # read twice, scaled by the input, a widening shift: not folded


def _check(fn, want_model) -> None:
    with torch.no_grad():
        result = compare(fn(X), want_model(X))
    assert result.ok, result.message


def _filters(art) -> dict[str, set[str]]:
    """Each convolution's filter slot: the model tensors it is made from, by convolution."""
    made: dict[str, set[str]] = {}
    for slot in art.parameters:
        first = slot.state_keys[0]
        conv = first.split(".")[0]
        if first.endswith(".weight") and conv in (*FOLDED, *KEPT):
            made.setdefault(conv, set()).update(slot.state_keys)
    return made


def _assert_folded(art) -> None:
    filters = _filters(art)
    for conv, reads in FOLDED.items():
        assert reads <= filters[conv], (conv, filters[conv])
    for conv in KEPT:
        others = {k for k in filters[conv] if not k.startswith(f"{conv}.")}
        assert not others, (conv, others)  # read as it is, or laid out alone
    made = [set(s.state_keys) for s in art.parameters]
    assert all(shift in made for shift in SHIFTS), made
    # the program reads no BatchNorm tensor of a folded convolution itself
    direct = {s.key for s in art.parameters if s.derivation is None}
    assert not direct & {"a_bn.running_mean", "a_bn.running_var", "a_bn.bias", "b_scale"}


@pytest.mark.parametrize("convolutions", ["data-tiled", "rule"])
def test_a_convolutions_batchnorm_and_affine_fold_into_its_weights(convolutions):
    """Folded where every operand is a weight and nothing else reads the chain; the same
    answer as eager, and again after another checkpoint is bound."""
    model = Chains(0).eval()
    art = lowerkit.compile(model, (X,), cache=False, convolutions=convolutions)
    _check(art, model)
    if convolutions == "data-tiled":  # (under the rule a 3x3 one may go per tap: no conv op)
        _assert_folded(art)
    other = Chains(7).eval()
    art.bind_weights(other)
    _check(art, other)


def test_folding_follows_in_place_changes_through_torch_compile():
    """aot_autograd's graphs fold the same way, and a BatchNorm statistic changed in place
    reaches the folded weights at the next call."""
    torch._dynamo.reset()
    backend.reset()
    model = Chains(0).eval()
    compiled = torch.compile(model, backend="lowerkit", options={
        "convolutions": "data-tiled", "strict": True, "cache": False})
    with torch.inference_mode():
        _check(compiled, model)
    (record,) = backend.graphs()
    assert record.ran == "lowerkit"
    folded = [s for s in record.artifact.parameters if s.derivation is not None
              and len(s.derivation.inputs) >= 3 and s.derivation.input_shapes[0] == (8, 3, 3, 3)]
    assert folded, [s.key for s in record.artifact.parameters]
    with torch.no_grad():
        model.a_bn.running_var.mul_(3.0)
        model.b_scale.mul_(-1.0)
    with torch.inference_mode():
        _check(compiled, model)


class Scaled(nn.Module):
    """A convolution times a per-channel scale, plus a shift."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3)
        self.scale = nn.Parameter(torch.randn(8, 1, 1) * 3)
        self.shift = nn.Parameter(torch.randn(8, 1, 1))

    def forward(self, x):
        return self.conv(x) * self.scale + self.shift


def test_no_folding_in_16_bit_floats():
    """A bfloat16 convolution keeps its scale: the folded weights would be rounded once more
    than eager rounds them. (A bfloat16 BatchNorm computes in float32: no chain to fold.)"""
    model = Scaled().eval()
    art = lowerkit.compile(model, (X,), cache=False)
    assert any({"conv.weight", "scale"} <= set(s.state_keys) for s in art.parameters)
    model = model.to(torch.bfloat16)
    x = X.to(torch.bfloat16)
    art = lowerkit.compile(model, (x,), cache=False)
    assert not any({"conv.weight", "scale"} <= set(s.state_keys) for s in art.parameters)
    with torch.no_grad():
        result = compare(art(x), model(x))
    assert result.ok, result.message


BIASED = [  # (convolution, input shape): every form `_convolution` writes, each with a bias
    (nn.Conv2d(8, 16, 1), (1, 8, 20, 20)),  # a matmul to IREE
    (nn.Conv2d(3, 16, 7, 2, 3), (1, 3, 30, 28)),  # by phases where data-tiled
    (nn.Conv2d(8, 16, 3, padding=1), (2, 8, 10, 10)),  # whole or per tap
    (nn.Conv2d(8, 8, 3, padding=1, groups=8), (1, 8, 10, 10)),  # depthwise, per tap
    (nn.Conv2d(8, 16, 3, padding=2, dilation=2), (1, 8, 10, 10)),  # dilated
    (nn.Conv1d(8, 16, 3, padding=1), (1, 8, 30)),  # 1-D: of unit height
    (nn.Conv3d(4, 8, 3, padding=1), (1, 4, 5, 6, 6)),  # 3-D: by depth
    (nn.ConvTranspose2d(8, 4, 3, 2, 1), (1, 8, 7, 7)),  # transposed
]


def _biases(target: str, conv, x) -> list[str]:
    """The bias operand of each ``torch.aten.convolution`` of the program imported for
    ``target``."""
    with tuning.applied(target):
        text = str(lowerkit.import_program(conv, (x,)).module)
    operands = [line.split("torch.aten.convolution ")[1].split(", ")[2]
                for line in text.splitlines() if "torch.aten.convolution " in line]
    return ["none" if op.partition("_")[0] == "%none" else op for op in operands]


@pytest.mark.parametrize("conv,shape", BIASED, ids=["pointwise", "phases", "dense", "depthwise",
                                                     "dilated", "conv1d", "conv3d", "transposed"])
def test_a_convolutions_bias_is_added_after_it_on_a_cpu(conv, shape):
    """No convolution op of the imported CPU program carries a bias (torch-mlir would make it
    the sum's initial value, which IREE broadcast over the whole output in a dispatch of its
    own); the answer is eager's. A GPU import keeps torch-mlir's form."""
    torch.manual_seed(0)
    conv = conv.eval()
    x = torch.randn(shape)
    assert set(_biases("cpu", conv, x)) <= {"none"}  # (no convolution left: per tap)
    art = lowerkit.compile(conv, (x,), cache=False)
    with torch.no_grad():
        result = compare(art(x), conv(x))
    assert result.ok, result.message
    if shape == (1, 8, 20, 20):
        assert _biases("vulkan", conv, x) not in ([], ["none"])


class Depthwise(nn.Module):
    """Depthwise convolutions, which go per tap (no convolution op is left), each followed by a
    BatchNorm or an affine; one read twice."""

    def __init__(self, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.a, self.a_bn = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), _bn(8, seed)
        self.b = nn.Conv2d(8, 8, 3, 2, 1, groups=8)  # strided, with a bias, then an affine
        self.b_scale = nn.Parameter(torch.randn(8, 1, 1))
        self.b_shift = nn.Parameter(torch.randn(8, 1, 1))
        self.c, self.c_bn = nn.Conv2d(8, 8, 3, padding=1, groups=8), _bn(8, seed + 1)

    def forward(self, x):
        y = nn.functional.relu6(self.a_bn(self.a(x)))
        y = self.b(y) * self.b_scale - self.b_shift
        c = self.c(y)
        return self.c_bn(c) + c


DW_X = torch.randn(1, 8, 14, 14, generator=torch.Generator().manual_seed(4))
DW_FOLDED = {"a": {"a.weight", "a_bn.weight", "a_bn.running_var"}, "b": {"b.weight", "b_scale"}}


def _tap_weights(art, conv: str) -> list[set[str]]:
    """What each of the parameters made from ``conv``'s filter is made from."""
    return [set(s.state_keys) for s in art.parameters if s.state_keys[0] == f"{conv}.weight"]


def test_a_depthwise_convolution_per_tap_folds_its_batchnorm_into_its_taps():
    """A depthwise convolution written as a sum of taps takes its chain's scale into every
    tap's weights and its shift after the sum, through `lowerkit.compile` and torch.compile
    alike; eager's answer, and again after another checkpoint or an in-place change."""
    model = Depthwise(0).eval()
    art = lowerkit.compile(model, (DW_X,), cache=False)
    for conv, reads in DW_FOLDED.items():  # one scaled filter, read through each tap's slice
        assert _tap_weights(art, conv) == [reads], (conv, _tap_weights(art, conv))
    assert _tap_weights(art, "c") == [{"c.weight"}]  # read twice: its filter read as it is
    assert {"b.bias", "b_scale", "b_shift"} in [set(s.state_keys) for s in art.parameters]
    _check_dw(art, model)
    other = Depthwise(5).eval()
    art.bind_weights(other)
    _check_dw(art, other)

    torch._dynamo.reset()
    backend.reset()
    compiled = torch.compile(model, backend="lowerkit", options={"strict": True, "cache": False})
    with torch.inference_mode():
        _check_dw(compiled, model)
    (record,) = backend.graphs()
    assert any(s.derivation is not None and s.derivation.input_shapes[0] == (8, 1, 3, 3)
               and len(s.derivation.inputs) == 3 for s in record.artifact.parameters)
    with torch.no_grad():
        model.a_bn.running_var.mul_(3.0)
        model.b_scale.mul_(-1.0)
    with torch.inference_mode():
        _check_dw(compiled, model)


def _check_dw(fn, want_model) -> None:
    with torch.no_grad():
        result = compare(fn(DW_X), want_model(DW_X))
    assert result.ok, result.message
