"""``lowerkit.tools.bisect``: which stage, op and iree-compile flag changed a compiled answer.

A pass author whose model's answer moved would otherwise bisect dozens of passes and flags by
hand. Every probe here is an ordinary `lowerkit.compile` (inline weights, no cache) of the
same program on the same inputs, judged by `lowerkit.runtime.numerics.compare` at the
outputs' default tolerance (f32: 1e-5 of the scale):

- the stage: the pipeline cut after each stage whose IR has left the torch dialect (linalg
  on), searched by halves for the first cut whose answer differs from the reference;
- the op: the FX graph cut after each of its ops (the cut's value made the output), compiled
  through the same cut pipeline, searched by halves for the first value that differs; its
  Python source line is the one the IR's locations carry (the node's stack trace);
- a flag: the shortest prefix of the given iree-compile flags whose answer differs from the
  compile without them; its last flag is named.

The reference is eager PyTorch, or the same pipeline without ``without_stage``, or (for flags)
the compile without the flags. Searching by halves assumes a wrong value stays wrong
downstream, which holds for the faults a pass or a flag plants; each probe is recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from ..errors import LowerkitError

__all__ = ["bisect", "BisectReport", "Probe"]


@dataclass
class Probe:
    """One compile bisect ran: what it cut at, and how far its answer was from the reference."""

    what: str          # "stage", "op" or "flags"
    name: str
    rel_error: float
    ok: bool


@dataclass
class BisectReport:
    """Where a compiled answer first differs. ``diverged`` False: it matches the reference."""

    diverged: bool
    reference: str
    stage: str | None = None       # the first stage after which the answer differs
    flag: str | None = None        # the iree-compile flag that changes it
    op: str | None = None          # the first op (ATen, as in the FX graph) whose value differs
    node: str | None = None        # its FX node's name
    module: str | None = None      # the submodule that ran it (``features.0: Conv2d``), if any
    location: str | None = None    # FILE:LINE of its Python source, where known
    source: str | None = None      # that line's code
    rel_error: float = 0.0         # the final answer's error relative to scale
    op_rel_error: float | None = None
    message: str = ""
    probes: list[Probe] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self, title: str = "lowerkit bisect") -> Any:
        """A rich table naming the stage, flag, op, location and the errors."""
        from rich.table import Table

        t = Table(title=title, show_header=True)
        t.add_column("what")
        t.add_column("found")
        rows = [("reference", self.reference),
                ("answer", self.message),
                ("error / scale", f"{self.rel_error:.3g}")]
        if self.diverged:
            if self.flag is not None:
                rows.append(("flag", self.flag))
            rows.append(("stage", self.stage or "?"))
            rows.append(("op", f"{self.op} ({self.node})" if self.op else "not found"))
            if self.module:
                rows.append(("in module", self.module))
            rows.append(("location", self.location or "unknown"))
            if self.source:
                rows.append(("source", self.source))
            if self.op_rel_error is not None:
                rows.append(("op error / scale", f"{self.op_rel_error:.3g}"))
        rows.append(("compiles", str(len(self.probes))))
        for what, found in rows:
            t.add_row(what, found)
        return t


def _outputs(art: Any, args: tuple, kwargs: dict) -> Any:
    return art(*args, **kwargs)


def _compile_answer(fn, args, kwargs, *, target, pipeline, flags) -> Any:
    from ..api import compile as compile_

    art = compile_(fn, args, kwargs, target=target, pipeline=pipeline, iree_flags=list(flags),
                   cache=False, weights="inline")
    return _outputs(art, args, kwargs)


def _cut(pipe: Any, last: str) -> Any:
    """``pipe``'s stages up to and including ``last``, as a pipeline of its own."""
    from ..stages.pipeline import Pipeline

    leaves = list(pipe.leaf_stages())
    names = [s.name for s in leaves]
    return Pipeline("bisect-cut", leaves[:names.index(last) + 1],
                    description=f"{pipe.name} up to {last}")


def _without(pipe: Any, name: str) -> Any:
    from ..stages.pipeline import Pipeline

    leaves = [s for s in pipe.leaf_stages() if s.name != name]
    if len(leaves) == len(list(pipe.leaf_stages())):
        raise LowerkitError(f"pipeline {pipe.name!r} has no stage {name!r}; stages: "
                            f"{', '.join(pipe.stage_names)}")
    return Pipeline(f"{pipe.name}-without-{name}", leaves)


