"""fence-gathered-slices: a strided slice that a gather reads is written to memory first.

A slice is strided here when it does not read one contiguous run of its source (`contiguous`),
whether by a step or by skipping part of an inner dim.

IREE 3.13's llvm-cpu backend cannot compile a dispatch that fuses a strided
``tensor.extract_slice`` into a ``linalg.generic`` reading it by computed indices
(``tensor.extract`` in its body: nearest and adaptive-pool gathers, ``index_select``):
"LLVM Translation failed for operation: builtin.unrealized_conversion_cast" (an ``i64`` to
``index`` cast left over), on every rung of the compile ladder and every x86 CPU. Found by
lowerkit's fuzzer: ``F.interpolate(a[:, :, ::3], scale_factor=2, mode='nearest')`` (campaign
seed 2111, programs 51-53 on ``cpu``, through a 1-wide ``avg_pool1d`` with stride 3) and
``F.adaptive_max_pool1d(F.max_pool1d(b, 1, stride=2), 7)`` (CI sweep, seed 569).

The slice's result (or the elementwise op's that converts it: ``a.half()[:, :, ::3]`` is read
as ``f32``) goes through ``util.optimization_barrier`` before the gather reads it: dispatch
formation does not fuse across it, so the slice becomes a dispatch of its own and the gather
reads its result (fencing the slice's *source* does not help: the same dispatch still
forms). One more small dispatch, only where a gather reads a strided slice.

On Vulkan (`fence_computed`) a gather also reads a pooling's (convolution's, contraction's,
reduction's) result from memory: fused into the gather's dispatch, IREE 3.13's SPIR-V code for
``torch.index_select(F.max_pool1d(a, 2, stride=1), 0, i)`` on a [1, 3, 16] input read the
second half of the last channel from the wrong place (up to 2e3 times the output's scale off in
float16, on `vulkan:llvmpipe` and the portable target: campaign seed 2111, program 109), a
silent wrong answer; an elementwise producer was right. On Vulkan, too, a gather's result that
a reduction reads is written to memory before the reduction reads it (`_reduced_later`: fused,
it was wrong on `vulkan:llvmpipe`). Runs in IREE's MLIR build, on linalg on tensors, for every
target (`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

from typing import Any

from ._linalg import NAMED_REDUCTIONS, reduces
from ._source_fence import LEAVES, barrier, contiguous, fence_result, ir_of, ops_where

NAME = "fence-gathered-slices"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles
_RESHAPES = frozenset({"tensor.expand_shape", "tensor.collapse_shape", "tensor.cast"})


def _producer(value: Any, ir: Any):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else getattr(owner, "operation", owner)


def _strided_slice_under(value: Any, ir: Any, depth: int = 0) -> bool:
    """Whether ``value`` is a strided slice, maybe reshaped or converted by elementwise ops
    (which fuse with it: ``a.half()[:, :, ::3].float()``)."""
    op = _producer(value, ir)
    if op is None or depth > 8:
        return False
    if op.name in _RESHAPES:
        return _strided_slice_under(op.operands[0], ir, depth + 1)
    if op.name == "tensor.extract_slice":
        return not contiguous(op, ir)
    if op.name == "linalg.generic" and not reduces(op):
        n_in = len(op.operands) - len(op.results)
        return any(_strided_slice_under(v, ir, depth + 1) for v in list(op.operands)[:n_in])
    return False


def _windowed_under(value: Any, ir: Any) -> bool:
    """Whether ``value`` is computed by an op that is not elementwise (a pooling, convolution,
    contraction or reduction), maybe reshaped."""
    op = _producer(value, ir)
    while op is not None and op.name in _RESHAPES:
        op = _producer(op.operands[0], ir)
    if op is None or op.name in LEAVES or op.name == "tensor.extract_slice":
        return False
    if op.name == "linalg.generic":
        return reduces(op)
    return op.name.startswith("linalg.")


def fence_computed(module_op: Any) -> int:
    """`fence` for Vulkan: also a gather's source that a pooling, convolution, contraction or
    reduction computes, and a gather's result that a reduction reads (`_reduced_later`)."""
    ir = ir_of(module_op)
    fenced = fence(module_op, lambda v, ir: _strided_slice_under(v, ir) or _windowed_under(v, ir))
    gathers = ops_where(module_op, lambda op: op.name == "linalg.generic"
                        and op.parent.name != "linalg.generic" and not reduces(op)
                        and ops_where(op, lambda e: e.name == "tensor.extract"))
    for gather in gathers:
        if _reduced_later(gather.results[0], ir) and fence_result(gather):
            fenced += 1
    return fenced


def _reduced_later(value: Any, ir: Any, depth: int = 0) -> bool:
    """Whether a reduction reads ``value``, directly or through reshapes and elementwise ops.
    Fused into one dispatch with such a reduction, a gather came out wrong on
    `vulkan:llvmpipe`: ``F.group_norm(a.index_select(2, i) + w.float(), 4)`` of a [1, 16, 2]
    ``a`` and a float16 ``w`` was 1.7 of the output's scale off, and the linear interpolation
    of campaign seed 2114's programs 1348 and 1352 the same way; written to memory first, right."""
    if depth > 8:
        return False
    for use in value.uses:
        user = getattr(use.owner, "operation", use.owner)
        if reduces(user) or user.name.startswith(NAMED_REDUCTIONS):
            return True
        if (user.name in _RESHAPES or user.name == "linalg.generic") and \
                any(_reduced_later(r, ir, depth + 1) for r in user.results):
            return True
    return False


def fence(module_op: Any, wanted: Any = None) -> int:
    """Put a barrier between each strided slice (or each source ``wanted(value, ir)`` picks)
    and the ``linalg.generic`` that gathers from it; returns how many."""
    wanted = wanted or _strided_slice_under
    ir = ir_of(module_op)
    generics = ops_where(module_op, lambda op: op.name == "linalg.generic")
    fenced = 0
    for generic in generics:
        extracts = ops_where(generic, lambda op: op.name == "tensor.extract")
        barriers: list = []  # (slice, its barrier)
        for extract in extracts:
            source = extract.operands[0]
            producer = _producer(source, ir)
            if producer is None or producer.parent.name == "linalg.generic" \
                    or not wanted(source, ir):
                continue  # a function argument, a value of the body, or no strided slice
            fenced_source = next((b for s, b in barriers if s == source), None)
            if fenced_source is None:
                fenced_source = barrier(source, ir.InsertionPoint(generic), generic.location)[0]
                barriers.append((source, fenced_source))
                fenced += 1
            extract.operands[0] = fenced_source
    return fenced


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
