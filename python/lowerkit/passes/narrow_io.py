"""widen-narrow-io: a public function takes and returns 32-bit tensors in place of 8- and 16-bit ones.

A GPU without 8- or 16-bit storage access (IREE's portable Vulkan target, `vp_android_baseline_2022`,
has only 32-bit storage; `adreno` has no 8-bit) cannot address a ``bool``/``i8``/``f16``
buffer that the host hands it: IREE 3.13 emulates those loads and stores with 32-bit words,
reads a ``f16`` input as ``f32``, and drops the bytes past the last whole word, so the results
are silently wrong (a ``bool[2, 5]`` input loses its last two elements, every ``f16`` input is
garbage). Internal buffers are fine: IREE pads and demotes those consistently.

This pass keeps the function's body and changes only its boundary: each public ``func.func``
with a narrow tensor argument or result becomes a private function, called by a new public
one of the same name whose narrow tensors are ``i32`` (integers and bools) or ``f32`` (floats),
converted by one ``linalg.generic`` on the way in and out. The runtime widens the host's
inputs and narrows the outputs back (`lowerkit.runtime.executable`), so the values are exactly eager's.
Run on linalg on tensors (in either MLIR build); `lowerkit.api` applies it for targets whose
`Target.storage_bits` lack a width.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..ir import Build
from ._narrow_types import ConversionWriter, conversion, tensor_parts, tensor_text

NAME = "widen-narrow-io"
_SUFFIX = "$narrow_io"


def _cross(w: ConversionWriter, values: list[str], types: list[Any], widths: frozenset[int],
           inward: bool) -> tuple[list[str], list[str], bool]:
    """The wide types of ``values`` and the values converted across the boundary (narrowed
    on the way in, widened on the way out); whether any was narrow."""
    wide, converted, narrow = [], [], False
    for value, t in zip(values, types):
        info = tensor_parts(t)
        conv = conversion(info[1], widths) if info is not None else None
        if conv is None:
            wide.append(str(t))
            converted.append(value)
            continue
        narrow = True
        dims, elem = info
        wide.append(tensor_text(dims, conv[0]))
        converted.append(w.convert(value, dims, conv[0], elem, conv[2]) if inward
                         else w.convert(value, dims, elem, conv[0], conv[1]))
    return wide, converted, narrow


def _wrapper(name: str, inner: str, args: list[Any], results: list[Any],
             widths: frozenset[int]) -> str | None:
    """The text of ``@name`` (wide) calling ``@inner`` (narrow), and a declaration of
    ``@inner``; None when no argument or result is narrow."""
    w = ConversionWriter()
    wide_args, call_args, narrow_in = _cross(w, [f"%arg{i}" for i in range(len(args))], args,
                                             widths, inward=True)
    call = w.fresh()
    if results:
        w.lines.append(f"{call}:{len(results)} = func.call @\"{inner}\"({', '.join(call_args)}) : "
                       f"({', '.join(str(t) for t in args)}) -> ({', '.join(str(t) for t in results)})")
    else:
        w.lines.append(f"func.call @\"{inner}\"({', '.join(call_args)}) : "
                       f"({', '.join(str(t) for t in args)}) -> ()")
    wide_results, returned, narrow_out = _cross(w, [f"{call}#{i}" for i in range(len(results))],
                                                results, widths, inward=False)
    narrow = narrow_in or narrow_out
    if not narrow:
        return None
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(wide_args))
    ret = f"return {', '.join(returned)} : {', '.join(wide_results)}" if results else "return"
    body = "\n".join(f"  {line}" for line in w.lines + [ret])
    declared = (f"func.func private @\"{inner}\"({', '.join(str(t) for t in args)}) -> "
                f"({', '.join(str(t) for t in results)})")
    return (f"{declared}\nfunc.func @{name}({params}) -> ({', '.join(wide_results)}) {{\n"
            f"{body}\n}}\n")


def widen(module_op: Any, widths: Iterable[int] = (32, 64)) -> list[str]:
    """Give every public function of ``module_op`` 32-bit tensors in place of those whose
    element width is not in ``widths``; returns the names of the functions changed."""
    ir = Build.of_object(module_op).ir
    widths = frozenset(widths)
    body = module_op.regions[0].blocks[0]
    changed = []
    for op in [o.operation for o in body.operations]:
        if op.name != "func.func" or "sym_visibility" in op.attributes \
                or not op.regions[0].blocks:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        inner = name + _SUFFIX
        text = _wrapper(name, inner, list(ftype.inputs), list(ftype.results), widths)
        if text is None:
            continue
        parsed = ir.Module.parse(text, context=module_op.context)
        wrapper = list(parsed.body.operations)[1].operation
        if "arg_attrs" in op.attributes:  # marks on the arguments (a weight's name) stay public
            wrapper.attributes["arg_attrs"] = op.attributes["arg_attrs"]
        op.attributes["sym_name"] = ir.StringAttr.get(inner, module_op.context)
        op.attributes["sym_visibility"] = ir.StringAttr.get("private", module_op.context)
        wrapper.move_after(op)
        changed.append(name)
    return changed


def run(module_op: Any, pass_: Any = None) -> None:
    """The pass as `lowerkit-opt --pass=widen-narrow-io` runs it: 8- and 16-bit tensors widened."""
    widen(module_op)
