"""What a program computes from its weights alone, taken out of it and left to torch at bind time.

With the weights as arguments (`lowerkit.ingress.weights`), an op whose inputs are all weights
(a BatchNorm's ``running_var + eps``, then ``sqrt`` and ``reciprocal``) cannot be folded by
IREE at compile time: IREE hoists it into an initializer, which costs an executable's code
generation at compile and a pass at load. Here each such computation becomes one more weight
argument, whose value torch makes from the model's tensors whenever they are bound, from the
recipe `lowerkit.derived_weights.Derivation` records. The program keeps only what depends on
its inputs.

A chain of views alone (an ``unsqueeze`` of a bias, a ``t`` of a linear's weight) stays in
the program: IREE folds views into what reads them, at no cost, and a copy would only double
the weights' memory.
"""

from __future__ import annotations

from typing import Any

import torch

from . import conv_folding
from ..derived_weights import (NAMESPACES, Derivation, NotRecordable, Step, enabled, encode,
                               op_name)

# ops that copy or re-view a tensor without computing anything (beside the ops whose schema
# says they are views)
_NOT_COMPUTING = {"_unsafe_view", "clone", "contiguous", "lift_fresh_copy", "alias", "detach",
                  "view_copy", "reshape", "expand_copy", "permute_copy", "unsqueeze_copy",
                  "squeeze_copy", "t_copy", "transpose_copy", "slice_copy", "select_copy"}


_ASSERT_METADATA = torch.ops.aten._assert_tensor_metadata.default


def _recordable(target: Any) -> bool:
    """A pure, deterministic ATen or prims op (what a recipe may run at bind time)."""
    return (isinstance(target, torch._ops.OpOverload) and target.namespace in NAMESPACES
            and not target._schema.is_mutable
            and torch.Tag.nondeterministic_seeded not in target.tags)


def _computes(node: Any) -> bool:
    """Whether ``node`` computes (not a view, a copy, a cast to the dtype it had or a product
    with one)."""
    target = node.target
    if target.is_view or target._opname in _NOT_COMPUTING:
        return False
    if len(node.args) == 2 and type(node.args[1]) in (int, float) and (
            (target._opname in ("mul", "div") and node.args[1] == 1)
            or (target._opname in ("add", "sub") and node.args[1] == 0)):
        return False  # x * 1 (a decomposed addmm's beta): IREE folds it
    if target._opname in ("convert_element_type", "_to_copy"):
        source = node.all_input_nodes[0].meta.get("val")
        return not isinstance(source, torch.Tensor) or source.dtype != node.meta["val"].dtype
    return True


def _static_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and all(isinstance(d, int) for d in value.shape)


def _weight_only(graph: "torch.fx.Graph", weights: dict[str, str]) -> tuple[set, dict]:
    """The nodes computed from weights alone (the weights' placeholders among them), and for
    each op among them whether it or what it reads computes (`_computes`)."""
    weight_only: set[Any] = {n for n in graph.nodes if n.op == "placeholder" and n.name in weights}
    computes: dict[Any, bool] = {}
    for node in graph.nodes:
        if node.op != "call_function" or not _recordable(node.target):
            continue
        inputs = node.all_input_nodes
        if not inputs or any(i not in weight_only for i in inputs):
            continue
        if not _static_tensor(node.meta.get("val")):
            continue
        try:
            _encoded(node, {i: 0 for i in inputs})
        except NotRecordable:
            continue
        weight_only.add(node)
        computes[node] = _computes(node) or any(computes.get(i, False) for i in inputs)
    return weight_only, computes


def hoist(graph: "torch.fx.Graph", weights: dict[str, str]) -> dict[str, tuple[str, Derivation]]:
    """Rewrite ``graph`` in place: each value computed from weights alone that the rest of the
    program reads becomes a new placeholder. ``weights``: placeholder name -> state-dict key.
    Return the new placeholders by name, each with its weight's key and recipe; placeholders
    of weights nothing reads any more are removed. Nothing changes when derived weights are
    turned off (`lowerkit.derived_weights.ENV`)."""
    if not enabled():
        return {}
    weight_only, computes = _weight_only(graph, weights)
    if conv_folding.fold(graph, weight_only):  # more of the program computed from weights
        weight_only, computes = _weight_only(graph, weights)

    # torch.export's checks of a weight's dtype: it is fixed by the program and converted to at
    # bind time (`lowerkit.runtime.weights`); they would keep a hoisted weight in the program
    for node in list(graph.nodes):
        if node.target is _ASSERT_METADATA and node.args and node.args[0] in weight_only:
            graph.erase_node(node)
    edges = _read_through_views([n for n in graph.nodes if computes.get(n)
                                 and any(u not in weight_only for u in n.users)])
    if not edges:
        return {}
    first_op = next(n for n in graph.nodes if n.op != "placeholder")
    made: dict[str, tuple[str, Derivation]] = {}
    for edge, through_views in edges:
        derivation = _recipe(edge, weight_only, weights)
        with graph.inserting_before(first_op):
            placeholder = graph.placeholder(f"derived_{edge.name}")
        placeholder.meta = dict(edge.meta)
        edge.replace_all_uses_with(
            placeholder, delete_user_cb=lambda u: through_views or u not in weight_only)
        made[placeholder.name] = (f"{derivation.inputs[0]}@{edge.name}", derivation)

    for node in reversed(list(graph.nodes)):  # what only the hoisted values read
        if node in weight_only and not node.users:
            graph.erase_node(node)
    return made


def _read_through_views(edges: list) -> list[tuple[Any, bool]]:
    """Each edge, and whether the program reads it through views. Where a computed value has
    two or more users and every one is an edge that only views it (a depthwise filter scaled
    by its BatchNorm, then sliced into its taps: `conv_folding`), the value is the edge, and
    its views stay in the program: one derived weight, not one a view."""
    is_edge = set(edges)
    out: list[tuple[Any, bool]] = []
    sources: set[Any] = set()
    for edge in edges:
        inputs = edge.all_input_nodes
        source = inputs[0] if len(inputs) == 1 and not _computes(edge) else None
        if (source is not None and source.op == "call_function" and _computes(source)
                and len(source.users) >= 2
                and all(u in is_edge and not _computes(u) for u in source.users)):
            if source not in sources:
                sources.add(source)
                out.append((source, True))
        else:
            out.append((edge, False))
    return out


def _recipe(edge: Any, weight_only: set, weights: dict[str, str]) -> Derivation:
    """The ops that make ``edge`` from weights, in the graph's order."""
    needed: set[Any] = set()
    stack = [edge]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack.extend(i for i in node.all_input_nodes if i in weight_only)
    order = [n for n in edge.graph.nodes if n in needed]
    # the largest first: it names the derived weight (a filter scaled by its BatchNorm is the
    # filter's, whichever vector the graph has first)
    inputs = sorted((n for n in order if n.op == "placeholder"),
                    key=lambda n: -getattr(n.meta.get("val"), "numel", lambda: 0)())
    steps = [n for n in order if n.op != "placeholder"]
    refs = {n: i for i, n in enumerate([*inputs, *steps])}
    return Derivation(
        tuple(weights[n.name] for n in inputs),
        tuple(tuple(n.meta["val"].shape) for n in inputs),
        tuple(Step(op_name(n.target), *_encoded(n, refs))
              for n in steps))


def _encoded(node: Any, refs: dict) -> tuple[tuple, dict]:
    """``node``'s arguments and keyword arguments as JSON (`NotRecordable` if they are not)."""
    return (tuple(encode(list(node.args), refs)),
            {k: encode(v, refs) for k, v in node.kwargs.items()})
