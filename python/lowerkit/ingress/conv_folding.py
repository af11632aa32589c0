"""A per-channel scale and shift after a convolution, folded into its weights.

An eval-mode BatchNorm after a convolution reaches the graph as ``(y - mean) * invstd * gamma +
beta``, each a vector over the convolution's output channels (a FrozenBatchNorm, or a scale
written by hand, the same with other names). With the weights as parameters IREE cannot fold
them: the convolution's dispatch reads four more vectors, each packed for the data-tiled matmul
by an executable of its own, and applies them one by one. Folded, the program is the
convolution by ``w * scale`` plus one shift vector, and torch computes both from the model's
tensors whenever weights are bound (`lowerkit.ingress.weight_computations`), so another
checkpoint still needs no compile. Compile-time and call-time effects are measured by
``benchmarks/conv_folding.py``.

A depthwise convolution that goes per tap (`decompositions._conv_taps`) leaves no convolution
op: it reaches the graph as a sum of windows, each times its tap's per-channel weights. Its
chain folds the same way, into the taps' weights.

Only float32 and float64 chains are folded: the folded weights are rounded once in the
weights' dtype, which in 16-bit floats is a change eager's per-op rounding does not make.
"""

from __future__ import annotations

import math
from typing import Any

import torch

aten = torch.ops.aten

