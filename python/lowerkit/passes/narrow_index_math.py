"""narrow-index-math: on a GPU without Int64, i64 math whose values provably fit is done in i32.

IREE's portable Vulkan target (`vp_android_baseline_2022`, ``compute = fp32|int32``) has no
Int64: IREE 3.13 emulates an ``i64`` as two ``i32`` words, which covers loads, stores, adds,
multiplies, compares and selects, so topk and argmax indices, gathers, embeddings and arange
compile there. It has no emulation for the rest: ``arith.remsi`` (torch's ``%``),
``arith.divsi`` and its kin (``//``), ``math.absi``; the compile fails ("failed to legalize
operation 'arith.remsi'", lowerkit's "the GPU has no Int64" error). ``topk(x, 3).indices % 4``
and ``a.clamp(-1, 2).abs()`` failed so, although every value involved is small.

This pass computes an interval for each integer value it can (constants, ``linalg.index`` of
a static loop, sign and zero extensions, add/sub/mul, min/max/clamp, select, ``%`` and ``//``,
and through tensors: ``linalg.generic`` results, fills, reshapes, slices, barriers, pads and
concatenations, and sum-like reductions, whose bound is the loop's trip count times the
summand's), and rewrites each such op whose operands and result all fit in i32 as
``extsi(op(trunci a, trunci b))``: the same value, computed in 32 bits. An op on values it
cannot bound (an int64 function input used as it is) is left alone and still gets the clear
error. Runs in IREE's MLIR build, on linalg on tensors, for targets without 64-bit storage
(`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..ir import Build
from ._linalg import reduces, reduction_loops

NAME = "narrow-index-math"
BUILD = "iree"

# i64 ops done in i32 where their values fit: those IREE 3.13 cannot emulate on SPIR-V without
# Int64 (%, //, abs), and the index arithmetic around them, so that a chain of them fused into
# one dispatch has no i64 left for IREE's vectorizer (a causal mask's ``arange(S) - arange(L)
# <= 0`` failed as an illegal ``vector.extract`` of ``vector<2xi64>``)
_NARROWABLE = frozenset({
    "arith.remsi", "arith.remui", "arith.divsi", "arith.divui", "arith.floordivsi",
    "arith.ceildivsi", "math.absi", "arith.addi", "arith.subi", "arith.muli", "arith.maxsi",
    "arith.minsi", "arith.select", "arith.cmpi", "arith.index_cast", "arith.index_castui"})
I32 = (-(2 ** 31), 2 ** 31 - 1)
_TENSOR_DIMS = re.compile(r"^tensor<((?:[0-9?]+x)*)\w+>$")
_SAME_VALUES = {"tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
                "tensor.cast", "util.optimization_barrier", "linalg.transpose",
                "linalg.broadcast", "tensor.extract", "tensor.reshape", "tensor.bitcast"}
_UNIONS = {"tensor.insert_slice", "tensor.concat"}


def _fits(r: tuple[int, int] | None, box: tuple[int, int] = I32) -> bool:
    return r is not None and box[0] <= r[0] and r[1] <= box[1]


def _clean(r):
    """None for an interval that arithmetic on infinite bounds made meaningless."""
    if r is None or any(isinstance(b, float) and math.isnan(b) for b in r):
        return None
    return r


def _union(*rs):
    if any(r is None for r in rs) or not rs:
        return None
    return min(r[0] for r in rs), max(r[1] for r in rs)


def _width(t: Any) -> int | None:
    text = str(t)
    if text == "index":
        return 64
    m = re.fullmatch(r"i(\d+)", text)
    return int(m.group(1)) if m else None


def _shape(value: Any) -> list[int | None] | None:
    m = _TENSOR_DIMS.match(str(value.type))
    if not m:
        return None
    return [None if d == "?" else int(d) for d in m.group(1).rstrip("x").split("x") if d]


def _op(value: Any, ir: Any):
    """The op that defines ``value``; None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return getattr(owner, "operation", owner)


