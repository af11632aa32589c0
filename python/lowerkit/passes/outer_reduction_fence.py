"""fence-outer-reductions: the result of a reduction over an outer dim gets its own dispatch.

IREE 3.13's SPIR-V code generation miscomputes a dispatch that fuses a reduction whose reduced
dim is not the innermost (``x.sum(0, keepdim=True)``, ``x.amax(0)``, softmax over dim 0) with
the broadcasting elementwise op that consumes it: ``a / a.sum(0, keepdim=True)`` on a [3, 12]
tensor gives ``inf`` on IREE's portable Vulkan target, on a [3, 70] or [2, 130] one also on
`vulkan:llvmpipe`. Silent wrong answers, found by lowerkit's fuzzer (a float16 softmax over
dim 0). Each such reduction alone compiles correctly, so its results go through
``util.optimization_barrier``, which dispatch formation does not fuse across: one more
dispatch and one more pass over the reduced tensor, and the right numbers. Its inputs are
fenced off the same way: computed inside the reduction's dispatch they were wrong too.
Runs in IREE's MLIR build, on linalg on tensors, for Vulkan targets (`lowerkit.api`).
"""

from __future__ import annotations

from typing import Any

NAME = "fence-outer-reductions"


def _outer_reduction(op: Any, ir: Any) -> bool:
    """A ``linalg.generic`` with a reduction loop outside a parallel one."""
    if op.name != "linalg.generic" or "iterator_types" not in op.attributes:
        return False
    kinds = ["reduction" in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    return any(kinds) and not all(kinds[kinds.index(True):])


# producers that are not computations: nothing of theirs is fused into the reduction
_LEAVES = {"arith.constant", "util.optimization_barrier", "tensor.empty"}


def _inputs(op: Any, ir: Any) -> int:
    """How many of a ``linalg.generic``'s operands are ``ins`` (the rest are ``outs``)."""
    sizes = op.attributes["operandSegmentSizes"]
    return int(ir.DenseI32ArrayAttr(sizes)[0])


def _unstorable(type_: Any, ir: Any, storage_bits: frozenset[int]) -> bool:
    """An integer tensor whose element width the target cannot store: materialised between
    two dispatches (as a barrier does), IREE 3.13 drops its last bytes on such a target."""
    if type_.typeid != ir.RankedTensorType.static_typeid:
        return False
    element = str(ir.RankedTensorType(type_).element_type)
    if element == "i1":
        return 8 not in storage_bits
    return element in ("i8", "i16") and int(element[1:]) not in storage_bits


def fence(module_op: Any, storage_bits: "frozenset[int] | None" = None) -> int:
    """Put a barrier between every outer reduction and the ops that compute its inputs or
    use its results, except for values the target could not store (``storage_bits``, all
    widths when None); returns how many."""
    import importlib

    ir = importlib.import_module(type(module_op).__module__)
    bits = frozenset(storage_bits) if storage_bits is not None else frozenset((8, 16, 32, 64))
    found = []

    def visit(op):
        if _outer_reduction(op, ir):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    fenced = 0
    for op in found:
        # its inputs too: computed into the reduction's dispatch (a strided slice of a
        # broadcast `or` of bools), they came back wrong on vulkan:llvmpipe (seed 20261127 #1310)
        for i, operand in enumerate(list(op.operands)[:_inputs(op, ir)]):
            producer = operand.owner
            if not isinstance(producer, ir.Operation) and hasattr(producer, "operation"):
                producer = producer.operation
            if not isinstance(producer, ir.Operation) or producer.name in _LEAVES \
                    or _unstorable(operand.type, ir, bits):
                continue
            with ir.InsertionPoint(op), op.location:
                barrier = ir.Operation.create("util.optimization_barrier",
                                              results=[operand.type], operands=[operand])
            op.operands[i] = barrier.results[0]
            fenced += 1
        for result in op.results:
            if not any(True for _ in result.uses) or _unstorable(result.type, ir, bits):
                continue
            with ir.InsertionPoint.after(op), op.location:
                barrier = ir.Operation.create("util.optimization_barrier",
                                              results=[result.type], operands=[result])
            result.replace_all_uses_except(barrier.results[0], barrier)
            fenced += 1
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
