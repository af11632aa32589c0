"""What the source fences share: find ops, and read an op's source through a barrier.

IREE fuses a computed tensor into the dispatch of the op that reads it; where its SPIR-V code for
such a fusion is wrong (`fence-pad-sources`, `fence-strided-slices`), the fix is to make the
reader's source a ``util.optimization_barrier``, which dispatch formation does not fuse across.
Works in IREE's MLIR build (the only one with the ``util`` dialect), whichever module it is given.
"""

from __future__ import annotations

from typing import Any, Callable

from ..ir import Build
from ._linalg import reduction_loops

# producers that compute nothing: fusing these was never wrong (a barrier, tied or not, is
# another fence's)
LEAVES = frozenset({"arith.constant", "util.optimization_barrier", "flow.tensor.tie_shape",
                    "iree_tensor_ext.compute_barrier.start",
                    "tensor.empty"})


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


# What a fence is made of. ``util.optimization_barrier`` also splits the stream's execution
# where it stands: IREE runs the dispatches before it, returns to the host and submits the
# rest, about a millisecond a barrier a call on these 2-core machines (two ViT-B blocks: 9
# command-buffer executions a call, 10 ms of a 41 ms call between them, `iree-profile
# statistics`). ``iree_tensor_ext.compute_barrier.start`` keeps dispatch formation from fusing
# across it as well, and is dropped once the dispatches are formed: one execution.
OPTIMIZATION_BARRIER = "util.optimization_barrier"
COMPUTE_BARRIER = "iree_tensor_ext.compute_barrier.start"


def barrier(value: Any, at: Any, location: Any,
            op: str = OPTIMIZATION_BARRIER) -> tuple[Any, list]:
    """A barrier ``op`` (`OPTIMIZATION_BARRIER` or `COMPUTE_BARRIER`) of ``value`` made at
    insertion point ``at``: the value to read instead, and the ops that still read ``value``
    itself. A dynamic tensor's dims must reach past the barrier: `COMPUTE_BARRIER` takes them
    as operands (without them the module does not verify), and `OPTIMIZATION_BARRIER`'s result
    is tied to them (``flow.tensor.tie_shape``), since IREE cannot see through it (an untied one
    failed iree-compile, "'tensor.dim' op unexpected during shape cleanup": torch-mlir's e2e
    CosineSimilarityModule_basic under `fence-reductions`)."""
    ir = ir_of(value.owner)
    with at, location:
        readers, dims = [], []
        tensor = (ir.RankedTensorType(value.type)
                  if value.type.typeid == ir.RankedTensorType.static_typeid else None)
        if tensor is not None and not tensor.has_static_shape:
            index = ir.IndexType.get()
            for i, n in enumerate(tensor.shape):
                if ir.ShapedType.is_dynamic_size(n):
                    c = ir.Operation.create("arith.constant", results=[index],
                                            attributes={"value": ir.IntegerAttr.get(index, i)})
                    dim = ir.Operation.create("tensor.dim", results=[index],
                                              operands=[value, c.results[0]])
                    readers.append(dim)
                    dims.append(dim.results[0])
        carries_dims = op == COMPUTE_BARRIER
        fenced = ir.Operation.create(op, results=[value.type],
                                     operands=[value, *(dims if carries_dims else [])])
        readers.append(fenced)
        if not dims or carries_dims:
            return fenced.results[0], readers
        tied = ir.Operation.create("flow.tensor.tie_shape", results=[value.type],
                                   operands=[fenced.results[0], *dims])
    return tied.results[0], readers


RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def produced_by(value: Any, ir: Any, source: Callable[[Any], bool], steps: int) -> bool:
    """Whether ``value`` is the result of an op ``source`` accepts, maybe reshaped or passed
    through elementwise ops (a bias add, BatchNorm, an activation) that each read it as their
    first input, with at most ``steps`` such ops between."""
    op = getattr(value.owner, "operation", value.owner)
    if not isinstance(op, ir.Operation) or steps < 0:
        return False
    if source(op):
        return True
    if op.name in RESHAPES:
        return produced_by(op.operands[0], ir, source, steps - 1)
    loops = reduction_loops(op)
    if op.name == "linalg.generic" and loops and not any(loops):
        n_in = len(op.operands) - len(op.results)
        return n_in >= 1 and produced_by(op.operands[0], ir, source, steps - 1)
    return False


def fence_source(op: Any, index: int = 0, barrier_op: str = OPTIMIZATION_BARRIER) -> bool:
    """Make operand ``index`` of ``op`` go through a barrier, if an op computes it (not a
    function argument nor one of `LEAVES`); returns whether it did."""
    ir = ir_of(op)
    source = op.operands[index]
    producer = getattr(source.owner, "operation", source.owner)  # OpView or op
    if not isinstance(producer, ir.Operation) or producer.name in LEAVES:
        return False
    op.operands[index] = barrier(source, ir.InsertionPoint(op), op.location, barrier_op)[0]
    return True


def fence_value(value: Any, after: Any) -> None:
    """Make every reader of ``value`` read it through a barrier made right after ``after``."""
    ir = ir_of(after)
    fenced, readers = barrier(value, ir.InsertionPoint.after(after), after.location)
    value.replace_all_uses_except(fenced, readers)


def fence_result(op: Any) -> bool:
    """Make every reader of ``op``'s (single) result read it through a barrier, so that ``op``
    writes it in a dispatch of its own; returns whether it had readers."""
    result = op.results[0]
    if not list(result.uses):
        return False
    fence_value(result, op)
    return True


def contiguous(slice_: Any, ir: Any) -> bool:
    """Whether a ``tensor.extract_slice`` reads one contiguous run of its source: unit strides,
    and inside its innermost partial dim every dim whole, outside it every dim of size 1. A
    slice with unit strides may still skip: ``[2, 32, 1, 1]`` of a ``[2, 32, 1, 2]`` tensor (a
    1-wide ``max_pool1d`` with stride 3 over 2 columns) reads every other element (campaign seed
    2113, programs 1346-1348: `fence-gathered-slices`), as does a crop of rows under a
    convolution (seed 2116, programs 1191-1194: `fence-strided-slices`)."""
    if any(s != 1 for s in ir.DenseI64ArrayAttr(slice_.attributes["static_strides"])):
        return False
    sizes = list(ir.DenseI64ArrayAttr(slice_.attributes["static_sizes"]))
    whole = ir.RankedTensorType(slice_.operands[0].type).shape
    if any(ir.ShapedType.is_dynamic_size(n) for n in sizes + list(whole)):
        return False  # not known: fenced, which costs one dispatch and is never wrong
    partial = [i for i, (n, w) in enumerate(zip(sizes, whole)) if n != w]
    return not partial or all(n == 1 for n in sizes[:partial[-1]])