class Ranges:
    """Intervals of integer values (scalars, and every element of a tensor); None: unknown."""

    def __init__(self, ir: Any):
        self.ir = ir
        self.tensors: dict = {}
        self.visiting: set = set()

    # -- tensors ------------------------------------------------------------------------------
    def tensor(self, value: Any):
        key = value
        if key in self.tensors:
            return self.tensors[key]
        if key in self.visiting:
            return None
        self.visiting.add(key)
        try:
            r = self._tensor(value)
        finally:
            self.visiting.discard(key)
        self.tensors[key] = r
        return r

    def _tensor(self, value: Any):
        ir = self.ir
        op = _op(value, ir)
        if op is None:
            return None  # a function argument: anything the user passes
        name = op.name
        if name == "arith.constant":
            return self._dense(op.attributes["value"])
        if name == "linalg.generic":
            index = list(op.results).index(value) if value in list(op.results) else None
            if index is None:
                return None
            return self.generic_results(op)[index]
        if name == "linalg.fill":
            return self.scalar(op.operands[0], None, {})
        if name in _SAME_VALUES:
            return self.tensor(op.operands[0])
        if name == "tensor.pad":  # the source's values and the padding value its body yields
            body = op.regions[0].blocks[0]
            return _union(self.tensor(op.operands[0]),
                          self.scalar(list(body.operations)[-1].operands[0], None, {}))
        if name in _UNIONS:
            ranges = [self.tensor(v) if _shape(v) is not None else self.scalar(v, None, {})
                      for v in op.operands if _shape(v) is not None or _width(v.type)]
            return _union(*ranges)
        return None

    def _dense(self, attr: Any):
        ir = self.ir
        try:
            dense = ir.DenseIntElementsAttr(attr)
        except (TypeError, ValueError):
            try:
                v = ir.IntegerAttr(attr).value
                return v, v
            except (TypeError, ValueError):
                return None
        if dense.is_splat:
            v = ir.IntegerAttr(dense.get_splat_value()).value
            return v, v
        if len(dense) > 1 << 16:
            return None
        values = [dense[i] for i in range(len(dense))]
        return (min(values), max(values)) if values else None

    # -- linalg.generic -------------------------------------------------------------------------
    def loop_sizes(self, op: Any) -> list[int | None]:
        """The static trip count of each loop of a ``linalg.generic`` (None: dynamic)."""
        ir = self.ir
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        sizes: list[int | None] = [None] * maps[0].n_dims if maps else []
        for operand, map_ in zip(op.operands, maps):
            shape = _shape(operand)
            if shape is None:
                continue
            for dim, expr in zip(shape, map_.results):
                if isinstance(expr, ir.AffineDimExpr) and dim is not None:
                    sizes[expr.position] = dim
        return sizes

    def generic_results(self, op: Any):
        """The range of each result of a ``linalg.generic``: its yields', with an output block
        argument that accumulates (a reduction) bounded by its fixed point or its trip count."""
        ir = self.ir
        block = op.regions[0].blocks[0]
        n_in = len(op.operands) - len(op.results)
        inits = [self.tensor(v) for v in list(op.operands)[n_in:]]
        yields = list(block.operations)[-1].operands
        kinds = reduction_loops(op)
        sizes = self.loop_sizes(op)
        if not any(kinds):
            env = {}
            return [self.scalar(v, op, env) for v in yields]
        trips = 1
        for k, s in zip(kinds, sizes):
            if k:
                trips = None if s is None or trips is None else trips * s
        outs = list(inits)
        for _ in range(4):  # a select/min/max accumulator settles at once
            env = {"outs": outs}
            new = [_union(o, self.scalar(v, op, env)) for o, v in zip(outs, yields)]
            if new == outs:
                return outs
            outs = new
        # a sum: out' = out + x with x independent of out, bounded by trips * x
        result = []
        for i, v in enumerate(yields):
            result.append(self._sum(v, op, block, n_in + i, inits[i], trips))
        return result

    def _sum(self, v, op, block, arg_index, init, trips):
        ir = self.ir
        add = _op(v, ir)
        if add is None or add.name != "arith.addi" or init is None or trips is None:
            return None
        out_arg = block.arguments[arg_index]
        a, b = add.operands
        other = b if a == out_arg else a if b == out_arg else None
        if other is None:
            return None
        env = {"outs": [None] * (len(op.results))}
        x = self.scalar(other, op, env)
        if x is None:
            return None
        return (init[0] + trips * min(0, x[0]), init[1] + trips * max(0, x[1]))

    # -- scalars --------------------------------------------------------------------------------
    def scalar(self, value: Any, generic: Any, env: dict):
        """The range of a scalar; ``generic`` is the ``linalg.generic`` whose body holds it."""
        return _clean(self._scalar(value, generic, env))

    def _scalar(self, value: Any, generic: Any, env: dict):
        ir = self.ir
        op = _op(value, ir)
        if op is None:  # a block argument of the generic's body
            if generic is None:
                return None
            n_in = len(generic.operands) - len(generic.results)
            index = value.arg_number
            if index < n_in:
                return self.tensor(generic.operands[index])
            outs = env.get("outs")
            if outs is not None:
                return outs[index - n_in]
            return self.tensor(generic.operands[index])
        name = op.name
        ops = list(op.operands)

        def r(i):
            return self.scalar(ops[i], generic, env)

        if name == "arith.constant":
            return self._dense(op.attributes["value"])
        if name == "linalg.index":
            size = self.loop_sizes(generic)[ir.IntegerAttr(op.attributes["dim"]).value] \
                if generic is not None else None
            return (0, max(size - 1, 0)) if size is not None else None
        if name == "tensor.extract":
            return self.tensor(ops[0])
        if name in ("arith.index_cast", "arith.index_castui"):
            return r(0)
        if name in ("arith.extsi", "arith.extui", "arith.trunci"):
            w = _width(ops[0].type) if name != "arith.trunci" else _width(op.results[0].type)
            if w is None:
                return None
            if w == 1 and name != "arith.trunci":
                return (0, 1) if name == "arith.extui" else (-1, 0)
            box = (0, 2 ** w - 1) if name == "arith.extui" else (-(2 ** (w - 1)), 2 ** (w - 1) - 1)
            x = r(0)
            if name == "arith.extui":
                return x if _fits(x, box) and x[0] >= 0 else box
            if name == "arith.extsi":
                return x if _fits(x, box) else box
            return x if _fits(x, box) else None
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            a, b = r(0), r(1)
            if a is None or b is None:
                return None
            if name == "arith.addi":
                return a[0] + b[0], a[1] + b[1]
            if name == "arith.subi":
                return a[0] - b[1], a[1] - b[0]
            corners = [x * y for x in a for y in b]
            return min(corners), max(corners)
        if name in ("arith.maxsi", "arith.minsi"):
            # a clamp bounds one side whatever the other is
            a, b = (x if x is not None else (-math.inf, math.inf) for x in (r(0), r(1)))
            f = max if name == "arith.maxsi" else min
            return f(a[0], b[0]), f(a[1], b[1])
        if name == "arith.select":
            return _union(r(1), r(2))
        if name == "math.absi":
            a = r(0)
            if a is None:
                return None
            m = max(abs(a[0]), abs(a[1]))
            return (0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1]))), m
        if name in ("arith.remsi", "arith.remui"):
            a, b = r(0), r(1)
            if a is None or (name == "arith.remui" and a[0] < 0):
                return None
            m = max(abs(a[0]), abs(a[1]))
            if b is not None and b[0] > 0:
                m = min(m, b[1] - 1)
            return (0 if a[0] >= 0 else -m), (m if a[1] > 0 else 0)
        if name in ("arith.divsi", "arith.divui", "arith.floordivsi", "arith.ceildivsi"):
            a, b = r(0), r(1)
            if a is None or (name == "arith.divui" and a[0] < 0):
                return None
            m = max(abs(a[0]), abs(a[1]))  # |a / b| <= |a| for any divisor but 0
            return -m, m
        if name == "arith.andi":
            a, b = r(0), r(1)
            nonneg = [x for x in (a, b) if x is not None and x[0] >= 0]
            return (0, min(x[1] for x in nonneg)) if nonneg else None
        return None


