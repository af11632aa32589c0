"""fence-reductions: a reduction that IREE's SPIR-V code gets wrong when fused gets its own dispatch.

IREE 3.13's SPIR-V code generation miscomputes a dispatch that fuses a reduction with the op
that consumes it in four cases, all silent wrong answers found by lowerkit's fuzzer:

* the reduced dim is not the innermost (``x.sum(0, keepdim=True)``, ``x.amax(0)``, softmax
  over dim 0) and the consumer broadcasts it back: ``a / a.sum(0, keepdim=True)`` on a
  [3, 12] tensor gives ``inf`` on the portable Vulkan target, on [3, 70] also on
  `vulkan:llvmpipe`. Its inputs, computed inside the reduction's dispatch, were wrong too;
* the result is read transposed (through reshapes, a ``linalg.transpose`` or a permuted
  indexing map): ``a.amax(-1, keepdim=True).permute(3, 1, 2, 0) * a`` on a [3, 4, 3, 3]
  tensor had 16-70 of 108 elements wrong, in f32, int32 and int64, on both Vulkan targets.

* a consumer broadcasts the result over a new loop in front of one it keeps: the
  one-channel ``conv2d(a, w, padding="same").expand(2, 3, 3, 3)`` (fuzzer seed 2112 #955)
  wrote only the first row of each 3x3 plane on `vulkan:llvmpipe`, and
  ``a.sum(-1)[:, None] + b`` was 0.3-10 of the output's scale off on both Vulkan targets; a
  convolution that reduces nothing (one tap, one input channel a group) is such a broadcast
  once IREE rewrites it (`_broadcasting_conv`). New loops after the kept ones, as in softmax and layer norm, come
  out right.

* the reduction reduces only dims of one element (a layer norm or softmax over a dim of size
  1): fused, its consumer computes ``x - (x + 0)``, which the driver folds to 0 also for an
  infinite or NaN ``x`` (`_over_unit_dims`, campaign seed 2119, program 327).

On every target, CPU included, a fifth case: one op reads the result two ways, through two
operands or indexing maps (``s[:, None] - s[None, :]``, ``s + s.T - 2 * x @ x.T`` for a row
sum ``s``): IREE computed the fused reduction only for the rows of the consumer's tile, and
the other read saw zeros (fuzzer seed 20261222 #153, `_read_two_ways`).

Each such reduction alone compiles correctly, so its results (and, for outer reductions, its
inputs) go through ``util.optimization_barrier`` (a result that is only returned has no
consumer to fuse with, and is left alone), which dispatch formation does not fuse
across: one more dispatch and one more pass over the reduced tensor, and the right numbers.
Runs in IREE's MLIR build, on linalg on tensors: in full for Vulkan targets, for the
multi-result and read-two-ways cases on the others (`fence_for_cpu`, `lowerkit.api`).
"""

from __future__ import annotations

import math
from typing import Any

from ..ir import Build
from ._linalg import NAMED_REDUCTIONS, reduces, reduction_loops
from ._source_fence import LEAVES, barrier, fence_value

NAME = "fence-reductions"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles




def _outer_reduction(kinds: list[bool]) -> bool:
    """A reduction loop outside a parallel one."""
    return any(kinds) and not all(kinds[kinds.index(True):])


_RESHAPES = {"tensor.expand_shape", "tensor.collapse_shape"}


def _permuted(map_: Any, ir: Any) -> bool:
    """An indexing map whose dims, broadcast ones left out, are not in increasing order."""
    dims = [e.position for e in map_.results if isinstance(e, ir.AffineDimExpr)]
    return dims != sorted(dims)


def _read_transposed(value: Any, ir: Any, depth: int = 0) -> bool:
    """Whether some user reads ``value`` in another dim order, directly or after reshapes and
    elementwise ops that dispatch formation fuses with it (``(a.amax(-1) ** 2).permute(...)``
    was as wrong as without the square)."""
    if depth > 6:
        return False
    for use in value.uses:
        user = use.owner
        if user.name in _RESHAPES:
            if _read_transposed(user.results[0], ir, depth + 1):
                return True
        elif user.name == "linalg.transpose":
            return True
        elif user.name == "linalg.generic" and use.operand_number < _inputs(user, ir):
            maps = ir.ArrayAttr(user.attributes["indexing_maps"])
            if _permuted(ir.AffineMapAttr(maps[use.operand_number]).value, ir):
                return True
            if not reduces(user) and any(
                    _read_transposed(r, ir, depth + 1) for r in user.results):
                return True
    return False


