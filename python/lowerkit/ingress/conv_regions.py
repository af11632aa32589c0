"""Which kernel taps of a convolution read its input and which read only padding, per output
region.

A dilated convolution over a small map reads mostly padding: DeepLabV3's atrous head runs
3x3 kernels at rates 12, 24 and 36 over a 33x33 map, where at rate 36 every tap but the
centre reads only zeros. Along each spatial dim the output splits into intervals over which
the same taps reach the input; each region (a product of intervals) is then a convolution
of its taps alone over a crop of the input, with no padding (`decompositions._conv_by_regions`).
The rewrite is exact: the taps it drops multiply zeros.
"""

from __future__ import annotations

import math
from typing import NamedTuple

# The share of a convolution's tap reads that must land in padding before its output is
# split into regions. A 3x3 "same" convolution over a 7x7 map reads 18 % padding; splitting
# it would add dispatches for little. DeepLabV3's rates read 43-89 %.
MIN_PADDING_SHARE = 0.25
# Regions a convolution may split into (intervals multiplied over its spatial dims): a 3x3
# kernel's 2-D output has at most 9. A "same" 5x5 one over an 8x8 map reads 28 % padding
# but would split into 25 small convolutions, and is left whole.
MAX_REGIONS = 9


class Interval(NamedTuple):
    """Outputs ``[start, stop)`` along one dim, each reading the input through taps
    ``[first_tap, last_tap]`` (none where ``first_tap > last_tap``)."""

    start: int
    stop: int
    first_tap: int
    last_tap: int

    @property
    def taps(self) -> int:
        return max(0, self.last_tap - self.first_tap + 1)

    def crop(self, stride: int, padding: int, dilation: int) -> tuple[int, int]:
        """The input ``[begin, end)`` this interval's taps read (no padding in it)."""
        begin = self.start * stride - padding + dilation * self.first_tap
        end = (self.stop - 1) * stride - padding + dilation * self.last_tap + 1
        return begin, end


def intervals(size: int, kernel: int, stride: int, padding: int, dilation: int,
              out: int) -> list[Interval]:
    """One dim's output positions grouped, in order, by the taps that read the input there."""
    found: list[Interval] = []
    for o in range(out):
        base = o * stride - padding  # where tap 0 reads
        first = (-base + dilation - 1) // dilation if base < 0 else 0  # ceil(-base / dilation)
        last = min(kernel - 1, (size - 1 - base) // dilation) if base <= size - 1 else -1
        if first > last:
            first, last = 0, -1
        if found and (found[-1].first_tap, found[-1].last_tap) == (first, last):
            found[-1] = found[-1]._replace(stop=o + 1)
        else:
            found.append(Interval(o, o + 1, first, last))
    return found


def padding_share(per_dim: list[list[Interval]], kernel: list[int]) -> float:
    """The share of the convolution's (output position, tap) reads that land in padding."""
    read = math.prod(sum((i.stop - i.start) * i.taps for i in dim) for dim in per_dim)
    every = math.prod((dim[-1].stop - dim[0].start) * k for dim, k in zip(per_dim, kernel))
    return 1.0 - read / every if every else 0.0


def worth_splitting(per_dim: list[list[Interval]], kernel: list[int]) -> bool:
    """Whether splitting the output into regions drops enough padding reads to pay."""
    regions = math.prod(len(dim) for dim in per_dim)
    return regions <= MAX_REGIONS and padding_share(per_dim, kernel) >= MIN_PADDING_SHARE