def narrow(module_op: Any) -> int:
    """Rewrite every i64 op of `_NARROWABLE` inside a ``linalg.generic`` whose integer operands
    and result provably fit in i32; returns how many."""
    ir = Build.of_object(module_op).ir
    generics = []

    def visit(op):
        if op.name == "linalg.generic":
            generics.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    ranges = Ranges(ir)
    i32 = ir.IntegerType.get_signless(32, module_op.context)
    chosen = []  # decided on the module as it came, then rewritten
    for generic in generics:
        block = generic.regions[0].blocks[0]
        todo = [o.operation for o in block.operations if o.operation.name in _NARROWABLE
                and "i64" in (str(o.operation.results[0].type),
                              str(o.operation.operands[-1].type))]
        if not todo:
            continue
        kinds = reduction_loops(generic)
        env: dict = {}
        if any(kinds):
            env = {"outs": ranges.generic_results(generic)}  # None where unknown (floats)
        chosen += [op for op in todo if _provably_narrow(op, ranges, generic, env)]
    for op in chosen:
        _narrow_op(op, ir, i32)
    for generic in generics:
        _narrow_results(generic, ir, i32)
    return len(chosen)


def _users_op(use: Any) -> Any:
    owner = use.owner
    return getattr(owner, "operation", owner)


