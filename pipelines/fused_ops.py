# RUN: %PYTHON %s %S/../test/lit/Inputs/activations.py:gelu_silu --print-all | FileCheck %s
# CHECK: // ----- after raise-to-fused
# CHECK: "fused.gelu"
# CHECK: "fused.silu"
# CHECK: // ----- after lower-fused-to-linalg
# CHECK-NOT: "fused.
# CHECK: // ----- after linalg-on-tensors
# CHECK-COUNT-3: linalg.generic
"""torch-to-linalg-fused: the default pipeline with a custom dialect in the middle.

A worked example of a lowering written in Python (see README "Write your own lowering"):

1. the IRDL dialect ``fused`` (``dialects/fused.mlir``) holds whole activations;
2. ``raise-to-fused`` (greedy Python patterns, after ``torch-backend-contract``) raises
   ``torch.aten.gelu`` and ``x * sigmoid(x)`` into ``fused.gelu`` / ``fused.silu`` on builtin
   tensors, between ``torch_c`` casts;
3. ``lower-fused-to-linalg`` (a dialect conversion, ``fused`` illegal) writes each fused op
   as one ``linalg.generic`` with its scalar body in ``arith``/``math``;
4. ``linalg-on-tensors`` finishes as the default pipeline does. No fused op reaches IREE.

Run it on a model factory to print every stage:

    python pipelines/fused_ops.py test/lit/Inputs/activations.py:gelu_silu --print-all
"""

from __future__ import annotations

import re
import sys
from typing import Any

from lowerkit import ConversionStage, GreedyRewriteStage, Pipeline, pattern, registry

NAME = "torch-to-linalg-fused"
_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(bf16|f16|f32|f64)>$")


def _builtin_tensor_type(vtensor: Any) -> Any:
    """``tensor<4x?xf32>`` for ``!torch.vtensor<[4,?],f32>``; None for other types."""
    from torch_mlir import ir

    m = _VTENSOR.match(str(vtensor))
    if not m:
        return None
    dims = [d.strip().replace("-1", "?") for d in m.group(1).split(",") if d.strip()]
    return ir.Type.parse(f"tensor<{'x'.join(dims + [m.group(2)])}>")


def _replace_with_fused(rewriter: Any, op: Any, fused_name: str, x: Any) -> Any:
    """``from_builtin(fused_name(to_builtin(x)))`` in place of ``op``; truthy if impossible."""
    from torch_mlir import ir

    tensor = _builtin_tensor_type(x.type)
    if tensor is None:
        return True
    with rewriter.ip, op.location:
        b = ir.Operation.create("torch_c.to_builtin_tensor", results=[tensor], operands=[x])
        f = ir.Operation.create(fused_name, results=[tensor], operands=[b.result])
        v = ir.Operation.create("torch_c.from_builtin_tensor", results=[op.results[0].type],
                                operands=[f.result])
    rewriter.replace_op(op, v)
    return None


@pattern("torch.aten.gelu")
def gelu_to_fused(op: Any, rewriter: Any) -> Any:
    approximate = op.operands[1].owner
    if approximate.name != "torch.constant.str" or str(approximate.attributes["value"]) != '"none"':
        return True  # the tanh approximation is another function
    return _replace_with_fused(rewriter, op, "fused.gelu", op.operands[0])


@pattern("torch.aten.mul.Tensor")
def silu_to_fused(op: Any, rewriter: Any) -> Any:
    a, b = op.operands
    for x, s in ((a, b), (b, a)):
        owner = s.owner
        if getattr(owner, "name", None) == "torch.aten.sigmoid" and owner.operands[0] == x \
                and x.type == op.results[0].type:
            return _replace_with_fused(rewriter, op, "fused.silu", x)
    return True


def raise_to_fused() -> GreedyRewriteStage:
    return GreedyRewriteStage("raise-to-fused", [gelu_to_fused, silu_to_fused], dialects=("fused", "torch_c"))


def _elementwise_generic(rewriter: Any, op: Any, x: Any, body) -> Any:
    """One ``linalg.generic`` applying ``body(value) -> value`` to every element of ``x``."""
    from torch_mlir import ir
    from torch_mlir.dialects import linalg, tensor

    ttype = ir.RankedTensorType(x.type)
    rank = ttype.rank
    with rewriter.ip, op.location:
        sizes = [tensor.DimOp(x, _index(i)).result if ttype.is_dynamic_dim(i) else ttype.shape[i]
                 for i in range(rank)]
        init = tensor.EmptyOp(sizes, ttype.element_type)
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        generic = linalg.GenericOp(
            [ttype], [x], [init.result], ir.ArrayAttr.get([identity, identity]),
            ir.ArrayAttr.get([parallel] * rank),
        )
        block = generic.regions[0].blocks.append(ttype.element_type, ttype.element_type)
        with ir.InsertionPoint(block):
            linalg.YieldOp([body(block.arguments[0])])
    rewriter.replace_op(op, generic.operation)
    return None


def _index(i: int) -> Any:
    from torch_mlir import ir
    from torch_mlir.dialects import arith

    return arith.ConstantOp(ir.IndexType.get(), i).result


def _const(like: Any, value: float) -> Any:
    from torch_mlir.dialects import arith

    return arith.ConstantOp(like.type, value).result


def _gelu_body(x: Any) -> Any:
    from torch_mlir.dialects import arith, math

    inner = math.erf(arith.mulf(x, _const(x, 0.7071067811865476)))
    return arith.mulf(arith.mulf(x, _const(x, 0.5)), arith.addf(inner, _const(x, 1.0)))


def _silu_body(x: Any) -> Any:
    from torch_mlir.dialects import arith, math

    one = _const(x, 1.0)
    return arith.divf(x, arith.addf(one, math.exp(arith.negf(x))))


@pattern("fused.gelu")
def lower_gelu(op: Any, adaptor: Any, type_converter: Any, rewriter: Any) -> Any:
    return _elementwise_generic(rewriter, op, op.operands[0], _gelu_body)


@pattern("fused.silu")
def lower_silu(op: Any, adaptor: Any, type_converter: Any, rewriter: Any) -> Any:
    return _elementwise_generic(rewriter, op, op.operands[0], _silu_body)


def lower_fused_to_linalg() -> ConversionStage:
    return ConversionStage("lower-fused-to-linalg", [lower_gelu, lower_silu], illegal=("fused",),
                           dialects=("fused", "arith", "math", "tensor", "linalg"))


def build_pipeline() -> Pipeline:
    """The default pipeline with gelu/silu raised into ``fused`` (after the backend contract)
    and lowered to linalg before the rest goes to linalg-on-tensors."""
    stages = registry.pipelines.get("torch-to-linalg").stages
    at = [s.name for s in stages].index("linalg-on-tensors")
    return Pipeline(
        NAME,
        [*stages[:at], raise_to_fused(), lower_fused_to_linalg(), *stages[at:]],
        description="torch-to-linalg with gelu/silu raised into the fused dialect and lowered to linalg.generic",
    )


if __name__ == "__main__":
    import argparse

    from lowerkit.cli import lower

    parser = argparse.ArgumentParser(prog="fused_ops.py", description=__doc__)
    lower.add_arguments(parser)
    sys.exit(lower.main(parser.parse_args([*sys.argv[1:], "--pipeline", NAME])))
