"""fence-pad-sources: a padded tensor computed by another op is padded in a dispatch of its own.

IREE 3.13's SPIR-V code for a ``tensor.pad`` fused with the op that computes its source gives
wrong numbers when the padding is wide: ``F.conv2d(a.exp(), w, padding=2)`` on a [4, 2, 4, 4]
input with a 4x4 kernel was off by up to 63 on `vulkan:llvmpipe` (padding 1, or the pad of a
function argument, came out right; so did the portable target). Found by lowerkit's fuzzer
(seed 20261222, programs 630-631: a softmax over dim -2 feeding such a convolution).

The source of every ``tensor.pad`` that an op computes goes through
``util.optimization_barrier``, which dispatch formation does not fuse across: the producer
writes its result, and the pad (fused with its consumer, as before) reads it.
Runs in IREE's MLIR build, on linalg on tensors, for Vulkan targets (`lowerkit.api`).
"""

from __future__ import annotations

from typing import Any

NAME = "fence-pad-sources"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles

# producers that compute nothing: a pad of these was right
_LEAVES = {"arith.constant", "util.optimization_barrier", "tensor.empty"}


def fence(module_op: Any) -> int:
    """Put a barrier between each ``tensor.pad`` and the op computing its source; returns how
    many."""
    import importlib

    ir = importlib.import_module(type(module_op).__module__)
    pads = []

    def visit(op):
        if op.name == "tensor.pad":
            pads.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    fenced = 0
    for pad in pads:
        source = pad.operands[0]
        producer = getattr(source.owner, "operation", source.owner)  # OpView or op
        if not isinstance(producer, ir.Operation) or producer.name in _LEAVES:
            continue  # a block argument (the function's input) or nothing computed
        with ir.InsertionPoint(pad), pad.location:
            barrier = ir.Operation.create("util.optimization_barrier",
                                          results=[source.type], operands=[source])
        pad.operands[0] = barrier.results[0]
        fenced += 1
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
