"""``torch.compile(model, backend="lowerkit")``: every graph Dynamo captures goes through
lowerkit's stages to an IREE executable; a graph lowerkit cannot take runs eagerly, and why is
recorded.

Dynamo hands over one graph per region between graph breaks; ``aot_autograd`` makes it
functional ATen with lowerkit's decompositions (forward and, when gradients are needed,
backward), `lowerkit.ingress.graph` imports it, and `lowerkit.api.compile_imported` runs the
same pipeline, target fixes, compile cache and call-signature checks as `lowerkit.compile`.

Options (``torch.compile(..., options={...})``): ``target``, ``pipeline``, ``cache``,
``dump_dir`` (each graph in its own numbered folder), ``verify`` (each call checked against
the graph run eagerly), ``strict`` (raise instead of running a graph eagerly) and ``freeze``
(compile the module's parameters and buffers in as constants) and ``convolutions``
(``"data-tiled"`` or ``"im2col"``: `lowerkit.compile`'s ``convolutions``).

Without ``freeze``, an inference graph reads the module's state as IREE parameters bound to
the module's own tensors, as `lowerkit.compile` does: only the inputs cross each call, and
what IREE hoists out of the weights (packed, transposed) is computed once per load. In-place
changes load again; another module's tensors reaching the same compiled function (repeated
blocks, a replaced parameter) get the same code bound to them (`_BoundWeights`). Such a graph,
and an inference graph that reads no module state, is called straight from Dynamo's inputs when
aot_autograd's runtime wrappers would only pass them on (`_direct_positions`): those wrappers
cost a tenth of a small model's call. Its artifact is called through
`lowerkit.runtime.host_call` (`_call_of`), with less Python a call than ``Artifact.__call__``.
torch.nn's LSTM, GRU and RNN layers are compiled too: importing this module turns on Dynamo's
``allow_rnn`` (off by default, Dynamo then runs them eagerly, outside any graph).
The backend is found by name through the ``torch_dynamo_backends`` entry point, so
``backend="lowerkit"`` works without importing lowerkit first.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch._dynamo.exc import RestartAnalysis as _RestartAnalysis

from . import api, tuning
from .errors import LowerkitError
from .ingress import decompositions
from .ingress.composite_overrides import cheap_overrides
from .ingress.graph import import_graph
from .ingress.importer import decomposition_table
from .runtime.verify import verified

OPTIONS = ("target", "pipeline", "cache", "dump_dir", "verify", "strict", "freeze",
           "convolutions")

# Dynamo breaks the graph at torch.nn's RNN, GRU and LSTM (and runs them eagerly) unless
# ``allow_rnn``; lowerkit compiles them (`_recurrent_layers_decomposed`), as `lowerkit.compile`
# does. Importing this module (``torch.compile(backend="lowerkit")`` does, by name) turns it on:
# Dynamo reads it while it traces, before any backend is called. Other backends in the process
# then get those layers in their graphs too.
torch._dynamo.config.allow_rnn = True


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
    weights: int = 0           # parameters and buffers read at load as IREE parameters
    direct: bool = False       # called straight from Dynamo's inputs, past aot_autograd's
                               # runtime wrappers (`_direct_positions`)


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
    strategy = options.get("convolutions")
    if strategy is not None and strategy not in tuning.ASKABLE_STRATEGIES:
        raise LowerkitError(f"torch.compile(backend='lowerkit'): convolutions={strategy!r}; "
                            f"it is one of {list(tuning.ASKABLE_STRATEGIES)}")
    return options


def _compile_graph(options: dict, kind: str, gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any], frozen: int = 0,
                   weights: dict[int, tuple[str, torch.Tensor]] | None = None,
                   reference: Callable | None = None,
                   records: list | None = None) -> Callable:
    """lowerkit's executable for one graph, or the graph itself (eager) when lowerkit cannot
    take it and ``strict`` is off. ``weights``: inputs read at load as IREE parameters
    (`import_graph`); the executable takes the others. ``reference``: what ``verify`` checks
    against (the graph). ``records`` gets the graph's `GraphRecord`."""
    index = next(LOG.counter)
    ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    start = time.perf_counter()
    dump_dir = options.get("dump_dir")
    strategy, why = options.get("convolutions"), None
    if strategy is None and tuning.dense_convolutions_whole():
        # lowerkit chose data tiling for this graph before aot_autograd traced it (`backend`):
        # its dense convolutions are whole, and its compile must data-tile them
        strategy, why = tuning.DATA_TILED, tuning.why_convolutions()
    try:
        with (tuning.forced_convolutions(strategy, why) if strategy is not None
              else contextlib.nullcontext()):
            art = api.compile_imported(
                lambda: import_graph(gm, example_inputs, weights),
                target=options.get("target", "cpu"),
                pipeline=options.get("pipeline"), title=f"graph {index} ({kind})",
                dump_dir=Path(dump_dir) / f"graph-{index:03d}-{kind}" if dump_dir else None,
                cache=options.get("cache"))
    except LowerkitError as e:
        if options.get("strict"):
            raise
        LOG.add(GraphRecord(index, kind, ops, "eager", time.perf_counter() - start, str(e),
                            frozen=frozen))
        return gm.forward
    record = GraphRecord(index, kind, ops, "lowerkit", time.perf_counter() - start, None, art,
                         frozen, bool(getattr(art, "cache_hit", False)), len(weights or ()))
    LOG.add(record)
    if records is not None:
        records.append(record)
    if options.get("verify"):
        return verified(art, reference or gm.forward, options["verify"])
    return art


