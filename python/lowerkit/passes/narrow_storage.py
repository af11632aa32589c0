"""widen-narrow-storage: narrow tensors are written and read as 32-bit words; signed byte math in i32.

On a target without 8- or 16-bit storage (IREE's portable Vulkan target), IREE 3.13 stores an
internal ``i1``/``i8``/``i16`` tensor packed into 32-bit words, and a dispatch whose threads
write the bytes of one word separately loses some of them; its emulation of byte math also reads
signed bytes as unsigned ones. Silent wrong answers found by lowerkit's fuzzer and its
follow-ups, on that target only, at ``[64, 32]`` unless said:

* a gather by computed indices (``tensor.extract`` in a ``linalg.generic``: ``index_select``,
  ``embedding``, ``flip``) of a narrow tensor: ``torch.index_select(m, 3, i)`` of a
  ``[2, 16, 2, 32]`` bool tensor had about half its elements wrong (campaign seed 2112,
  programs 399-400), an ``int8`` source 127 of 128, ``(a > 0).flip(0)`` 983 of 2048;
* a reduction with a narrow result: ``(a > 0).any(0)`` and ``q.amax(0)`` of an ``int8`` ``q``
  had every element wrong;
* a narrow result written between two elementwise dispatches: ``q + q`` 1529 of 2048;
* a narrow tensor moved packed: ``torch.cat([a > 0, a < -1], 1).sum(0)`` 64 of 64, a strided
  slice of bools (behind `fence-strided-slices`' barrier) 515 of 992;
* signed byte math: ``torch.maximum(q, -q)``, ``q.relu()``, ``q >> 2``, ``q.abs()``.

Smaller tensors and 32-bit ones were right. So here a gather is pulled through the element
conversions above its source (it reads their input and converts the element itself), and reads
any other narrow source widened to ``i32`` behind a ``util.optimization_barrier``; a reduction
accumulates its narrow results in ``i32`` and writes them behind a barrier; an elementwise op
writes its narrow results widened and its readers truncate what they read; a data movement
(`_MOVES`) moves words; and signed byte math runs in ``i32`` (`_signed_math_in_i32`). Exact:
every widening is undone by a truncation of the same values. Not covered: a narrow tensor written
by another kind of op (a sort's, a scatter's, a pad's), none of them seen wrong yet.
Runs in IREE's MLIR build on linalg on tensors, for targets whose `Target.storage_bits` lack a
width (`lowerkit.pipelines.target_fixes`).
"""

from __future__ import annotations

from typing import Any, Iterable

from ._linalg import reduces
from ._source_fence import ir_of, ops_where
from ._narrow_types import ConversionWriter, conversion, tensor_parts, tensor_text

NAME = "widen-narrow-storage"
BUILD = "iree"  # `util.optimization_barrier` / run on what IREE compiles
_HELPER = "lowerkit_narrow_storage_"


def _helper_text(name: str, dims: list[str], src: str, dst: str, op: str, barrier: str) -> str:
    """A private function converting a ``dims`` tensor of ``src`` to ``dst`` with ``op``;
    ``barrier`` says where a ``util.optimization_barrier`` goes: on the ``input`` (written to
    memory by the dispatch that computes it), on the ``output`` (written as it is), or
    ``none``."""
    w = ConversionWriter()
    value = "%arg0"
    if barrier == "input":
        value = w.fresh()
        w.lines.append(f"{value} = util.optimization_barrier %arg0 : {tensor_text(dims, src)}")
    out = w.convert(value, dims, src, dst, op)
    if barrier == "output":
        fenced = w.fresh()
        w.lines.append(f"{fenced} = util.optimization_barrier {out} : {tensor_text(dims, dst)}")
        out = fenced
    body = "\n".join(f"  {line}" for line in w.lines)
    return (f"func.func private @{name}(%arg0: {tensor_text(dims, src)}) -> "
            f"{tensor_text(dims, dst)} {{\n{body}\n  return {out} : {tensor_text(dims, dst)}\n}}\n")


_CONVERSIONS = frozenset({"arith.trunci", "arith.truncf", "arith.extui", "arith.extsi",
                          "arith.extf", "arith.uitofp", "arith.sitofp", "arith.fptosi",
                          "arith.fptoui"})