def _linalg_stages(fn, args, kwargs, *, target, pipeline, flags) -> tuple[list[str], Any]:
    """The stages whose output holds no torch-dialect op, and the full pipeline's answer (one
    compile with an instrument that reads each stage's ops)."""
    from ..api import compile as compile_
    from ..stages.instrument import Instrument

    seen: list[tuple[str, bool]] = []
    names = set(pipeline.stage_names)

    class _Ops(Instrument):
        def after_stage(self, stage, module, record) -> None:
            if stage.name in names:
                seen.append((stage.name, not any(o.startswith("torch.") for o in record.ops)))

    art = compile_(fn, args, kwargs, target=target, pipeline=pipeline, iree_flags=list(flags),
                   cache=False, weights="inline", instruments=[_Ops()])
    return [n for n, linalg in seen if linalg], _outputs(art, args, kwargs)


def _first(items: Sequence, differs: Callable[[Any], bool]) -> int | None:
    """The index of the first item for which ``differs`` holds, by halves, given that the last
    one differs (not asked again); None when ``items`` is empty."""
    if not items:
        return None
    lo, hi = 0, len(items) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if differs(items[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


# -- the FX graph cut after one op --------------------------------------------------------------

class _AsModule(torch.nn.Module):
    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def _graph(fn, args, kwargs) -> Any:
    module = fn if isinstance(fn, torch.nn.Module) else _AsModule(fn)
    return torch.export.export(module, args, kwargs).module()


def _value_nodes(gm: Any) -> list:
    """The ops whose value is one floating tensor: what a cut can return."""
    out = []
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        if n.op == "call_function" and isinstance(val, torch.Tensor) and val.is_floating_point():
            out.append(n)
    return out


def _cut_graph(gm: Any, node: Any) -> torch.nn.Module:
    """A module of the graph's ops up to ``node``, returning ``node``'s value; it takes the
    graph's flat inputs."""
    g = torch.fx.Graph()
    env: dict = {}
    for n in gm.graph.nodes:
        if n.op == "output" or (n.op == "call_module" and str(n.target).startswith("_guards")):
            continue
        env[n] = g.node_copy(n, lambda x: env[x])
        if n is node:
            break
    g.output(env[node])
    g.eliminate_dead_code()
    return torch.fx.GraphModule(gm, g)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)')


def _source(node: Any) -> tuple[str | None, str | None]:
    """FILE:LINE and the code of the user's frame that made ``node`` (the last one in its
    stack trace outside torch), the line the IR's locations carry."""
    trace = node.meta.get("stack_trace") or ""
    frames = [f for f in _FRAME.findall(trace) if "/torch/" not in f[0]] or _FRAME.findall(trace)
    if not frames:
        return None, None
    file, line, code = frames[-1]
    return f"{file}:{line}", code.strip()


def _first_op(fn, args, kwargs, answer: Callable, expected: Callable,
              report: BisectReport) -> None:
    """Fill ``report``'s op: the first FX op whose value ``answer`` (a compile) gives
    differently from ``expected``."""
    gm = _graph(fn, args, kwargs)
    flat = tuple(pytree.tree_leaves((args, kwargs)))
    nodes = _value_nodes(gm)
    errors: dict[str, float] = {}

    def differs(node) -> bool:
        cut = _cut_graph(gm, node)
        from ..runtime.numerics import compare

        cmp = compare(answer(cut, flat), expected(cut, flat))
        errors[node.name] = cmp.max_rel_error
        report.probes.append(Probe("op", node.name, cmp.max_rel_error, cmp.ok))
        return not cmp.ok

    if not nodes or not differs(nodes[-1]):
        report.notes.append("no single op's value differs (the outputs differ by how they "
                            "are put together): op not named")
        return
    i = _first(nodes, differs)
    node = nodes[i]
    report.op, report.node = str(node.target), node.name
    report.op_rel_error = errors.get(node.name)
    report.location, report.source = _source(node)
    stack = node.meta.get("nn_module_stack") or {}
    if stack:  # the innermost submodule: (path, type)
        path, kind = list(stack.values())[-1]
        kind = getattr(kind, "__name__", str(kind)).rsplit(".", 1)[-1]
        report.module = f"{path}: {kind}" if path else kind


def _against(cmp: Any, report: BisectReport) -> str:
    """`compare`'s message, which says eager, naming the reference it was given instead."""
    if report.reference == "eager PyTorch":
        return cmp.message
    return cmp.message.replace("against eager", "against the reference").replace(
        "matches eager", "matches the reference")


# -- the entry point ----------------------------------------------------------------------------

def bisect(fn: Callable, args: Any = (), kwargs: dict | None = None, *, target: str = "cpu",
           pipeline: Any = None, without_stage: str | None = None,
           flags: Sequence[str] = (), iree_flags: Sequence[str] = (),
           find_op: bool = True) -> BisectReport:
    """Find where ``fn(*args, **kwargs)`` compiled through ``pipeline`` first gives another
    answer than the reference.

    ``flags``: iree-compile flags under suspicion: the answer with all of them is compared with
    the one without, and the flag that changes it is named. ``without_stage``: the reference is
    the pipeline without that stage (else eager PyTorch). ``iree_flags``: flags every compile
    gets. ``find_op``: also name the first op whose value differs (more compiles).
    """
    from ..api import resolve_pipeline
    from ..runtime.numerics import compare

    kwargs = dict(kwargs or {})
    if not isinstance(args, tuple):
        args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    pipe = resolve_pipeline(pipeline)
    base = list(iree_flags)
    flags = list(flags)
    if flags and without_stage:
        raise LowerkitError("bisect takes flags or without_stage, not both: bisect one change "
                            "at a time")

    def answer(prog, a, kw, cut=pipe, extra=()) -> Any:
        return _compile_answer(prog, a, kw, target=target, pipeline=cut, flags=[*base, *extra])

    if flags:
        expected = answer(fn, args, kwargs)
        report = BisectReport(False, "the same compile without the flags " + " ".join(flags))
        final = compare(answer(fn, args, kwargs, extra=flags), expected)
        report.probes.append(Probe("flags", " ".join(flags), final.max_rel_error, final.ok))
        report.rel_error, report.message = final.max_rel_error, _against(final, report)
        if final.ok:
            return report
        report.diverged, report.stage = True, "iree-compile"

        def flag_differs(k: int) -> bool:
            cmp = compare(answer(fn, args, kwargs, extra=flags[:k]), expected)
            report.probes.append(Probe("flags", " ".join(flags[:k]), cmp.max_rel_error, cmp.ok))
            return not cmp.ok

        k = _first(range(1, len(flags) + 1), flag_differs)
        report.flag = flags[k]
        if find_op:
            _first_op(fn, args, kwargs,
                      lambda prog, flat: answer(prog, flat, {}, extra=flags[:k + 1]),
                      lambda prog, flat: answer(prog, flat, {}, extra=flags[:k]), report)
        return report

    if without_stage:
        ref_pipe = _without(pipe, without_stage)
        expected = answer(fn, args, kwargs, cut=ref_pipe)
        report = BisectReport(False, f"pipeline {pipe.name!r} without stage {without_stage!r}")

        def expected_of(prog, flat):
            return answer(prog, flat, {}, cut=ref_pipe)
    else:
        with torch.no_grad():
            expected = fn(*args, **kwargs)
        report = BisectReport(False, "eager PyTorch")

        def expected_of(prog, flat):
            with torch.no_grad():
                return prog(*flat)

    stages, got = _linalg_stages(fn, args, kwargs, target=target, pipeline=pipe, flags=base)
    final = compare(got, expected)
    report.probes.append(Probe("stage", pipe.stage_names[-1], final.max_rel_error, final.ok))
    report.rel_error, report.message = final.max_rel_error, _against(final, report)
    if final.ok:
        return report
    report.diverged = True
    if not stages or stages[-1] != pipe.stage_names[-1]:
        report.stage = "iree-compile"  # no stage's cut both compiles and differs: after them
        report.notes.append("the pipeline's last stage does not end in linalg; the answer is "
                            "judged only after it")
        stages = stages + [pipe.stage_names[-1]] if not stages else stages
    first_linalg = stages[0]

    def stage_differs(name: str) -> bool:
        cmp = compare(answer(fn, args, kwargs, cut=_cut(pipe, name)), expected)
        report.probes.append(Probe("stage", name, cmp.max_rel_error, cmp.ok))
        return not cmp.ok

    if report.stage is None:
        i = _first(stages, stage_differs)
        report.stage = stages[i]
        if i == 0 and first_linalg != pipe.stage_names[0]:
            report.notes.append(f"{first_linalg!r} is the first stage whose IR is linalg: the "
                                "change may be there or in a stage before it")
    if find_op:
        cut = _cut(pipe, report.stage) if report.stage in pipe.stage_names else pipe
        _first_op(fn, args, kwargs, lambda prog, flat: answer(prog, flat, {}, cut=cut),
                  expected_of, report)
    return report
