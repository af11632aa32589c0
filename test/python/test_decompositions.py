"""lowerkit's import-time decompositions (`lowerkit.ingress.decompositions`): sort, topk and cumsum in
data-parallel form and convolutions as one matmul per kernel tap give eager's answers, apply
only where they pay, and can be turned off."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit.runtime.numerics import Tolerance, compare

EXACT = Tolerance(0.0)


def assert_matches(got, expected, tol=None):
    """Within ``tol`` of eager relative to each output's scale (default: its dtype's)."""
    result = compare(got, expected, tol=tol)
    assert result.ok, result.message


def lowered_histogram(fn, args) -> dict[str, int]:
    imported = lowerkit.import_program(fn, args)
    module = lowerkit.resolve_pipeline(None).run(imported.module).module
    return dict(lowerkit.op_histogram(module))


def lowered_ops(fn, args) -> set[str]:
    return set(lowered_histogram(fn, args))


def _special(x: torch.Tensor) -> torch.Tensor:
    """NaN, inf and -inf in a float tensor (ties stay out: eager's unstable sort orders them
    as it likes)."""
    x = x.clone()
    flat = x.view(-1)
    flat[3], flat[7], flat[-2] = float("nan"), float("inf"), float("-inf")
    return x


SORTS = [
    ("descending-last", lambda x: torch.sort(x, dim=-1, descending=True)),
    ("ascending-dim0", lambda x: torch.sort(x, dim=0)),
    ("topk-largest", lambda x: torch.topk(x, 5, dim=-1)),
    ("topk-smallest-dim0", lambda x: torch.topk(x, 3, dim=0, largest=False)),
    ("argsort", lambda x: torch.argsort(x, dim=1, descending=True)),
]


@pytest.mark.parametrize("name,fn", SORTS, ids=[s[0] for s in SORTS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sort_and_topk_match_eager_with_nan_and_inf(name, fn, dtype):
    torch.manual_seed(0)
    x = _special(torch.randn(8, 64)).to(dtype)
    art = lowerkit.compile(fn, (x,), cache=False)
    assert_matches(art(x), fn(x), tol=EXACT)


def test_stable_sort_orders_ties_as_eager():
    torch.manual_seed(0)
    x = torch.randint(-3, 3, (6, 40))
    fn = lambda x: torch.sort(x, dim=1, descending=True, stable=True)  # noqa: E731
    art = lowerkit.compile(fn, (x,), cache=False)
    assert_matches(art(x), fn(x), tol=EXACT)


CUMSUMS = [
    ("f32-dim1", lambda x: torch.cumsum(x, 1), torch.randn(4, 32, 16)),
    ("logcumsumexp-by-hand", lambda x: torch.cumsum(x.exp(), -1).log(), torch.randn(4, 33)),
    ("int64", lambda x: torch.cumsum(x, 0), torch.randint(-9, 9, (37, 3))),
    ("int32-to-int64", lambda x: torch.cumsum(x, -1), torch.randint(-9, 9, (3, 5), dtype=torch.int32)),
    ("bool", lambda x: torch.cumsum(x, -1), torch.rand(3, 9) > 0.5),
    ("f16", lambda x: torch.cumsum(x, -1), torch.randn(5, 100).half()),
    ("to-f64", lambda x: torch.cumsum(x, 0, dtype=torch.float64), torch.randn(6, 2)),
    ("inf-and-nan", lambda x: torch.cumsum(x, -1), _special(torch.randn(2, 12))),
]


@pytest.mark.parametrize("name,fn,x", CUMSUMS, ids=[c[0] for c in CUMSUMS])
def test_cumsum_matches_eager(name, fn, x):
    art = lowerkit.compile(fn, (x,), cache=False)
    got, expected = art(x), fn(x)
    assert got.dtype == expected.dtype
    # f16 sums accumulate in f32 as eager's do: the two differ by the last rounding to f16, one
    # f16 ulp at most (9.8e-4 of a value), ten times tighter than f16's default
    assert_matches(got, expected, tol=Tolerance(1e-3) if x.dtype == torch.float16 else None)


def test_decompositions_replace_the_serial_ops():
    x = torch.randn(8, 64)
    ops = lowered_ops(lambda x: (torch.sort(x), torch.cumsum(x, 1)), (x,))
    assert not any(op.startswith("tm_tensor.") for op in ops), ops


def test_long_dimensions_keep_the_serial_ops():
    x = torch.randn(2, 5000)
    ops = lowered_ops(lambda x: (torch.sort(x), torch.cumsum(x, 1)), (x,))
    assert {"tm_tensor.sort", "tm_tensor.scan"} <= ops, ops


def test_decompositions_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("LOWERKIT_DECOMPOSITIONS", "0")
    ops = lowered_ops(lambda x: torch.topk(x, 2), (torch.randn(3, 8),))
    assert any(op.startswith("tm_tensor.") for op in ops), ops


CONVS = [
    ("2d-3x3-pad", torch.nn.Conv2d(16, 8, 3, 1, 1), (1, 16, 12, 10)),
    ("2d-stride-batch", torch.nn.Conv2d(16, 8, 3, 2, 1), (2, 16, 11, 9)),
    ("2d-dilated-no-bias", torch.nn.Conv2d(16, 8, (1, 3), (2, 1), (0, 2), dilation=(1, 2),
                                           bias=False), (1, 16, 7, 9)),
    ("1d-dilated", torch.nn.Conv1d(32, 32, 3, dilation=4), (1, 32, 50)),
    ("1d-stride-pad-batch", torch.nn.Conv1d(8, 4, 5, stride=3, padding=2), (3, 8, 17)),
    ("3d-3x3x3-pad", torch.nn.Conv3d(16, 8, 3, 1, 1), (1, 16, 5, 6, 7)),
    ("3d-stride-dilation-groups-batch", torch.nn.Conv3d(8, 8, (3, 1, 3), (2, 1, 1), (1, 0, 1),
                                                        dilation=(2, 1, 1), groups=2),
     (2, 8, 9, 5, 6)),
]


@pytest.mark.parametrize("name,conv,shape", CONVS, ids=[c[0] for c in CONVS])
def test_convolution_per_tap_matches_eager(name, conv, shape):
    torch.manual_seed(0)
    conv = conv.eval()
    x = torch.randn(*shape)
    art = lowerkit.compile(conv, (x,), cache=False)
    with torch.no_grad():
        expected = conv(x)
    got = art(x)
    assert got.shape == expected.shape
    assert_matches(got, expected)


DEPTHWISE = [  # (convolution, input shape): the per-tap form's shapes, one test for all
    (torch.nn.Conv2d(16, 16, 3, 1, 1, groups=16), (2, 16, 12, 10)),
    # strided: by phases of the input (`_tap_windows`), odd and even sizes, mixed strides
    (torch.nn.Conv2d(8, 8, 3, (2, 3), (2, 0), dilation=(2, 1), groups=8), (2, 8, 13, 12)),
    (torch.nn.Conv1d(12, 12, 5, stride=3, dilation=2, groups=12, bias=False), (1, 12, 40)),
    # wider kernels: MobileNetV3's and DeepLabV3's 5x5, ConvNeXt's 7x7 (`MAX_DEPTHWISE_TAPS`)
    (torch.nn.Conv2d(16, 16, 5, 2, 2, groups=16), (1, 16, 15, 15)),
    (torch.nn.Conv2d(8, 8, 7, 1, 3, groups=8), (1, 8, 14, 14)),
]


def test_depthwise_convolutions_per_tap_match_eager():
    """A depthwise convolution is a sum of per-channel multiplies, one per tap: IREE's
    depthwise kernel was slower at every MobileNetV2 shape (benchmarks/depthwise.py)."""
    from lowerkit import tuning

    for conv, shape in DEPTHWISE:
        torch.manual_seed(0)
        conv = conv.eval()
        x = torch.randn(*shape)
        ops = lowered_ops(conv, (x,))
        art = lowerkit.compile(conv, (x,), cache=False)
        assert not any("conv" in op for op in ops), (conv, ops)
        with torch.no_grad():
            assert_matches(art(x), conv(x))
    # a stored choice of the whole form leaves it to IREE's depthwise kernel
    with tuning.forced(tuning.IM2COL):
        ops = lowered_ops(DEPTHWISE[0][0], (torch.randn(*DEPTHWISE[0][1]),))
    assert "linalg.depthwise_conv_2d_nchw_chw" in ops, ops


def test_convolutions_become_matmuls():
    conv2d = torch.nn.Conv2d(16, 8, 3, 1, 1)
    conv1d = torch.nn.Conv1d(16, 8, 3, dilation=2)
    ops = lowered_ops(lambda x, y: (conv2d(x), conv1d(y)),
                      (torch.randn(1, 16, 8, 8), torch.randn(1, 16, 20)))
    assert not any(op.startswith("linalg.conv") for op in ops), ops
    assert "linalg.matmul" in ops, ops


def test_a_convolution_that_reads_only_padding_at_most_taps_computes_only_the_centre():
    """DeepLabV3's atrous head runs 3x3 kernels at rate 36 over a 33x33 map: every tap but
    the centre reads zeros there, so the convolution is one matmul (`conv_regions`), not nine."""
    conv = torch.nn.Conv2d(256, 256, 3, padding=15, dilation=15).eval()
    x = torch.randn(1, 256, 12, 12)
    ops = lowered_histogram(conv, (x,))
    assert not any("conv" in op for op in ops), ops
    assert ops.get("linalg.matmul", 0) + ops.get("linalg.batch_matmul", 0) == 1, ops
    # on lowerkit's fast rung: the centre tap's [O, C] weight sliced in place, packed inside
    # the matmul's dispatch, overflowed IREE's stack limit (DeepLabV3's 960 -> 256 head)
    art = lowerkit.compile(conv, (x,), cache=False)
    assert art.compile_rung == "fast"
    with torch.no_grad():
        assert_matches(art(x), conv(x))


def test_the_padding_regions_of_each_dimension():
    from lowerkit.ingress.conv_regions import Interval, intervals, padding_share, worth_splitting

    # rate 24 over 33: the first 9 rows read through taps 1-2, the middle 15 through the
    # centre alone, the last 9 through taps 0-1
    rate24 = intervals(33, 3, 1, 24, 24, 33)
    assert rate24 == [Interval(0, 9, 1, 2), Interval(9, 24, 1, 1), Interval(24, 33, 0, 1)]
    assert intervals(33, 3, 1, 36, 36, 33) == [Interval(0, 33, 1, 1)]
    # strided, and rows no tap reaches (padding wider than the kernel's reach)
    assert intervals(8, 3, 2, 1, 1, 4) == [Interval(0, 1, 1, 2), Interval(1, 4, 0, 2)]
    assert intervals(3, 3, 1, 5, 1, 11)[:2] == [Interval(0, 3, 0, -1), Interval(3, 4, 2, 2)]
    assert padding_share([rate24, rate24], [3, 3]) == pytest.approx(1 - (51 / 99) ** 2)
    same = intervals(56, 3, 1, 1, 1, 56)  # a "same" 3x3 over 56x56 reads 2.4 % padding
    assert not worth_splitting([same, same], [3, 3])
    wide = intervals(8, 5, 1, 2, 1, 8)  # a "same" 5x5 over 8x8: 28 %, but 25 regions
    assert padding_share([wide, wide], [5, 5]) > 0.25 and not worth_splitting([wide, wide], [5, 5])
    assert worth_splitting([rate24, rate24], [3, 3])


PADDED = [  # (convolution, input shape): convolutions split by padding regions
    ("atrous-rates", torch.nn.Conv2d(16, 8, 3, padding=4, dilation=4), (1, 16, 9, 9)),
    ("strided-batch", torch.nn.Conv2d(8, 8, 3, stride=2, padding=3, dilation=3, bias=False),
     (2, 8, 7, 8)),
    ("rows-no-tap-reaches", torch.nn.Conv2d(4, 6, 3, padding=5), (1, 4, 3, 3)),
    ("depthwise", torch.nn.Conv2d(8, 8, 3, padding=6, dilation=6, groups=8), (1, 8, 9, 9)),
    ("thick-dilated", torch.nn.Conv2d(128, 128, 3, padding=2, dilation=2), (1, 128, 9, 9)),
    ("1d", torch.nn.Conv1d(8, 8, 3, padding=10, dilation=10), (1, 8, 20)),
    ("3d", torch.nn.Conv3d(8, 8, 3, padding=(2, 4, 4), dilation=(2, 4, 4)), (1, 8, 5, 4, 4)),
]


@pytest.mark.parametrize("name,conv,shape", PADDED, ids=[c[0] for c in PADDED])
def test_a_convolution_split_by_padding_regions_matches_eager(name, conv, shape):
    torch.manual_seed(0)
    conv = conv.eval()
    x = torch.randn(*shape)
    ops = lowered_ops(conv, (x,))
    # dilated dense convolutions go per tap (IREE's im2col of a dilated one ran 2.3x slower),
    # but for four input channels, too few for taps (`MIN_TAP_CHANNELS`: im2col, undilated),
    # and a 3-D one's regions of one tap in height and width (1x1 2-D convolutions by depth)
    assert any("conv" in op for op in ops) == (name in ("rows-no-tap-reaches", "3d")), ops
    art = lowerkit.compile(conv, (x,), cache=False)
    with torch.no_grad():
        assert_matches(art(x), conv(x))


def test_a_dilated_convolution_goes_per_tap_where_dense_ones_are_data_tiled_whole():
    """IREE's data-tiled code for a dilated convolution took 15x eager's time (a DeepLabV3-
    ResNet's 512 -> 512 at rate 2): the strategy that sends dense ones whole leaves it per tap."""
    from lowerkit import tuning

    conv = torch.nn.Conv2d(64, 64, 3, padding=2, dilation=2).eval()
    x = torch.randn(1, 64, 20, 20)
    with tuning.forced_convolutions(tuning.DATA_TILED), tuning.applied("cpu"):
        ops = lowered_ops(conv, (x,))
        undilated = lowered_ops(torch.nn.Conv2d(64, 64, 3, padding=1).eval(), (x,))
    assert not any("conv" in op for op in ops), ops
    assert any("conv" in op for op in undilated), undilated  # the strategy held


GROUPED = [  # (convolution, input shape): grouped, neither dense nor depthwise
    (torch.nn.Conv2d(48, 48, 3, 1, 1, groups=6), (1, 48, 10, 10)),  # RegNet's 8 wide
    # strided, by phases; a batch; 32 wide: the batched matmul over the groups
    (torch.nn.Conv2d(64, 128, 3, 2, 1, groups=2, bias=False), (2, 64, 9, 11)),
    (torch.nn.Conv2d(96, 48, 3, (2, 1), (1, 0), dilation=(1, 2), groups=3), (1, 96, 8, 9)),
    (torch.nn.Conv1d(32, 32, 3, 1, 1, groups=4), (2, 32, 20)),
]


@pytest.mark.parametrize("conv,shape", GROUPED, ids=["8-wide", "32-wide-strided-batch",
                                                      "dilated", "1d"])
def test_grouped_convolutions_per_tap_match_eager(conv, shape):
    """IREE 3.13 ran grouped convolutions whole 2.6-11x slower than per tap (RegNet-Y, ResNeXt;
    benchmarks/grouped.py): none is left whole on a CPU."""
    torch.manual_seed(0)
    conv = conv.eval()
    x = torch.randn(*shape)
    ops = lowered_histogram(conv, (x,))
    assert not any("conv" in op for op in ops), ops
    # the narrow groups by multiplies, the wide ones by a matmul over the groups
    assert ("linalg.batch_matmul" in ops) == (conv.in_channels // conv.groups > 16), ops
    art = lowerkit.compile(conv, (x,), cache=False)
    with torch.no_grad():
        assert_matches(art(x), conv(x))


def test_3d_convolutions_become_2d_ones():
    """IREE runs `linalg.conv_3d_ncdhw_fcdhw` as a loop nest: none may be left."""
    conv3d = torch.nn.Conv3d(16, 8, 3, 1, 1)
    ops = lowered_ops(conv3d, (torch.randn(1, 16, 4, 6, 6),))
    assert not any(op.startswith("linalg.conv_3d") for op in ops), ops


def test_3d_convolutions_go_per_tap_without_512_bit_vectors():
    """On a CPU without AVX-512 a dense 3-D convolution of one clip is a plain matmul per tap
    (by depth, its taps were batched matmuls with a broadcast weight, which IREE does not
    data-tile); with AVX-512, or for a batch of clips, it still goes by depth."""
    from lowerkit import tuning

    torch.manual_seed(0)
    conv3d = torch.nn.Conv3d(16, 8, 3, 1, 1).eval()
    clip, clips = torch.randn(1, 16, 4, 6, 6), torch.randn(2, 16, 4, 6, 6)
    for target, x, per_tap in (("cpu:x86-64-v3", clip, True), ("cpu:znver4", clip, False),
                               ("cpu:x86-64-v3", clips, False)):
        with tuning.applied(target):
            hist = lowered_histogram(conv3d, (x,))
        # three taps a matmul on a CPU without AVX-512 (`TAPS_PER_MATMUL`)
        assert (hist.get("linalg.matmul", 0) == 9) == per_tap, (target, x.shape, hist)
    art = lowerkit.compile(conv3d, (clip,), target="cpu:x86-64-v3", cache=False)
    with torch.no_grad():
        assert_matches(art(clip), conv3d(clip))


def _matmul_depths(fn, args) -> list[int]:
    """The contraction size (K) of each `linalg.matmul` of ``fn`` lowered, in program order."""
    import re

    imported = lowerkit.import_program(fn, args)
    text = str(lowerkit.resolve_pipeline(None).run(imported.module).module)
    return [int(k) for k in re.findall(r"linalg\.matmul ins\([^:]*: tensor<\d+x(\d+)xf32>", text)]


@pytest.mark.parametrize("conv, shape", [
    (torch.nn.Conv2d(16, 8, 3, 1, 1), (1, 16, 9, 9)),                     # 9 taps: 3 x 3
    (torch.nn.Conv2d(16, 8, (1, 7), 1, (0, 3), bias=False), (1, 16, 8, 8)),  # 7 taps: 3, 3, 1
    (torch.nn.Conv2d(16, 8, 3, 2, 1, dilation=2), (1, 16, 11, 11)),
    (torch.nn.Conv1d(16, 8, 5, 1, 2), (1, 16, 20)),                        # 5 taps: 3, 2
])
def test_dense_taps_go_three_a_matmul_without_512_bit_vectors(conv, shape):
    """On a CPU without AVX-512 a dense convolution per tap stacks three taps' windows as
    one matmul's operand, K = 3 x C_in (the last takes what is left); elsewhere (a GPU) each
    tap is its own matmul over K = C_in. Either way it matches eager."""
    from lowerkit import tuning

    torch.manual_seed(0)
    conv = conv.eval()
    x = torch.randn(*shape)
    taps = conv.weight[0, 0].numel()
    c = shape[1]
    with tuning.applied("cpu:x86-64-v3"):
        grouped = _matmul_depths(conv, (x,))
    assert grouped == [3 * c] * (taps // 3) + ([taps % 3 * c] if taps % 3 else []), grouped
    with tuning.applied("vulkan"):
        assert _matmul_depths(conv, (x,)) == [c] * taps
    art = lowerkit.compile(conv, (x,), target="cpu:x86-64-v3", cache=False)
    with torch.no_grad():
        assert_matches(art(x), conv(x))


WHOLE_1D = [  # (convolution, input shape): dense 1-D convolutions the per-tap form leaves
    (torch.nn.Conv1d(4, 8, 3, padding=2, dilation=2), (1, 4, 30)),      # few channels
    (torch.nn.Conv1d(16, 8, 10, stride=5, bias=False), (2, 16, 80)),    # wav2vec2's 10 taps
    (torch.nn.Conv1d(16, 24, 1), (1, 16, 20)),                          # one tap
]


def test_whole_1d_convolutions_become_2d_ones_of_unit_height():
    """IREE 3.13 has no im2col for `linalg.conv_1d_ncw_fcw` and runs it as a loop nest
    (Whisper's front end, left whole, took about 260 ms of a 380 ms call): a dense 1-D
    convolution the per-tap form leaves, or a stored choice sends whole, is a 2-D one."""
    from lowerkit import tuning

    cases = [(conv, shape, None) for conv, shape in WHOLE_1D]
    cases.append((torch.nn.Conv1d(16, 8, 3, stride=2, padding=1), (1, 16, 33), tuning.IM2COL))
    for conv, shape, forced in cases:
        torch.manual_seed(0)
        conv = conv.eval()
        x = torch.randn(*shape)
        with tuning.forced(forced):
            ops = lowered_ops(conv, (x,))
            art = lowerkit.compile(conv, (x,), cache=False)
        assert not any(op.startswith("linalg.conv_1d") for op in ops), (conv, ops)
        assert "linalg.conv_2d_nchw_fchw" in ops, (conv, ops)
        with torch.no_grad():
            expected = conv(x)
        got = art(x)
        assert got.shape == expected.shape
        assert_matches(got, expected)


PHASED = [  # (convolution, input shape): strided dense ones over fewer than 8 channels
    (torch.nn.Conv2d(3, 16, 7, 2, 3), (2, 3, 33, 30)),  # ResNet's stem: batch 2, odd sizes
    (torch.nn.Conv2d(3, 24, 16, 16, bias=False), (1, 3, 64, 48)),  # ViT's patches: a 1x1 after
    (torch.nn.Conv2d(5, 8, (3, 2), (2, 3), (1, 0)), (1, 5, 13, 17)),  # mixed strides
    (torch.nn.Conv2d(4, 8, 2, 2), (1, 4, 9, 9)),  # the last row and column read by no window
]


def _lowered(fn, args, strategy, target="cpu") -> str:
    """The program lowered to linalg with dense convolutions sent ``strategy``'s way for
    ``target``."""
    from lowerkit import tuning

    with tuning.forced_convolutions(strategy), tuning.applied(target):
        imported = lowerkit.import_program(fn, args)
    return str(lowerkit.resolve_pipeline(None).run(imported.module).module)


def _linalg_convs(fn, args, strategy, target="cpu") -> list[tuple[str, int]]:
    """Each ``linalg.conv_2d_nchw_fchw`` in the program lowered with dense convolutions sent
    ``strategy``'s way for ``target``: (its strides, its input's channels)."""
    import re

    text = _lowered(fn, args, strategy, target)
    return [(m.group(1), int(m.group(2))) for m in re.finditer(
        r"linalg\.conv_2d_nchw_fchw \{[^}]*strides = dense<([^>]*)>[^}]*\} "
        r"ins\(%[^:]*: tensor<\d+x(\d+)x", text)]


@pytest.mark.parametrize("conv,shape", PHASED, ids=["stem", "patches", "mixed", "cropped"])
def test_a_strided_convolution_over_few_channels_goes_data_tiled_by_phases(conv, shape):
    """Data-tiled whole for a CPU with AVX-512, a strided convolution over few channels is the
    stride-1 one over its input's phases (`decompositions._conv_by_phases`): IREE's
    data-tiled form read a kernel tap's few channels at a time (ResNet's stem several times
    slower, benchmarks/conv_phases.py). Eager's answer on this host, also for another
    checkpoint bound to the same code (the phased filter is made from the weights on the
    host); the rule leaves the input's channels as they are."""
    from lowerkit import tuning

    torch.manual_seed(0)
    conv = conv.eval()
    x = torch.randn(*shape)
    sh, sw = conv.stride
    phased = [("1", shape[1] * sh * sw)]
    assert _linalg_convs(conv, (x,), tuning.DATA_TILED, "cpu:znver4") == phased
    # this host's form, whose answer is checked below: by phases where it has AVX-512
    here = _linalg_convs(conv, (x,), tuning.DATA_TILED)
    assert (here == phased) == tuning.data_tiling_pays("cpu"), here
    # the rule: whole (im2col) or per tap, never over the phases' channels
    assert all(c == shape[1] for _, c in _linalg_convs(conv, (x,), tuning.RULE))
    art = lowerkit.compile(conv, (x,), cache=False, convolutions=tuning.DATA_TILED)
    with torch.no_grad():
        expected = conv(x)
    got = art(x)
    assert got.shape == expected.shape
    assert_matches(got, expected)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in conv.parameters():
            p.copy_(torch.randn_like(p))
        art.bind_weights(conv)
        assert_matches(art(x), conv(x))


def test_strided_convolutions_over_many_channels_and_unstrided_ones_keep_their_form():
    """By phases only below `PHASE_MAX_CHANNELS` input channels, only strided, and only for a
    CPU with 512-bit vectors (for an AVX2 one IREE compiles a direct convolution instead)."""
    from lowerkit import tuning

    wide, flat = torch.nn.Conv2d(8, 8, 3, 2, 1), torch.nn.Conv2d(3, 8, 3, 1, 1)
    assert _linalg_convs(wide, (torch.randn(1, 8, 12, 12),), tuning.DATA_TILED) == [("2", 8)]
    assert _linalg_convs(flat, (torch.randn(1, 3, 12, 12),), tuning.DATA_TILED) == [("1", 3)]
    stem, x = torch.nn.Conv2d(3, 8, 7, 2, 3), torch.randn(1, 3, 16, 16)
    assert _linalg_convs(stem, (x,), tuning.DATA_TILED, "cpu:znver4") == [("1", 12)]
    assert _linalg_convs(stem, (x,), tuning.DATA_TILED, "cpu:x86-64-v3") == [("2", 3)]


POOLS = [  # (max pooling, input shape): strided 2-D ones, values only
    (torch.nn.MaxPool2d(3, 2, 1), (2, 8, 17, 16)),  # ResNet's: batch 2, odd and even sizes
    (torch.nn.MaxPool2d((3, 2), (2, 3), (1, 0)), (1, 4, 13, 17)),  # mixed strides and kernel
    (torch.nn.MaxPool2d(2), (1, 4, 9, 9)),  # the last row and column in no window
]


@pytest.mark.parametrize("pool,shape", POOLS, ids=["resnet", "mixed", "cropped"])
def test_a_strided_max_pooling_goes_by_phases_where_convolutions_are_data_tiled(pool, shape):
    """Between convolutions data-tiled channels-last, a strided max pooling is the maximum of
    one unit-stride window per tap over the input's phases (`decompositions._max_pool_by_phases`:
    ResNet-18's pooling kept whole was the fourth slowest dispatch of its call). Eager's
    answer with NaN, inf and -inf in the input; the rule, and a CPU without 512-bit vectors,
    keep torch-mlir's pooling op."""
    from lowerkit import tuning

    torch.manual_seed(0)
    x = _special(torch.randn(*shape))
    assert "linalg.pooling_nchw_max" not in _lowered(pool, (x,), tuning.DATA_TILED, "cpu:znver4")
    assert "linalg.pooling_nchw_max" in _lowered(pool, (x,), tuning.RULE)
    assert "linalg.pooling_nchw_max" in _lowered(pool, (x,), tuning.DATA_TILED, "cpu:x86-64-v3")
    art = lowerkit.compile(pool, (x,), cache=False, convolutions=tuning.DATA_TILED)
    expected = pool(x)
    got = art(x)
    assert got.shape == expected.shape
    assert_matches(got, expected, EXACT)  # a maximum of the same values: exact


@pytest.mark.parametrize("conv,shape,conv_op", [
    (torch.nn.Conv2d(3, 8, 3, 1, 1), (1, 3, 8, 8), "linalg.conv_2d_nchw_fchw"),  # few channels
    # depthwise with 81 taps: more than the per-tap form takes (`MAX_DEPTHWISE_TAPS`)
    (torch.nn.Conv2d(16, 16, 9, 2, 4, groups=16), (1, 16, 32, 32),
     "linalg.depthwise_conv_2d_nchw_chw"),
    (torch.nn.Conv2d(16, 8, 1), (1, 16, 8, 8), "linalg.conv_2d_nchw_fchw"),  # one tap: IREE's matmul
    (torch.nn.Conv2d(16, 8, 5, 1, 2), (1, 16, 8, 8), "linalg.conv_2d_nchw_fchw"),  # 25 taps
    (torch.nn.ConvTranspose2d(16, 8, 3), (1, 16, 8, 8), "linalg.conv_2d_nchw_fchw"),  # transposed
], ids=["rgb", "depthwise", "1x1", "5x5", "transposed"])
def test_other_convolutions_keep_the_usual_path(conv, shape, conv_op):
    imported = lowerkit.import_program(conv.eval(), (torch.randn(*shape),))
    ops = lowerkit.op_histogram(lowerkit.resolve_pipeline(None).run(imported.module).module)
    # torch-mlir's one convolution op, and none of the per-tap form's matmuls
    convs = {op: n for op, n in ops.items() if "conv" in op}
    assert convs == {conv_op: 1}, dict(ops)
    assert "linalg.matmul" not in ops and "linalg.batch_matmul" not in ops, dict(ops)


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu_matches_eager_at_f32s_tolerance(approximate):
    """GELU's tanh form is decomposed with sqrt(2/pi) to f32's precision: torch-mlir's own
    lowering uses 0.797724 and was 5e-5 of scale off near x = 1.3 (over f32's 1e-5)."""
    def fn(x):
        return torch.nn.functional.gelu(x, approximate=approximate)

    x = torch.linspace(-4, 4, 801)
    result = compare(lowerkit.compile(fn, (x,))(x), fn(x))
    assert result.ok, result.message


# -- max pooling's indices ---------------------------------------------------------------------
# torch-mlir's lowering of max_pool2d_with_indices gives the right values but -1 for the index
# of a window that holds a NaN (eager: the last NaN's position). lowerkit decomposes the op
# where the indices are read; plain max pooling keeps torch-mlir's pooling.
def max_pools_with_indices(x, y):  # x: [2, 3, 9, 7]; y: [1, 2, 3, 4, 5] float32
    F = torch.nn.functional
    a, ai = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    # dilated taps, ceil mode
    b, bi = F.max_pool2d(x, 2, stride=2, dilation=3, padding=1, ceil_mode=True,
                         return_indices=True)
    c, ci = F.max_pool3d(y, 2, stride=1, padding=1, return_indices=True)
    d, di = F.max_pool1d(x[0], 3, stride=2, return_indices=True)
    # over 2 columns the taps -1 and 2 miss the input: -inf at eager's index (the adjusted
    # starts, past the end)
    e, ei = F.max_pool2d(x[:, :, :3, :2], 2, stride=1, padding=1, dilation=3,
                         return_indices=True)
    return a, ai, b, bi, c, ci, d, di, e, ei


def pooling_inputs(seed: int, h: int = 9, w: int = 7) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, h, w, generator=gen).round()  # ties
    x[0, 0, 1, 1] = float("nan")
    x[1, 2, 4, 4:6] = float("nan")  # two NaNs in one window: eager picks the last
    x[0, 1] = -float("inf")
    y = torch.randn(1, 2, 3, 4, 5, generator=gen)
    y[0, 0, 1, 1, 1] = float("nan")
    return x, y


def assert_pools_equal(got, expected):
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert torch.equal(g.isnan(), e.isnan()) and torch.equal(g.nan_to_num(), e.nan_to_num())


def test_max_pooling_indices_beside_nan_match_eager():
    args = pooling_inputs(0)
    art = lowerkit.compile(max_pools_with_indices, args, cache=False)
    assert_pools_equal(art(*args), max_pools_with_indices(*args))


def test_max_pooling_indices_over_dynamic_sizes():
    from torch.export import Dim

    def pool(x):
        return torch.nn.functional.max_pool2d(x, 3, stride=2, padding=1, dilation=2,
                                              return_indices=True)

    x, _ = pooling_inputs(1)
    dims = ({2: Dim("h", min=6, max=64), 3: Dim("w", min=6, max=64)},)
    art = lowerkit.compile(pool, (x,), dynamic_shapes=dims, cache=False)
    for h, w in ((9, 7), (12, 10)):
        x, _ = pooling_inputs(2, h, w)
        assert_pools_equal(art(x), pool(x))


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_plain_max_pooling_keeps_the_pooling_op(rank):
    """No gathers (``tensor.extract``) where no index is read; the 1-D pooling, a composite of
    the 2-D one with indices, took the gathers once (fuzz campaign seed 2120, program 92)."""
    pool = getattr(torch.nn.functional, f"max_pool{rank}d")
    ops = lowered_ops(lambda x: pool(x, 3, 2, 1), (torch.randn((1, 3) + (8,) * rank),))
    assert "tensor.extract" not in ops, ops
    assert rank == 3 or "linalg.pooling_nchw_max" in ops, ops


def test_a_long_softmax_row_is_padded_to_a_vector_multiple():
    """IREE's llvm-cpu softmax along a row of no multiple of 16 ran about forty times slower
    than along the row padded to one: a long last dim is padded with -inf (weight 0) and cut
    back; -inf entries and a row of only -inf (NaN, as eager gives it) stay eager's."""
    x = torch.randn(2, 8, 200)
    x[0, 0, :5] = float("-inf")
    x[1, 1, :] = float("-inf")
    fn = lambda x: torch.softmax(x, -1)  # noqa: E731
    text = str(lowerkit.import_program(fn, (x,)).module)
    assert "[2,8,208]" in text, text[:3000]
    art = lowerkit.compile(fn, (x,), cache=False)
    assert_matches(art(x), fn(x))
    # a multiple of 16, a short row, another dim: as they were
    for shape, dim in (((2, 8, 256), -1), ((2, 8, 100), -1), ((2, 200, 8), 1)):
        y = torch.randn(*shape)
        text = str(lowerkit.import_program(lambda y: torch.softmax(y, dim), (y,)).module)
        assert "0xFFF0000000000000" not in text, (shape, text[:2000])  # no -inf padding


def bit_views_of_other_widths(a, b, c):
    return (a.view(torch.int8), a.view(torch.float16), a.view(torch.int64),
            b.view(torch.float32), b.view(torch.int32), c.view(torch.bfloat16))


@pytest.mark.parametrize("via", ["compile", "backend"])
def test_a_view_to_a_dtype_of_another_width_keeps_every_bit(via):
    """``x.view(dtype)`` across widths (the last dim grows or shrinks) as shifts of the
    little-endian pieces; torch-mlir has no lowering of it. Compared bit for bit, NaN, -0.0
    and infinities included."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 4, generator=g) * 1e3
    a[0, 0], a[1, 1], a[2, 2] = float("-inf"), -0.0, float("nan")
    b = torch.randint(-128, 128, (3, 8), generator=g, dtype=torch.int8)
    args = (a, b, torch.randn(2, 4, generator=g))
    if via == "compile":
        fn = lowerkit.compile(bit_views_of_other_widths, args)
    else:
        torch._dynamo.reset()
        fn = torch.compile(bit_views_of_other_widths, backend="lowerkit",
                           options={"strict": True})
    for got, want in zip(fn(*args), bit_views_of_other_widths(*args)):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
