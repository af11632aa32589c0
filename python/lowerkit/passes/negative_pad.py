"""crop-negative-pad: a constant pad with negative amounts becomes a slice, then a pad.

``F.pad(x, (2, -1))`` pads two columns on the left and removes one on the right. torch-mlir
lowers the negative amount to a ``tensor.pad`` / slice with a negative offset or one past the
end, which iree-compile rejects ("slice along dimension 1 runs out-of-bounds: 8 >= 8",
"expected offsets to be non-negative, but got -2"), on llvm-cpu and Vulkan. Cropping first
and padding by the non-negative amounts gives eager's result. Found by lowerkit's fuzzer.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "crop-negative-pad"


def _rewrite(op: Any) -> list[Any] | None:
    x, pad_v, value_v = list(op.operands)
    pads, src = t.int_list(pad_v), t.vtensor(x)
    if pads is None or src is None or not any(p < 0 for p in pads) or len(pads) % 2:
        return None
    shape, dtype = src
    rank = len(shape)
    for i in range(len(pads) // 2):  # pairs (before, after), from the last dim backwards
        dim, before, after = rank - 1 - i, pads[2 * i], pads[2 * i + 1]
        if before >= 0 and after >= 0:
            continue
        size = t.vtensor(x)[0][dim]
        if size is None:
            return None  # a dynamic dim: leave it to torch-mlir
        start, end = max(0, -before), size + min(0, after)
        if end < start:  # cropped past its size: eager fails too
            return None
        if end == start:  # cropped away entirely: the result is padding only, and an empty
            # slice at the end of a dim failed iree-compile ("offset 0 is out-of-bounds: 1 >=
            # 1": campaign seed 2119, a [1, 1] gather padded by (-1, 0, -1, 1))
            none = t.make_none()
            shape_out = t.vtensor(op.results[0])[0]
            return [t.make_op("torch.aten.new_full",
                              [op.operands[0], t.make_int_list(shape_out), value_v, none, none,
                               none, none], op.results[0].type)]
        x = t.make_slice(x, dim, start, end, 1)
        pads[2 * i], pads[2 * i + 1] = max(0, before), max(0, after)
    out = t.vtensor(op.results[0])
    if not any(pads):
        return [x]
    return [t.make_op("torch.aten.constant_pad_nd", [x, t.make_int_list(pads), value_v],
                      t.vtensor_type(out[0], dtype))]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.constant_pad_nd"}, _rewrite)