_MOVES = {"linalg.transpose", "linalg.broadcast"}


def _derived(value: Any, ir: Any, depth: int = 0) -> list[Any]:
    """``value`` and what dispatch formation fuses with it: its reshapes, transposes,
    broadcasts and the results of elementwise ops over it (transitively, a few levels)."""
    out = [value]
    if depth > 6:
        return out
    for use in value.uses:
        user = use.owner
        moved = user.name in _MOVES and use.operand_number == 0
        elementwise = (user.name == "linalg.generic" and use.operand_number < _inputs(user, ir)
                       and not reduces(user))
        if user.name in _RESHAPES or moved or elementwise:
            for r in user.results:
                out += _derived(r, ir, depth + 1)
    return out


def _broadcast_inward(value: Any, ir: Any) -> bool:
    """Whether ``value``, or what is fused with it (`_derived`), is read by a ``linalg.generic``
    that broadcasts it over a loop before one it keeps: ``conv(a).expand(2, 3, 3, 3)`` of a
    one-channel conv, ``a.sum(-1)[:, None] + b``, ``(a @ w).expand(3, m, n)``. New loops after
    the kept ones (softmax's and layer norm's broadcast back over the reduced dim) are fine."""
    for v in _derived(value, ir):
        for use in v.uses:
            user = use.owner
            if use.operand_number == 0 and _broadcasting_conv(user, ir):
                return True
            if user.name != "linalg.generic" or use.operand_number >= _inputs(user, ir):
                continue
            map_ = ir.AffineMapAttr(
                ir.ArrayAttr(user.attributes["indexing_maps"])[use.operand_number]).value
            kept = {e.position for e in map_.results if isinstance(e, ir.AffineDimExpr)}
            if kept and any(d not in kept for d in range(max(kept))):
                return True
    return False


def _broadcasting_conv(op: Any, ir: Any) -> bool:
    """A convolution that is a broadcast in disguise: every dim it reduces (its kernel's
    spatial dims, and input channels but in a depthwise one) of size 1, which IREE turns into
    a generic broadcasting its input over the output channels, a loop in front of the spatial
    ones it keeps: ``conv1d(conv1d(a, w5), w[3, 1, 1])`` was 2.7 of the output's scale off,
    and a grouped 1x1 conv of two outputs per input channel after a max pooling 1.1 (garbage
    in a smaller program), on the portable Vulkan target (fuzzer seed 2118). The filter's
    layout is the op name's last word (``fchw``, ``hwcf``, ``gfchw``, ``hwcm``...)."""
    named = op.name.startswith(("linalg.conv_", "linalg.depthwise_conv_"))
    if not named or len(op.operands) < 2:
        return False
    filter_type = op.operands[1].type
    if filter_type.typeid != ir.RankedTensorType.static_typeid:
        return False
    shape = ir.RankedTensorType(filter_type).shape
    layout = op.name.rsplit("_", 1)[-1]
    if len(layout) != len(shape):
        return False
    reduced = "dhw" if op.name.startswith("linalg.depthwise_conv_") else "cdhw"
    return all(size == 1 for letter, size in zip(layout, shape) if letter in reduced)


def _read_two_ways(value: Any, ir: Any) -> bool:
    """Whether one op reads ``value`` (or what is fused with it, `_derived`) through two
    different operands or indexing maps: ``s[:, None] - s[None, :]`` for ``s = x.sum(-1)``,
    the squared-distance ``s + s.T - 2 * x @ x.T``. Fused into that op, IREE 3.13 computes
    the reduction only for the rows of the consumer's tile along one of the two reads, and
    the other read sees zeros or garbage, on CPU (fuzzer seed 20261222 #153)."""
    derived = _derived(value, ir)
    for v in derived:
        for use in v.uses:
            user = use.owner
            if user.name != "linalg.generic" or use.operand_number >= _inputs(user, ir):
                continue
            maps = ir.ArrayAttr(user.attributes["indexing_maps"])
            reads = set()  # (which derived value, indexing map)
            for i, operand in enumerate(list(user.operands)[:_inputs(user, ir)]):
                which = next((k for k, d in enumerate(derived) if operand == d), None)
                if which is not None:
                    reads.add((which, str(maps[i])))
            if len(reads) > 1:
                return True
    return False


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


