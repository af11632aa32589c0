"""Weights as function arguments: the import that keeps a model's parameters and buffers out
of its IR.

A frozen import (`lowerkit.ingress.tensor_literals`) inlines every weight as a
``torch.vtensor.literal``; ResNet-50's 100 MB then travel through every stage, every backup,
the crossing into IREE, the cache key's hash and iree-compile. Here each parameter and buffer
stays a placeholder, so it becomes an argument of ``@main`` marked ``{lowerkit.parameter =
"layer.weight"}``. The IR holds code only. On the IREE side (`lowerkit.iree.parameters`) the
marked arguments become ``util.global``s bound to ``#stream.parameter.named<"model"::"...">``,
which the runtime fills from the model's own tensors (`lowerkit.runtime.weights`).

Lifted tensor constants (tensors the program creates or captures, not the model's state) stay
inline: they are part of the program, as its code is.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import derived_weights
from ..ir import WEIGHT_ATTRIBUTE as ATTRIBUTE
from . import weight_computations

# wrappers that `import_program` puts around the user's module; their names are not the user's
_PREFIXES = ("program.", "inner.")


def user_name(state_name: str) -> str:
    """``inner.layer1.0.conv1.weight`` -> ``layer1.0.conv1.weight`` (the model's state_dict key)."""
    for prefix in _PREFIXES:
        if state_name.startswith(prefix):
            state_name = state_name[len(prefix):]
    return state_name


def _externalizable(value: Any) -> bool:
    """Real dense CPU tensors can be handed to IREE by reference; anything else (fake or meta
    tensors, sparse or quantized ones, other devices) is inlined as before."""
    from torch._subclasses.fake_tensor import FakeTensor

    return (isinstance(value, torch.Tensor) and not isinstance(value, FakeTensor)
            and type(value) in (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer)
            and value.device.type == "cpu" and value.layout == torch.strided
            and not value.is_quantized and value.numel() > 0)


def mark_weight_arguments(func: Any, graph: "torch.fx.Graph", keys: dict[str, str],
                          derived: dict[str, tuple[str, Any]]) -> None:
    """Mark the arguments of the imported ``func`` that ``graph``'s placeholders hold weights
    in: ``keys`` (placeholder name -> state-dict key) for the model's tensors, ``derived``
    (`weight_computations.hoist`'s answer) for the values torch makes from them."""
    from torch_mlir import ir

    context = func.context
    attrs = []
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        if node.name in derived:
            key, derivation = derived[node.name]
            marks = {ATTRIBUTE: ir.StringAttr.get(key, context),
                     derived_weights.ATTRIBUTE: ir.StringAttr.get(derivation.dumps(), context)}
        elif node.name in keys:
            marks = {ATTRIBUTE: ir.StringAttr.get(keys[node.name], context)}
        else:
            marks = {}
        attrs.append(ir.DictAttr.get(marks, context))
    func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs, context)


def import_with_weight_arguments(importer: Any, exported: torch.export.ExportedProgram,
                                 func_name: str = "main") -> dict[str, torch.Tensor]:
    """Import ``exported`` into ``importer``'s module with its parameters and buffers as
    marked arguments of ``func_name``; return them by name, as the model's own tensors (no
    copy). What cannot be passed by reference is inlined as the frozen import would."""
    from torch_mlir import ir

    sig = exported.graph_signature
    inline: dict[str, Any] = {}
    for name, target in sig.inputs_to_lifted_tensor_constants.items():
        inline[name] = exported.constants[target]
    external: dict[str, str] = {}
    for name, target in [*sig.inputs_to_buffers.items(), *sig.inputs_to_parameters.items()]:
        value = exported.state_dict[target]
        if _externalizable(value):
            external[name] = target
        else:
            inline[name] = value

    graph = exported.graph
    for node in list(graph.nodes):
        if node.op == "placeholder" and node.name in inline:
            node.replace_all_uses_with(inline[node.name])
            graph.erase_node(node)
    # what the program computes from weights alone, torch computes at bind time
    derived = weight_computations.hoist(
        graph, {name: user_name(target) for name, target in external.items()})
    owner = getattr(graph, "owning_module", None)
    if owner is not None:  # higher-order ops' bodies first, as the frozen import does
        importer._import_all_child_modules(owner, func_name, False)
    func = importer.import_stateless_graph(graph, func_name=func_name).operation

    # every weight a recipe reads is bound, also one the program no longer reads itself
    weights = {user_name(target): exported.state_dict[target] for target in external.values()}
    mark_weight_arguments(func, graph, {n: user_name(t) for n, t in external.items()}, derived)
    return weights