def _conversion_of(value: Any, ir: Any):
    """``(its input, the op name)`` when ``value`` is an elementwise ``linalg.generic``
    converting one tensor's element type, in the same layout, else None."""
    op = value.owner
    if isinstance(op, ir.Block) or getattr(op, "name", "") != "linalg.generic":
        return None
    op = getattr(op, "operation", op)
    if len(op.operands) != 2 or len(op.results) != 1:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    identity = ir.AffineMap.get_identity(maps[0].n_dims, op.context)
    if any(m != identity for m in maps):
        return None
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    if len(body) != 2 or body[0].name not in _CONVERSIONS \
            or body[0].operands[0] != block.arguments[0]:
        return None
    return op.operands[0], body[0].name


def _narrow(value: Any, widths: frozenset[int]):
    """The ``(dims, element, (wide, widening op, narrowing op))`` of a tensor the target
    cannot store, else None."""
    parts = tensor_parts(value.type)
    conv = conversion(parts[1], widths) if parts is not None else None
    return None if conv is None else (*parts, conv)


def _reads_narrow(value: Any, ir: Any, widths: frozenset[int], depth: int = 0) -> bool:
    """Whether ``value`` is narrow, or converted from a narrow tensor (IREE folds the
    conversion into the gather, which then reads the narrow tensor)."""
    if _narrow(value, widths) is not None:
        return True
    conv = _conversion_of(value, ir)
    return conv is not None and depth < 8 and _reads_narrow(conv[0], ir, widths, depth + 1)


def _convert(module_op: Any, ir: Any, helpers: dict, value: Any, dims: list[str], src: str,
             dst: str, op: str, barrier: str) -> Any:
    """``value`` converted by a call of a private helper (added once per kind; IREE inlines
    it), inserted at the current insertion point."""
    key = (tuple(dims), src, dst, op, barrier)
    if key not in helpers:
        body = module_op.regions[0].blocks[0]
        taken = {ir.StringAttr(o.attributes["sym_name"]).value for o in body.operations
                 if "sym_name" in o.attributes}
        n = len(helpers)
        while f"{_HELPER}{n}" in taken:
            n += 1
        helpers[key] = f"{_HELPER}{n}"
        parsed = ir.Module.parse(_helper_text(helpers[key], dims, src, dst, op, barrier),
                                 context=module_op.context)
        for o in list(parsed.body.operations):
            o.operation.move_before(list(body.operations)[0])
    return ir.Operation.create(
        "func.call", results=[ir.Type.parse(tensor_text(dims, dst), module_op.context)],
        operands=[value], attributes={"callee": ir.FlatSymbolRefAttr.get(helpers[key])}).results[0]


def _rewrite(extract: Any, ir: Any, widths: frozenset[int], module_op: Any,
             helpers: dict) -> None:
    """Make ``extract`` read a wide tensor: pull it through the conversions above its
    source (reading their input and converting the element), then read a narrow source
    that is a truncation of a wide tensor from that tensor, or else widened by a helper."""
    source, indices = extract.operands[0], list(extract.operands)[1:]
    steps = []  # conversions to apply to the element read, innermost last
    while _narrow(source, widths) is not None or not steps:
        conv = _conversion_of(source, ir)
        if conv is None:
            break
        if _narrow(source, widths) is None and not _reads_narrow(conv[0], ir, widths):
            break
        steps.append((conv[1], str(tensor_parts(source.type)[1])))
        source = conv[0]
        if _narrow(source, widths) is None:
            break  # a wide tensor (the input of a truncation): read it
    narrow = _narrow(source, widths)
    with ir.InsertionPoint(extract), extract.location:
        if narrow is not None:
            dims, elem, (wide, widen_op, narrow_op) = narrow
            generic = extract.parent
            while generic.name != "linalg.generic":
                generic = generic.parent
            with ir.InsertionPoint(generic), generic.location:
                source = _convert(module_op, ir, helpers, source, dims, elem, wide, widen_op,
                                  barrier="output")
            steps.append((narrow_op, elem))
        element = ir.Operation.create(
            "tensor.extract", results=[ir.RankedTensorType(source.type).element_type],
            operands=[source, *indices]).results[0]
        for op_name, elem in reversed(steps):
            element = ir.Operation.create(
                op_name, results=[ir.Type.parse(elem, module_op.context)],
                operands=[element]).results[0]
    extract.results[0].replace_all_uses_with(element)
    extract.erase()


