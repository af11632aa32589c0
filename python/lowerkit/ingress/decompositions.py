"""Decompositions lowerkit adds to torch-mlir's at import, where IREE's own lowering is slow,
or torch-mlir's is missing or wrong.

IREE 3.13 lowers ``sort``, ``topk`` and ``cumsum`` (``iree_linalg_ext.sort`` / ``.scan``) to
serial loops on llvm-cpu: a 8x64 sort plus top-5 costs ~150 µs where eager takes 15 µs.
Along a short dimension these ops have data-parallel forms that IREE vectorises and fuses:

* ``sort`` / ``topk``: each element's rank is how many elements go before it (counted over all
  pairs, ties broken by position, as eager's stable sort does); the element of rank ``k`` is
  then gathered to place ``k``. O(n²) work, all of it parallel.
* ``cumsum``: a Hillis-Steele scan, ``log2(n)`` steps of ``y + shifted(y)``; exact for integers,
  and inf/NaN propagate as in a sequential sum (a triangular matmul would turn ``inf * 0`` into
  NaN).

* ``convolution`` (1-D and 2-D, dense: 2-9 kernel taps, float32): one matmul per
  kernel tap, ``W[:, :, tap] @ shifted window of x``, summed. IREE's im2col form of the same
  conv builds the ``[C*taps, H*W]`` column matrix and packs it for the matmul ukernel in one
  dispatch that its CPU codegen does not vectorise well (UNet's 48->16 3x3 conv at 64x64:
  1.8-4.2 ms for the packing, 1.2 ms for the matmul); ``conv_1d_ncw_fcw`` (TCN) is not
  im2col'd at all and runs as a naive loop nest (0.2-0.9 ms for a 32x32x3 conv over 128
  steps). A dense 1-D convolution that does not go per tap (few channels, one or more than
  nine taps, or a stored choice) goes to IREE as the 2-D one of unit height it equals
  (`_conv1d_unit_height`), which takes im2col. The per-tap matmuls are ordinary data-tiled
  matmuls on shifted views (the 64x64
  conv above: 0.9 ms in all, eager 1.4 ms). A depthwise convolution (``groups`` = channels)
  goes per tap too, up to 7x7, as a per-channel multiply of each tap's window, and a strided
  one reads its windows from phases of the input (`_tap_windows`): IREE's depthwise kernel was
  slower at every MobileNetV2, MobileNetV3, DeepLabV3 and ConvNeXt shape measured
  (benchmarks/results/depthwise.json). On a CPU a grouped convolution (RegNet, ResNeXt) goes
  per tap as well, by multiplies or a matmul over the groups (`_grouped_taps`), and a dilated
  dense one always does. Neither form wins on every shape and CPU: `taps_pay` is the rule, and
  a choice measured on this CPU by ``lowerkit tune`` (`lowerkit.tuning`) replaces it for that
  shape. A convolution that reads mostly padding (DeepLabV3's atrous head) is first split by
  output regions into unpadded ones of the taps that reach the input (`_conv_by_regions`).

* strided ``convolution`` (2-D, ``groups=1``, fewer than 8 input channels, float32), where
  dense convolutions go whole to IREE's data tiling: the stride-1 convolution over the input's
  phases (`_conv_by_phases`; ResNet's RGB stem, ViT's patches). IREE's data-tiled form reads a
  kernel tap's few channels at a time. A strided 2-D ``max_pool2d`` there likewise: the
  maximum of one unit-stride window per tap over the phases (`_max_pool_by_phases`), not
  torch-mlir's NCHW pooling between channels-last convolutions.

* ``scaled_dot_product_attention``: kept whole (`_sdpa`), the opposite of a decomposition:
  torch's math form materialises the ``[heads, L, L]`` scores (issue 22: 48x slower than eager
  at 4 heads x 1500), IREE's attention op never writes them out.

* ``upsample_linear1d`` / ``bilinear2d`` / ``trilinear3d``: written as eager's kernel computes
  them (`_upsample_linear`), not as PyTorch's decomposition, which gave NaN next to an
  infinite input where eager gives the infinity (static sizes: over dynamic ones, where the
  source index cannot be rounded as eager's, PyTorch's); ``upsample_nearest*`` likewise
  (`_upsample_nearest`): torch-mlir's lowering picked another row at some ratios.

* 3-D ``convolution`` (float32, static sizes): one 2-D convolution per kernel depth, over
  the output depths folded into the batch, summed. IREE 3.13 has no im2col
  for ``linalg.conv_3d_ncdhw_fcdhw`` and runs it as a loop nest (a 64->64 3x3x3 conv over
  8x28x28, BatchNorm and ReLU: 4.2x eager's time); its 2-D convolutions take the data-tiled
  matmul path (or the per-tap form above). On a CPU without AVX-512 a dense one of one clip
  goes per tap instead, a plain matmul per tap over the whole clip (`_taps_3d`).

* Ops torch-mlir does not lower, or lowers wrongly, most of them over dynamic sizes (each found
  by torch-mlir's e2e suite through ``lowerkit.compile``, named in its docstring): adaptive and
  unbatched pooling, ``scatter_reduce`` without self, a split into computed sizes, RMS norm,
  ``prims.prod``, ``conv_tbc``, narrow-integer matmuls, an integer clamped by floats.

Each applies only where it pays (static sizes, a short dimension) and otherwise returns
``NotImplemented``, so that the op takes torch-mlir's usual path. ``LOWERKIT_DECOMPOSITIONS=0``
turns them off, e.g. to compare against IREE's own lowering.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from typing import Any, Callable

import torch
from torch.fx.experimental.symbolic_shapes import guard_or_false

from .. import tuning
from . import conv_regions
from ..passes.attention import MAX_KEY_TILE, kernel_takes_shapes, largest_divisor

aten = torch.ops.aten

# Along longer dimensions the pairwise forms stop paying (n² for the sort, log2(n) passes over
# the data for the scan) and the serial loops are kept.
MAX_SORT_SIZE = 256
MAX_SORT_PAIRS = 1 << 22  # elements of the n x n comparison over all rows
MAX_SCAN_SIZE = 4096


def _static(x: torch.Tensor) -> bool:
    return all(isinstance(d, int) for d in x.shape)


def _rank_order(x: torch.Tensor, descending: bool) -> torch.Tensor:
    """Indices that sort ``x`` along its last dim, stably; NaN is the largest value, as in eager."""
    n = x.shape[-1]
    i_val, j_val = x.unsqueeze(-1), x.unsqueeze(-2)  # [..., n(i), 1], [..., 1, n(j)]
    first, second = (j_val, i_val) if descending else (i_val, j_val)
    goes_before = first > second  # element j goes before element i
    ties = i_val == j_val
    if x.is_floating_point():
        i_nan, j_nan = i_val.isnan(), j_val.isnan()
        nan_first = (j_nan & ~i_nan) if descending else (i_nan & ~j_nan)
        goes_before = goes_before | nan_first
        ties = ties | (i_nan & j_nan)
    position = torch.arange(n, device=x.device)
    earlier = position.unsqueeze(-1) > position  # [n(i), n(j)]: j comes earlier than i
    rank = (goes_before | (ties & earlier)).sum(-1)  # [..., n(i)]
    placed = rank.unsqueeze(-1) == position  # [..., n(i), n(k)]: element i lands at place k
    return torch.where(placed, position.unsqueeze(-1), 0).sum(-2)  # [..., n(k)]


def _sortable(x: torch.Tensor, dim: int) -> bool:
    if not _static(x) or x.dim() == 0 or x.dtype in (torch.bool, torch.uint8) or x.is_complex():
        return False  # uint8 goes through widen-unsigned's sort (the gathered form fails on Vulkan)
    n = x.shape[dim]
    return 2 <= n <= MAX_SORT_SIZE and x.numel() * n <= MAX_SORT_PAIRS


def _sort(x: torch.Tensor, dim: int = -1, descending: bool = False) -> Any:
    if not _sortable(x, dim):
        return NotImplemented
    moved = x.movedim(dim, -1)
    order = _rank_order(moved, descending)
    values = torch.gather(moved, -1, order)
    return values.movedim(-1, dim), order.movedim(-1, dim)


def _sort_stable(x: torch.Tensor, *, stable: bool | None = None, dim: int = -1,
                 descending: bool = False) -> Any:
    return _sort(x, dim, descending)  # the rank order is stable either way


def _topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True,
          sorted: bool = True) -> Any:
    if not isinstance(k, int) or not _sortable(x, dim):
        return NotImplemented
    moved = x.movedim(dim, -1)
    order = _rank_order(moved, descending=largest)[..., :k]
    values = torch.gather(moved, -1, order)
    return values.movedim(-1, dim), order.movedim(-1, dim)


def _cumsum(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    if not _static(x) or x.dim() == 0 or x.is_complex():
        return NotImplemented
    n = x.shape[dim]
    if not 2 <= n <= MAX_SCAN_SIZE:
        return NotImplemented
    out_dtype = dtype or (x.dtype if x.is_floating_point() else torch.int64)
    # Half-precision sums accumulate in float32, as eager's CPU kernel does.
    work = torch.float32 if out_dtype in (torch.float16, torch.bfloat16) else out_dtype
    # Shifted along `dim` itself: moving `dim` last and back would add two transposes, and
    # IREE's SPIR-V codegen raced on one of them (an f16 cumsum over dim -3 on llvmpipe read
    # workgroup memory with no barrier between the write and the read).
    dim = dim % x.dim()
    before = [0, 0] * (x.dim() - 1 - dim)
    y = x.to(work)
    shift = 1
    while shift < n:
        y = y + torch.nn.functional.pad(y.narrow(dim, 0, n - shift), before + [shift, 0])
        shift *= 2
    return y.to(out_dtype)


class _KeptWhole(threading.local):
    """Whether, on this thread, a decomposition is calling the op it keeps whole: the table's
    entry for that op must then step aside (``NotImplemented``) instead of decomposing the
    call it was written to keep."""

    on = False

    @contextlib.contextmanager
    def calling(self) -> Any:
        before, self.on = self.on, True
        try:
            yield
        finally:
            self.on = before


# Convolutions taken apart per kernel tap: below this many input channels a tap's matmul is
# too thin (K = C_in) and IREE's im2col form is kept (e.g. an RGB stem).
MIN_TAP_CHANNELS = 8
MAX_TAPS = 9
# A depthwise one goes per tap up to 7x7: IREE 3.13's depthwise kernel ran DeepLabV3's and
# MobileNetV3's 5x5 shapes and ConvNeXt's 7x7 ones 1.2-2.4x slower than their taps' sum
# (Zen 4, benchmarks/results/depthwise.json's wide shapes).
MAX_DEPTHWISE_TAPS = 49
# A dense 2-D convolution this thick (input and output channels) goes whole to im2col when it
# is strided or has fewer output positions than `MIN_THICK_TAP_POSITIONS`: its one matmul over
# K = taps x C_in beats the taps' matmuls, each with few rows and, strided, a gathered window,
# and its column matrix is small next to the work. Measured per shape on three CPUs (`lowerkit
# tune`'s interleaved runs on a Zen 3 and a Zen 4, benchmarks/conv_taps.py on a Zen 5):
# ResNet's five strided shapes with 128 to 512 channels and its 14x14 one were faster by
# im2col on every CPU, and its 7x7 one on two of three, while the 64-channel strided shape and
# the 28x28 and 56x56 ones kept per tap faster on all three. With few output channels the
# column matrix is large next to the work: UNet's 192->64 convolution at 16x16 whole made the
# model 1.36x slower on the Zen 3 (an unstored benchmarks/conv_strategy.py run), so it stays
# per tap. Whole, IREE has a quarter of the dispatches to compile (3 against 12 a
# convolution). Only for CPU targets, where it was measured.
THICK_CHANNELS = 128
MIN_THICK_TAP_POSITIONS = 28 * 28


def taps_pay(x: torch.Tensor, w: torch.Tensor, stride: list[int], groups: int = 1,
             positions: int | None = None, dilated: bool = False) -> bool:
    """Whether a convolution of ``x`` by ``w`` goes per tap rather than whole to IREE (im2col
    for a dense one, its depthwise kernel for a depthwise one): the rule where no measured
    choice is stored (`lowerkit.tuning`). ``positions``: its output positions per image
    (default: the input's, divided by the strides, as with "same" padding)."""
    taps = 1
    for k in w.shape[2:]:
        taps *= k
    if not 2 <= taps <= (MAX_TAPS if groups == 1 else MAX_DEPTHWISE_TAPS):
        return False
    if groups != 1:  # grouped: IREE's kernels were slower at every MobileNetV2 and RegNet shape
        return True
    if x.shape[1] < MIN_TAP_CHANNELS:
        return False
    if dilated:
        # IREE 3.13's whole code for a dilated convolution was many times slower than its
        # taps (benchmarks/results/dilated-zen4.json): per tap, a dilation only moves each
        # tap's window
        return True
    if x.dim() != 4 or min(x.shape[1], w.shape[0]) < THICK_CHANNELS or tuning.gpu_import():
        return True  # measured on CPUs only: a GPU target keeps per tap
    if positions is None:
        positions = 1
        for size, s in zip(x.shape[2:], stride):
            positions *= -(-size // s)
    return all(s == 1 for s in stride) and positions >= MIN_THICK_TAP_POSITIONS


# A dense convolution of one image or clip that goes per tap on a CPU without 512-bit vectors
# takes its taps three at a time: each matmul reads three taps' windows stacked over
# K = 3 x C_in, so the running sum is read and written a third as often and each matmul is
# deeper. On a Zen 3 (benchmarks/tap_rows.py, tap-rows-zen3.json) R3D-18 ran 1.15x faster
# than with one tap a matmul, its 3-D shapes 1.37x and 1.78x, EfficientNet-V2-S 1.09x,
# Inception-v3 1.06x, ResNet's 56x56 and 28x28 shapes 1.15x and 1.10x; ResNet-50 as a whole
# 0.90x in that run and 0.98x and 0.99x in two more (tap-rows-zen3-resnet50.json): level.
# Not measured where convolutions are data-tiled whole (AVX-512) or on GPUs: one tap a matmul.
TAPS_PER_MATMUL = 3


# A dense 3-D convolution of one clip goes per tap (a plain matmul per tap over all the
# clip's output positions, up to 3x3x3) on a CPU without 512-bit vectors, where IREE does not
# data-tile convolutions whole: by depth (`_conv3d_by_depth`) each 2-D convolution's taps
# were batched matmuls with a weight broadcast over the batch, which IREE 3.13 does not
# data-tile (9 GFLOP/s). On a Zen 3 R3D-18 ran 1.05x faster per tap, its 256- and 512-channel
# stages 2.1x and 1.2x, its 64-channel ones 1.06-1.12x and its 128-channel one 0.94x
# (benchmarks/conv3d_forms.py, conv3d-forms-zen3.json). Either way it stays near 0.45x eager
# there: each tap's window is copied out before its matmul. Not measured elsewhere: other CPUs
# and GPUs keep by depth.
MAX_3D_TAPS = 27
TAPS_3D = True


def _taps_3d(x: torch.Tensor, groups: int) -> bool:
    """Whether a 3-D convolution goes per tap: dense, one clip, on a CPU where it was
    measured."""
    return (TAPS_3D and groups == 1 and x.shape[0] == 1 and x.shape[1] >= MIN_TAP_CHANNELS
            and tuning.narrow_vector_cpu_import())


def _depthwise(x: torch.Tensor, w: torch.Tensor, groups: int) -> bool:
    """One filter per input channel (``groups == C_in == C_out``, weight ``[C, 1, *kernel]``)."""
    return groups == x.shape[1] == w.shape[0] and w.shape[1] == 1


def _tap_index(tap: int, kernel: list) -> list[int]:
    """Kernel tap ``tap``'s position along each spatial dim (taps in row-major order)."""
    index, rest = [], tap
    for k in reversed(kernel):
        index.append(rest % k)
        rest //= k
    return index[::-1]


def _depthwise_tap_weights(w: torch.Tensor, spatial: int) -> torch.Tensor:
    """``[C, 1, *kernel]`` as ``[taps, 1, C, 1, ...]``: each tap's per-channel weight, shaped
    to broadcast over a window ``[N, C, *out]``."""
    c = w.shape[0]
    return w.reshape(c, -1).t().reshape(-1, 1, c, *([1] * spatial))


def _conv_taps(x: torch.Tensor, w: torch.Tensor, bias: Any, stride: Any, padding: Any,
               dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Any:
    """``aten.convolution`` as a sum over kernel taps (see the module docstring): a matmul per
    tap for a dense convolution, a per-channel multiply per tap for a depthwise one."""
    if (transposed or x.dim() not in (3, 4, 5) or x.dtype != torch.float32
            or w.dtype != torch.float32 or not _static(x) or not _static(w)):
        return NotImplemented
    if x.dim() == 5 and not _taps_3d(x, groups):
        return NotImplemented
    grouped = groups != 1
    depthwise = grouped and _depthwise(x, w, groups)
    if grouped and not depthwise and (tuning.gpu_import() or x.shape[1] % groups):
        return NotImplemented  # grouped forms measured on CPUs only
    spatial = x.dim() - 2
    kernel = list(w.shape[2:])
    taps = 1
    for k in kernel:
        taps *= k
    stride, padding, dilation = (list(v) * (spatial if len(v) == 1 else 1)
                                 for v in (stride, padding, dilation))
    if len(stride) != spatial or len(padding) != spatial or len(dilation) != spatial:
        return NotImplemented
    if not 2 <= taps <= (MAX_DEPTHWISE_TAPS if depthwise else
                         MAX_3D_TAPS if spatial == 3 else MAX_TAPS):
        return NotImplemented
    # A choice measured on this CPU (`lowerkit tune`), else the rule.
    # (a bias `_convolution` adds after still names the shape: measured choices were stored so)
    shape = tuning.ConvShape(tuple(x.shape), tuple(w.shape), tuple(stride), tuple(padding),
                             tuple(dilation), bias is not None or _BIAS_SPLIT_OFF.on, groups)
    dilated = any(d != 1 for d in dilation)
    if not grouped and spatial == 2 and tuning.dense_convolutions_whole() and not dilated:
        # the CPU's measured strategy: IREE data-tiles it whole. Not a dilated one: whole, a
        # 512 -> 512 3x3 at rate 2 over 65x65 took 15x eager's time (each one-convolution
        # program took the data-tiled strategy: benchmarks/results/dilated-zen4-c972595.json)
        return NotImplemented
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    out = [(sizes[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
           for i in range(spatial)]
    if any(o <= 0 for o in out):
        return NotImplemented
    positions = 1
    for o in out:
        positions *= o
    chosen = tuning.choice_for(shape)
    if spatial != 3 and (chosen == tuning.IM2COL or chosen is None and not taps_pay(
            x, w, stride, groups, positions, dilated=dilated)):
        return NotImplemented
    if spatial != 3:  # `lowerkit tune` measures 2-D shapes
        tuning.wrote_per_tap(shape)
    window = _tap_windows(x, kernel, stride, padding, dilation, out, phased=grouped)
    if grouped and not depthwise:
        return _grouped_taps(window, w, bias, groups, taps, out)
    if depthwise:
        # each tap: the window times its channel's weight, summed in tap order
        per_tap = _depthwise_tap_weights(w, spatial)
        y = None if bias is None else bias.reshape(1, c, *([1] * spatial))
        for tap in range(taps):
            term = window(tap) * per_tap[tap]
            y = term if y is None else y + term
        return y.contiguous()
    o_ch = w.shape[0]
    # Taps first, so that each tap's [O, C] weight is one contiguous block.
    per_tap = w.permute(*range(2, 2 + spatial), 0, 1).reshape(taps, o_ch, c)
    if bias is None:
        y = x.new_zeros((o_ch, positions) if n == 1 else (n, o_ch, positions))
    else:
        y = bias.unsqueeze(-1).expand(o_ch, positions)
        if n != 1:
            y = y.expand(n, o_ch, positions)
    # Each tap's matmul accumulates into the running sum (addmm): a chain of matmuls each with
    # its own init, where a sum of separate products gets fused by IREE into one dispatch whose
    # tiles of every product overflow the 32 KiB stack limit (UNet's 8x8 level).
    if n == 1 and TAPS_PER_MATMUL > 1 and tuning.narrow_vector_cpu_import():
        # a few taps' windows stacked as one operand: one matmul over K = taps x C_in each
        for first in range(0, taps, TAPS_PER_MATMUL):
            last = min(taps, first + TAPS_PER_MATMUL)
            columns = torch.cat([window(t).reshape(c, positions) for t in range(first, last)])
            y = torch.addmm(y, per_tap[first:last].transpose(0, 1).reshape(o_ch, -1), columns)
        return y.reshape(n, o_ch, *out)
    for tap in range(taps):
        view = window(tap)
        if n == 1:
            y = torch.addmm(y, per_tap[tap], view.reshape(c, positions))  # [O, P]
        else:
            y = torch.baddbmm(y, per_tap[tap].expand(n, o_ch, c), view.reshape(n, c, positions))
    return y.reshape(n, w.shape[0], *out)


# A grouped convolution's group width (input channels per group) up to which each tap is a
# broadcast multiply summed over the group's channels; a wider one is one batched matmul, over
# the groups, of the taps' stacked windows. IREE 3.13 ran grouped convolutions whole 2.7-8.3x
# slower than the faster of the two at RegNet-Y's and ResNeXt's shapes; the multiplies won up
# to 16 channels a group, the matmul from 32 (Zen 4, benchmarks/results/grouped-zen4.json).
# On a Zen 3 (AVX2) per tap won at every shape too, 2.2-7.6x, and the multiplies up to 32
# (grouped-zen3.json): at 32 the faster form is per CPU, so the threshold stays where neither
# host loses to IREE.
MAX_GROUP_WIDTH_BY_MULTIPLIES = 16


def _grouped_taps(window: Callable[[int], torch.Tensor], w: torch.Tensor, bias: Any,
                  groups: int, taps: int, out: list) -> torch.Tensor:
    """A grouped (not depthwise) convolution from its taps' windows: by broadcast multiplies
    for narrow groups, else one batched matmul over the groups (`MAX_GROUP_WIDTH_BY_MULTIPLIES`)."""
    first = window(0)
    n, spatial = first.shape[0], len(out)
    o_ch, width = w.shape[:2]
    per_group = o_ch // groups
    if width <= MAX_GROUP_WIDTH_BY_MULTIPLIES:
        weights = w.reshape(groups, per_group, width, taps)
        y = None
        for tap in range(taps):
            view = (first if tap == 0 else window(tap)).reshape(n, groups, 1, width, *out)
            term = (view * weights[..., tap].reshape(1, groups, per_group, width,
                                                     *([1] * spatial))).sum(3)
            y = term if y is None else y + term
    else:
        columns = torch.stack([window(tap).reshape(n, groups, width, -1)
                               for tap in range(taps)], 3)  # [N, G, C/G, taps, positions]
        weights = w.reshape(1, groups, per_group, width * taps)
        y = torch.bmm(weights.expand(n, *weights.shape[1:]).reshape(n * groups, per_group, -1),
                      columns.reshape(n * groups, width * taps, -1))
    y = y.reshape(n, o_ch, *out)
    return y if bias is None else y + bias.reshape(1, -1, *([1] * spatial))


def _tap_windows(x: torch.Tensor, kernel: list, stride: list, padding: list, dilation: list,
                 out: list, phased: bool) -> Callable[[int], torch.Tensor]:
    """For each kernel tap (row-major), the ``[N, C, *out]`` window of ``x`` it reads.

    At stride 1 a window is a slice of the padded input. A strided slice is a gather to IREE,
    and the depthwise per-tap form then lost to IREE's kernel. So with ``phased`` a strided
    convolution first splits its padded input by position modulo the stride
    (``[N, C, H/s, s, W/s, s]`` moved to ``[N, C, s, s, H/s, W/s]``: one transposing copy), and
    each tap reads a unit-stride window of one phase (benchmarks/depthwise.py). A dense
    convolution's taps copy their windows into matmul operands anyway: by phases, ResNet's
    strided shapes measured no faster, and they keep strided slices."""
    spatial = len(kernel)
    pads, sizes = [], []
    for i in range(spatial):
        size = x.shape[2 + i] + 2 * padding[i]
        if phased:  # every tap's last position read, rounded up to a multiple of the stride
            need = dilation[i] * (kernel[i] - 1) + (out[i] - 1) * stride[i] + 1
            size = -(-max(need, x.shape[2 + i] + padding[i]) // stride[i]) * stride[i]
        sizes.append(size)
        pads = [padding[i], size - x.shape[2 + i] - padding[i]] + pads
    if any(pads):
        x = torch.nn.functional.pad(x, pads)
    if not phased or all(st == 1 for st in stride):
        phases = x
    else:
        split = list(x.shape[:2])
        for size, st in zip(sizes, stride):
            split += [size // st, st]
        phases = x.reshape(split).permute(0, 1, *range(3, 2 + 2 * spatial, 2),
                                          *range(2, 2 + 2 * spatial, 2))

    def window(tap: int) -> torch.Tensor:
        index = _tap_index(tap, kernel)
        starts = [index[i] * dilation[i] for i in range(spatial)]
        if phases is x:
            view = x
            for i in range(spatial):
                view = view.narrow(2 + i, starts[i], (out[i] - 1) * stride[i] + 1)
                if stride[i] != 1:
                    view = view[(slice(None),) * (2 + i) + (slice(None, None, stride[i]),)]
            return view
        view = phases[(slice(None), slice(None), *(st % s for st, s in zip(starts, stride)))]
        for i in range(spatial):
            view = view.narrow(2 + i, starts[i] // stride[i], out[i])
        return view
    return window


def _conv3d_by_depth(x: torch.Tensor, w: torch.Tensor, bias: Any, stride: Any, padding: Any,
                     dilation: Any, groups: int) -> torch.Tensor:
    """A 3-D convolution as one 2-D convolution per kernel depth, over the output depths folded
    into the batch, summed (see the module docstring)."""
    n, c, depth = x.shape[:3]
    kd = w.shape[2]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    if pd:
        x = torch.nn.functional.pad(x, [0, 0, 0, 0, pd, pd])
        depth += 2 * pd
    out_d = (depth - dd * (kd - 1) - 1) // sd + 1
    y = None
    for k in range(kd):
        start = k * dd
        planes = x.narrow(2, start, (out_d - 1) * sd + 1)
        if sd != 1:
            planes = planes[:, :, ::sd]
        planes = planes.transpose(1, 2).reshape(n * out_d, c, *x.shape[3:])
        part = aten.convolution.default(planes, w[:, :, k], None, list(stride[1:]),
                                        list(padding[1:]), list(dilation[1:]), False, [0, 0],
                                        groups)
        y = part if y is None else y + part
    y = y.reshape(n, out_d, *y.shape[1:]).transpose(1, 2)
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1, 1)
    return y.contiguous()


_CONV_WHOLE = _KeptWhole()  # on while a decomposition calls the convolution it keeps whole


def _per_dim(v: Any, spatial: int, default: Any = None) -> list:
    """A pooling or convolution argument (an int, or a list of one or ``spatial``; empty takes
    ``default``) as a list with one entry per spatial dim."""
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    v = v or default
    return v * spatial if len(v) == 1 else v


def _phase_split(x: torch.Tensor, kernel: list, stride: list, padding: list,
                 value: float = 0.0) -> "tuple[torch.Tensor, list[int]] | None":
    """``x`` ``[N, C, H, W]`` padded (with ``value``) or cropped to the rows and columns the
    windows of an undilated ``kernel`` read, in whole strides, and split by position modulo
    the stride: ``[N, C, s_h, s_w, H', W']``, where kernel tap ``(ky, kx)`` of output
    ``(oy, ox)`` is ``[..., ky % s_h, kx % s_w, oy + ky // s_h, ox + kx // s_w]``; with the
    output's size. None when no window fits."""
    out = [(x.shape[2 + i] + 2 * padding[i] - kernel[i]) // stride[i] + 1 for i in range(2)]
    if any(v <= 0 for v in out):
        return None
    folded = [-(-k // s) for k, s in zip(kernel, stride)]  # taps per phase, each dim
    sizes = [s * (v + q - 1) for s, v, q in zip(stride, out, folded)]
    for i in range(2):
        after = sizes[i] - padding[i] - x.shape[2 + i]
        if after < 0:  # rows past the last window (a stride that does not divide the size)
            x = x.narrow(2 + i, 0, x.shape[2 + i] + after)
    x = torch.nn.functional.pad(x, [padding[1], sizes[1] - padding[1] - x.shape[3],
                                    padding[0], sizes[0] - padding[0] - x.shape[2]],
                                value=value)
    n, c = x.shape[:2]
    sh, sw = stride
    return x.reshape(n, c, sizes[0] // sh, sh, sizes[1] // sw, sw).permute(0, 1, 3, 5, 2, 4), out


# A strided dense 2-D convolution over fewer input channels than this, sent whole to IREE's
# data tiling (DATA_TILED), goes by phases (`_conv_by_phases`). Measured on a Zen 4 host
# (benchmarks/conv_phases.py, README "Strided convolutions over few channels"): over 3 or 4
# channels by phases was faster at every shape (ResNet's stem, ViT-B/16's patches, a
# patchify, 3x3 stride-2 ones); over 8 a 3x3 stride-2 one was faster at 112x112 and level at
# 224x224, and over 12 and 16 slower: its phased filter is 16/9 of the work.
PHASE_MAX_CHANNELS = 8


def _conv_by_phases(x: torch.Tensor, w: torch.Tensor, bias: Any, stride: Any, padding: Any,
                    dilation: Any, transposed: bool, groups: int) -> Any:
    """A strided dense 2-D convolution over few channels as the stride-1 one it equals over
    the input's phases (space to depth). IREE 3.13's data-tiled form of such a convolution is
    slow: in ResNet-50's call (`lowerkit profile`) the RGB stem was the slowest dispatch, and
    the packing of its input beside it took a third as long again; over the phases each
    kernel tap reads ``C_in x s_h x s_w`` channels. The padded input, split by position modulo
    the stride, is ``[N, C*s_h*s_w, H/s_h, W/s_w]``; the filter, zero-padded to a multiple of
    the stride, is split the same way (with the weights as parameters, on the host at bind
    time: `lowerkit.derived_weights`). The zero taps add work: (8/7)^2 for a 7x7 stride-2
    kernel, none for patches (kernel = stride). Only where dense convolutions go whole to data
    tiling on a CPU with 512-bit vectors, which is where it was measured
    (`PHASE_MAX_CHANNELS`)."""
    if (transposed or groups != 1 or x.dim() != 4 or x.dtype != torch.float32
            or w.dtype != torch.float32 or not _static(x) or not _static(w)):
        return NotImplemented
    stride, padding, dilation = (_per_dim(v, 2) for v in (stride, padding, dilation))
    if (len(stride) != 2 or len(padding) != 2 or len(dilation) != 2
            or any(d != 1 for d in dilation) or all(s == 1 for s in stride)):
        return NotImplemented
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    if c >= PHASE_MAX_CHANNELS or not tuning.dense_convolutions_data_tiled():
        return NotImplemented
    kernel = list(w.shape[2:])
    split = _phase_split(x, kernel, stride, padding)
    if split is None:
        return NotImplemented
    phases, _ = split
    folded = [-(-k // s) for k, s in zip(kernel, stride)]  # taps per phase, each dim
    sh, sw = stride
    phases = phases.reshape(n, c * sh * sw, *phases.shape[4:])
    wk = torch.nn.functional.pad(w, [0, folded[1] * sw - kernel[1], 0, folded[0] * sh - kernel[0]])
    wk = wk.reshape(o, c, folded[0], sh, folded[1], sw).permute(0, 1, 3, 5, 2, 4)
    wk = wk.reshape(o, c * sh * sw, *folded)
    with _CONV_WHOLE.calling():
        return aten.convolution.default(phases, wk, bias, [1, 1], [0, 0], [1, 1], False,
                                        [0, 0], 1)


def _conv1d_unit_height(x: torch.Tensor, w: torch.Tensor, bias: Any, stride: Any,
                        padding: Any, dilation: Any, groups: int) -> Any:
    """A dense 1-D convolution left whole, as the 2-D one of unit height it equals: IREE 3.13
    has no im2col for ``linalg.conv_1d_ncw_fcw`` and runs it as a loop nest (Whisper's
    384-channel front end: about 260 ms of a 380 ms call, `lowerkit profile`), where its 2-D
    convolutions take im2col and the data-tiled matmul."""
    if (groups != 1 or x.dtype != torch.float32 or w.dtype != torch.float32
            or not _static(x) or not _static(w)
            or not len(stride) == len(padding) == len(dilation) == 1):
        return NotImplemented
    with _CONV_WHOLE.calling():
        y = aten.convolution.default(x.unsqueeze(2), w.unsqueeze(2), bias, [1, *stride],
                                     [0, *padding], [1, *dilation], False, [0, 0], 1)
    return y.squeeze(2)


_GENERAL_CONV_TARGETS = ("aten.convolution.default", "aten._convolution.default")
_CONV_TARGETS = ("aten.conv2d.default", "aten.conv2d.padding", "aten.conv3d.default",
                 "aten.conv3d.padding", *_GENERAL_CONV_TARGETS)


def conv_work(graph: torch.fx.Graph) -> "tuning.ConvWork":
    """What a program's 2-D convolutions ask of the CPU, read from its exported graph before
    anything is decomposed (`tuning.choose_convolutions`): the multiply-adds of its dense ones
    with a kernel larger than 1x1, whether any is grouped (depthwise), whether any dense
    one's kernel is not square, and the work of those that stay per tap beside data-tiled
    ones (grouped and dilated ones) against all of it. A 3-D convolution counts as the 2-D
    ones it becomes (`_conv3d_by_depth`): data-tiled whole, R3D-18's 64-channel block ran 2.7x
    faster than with those 2-D ones per tap (Zen 4)."""
    dense_flops, grouped, transposed, shapes, not_f32 = 0.0, False, False, [], False
    asymmetric, per_tap_flops, all_flops = False, 0.0, 0.0
    for node in graph.nodes:
        if node.op != "call_function" or not (str(node.target) in _CONV_TARGETS
                                              or node.target in (torch.conv2d, torch.conv3d)):
            continue  # torch.conv2d: a Dynamo graph's (torch.compile), before aot_autograd
        out, w = _value(node), _value(node.args[1])
        if (not isinstance(out, torch.Tensor) or not isinstance(w, torch.Tensor)
                or w.dim() not in (4, 5)):
            continue
        general = str(node.target) in _GENERAL_CONV_TARGETS  # transposed at 6, groups at 8
        if general and node.args[6]:
            transposed = True
            continue
        groups = node.args[8] if general else (
            node.args[6] if len(node.args) > 6 else node.kwargs.get("groups", 1))
        x = _value(node.args[0])
        not_f32 = not_f32 or w.dtype != torch.float32
        shapes.append(_plain((x.shape if isinstance(x, torch.Tensor) else None, w.shape,
                              *node.args[3:6], groups)))
        flops = (2.0 * out.numel() * math.prod(w.shape[1:])
                 if _static(out) and _static(w) else 0.0)
        dilation = node.args[5] if len(node.args) > 5 else node.kwargs.get("dilation", 1)
        all_flops += flops
        if isinstance(groups, int) and groups != 1:
            grouped = True
            per_tap_flops += flops
        elif w.shape[-2] * w.shape[-1] > 1 and _static(out) and _static(w):
            dense_flops += flops
            asymmetric = asymmetric or w.shape[-2] != w.shape[-1]
        if groups == 1 and any(d != 1 for d in _per_dim(dilation, w.dim() - 2)):
            per_tap_flops += flops  # dense and dilated: per tap beside data-tiled ones too
    return tuning.ConvWork(dense_flops, grouped, transposed, tuple(shapes), not_f32,
                           asymmetric, per_tap_flops, all_flops)


def _value(node: Any) -> Any:
    """The example value an FX node carries: ``val`` in an exported graph, ``example_value``
    in Dynamo's."""
    meta = getattr(node, "meta", {})
    return meta.get("val", meta.get("example_value"))


def _plain(value: Any) -> Any:
    """Shapes and conv arguments as hashable plain values (a symbolic size as its name)."""
    if isinstance(value, (list, tuple, torch.Size)):
        return tuple(_plain(v) for v in value)
    return value if isinstance(value, (int, str, type(None))) else str(value)


# On a CPU target a convolution's bias is added to its result, not used as the initial value
# its sum accumulates into (torch-mlir's form). IREE 3.13 made that initial value a dispatch of
# its own, the bias broadcast over the whole output and packed for the data-tiled matmul,
# written and read again at every call, and vectorised in tiles of 16x256 whose code LLVM
# took seconds over. Added after, the bias is an epilogue of the convolution's own dispatch.
# Measured on a Zen 4 host (`benchmarks/conv_folding.py`, README "A convolution's bias and
# BatchNorm"). GPU targets keep torch-mlir's form: not measured there.
BIAS_AFTER = True
_BIAS_SPLIT_OFF = _KeptWhole()  # on while `_convolution` writes a convolution whose bias it adds


def _bias_after(x: torch.Tensor, bias: Any) -> bool:
    """Whether `_convolution` adds ``bias`` after the convolution (`BIAS_AFTER`)."""
    return (BIAS_AFTER and bias is not None and bias.dim() == 1 and x.is_floating_point()
            and not tuning.gpu_import())


def _conv_by_regions(x: torch.Tensor, w: torch.Tensor, bias: Any, stride: Any, padding: Any,
                     dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Any:
    """A convolution that reads mostly padding (a dilated one over a small map) as one
    unpadded convolution per output region, of the taps that reach the input there
    (`conv_regions`), concatenated: the taps that read only zeros are never computed."""
    spatial = x.dim() - 2
    if (transposed or spatial not in (1, 2, 3) or not x.is_floating_point()
            or not _static(x) or not _static(w)):
        return NotImplemented
    stride, padding, dilation = (_per_dim(v, spatial) for v in (stride, padding, dilation))
    if not len(stride) == len(padding) == len(dilation) == spatial or not any(padding):
        return NotImplemented
    kernel = list(w.shape[2:])
    out = [(x.shape[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i]
           + 1 for i in range(spatial)]
    if any(o <= 0 for o in out):
        return NotImplemented
    per_dim = [conv_regions.intervals(x.shape[2 + i], kernel[i], stride[i], padding[i],
                                      dilation[i], out[i]) for i in range(spatial)]
    if not conv_regions.worth_splitting(per_dim, kernel):
        return NotImplemented

    def region(chosen: tuple) -> torch.Tensor:
        shape = [x.shape[0], w.shape[0], *(i.stop - i.start for i in chosen)]
        if any(i.taps == 0 for i in chosen):  # no tap reaches the input: the bias alone
            y = x.new_zeros(shape)
            return y if bias is None else y + bias.reshape(1, -1, *([1] * spatial))
        crop, sub = x, w
        for d, i in enumerate(chosen):
            begin, end = i.crop(stride[d], padding[d], dilation[d])
            crop = crop.narrow(2 + d, begin, end - begin)
            sub = sub.narrow(2 + d, i.first_tap, i.taps)
        if all(i.taps == 1 for i in chosen) and (groups == 1 or _depthwise(crop, sub, groups)):
            # one tap: a matmul over the crop's positions (whole, IREE kept the crop's rows
            # and columns apart: a 15x15 one of DeepLabV3 ran at 15 GFLOP/s), or a
            # per-channel multiply
            if groups == 1:  # as `_conv_taps` writes a tap: taps first, so that the tap's
                # [O, C] weight is one block (a strided slice of it, packed inside the matmul's
                # dispatch, took 1 MiB of stack and failed the fast rung), batched for a batch
                tap = tuple(i.first_tap for i in chosen)
                weight, c = w.permute(*range(2, 2 + spatial), 0, 1)[tap], crop.shape[1]
                y = (torch.mm(weight, crop.reshape(c, -1)) if crop.shape[0] == 1 else
                     torch.bmm(weight.expand(crop.shape[0], *weight.shape),
                               crop.reshape(crop.shape[0], c, -1))).reshape(shape)
            else:
                y = crop * sub.reshape(1, -1, *([1] * spatial))
            return y if bias is None else y + bias.reshape(1, -1, *([1] * spatial))
        y = _convolution(crop, sub, bias, stride, [0] * spatial, dilation, False,
                         [0] * spatial, groups)
        if y is NotImplemented:
            with _CONV_WHOLE.calling():
                y = aten.convolution.default(crop, sub, bias, stride, [0] * spatial, dilation,
                                             False, [0] * spatial, groups)
        return y

    def joined(dim: int, chosen: tuple) -> torch.Tensor:
        if dim == spatial:
            return region(chosen)
        parts = [joined(dim + 1, chosen + (i,)) for i in per_dim[dim]]
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=2 + dim)
    return joined(0, ())


def _convolution(x: torch.Tensor, w: torch.Tensor, bias: Any, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Any:
    """``aten.convolution``: 3-D ones by kernel depth, 1-D and 2-D ones per tap; a dense 1-D
    one that stays whole as a 2-D one of unit height; a strided 2-D one over few channels
    that goes whole to data tiling by phases; one that reads mostly padding, by output
    regions. On a CPU a bias is added after any of them."""
    if _CONV_WHOLE.on:
        return NotImplemented
    y = _conv_by_regions(x, w, bias, stride, padding, dilation, transposed, output_padding,
                         groups)
    if y is not NotImplemented:
        return y
    if _bias_after(x, bias):
        with _BIAS_SPLIT_OFF.calling():
            y = _convolution(x, w, None, stride, padding, dilation, transposed, output_padding,
                             groups)
        if y is NotImplemented:
            with _CONV_WHOLE.calling():
                y = aten.convolution.default(x, w, None, stride, padding, dilation, transposed,
                                             output_padding, groups)
        return y + bias.reshape(1, -1, *([1] * (x.dim() - 2)))
    if x.dim() == 3 and not transposed:
        y = _conv_taps(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
        if y is NotImplemented:
            y = _conv1d_unit_height(x, w, bias, stride, padding, dilation, groups)
        return y
    if x.dim() == 5:
        if (transposed or x.dtype != torch.float32 or w.dtype != torch.float32
                or not _static(x) or not _static(w)):
            return NotImplemented
        stride, padding, dilation = (list(v) * (3 if len(v) == 1 else 1)
                                     for v in (stride, padding, dilation))
        if len(stride) != 3 or len(padding) != 3 or len(dilation) != 3:
            return NotImplemented
        y = _conv_taps(x, w, bias, stride, padding, dilation, False, output_padding, groups)
        if y is NotImplemented:
            y = _conv3d_by_depth(x, w, bias, stride, padding, dilation, groups)
        return y
    y = _conv_by_phases(x, w, bias, stride, padding, dilation, transposed, groups)
    if y is not NotImplemented:
        return y
    return _conv_taps(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)


def _adaptive_windows(size: Any, out: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """[out, 1] starts and ends of adaptive pooling's windows, [floor(j*size/out),
    ceil((j+1)*size/out)); built from iotas (traced ops, no tensor constants)."""
    j = torch.arange(out, device=device).unsqueeze(1)
    start = torch.div(j * size, out, rounding_mode="floor")
    end = torch.div((j + 1) * size + out - 1, out, rounding_mode="floor")
    return start, end


def _window_means(size: int, out: int, like: torch.Tensor) -> torch.Tensor:
    """[out, size]: row j averages adaptive pooling's window j (`_adaptive_windows`)."""
    start, end = _adaptive_windows(size, out, like.device)
    i = torch.arange(size, device=like.device).unsqueeze(0)
    inside = (i >= start) & (i < end)
    return inside.to(like.dtype) / (end - start).to(like.dtype)


def _adaptive_avg_pool2d(x: torch.Tensor, output_size: Any) -> Any:
    """Uneven adaptive average pooling as two small matmuls with averaging matrices (rows, then
    columns). torch's own decomposition gathers with computed indices, which IREE's SPIR-V path
    gets wrong (vulkan:llvmpipe, a [7, 3, 7] input pooled to 2x2: max error 0.64; fuzzer seed
    20261124). Even static windows keep the usual path (a plain pooling). Over dynamic sizes
    torch-mlir's path is an ``avg_pool2d`` with a computed kernel, which it cannot lower
    (torch-mlir's e2e ``AdaptiveAvgPool*Dynamic*``), so the matmuls are built from the sizes."""
    if not x.dtype.is_floating_point or x.dim() not in (3, 4) or 0 in x.shape[:-2]:
        return NotImplemented
    h, w = x.shape[-2:]
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    if 0 in (oh, ow) or (_static(x) and (x.numel() == 0 or (h % oh == 0 and w % ow == 0))):
        return NotImplemented
    rows = _window_means(h, oh, x)
    cols = _window_means(w, ow, x)
    # A NaN or an infinity times another window's weight 0 would spread to every window of its
    # rows and columns; the finite values are averaged, and each window's NaN, +inf and -inf
    # are counted by the same matmuls, then put back as eager's sum would have them.
    nan, pos, neg = x != x, x == math.inf, x == -math.inf
    finite = torch.where(nan | pos | neg, torch.zeros_like(x), x)
    pooled = torch.matmul(torch.matmul(rows, torch.stack([finite, nan.to(x.dtype),
                                                          pos.to(x.dtype), neg.to(x.dtype)])),
                          cols.t())
    mean, nan, pos, neg = pooled[0], pooled[1] > 0, pooled[2] > 0, pooled[3] > 0
    return torch.where(nan | (pos & neg), math.nan,
                       torch.where(pos, math.inf, torch.where(neg, -math.inf, mean)))


def _row_major_strides(sizes: Any) -> list:
    """Each dim's stride in a contiguous tensor of ``sizes``: eager's flat pooling indices."""
    return [math.prod(sizes[axis + 1:]) for axis in range(len(sizes))]


def _window_pick(x: torch.Tensor, dim: int, where: torch.Tensor, carry: Any = None) -> tuple:
    """Max pooling along one dim, each output's window gathered from ``where`` ([out, k]
    positions along ``dim``; a window shorter than ``k`` repeats one of its own elements, which
    changes no pick), then the element eager picks: the first maximum, or the last NaN where
    the window has one (ATen's CPU kernels replace their pick on ``val > max || isnan(val)``).
    Returns the values, their positions along ``dim`` and ``carry`` (a tensor of ``x``'s shape)
    at the same picks."""
    shape = list(x.shape)
    shape[dim:dim + 1] = [where.shape[0], where.shape[1]]

    def windows_of(t: torch.Tensor) -> torch.Tensor:
        return torch.index_select(t, dim, where.reshape(-1)).reshape(shape)

    windows = windows_of(x)
    nan = torch.isnan(windows)
    steps = torch.arange(where.shape[1], device=x.device).view([-1] + [1] * (x.dim() - dim - 1))
    last_nan = torch.amax(nan.to(torch.int64) * steps, dim + 1)
    first_max = torch.argmax(windows.masked_fill(nan, -math.inf), dim + 1)
    pick = torch.where(torch.any(nan, dim + 1), last_nan, first_max)
    pick = pick.unsqueeze(dim + 1)

    def picked(t: torch.Tensor) -> torch.Tensor:
        return torch.gather(t, dim + 1, pick).squeeze(dim + 1)

    positions = where.view([where.shape[0], -1] + [1] * (x.dim() - dim - 1)).expand(shape)
    return (picked(windows), picked(positions),
            None if carry is None else picked(windows_of(carry)))


def _separable_max(x: torch.Tensor, wheres: list) -> tuple:
    """Max pooling over the last ``len(wheres)`` dims, one dim at a time from the innermost
    (``wheres``: each dim's `_window_pick` positions), with the flat index eager returns. The
    separable pick equals eager's row-major scan: the first row holding a maximum and its
    first maximum, or the last row holding a NaN and its last NaN. The flat index rides along
    as the carry: a sum of the picks' positions, each from its own gather chain, fails
    iree-compile over dynamic sizes ("'tensor.dim' op unexpected during shape cleanup")."""
    spatial = len(wheres)
    sizes = x.shape[x.dim() - spatial:]
    strides = _row_major_strides(sizes)
    values, flat = x, None
    for axis in reversed(range(spatial)):
        dim = x.dim() - spatial + axis
        if flat is None:
            values, flat, _ = _window_pick(values, dim, wheres[axis])
            continue
        if isinstance(sizes[axis], int) and sizes[axis] == 1 and wheres[axis].shape[0] == 1:
            # one window over one element (max_pool1d's unit rows): the pick is that element.
            # Picked with the carry after a dilated pick, it failed iree-compile on portable
            # Vulkan ("'memref.store' op failed to verify", fuzz campaign seed 2120 program 92)
            continue
        rows = torch.arange(sizes[axis], device=x.device).view([-1] + [1] * (spatial - 1 - axis))
        values, _, flat = _window_pick(values, dim, wheres[axis], flat + rows * strides[axis])
    return values, flat


def _adaptive_max_pool(x: torch.Tensor, output_size: Any, spatial: int) -> Any:
    """``adaptive_max_pool1d`` / ``2d`` as `_separable_max` over adaptive windows. Over dynamic
    sizes torch-mlir's path is a ``max_pool2d`` with a computed kernel, which it cannot lower
    (torch-mlir's e2e ``AdaptiveMaxPool*Dynamic*``). Over static ones it lowers the 1-D pooling
    only to the input's size or to 1 (fuzz campaign seed 2119, programs 962-965 and 1253-1254:
    [1, 3, 4] pooled to 2 failed with an invalid ``tensor.cast``), and the 2-D one with indices
    gave an index of -1 beside a NaN and, for uneven windows (8x8 to 3x3), wrong values in the
    last row."""
    if not x.dtype.is_floating_point or x.dim() not in (spatial + 1, spatial + 2):
        return NotImplemented
    sizes = [output_size] * spatial if isinstance(output_size, int) else list(output_size)
    if 0 in sizes:
        return NotImplemented
    wheres = []
    for size, out in zip(x.shape[x.dim() - spatial:], sizes):
        start, end = _adaptive_windows(size, out, x.device)
        k = torch.arange((size + out - 1) // out + 1, device=x.device).unsqueeze(0)
        wheres.append(torch.minimum(start + k, end - 1))  # short windows repeat their last
    return _separable_max(x, wheres)


def _adaptive_max_pool1d(x: torch.Tensor, output_size: Any) -> Any:
    return _adaptive_max_pool(x, output_size, 1)


def _adaptive_max_pool2d(x: torch.Tensor, output_size: Any) -> Any:
    return _adaptive_max_pool(x, output_size, 2)


_MAX_POOL_VALUES_ONLY = _KeptWhole()  # on while `_max_pool_values` calls the op it keeps


def _pool_windows(size: Any, kernel: int, stride: int, pad: int, dilation: int,
                  ceil_mode: bool, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Max pooling's windows along one dim: [out, kernel] input positions (one in the padding
    replaced by the window's first or last one inside the input) and [out] the first position
    inside the input, ATen's adjusted start, past the input's end where a dilated window
    misses it. The output size is ATen's ``pooling_output_shape`` (ceil mode drops a last
    window that starts in the right padding), written with ``sym_min`` so that it also holds
    over dynamic sizes."""
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) \
        // stride + 1
    if ceil_mode:
        out = torch.sym_min(out, (size + pad + stride - 1) // stride)
    start = torch.arange(out, device=device).unsqueeze(1) * stride - pad
    taps = start + torch.arange(kernel, device=device).unsqueeze(0) * dilation
    first = start + torch.div(torch.clamp(-start, min=0) + dilation - 1, dilation,
                              rounding_mode="floor") * dilation
    last = start + torch.div(torch.clamp(-start + (size - 1), max=(kernel - 1) * dilation),
                             dilation, rounding_mode="floor") * dilation
    inside = torch.clamp(torch.minimum(torch.maximum(taps, first), last), 0, size - 1)
    return inside, first.squeeze(1)


def _max_pool_with_indices(spatial: int) -> Callable:
    """``max_pool2d_with_indices`` / ``3d`` as `_separable_max` over the pooling windows, where
    the indices are read: torch-mlir's lowering gives the right values but an index of -1
    for a window that holds a NaN, where eager gives the NaN's (the last one's) position
    (issue 21). Plain max pooling reaches this op too (``max_pool2d`` is a composite of it):
    `_max_pool_values` keeps it whole for torch-mlir's faster pooling.

    A dilated window can miss the input (its taps straddle it); eager gives it -inf at the
    flat index of its dims' adjusted starts, put in after the separable pick."""
    def decompose(x: torch.Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
                  dilation: Any = 1, ceil_mode: bool = False) -> Any:
        if _MAX_POOL_VALUES_ONLY.on or not x.dtype.is_floating_point \
                or x.dim() not in (spatial + 1, spatial + 2) or x.numel() == 0:
            return NotImplemented

        kernel = _per_dim(kernel_size, spatial)
        strides, pads, dilations = (_per_dim(stride, spatial, kernel), _per_dim(padding, spatial),
                                    _per_dim(dilation, spatial))
        sizes = x.shape[x.dim() - spatial:]
        windows = [_pool_windows(size, *taps, ceil_mode, x.device) for size, *taps in
                   zip(sizes, kernel, strides, pads, dilations)]
        values, index = _separable_max(x, [inside for inside, _ in windows])
        if all(d == 1 for d in dilations):  # only a dilated window can miss the input
            return values, index
        missed, starts = None, 0
        for axis, ((_, first), inner) in enumerate(zip(windows, _row_major_strides(sizes))):
            shape = [-1] + [1] * (spatial - 1 - axis)
            outside = (first >= sizes[axis]).view(shape)
            missed = outside if missed is None else missed | outside
            starts = starts + first.view(shape) * inner
        return values.masked_fill(missed, -math.inf), torch.where(missed, starts, index)
    return decompose


# Strided 2-D max pooling by phases (`_max_pool_by_phases`) where convolutions are data-tiled
# on a CPU with 512-bit vectors; False keeps it whole there too (benchmarks/conv_phases.py
# compares the two).
POOL_BY_PHASES = True


def _max_pool_by_phases(x: torch.Tensor, kernel_size: Any, stride: Any = (),
                        padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """A strided 2-D max pooling (values only) as the elementwise maximum of one unit-stride
    window per kernel tap, each read from a phase of the input padded with -inf
    (`_phase_split`). Kept whole, torch-mlir's ``linalg.pooling_nchw_max`` stays in NCHW
    between convolutions data-tiled channels-last: in ResNet-18's call (`lowerkit profile`) it
    was the fourth slowest dispatch, with a repacking of its input beside it. NaN propagates
    as in eager (``maximum``), and no window is padding alone (torch allows at most half a
    kernel of padding). Only where dense convolutions go whole to data tiling on a CPU with
    512-bit vectors, where it was measured (benchmarks/conv_phases.py)."""
    if (not POOL_BY_PHASES or x.dim() != 4 or x.dtype != torch.float32 or not _static(x)
            or ceil_mode or not tuning.dense_convolutions_data_tiled()):
        return NotImplemented
    kernel = _per_dim(kernel_size, 2)
    strides, pads, dilations = (_per_dim(stride, 2, kernel), _per_dim(padding, 2),
                                _per_dim(dilation, 2))
    if (len(kernel) != 2 or len(strides) != 2 or len(pads) != 2 or len(dilations) != 2
            or any(d != 1 for d in dilations) or all(s == 1 for s in strides)
            or kernel[0] * kernel[1] > MAX_TAPS or any(2 * p > k for p, k in zip(pads, kernel))):
        return NotImplemented
    split = _phase_split(x, kernel, strides, pads, value=-math.inf)
    if split is None:
        return NotImplemented
    phases, out = split
    sh, sw = strides
    y = None
    for ky in range(kernel[0]):
        for kx in range(kernel[1]):
            window = phases[:, :, ky % sh, kx % sw, ky // sh:ky // sh + out[0],
                            kx // sw:kx // sw + out[1]]
            y = window if y is None else torch.maximum(y, window)
    return y.contiguous()


def _max_pool_values(with_indices: Any, first: "Callable | None" = None) -> Callable:
    """``max_pool1d`` / ``2d`` / ``3d`` (no indices) as the ``with_indices`` op kept whole (the
    1-D one is a composite of the 2-D op), unless ``first`` writes it otherwise (the 2-D one by
    phases where convolutions are data-tiled: `_max_pool_by_phases`)."""
    def decompose(*args: Any, **kwargs: Any) -> Any:
        if first is not None:
            y = first(*args, **kwargs)
            if y is not NotImplemented:
                return y
        with _MAX_POOL_VALUES_ONLY.calling():
            return with_indices(*args, **kwargs)[0]
    return decompose


def _avg_pool2d(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """An unbatched ``[C, H, W]`` average pooling over dynamic sizes, pooled as a batch of one:
    torch-mlir's lowering gives ``linalg.pooling_nchw_sum`` the 3-D input, which fails to verify
    (torch-mlir's e2e ``AvgPool2dCHWModule``)."""
    if x.dim() != 3 or _static(x):
        return NotImplemented
    return aten.avg_pool2d.default(x.unsqueeze(0), *args, **kwargs).squeeze(0)


def _gelu(x: torch.Tensor, approximate: str = "none") -> Any:
    """GELU's tanh form with sqrt(2/pi) to f32's precision: torch-mlir 20261001 lowers
    ``aten.gelu(approximate="tanh")`` with 0.797724 for 0.7978846, up to 5.1e-5 off near
    x = 1.3, which left GPT-2's logits 6e-6 of their scale from eager's."""
    if approximate != "tanh":
        return NotImplemented
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + torch.tanh(inner))


def _isfinite(x: torch.Tensor) -> Any:
    """What aot_autograd already makes of it (torch-mlir has no lowering of ``aten.isfinite``,
    which torch.export keeps): not NaN (``x == x``, kept so by ``keep-nan-self-compare``) and
    not infinite; every integer is finite."""
    if x.dtype.is_complex:
        return NotImplemented
    if not x.dtype.is_floating_point:
        return torch.ones_like(x, dtype=torch.bool)
    return (x == x) & (x.abs() != math.inf)


def _unsafe_index(x: torch.Tensor, indices: list) -> Any:
    """``aten._unsafe_index`` with each index clamped to its dim's last element, then
    ``aten.index``. PyTorch's own decomposition of ``upsample_nearest*`` (which aot_autograd
    applies before any table) indexes with ``floor(i / scale)``, which passes the input's end
    when the scales and the output size disagree; eager's kernel clamps
    (``UpSampleNearest2dDynamicFactor`` of torch-mlir's e2e suite read past the input)."""
    if any(i is not None and (i.dtype is torch.bool or i.dtype is torch.uint8)
           for i in indices):
        return NotImplemented
    clamped = [None if i is None else torch.clamp(i, max=x.shape[d] - 1)
               for d, i in enumerate(indices)]
    return aten.index.Tensor(x, clamped)


def _true_positions(mask: torch.Tensor) -> torch.Tensor:
    """The flat positions where ``mask`` holds: a length read from data at each call."""
    return torch.nonzero(mask.reshape(-1)).reshape(-1)


def _one_mask(x: torch.Tensor, indices: list) -> "tuple[int, torch.Tensor] | None":
    """For indices that are one boolean (or uint8) mask after leading ``None``s, covering
    dims of ``x`` of its own shape: the first dim it covers and the mask; else None (other
    indexing, and eager's IndexError, are left as they are)."""
    lead = 0
    while lead < len(indices) and indices[lead] is None:
        lead += 1
    if lead != len(indices) - 1:
        return None
    mask = indices[lead]
    if mask.dtype is not torch.bool and mask.dtype is not torch.uint8:
        return None
    covered = x.shape[lead:lead + mask.dim()]
    if mask.dim() == 0 or len(covered) != mask.dim() or list(mask.shape) != list(covered):
        return None
    return lead, mask


def _count_reached(running: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    """For each value of ``at``, how many entries of ``running`` (a non-decreasing running sum
    along its last dim) are at most it: the inverse of a running sum, as one fused reduction
    (``running [..., N]``, ``at [..., M]`` -> ``[..., M]``)."""
    return (running.unsqueeze(-2) <= at.unsqueeze(-1)).sum(-1)


def _mask_beside_integers(indices: list) -> "list | None":
    """For ``index_put``: indices of tensors only, one of them a 1-D boolean mask and the others
    integer indices of one dim that broadcast to a length ``n`` of at least 2
    (``x[rows, mask] = values``; reading that form, torch.export and Dynamo fail first), with the
    mask's true positions as an integer index of that static length: the ``j``-th true position
    is the number of positions whose running count of the mask is at most ``j``. Eager
    broadcasts the mask's ``nonzero`` with the others, so the true count must be ``n`` (or 1,
    which broadcasts), and that is checked at run time. None for other indexing: torch-mlir's
    own lowering of a mixed index scatters at ``nonzero``'s positions, whose length is read
    from data, and iree-compile refuses that scatter."""
    if any(i is None for i in indices):
        return None
    masks = [k for k, i in enumerate(indices) if i.dtype in (torch.bool, torch.uint8)]
    others = [i for i in indices if i.dtype not in (torch.bool, torch.uint8)]
    if len(masks) != 1 or not others or indices[masks[0]].dim() != 1 \
            or any(i.dim() != 1 or i.is_floating_point() for i in others):
        return None
    n = torch.broadcast_shapes(*(i.shape for i in others))[0]
    if guard_or_false(n < 2):
        return None  # a length-1 index broadcasts to the true count, read from data
    mask = indices[masks[0]].to(torch.bool)
    count = mask.sum()
    torch._assert_async((count - n) * (count - 1) == 0,
                        "shape mismatch: indexing tensors could not be broadcast together "
                        "(a boolean mask's true count against the other indices' length)")
    running = torch.cumsum(mask.to(torch.int64), 0)
    wanted = torch.minimum(torch.arange(n, device=mask.device), count - 1)
    positions = _count_reached(running, wanted)
    return [positions if k == masks[0] else i for k, i in enumerate(indices)]


def _mask_index(x: torch.Tensor, indices: list) -> Any:
    """``x[mask]`` (and ``x[:, mask]``): the mask's true positions (``nonzero`` of the mask
    read flat), gathered along the dims it covers, merged into one. torch-mlir lowers a
    boolean index itself only for a 1-D mask and then fails to legalize (``arith.cmpi`` of
    ``i1`` and ``i64``); over a 2-D mask its linalg pipeline allocated without bound (6 GB in
    30 s for a 5x7 mask). ``nonzero`` and ``index_select`` of a dynamic length it lowers."""
    found = _one_mask(x, indices)
    if found is None:
        return NotImplemented
    lead, mask = found
    merged = x.reshape(*x.shape[:lead], -1, *x.shape[lead + mask.dim():]) \
        if mask.dim() > 1 else x
    where = _true_positions(mask)
    return torch.index_select(merged, lead, where)


def _mask_put(x: torch.Tensor, indices: list, values: torch.Tensor,
              accumulate: bool = False) -> Any:
    """``x[mask] = values`` (``index_put``, also accumulating) as a gather, not a scatter:
    the element at each true position reads the row of ``values`` numbered by its rank among
    the true positions (a running count of the mask), and ``where`` keeps ``x`` elsewhere.
    torch-mlir writes it as a scatter at ``nonzero``'s positions, whose length is read from
    data, and iree-compile refuses that scatter (``mismatch in shape of indices and update
    value``). A ``values`` of one row broadcasts, as in eager; eager's error for any other
    count than the mask's is kept as a run-time check. A mask beside integer indices
    (``x[rows, mask] = values``) becomes an integer index, `_mask_beside_integers`."""
    found = _one_mask(x, indices)
    if found is None:
        mixed = _mask_beside_integers(indices)
        return NotImplemented if mixed is None else aten.index_put.default(x, mixed, values,
                                                                           accumulate)
    if values.dim() > x.dim() - found[1].dim() + 1:
        return NotImplemented
    lead, mask = found
    post = x.shape[lead + mask.dim():]
    merged = x.reshape(*x.shape[:lead], -1, *post)
    flat = mask.reshape(-1).to(torch.bool)
    v = values.reshape(*(1,) * (merged.dim() - values.dim()), *values.shape).to(x.dtype)
    rows = v.shape[lead]
    if not guard_or_false(rows == 1):
        count = flat.sum()
        torch._assert_async((count - rows) * (rows - 1) == 0,  # a count of rows, or one row
                            "shape mismatch: index_put of a boolean mask with values of "
                            "another count of rows than the mask's true positions")
        rank = torch.cumsum(flat.to(torch.int64), 0) - 1
        # a row past the end, so that an empty ``values`` (no true position) reads in bounds
        pad = v.new_zeros(*v.shape[:lead], 1, *v.shape[lead + 1:])
        rank = rank.clamp(max=rows - 1).clamp(min=0)
        v = torch.index_select(torch.cat([v, pad], lead), lead, rank)
    keep = flat.reshape(*(1,) * lead, -1, *(1,) * len(post))
    out = merged + torch.where(keep, v, 0) if accumulate else torch.where(keep, v, merged)
    return out.reshape(x.shape)


def _masked_select(x: torch.Tensor, mask: torch.Tensor) -> Any:
    """``masked_select``: both broadcast, then read flat as `_mask_index` reads ``x[mask]``
    (torch-mlir has no lowering of its own)."""
    x, mask = torch.broadcast_tensors(x, mask)
    where = _true_positions(mask)
    return torch.index_select(x.reshape(-1), 0, where)


def _unique(x: torch.Tensor, sorted: bool = True, return_inverse: bool = False,
            return_counts: bool = False) -> Any:
    """``torch.unique`` (``_unique2``; torch-mlir has no definition of it): the elements
    sorted, each kept where it differs from the one before it (a boolean mask, so the count is
    read from data at each call, `_mask_index`), its group's number for the inverse, and the
    distance between group starts for the counts. ``sorted=False`` is left alone: eager's CPU
    kernel then returns its own order. NaNs differ from each other, so each is its own group,
    as in eager."""
    if not sorted or x.numel() == 0:
        return NotImplemented
    values, order = torch.sort(x.reshape(-1), stable=True)
    starts = torch.cat([torch.ones_like(values[:1], dtype=torch.bool), values[1:] != values[:-1]])
    where = _true_positions(starts)
    unique = torch.index_select(values, 0, where)
    group = torch.cumsum(starts.to(torch.int64), 0) - 1
    inverse = torch.scatter(torch.empty_like(group), 0, order, group).reshape(x.shape) \
        if return_inverse else x.new_empty((0,), dtype=torch.int64)
    ends = torch.cat([where[1:], torch.full_like(where[:1], values.shape[0])])
    counts = ends - where if return_counts else x.new_empty((0,), dtype=torch.int64)
    return unique, inverse, counts


_BITS_AS_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _view_other_width(x: torch.Tensor, dtype: torch.dtype) -> Any:
    """``x.view(dtype)`` to a dtype of another width, whose last dim then shrinks or grows by
    the ratio of the widths, as integer shifts and masks on the little-endian bytes, between
    views of one width (which `lower-bit-views` makes a ``tensor.bitcast``). torch-mlir
    20261001 has no lowering of ``aten.view.dtype`` and failed in ``linalg-on-tensors``
    (torch-mlir's e2e ``ViewDtypeStaticModule``). Bool and complex are left alone."""
    wide, narrow = x.dtype.itemsize, dtype.itemsize
    if wide == narrow or x.dim() == 0 or x.dtype is torch.bool or dtype is torch.bool \
            or x.dtype.is_complex or dtype.is_complex or max(wide, narrow) not in _BITS_AS_INT:
        return NotImplemented
    small = min(wide, narrow)
    ratio, bits = max(wide, narrow) // small, 8 * small
    mask = (1 << bits) - 1
    if wide > narrow:  # each element into ``ratio`` pieces, the low one first
        whole = x.view(_BITS_AS_INT[wide])
        shifts = torch.arange(ratio, dtype=whole.dtype, device=x.device) * bits
        pieces = (whole.unsqueeze(-1) >> shifts) & mask
        out = pieces.to(_BITS_AS_INT[narrow]).reshape(*x.shape[:-1], x.shape[-1] * ratio)
    else:  # ``ratio`` pieces into each element
        if guard_or_false(x.shape[-1] % ratio != 0):
            return NotImplemented  # eager's error stays eager's
        target = _BITS_AS_INT[narrow]
        pieces = x.view(_BITS_AS_INT[wide]).to(target) & mask
        shifts = torch.arange(ratio, dtype=target, device=x.device) * bits
        out = (pieces.reshape(*x.shape[:-1], -1, ratio) << shifts).sum(-1, dtype=target)
    return out if out.dtype is dtype else out.view(dtype)


def _linear_source(n_in: int, n_out: int, align_corners: bool, scale: Any,
                   dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For each output position along one dim: the two input positions it reads and the
    weight of the second, rounded as eager's kernel rounds them in ``dtype``.

    Eager's float32 kernel fuses ``step * (i + 0.5) - 0.5`` into one rounding (measured: at
    ``scale_factor=3`` the first rows' weight is 1.5e-8, not 0, and an infinite neighbour
    times it stays infinite where 0 times it is NaN). The step is a ratio ``num / den`` of
    integers with ``den`` a power of two, so that value is ``(num * (2i + 1) - den) / 2den``:
    an exact int64, converted to float32 (the one rounding) and scaled by a power of two
    (exact), whatever the compiler contracts. Its float64 kernel rounds each op."""
    import numpy as np

    i = torch.arange(n_out)
    if dtype != torch.float64:
        dtype = torch.float32
    f = np.float32 if dtype == torch.float32 else np.float64
    if align_corners:
        step = float(f(n_in - 1) / f(n_out - 1)) if n_out > 1 else 0.0
        src = i.to(dtype) * step
    else:
        step = float(f(1.0 / scale)) if scale is not None and scale > 0 \
            else float(f(n_in) / f(n_out))
        if dtype == torch.float64:
            src = (i.to(dtype) + 0.5) * step - 0.5
        else:
            num, den = step.as_integer_ratio()
            src = (num * (2 * i + 1) - den).to(dtype) * (0.5 / den)
    src = src.clamp(min=0.0)
    lo = src.to(torch.int64)
    return lo, (lo + 1).clamp(max=n_in - 1), (src - lo.to(dtype)).clamp(0.0, 1.0)


def _upsample_linear(x: torch.Tensor, output_size: Any, align_corners: bool,
                     *scales: Any) -> Any:
    """Linear, bilinear and trilinear upsampling that weighs both neighbours,
    ``(1 - a) * x0 + a * x1``, one dim at a time from the last, as eager's kernel does.
    PyTorch's decomposition writes ``x0 + a * (x1 - x0)``, which is NaN where ``x0`` is
    infinite, also at ``a = 0`` where eager gives ``x0`` (fuzz campaign seed 2114, program 352:
    ``interpolate`` of a division by zero, on every target)."""
    dims = x.dim() - 2
    if not x.is_floating_point() or not _static(x) or output_size is None \
            or len(output_size) != dims:
        return NotImplemented  # over dynamic sizes torch-mlir lowers the op (measured)
    scales = list(scales) + [None] * (dims - len(scales))
    opmath = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    y = x.to(opmath)
    for d in reversed(range(dims)):
        if x.shape[2 + d] == output_size[d]:
            # eager reads each element twice, weighed 1 and 0: an infinity is NaN there; `y - y`
            # (not `y * 0`, which a Vulkan driver folds to 0: `keep-nan-self-subtract`)
            y = y + (y - y)
            continue
        lo, hi, a = _linear_source(x.shape[2 + d], output_size[d], align_corners, scales[d],
                                   opmath)
        a = a.reshape([-1] + [1] * (dims - 1 - d))
        y = y.index_select(2 + d, lo) * (1 - a) + y.index_select(2 + d, hi) * a
    return y.to(x.dtype)


def _upsample_linear_vec(x: torch.Tensor, output_size: Any, align_corners: bool,
                         scale_factors: Any) -> Any:
    """The ``.vec`` overloads: the output size from the scale factors, as eager computes it
    (PyTorch's own, symbolic, where the input's sizes are dynamic)."""
    if not _static(x) and x.is_floating_point():
        from torch._decomp.decompositions import _upsample_linear_vec as pytorch_vec
        return pytorch_vec(x, output_size, align_corners, scale_factors)
    if output_size is None:
        if scale_factors is None:
            return NotImplemented
        output_size = [int(math.floor(n * s)) for n, s in zip(x.shape[2:], scale_factors)]
    return _upsample_linear(x, output_size, align_corners, *(scale_factors or ()))


def _upsample_nearest(x: torch.Tensor, output_size: Any, *scales: Any) -> Any:
    """Nearest upsampling (and downsampling) that picks the input element eager picks,
    ``floor(i * scale)`` with the scale ``in / out`` rounded to float32 first. torch-mlir's
    lowering divides by ``out / in`` instead, and rounds the other way: 14 rows to 2 read row 6
    where eager reads row 7 (fuzz campaign seed 2114, program 1342, on every target). The
    indices are int32, which a target without Int64 can index with."""
    import numpy as np

    dims = x.dim() - 2
    if not _static(x) or output_size is None or len(output_size) != dims:
        return NotImplemented
    scales = list(scales) + [None] * (dims - len(scales))
    y = x
    for d in range(dims):
        n_in, n_out, s = x.shape[2 + d], output_size[d], scales[d]
        if n_out == n_in:
            continue
        i = torch.arange(n_out, dtype=torch.int32)
        if n_out == 2 * n_in:  # eager's own shortcut
            src = i // 2
        else:
            step = float(np.float32(1.0 / s)) if s is not None and s > 0 \
                else float(np.float32(n_in) / np.float32(n_out))
            src = (i.to(torch.float32) * step).floor().to(torch.int32).clamp(max=n_in - 1)
        y = y.index_select(2 + d, src)
    return y


def _upsample_nearest_vec(x: torch.Tensor, output_size: Any, scale_factors: Any) -> Any:
    """The ``.vec`` overloads: the output size from the scale factors, as eager computes it."""
    if output_size is None:
        if scale_factors is None:
            return NotImplemented
        output_size = [int(n * s) for n, s in zip(x.shape[2:], scale_factors)]
    return _upsample_nearest(x, output_size, *(scale_factors or ()))


def _threshold_backward(grad: torch.Tensor, x: torch.Tensor, threshold: Any) -> Any:
    """In the dtype eager gives, ``grad``'s and ``x``'s promoted: PyTorch's decomposition keeps
    ``grad``'s (an int64 gradient of a float32 input came back int64 where eager gives
    float32; torch-mlir's e2e ``ThresholdBackward2dMixedModule``)."""
    dtype = torch.result_type(grad, x)
    return torch.where(x <= threshold, torch.zeros((), dtype=dtype, device=grad.device),
                       grad.to(dtype))


def _kthvalue(x: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The k-th smallest as element k-1 of a sort: torch-mlir lowers ``kthvalue`` to a
    ``tm_tensor.topk`` whose region IREE 3.13 rejects ("region block must end with a
    linalg_ext.yield i1"; torch-mlir's e2e ``AtenKthvalue*``); a sort IREE takes, and along a
    short dim `_sort` makes it data-parallel."""
    if x.dim() == 0:
        return NotImplemented
    values, indices = torch.sort(x, dim=dim)
    values, indices = values.narrow(dim, k - 1, 1), indices.narrow(dim, k - 1, 1)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


def _multinomial(probs: torch.Tensor, num_samples: int, replacement: bool = False, *,
                 generator: Any = None) -> Any:
    """``torch.multinomial`` by the inverse of each row's running sum: a uniform draw scaled to
    the row's total, and the number of classes whose running sum it reaches, which is the
    drawn class. torch-mlir lowers the op as a loop that reads the random seed inside it, which
    `seed-as-input` refuses (torch-mlir's e2e ``Multinomial*``). The count compares each draw
    with every class, one reduction IREE fuses; a binary search of chained gathers instead
    stalled IREE's dispatch creation (over 40 s for 10 rows x 2^20 draws x 100 classes, when
    fusing aggressively). Draws without replacement are the same for one sample (a sampling
    ``generate()``); more are left alone. Eager's refusal of a negative weight or a row of
    zeros is a run-time check."""
    if generator is not None or (not replacement and not guard_or_false(num_samples == 1)) \
            or probs.dim() not in (1, 2) or not probs.is_floating_point():
        return NotImplemented
    rows = probs if probs.dim() == 2 else probs.unsqueeze(0)
    dtype = torch.float64 if rows.dtype is torch.float64 else torch.float32
    running = torch.cumsum(rows.to(dtype), -1)
    total = running[:, -1:]
    torch._assert_async((rows >= 0).all() & (total > 0).all(),
                        "invalid multinomial distribution (a negative weight, or a row of zeros)")
    # below the total, also where the draw's rounding would reach it
    below = total * (1.0 - 4.0 * torch.finfo(dtype).eps)
    draw = torch.minimum(torch.rand(rows.shape[0], num_samples, dtype=dtype,
                                    device=probs.device) * total, below)
    drawn = _count_reached(running, draw)  # [rows, draws]
    return drawn if probs.dim() == 2 else drawn.squeeze(0)


def _normal(mean: Any, std: Any = 1.0, *, generator: Any = None) -> Any:
    """``torch.normal(mean, std)`` as ``mean + std * randn``: torch-mlir (20261001) has no
    definition of ``aten.normal``'s tensor overloads (an `UnsupportedError`), and ``randn``
    draws from the call's seed like every random op (`passes/seed_input.py`)."""
    if generator is not None:
        return NotImplemented  # only torch's default generator feeds a compiled program
    like = mean if isinstance(mean, torch.Tensor) else std
    shape = torch.broadcast_shapes(*(v.shape for v in (mean, std) if isinstance(v, torch.Tensor)))
    noise = torch.randn(shape, dtype=torch.result_type(mean, std), device=like.device)
    return mean + std * noise


_SDPA_MASK_READY = _KeptWhole()  # on while _sdpa calls the op it keeps whole


# A sequence length whose largest divisor up to the CPU attention's key tile
# (`passes.attention.MAX_KEY_TILE`) is below this is padded to a multiple of that tile.
SDPA_MIN_TILE = 8
# From this length on, one whose key tile is not a multiple of this is padded too: at 6 heads
# x 1500 x 64 the tile of 30 keys took 53.5 ms a call where 1504 keys (tile 32) took 29.6 ms
# and eager 22.3 ms; IREE's llvm-cpu codegen of a reduction over a length that is not a
# multiple of the vector width was 40x slower (`lowerkit profile`: the max-subtract-sum of a
# [9000, 1500] softmax 190 ms, over 1536 columns 4.9 ms).
SDPA_PAD_FROM = 4 * MAX_KEY_TILE
SDPA_TILE_MULTIPLE = 16


def _sdpa_tile_poor(n: int) -> bool:
    """Whether attention over length ``n`` is padded (`_sdpa_padded`)."""
    tile = largest_divisor(n, MAX_KEY_TILE)
    return tile < SDPA_MIN_TILE or (n >= SDPA_PAD_FROM and tile % SDPA_TILE_MULTIPLE != 0)


def _sdpa_padded(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 scale: Any) -> Any:
    """Attention whose key or query length has no divisor of at least `SDPA_MIN_TILE` up to
    the key tile (ViT's 197 tokens: a prime), or a long one whose tile is not a multiple of
    `SDPA_TILE_MULTIPLE` (Whisper's 1500), padded to a multiple of the tile: the padded
    keys masked out by a mask computed from indices, the padded query rows dropped. IREE's
    attention tiles its key loop by a divisor of the length (`passes.attention.cpu_tiles`),
    so at 197 it ran one key a step: 5.0 ms where 224 keys took 1.1 ms (4 heads, head dim 64;
    benchmarks/results/attention-lengths-before.json). None where no padding is needed."""
    L, S = query.shape[-2], key.shape[-2]
    if not any(_sdpa_tile_poor(n) for n in (L, S)):
        return None
    up = lambda n: -(-n // MAX_KEY_TILE) * MAX_KEY_TILE  # noqa: E731
    lp, sp = up(L), up(S)
    pad = lambda t, n, to: torch.nn.functional.pad(t, [0, 0, 0, to - n])  # noqa: E731
    q, k, v = pad(query, L, lp), pad(key, S, sp), pad(value, S, sp)
    keys = torch.arange(sp, device=query.device)
    mask = torch.where(keys < S, 0.0, float("-inf")).to(query.dtype).expand(
        *([1] * (query.dim() - 2)), lp, sp)
    with _SDPA_MASK_READY.calling():  # the op kept whole, not padded again
        out = aten.scaled_dot_product_attention.default(q, k, v, mask, 0.0, False, scale=scale)
    return out.narrow(-2, 0, L)


# A causal attention over this many positions or more goes as `SDPA_CAUSAL_CHUNKS` attentions
# of its query rows, each over the keys its rows can see (`_sdpa_causal_chunks`)
SDPA_CAUSAL_FROM = 1024
SDPA_CAUSAL_CHUNKS = 8


def _sdpa_causal_chunks(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        scale: Any) -> Any:
    """A causal attention as one attention per chunk of its query rows, each over the keys up
    to its last row, with the causal mask computed from indices: IREE's attention visits every
    key tile of every row, masked or not, so the keys after a chunk's rows, close to half of
    the work, were computed and then masked away (eager's CPU kernel skips them: 4 heads x
    4096 x 64 took 151 ms a call against eager's 61, in four chunks 114 ms, in eight 92 ms;
    benchmarks/attention.py). None where the length is short, not square or does not split into
    chunks of whole key tiles, and on a GPU import (not measured there)."""
    L, S = query.shape[-2], key.shape[-2]
    chunk = L // SDPA_CAUSAL_CHUNKS
    if (L != S or L < SDPA_CAUSAL_FROM or L % SDPA_CAUSAL_CHUNKS
            or chunk % MAX_KEY_TILE or tuning.gpu_import()):
        return None
    outs = []
    for start in range(0, L, chunk):
        end = start + chunk
        rows = torch.arange(start, end, device=query.device).unsqueeze(-1)
        keys = torch.arange(end, device=query.device)
        mask = torch.where(keys <= rows, 0.0, float("-inf")).to(query.dtype).expand(
            *([1] * (query.dim() - 2)), chunk, end)
        with _SDPA_MASK_READY.calling():  # the op kept whole, not split again
            outs.append(aten.scaled_dot_product_attention.default(
                query.narrow(-2, start, chunk), key.narrow(-2, 0, end),
                value.narrow(-2, 0, end), mask, 0.0, False, scale=scale))
    return torch.cat(outs, dim=-2)


_SOFTMAX_PADDED = _KeptWhole()  # on while _softmax calls the op over its padded rows


def _softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> Any:
    """A softmax along a long last dimension that is no multiple of `SDPA_TILE_MULTIPLE`,
    over rows padded with -inf to one (a weight of 0), the padding cut off after. IREE's
    llvm-cpu code for a softmax's fused max-subtract-sum along such a row ran about forty
    times slower than along the padded one (`lowerkit profile`: a [6, 1500, 1500] softmax's
    dispatch took 415 ms, over 1504 columns 22.8 ms, with two copies of 5-7 ms around it;
    eager's whole softmax 22 ms)."""
    if (_SOFTMAX_PADDED.on or half_to_float or x.dtype != torch.float32 or not _static(x)
            or x.dim() == 0):
        return NotImplemented
    dim = dim % x.dim()
    n = x.shape[dim]
    if dim != x.dim() - 1 or n < SDPA_PAD_FROM or n % SDPA_TILE_MULTIPLE == 0:
        return NotImplemented
    padded = torch.nn.functional.pad(x, [0, -n % SDPA_TILE_MULTIPLE], value=float("-inf"))
    with _SOFTMAX_PADDED.calling():
        y = aten._softmax.default(padded, dim, False)
    return y.narrow(dim, 0, n)


def _sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Any = None,
          dropout_p: float = 0.0, is_causal: bool = False, *, scale: Any = None,
          enable_gqa: bool = False) -> Any:
    """``scaled_dot_product_attention`` kept whole (``NotImplemented``) where torch-mlir turns
    it into one ``tm_tensor.attention`` (`passes/attention.py` gives each target its form);
    torch's own math decomposition otherwise (dropout, a mask together with ``is_causal``,
    a mask of another rank, grouped heads, dtypes other than float32, dynamic shapes).

    A mask reaches the kept op additive (a bool one as 0 / -inf), and a row whose every key
    is masked is set to 0 after, as eager's safe softmax gives it: IREE's attention gave NaN
    there (torch-mlir's e2e ``ScaledDotProductAttentionBoolMaskModule_basic``). Not where
    lowerkit's CPU kernel takes the attention: it gives those rows 0 itself, and IREE's form
    kept for it zeroes them in `lower-attention`; the check read the whole mask once more (a
    dispatch of its own, 5.7 of 78.7 ms at 4 x 4096 x 64 with an ``[L, S]`` mask)."""
    tensors = [query, key, value] + ([attn_mask] if attn_mask is not None else [])
    whole = (
        dropout_p == 0.0 and not (is_causal and attn_mask is not None) and not enable_gqa
        and (scale is None or isinstance(scale, float))
        and query.dim() in (3, 4) and key.dim() == query.dim() == value.dim()
        and query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
        and all(t.dtype == torch.float32 and _static(t) for t in (query, key, value))
        and (attn_mask is None or (attn_mask.dim() == query.dim() and _static(attn_mask)
                                   and attn_mask.dtype in (torch.float32, torch.bool)))
        and all(t.numel() > 0 for t in tensors)
    )
    if whole:
        # lowerkit's CPU kernel takes any length, skips the keys a causal row cannot see, and
        # gives 0 for a row whose every key is masked (IREE's form of it too, `lower-attention`)
        kernel = (not _SDPA_MASK_READY.on and query.dtype == torch.float32
                  and kernel_takes_shapes(math.prod(query.shape[:-1]), query.shape[-1],
                                          value.shape[-1])
                  and tuning.attention_kernel())
        if attn_mask is None and not is_causal and not _SDPA_MASK_READY.on and not kernel:
            padded = _sdpa_padded(query, key, value, scale)
            if padded is not None:
                return padded
        if attn_mask is None and is_causal and not _SDPA_MASK_READY.on and not kernel:
            chunked = _sdpa_causal_chunks(query, key, value, scale)
            if chunked is not None:
                return chunked
        if attn_mask is None or _SDPA_MASK_READY.on:
            return NotImplemented
        additive = attn_mask
        if attn_mask.dtype == torch.bool:
            additive = torch.zeros(attn_mask.shape, dtype=query.dtype).masked_fill(
                attn_mask.logical_not(), float("-inf"))
        with _SDPA_MASK_READY.calling():  # the op kept whole, not decomposed again
            out = aten.scaled_dot_product_attention.default(query, key, value, additive, 0.0,
                                                             False, scale=scale)
        if kernel:  # the kernel (or IREE's form in its place) zeroes the dead rows itself
            return out
        return out.masked_fill(torch.isneginf(additive).all(-1, keepdim=True), 0.0)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        # the math kernel adds its mask: a bool one must first become 0 / -inf, as
        # F.scaled_dot_product_attention makes it (added as 0/1 it was Falcon's wrong answer)
        attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype).masked_fill(
            attn_mask.logical_not(), float("-inf"))
    return aten._scaled_dot_product_attention_math.default(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale,
        enable_gqa=enable_gqa)[0]


def _fmod_scalar(x: torch.Tensor, divisor: Any) -> Any:
    """``fmod`` by a Python number as ``fmod`` by a tensor of it: torch-mlir lowers only the
    latter (the former failed in ``linalg-on-tensors`` on its ``torch.constant.float``)."""
    dtype = torch.result_type(x, divisor)
    return torch.fmod(x.to(dtype), torch.full_like(x, divisor, dtype=dtype))


def _copysign_scalar(a: torch.Tensor, b: Any) -> Any:
    """``|a|`` with the sign of the Python number ``b`` (``-0.0`` included), in the float dtype
    eager gives (torch-mlir has no lowering of ``copysign.Scalar``). ``copysign`` by a tensor
    stays torch-mlir's: a NaN's sign bit cannot be read without a bitcast it lowers."""
    dtype = torch.result_type(a, b)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    magnitude = a.to(dtype).abs()
    return -magnitude if math.copysign(1.0, b) < 0 else magnitude


def _clamp(x: torch.Tensor, min: Any = None, max: Any = None) -> Any:
    """An integer tensor clamped by a Python float, in the float dtype eager promotes it to:
    torch-mlir compares the integers with ``arith.cmpf`` and fails to verify (torch-mlir's e2e
    ``ElementwiseClampIntToFloatModule``)."""
    if x.dtype.is_floating_point or x.dtype.is_complex \
            or not any(isinstance(b, float) for b in (min, max)):
        return NotImplemented
    return aten.clamp.default(x.to(torch.result_type(x, 1.0)), min, max)


def _conv_tbc(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, pad: int = 0) -> Any:
    """``conv_tbc`` (time, batch, channels) as the ``conv1d`` it is, transposed in and out:
    torch-mlir's lowering returns the wrong layout (torch-mlir's e2e ``ConvTbcModule``)."""
    y = aten.convolution.default(x.permute(1, 2, 0), weight.permute(2, 1, 0), None, [1], [pad],
                                 [1], False, [0], 1)
    # the bias added after: given to the convolution over dynamic sizes, torch-mlir's
    # broadcast of it into the transposed weight's output failed to verify
    return y.permute(2, 0, 1) + bias


def _rms_norm(x: torch.Tensor, normalized_shape: Any, weight: Any = None,
              eps: Any = None) -> Any:
    """RMS norm over dynamic sizes as eager's composite computes it (in float32 for narrower
    floats): torch-mlir's lowering leaves ``torch.constant.int`` unconverted there (torch-mlir's
    e2e ``RMSNormDynamicModule``). Static sizes keep torch-mlir's."""
    if _static(x) and (weight is None or _static(weight)) or not x.dtype.is_floating_point:
        return NotImplemented
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    dims = list(range(x.dim() - len(normalized_shape), x.dim()))
    eps = torch.finfo(wide.dtype).eps if eps is None else eps
    y = (wide * torch.rsqrt(wide.pow(2).mean(dims, keepdim=True) + eps)).to(x.dtype)
    return y if weight is None else y * weight


def _integer_mm(a: torch.Tensor, b: torch.Tensor) -> Any:
    """A matmul of 8- or 16-bit integers as an int32 one, cast to eager's dtype: the low bits
    of a wrapped int32 sum are the low bits of the exact sum, as eager's wrapping gives them.
    torch-mlir's lowering of an int8 ``mm`` crashed in ``linalg-on-tensors`` (SIGSEGV; e2e
    ``AtenMmInt8Types``, ``AtenMmInt8ZeroK``); ``_int_mm`` of a uint8 it did not lower."""
    narrow = (torch.int8, torch.uint8, torch.int16)
    if a.dtype not in narrow or b.dtype not in narrow:
        return NotImplemented
    return torch.mm(a.to(torch.int32), b.to(torch.int32)).to(torch.result_type(a, b))


def _int_mm(a: torch.Tensor, b: torch.Tensor) -> Any:
    if a.dtype not in (torch.int8, torch.uint8) or b.dtype not in (torch.int8, torch.uint8):
        return NotImplemented
    return torch.mm(a.to(torch.int32), b.to(torch.int32))


def _scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
               bias: torch.Tensor | None = None, scale_result: torch.Tensor | None = None,
               out_dtype: torch.dtype | None = None, use_fast_accum: bool = False) -> Any:
    """``torch._scaled_mm`` with per-tensor scales as eager's CPU kernel computes it (measured
    bit for bit): each operand in float32 times its scale, one float32 matmul, the bias added,
    a float8 result divided by ``scale_result``, then cast. torch-mlir has no lowering for it
    (e2e ``AtenScaledMmPerTensor*``)."""
    if scale_a.numel() != 1 or scale_b.numel() != 1:
        return NotImplemented
    out = (a.float() * scale_a.float()) @ (b.float() * scale_b.float())
    if bias is not None:
        out = out + bias.float()
    out_dtype = out_dtype or a.dtype
    if scale_result is not None and out_dtype.itemsize == 1 and out_dtype.is_floating_point:
        out = out * (1.0 / scale_result.float())
    return out.to(out_dtype)


def _pow_integers(x: torch.Tensor, n: torch.Tensor) -> Any:
    """An integer tensor to integer tensor powers as eager computes them: by squaring, once
    per bit of the exponent, wrapping on overflow (equal to eager's product modulo 2^bits,
    whatever the order); a negative power is 1 of 1, +-1 of -1, and 0 of anything else.
    torch-mlir marks ``pow.Tensor_Tensor`` of integers illegal (e2e ``PowIntIntModule``)."""
    if x.is_floating_point() or n.is_floating_point() or x.is_complex() or n.is_complex() \
            or torch.bool in (x.dtype, n.dtype):
        return NotImplemented
    dtype = torch.result_type(x, n)
    base, power = torch.broadcast_tensors(x.to(dtype), n.to(dtype))
    result = torch.ones_like(base)
    k = power.clamp(min=0)
    for _ in range(dtype.itemsize * 8 - (0 if dtype == torch.uint8 else 1)):
        result = torch.where((k & 1) == 1, result * base, result)
        base = base * base
        k = torch.div(k, 2, rounding_mode="floor")  # not k >> 1: torch-mlir crashed on uint8's
    if dtype == torch.uint8:  # no negative powers
        return result
    one, minus_one = torch.ones_like(result), -torch.ones_like(result)
    odd = (power & 1) == 1
    negative_power = torch.where(x == 1, one, torch.where(
        x == -1, torch.where(odd, minus_one, one), torch.zeros_like(result)))
    return torch.where(power < 0, negative_power, result)


def _shift(op: Any) -> Callable:
    """``x >> s`` and ``x << s`` of two tensors (``aten.__rshift__.Tensor``...) as the
    ``bitwise_*_shift.Tensor`` ops they equal, which torch-mlir lowers and it does not."""
    def shift(x: torch.Tensor, s: Any) -> Any:
        if x.is_floating_point():
            return NotImplemented
        return op(x, s)
    return shift


_SCATTER_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -math.inf, "amin": math.inf}


def _scatter_reduce(x: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,
                    reduce: str, *, include_self: bool = True) -> Any:
    """``include_self=False`` over dynamic sizes as eager computes it: each target first set
    to the reduction's identity, then reduced with itself included (a mean divides by the
    count of sources, floored for integers). torch-mlir's own form needed an unbounded stack
    buffer in iree-compile (e2e ``ScatterReduce*Module`` over dynamic sizes)."""
    if include_self or _static(x) or reduce not in _SCATTER_IDENTITY or x.dtype == torch.bool:
        return NotImplemented
    identity = _SCATTER_IDENTITY[reduce]
    if not x.dtype.is_floating_point and math.isinf(identity):
        info = torch.iinfo(x.dtype)
        identity = info.min if identity < 0 else info.max
    hit = torch.zeros_like(x, dtype=torch.bool).scatter(dim, index, True)
    base = torch.where(hit, torch.full_like(x, identity), x)
    if reduce != "mean":
        return aten.scatter_reduce.two(base, dim, index, src, reduce, include_self=True)
    total = aten.scatter_reduce.two(base, dim, index, src, "sum", include_self=True)
    count = torch.zeros_like(x).scatter_add(dim, index, torch.ones_like(src))
    count = torch.where(count == 0, torch.ones_like(count), count)
    if x.dtype.is_floating_point:
        return total / count
    return torch.div(total, count, rounding_mode="floor")


def _split_with_sizes(x: torch.Tensor, sizes: Any, dim: int = 0) -> Any:
    """A split into sizes computed from dynamic sizes (``chunk`` of a dynamic dim) as one
    slice per piece: torch-mlir lowers only a split whose sizes are constants, and left
    ``torch.constant.int`` unconverted (torch-mlir's e2e ``ChunkListUnpack*Dynamic*``)."""
    if all(isinstance(size, int) for size in sizes):
        return NotImplemented
    pieces, start = [], 0
    for size in sizes:
        pieces.append(aten.slice.Tensor(x, dim, start, start + size))
        start = start + size
    return pieces


def _prims_prod(x: torch.Tensor, dims: Any, *, output_dtype: Any = None) -> Any:
    """``prims.prod`` as ATen's one-dim products, innermost first (torch-mlir has no lowering
    of the prim: its e2e ``PrimsProdFloatModule``)."""
    y = x if output_dtype is None else x.to(output_dtype)
    for dim in sorted({d % max(x.dim(), 1) for d in (range(x.dim()) if dims is None else dims)},
                      reverse=True):
        y = torch.prod(y, dim)
    return y


def aten_for_prims(graph: torch.fx.Graph) -> None:
    """Each of prims' views (``squeeze``, ``view_of``, ``split_dim``) made its ATen twin in
    place: ``run_decompositions`` refuses a non-ATen op whose output aliases its input before
    any table is consulted, and so does ``aot_autograd`` (torch-mlir's e2e ``PrimsSqueeze*``,
    ``PrimsViewOf*``, ``SplitDim*``). TorchScript's ``prim.NumToTensor`` becomes
    ``scalar_tensor`` of the number's dtype: under ``aot_autograd`` its result had no tensor
    metadata to import (``NumToTensor*Module``)."""
    prims, prim = torch.ops.prims, torch.ops.prim
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        # an exported graph calls the overload, Dynamo's graph the packet
        target = getattr(node.target, "default", getattr(node.target, "Scalar", node.target))
        if target not in (prims.squeeze.default, prims.view_of.default,
                          prims.split_dim.default, prim.NumToTensor.Scalar):
            continue
        # positional, by prims' own argument names (Dynamo's graph may pass keywords)
        names = [a.name for a in target._schema.arguments]
        args = list(node.args) + [node.kwargs[n] for n in names[len(node.args):]]
        kwargs = {}
        if target is prims.squeeze.default:
            target = aten.squeeze.dims
        elif target is prims.view_of.default:
            target = aten.alias.default
        elif target is prims.split_dim.default:
            x, dim, outer = args
            target, args = aten.unflatten.int, [x, dim, [outer, -1]]
        else:
            number = args[0].meta.get("example_value", args[0].meta.get("val")) \
                if isinstance(args[0], torch.fx.Node) else args[0]
            kwargs["dtype"] = torch.bool if isinstance(number, (bool, torch.SymBool)) else \
                torch.int64 if isinstance(number, (int, torch.SymInt)) else torch.float64
            target = aten.scalar_tensor.default
        node.target, node.args, node.kwargs = target, tuple(args), kwargs


def table() -> dict[Any, Callable]:
    """lowerkit's decompositions by op overload (empty with ``LOWERKIT_DECOMPOSITIONS=0``)."""
    if os.environ.get("LOWERKIT_DECOMPOSITIONS", "1") == "0":
        return {}
    return {
        aten.sort.default: _sort,
        aten.sort.stable: _sort_stable,
        aten.topk.default: _topk,
        aten.cumsum.default: _cumsum,
        aten.convolution.default: _convolution,
        aten._adaptive_avg_pool2d.default: _adaptive_avg_pool2d,
        aten.adaptive_max_pool1d.default: _adaptive_max_pool1d,
        aten.adaptive_max_pool2d.default: _adaptive_max_pool2d,
        aten.max_pool1d.default: _max_pool_values(aten.max_pool1d_with_indices.default),
        aten.max_pool2d.default: _max_pool_values(aten.max_pool2d_with_indices.default,
                                                  _max_pool_by_phases),
        aten.max_pool3d.default: _max_pool_values(aten.max_pool3d_with_indices.default),
        aten.max_pool2d_with_indices.default: _max_pool_with_indices(2),
        aten.max_pool3d_with_indices.default: _max_pool_with_indices(3),
        aten.avg_pool2d.default: _avg_pool2d,
        aten.gelu.default: _gelu,
        aten.isfinite.default: _isfinite,
        aten._unsafe_index.Tensor: _unsafe_index,
        aten.index.Tensor: _mask_index,
        aten.index_put.default: _mask_put,
        aten.masked_select.default: _masked_select,
        aten._unique2.default: _unique,
        aten.view.dtype: _view_other_width,
        aten.threshold_backward.default: _threshold_backward,
        aten.upsample_nearest1d.default: _upsample_nearest,
        aten.upsample_nearest2d.default: _upsample_nearest,
        aten.upsample_nearest3d.default: _upsample_nearest,
        aten.upsample_nearest1d.vec: _upsample_nearest_vec,
        aten.upsample_nearest2d.vec: _upsample_nearest_vec,
        aten.upsample_nearest3d.vec: _upsample_nearest_vec,
        aten.upsample_linear1d.default: _upsample_linear,
        aten.upsample_bilinear2d.default: _upsample_linear,
        aten.upsample_trilinear3d.default: _upsample_linear,
        aten.upsample_linear1d.vec: _upsample_linear_vec,
        aten.upsample_bilinear2d.vec: _upsample_linear_vec,
        aten.upsample_trilinear3d.vec: _upsample_linear_vec,
        aten.kthvalue.default: _kthvalue,
        aten.multinomial.default: _multinomial,
        aten.normal.Tensor_float: _normal,
        aten.normal.float_Tensor: _normal,
        aten.normal.Tensor_Tensor: _normal,
        aten.scaled_dot_product_attention.default: _sdpa,
        aten._softmax.default: _softmax,
        aten.fmod.Scalar: _fmod_scalar,
        aten.copysign.Scalar: _copysign_scalar,
        torch.ops.prims.prod.default: _prims_prod,
        aten.clamp.default: _clamp,
        aten.conv_tbc.default: _conv_tbc,
        aten.rms_norm.default: _rms_norm,
        aten.mm.default: _integer_mm,
        aten._int_mm.default: _int_mm,
        aten._scaled_mm.default: _scaled_mm,
        aten.pow.Tensor_Tensor: _pow_integers,
        aten.__rshift__.Tensor: _shift(aten.bitwise_right_shift.Tensor),
        aten.__lshift__.Tensor: _shift(aten.bitwise_left_shift.Tensor),
        aten.scatter_reduce.two: _scatter_reduce,
        aten.split_with_sizes.default: _split_with_sizes,
    }
