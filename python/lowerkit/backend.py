"""``torch.compile(model, backend="lowerkit")``: every graph Dynamo captures goes through
lowerkit's stages to an IREE executable; a graph lowerkit cannot take runs eagerly, and why is
recorded.

Dynamo hands over one graph per region between graph breaks; ``aot_autograd`` makes it
functional ATen with lowerkit's decompositions (forward and, when gradients are needed,
backward), `lowerkit.ingress.graph` imports it, and `lowerkit.api.compile_imported` runs the
same pipeline, target fixes, compile cache and call-signature checks as `lowerkit.compile`.

Options (``torch.compile(..., options={...})``): ``target``, ``pipeline``, ``cache``,
``dump_dir`` (each graph in its own numbered folder), ``verify`` (each call checked against
the graph run eagerly) and ``strict`` (raise instead of running a graph eagerly).
The backend is found by name through the ``torch_dynamo_backends`` entry point, so
``backend="lowerkit"`` works without importing lowerkit first.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from . import api
from .errors import LowerkitError
from .ingress import decompositions
from .ingress.graph import import_graph
from .ingress.importer import decomposition_table
from .runtime.verify import verified

OPTIONS = ("target", "pipeline", "cache", "dump_dir", "verify", "strict", "freeze")


@dataclass
class GraphRecord:
    """One graph the backend was given: where it runs and, when eagerly, why."""

    index: int
    kind: str                  # "forward", "backward" or "inference"
    ops: int                   # ATen calls in the graph
    ran: str                   # "lowerkit" or "eager"
    seconds: float             # import, lowering and compile
    reason: str | None = None  # why it runs eagerly: the stage, the op, the user's line
    artifact: Any = None
    frozen: int = 0            # parameters and buffers compiled in as constants (``freeze``)
    cached: bool = False       # compiled before (the same program, from the compile cache)


@dataclass
class BackendLog:
    """Every graph the backend compiled in this process, in order (see `graphs`)."""

    records: list[GraphRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: Any = field(default_factory=itertools.count)

    def add(self, record: GraphRecord) -> None:
        with self.lock:
            self.records.append(record)


LOG = BackendLog()


def graphs() -> list[GraphRecord]:
    """What the backend did with each graph so far (a copy)."""
    with LOG.lock:
        return list(LOG.records)


def reset() -> None:
    """Forget the records (``torch._dynamo.reset()`` forgets the compiled graphs)."""
    with LOG.lock:
        LOG.records.clear()
        LOG.counter = itertools.count()


def _options(options: dict | None) -> dict:
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise LowerkitError(f"torch.compile(backend='lowerkit'): unknown option(s) {unknown}; "
                            f"the options are {list(OPTIONS)}")
    return options


def _compile_graph(options: dict, kind: str, gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any], frozen: int = 0) -> Callable:
    """lowerkit's executable for one graph, or the graph itself (eager) when lowerkit cannot
    take it and ``strict`` is off."""
    index = next(LOG.counter)
    ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    start = time.perf_counter()
    dump_dir = options.get("dump_dir")
    try:
        art = api.compile_imported(
            lambda: import_graph(gm, example_inputs), target=options.get("target", "cpu"),
            pipeline=options.get("pipeline"), title=f"graph {index} ({kind})",
            dump_dir=Path(dump_dir) / f"graph-{index:03d}-{kind}" if dump_dir else None,
            cache=options.get("cache"))
    except LowerkitError as e:
        if options.get("strict"):
            raise
        LOG.add(GraphRecord(index, kind, ops, "eager", time.perf_counter() - start, str(e),
                            frozen=frozen))
        return gm.forward
    LOG.add(GraphRecord(index, kind, ops, "lowerkit", time.perf_counter() - start, None, art,
                        frozen, bool(getattr(art, "cache_hit", False))))
    if options.get("verify"):
        return verified(art, gm.forward, options["verify"])
    return art


def _freezable(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[int]:
    """The positions of Dynamo's inputs that are a module's parameters or buffers and may be
    compiled in as constants: none that needs a gradient while autograd records."""
    found = []
    placeholders = gm.graph.find_nodes(op="placeholder")
    for i, (node, value) in enumerate(zip(placeholders, example_inputs)):
        arg = node.meta.get("grapharg")
        source = getattr(arg, "source", None)
        if not isinstance(value, torch.Tensor) or source is None:
            continue
        if not source.guard_source.is_unspecialized_nn_module() and \
                not isinstance(value, torch.nn.Parameter):
            continue
        if value.requires_grad and torch.is_grad_enabled():
            continue
        found.append(i)
    return found


def _as_module_state(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                     positions: list[int]) -> torch.fx.GraphModule:
    """A copy of ``gm`` holding the inputs at ``positions`` as its buffers, which
    ``aot_autograd`` lifts as its parameters (`_constants_for` then compiles them in).
    ``gm`` itself is left alone: Dynamo reads its placeholders to call it."""
    graph, copied = torch.fx.Graph(), {}
    graph.output(graph.graph_copy(gm.graph, copied))
    for old, new in copied.items():  # what aot_autograd reads of Dynamo's inputs
        if hasattr(old, "_dynamo_source"):
            new._dynamo_source = old._dynamo_source
    frozen = torch.fx.GraphModule(gm, graph)
    frozen.meta.update(gm.meta)
    frozen._param_name_to_source = dict(getattr(gm, "_param_name_to_source", {}))
    placeholders = graph.find_nodes(op="placeholder")
    for i in positions:
        node, name = placeholders[i], f"_lowerkit_frozen_{i}"
        frozen.register_buffer(name, example_inputs[i].detach())
        # aot_autograd looks each lifted parameter's Dynamo source up by its name
        frozen._param_name_to_source[name] = node.meta["grapharg"].source
        with graph.inserting_before(node):
            attr = graph.get_attr(name)
        attr.meta.update(node.meta)
        node.replace_all_uses_with(attr)
        graph.erase_node(node)
    frozen.recompile()
    return frozen


def _constants_for(g: torch.fx.GraphModule) -> list[int] | None:
    """Compile ``aot_autograd``'s lifted parameters into ``g`` as constants, but those the
    graph mutates or returns a view of (which must stay the caller's); the positions of the
    inputs ``g`` still takes, or None when there is nothing to freeze."""
    from torch._inductor.freezing import replace_params_with_constants

    context = torch._guards.TracingContext.try_get()
    if context is None or not context.params_flat:
        return None
    return replace_params_with_constants(g, context.params_flat, context.fw_metadata)


@contextlib.contextmanager
def _composites_as_export_keeps_them(example_inputs: Sequence[Any]) -> Any:
    """The decomposition table for ``aot_autograd``; for an inference graph, with the functional
    composite (CompositeImplicitAutograd) ops kept whole as ``run_decompositions`` keeps them on
    `lowerkit.compile`'s path, so that both front ends give torch-mlir the same ops: the
    dispatcher decomposed ``fft_rfft``, ``stft`` and ``linalg_slogdet`` into ops torch-mlir
    cannot lower (``_fft_r2c``, ``_linalg_slogdet``), where it lowers the composites (torch-mlir's
    e2e ``AtenFftRfft*``, ``AtenStft*``, ``SignAndLogarithmOfDeterminant*``). A graph that needs
    gradients decomposes them all: a kept composite has no derivative for the joint graph."""
    table = decomposition_table()
    training = torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)
    if training:
        yield table
        return
    from torch.export.exported_program import (_override_composite_implicit_decomp,
                                               _split_decomp_table_to_cia_and_python_decomp)
    composites, table = _split_decomp_table_to_cia_and_python_decomp(table)
    with _override_composite_implicit_decomp(composites):
        yield table


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict | None = None,
            mode: str | None = None) -> Callable:
    """The ``torch.compile`` backend: Dynamo's graph through ``aot_autograd`` into lowerkit."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    opts = _options(options)
    frozen = _freezable(gm, example_inputs) if opts.get("freeze") else []

    def compiler(kind: str) -> Callable:
        def compile_one(g: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable:
            kept = _constants_for(g) if frozen and kind == "inference" else None
            if kept is None:
                # aot_autograd calls compiled graphs with one list of arguments ("boxed")
                return make_boxed_func(_compile_graph(opts, kind, g, inputs))
            fn = _compile_graph(opts, kind, g, [inputs[i] for i in kept],
                                len(inputs) - len(kept))

            def call(args: list) -> Any:
                picked = [args[i] for i in kept]
                args.clear()
                return fn(*picked)
            call._boxed_call = True
            return call
        return compile_one

    decompositions.aten_for_prims(gm.graph)
    gm.recompile()
    with _composites_as_export_keeps_them(example_inputs) as table:
        aot = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                           inference_compiler=compiler("inference"), decompositions=table)
        if not frozen:
            return aot(gm, example_inputs)
        kept_inputs = [i for i in range(len(example_inputs)) if i not in set(frozen)]
        compiled = aot(_as_module_state(gm, example_inputs, frozen),
                       [example_inputs[i] for i in kept_inputs])

    def call_frozen(*args: Any) -> Any:
        return compiled(*[args[i] for i in kept_inputs])
    return call_frozen


@dataclass
class Explanation:
    """What ``torch.compile(fn, backend="lowerkit")`` does with one call: Dynamo's graph breaks
    (why, and where in the user's code) and, per graph, where it runs and why."""

    graphs: list[GraphRecord]
    breaks: list[str]
    result: Any = None

    def table(self, title: str = "torch.compile(backend='lowerkit')"):
        from rich.table import Table

        table = Table(title=title)
        for col in ("#", "graph", "ATen ops", "runs in", "compile s", "why eager"):
            table.add_column(col, overflow="fold")
        for r in self.graphs:
            table.add_row(str(r.index), r.kind, str(r.ops), r.ran, f"{r.seconds:.2f}",
                          r.reason or "")
        return table


def explain(fn: Callable, *args: Any, options: dict | None = None, **kwargs: Any) -> Explanation:
    """Run ``fn(*args, **kwargs)`` once through the backend, from a fresh Dynamo state, and say
    what happened: the Python twin of ``lowerkit explain``."""
    torch._dynamo.reset()
    found = torch._dynamo.explain(fn)(*args, **kwargs)
    breaks = []
    for b in found.break_reasons:
        frame = b.user_stack[-1] if b.user_stack else None
        where = f" at {frame.filename}:{frame.lineno}" if frame is not None else ""
        lines = [l.strip() for l in b.reason.splitlines() if l.strip()]
        # Dynamo's first line names the kind of break, its "Explanation:" line the cause
        breaks.append("; ".join(lines[:2]) + where)
    torch._dynamo.reset()
    first = len(graphs())
    result = torch.compile(fn, backend=lambda gm, inputs: backend(gm, inputs, options))(
        *args, **kwargs)
    return Explanation(graphs()[first:], breaks, result)
