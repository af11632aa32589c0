"""lower-bit-views: ``x.view(dtype)`` to a dtype of the same width as a ``tensor.bitcast``.

torch-mlir 20261001 has no lowering of ``aten.view.dtype``, so the op, and with it
``signbit`` and ``copysign`` (their decompositions read the sign bit through it), failed in
``linalg-on-tensors`` on ``torch.constant.int`` (torch-mlir's e2e ``ElementwiseSignbitModule``,
``ElementwiseCopysignModule``). A view between dtypes of one
width keeps the shape and reinterprets each element: ``tensor.bitcast`` between the builtin
tensors, reached through ``torch_c``'s casts, which the linalg stage then folds away. A view
that changes the width (and so the last dim: ``ViewDtypeStaticModule``) is written at import
as shifts between views of one width (`lowerkit.ingress.decompositions._view_other_width`);
one to or from ``bool`` is left as it is and still fails there.
"""

from __future__ import annotations

import re
from typing import Any

from . import _torch_ir as t

NAME = "lower-bit-views"
_WIDTH = re.compile(r"^(?:si|ui|i|f|bf)(\d+)$")


def _builtin(dtype: str) -> str | None:
    """The builtin element type of a vtensor's dtype (signedness dropped), if it has a width
    a bitcast keeps; None for bool, complex and float8 kinds."""
    if dtype == "i1" or not _WIDTH.match(dtype):
        return None
    return re.sub(r"^[su]i", "i", dtype)


def _tensor_type(shape: list[int | None], element: str) -> Any:
    from torch_mlir import ir

    dims = "".join(f"{'?' if d is None else d}x" for d in shape)
    return ir.Type.parse(f"tensor<{dims}{element}>")


def _rewrite(op: Any) -> list[Any] | None:
    src, dst = t.vtensor(op.operands[0]), t.vtensor(op.results[0])
    if src is None or dst is None or src[0] != dst[0]:
        return None
    (shape, src_dtype), dst_dtype = src, dst[1]
    a, b = _builtin(src_dtype), _builtin(dst_dtype)
    if a is None or b is None or _WIDTH.match(src_dtype)[1] != _WIDTH.match(dst_dtype)[1]:
        return None
    builtin = t.make_op("torch_c.to_builtin_tensor", [op.operands[0]], _tensor_type(shape, a))
    cast = t.make_op("tensor.bitcast", [builtin], _tensor_type(shape, b))
    return [t.make_op("torch_c.from_builtin_tensor", [cast], op.results[0].type)]


def load_dialects(context: Any) -> None:
    """Load ``torch_c`` into ``context`` before the pass runs (a dialect must not be loaded
    while passes run): torch-mlir's Python build registers none to build ops of, and its
    conversion passes load it, so one runs on an empty module."""
    from torch_mlir import ir, passmanager

    if context.is_registered_operation("torch_c.to_builtin_tensor"):
        return
    with context, ir.Location.unknown():
        passmanager.PassManager.parse("builtin.module(torch-func-backend-type-conversion)").run(
            ir.Module.create().operation)


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.view.dtype"}, _rewrite)