_CHAIN_OPS = {aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul"}
_FLOATS = (torch.float32, torch.float64)
# False leaves every convolution's scale and shift in the program (the benchmark's switch)
FOLD = True
# False leaves a sum of taps' scale and shift (a depthwise convolution per tap) in the program
FOLD_TAPS = True


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _per_channel(operand: Any, out: torch.Tensor) -> bool:
    """Whether ``operand`` broadcasts over ``out`` ``[N, C, ...]`` as one value per channel
    (or one value in all) without widening it."""
    shape = list(operand.shape)
    if len(shape) > out.dim():
        return False
    padded = [1] * (out.dim() - len(shape)) + shape
    return (all(d == 1 for i, d in enumerate(padded) if i != 1)
            and padded[1] in (1, out.shape[1]))


def _step(node: Any, cur: Any, weight_only: set,
          out: torch.Tensor) -> "tuple[str, Any, Any] | None":
    """``node`` as (op, per-channel operand, alpha) if it applies a weight-only per-channel
    vector to ``cur`` without changing its shape or dtype, else None."""
    kind = _CHAIN_OPS.get(node.target) if node.op == "call_function" else None
    if kind is None or len(node.args) != 2 or set(node.kwargs) - {"alpha"}:
        return None
    a, b = node.args
    if a is cur:
        operand = b
    elif b is cur and kind in ("add", "mul"):
        operand = a
    else:
        return None
    alpha = node.kwargs.get("alpha", 1)
    if kind == "mul" and alpha != 1 or type(alpha) not in (int, float):
        return None
    val, other = _val(node), _val(operand)
    if (operand not in weight_only or not isinstance(other, torch.Tensor)
            or not isinstance(val, torch.Tensor) or val.dtype != out.dtype
            or other.dtype != out.dtype or not _per_channel(other, out)):
        return None
    return kind, operand, alpha


def _chain(head: Any, weight_only: set, out: torch.Tensor,
           shifts: int = 0) -> "tuple[list, list] | None":
    """The adds, subtracts and multiplies by weight-only per-channel vectors that follow
    ``head``, each the only user of the one before, with their steps (`_step`); None if there
    is nothing to fold: no scale, and one shift at most with the ``shifts`` ``head`` adds
    itself (a bias), already the folded form."""
    chain, steps, cur = [], [], head
    while len(cur.users) == 1:
        user = next(iter(cur.users))
        step = _step(user, cur, weight_only, out)
        if step is None:
            break
        chain.append(user)
        steps.append(step)
        cur = user
    if not any(kind == "mul" for kind, _, _ in steps) and len(steps) + shifts < 2:
        return None
    return chain, steps


def fold(graph: "torch.fx.Graph", weight_only: set) -> int:
    """Rewrite ``graph`` in place: each ``aten.convolution`` whose weights are ``weight_only``
    nodes, followed (as its only user, and theirs) by adds, subtracts and multiplies by
    weight-only per-channel vectors, becomes the convolution by scaled weights plus one shift,
    whose new nodes compute from weights alone (for `weight_computations.hoist` to take out);
    so does a depthwise convolution's sum of taps (`_tap_sum`). Return how many were folded."""
    folded, erased = 0, set()
    for conv in list(graph.nodes):
        if conv in erased or conv.op != "call_function" or not FOLD:
            continue
        if conv.target is aten.add.Tensor:
            folded += _fold_taps(graph, conv, weight_only, erased) if FOLD_TAPS else 0
            continue
        if conv.target is not aten.convolution.default:
            continue
        x, w, bias, *rest = conv.args
        out = _val(conv)
        if (rest[3] or w not in weight_only
                or bias is not None and bias not in weight_only
                or not isinstance(out, torch.Tensor) or out.dtype not in _FLOATS
                or not isinstance(out.shape[1], int)
                or _val(w) is None or _val(w).dtype != out.dtype):
            continue
        found = _chain(conv, weight_only, out, shifts=bias is not None)
        if found is None:
            continue
        _rewrite(graph, conv, *found)
        erased.update(found[0])
        folded += 1
    return folded


def _builder(graph: "torch.fx.Graph", like: Any) -> Any:
    """A function that adds an op's node to ``graph`` with its value computed in the values'
    own fake mode, and ``like``'s source line."""
    import contextlib

    from torch._guards import detect_fake_mode

    mode = detect_fake_mode([_val(like)]) or contextlib.nullcontext()

    def call(op: Any, *args: Any, **kwargs: Any) -> Any:
        node = graph.call_function(op, args, kwargs)
        vals = [_val(a) if isinstance(a, torch.fx.Node) else a for a in args]
        with mode:
            node.meta["val"] = op(*vals, **kwargs)
        if "stack_trace" in like.meta:
            node.meta["stack_trace"] = like.meta["stack_trace"]
        return node

    return call


def _as_channels(call: Any, operand: Any, channels: int) -> Any:
    """A per-channel operand (`_per_channel`) as a ``[channels]`` vector, with no op where it
    is one already: each op here is traced on fake tensors and, in the folded weights' recipe,
    evaluated at every binding of the weights."""
    shape = list(_val(operand).shape)
    if len(shape) != 1:
        operand = call(aten.reshape.default, operand, [-1])
    if math.prod(shape) == channels:
        return operand
    return call(aten.expand.default, operand, [channels])


def _scale_and_shift(call: Any, steps: list, shift: Any, channels: int) -> tuple[Any, Any]:
    """The steps' product of scales and their shift (after ``shift``, the head's own bias),
    each a ``[channels]`` vector or None."""
    scale = None
    for kind, operand, alpha in steps:
        vector = _as_channels(call, operand, channels)
        if kind == "mul":
            scale = vector if scale is None else call(aten.mul.Tensor, scale, vector)
            if shift is not None:
                shift = call(aten.mul.Tensor, shift, vector)
        elif shift is None:
            shift = (vector if kind == "add" and alpha == 1
                     else call(aten.mul.Tensor, vector, alpha if kind == "add" else -alpha))
        else:
            shift = call(getattr(aten, kind).Tensor, shift, vector, alpha=alpha)
    return scale, shift


def _rewrite(graph: "torch.fx.Graph", conv: Any, chain: list, steps: list) -> None:
    """``conv`` by its weights times the steps' product of scales, plus their shift, in place
    of ``chain`` (`fold`)."""
    x, w, bias, *rest = conv.args
    out = _val(conv)
    call = _builder(graph, conv)
    channels, spatial = out.shape[1], [1] * (out.dim() - 2)
    # after every operand (a vector's ops may come after the convolution's), before the
    # chain's end, where the folded convolution replaces the old one
    with graph.inserting_before(chain[-1]):
        scale, shift = _scale_and_shift(call, steps, bias, channels)
        if scale is not None:
            w = call(aten.mul.Tensor, w, call(aten.reshape.default, scale,
                                              [channels] + [1] * (_val(w).dim() - 1)))
        result = call(aten.convolution.default, x, w, None, *rest)
        result.meta = {**conv.meta, "val": result.meta["val"]}
        if shift is not None:
            result = call(aten.add.Tensor, result,
                          call(aten.reshape.default, shift, [1, channels, *spatial]))
    chain[-1].replace_all_uses_with(result)
    for node in [*reversed(chain), conv]:
        graph.erase_node(node)


def _tap_sum(root: Any, weight_only: set, out: torch.Tensor) -> "tuple[list, list] | None":
    """``root`` as a sum of two or more terms, each a value times a weight-only per-channel
    vector, and read by nothing but the sum (a depthwise convolution per tap): its terms as
    (value, vector) in the sum's order and its nodes; None if it is not one."""
    terms, nodes, stack = [], [], [root]
    while stack:
        node = stack.pop()
        if (not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.kwargs
                or len(node.args) != 2 or node is not root and len(node.users) != 1):
            return None
        nodes.append(node)
        if node.target is aten.add.Tensor:
            stack.extend(reversed(node.args))  # the left operand first: the sum's order
            continue
        if node.target is not aten.mul.Tensor:
            return None
        a, b = node.args
        value, vector = (a, b) if b in weight_only else (b, a)
        val, other = _val(node), _val(vector)
        if (vector not in weight_only or value in weight_only
                or not isinstance(val, torch.Tensor) or val.shape != out.shape
                or val.dtype != out.dtype or not isinstance(other, torch.Tensor)
                or other.dtype != out.dtype or not _per_channel(other, out)
                or other.dim() < out.dim() - 1):
            return None
        terms.append((value, vector))
    return (terms, nodes) if len(terms) >= 2 else None


def _fold_taps(graph: "torch.fx.Graph", root: Any, weight_only: set, erased: set) -> int:
    """`fold` for a sum of taps (`_tap_sum`) ending at ``root``: the taps' weights times the
    chain's scale, and the sum plus its shift, in place of the chain."""
    out = _val(root)
    if (not isinstance(out, torch.Tensor) or out.dtype not in _FLOATS or out.dim() < 2
            or not isinstance(out.shape[1], int)):
        return 0
    found = _tap_sum(root, weight_only, out)
    chain_steps = found and _chain(root, weight_only, out)
    if not chain_steps:
        return 0
    (terms, nodes), (chain, steps) = found, chain_steps
    # the taps' vectors are slices of one tensor (`_conv_taps`' ``per_tap[tap]``), which is
    # scaled once: one derived weight read through its slices (`weight_computations.hoist`)
    vectors = [v for _, v in terms]
    base = vectors[0].args[0] if vectors[0].target is aten.select.int else None
    if base is None or set(base.users) != set(vectors) or not all(
            v.target is aten.select.int and v.args[0] is base and v.args[1] == 0
            for v in vectors):
        return 0
    channels, spatial = out.shape[1], [1] * (out.dim() - 2)
    call = _builder(graph, root)
    with graph.inserting_before(chain[-1]):
        scale, shift = _scale_and_shift(call, steps, None, channels)
        if scale is not None:  # along the channel dim, one after a tap's
            dims = _val(base).dim()
            channel = 2 - (out.dim() - (dims - 1))
            base = call(aten.mul.Tensor, base, call(aten.reshape.default, scale, [
                channels if i == channel else 1 for i in range(dims)]))
            vectors = [call(aten.select.int, base, 0, v.args[2]) for v in vectors]
        result = None
        for (value, _), vector in zip(terms, vectors):
            term = call(aten.mul.Tensor, value, vector)
            result = term if result is None else call(aten.add.Tensor, result, term)
        if shift is not None:
            result = call(aten.add.Tensor, result,
                          call(aten.reshape.default, shift, [1, channels, *spatial]))
    chain[-1].replace_all_uses_with(result)
    for node in [*reversed(chain), *nodes]:  # the sum's nodes: its root first
        graph.erase_node(node)
    erased.update(chain)
    return 1
