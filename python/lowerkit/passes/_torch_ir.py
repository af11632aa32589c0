"""Reading and building torch-dialect IR from Python passes (torch-mlir's MLIR build).

Small helpers so that each pass reads like the rewrite it does: constant lists out of
``torch.prim.ListConstruct``, shapes out of ``!torch.vtensor`` types, new ops built before
the op being replaced.
"""

from __future__ import annotations

import re
from typing import Any, Callable

_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(\w+)>$")


def vtensor(value: Any) -> tuple[list[int | None], str] | None:
    """Shape (None for a dynamic dim) and element type of a ``!torch.vtensor`` value."""
    m = _VTENSOR.match(str(value.type))
    if not m:
        return None
    text = m.group(1).strip()
    dims = [None if d.strip() == "?" else int(d) for d in text.split(",")] if text else []
    return dims, m.group(2)


def vtensor_type(shape: list[int | None], dtype: str) -> Any:
    """``!torch.vtensor`` of ``shape`` (None: a dynamic dim) and ``dtype``."""
    from torch_mlir import ir

    dims = ",".join("?" if d is None else str(d) for d in shape)
    return ir.Type.parse(f"!torch.vtensor<[{dims}],{dtype}>")


def owner_name(value: Any) -> str | None:
    return getattr(value.owner, "name", None)


def const_int(value: Any) -> int | None:
    if owner_name(value) != "torch.constant.int":
        return None
    return int(str(value.owner.attributes["value"]).split(":")[0])


def const_bool(value: Any) -> bool | None:
    if owner_name(value) != "torch.constant.bool":
        return None
    return str(value.owner.attributes["value"]) == "true"


def is_none(value: Any) -> bool:
    return owner_name(value) == "torch.constant.none"


def int_list(value: Any) -> list[int] | None:
    """The ints of a ``torch.prim.ListConstruct`` of constants, else None."""
    if owner_name(value) != "torch.prim.ListConstruct":
        return None
    items = [const_int(v) for v in value.owner.operands]
    return None if any(i is None for i in items) else items


def make_int(v: int) -> Any:
    from torch_mlir import ir

    op = ir.Operation.create(
        "torch.constant.int", results=[ir.Type.parse("!torch.int")],
        attributes={"value": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)},
    )
    return op.results[0]


def make_none() -> Any:
    from torch_mlir import ir

    return ir.Operation.create("torch.constant.none", results=[ir.Type.parse("!torch.none")]).results[0]


def make_float(v: float) -> Any:
    from torch_mlir import ir

    return ir.Operation.create(
        "torch.constant.float", results=[ir.Type.parse("!torch.float")],
        attributes={"value": ir.FloatAttr.get(ir.F64Type.get(), v)},
    ).results[0]


def make_bool(v: bool) -> Any:
    from torch_mlir import ir

    return ir.Operation.create("torch.constant.bool", results=[ir.Type.parse("!torch.bool")],
                               attributes={"value": ir.BoolAttr.get(v)}).results[0]


def make_int_list(values: list[int]) -> Any:
    from torch_mlir import ir

    return ir.Operation.create(
        "torch.prim.ListConstruct", results=[ir.Type.parse("!torch.list<int>")],
        operands=[make_int(v) for v in values],
    ).results[0]


def make_op(name: str, operands: list[Any], result_type: Any) -> Any:
    from torch_mlir import ir

    return ir.Operation.create(name, results=[result_type], operands=operands).results[0]


def make_literal(shape: list[int], dtype: str, values: list[float] | list[int]) -> Any:
    """A ``torch.vtensor.literal`` of ``values`` (row-major) with the given shape and element
    type, a float type such as ``f32`` or ``bf16`` or a signed integer one such as ``si64``."""
    from torch_mlir import ir

    scalar = int if dtype.startswith("si") else float
    element = f"i{dtype[2:]}" if dtype.startswith("si") else dtype  # the builtin tensor's type

    def nest(flat, dims):
        if not dims:
            return repr(scalar(flat[0]))
        step = len(flat) // dims[0] if dims[0] else 0
        return "[" + ", ".join(nest(flat[i * step:(i + 1) * step], dims[1:])
                               for i in range(dims[0])) + "]"

    dims = "x".join(str(d) for d in shape)
    body = "" if 0 in shape else nest(values, list(shape))  # no elements: ``dense<>``
    attr = ir.Attribute.parse(f"dense<{body}> : tensor<{dims}{'x' if dims else ''}{element}>")
    return ir.Operation.create("torch.vtensor.literal", results=[vtensor_type(shape, dtype)],
                               attributes={"value": attr}).results[0]


def make_slice(x: Any, dim: int, start: int, end: int, step: int) -> Any:
    shape, dtype = vtensor(x)
    out = list(shape)
    out[dim] = max(0, (min(end, shape[dim]) - start + step - 1) // step)
    return make_op("torch.aten.slice.Tensor",
                   [x, make_int(dim), make_int(start), make_int(end), make_int(step)],
                   vtensor_type(out, dtype))


def crop_and_pad(x: Any, lead: int, before: list[int], after: list[int], value: float) -> Any:
    """Pad the spatial dims (those after the first ``lead``) by ``before``/``after`` with
    ``value``; a negative ``after`` crops that many trailing rows instead."""
    n = len(before)
    shape, dtype = vtensor(x)
    after = list(after)
    for i in range(n):
        if after[i] < 0:  # rows that are never read
            x = make_slice(x, lead + i, 0, shape[lead + i] + after[i], 1)
            after[i] = 0
    if not any(before) and not any(after):
        return x
    pads = []
    for i in reversed(range(n)):  # constant_pad_nd lists the last dim first
        pads += [before[i], after[i]]
    cropped, _ = vtensor(x)
    padded = cropped[:lead] + [cropped[lead + i] + before[i] + after[i] for i in range(n)]
    return make_op("torch.aten.constant_pad_nd", [x, make_int_list(pads), make_float(value)],
                   vtensor_type(padded, dtype))


def rewrite_each(module_op: Any, names: set[str] | Callable[[str], bool],
                 rewrite: Callable[[Any], list[Any] | None]) -> int:
    """Call ``rewrite(op)`` for every op named in ``names`` (or whose name it accepts, if a
    function), at an insertion point before it; when it returns replacement values, replace the
    op's results and erase it."""
    from torch_mlir import ir

    found = []
    wanted = names if callable(names) else names.__contains__

    def visit(op):
        if wanted(op.name):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    done = 0
    for op in found:
        with ir.InsertionPoint(op), op.location:
            new = rewrite(op)
        if new is None:
            continue
        for old, value in zip(op.results, new):
            old.replace_all_uses_with(value)
        op.erase()
        done += 1
    return done
