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

Only float32 and float64 chains are folded: the folded weights are rounded once in the
weights' dtype, which in 16-bit floats is a change eager's per-op rounding does not make.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten

_CHAIN_OPS = {aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul"}
_FLOATS = (torch.float32, torch.float64)
# False leaves every convolution's scale and shift in the program (the benchmark's switch)
FOLD = True


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


def fold(graph: "torch.fx.Graph", weight_only: set) -> int:
    """Rewrite ``graph`` in place: each ``aten.convolution`` whose weights are ``weight_only``
    nodes, followed (as its only user, and theirs) by adds, subtracts and multiplies by
    weight-only per-channel vectors, becomes the convolution by scaled weights plus one shift,
    whose new nodes compute from weights alone (for `weight_computations.hoist` to take out).
    Return how many convolutions were folded."""
    folded = 0
    for conv in list(graph.nodes):
        if conv.op != "call_function" or conv.target is not aten.convolution.default:
            continue
        x, w, bias, *rest = conv.args
        out = _val(conv)
        if (rest[3] or not FOLD or w not in weight_only
                or bias is not None and bias not in weight_only
                or not isinstance(out, torch.Tensor) or out.dtype not in _FLOATS
                or not isinstance(out.shape[1], int)
                or _val(w) is None or _val(w).dtype != out.dtype):
            continue
        chain, steps, cur = [], [], conv
        while len(cur.users) == 1:
            user = next(iter(cur.users))
            step = _step(user, cur, weight_only, out)
            if step is None:
                break
            chain.append(user)
            steps.append(step)
            cur = user
        if not any(kind == "mul" for kind, _, _ in steps) and len(steps) + (bias is not None) < 2:
            continue  # nothing to scale, and one shift at most: already the folded form
        _rewrite(graph, conv, chain, steps)
        folded += 1
    return folded


def _rewrite(graph: "torch.fx.Graph", conv: Any, chain: list, steps: list) -> None:
    """``conv`` by its weights times the steps' product of scales, plus their shift, in place
    of ``chain`` (`fold`)."""
    import contextlib

    from torch._guards import detect_fake_mode

    x, w, bias, *rest = conv.args
    out = _val(conv)
    mode = detect_fake_mode([out]) or contextlib.nullcontext()  # the values' own fake mode
    channels, spatial = out.shape[1], [1] * (out.dim() - 2)

    def call(op: Any, *args: Any, **kwargs: Any) -> Any:
        node = graph.call_function(op, args, kwargs)
        vals = [_val(a) if isinstance(a, torch.fx.Node) else a for a in args]
        with mode:
            node.meta["val"] = op(*vals, **kwargs)
        if "stack_trace" in conv.meta:
            node.meta["stack_trace"] = conv.meta["stack_trace"]
        return node

    # after every operand (a vector's ops may come after the convolution's), before the
    # chain's end, where the folded convolution replaces the old one
    scale, shift = None, bias
    with graph.inserting_before(chain[-1]):
        for kind, operand, alpha in steps:
            vector = call(aten.expand.default, call(aten.reshape.default, operand, [-1]),
                          [channels])
            if kind == "mul":
                scale = vector if scale is None else call(aten.mul.Tensor, scale, vector)
                if shift is not None:
                    shift = call(aten.mul.Tensor, shift, vector)
            elif shift is None:
                shift = (vector if kind == "add" and alpha == 1
                         else call(aten.mul.Tensor, vector, alpha if kind == "add" else -alpha))
            else:
                shift = call(getattr(aten, kind).Tensor, shift, vector, alpha=alpha)
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
