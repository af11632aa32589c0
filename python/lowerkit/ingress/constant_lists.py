"""A weight, buffer or constant tensor inside a list argument (``x[idx]`` with a constant
``idx``: ``aten.index.Tensor(x, [idx])``; ``torch.cat([x, buf])``) read through a ``clone``.

torch-mlir's FX importer (20261001) replaces the placeholders of frozen values by the tensors
themselves before it imports the graph. A tensor in an operand position becomes a literal, but
its list import takes only graph nodes and stops at the tensor with "Heterogeneous lists are
not supported: expected vtensor, got torch.Tensor" (torchvision's Swin-T and timm's CoAtNet:
a relative-position index buffer). Read through a ``clone`` node, the value is a literal
operand of that node, and the list holds the node; the copy of a constant folds away.
"""

from __future__ import annotations

import torch

__all__ = ["read_list_constants"]


def _frozen_inputs(exported: torch.export.ExportedProgram) -> set[str]:
    sig = exported.graph_signature
    return {*sig.inputs_to_parameters, *sig.inputs_to_buffers,
            *sig.inputs_to_lifted_tensor_constants}


def read_list_constants(exported: torch.export.ExportedProgram) -> int:
    """Rewrite ``exported``'s graph in place; the number of list elements rewritten."""
    frozen = _frozen_inputs(exported)
    graph = exported.graph_module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    reads: dict[torch.fx.Node, torch.fx.Node] = {}

    def read(value):
        if not (isinstance(value, torch.fx.Node) and value.op == "placeholder"
                and value.name in frozen):
            return value
        if value not in reads:
            with graph.inserting_after(placeholders[-1]):
                node = graph.call_function(torch.ops.aten.clone.default, (value,))
            node.meta.update({k: v for k, v in value.meta.items() if k in ("val", "tensor_meta")})
            reads[value] = node
        return reads[value]

    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node in reads.values():
            continue
        args = list(node.args)
        for i, arg in enumerate(args):
            if isinstance(arg, (list, tuple)):
                new = type(arg)(read(a) for a in arg)
                if any(a is not b for a, b in zip(new, arg)):
                    count += sum(a is not b for a, b in zip(new, arg))
                    args[i] = new
        node.args = tuple(args)
    if count:
        graph.lint()
        exported.graph_module.recompile()
    return count
