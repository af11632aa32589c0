"""Python scalar math on sizes and on scalars read from data, rewritten into ops torch-mlir's FX
importer can import.

Over dynamic shapes an exported graph computes some scalars from sizes in Python: attention's
``1 / sqrt(E)`` as ``sym_float(E) ** -0.5``, interpolation's output size as
``trunc(size * scale)``. The importer (20261001) imports ``+ - * / // %`` and comparisons of
such scalars, but not ``sym_float``, ``**``, ``math.trunc``/``floor``/``ceil`` or ``sym_min``/
``sym_max`` (a ceil-mode pooling's output size), and fails with
"FIX ME: Unimplemented call_function" or "Unsupported builtin function for symbolic types".
``sym_float`` becomes ``aten.Float.Scalar``, the importer's own conversion; the rest is computed
on a 0-d float64 tensor and read back, which every target lowers.

Comparisons with a float on either side (``float(t) >= int(u)`` under Dynamo's
``capture_scalar_outputs``) import as ``aten.ge.float`` and kin, which torch-mlir's backend
contract does not legalize; they are compared on 0-d float64 tensors too. An int past 2**53
compared with a float is then rounded first, where Python compares exactly. ``sym_ite``, which
Dynamo adds to range-check the item of a bool tensor (``bool(t)``, ``(x > 0).item()``), is a
``where`` of 0-d tensors.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

aten = torch.ops.aten

# Python's function -> the same on a tensor (None: only the cast back)
_ON_A_TENSOR = {
    operator.pow: aten.pow.Tensor_Tensor,
    math.trunc: aten.trunc.default,
    math.floor: aten.floor.default,
    math.ceil: aten.ceil.default,
    math.sqrt: aten.sqrt.default,
    torch.sym_min: aten.minimum.default,
    torch.sym_max: aten.maximum.default,
}
# the importer reads a bool tensor's item as an int (`aten.Int.Tensor` typed `!torch.bool`,
# which fails to verify): a bool's item is asked for as one
_BOOL_ITEM = aten.Bool.Tensor
# comparisons, rewritten only where a float takes part (the importer lowers int ones)
_COMPARED_ON_A_TENSOR = {
    operator.eq: aten.eq.Tensor,
    operator.ne: aten.ne.Tensor,
    operator.lt: aten.lt.Tensor,
    operator.le: aten.le.Tensor,
    operator.gt: aten.gt.Tensor,
    operator.ge: aten.ge.Tensor,
}


def describe(node: torch.fx.Node, example: torch.Tensor) -> None:
    """The metadata torch-mlir's importer reads off a node lowerkit adds."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    node.meta["val"] = example
    node.meta["tensor_meta"] = _extract_tensor_metadata(example)


def _symbolic(arg: Any) -> bool:
    return isinstance(arg, torch.fx.Node) and \
        isinstance(arg.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool))


def _a_float(arg: Any) -> bool:
    value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
    return isinstance(value, (float, torch.SymFloat))


def rewrite(graph: torch.fx.Graph) -> None:
    """Each unimportable scalar op over a size made importable, in place."""
    for node in list(graph.nodes):
        if node.target is aten._local_scalar_dense.default and \
                isinstance(node.meta.get("val"), (bool, torch.SymBool)):
            node.target = _BOOL_ITEM
            continue
        if node.op != "call_function" or not any(_symbolic(a) for a in node.args):
            continue
        if node.target is torch.sym_float:
            node.target = aten.Float.Scalar
        elif node.target in _ON_A_TENSOR:
            _on_a_tensor(graph, node, _ON_A_TENSOR[node.target])
        elif node.target in _COMPARED_ON_A_TENSOR and any(_a_float(a) for a in node.args):
            _on_a_tensor(graph, node, _COMPARED_ON_A_TENSOR[node.target])
        elif node.target is torch.sym_ite:
            _on_a_tensor(graph, node, aten.where.self, first_dtype=torch.bool)


def _on_a_tensor(graph: torch.fx.Graph, node: torch.fx.Node, op: Any,
                 first_dtype: torch.dtype = torch.float64) -> None:
    """``f(a, ...)`` -> ``op(tensor(a), ...).item()``, as the int, float or bool it was; the
    first operand's tensor is ``first_dtype`` (a condition's bool), the others float64."""
    result = node.meta.get("val")
    if isinstance(result, (bool, torch.SymBool)):
        dtype = torch.bool
    elif isinstance(result, (int, torch.SymInt)):
        dtype = torch.int64
    else:
        dtype = torch.float64
    example = torch.empty((), dtype=torch.float64)
    with graph.inserting_before(node):
        operands = []
        for i, arg in enumerate(node.args):
            operand_dtype = first_dtype if i == 0 else torch.float64
            tensor = graph.call_function(aten.scalar_tensor.default, (arg,),
                                         {"dtype": operand_dtype})
            describe(tensor, torch.empty((), dtype=operand_dtype))
            operands.append(tensor)
        value = graph.call_function(op, tuple(operands))
        describe(value, torch.empty((), dtype=torch.bool) if dtype == torch.bool else example)
        if dtype not in (torch.float64, torch.bool):
            value = graph.call_function(aten._to_copy.default, (value,), {"dtype": dtype})
            describe(value, torch.empty((), dtype=dtype))
        read = graph.call_function(_BOOL_ITEM if dtype == torch.bool
                                   else aten._local_scalar_dense.default, (value,))
    read.meta["val"] = result
    node.replace_all_uses_with(read)
    graph.erase_node(node)
