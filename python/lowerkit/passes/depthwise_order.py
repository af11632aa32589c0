"""reorder-depthwise-convs: on Vulkan, a depthwise convolution becomes a ``linalg.generic`` whose
loops run in its output's layout order (batch, channel, spatial, then the window).

IREE 3.13's SPIR-V code for ``linalg.depthwise_conv_{1,2}d_nc*_c*`` on its portable Vulkan
target gives a silent wrong answer: every channel after the first comes out wrong (a 3x3
depthwise conv on [1, 4, 8, 8], 0.99 of the output's scale; a ShuffleNet unit 0.11). IREE
generalizes the named op with the channel loop inside the spatial ones (``(oh, ow, c, kh, kw)``)
and distributes that wrongly. The same computation written with the loops in layout order
compiles right, on `vulkan` and `vulkan:llvmpipe`. Runs in IREE's MLIR build, on linalg on
tensors, for Vulkan targets.
"""

from __future__ import annotations

import re
from typing import Any

from ._source_fence import ir_of, ops_where

NAME = "reorder-depthwise-convs"
BUILD = "iree"
# linalg.depthwise_conv_2d_nchw_chw, depthwise_conv_1d_ncw_cw, depthwise_conv_3d_ncdhw_cdhw
_DEPTHWISE = re.compile(r"^linalg\.depthwise_conv_([123])d_nc(w|hw|dhw)_c(w|hw|dhw)$")


def _ints(op: Any, name: str, rank: int) -> list[int]:
    """``strides`` / ``dilations``: ``dense<[2, 1]> : vector<2xi64>``, or a splat ``dense<1>``."""
    if name not in op.attributes:
        return [1] * rank
    values = [int(v) for v in re.findall(r"-?\d+", str(op.attributes[name]).split(":")[0])]
    return values * rank if len(values) == 1 else values


def _rewrite(op: Any) -> None:
    ir = ir_of(op)
    rank = int(_DEPTHWISE.match(op.name).group(1))
    strides, dilations = _ints(op, "strides", rank), _ints(op, "dilations", rank)
    x, w = op.operands[0], op.operands[1]
    init = op.operands[2]
    spatial = [f"s{i}" for i in range(rank)]
    window = [f"k{i}" for i in range(rank)]
    dims = ", ".join(["n", "c", *spatial, *window])
    taps = ", ".join(f"{s} * {st} + {k} * {d}"
                     for s, k, st, d in zip(spatial, window, strides, dilations))
    maps = (f"[affine_map<({dims}) -> (n, c, {taps})>, "
            f"affine_map<({dims}) -> (c, {', '.join(window)})>, "
            f"affine_map<({dims}) -> (n, c, {', '.join(spatial)})>]")
    iterators = ", ".join(["#linalg.iterator_type<parallel>"] * (2 + rank)
                          + ["#linalg.iterator_type<reduction>"] * rank)
    element = ir.RankedTensorType(init.type).element_type
    integer = str(element).startswith(("i", "si", "ui"))  # muli/addi, else mulf/addf
    with ir.InsertionPoint(op), op.location:
        generic = ir.Operation.create(
            "linalg.generic", results=[init.type], operands=[x, w, init],
            attributes={"indexing_maps": ir.Attribute.parse(maps),
                        "iterator_types": ir.Attribute.parse(f"[{iterators}]"),
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([2, 1])},
            regions=1)
        block = generic.regions[0].blocks.append(
            ir.RankedTensorType(x.type).element_type, ir.RankedTensorType(w.type).element_type,
            element)
        with ir.InsertionPoint(block):
            a, b, acc = block.arguments
            mul = ir.Operation.create("arith.muli" if integer else "arith.mulf",
                                      results=[element], operands=[a, b]).results[0]
            add = ir.Operation.create("arith.addi" if integer else "arith.addf",
                                      results=[element], operands=[acc, mul]).results[0]
            ir.Operation.create("linalg.yield", operands=[add])
    op.results[0].replace_all_uses_with(generic.results[0])
    op.erase()


def reorder(module_op: Any) -> int:
    """Rewrite every depthwise convolution whose operands share one element type; returns how
    many (mixed-type ones, which would need extensions in the body, are left as they are)."""
    def wanted(op):
        if not _DEPTHWISE.match(op.name) or len(op.operands) != 3:
            return False
        types = {str(ir_of(op).RankedTensorType(v.type).element_type) for v in op.operands}
        return len(types) == 1
    convs = ops_where(module_op, wanted)
    for op in convs:
        _rewrite(op)
    return len(convs)


def run(module_op: Any, pass_: Any = None) -> None:
    reorder(module_op)
