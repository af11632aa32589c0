"""fence-transposed-matmul-results: a matmul's result that is transposed is written out before
the transpose (CPU), so that IREE keeps the matmul a plain one.

IREE 3.13's global optimization moves a transpose of a matmul's result (through the bias add
and the reshape between) into the matmul, which becomes a contraction with a permuted result.
Data tiling's microkernel path does not take that form: ``nn.MultiheadAttention``'s packed
in-projection, its ``[197, 2304]`` result viewed as ``[197, 3, 768]`` and transposed to
``[3, 197, 768]``, became ``matmul_like_3x197x768x768`` at about 51 GFLOP/s, where the MLP's
plain matmuls of the same block ran near 200 (``lowerkit profile vit_b_stack``). With the
transpose kept apart it is its own small copy dispatch. Turning the propagation off for whole
compiles (``--iree-global-opt-propagate-transposes=false``) gave two ViT-B blocks 53 -> 37 ms
and a BERT-base layer 15.8 -> 12.4 ms a call, but ResNet-50 57 -> 79 ms, so only these
transposes are fenced.
"""

from __future__ import annotations

from typing import Any

from ._source_fence import COMPUTE_BARRIER, fence_source, ir_of, ops_where, produced_by

NAME = "fence-transposed-matmul-results"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles
MATMULS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matmul_transpose_a",
           "linalg.matmul_transpose_b", "linalg.batch_matmul_transpose_a",
           "linalg.batch_matmul_transpose_b")
MAX_STEPS = 6  # ops between the matmul and the transpose (bias add, reshapes)


def from_matmul(value: Any, ir: Any, steps: int = MAX_STEPS) -> bool:
    """Whether ``value`` is a matmul's result, maybe reshaped or passed through elementwise ops
    (a bias add), each of which reads it as its first input."""
    return produced_by(value, ir, lambda op: op.name in MATMULS, steps)


def fence(module_op: Any) -> int:
    """Put a barrier on the input of each ``linalg.transpose`` of a matmul's result; returns how
    many."""
    ir = ir_of(module_op)
    fenced = 0
    for op in ops_where(module_op, lambda o: o.name == "linalg.transpose"):
        if from_matmul(op.operands[0], ir):
            fenced += fence_source(op, 0, COMPUTE_BARRIER)
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