def _over_unit_dims(op: Any, ir: Any) -> bool:
    """Whether a reduction reduces only dims of one element (its result has as many elements
    as its largest input): ``x - x.mean(-1, keepdim=True)``, a layer norm, a softmax over a
    dim of size 1. Fused, its consumer computes ``x - (x + 0)``, which a Vulkan driver that
    assumes no infinity nor NaN (`keep-nan-self-subtract`) folds to 0: an infinite or NaN
    ``x`` gave 0 where eager gives NaN, and a softmax 1 (campaign seed 2119, program 327:
    ``layer_norm(hardswish(a / w), (1,))``, on both Vulkan targets). In its own dispatch it is
    read from memory, which no driver folds."""
    def elements(value: Any) -> int | None:
        if value.type.typeid != ir.RankedTensorType.static_typeid:
            return None
        tensor = ir.RankedTensorType(value.type)
        return math.prod(tensor.shape) if tensor.has_static_shape else None

    sizes = [elements(v) for v in list(op.operands)[:_inputs(op, ir)]]
    out = [elements(r) for r in op.results]
    if not sizes or None in sizes or None in out:
        return False
    return all(n == max(sizes) for n in out) and max(sizes) > 0


def fence(module_op: Any, storage_bits: "frozenset[int] | None" = None,
          cpu: bool = False) -> int:
    """Put a barrier after every reduction of the five kinds (and before an outer one), except
    on values the target could not store (``storage_bits``, all widths when None); returns
    how many. With ``cpu``, only after a reduction read two ways or a multi-result reduction
    read transposed, which is all that IREE's CPU path needs (see `fence_for_cpu`)."""
    ir = Build.of_object(module_op).ir
    bits = frozenset(storage_bits) if storage_bits is not None else frozenset((8, 16, 32, 64))
    found = []

    def visit(op):
        kinds = reduction_loops(op)
        if not cpu and op.name.startswith(NAMED_REDUCTIONS):
            if any(_broadcast_inward(r, ir) for r in op.results):
                found.append((op, False))
        elif not cpu and _outer_reduction(kinds):
            found.append((op, True))
        elif any(kinds) and (
                (not cpu or len(op.results) > 1) and any(_read_transposed(r, ir) for r in op.results)
                or not cpu and any(_broadcast_inward(r, ir) for r in op.results)
                or not cpu and _over_unit_dims(op, ir)
                or any(_read_two_ways(r, ir) for r in op.results)):
            found.append((op, False))
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    fenced = 0
    for op, outer in found:
        # an outer reduction's inputs too: computed into its dispatch (a strided slice of a
        # broadcast `or` of bools), they came back wrong on vulkan:llvmpipe (seed 20261127 #1310)
        for i, operand in enumerate(list(op.operands)[:_inputs(op, ir)] if outer else []):
            producer = getattr(operand.owner, "operation", operand.owner)  # OpView or op
            if not isinstance(producer, ir.Operation) or producer.name in LEAVES \
                    or _unstorable(operand.type, ir, bits):
                continue
            op.operands[i] = barrier(operand, ir.InsertionPoint(op), op.location)[0]
            fenced += 1
        for result in op.results:
            # A result only returned has no consumer to be fused with. Fenced anyway, its
            # barrier cost a bool reduction returned beside it its value on the portable
            # Vulkan target ((b.any(0), a.amax(0)): False for True; fuzzer seed 20261221 #571).
            if all(use.owner.name == "func.return" for use in result.uses) \
                    or _unstorable(result.type, ir, bits):
                continue
            fence_value(result, op)
            fenced += 1
    return fenced


def fence_for_cpu(module_op: Any) -> int:
    """On every target: reductions read two ways (`_read_two_ways`), and this: IREE 3.13's
    global optimization moved the transpose of an argmax
    (a reduction yielding the max and its index) into the reduction and dropped one of its
    two outputs, an iree-compile verifier error ("expected number of yield values (2) to
    match the number of inits") for ``b.argmax(-2, keepdim=True).transpose(0, 2)`` (fuzzer
    seed 20261212 #421). A barrier after such a reduction keeps the transpose out of it."""
    return fence(module_op, cpu=True)


def run(module_op: Any, pass_: Any = None) -> None:
    fence(module_op)