def _yield_widened(op: Any, ir: Any, k: int, widen_op: str, wide: str) -> None:
    """Make ``op``'s body yield its result ``k`` widened by ``widen_op`` to ``wide``."""
    yield_op = list(op.regions[0].blocks[0].operations)[-1]
    with ir.InsertionPoint(yield_op), op.location:
        yield_op.operands[k] = ir.Operation.create(
            widen_op, results=[ir.Type.parse(wide, op.context)],
            operands=[yield_op.operands[k]]).results[0]


def _hand_back_narrowed(op: Any, ir: Any, module_op: Any, helpers: dict, result: Any,
                        dims: list[str], wide: str, elem: str, narrow_op: str,
                        barrier: str) -> None:
    """Give the readers of ``op``'s now wide ``result`` a narrowed copy of it."""
    with ir.InsertionPoint.after(op), op.location:
        back = _convert(module_op, ir, helpers, result, dims, wide, elem, narrow_op,
                        barrier=barrier)
    result.replace_all_uses_except(back, getattr(back.owner, "operation", back.owner))


def _wide_fill(init: Any, ir: Any, dims: list[str], wide: str, widen_op: str,
               module_op: Any) -> Any:
    """A reduction's init that fills a narrow tensor with a scalar, as a fill of the widened
    scalar, or None: converted, the narrow fill stays a packed tensor, which two reductions
    may share (``(x == -inf).all(-1)`` twice, as each masked attention's PyTorch math has it:
    the second came out wrong in 448 of 512 rows, fuzz campaign seed 2116, programs 430-431)."""
    fill = init.owner
    if isinstance(fill, ir.Block) or fill.name != "linalg.fill":
        return None
    empty = fill.operands[1].owner
    if isinstance(empty, ir.Block) or empty.name != "tensor.empty":
        return None
    from iree.compiler.dialects import linalg  # this pass runs in IREE's build only

    scalar = ir.Operation.create(widen_op, results=[ir.Type.parse(wide, module_op.context)],
                                 operands=[fill.operands[0]]).results[0]
    wide_empty = ir.Operation.create(
        "tensor.empty", results=[ir.Type.parse(tensor_text(dims, wide), module_op.context)],
        operands=list(empty.operands)).results[0]
    return linalg.fill(scalar, outs=[wide_empty])


def _widen_reduction(op: Any, ir: Any, widths: frozenset[int], module_op: Any,
                     helpers: dict) -> int:
    """Make a reduction accumulate each narrow integer result in ``i32``, write it behind a
    barrier, and hand its readers the result narrowed again; returns how many results."""
    n_in = len(op.operands) - len(op.results)
    block = op.regions[0].blocks[0]
    changed = 0
    for k, result in enumerate(list(op.results)):
        narrow = _narrow(result, widths)
        if narrow is None or narrow[2][0] != "i32":
            continue  # wide, or a half float (its packed writes came out right)
        dims, elem, (wide, widen_op, narrow_op) = narrow
        users = list(result.uses)
        with ir.InsertionPoint(op), op.location:
            init = op.operands[n_in + k]
            op.operands[n_in + k] = _wide_fill(init, ir, dims, wide, widen_op, module_op) \
                or _convert(module_op, ir, helpers, init, dims, elem, wide, widen_op,
                            barrier="none")
        result.set_type(ir.Type.parse(tensor_text(dims, wide), module_op.context))
        accumulator = block.arguments[n_in + k]
        accumulator.set_type(ir.Type.parse(wide, module_op.context))
        first = list(block.operations)[0]
        with ir.InsertionPoint(first), op.location:
            narrowing = ir.Operation.create(
                narrow_op, results=[ir.Type.parse(elem, module_op.context)], operands=[accumulator])
        accumulator.replace_all_uses_except(narrowing.results[0], narrowing)
        _yield_widened(op, ir, k, widen_op, wide)
        if users:
            _hand_back_narrowed(op, ir, module_op, helpers, result, dims, wide, elem, narrow_op,
                                barrier="input")
        changed += 1
    return changed


