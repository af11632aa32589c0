"""fence-reduced-convolutions: a convolution's result that a reduction reads is written out
before the reduction (CPU), so that the two are not one dispatch.

A CNN's head is a 1x1 convolution, BatchNorm and an activation, then a global average pool.
IREE 3.13 fuses the pool's sum into the convolution's dispatch; on the data-tiled im2col path
that dispatch's tiles then overflowed IREE's 32 KiB stack limit (EfficientNet-V2-S's 256 ->
1280 head at 12x12: 48 KiB; MobileNetV2's 320 -> 1280 at 7x7), iree-compile rejected lowerkit's
fast configuration, and the whole program compiled on a slower rung of the ladder (without
im2col: EfficientNet-V2-S's every convolution). Kept apart, the head costs one more small
dispatch. Only reductions of a convolution's result are fenced: a transformer's LayerNorm
after its matmul keeps IREE's dispatches.
"""

from __future__ import annotations

from typing import Any

from ._linalg import reduces
from ._source_fence import COMPUTE_BARRIER, fence_source, ir_of, ops_where, produced_by

NAME = "fence-reduced-convolutions"
BUILD = "iree"  # `iree_tensor_ext.compute_barrier.start` / run on what IREE compiles
MAX_STEPS = 6  # ops between the convolution and the reduction (BatchNorm, activation, reshapes)


def from_convolution(value: Any, ir: Any, steps: int = MAX_STEPS) -> bool:
    """Whether ``value`` is a convolution's result, maybe reshaped or passed through elementwise
    ops (BatchNorm, an activation) that each read it as their first input."""
    return produced_by(value, ir, lambda op: op.name.startswith("linalg.conv_"), steps)


def fence(module_op: Any) -> int:
    """Put a barrier on the input of each reduction of a convolution's result; returns how many."""
    ir = ir_of(module_op)
    fenced = 0
    for op in ops_where(module_op, reduces):
        if from_convolution(op.operands[0], ir):
            fenced += fence_source(op, 0, COMPUTE_BARRIER)
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
