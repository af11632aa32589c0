"""What the source fences share: find ops, and read an op's source through a barrier.

IREE fuses a computed tensor into the dispatch of the op that reads it; where its SPIR-V code for
such a fusion is wrong (`fence-pad-sources`, `fence-strided-slices`), the fix is to make the
reader's source a ``util.optimization_barrier``, which dispatch formation does not fuse across.
Works in IREE's MLIR build (the only one with the ``util`` dialect), whichever module it is given.
"""

from __future__ import annotations

from typing import Any, Callable

from ..ir import Build

# producers that compute nothing: fusing these was never wrong
LEAVES = frozenset({"arith.constant", "util.optimization_barrier", "tensor.empty"})


def ir_of(op: Any) -> Any:
    """The ``ir`` module of the MLIR build that ``op`` belongs to."""
    return Build.of_object(op).ir


def ops_where(module_op: Any, wanted: Callable[[Any], bool]) -> list:
    """Every op under ``module_op`` (in walk order) for which ``wanted(op)`` holds; collected
    first, so that callers may rewrite around them."""
    ir = ir_of(module_op)
    found = []

    def visit(op):
        if wanted(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found


def fence_source(op: Any, index: int = 0) -> bool:
    """Make operand ``index`` of ``op`` go through a barrier, if an op computes it (not a
    function argument nor one of `LEAVES`); returns whether it did."""
    ir = ir_of(op)
    source = op.operands[index]
    producer = getattr(source.owner, "operation", source.owner)  # OpView or op
    if not isinstance(producer, ir.Operation) or producer.name in LEAVES:
        return False
    with ir.InsertionPoint(op), op.location:
        barrier = ir.Operation.create("util.optimization_barrier",
                                      results=[source.type], operands=[source])
    op.operands[index] = barrier.results[0]
    return True


def fence_result(op: Any) -> bool:
    """Make every reader of ``op``'s (single) result read it through a barrier, so that ``op``
    writes it in a dispatch of its own; returns whether it had readers."""
    ir = ir_of(op)
    result = op.results[0]
    if not list(result.uses):
        return False
    with ir.InsertionPoint.after(op), op.location:
        barrier = ir.Operation.create("util.optimization_barrier",
                                      results=[result.type], operands=[result])
    result.replace_all_uses_except(barrier.results[0], barrier)
    return True