def _read_wide(op: Any, ir: Any, widths: frozenset[int]) -> int:
    """Make ``op`` (a ``linalg.generic``) read each narrow input that converts a wide tensor
    from that tensor, converting the element in its body: IREE does not fuse a truncation
    into its reader, so the narrow tensor would be written out between two dispatches
    (``q.amax(0)`` of an ``int8`` input, truncated from the ``i32`` the boundary takes).
    Returns how many inputs."""
    n_in = len(op.operands) - len(op.results)
    block = op.regions[0].blocks[0]
    changed = 0
    for i in range(n_in):
        value, steps = op.operands[i], []
        while _narrow(value, widths) is not None:
            conv = _conversion_of(value, ir)
            if conv is None:
                break
            steps.append((conv[1], ir.RankedTensorType(value.type).element_type))
            value = conv[0]
        if not steps or _narrow(value, widths) is not None:
            continue  # not narrow, or narrow all the way up
        argument = block.arguments[i]
        argument.set_type(ir.RankedTensorType(value.type).element_type)
        with ir.InsertionPoint(list(block.operations)[0]), op.location:
            element, first = argument, None
            for name, type_ in reversed(steps):
                conversion_op = ir.Operation.create(name, results=[type_], operands=[element])
                first = first or conversion_op
                element = conversion_op.results[0]
        argument.replace_all_uses_except(element, first)
        op.operands[i] = value
        changed += 1
    return changed


_TRUNCATIONS = frozenset({"arith.trunci", "arith.truncf"})


def _write_wide(op: Any, ir: Any, widths: frozenset[int], module_op: Any, helpers: dict) -> int:
    """Make an elementwise ``op`` with a narrow result write it widened to 32 bits, handing
    its readers a truncation of that (which `_read_wide` then pulls into each of them): IREE
    does not always fuse two elementwise ops, and a narrow tensor written between them came
    out wrong (``q + q`` of an ``int8`` ``q`` of [64, 32] had 1529 of 2048 elements wrong,
    ``torch.maximum(q, -q)`` 781). Returns how many results."""
    if reduces(op):
        return 0
    conv = _conversion_of(op.results[0], ir) if len(op.results) == 1 else None
    if conv is not None and conv[1] in _TRUNCATIONS and _narrow(conv[0], widths) is None:
        return 0  # a truncation of a wide tensor: its readers read that tensor
    n_in = len(op.operands) - len(op.results)
    block = op.regions[0].blocks[0]
    changed = 0
    for k, result in enumerate(list(op.results)):
        narrow = _narrow(result, widths)
        init = op.operands[n_in + k]
        empty = getattr(init.owner, "name", "") == "tensor.empty" and init.owner
        if narrow is None or not empty or list(block.arguments[n_in + k].uses) \
                or not list(result.uses):
            continue
        dims, elem, (wide, widen_op, narrow_op) = narrow
        wide_type = ir.Type.parse(tensor_text(dims, wide), module_op.context)
        with ir.InsertionPoint(op), op.location:
            op.operands[n_in + k] = ir.Operation.create(
                "tensor.empty", results=[wide_type], operands=list(empty.operands)).results[0]
        block.arguments[n_in + k].set_type(ir.Type.parse(wide, module_op.context))
        _yield_widened(op, ir, k, widen_op, wide)
        result.set_type(wide_type)
        _hand_back_narrowed(op, ir, module_op, helpers, result, dims, wide, elem, narrow_op,
                            barrier="none")
        changed += 1
    return changed


_SIGNED_MATH = frozenset({"arith.maxsi", "arith.minsi", "arith.shrsi", "arith.divsi",
                          "arith.remsi", "arith.floordivsi", "arith.ceildivsi", "math.absi"})
_CMPI_SIGNED = frozenset({2, 3, 4, 5})  # slt, sle, sgt, sge


def _narrow_scalar(type_: Any, widths: frozenset[int]) -> bool:
    return str(type_) in ("i8", "i16") and int(str(type_)[1:]) not in widths


