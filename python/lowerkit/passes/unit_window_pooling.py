"""rewrite-unit-window-pooling: pooling with a 1x1 window and a stride is a strided slice.

IREE 3.13's llvm-cpu backend miscompiles a pooling op whose window is smaller than its stride
when its input is a padded slice joined by ``cat`` (results off by hundreds; see
test_defects.py). A window of one element selects every stride-th element, so a strided
``slice`` computes the same thing without the pooling op. Only exact cases are rewritten:
all-ones kernel, no padding, no divisor override, max pooling's indices unused.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "rewrite-unit-window-pooling"
_AVG = {"torch.aten.avg_pool1d", "torch.aten.avg_pool2d", "torch.aten.avg_pool3d"}
_MAX = {"torch.aten.max_pool1d", "torch.aten.max_pool2d", "torch.aten.max_pool3d",
        "torch.aten.max_pool2d_with_indices", "torch.aten.max_pool3d_with_indices"}


def _strided_slices(x: Any, strides: list[int], expected: list[int | None]) -> Any | None:
    shape, _ = t.vtensor(x)
    spatial = len(strides)
    if None in shape or len(shape) < spatial:
        return None
    out = x
    for i, s in enumerate(strides):
        dim = len(shape) - spatial + i
        out = t.make_slice(out, dim, 0, shape[dim], s)
    return out if t.vtensor(out)[0] == expected else None


def _rewrite(op: Any) -> list[Any] | None:
    operands = list(op.operands)
    x, kernel, stride, padding = operands[0], *(t.int_list(v) for v in operands[1:4])
    if kernel is None or padding is None or any(k != 1 for k in kernel) or any(padding):
        return None
    stride = stride or kernel  # an empty stride list means "same as the kernel"
    if len(stride) == 1 and len(kernel) > 1:
        stride = stride * len(kernel)
    if op.name in _AVG and len(operands) > 6 and not t.is_none(operands[6]):
        return None  # divisor_override divides: not a plain selection
    results = list(op.results)
    if len(results) > 1 and any(True for _ in results[1].uses):
        return None  # max-pool indices are used
    expected = t.vtensor(results[0])[0]
    out = _strided_slices(x, stride, expected)
    if out is None:
        return None
    if len(results) > 1:
        return None if any(True for _ in results[1].uses) else [out, out]
    return [out]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _AVG | _MAX, _rewrite)
