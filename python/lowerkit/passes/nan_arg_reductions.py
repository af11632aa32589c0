"""keep-nan-arg-reductions: ``argmax``/``argmin`` of a row holding a NaN is the first NaN.

Eager treats NaN as greater (``argmax``) and less (``argmin``) than every number, so the index
of a row's first NaN is the answer, as it is for the indices of ``max(dim)``/``min(dim)``.
torch-mlir (20261001) lowers them all to one reduction that keeps ``maximumf(x, best)`` as the
value and moves the index where ``x > best`` (``<`` for min), an ordered compare that a NaN
never passes: ``argmax([inf, -inf, 0.7, nan])`` was 0 where eager gives 3, on every target.

The index now also moves where ``x`` is NaN and the best so far is not. The NaN tests are
integer tests of the bits for f32 and f16 (which a Vulkan driver cannot fold away) and an
unordered compare otherwise. Runs on linalg on tensors, after torch-mlir's lowering.
"""

from __future__ import annotations

from typing import Any

from ._float_bits import UGT, exponent_test
from ._source_fence import ir_of, ops_where

NAME = "keep-nan-arg-reductions"
_PAIRS = {2: "arith.maximumf", 4: "arith.minimumf"}  # cmpf ogt / olt -> the value it tracks
_UNO = 14


def _tracked(module_op: Any) -> list:
    """Every compare of a candidate with the best so far of a max or min reduction: a
    ``cmpf ogt`` (``olt``) in a ``linalg.generic``'s body that also keeps ``maximumf``
    (``minimumf``) of the same two values, and whose result a select reads. Found by walking
    ops by name: reading a body's ops one by one makes a Python object of each op's class,
    and the ``linalg.yield`` among them loaded torch-mlir's linalg package (0.06 s of a
    process's first compile, in a program without any arg reduction)."""
    found = []
    for generic in ops_where(module_op, lambda op: op.name == "linalg.generic"):
        body = ops_where(generic, lambda op: op.name in ("arith.cmpf", *_PAIRS.values()))
        kept = [(op.name, op.block, list(op.operands)) for op in body if op.name != "arith.cmpf"]
        for cmp in body:
            if cmp.name != "arith.cmpf":
                continue
            predicate = int(str(cmp.attributes["predicate"]).split(":")[0])
            value = _PAIRS.get(predicate)
            operands = list(cmp.operands)
            if (value is not None and (value, cmp.block, operands) in kept
                    and any(use.owner.name == "arith.select" for use in cmp.results[0].uses)):
                found.append(cmp)
    return found


def _is_nan(x: Any) -> Any:
    ir = ir_of(x)
    if str(x.type) in ("f32", "f16"):
        return exponent_test(x, UGT)
    i1, i64 = ir.IntegerType.get_signless(1, x.type.context), ir.IntegerType.get_signless(64)
    return ir.Operation.create("arith.cmpf", results=[i1], operands=[x, x],
                               attributes={"predicate": ir.IntegerAttr.get(i64, _UNO)}).results[0]


def keep(module_op: Any) -> int:
    """Rewrite every tracked compare; returns how many."""
    ir = ir_of(module_op)
    found = _tracked(module_op)
    for cmp in found:
        moved = cmp.results[0]
        readers = [(use.owner, use.operand_number) for use in moved.uses]
        with ir.InsertionPoint.after(cmp), cmp.location:
            i1 = moved.type

            def create(name, operands):
                return ir.Operation.create(name, results=[i1], operands=operands).results[0]

            true = ir.Operation.create("arith.constant", results=[i1],
                                       attributes={"value": ir.IntegerAttr.get(i1, 1)}).results[0]
            first_nan = create("arith.andi", [_is_nan(cmp.operands[0]),
                                              create("arith.xori", [_is_nan(cmp.operands[1]), true])])
            either = create("arith.ori", [moved, first_nan])
        for reader, index in readers:
            reader.operands[index] = either
    return len(found)


def run(module_op: Any, pass_: Any = None) -> None:
    keep(module_op)