def _signed_math_in_i32(module_op: Any, ir: Any, widths: frozenset[int]) -> int:
    """Do narrow signed integer math whose result depends on the sign in ``i32``, each
    operand extended by shifts (``extui``, ``<< 24``, arithmetic ``>> 24`` for bytes), the
    result truncated back: IREE 3.13's emulation of ``i8`` math on such a target read signed
    bytes as unsigned ones in ``arith.maxsi``, ``arith.cmpi``, ``math.absi`` and the like
    (``torch.maximum(q, -q)`` gave -55 for 55, ``q.relu()`` kept -55, ``q.amax(0)`` gave -1
    for 90, ``q >> 2`` gave 50 for -14) and cannot emulate unsigned compares at all, while its
    additions and widenings were right. An ``extsi`` in place of the shifts does not last:
    canonicalization narrows an op of two of them back to bytes. A float converted to bytes
    (``arith.fptosi``) goes through ``i32`` likewise. Returns how many ops."""
    def wanted(op):
        if op.name == "arith.cmpi":
            return (_narrow_scalar(op.operands[0].type, widths)
                    and ir.IntegerAttr(op.attributes["predicate"]).value in _CMPI_SIGNED)
        if op.name == "arith.fptosi":
            return _narrow_scalar(op.results[0].type, widths)
        return op.name in _SIGNED_MATH and _narrow_scalar(op.results[0].type, widths)

    found = ops_where(module_op, wanted)
    i32 = ir.IntegerType.get_signless(32, module_op.context)
    for op in found:
        operands, narrow = list(op.operands), op.results[0].type
        with ir.InsertionPoint(op), op.location:
            if op.name == "arith.fptosi":  # to i32, then truncated
                new = ir.Operation.create("arith.fptosi", results=[i32],
                                          operands=operands).results[0]
                new = ir.Operation.create("arith.trunci", results=[narrow],
                                          operands=[new]).results[0]
            else:
                shift = ir.Operation.create("arith.constant", results=[i32], attributes={
                    "value": ir.IntegerAttr.get(i32, 32 - int(str(operands[0].type)[1:]))}).results[0]
                wide = []
                for v in operands:
                    v = ir.Operation.create("arith.extui", results=[i32], operands=[v]).results[0]
                    v = ir.Operation.create("arith.shli", results=[i32], operands=[v, shift]).results[0]
                    wide.append(ir.Operation.create("arith.shrsi", results=[i32],
                                                    operands=[v, shift]).results[0])
                if op.name == "arith.cmpi":
                    new = ir.Operation.create(
                        "arith.cmpi", results=[narrow], operands=wide,
                        attributes={"predicate": op.attributes["predicate"]}).results[0]
                else:
                    new = ir.Operation.create(op.name, results=[i32], operands=wide).results[0]
                    new = ir.Operation.create("arith.trunci", results=[narrow],
                                              operands=[new]).results[0]
        op.results[0].replace_all_uses_with(new)
        op.erase()
    return len(found)


# ops that move elements without looking at them: widened, they move the same values as words
# (a barrier too: another target fix's, which writes its operand to memory)
_MOVES = frozenset({"tensor.concat", "tensor.insert_slice", "tensor.extract_slice",
                    "tensor.expand_shape", "tensor.collapse_shape", "tensor.cast",
                    "linalg.transpose", "linalg.broadcast", "linalg.copy",
                    "util.optimization_barrier"})


def _wide_of(value: Any, ir: Any, widths: frozenset[int], moved: dict):
    """A wide tensor that ``value`` (narrow) truncates, if any: a truncation generic's input,
    or what an op widened by `_move_wide` hands back."""
    for narrow_value, wide_value in moved.items():
        if narrow_value == value:
            return wide_value
    conv = _conversion_of(value, ir)
    if conv is not None and conv[1] in _TRUNCATIONS and _narrow(conv[0], widths) is None:
        return conv[0]
    return None