def _without_weights(forward: Callable, weights: dict[int, tuple[str, torch.Tensor]],
                     count: int, bound_now: Callable[[], dict]) -> Callable:
    """``forward`` (which takes every input) called with the inputs that are not weights: the
    weights are those bound now (``bound_now()``, by name)."""
    def call(*others: Any) -> Any:
        bound, rest = bound_now(), iter(others)
        return forward(*[bound.get(weights[i][0], weights[i][1]) if i in weights else next(rest)
                         for i in range(count)])
    return call


def _reads_weights_by_reference(options: dict) -> bool:
    try:
        return api.default_weights(options.get("target", "cpu")) == "external"
    except LowerkitError:  # a bad target: the compile says so, per graph
        return False


# A module's own state as Dynamo names it: ``L['self']._modules['bn']._buffers['running_mean']``.
# Other tensors under a module are not state: under ``dynamic=True`` Dynamo passes a module's
# float attributes (``eps``, ``p``, a Conv1D's ``scaling``) as 0-d tensors of its own, which
# ``.item()`` reads back in the graph.
_STATE_ENTRY = re.compile(r"\._(parameters|buffers)\[[^\]]+\]$")


def _freezable(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[int]:
    """The positions of Dynamo's inputs that are a module's parameters or buffers and may be
    compiled in as constants or read by reference: none that needs a gradient while autograd
    records."""
    found = []
    placeholders = gm.graph.find_nodes(op="placeholder")
    for i, (node, value) in enumerate(zip(placeholders, example_inputs)):
        arg = node.meta.get("grapharg")
        source = getattr(arg, "source", None)
        if not isinstance(value, torch.Tensor) or source is None:
            continue
        if not isinstance(value, torch.nn.Parameter) and not (
                source.guard_source.is_unspecialized_nn_module()
                and _STATE_ENTRY.search(source.name)):
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


def _weights_for(g: torch.fx.GraphModule) -> "tuple[list[int], dict] | None":
    """``aot_autograd``'s lifted parameters that ``g`` reads, by reference, as IREE parameters,
    but those the graph mutates or returns a view of (which must stay the caller's, as
    arguments): the positions of the inputs ``g`` still takes at a call, and the weights by
    position (``(name, tensor)``), or None when there are none. Names are positional, so that
    repeated blocks give one program (one compile) whatever their weights."""
    from torch._functorch._aot_autograd.schemas import MutationType

    from .ingress.weights import _externalizable

    context = torch._guards.TracingContext.try_get()
    if context is None or not context.params_flat:
        return None
    meta = context.fw_metadata
    stays = {o.base_idx for o in meta.output_info if o.base_idx is not None}
    stays |= {i for i, m in enumerate(meta.input_info)
              if m.mutation_type in (MutationType.MUTATED_IN_GRAPH, MutationType.MUTATED_OUT_GRAPH)}
    weights = {i: (f"weight{i}", t) for i, t in enumerate(context.params_flat)
               if i not in stays and _externalizable(t)}
    if not weights:
        return None
    count = len(g.graph.find_nodes(op="placeholder"))
    return [i for i in range(count) if i not in weights], weights


def _direct_positions(g: torch.fx.GraphModule, kept: list[int],
                      user_inputs: int) -> "list[int | torch.Tensor] | None":
    """What ``g``'s compiled call takes (its inputs at ``kept``), each as the position of
    aot_autograd's user input it is (an int) or as the lifted tensor it always is, when
    aot_autograd's runtime wrappers would only pass inputs through to it; else None.

    Those wrappers take tens of microseconds a call from Dynamo's frame (``benchmarks/
    backend_call.py``), and for a graph that mutates no input, returns no alias, has no
    duplicated or subclass inputs and no effect tokens or RNG state, they do nothing else."""
    from torch._functorch._aot_autograd.schemas import OutputType, PlainTensorMeta

    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if meta is None or context.params_flat is None:
        return None
    params = len(context.params_flat)
    if len(g.graph.find_nodes(op="placeholder")) != params + user_inputs:
        return None  # aot_autograd deduplicated inputs, or added tokens or RNG state
    plain = all(isinstance(m, (int, PlainTensorMeta))
                for m in (*meta.subclass_inp_meta, *meta.subclass_fw_graph_out_meta))
    if (not plain or meta.num_intermediate_bases or meta.tokens
            or meta.num_graphsafe_rng_states or meta.grad_enabled_mutation is not None
            or getattr(meta, "is_rng_op_functionalized", False)
            or any(m.mutates_data or m.mutates_metadata for m in meta.input_info)
            or any(o.output_type is not OutputType.non_alias for o in meta.output_info)):
        return None
    return [i - params if i >= params else context.params_flat[i] for i in kept]


def _call_of(fn: Any) -> Callable:
    """What the backend calls for a compiled graph: an `Artifact`'s short call for host tensors
    (`lowerkit.runtime.host_call`: a few microseconds less Python a call than
    ``Artifact.__call__``, which is a small program's whole margin over Dynamo's own cost), or
    ``fn`` itself (a ``verify`` wrapper)."""
    from .runtime.artifact import Artifact
    from .runtime.host_call import host_caller

    return host_caller(fn) if isinstance(fn, Artifact) else fn


def _picker(positions: list[int]) -> Callable[[Sequence[Any]], tuple]:
    """The arguments at ``positions``, as a tuple (``operator.itemgetter``, which returns a
    bare value for one position and fails for none)."""
    if len(positions) > 1:
        return operator.itemgetter(*positions)
    if positions:
        only = positions[0]
        return lambda args: (args[only],)
    return lambda args: ()


class _ModuleState:
    """Dynamo's inputs at ``positions`` that are module state, and the tensors there at
    compile: a call may pass others (another block's, a replaced parameter)."""

    def __init__(self, positions: list[int], tensors: list[torch.Tensor]):
        self.tensors = tensors
        self.pick = _picker(positions)

    def changed(self, args: Sequence[Any]) -> tuple | None:
        """The call's tensors at those positions when any is not the one held, else None."""
        current = self.pick(args)
        return current if any(map(operator.is_not, current, self.tensors)) else None


class _BoundWeights(_ModuleState):
    """Dynamo's inputs that are module state read by reference (as IREE parameters, or as
    ``aot_autograd``'s lifted buffers), and the compiled graphs that read them.

    A parameter changed in place is seen by its version (`lowerkit.runtime.weights`). Dynamo
    also calls one compiled function with other modules' tensors: the repeated blocks of a
    model broken at the same place, or a parameter replaced (``m.fc.weight = nn.Parameter(..)``).
    Each such set of tensors gets its own artifacts, the same code bound to them
    (`Artifact.with_weights`), and aot_autograd's lifted buffers are pointed at them."""

    KEPT_SETS = 16  # sets of tensors whose loaded artifacts are kept (the oldest go first)

    def __init__(self, positions: list[int], tensors: list[torch.Tensor],
                 state: list[torch.Tensor]):
        super().__init__(positions, tensors)  # self.tensors: the set bound now
        self.state = state          # their detached twins that aot_autograd passes on
        self.uses: list[dict[str, int]] = []  # per compiled graph: parameter name -> slot
        self.active: list[Any] = []           # per compiled graph: its artifact for the set
        self.calls: list[Callable] = []       # per compiled graph: its artifact's call
                                              # (`_call_of`)
        self.sets: dict[tuple[int, ...],
                        tuple[list[torch.Tensor], list[Any], list[Callable]]] = {}

    def add(self, art: Any, weights: dict[int, tuple[str, torch.Tensor]]) -> None:
        """Register a compiled graph reading ``weights`` (it is ``active[len(active)]``)."""
        slots = {id(t): i for i, t in enumerate(self.state)}
        self.uses.append({name: slots[id(t)] for name, t in weights.values() if id(t) in slots})
        self.active.append(art)
        self.calls.append(_call_of(art))

    def check(self, args: Sequence[Any]) -> None:
        current = self.changed(args)
        if current is not None:
            self._switch(list(current))

    def _switch(self, current: list[torch.Tensor]) -> None:
        self.sets[tuple(map(id, self.tensors))] = (self.tensors, self.active, self.calls)
        found = self.sets.pop(tuple(map(id, current)), None)
        if found is None:
            detached = [t.detach() for t in current]
            arts = [art.with_weights({name: detached[slot] for name, slot in use.items()})
                    for art, use in zip(self.active, self.uses)]
            found = (current, arts, [_call_of(art) for art in arts])
        while len(self.sets) >= self.KEPT_SETS:
            self.sets.pop(next(iter(self.sets)))
        self.tensors, self.active, self.calls = found
        for twin, tensor in zip(self.state, current):
            if twin.data_ptr() != tensor.data_ptr() or twin.shape != tensor.shape:
                twin.data = tensor.detach()


class _FrozenWeights(_ModuleState):
    """The tensors compiled in as constants (``freeze``): a call with others (Dynamo's
    function reused for another block, a replaced parameter) must not get their results;
    it runs Dynamo's graph eagerly, which is recorded (``strict`` raises)."""

    def __init__(self, positions: list[int], tensors: list[torch.Tensor], gm: Any,
                 strict: bool):
        super().__init__(positions, tensors)
        self.gm, self.strict, self.said = gm, strict, False

    def others(self, args: Sequence[Any]) -> bool:
        if self.changed(args) is None:
            return False
        why = ("freeze: this call passes parameters other than those compiled in as "
               "constants (the same code reached from another module, e.g. a repeated block, "
               "or a replaced parameter); it runs eagerly. Without freeze, lowerkit reads "
               "weights by reference and runs such calls compiled")
        if self.strict:
            raise LowerkitError(why)
        if not self.said:
            self.said = True
            ops = sum(1 for n in self.gm.graph.nodes if n.op == "call_function")
            LOG.add(GraphRecord(next(LOG.counter), "inference", ops, "eager", 0.0, why))
        return True


# what torch.fx's interpreter adds to a failure: the node it ran and the user's line
_FAILED_NODE = re.compile(r"While executing %\S+ : .*?call_function\[target=([^\]]+)\]")
_USER_LINE = re.compile(r'Original traceback:\s*\n\s*File "([^"]+)", line (\d+)')


def _tracing_failure(e: BaseException) -> str:
    """aot_autograd's failure as a record's reason: the stage, the op and the user's line."""
    text = str(e)
    op, line = _FAILED_NODE.search(text), _USER_LINE.search(text)
    at = (f" at {op.group(1).removeprefix('torch.ops.')}" if op else "") + (
        f" ({line.group(1)}:{line.group(2)})" if line else "")
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"stage 'aot_autograd' failed{at}: {type(e).__name__}: {first}"


def _training(example_inputs: Sequence[Any]) -> bool:
    """Whether aot_autograd traces a joint graph for gradients (else one inference graph)."""
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


@contextlib.contextmanager
def _composites_as_export_keeps_them(example_inputs: Sequence[Any]) -> Any:
    """The decomposition table for ``aot_autograd``; for an inference graph, with the functional
    composite (CompositeImplicitAutograd) ops kept whole as ``run_decompositions`` keeps them on
    `lowerkit.compile`'s path, so that both front ends give torch-mlir the same ops: the
    dispatcher decomposed ``fft_rfft``, ``stft`` and ``linalg_slogdet`` into ops torch-mlir
    cannot lower (``_fft_r2c``, ``_linalg_slogdet``), where it lowers the composites (torch-mlir's
    e2e ``AtenFftRfft*``, ``AtenStft*``, ``SignAndLogarithmOfDeterminant*``). A graph that needs
    gradients decomposes them all: a kept composite has no derivative for the joint graph."""
    with cheap_overrides():  # building it lists the composite ops: once, shared (see there)
        table = decomposition_table()
    if _training(example_inputs):
        yield table
        return
    from torch.export.exported_program import (_override_composite_implicit_decomp,
                                               _split_decomp_table_to_cia_and_python_decomp)
    with contextlib.ExitStack() as overrides:
        with cheap_overrides():  # entering overrides every composite op: cheaply
            composites, table = _split_decomp_table_to_cia_and_python_decomp(table)
            overrides.enter_context(_override_composite_implicit_decomp(composites))
        yield table


def _recurrent_layers_decomposed(gm: torch.fx.GraphModule) -> Any:
    """While aot_autograd traces a graph holding an LSTM: torch's decomposition of ``aten.lstm``
    emits oneDNN's ``mkldnn_rnn_layer`` for an inference graph on the CPU, which torch-mlir
    cannot lower; with oneDNN off while tracing it emits the cell's matmuls and pointwise ops,
    as `lowerkit.compile`'s path does (its export traces with gradients on)."""
    if not any(getattr(n.target, "__name__", None) == "lstm" for n in gm.graph.nodes
               if n.op == "call_function"):
        return contextlib.nullcontext()
    return torch.backends.mkldnn.flags(enabled=False)


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict | None = None,
            mode: str | None = None) -> Callable:
    """The ``torch.compile`` backend: Dynamo's graph through ``aot_autograd`` into lowerkit."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    opts = _options(options)
    # module state that needs no gradient: compiled in (``freeze``) or read by reference, but
    # on Vulkan, whose weights lowerkit compiles in by default (`api.default_weights`): there
    # they stay arguments of each call unless frozen
    state = _freezable(gm, example_inputs) \
        if opts.get("freeze") or _reads_weights_by_reference(opts) else []
    frozen = state if opts.get("freeze") else []
    bound: _BoundWeights | None = None
    # an inference graph that aot_autograd's wrappers only pass inputs to, once compiled: read
    # by reference, [its slot in ``bound.active``, its inputs (`_direct_positions`)]; reading
    # no module state, [its artifact, its inputs]
    direct: list = []

    # an exception that leaves lowerkit's own compile of a graph (strict, or a fault of
    # lowerkit's): aot_autograd's tracing failing is not one of these
    raised_by_lowerkit: list[BaseException] = []

    def compiler(kind: str) -> Callable:
        def compile_one(g: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable:
            try:
                return compile_graph(kind, g, inputs)
            except BaseException as e:
                raised_by_lowerkit.append(e)
                raise
        return compile_one

    def compile_graph(kind: str, g: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable:
        if bound is not None and kind == "inference":
            found = _weights_for(g)
            if found is not None:
                return by_reference(g, inputs, *found)
        kept = _constants_for(g) if frozen and kind == "inference" else None
        if kept is None:
            if kind == "inference" and not state:
                return stateless(g, inputs)
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

    def stateless(g: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable:
        """An inference graph that reads no module state: called straight from Dynamo's
        inputs (``direct``) when aot_autograd's runtime wrappers would only pass them on."""
        records: list[GraphRecord] = []
        fn = _compile_graph(opts, "inference", g, inputs, records=records)
        if fn != g.forward:
            found = _direct_positions(g, list(range(len(inputs))), len(example_inputs))
            if found is not None and all(type(p) is int for p in found):
                direct[:] = [fn, found]
                records[0].direct = True
        return make_boxed_func(fn)

    def by_reference(g: torch.fx.GraphModule, inputs: Sequence[Any], kept: list[int],
                     weights: dict) -> Callable:
        use = len(bound.active)
        reference = _without_weights(g.forward, weights, len(inputs),
                                     lambda: bound.active[use]._weights.tensors)
        records: list[GraphRecord] = []
        fn = _compile_graph(opts, "inference", g, inputs, weights=weights, reference=reference,
                            records=records)
        if fn == g.forward:  # runs eagerly: on what aot_autograd passes, every input
            return make_boxed_func(fn)
        bound.add(fn, weights)
        if not direct:
            found = _direct_positions(g, kept, len(kept_inputs))
            if found is not None:
                direct[:] = [use, found]
                records[0].direct = True

        def call(args: list) -> Any:
            picked = [args[i] for i in kept]
            args.clear()
            return bound.calls[use](*picked)
        call._boxed_call = True
        return call

    decompositions.aten_for_prims(gm.graph)
    gm.recompile()
    # aot_autograd decomposes while it traces (here): the tuned per-shape choices, an asked
    # convolution strategy and lowerkit's own choice for an inference graph apply there
    strategy = opts.get("convolutions")
    start = time.perf_counter()
    try:
        with (tuning.forced_convolutions(strategy) if strategy is not None
              else contextlib.nullcontext()), \
                _composites_as_export_keeps_them(example_inputs) as table, \
                _recurrent_layers_decomposed(gm), \
                tuning.applied(opts.get("target", "cpu")):
            if not _training(example_inputs):
                tuning.choose_convolutions(decompositions.conv_work(gm.graph))
            aot = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                               inference_compiler=compiler("inference"), decompositions=table)
            if not state:
                compiled = aot(gm, example_inputs)
                if not direct:
                    return compiled
                call, gather = _call_of(direct[0]), _picker(direct[1])
                return lambda *args: call(*gather(args))
            lifted = _as_module_state(gm, example_inputs, state)
            tensors = [example_inputs[i] for i in state]
            twins = [lifted.get_buffer(f"_lowerkit_frozen_{i}") for i in state]
            if frozen:
                constants = _FrozenWeights(state, tensors, gm, bool(opts.get("strict")))
            else:
                bound = _BoundWeights(state, tensors, twins)
            kept_inputs = [i for i in range(len(example_inputs)) if i not in set(state)]
            compiled = aot(lifted, [example_inputs[i] for i in kept_inputs])
    except Exception as e:
        if opts.get("strict") or raised_by_lowerkit:  # however aot_autograd wrapped it
            raise
        if isinstance(e, _RestartAnalysis):  # Dynamo traces the frame again (a tensorified scalar)
            raise
        # aot_autograd could not trace what Dynamo could (a value read from data that its
        # functionalization must specialize on): the graph runs as Dynamo gave it, and says why
        LOG.add(GraphRecord(next(LOG.counter),
                            "forward" if _training(example_inputs) else "inference",
                            sum(1 for n in gm.graph.nodes if n.op == "call_function"), "eager",
                            time.perf_counter() - start, _tracing_failure(e)))
        return gm.forward
    pick = _picker(kept_inputs)

    def call_frozen(*args: Any) -> Any:
        if frozen:
            if constants.others(args):
                return gm.forward(*args)
        else:
            bound.check(args)
        return compiled(*pick(args))

    if not direct:
        return call_frozen
    use, found = direct
    sources = [kept_inputs[p] if type(p) is int else p for p in found]
    gather = _picker(sources) if all(type(p) is int for p in sources) else (
        lambda args: [args[p] if type(p) is int else p for p in sources])

    def call_direct(*args: Any) -> Any:
        bound.check(args)
        return bound.calls[use](*gather(args))
    return call_direct


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
        for col in ("#", "graph", "ATen ops", "runs in", "called", "weights", "compile s",
                    "why eager"):
            table.add_column(col, overflow="fold")
        for r in self.graphs:
            weights = ", ".join(part for part in (
                f"{r.weights} by reference" if r.weights else "",
                f"{r.frozen} frozen" if r.frozen else "") if part)
            # past aot_autograd's runtime wrappers (`_direct_positions`), or through them
            called = "" if r.ran != "lowerkit" else "direct" if r.direct else "aot_autograd"
            table.add_row(str(r.index), r.kind, str(r.ops), r.ran, called, weights,
                          f"{r.seconds:.2f}", r.reason or "")
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
