"""fence-pad-sources: a padded tensor computed by another op is padded in a dispatch of its own.

IREE 3.13's SPIR-V code for a ``tensor.pad`` fused with the op that computes its source gives
wrong numbers when the padding is wide: ``F.conv2d(a.exp(), w, padding=2)`` on a [4, 2, 4, 4]
input with a 4x4 kernel was off by up to 63 on `vulkan:llvmpipe` (padding 1, or the pad of a
function argument, came out right; so did the portable target). Found by lowerkit's fuzzer
(seed 20261222, programs 630-631: a softmax over dim -2 feeding such a convolution).

Windows sliced out of a padded tensor were wrong on both Vulkan targets, also for a pad of a
function argument: a 1-D convolution (taken apart per kernel tap, each tap a slice of the
padded input) after ``F.pad(x, (4, 0))``, as the zoo's TCN does, was 0.04 of the output's
scale off. Such a pad, and each window sliced out of it, is written to memory first.

The source of every ``tensor.pad`` that an op computes goes through
``util.optimization_barrier``, which dispatch formation does not fuse across: the producer
writes its result, and the pad (fused with its consumer, as before) reads it.
Runs in IREE's MLIR build, on linalg on tensors, for Vulkan targets (`lowerkit.api`).
"""

from __future__ import annotations

from typing import Any

from ._source_fence import fence_result, fence_source, ops_where

NAME = "fence-pad-sources"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles


def fence(module_op: Any) -> int:
    """Put a barrier between each ``tensor.pad`` and the op computing its source, and after a
    pad and each window sliced out of it; returns how many."""
    pads = ops_where(module_op, lambda op: op.name == "tensor.pad")
    fenced = sum(fence_source(pad) for pad in pads)
    for pad in pads:
        slices = [use.owner for use in pad.results[0].uses
                  if use.owner.name == "tensor.extract_slice"]
        if slices:
            fenced += fence_result(pad)
            fenced += sum(fence_result(s) for s in slices)
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
