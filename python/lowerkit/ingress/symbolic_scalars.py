"""Python scalar math on sizes, rewritten into ops torch-mlir's FX importer can import.

Over dynamic shapes an exported graph computes some scalars from sizes in Python: attention's
``1 / sqrt(E)`` as ``sym_float(E) ** -0.5``, interpolation's output size as
``trunc(size * scale)``. The importer (20261001) imports ``+ - * / // %`` and comparisons of
such scalars, but not ``sym_float``, ``**`` or ``math.trunc``/``floor``/``ceil``, and fails with
"FIX ME: Unimplemented call_function" or "Unsupported builtin function for symbolic types".
``sym_float`` becomes ``aten.Float.Scalar``, the importer's own conversion; the rest is computed
on a 0-d float64 tensor and read back, which every target lowers.
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
}


def describe(node: torch.fx.Node, example: torch.Tensor) -> None:
    """The metadata torch-mlir's importer reads off a node lowerkit adds."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    node.meta["val"] = example
    node.meta["tensor_meta"] = _extract_tensor_metadata(example)


def _symbolic(arg: Any) -> bool:
    return isinstance(arg, torch.fx.Node) and \
        isinstance(arg.meta.get("val"), (torch.SymInt, torch.SymFloat))


def rewrite(graph: torch.fx.Graph) -> None:
    """Each unimportable scalar op over a size made importable, in place."""
    for node in list(graph.nodes):
        if node.op != "call_function" or not any(_symbolic(a) for a in node.args):
            continue
        if node.target is torch.sym_float:
            node.target = aten.Float.Scalar
        elif node.target in _ON_A_TENSOR:
            _on_a_tensor(graph, node)


def _on_a_tensor(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """``f(a, ...)`` -> ``f(tensor(a), ...).item()``, cast to the int or float it was."""
    result = node.meta.get("val")
    dtype = torch.int64 if isinstance(result, (int, torch.SymInt)) else torch.float64
    example = torch.empty((), dtype=torch.float64)
    with graph.inserting_before(node):
        operands = []
        for arg in node.args:
            tensor = graph.call_function(aten.scalar_tensor.default, (arg,),
                                         {"dtype": torch.float64})
            describe(tensor, example)
            operands.append(tensor)
        value = graph.call_function(_ON_A_TENSOR[node.target], tuple(operands))
        describe(value, example)
        if dtype != torch.float64:
            value = graph.call_function(aten._to_copy.default, (value,), {"dtype": dtype})
            describe(value, torch.empty((), dtype=dtype))
        read = graph.call_function(aten._local_scalar_dense.default, (value,))
    read.meta["val"] = result
    node.replace_all_uses_with(read)
    graph.erase_node(node)
