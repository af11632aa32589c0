"""flatten-dynamic-views: a view that merges dynamic dims becomes ``aten.flatten``.

``x.view(b * t, c)`` of a ``[?, ?, c]`` tensor (a Linear over a batch and a sequence that are
both dynamic, as torch.export writes it) is lowered by torch-mlir 20261001 as a cast of ``x`` to
``[?, 1, c]`` and a collapse: right only when the second dim is 1. Otherwise IREE's runtime
check of the cast fails, or, when the cast is folded away (a third dynamic dim), the program
reads past its data: a silent wrong answer (torch-mlir's e2e ``BatchMlpLayerModule_basic``
through ``lowerkit.compile``: 0.85 off for outputs of scale 0.8). torch-mlir lowers
``aten.flatten.using_ints`` of dynamic dims to a plain collapse, which is right; a view whose
sizes are the input's own dims (``aten.size.int`` of it, their products, or constants equal to
its static dims), in order, each output dim a run of input dims, is that flatten. One size
that is none of these (a ``-1``, or dims read off another tensor) takes the dims the others
leave, as the view's element count says.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "flatten-dynamic-views"
_VIEWS = {"torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view"}


def _factors(value: Any, source: Any) -> list[int] | int | None:
    """The input dims whose product a size is (``aten.size.int`` of ``source``, or their
    ``aten.mul.int``), or a constant int; None for anything else."""
    const = t.const_int(value)
    if const is not None:
        return const
    name = t.owner_name(value)
    if name == "torch.aten.size.int" and value.owner.operands[0] == source:
        dim = t.const_int(value.owner.operands[1])
        return None if dim is None else [dim]
    if name == "torch.aten.mul.int":
        parts = [_factors(v, source) for v in value.owner.operands]
        if any(not isinstance(p, list) for p in parts):
            return None
        return parts[0] + parts[1]
    return None


def _groups(shape: list[int | None], sizes: list[list[int] | int]) -> list[list[int]] | None:
    """Each output size as a run of input dims, all of them in order; else None. A ``-1``
    takes the dims that the sizes before it and after it leave."""
    n = len(shape)
    if sizes.count(-1) > 1:
        return None
    if -1 not in sizes:
        groups = _runs(shape, sizes, range(n))
        return groups if groups is not None and sum(map(len, groups)) == n else None
    i = sizes.index(-1)
    head = _runs(shape, sizes[:i], range(n))
    tail = _runs(shape, sizes[:i:-1], range(n - 1, -1, -1))
    if head is None or tail is None:
        return None
    first, last = sum(map(len, head)), n - sum(map(len, tail))
    if first >= last:
        return None
    return head + [list(range(first, last))] + tail[::-1]


def _runs(shape: list[int | None], sizes: list[list[int] | int],
          order: range) -> list[list[int]] | None:
    """The dims each size takes, walking ``order`` (forward, or backward for the sizes after
    a ``-1``): a product of ``aten.size.int`` the next dims, a constant the next static dims
    whose product it is."""
    dims, groups, at = list(order), [], 0
    for k, size in enumerate(sizes):
        if isinstance(size, list):
            want = sorted(d + len(shape) if d < 0 else d for d in size)
            run = dims[at:at + len(want)]
            if sorted(run) != want:
                return None
        elif k == len(sizes) - 1 and at == len(dims) - 1 and order.step == 1 \
                and shape[dims[at]] is None:
            # the last size, one dim left: the view's element count makes it that size (a
            # dim export fixed but left symbolic, as Dim.AUTO does for a Linear's input)
            run = [dims[at]]
        else:
            run, product = [], 1
            while at + len(run) < len(dims) and shape[dims[at + len(run)]] is not None \
                    and (product < size or not run):
                product *= shape[dims[at + len(run)]]
                run.append(dims[at + len(run)])
            if product != size or not run:
                return None
        groups.append(sorted(run))
        at += len(run)
    return groups


def _rewrite(op: Any) -> list[Any] | None:
    x, sizes_v = op.operands[0], op.operands[1]
    src = t.vtensor(x)
    if src is None or t.owner_name(sizes_v) != "torch.prim.ListConstruct":
        return None
    shape, dtype = src
    # a size that is neither a constant nor the input's own dims is, by the view's element
    # count, whatever the others leave: a -1 (when it is the only one)
    sizes = [_factors(v, x) for v in sizes_v.owner.operands]
    sizes = [-1 if s is None else s for s in sizes]
    groups = _groups(shape, sizes)
    # only what torch-mlir gets wrong: a merge of dims of which one is dynamic
    if groups is None or not any(len(g) > 1 and any(shape[d] is None for d in g) for g in groups):
        return None
    value, current = x, list(shape)
    for group in reversed(groups):  # from the back, so that the earlier dims keep their index
        if len(group) < 2:
            continue
        start, end = group[0], group[-1]
        merged = 1
        for d in group:
            merged = None if merged is None or current[d] is None else merged * current[d]
        current = current[:start] + [merged] + current[end + 1:]
        value = t.make_op("torch.aten.flatten.using_ints",
                          [value, t.make_int(start), t.make_int(end)],
                          t.vtensor_type(current, dtype))
    if str(value.type) != str(op.results[0].type):  # the view's own (maybe better) type
        value = t.make_op("torch.tensor_static_info_cast", [value], op.results[0].type)
    return [value]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _VIEWS, _rewrite)
