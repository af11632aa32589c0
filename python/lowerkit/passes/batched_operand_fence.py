"""fence-batched-matmul-operands: a batched matmul reads its computed operands from memory (CPU).

IREE 3.13's CPU data tiling (``--iree-opt-data-tiling``, its DispatchCreation path) packs a
batched matmul's operand in the dispatch that computes it. When that dispatch collapses the
batch and row loops into one, the pack is built on the collapsed [B*M, K] shape, padded to the
tile across batch boundaries instead of per batch, and every batch after the first reads other
rows: a silent wrong answer whenever M is no multiple of the tile. ``linear(x) @ k.mT``,
``(x * x[..., :1]) @ k.mT``, a broadcast, an interpolate or an embedding as the operand, with
5 rows a batch, came out 0.3-1.7 of the output's scale off. Found by lowerkit's fuzzer
(campaign seed 2111, programs 1216-1219 on ``cpu``: an interpolated query into a masked
attention's math form). An operand that is a function argument, or computed by an op IREE
keeps apart, was right; so was every shape with rows a multiple of 16.

IREE's GlobalOptimization data-tiling path packs these right but got a zoo model wrong
(``lstm_bidirectional``, 1.6 of the scale), so the CPU keeps the default path, and each
computed operand of a batched contraction whose dims past the batch are not all multiples of 16
(the widest x86 tile, so that any tile divides them) goes through
``util.optimization_barrier``: it is written to memory by its own dispatch and packed from there
in IREE's encoding dispatch. One more pass over the operand, only for such shapes (static
ones: see `needs_fence`).
"""

from __future__ import annotations

from typing import Any

from ._linalg import reduces
from ._source_fence import fence_source, ir_of, ops_where

NAME = "fence-batched-matmul-operands"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles
WIDEST_TILE = 16  # IREE's largest x86 data tile along a row or reduction dim (f32, AVX-512)


def is_batched_contraction(op: Any, ir: Any) -> bool:
    """A named batch matmul, or an einsum-like generic (a reduction loop, two inputs or more)
    whose result has three dims or more: what data tiling packs per batch."""
    if op.name == "linalg.generic":
        n_in = len(op.operands) - len(op.results)
        return (n_in >= 2 and reduces(op)
                and ir.RankedTensorType(op.results[0].type).rank >= 3)
    return op.name.startswith("linalg.batch_") and "mat" in op.name


def needs_fence(value: Any, ir: Any) -> bool:
    """Whether ``value``'s shape is static with a dim past the first (the batch) that is no
    multiple of the widest tile. A dynamic shape is left alone: its dispatches, formed
    without aggressive fusion (`iree.compiler.dynamic_shape_flags`), packed right."""
    tensor = ir.RankedTensorType(value.type)
    return tensor.has_static_shape and any(d % WIDEST_TILE for d in tensor.shape[1:])


def fence(module_op: Any) -> int:
    """Put a barrier on each computed operand of a batched contraction that `needs_fence`;
    returns how many."""
    ir = ir_of(module_op)
    fenced = 0
    for op in ops_where(module_op, lambda o: is_batched_contraction(o, ir)):
        n_in = len(op.operands) - len(op.results)
        for index in range(n_in):
            if needs_fence(op.operands[index], ir):
                fenced += fence_source(op, index)  # arguments and constants are left alone
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