def _narrow_results(generic: Any, ir: Any, i32: Any) -> None:
    """Each i64 result that the body computed in i32 (yields an ``extsi`` of an i32) reaches
    its users through a truncation to an i32 tensor and an extension back: the two fold into
    the producer's and the consumers' dispatches, so that a tensor IREE materialises between
    dispatches (or hoists as a constant: a causal mask's ``arange(S) - arange(L)``) is i32,
    whose loads IREE's vectorizer can handle where i64 ones fail."""
    if reduces(generic):
        return  # an elementwise pair after a reduction is a dispatch of its own
    block = generic.regions[0].blocks[0]
    yields = list(block.operations)[-1].operands
    for result, value in zip(generic.results, yields):
        producer = _op(value, ir)
        if producer is None or producer.name != "arith.extsi" \
                or str(producer.operands[0].type) != "i32" or not list(result.uses):
            continue
        if any(_users_op(use).name != "linalg.generic" for use in result.uses):
            continue  # the extension must fuse into its users (a returned i64 stays as it is)
        shape = _shape(result)
        if shape is None or None in shape:
            continue
        rank = len(shape)
        dims = "x".join(str(d) for d in shape)
        wide, narrow = (f"tensor<{dims}x{t}>" if rank else f"tensor<{t}>" for t in ("i64", "i32"))
        ids = ", ".join(f"d{i}" for i in range(rank))
        amap = f"affine_map<({ids}) -> ({ids})>"
        iters = ", ".join(['"parallel"'] * rank)
        text = (
            f"func.func private @f(%x: {wide}) -> {wide} {{\n"
            f"  %e32 = tensor.empty() : {narrow}\n"
            f"  %t = linalg.generic {{indexing_maps = [{amap}, {amap}], iterator_types = [{iters}]}}"
            f" ins(%x : {wide}) outs(%e32 : {narrow}) {{\n"
            f"  ^bb0(%in: i64, %out: i32):\n    %v = arith.trunci %in : i64 to i32\n"
            f"    linalg.yield %v : i32\n  }} -> {narrow}\n"
            f"  %e64 = tensor.empty() : {wide}\n"
            f"  %w = linalg.generic {{indexing_maps = [{amap}, {amap}], iterator_types = [{iters}]}}"
            f" ins(%t : {narrow}) outs(%e64 : {wide}) {{\n"
            f"  ^bb0(%in: i32, %out: i64):\n    %v = arith.extsi %in : i32 to i64\n"
            f"    linalg.yield %v : i64\n  }} -> {wide}\n"
            f"  return %w : {wide}\n}}\n")
        parsed = ir.Module.parse(text, context=generic.context)
        body = parsed.body.operations[0].operation.regions[0].blocks[0]
        ops = [o.operation for o in body.operations][:-1]  # all but the return
        users = list(result.uses)
        anchor = generic
        for o in ops:
            o.move_after(anchor)
            anchor = o
        ops[1].operands[0] = result
        for use in users:
            _users_op(use).operands[use.operand_number] = ops[3].results[0]


def _provably_narrow(op: Any, ranges: Ranges, generic: Any, env: dict) -> bool:
    """Whether every integer value ``op`` reads or makes provably fits in i32."""
    ints = [v for v in op.operands if str(v.type) in ("i64", "index")]
    if str(op.results[0].type) == "i64":
        ints.append(op.results[0])
    return all(_fits(ranges.scalar(v, generic, env)) for v in ints)


def _narrow_op(op: Any, ir: Any, i32: Any) -> None:
    """``op`` on i32: its i64 operands truncated, its i64 result sign-extended back."""
    wide_result = str(op.results[0].type) == "i64"
    with ir.InsertionPoint(op), op.location:
        operands = [ir.Operation.create("arith.trunci", results=[i32], operands=[v]).result
                    if str(v.type) == "i64" else v for v in op.operands]
        named = (op.attributes[i] for i in range(len(op.attributes)))
        attrs = {a.name: a.attr for a in named}
        small = ir.Operation.create(op.name, results=[i32 if wide_result else op.results[0].type],
                                    operands=operands, attributes=attrs).result
        result = (ir.Operation.create("arith.extsi", results=[op.results[0].type],
                                      operands=[small]).result if wide_result else small)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def run(module_op: Any, pass_: Any = None) -> None:
    narrow(module_op)