def _move_wide(op: Any, ir: Any, widths: frozenset[int], module_op: Any, helpers: dict,
               moved: dict) -> int:
    """Make a data-movement op (`_MOVES`) with a narrow result move 32-bit words: its narrow
    tensor operands are read wide (the tensor they truncate, or widened), its results are
    wide, and its readers get them narrowed back. ``torch.cat([a > 0, a < -1], 1)`` of
    ``[64, 32]`` was written packed, and its sum over rows was wrong in every element."""
    if not op.results or _narrow(op.results[0], widths) is None:
        return 0
    dims, elem, (wide, widen_op, narrow_op) = _narrow(op.results[0], widths)
    for i, operand in enumerate(list(op.operands)):
        parts = _narrow(operand, widths)
        if parts is None or parts[1] != elem:
            continue
        wide_value = _wide_of(operand, ir, widths, moved)
        if wide_value is None:
            with ir.InsertionPoint(op), op.location:
                wide_value = _convert(module_op, ir, helpers, operand, parts[0], elem, wide,
                                      widen_op, barrier="none")
        op.operands[i] = wide_value
    for region in op.regions:  # linalg.transpose / broadcast / copy: their body's arguments
        for block in region.blocks:
            for argument in block.arguments:
                if str(argument.type) == elem:
                    argument.set_type(ir.Type.parse(wide, module_op.context))
    for result in op.results:
        r_dims = _narrow(result, widths)[0]
        result.set_type(ir.Type.parse(tensor_text(r_dims, wide), module_op.context))
        if not list(result.uses):
            continue
        with ir.InsertionPoint.after(op), op.location:
            back = _convert(module_op, ir, helpers, result, r_dims, wide, elem, narrow_op,
                            barrier="none")
        result.replace_all_uses_except(back, getattr(back.owner, "operation", back.owner))
        moved[back] = result
    return 1


def _gathers(module_op: Any, ir: Any, widths: frozenset[int]) -> list:
    """The ``tensor.extract`` ops of gathers that read a narrow tensor (`_reads_narrow`)."""
    found = []
    for generic in ops_where(module_op, lambda op: op.name == "linalg.generic"):
        for extract in ops_where(generic, lambda op: op.name == "tensor.extract"):
            owner = extract.operands[0].owner
            inside = isinstance(owner, ir.Block) and owner.owner is not None \
                and getattr(owner.owner, "name", "") == "linalg.generic"
            if not inside and _reads_narrow(extract.operands[0], ir, widths):
                found.append(extract)
    return found


def _reductions(module_op: Any, ir: Any, widths: frozenset[int]) -> list:
    """The ``linalg.generic`` reductions with a narrow integer result."""
    def wanted(op):
        return (op.name == "linalg.generic"
                and reduces(op)
                and any(_narrow(r, widths) is not None and _narrow(r, widths)[2][0] == "i32"
                        for r in op.results))
    return ops_where(module_op, wanted)


def _holds_narrow(module_op: Any, widths: frozenset[int]) -> bool:
    """Whether any op's result or any block's argument is a tensor the target cannot store."""
    def narrow_here(op):
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments]
        return any(_narrow(v, widths) is not None for v in values)
    return bool(ops_where(module_op, narrow_here))


def widen(module_op: Any, widths: Iterable[int] = (32, 64)) -> int:
    """Make the gathers, reductions, elementwise ops and data movements of tensors whose
    element width is not in ``widths`` work on 32-bit words, and signed math on such
    integers in ``i32``; returns how many places changed. Inlines first: a narrow input
    reaches the body as an argument of `widen-narrow-io`'s inner function, and must be seen
    as the truncation of the public function's input."""
    ir = ir_of(module_op)
    widths = frozenset(widths)
    helpers: dict = {}

    def inline():  # IREE's own build only; the inlined helpers are gone, so is their cache
        from iree.compiler import passmanager
        passmanager.PassManager.parse("builtin.module(inline{default-pipeline=})",
                                      module_op.context).run(module_op)
        helpers.clear()

    def generics():
        return ops_where(module_op, lambda op: op.name == "linalg.generic")

    if not _holds_narrow(module_op, widths):
        return 0  # most programs: nothing to widen, and no inlining to pay for
    inline()
    changed = _signed_math_in_i32(module_op, ir, widths)
    for extract in _gathers(module_op, ir, widths):
        _rewrite(extract, ir, widths, module_op, helpers)
        changed += 1
    for op in _reductions(module_op, ir, widths):
        changed += _widen_reduction(op, ir, widths, module_op, helpers)
    inline()
    changed += sum(_write_wide(op, ir, widths, module_op, helpers) for op in generics())
    inline()
    moved: dict = {}
    changed += sum(_move_wide(op, ir, widths, module_op, helpers, moved)
                   for op in ops_where(module_op, lambda op: op.name in _MOVES))
    inline()
    return changed + sum(_read_wide(op, ir, widths) for op in generics())


def run(module_op: Any, pass_: Any = None) -> None:
    """The pass as `lowerkit-opt` runs it: sources of 8- and 16-bit elements widened."""
    widen(module_op)
