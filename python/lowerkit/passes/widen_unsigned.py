"""widen-unsigned: compute ``uint8`` tensors as ``int32`` holding 0..255, as eager means them.

MLIR integers are signless and torch-mlir's lowerings of ``uint8`` are unreliable: ``a // 2``
and ``a * 3 + 1`` crash its linalg conversion (SIGSEGV), ``sum`` and ``sort`` treat values
over 127 as negative. This pass converts every ``uint8`` argument to ``int32`` on entry, gives
arithmetic and data-movement ops ``int32`` results, keeps each result in 0..255 with
``& 255`` where the op can leave that range (uint8 wraps around), and converts results back to
``uint8`` at the return. The function's signature does not change.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "widen-unsigned"
_UINT8, _INT32 = 0, 3  # torch's ScalarType codes
# Ops whose result dtype follows their operands, and that stay in 0..255 on 0..255 inputs.
_IN_RANGE = {
    "clone", "view", "reshape", "_reshape_alias", "permute", "transpose.int", "t", "slice.Tensor",
    "select.int", "cat", "stack", "where.self", "index.Tensor", "index.Tensor_hacked_twin",
    "gather", "unsqueeze", "squeeze", "squeeze.dim", "expand", "flip", "roll", "max", "min",
    "max.dim", "min.dim", "amax", "amin", "maximum", "minimum", "sort", "topk", "contiguous",
    "max_pool2d", "max_pool2d_with_indices", "constant_pad_nd", "repeat", "bitwise_and.Tensor",
    "bitwise_or.Tensor", "bitwise_xor.Tensor", "bitwise_and.Scalar", "clamp", "clamp.Tensor",
    "relu", "floor_divide", "floor_divide.Scalar", "div.Tensor_mode", "div.Scalar_mode",
    "remainder.Scalar", "remainder.Tensor", "rshift.Scalar", "rshift.Tensor", "__rshift__.Scalar",
    "__rshift__.Tensor", "bitwise_right_shift.Tensor", "bitwise_right_shift.Tensor_Scalar",
    "masked_fill.Scalar",
    "masked_fill.Tensor", "index_select", "narrow", "unbind.int", "split.Tensor", "chunk",
    "abs", "alias", "lift_fresh_copy", "detach", "copy", "index_put", "index_put.hacked_twin",
    "scatter.src", "scatter.value", "fill.Scalar", "fill.Tensor", "zeros_like", "ones_like",
    "full_like", "flatten.using_ints", "unflatten.int", "expand_as", "broadcast_to",
}
# Ops that can leave 0..255: their int32 result is wrapped with `& 255`.
_WRAP = {"add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "mul.Tensor", "mul.Scalar",
         "neg", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "lshift.Scalar", "lshift.Tensor",
         "__lshift__.Scalar", "__lshift__.Tensor", "bitwise_left_shift.Tensor",
         "bitwise_left_shift.Tensor_Scalar",
         "bitwise_not", "rsub.Scalar", "sum.dim_IntList", "cumsum", "square", "mm", "bmm",
         "matmul", "mv", "dot", "prod", "prod.dim_int"}


# Casts to uint8 from another dtype (their first operand the tensor cast)
_CONVERSIONS = {"torch.prims.convert_element_type", "torch.aten.to.dtype",
                "torch.aten._to_copy", "torch.aten.to.dtype_layout"}


def _is_u8(value: Any) -> bool:
    vt = t.vtensor(value)
    return vt is not None and vt[1] == "ui8"


def _retyped(value: Any) -> Any:
    return t.vtensor_type(t.vtensor(value)[0], "si32")


def _convert(value: Any, dtype_code: int, dtype: str) -> Any:
    f = t.make_bool(False)
    return t.make_op("torch.aten.to.dtype",
                     [value, t.make_int(dtype_code), f, f, t.make_none()],
                     t.vtensor_type(t.vtensor(value)[0], dtype))


def _wrap(value: Any) -> Any:
    return t.make_op("torch.aten.bitwise_and.Scalar", [value, t.make_int(255)], value.type)


def _widen_function(func: Any) -> None:
    from torch_mlir import ir

    block = func.regions[0].blocks[0]
    ops = list(block.operations)
    first = ops[0] if ops else None
    for arg in block.arguments:
        if _is_u8(arg) and first is not None:
            with ir.InsertionPoint(first), arg.location:
                wide = _convert(arg, _INT32, "si32")
            arg.replace_all_uses_except(wide, wide.owner.operation)
    for op in ops:
        name = op.operation.name  # an OpView's own `name` may be an attribute of that name
        if name == "func.return":
            operands = list(op.operands)
            for i, v in enumerate(operands):
                if t.vtensor(v) and t.vtensor(v)[1] == "si32" and _is_u8_result(func, i):
                    with ir.InsertionPoint(op), op.location:
                        op.operands[i] = _convert(v, _UINT8, "ui8")
            continue
        if name == "torch.aten._assert_tensor_metadata" and t.vtensor(op.operands[0]) \
                and t.vtensor(op.operands[0])[1] == "si32":
            op.erase()  # it asserts the uint8 dtype this pass has just widened
            continue
        results = [r for r in op.results if _is_u8(r)]
        if not results:
            continue
        short = name.removeprefix("torch.aten.")
        if short in _IN_RANGE or short in _WRAP:
            for r in results:
                r.set_type(_retyped(r))
            if short in _WRAP:
                for r in results:
                    with ir.InsertionPoint.after(op), op.location:
                        wrapped = _wrap(r)
                    r.replace_all_uses_except(wrapped, wrapped.owner.operation)
        elif name in _CONVERSIONS and not _is_u8(op.operands[0]):
            # float (or wider int) -> uint8: converted to int32 and wrapped, as eager's cast
            # wraps (358.5 -> 102). A direct f32 -> i8 cast is poison past 127, and LLVM's x86
            # code without AVX-512 saturated it: 151.5 -> 127 on an AMD EPYC host.
            with ir.InsertionPoint.after(op), op.location:
                wrapped = _wrap(_convert(op.operands[0], _INT32, "si32"))
            results[0].replace_all_uses_with(wrapped)
            op.erase()
        else:
            # Unknown op: keep its uint8 result and widen that right after it.
            for r in results:
                with ir.InsertionPoint.after(op), op.location:
                    wide = _convert(r, _INT32, "si32")
                r.replace_all_uses_except(wide, wide.owner.operation)


def _is_u8_result(func: Any, index: int) -> bool:
    from torch_mlir import ir

    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    return str(ftype.results[index]).endswith(",ui8>")


def run(module_op: Any, pass_: Any = None) -> None:
    from torch_mlir import ir

    funcs = []

    def visit(op):
        if op.name == "func.func":
            funcs.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    for func in funcs:
        if "ui8" in str(func.attributes["function_type"]) or _mentions_u8(func):
            _widen_function(func)


def _mentions_u8(func: Any) -> bool:
    found = []

    def visit(op):
        from torch_mlir import ir

        if any(_is_u8(r) for r in op.results):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return bool(found)
