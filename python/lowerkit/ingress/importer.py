"""Ingress: a PyTorch module or function to the MLIR ``torch`` dialect, through ``torch.export``.

This is the only place that calls ``torch.export`` (graphs of ``torch.compile`` come in through
`lowerkit.ingress.graph`). The program
is exported over the *tensor leaves* of its arguments only; Python scalars are bound as
constants, because torch.export would bake them in anyway and torch-mlir would otherwise
leave them as ``f64`` function arguments that IREE demotes, so that calls fail.
"""

from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree
from torch.fx.experimental.symbolic_shapes import is_concrete_int

from .. import tuning
from ..errors import IngressError
from . import checks, containers, control_flow, decompositions, symbolic_scalars
from .composite_overrides import cheap_overrides
from .constant_lists import read_list_constants
from .import_errors import import_failure
from .locations import name_node_locations
from .signature import CallSignature, Constant, Leaf, TensorSpec, static_size
from .tensor_literals import TensorLiteralHooks
from .weights import import_with_weight_arguments

# How a model's parameters and buffers enter the program: "external" (function arguments that
# become IREE parameters: the IR and the vmfb hold code only) or "inline" (constants, folded
# into the compiled code).
WEIGHT_MODES = ("external", "inline")


@dataclass
class ImportedProgram:
    """A program in the torch dialect of torch-mlir's MLIR build, with its call signature."""

    module: Any  # torch_mlir.ir.Module
    signature: CallSignature
    exported: "torch.export.ExportedProgram | torch.fx.GraphModule"
    seconds: float
    # Initial values of the buffers the program mutates, by name (see CallSignature.state).
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    # The program as torch.export gave it, before decompositions: the user's own ops.
    as_exported: torch.export.ExportedProgram | None = None
    # Parameters and buffers passed by reference (`lowerkit.ingress.weights`), by name: the
    # model's own tensors, which the compiled program reads at load as IREE parameters.
    weights: dict[str, torch.Tensor] = field(default_factory=dict)

    def fx_code(self) -> str:
        """The FX graph (before decompositions) as readable Python, for dumps."""
        program = self.as_exported or self.exported
        return getattr(program, "graph_module", program).print_readable(print_output=False)


class _TensorLeavesProgram(torch.nn.Module):
    """Calls the user's program with its scalars bound; takes and returns tensor leaves only."""

    def __init__(self, fn: Callable, in_spec: pytree.TreeSpec, in_leaves: list[Leaf],
                 captured: dict[str, Any]):
        super().__init__()
        # A module is registered so that its parameters and buffers are lifted by export.
        self.inner = fn if isinstance(fn, torch.nn.Module) else None
        self._fn = None if isinstance(fn, torch.nn.Module) else fn  # a module is `inner` only
        self._in_spec = in_spec
        self._in_leaves = in_leaves
        # Filled while tracing. Export may copy the module, and a function is never copied,
        # so the output structure reaches the caller's dict through this closure.
        self._capture = lambda **found: captured.update(found)

    def forward(self, *tensors: torch.Tensor):
        it = iter(tensors)
        leaves = [next(it) if isinstance(l, TensorSpec) else l.value for l in self._in_leaves]
        args, kwargs = pytree.tree_unflatten(leaves, self._in_spec)
        fn = self.inner if self.inner is not None else self._fn
        out = fn(*args, **kwargs)
        out_leaves, out_spec = pytree.tree_flatten(out)
        leaf_kinds: list[Leaf | None] = []
        self._capture(out_spec=out_spec, out_leaves=leaf_kinds)
        result = []
        for v in out_leaves:
            if isinstance(v, torch.Tensor):
                leaf_kinds.append(None)  # filled from the exported graph's metadata
                result.append(v)
            elif isinstance(v, (int, float, bool, str, type(None))) and not isinstance(
                v, (torch.SymInt, torch.SymFloat, torch.SymBool)
            ):
                leaf_kinds.append(Constant(v))
            else:
                raise IngressError(
                    f"output of type {type(v).__name__} is not supported: return tensors, "
                    "Python scalars or None (nested in tuples, lists or dicts)"
                )
        return tuple(result)


class _StatefulProgram(torch.nn.Module):
    """Runs a program with its mutated buffers passed in, and returns their new values after
    its outputs, so that the exported function is pure (torch-mlir imports no mutation)."""

    def __init__(self, program: torch.nn.Module, names: list[str], n_inputs: int):
        super().__init__()
        self.program = program
        self._names = names
        self._n_inputs = n_inputs

    def forward(self, *tensors: torch.Tensor):
        inputs, state = tensors[: self._n_inputs], tensors[self._n_inputs:]
        fresh = [value.clone() for value in state]
        saved = []
        for name, value in zip(self._names, fresh):  # swap the buffers for the inputs' copies
            owner_name, _, leaf = name.rpartition(".")
            owner = self.program.get_submodule(owner_name)
            saved.append((owner, leaf, owner._buffers[leaf]))
            owner._buffers[leaf] = value
        try:
            outputs = self.program(*inputs)
        finally:
            for owner, leaf, original in saved:
                owner._buffers[leaf] = original
        return tuple(outputs) + tuple(fresh)


def decomposition_table() -> dict:
    """torch-mlir's decompositions (what its FX path would run) and lowerkit's own
    (`decompositions`): every front end decomposes with these."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    return {**get_decomposition_table(), **decompositions.table()}


def _decompose(exported: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`decomposition_table`, applied here once."""
    try:
        with warnings.catch_warnings():
            # torch 2.13's own deepcopy of its tree specs warns on every compile; not the user's
            warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`",
                                    category=FutureWarning)
            decompositions.aten_for_prims(exported.graph)
            tuning.choose_convolutions(decompositions.conv_work(exported.graph))
            with cheap_overrides():
                decomposed = exported.run_decompositions(decomposition_table())
        symbolic_scalars.rewrite(decomposed.graph)
        checks.keep(decomposed.graph)
        return decomposed
    except Exception as e:
        raise IngressError(f"stage 'torch-decompose' failed: {type(e).__name__}: {e}") from e


def _keep_non_persistent_buffers(exported: torch.export.ExportedProgram) -> None:
    """torch-mlir's importer looks buffers up in the state dict, which leaves out
    non-persistent ones (they live among the constants): put them where it looks."""
    from torch.export.graph_signature import InputKind

    for spec in exported.graph_signature.input_specs:
        if spec.kind == InputKind.BUFFER and spec.target not in exported.state_dict \
                and spec.target in exported.constants:
            exported.state_dict[spec.target] = exported.constants[spec.target]


def _refuse_explicit_generators(exported: torch.export.ExportedProgram) -> None:
    """A random op given its own ``torch.Generator`` (``torch.rand(..., generator=g)``):
    a compiled program draws from the seed each call passes, taken from torch's default
    generator (`lowerkit.passes.seed_input`); the importer would fail on the generator object
    with no word of why."""
    for spec in exported.graph_signature.input_specs:
        if getattr(spec.arg, "class_fqn", "") == "torch._C.Generator":
            users = [n for n in exported.graph.nodes if n.op == "call_function"
                     and any(getattr(a, "name", None) == spec.arg.name for a in
                             [*n.args, *n.kwargs.values()])]
            where = f" ({users[0].target})" if users else ""
            raise IngressError(
                f"stage 'torch-import' failed: a random op{where} is given its own "
                "torch.Generator; lowerkit's random ops draw from torch's default generator "
                "(a seed per call, governed by torch.manual_seed): drop generator=")


def _leaf_dynamic_specs(args: tuple, kwargs: dict, dynamic_shapes: Any, fn: Callable) -> list:
    """torch.export's ``dynamic_shapes`` (by position or by parameter name) per tensor leaf, in
    the order the call's pytree flattens: positional arguments, then keyword arguments as
    given. A registered container (a transformers cache) takes a list, one entry per child."""
    if dynamic_shapes is None:
        return []
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    if isinstance(dynamic_shapes, dict):
        params = list(inspect.signature(target).parameters.values())
        pairs = []
        for i, value in enumerate(args):
            p = params[i] if i < len(params) else None
            if p is not None and p.kind is p.VAR_POSITIONAL:  # *args: its spec is a sequence
                rest = list(dynamic_shapes.get(p.name) or [])
                pairs += zip(args[i:], rest + [None] * (len(args) - i - len(rest)))
                break
            pairs.append((value, dynamic_shapes.get(p.name) if p is not None else None))
        pairs += [(value, dynamic_shapes.get(name)) for name, value in kwargs.items()]
    else:
        dyn = list(dynamic_shapes)
        pairs = list(zip(args, dyn + [None] * (len(args) - len(dyn))))
        pairs += [(v, None) for v in kwargs.values()]

    out: list = []

    def walk(value: Any, spec: Any) -> None:
        if isinstance(value, torch.Tensor):
            out.append(spec)
        elif isinstance(value, dict):
            specs = spec if isinstance(spec, dict) else {}
            for k, v in value.items():
                walk(v, specs.get(k))
        elif isinstance(value, (list, tuple)):
            specs = spec if isinstance(spec, (list, tuple)) else [None] * len(value)
            for v, s in zip(value, specs):
                walk(v, s)
        elif type(value) in pytree.SUPPORTED_NODES:
            children, _ = pytree.SUPPORTED_NODES[type(value)].flatten_fn(value)
            if spec is not None and (not isinstance(spec, (list, tuple))
                                     or len(spec) != len(children)):
                raise IngressError(
                    f"dynamic_shapes for a {type(value).__name__} must be a list with one entry "
                    f"per child ({len(children)}), got {spec!r}")
            for v, s in zip(children, spec or [None] * len(children)):
                walk(v, s)

    for value, spec in pairs:
        walk(value, spec)
    return out


def _dim_names(spec: Any) -> dict[int, str]:
    """The user's names of an input's dynamic dims (``Dim("batch")``); a hint such as
    ``Dim.AUTO`` names nothing: its dim keeps torch.export's own symbol (``s0``), one per size
    (naming every AUTO dim "DimHint(AUTO)" made them all one size)."""
    if spec is None:
        return {}
    items = spec.items() if isinstance(spec, dict) else enumerate(spec)
    return {i: d.__name__ for i, d in items if d is not None and hasattr(d, "__name__")}


def _keep_frames_of(fn: Callable) -> None:
    """torch.export (2.13) keeps only the frames of ``forward`` methods in a node's stack
    trace, so the ops of a plain function would point at lowerkit's wrapper, not the user's
    line. torch's (private) stack-trace anchors keep a function's frames too."""
    from torch.fx import proxy

    register = getattr(proxy, "_register_stack_trace_anchor", None)
    if register is not None and not isinstance(fn, torch.nn.Module):
        register(inspect.unwrap(fn))


def import_program(
    fn: Callable,
    args: tuple = (),
    kwargs: dict | None = None,
    dynamic_shapes: Any = None,
    weights: str = "external",
) -> ImportedProgram:
    """Export ``fn(*args, **kwargs)`` and import it into torch-mlir's torch dialect.
    ``weights``: one of `WEIGHT_MODES`."""
    if weights not in WEIGHT_MODES:
        raise ValueError(f"weights must be one of {', '.join(WEIGHT_MODES)}, got {weights!r}")
    from torch_mlir import fx

    start = time.perf_counter()
    kwargs = dict(kwargs or {})
    if not isinstance(args, tuple):
        args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    containers.register_known()  # transformers' caches flatten like tuples, in and out
    leaves, in_spec = pytree.tree_flatten((args, kwargs))
    in_leaves = _input_leaves(leaves)
    tensors = [v for v in leaves if isinstance(v, torch.Tensor)]
    dyn = _leaf_dynamic_specs(args, kwargs, dynamic_shapes, fn)
    captured: dict[str, Any] = {}
    wrapper = _TensorLeavesProgram(fn, in_spec, in_leaves, captured)
    _keep_frames_of(fn)
    as_exported = _export(wrapper, tensors, dyn, "")
    exported, state = _with_explicit_state(_decompose(as_exported), wrapper, tensors, dyn)
    _keep_non_persistent_buffers(exported)
    _refuse_explicit_generators(exported)
    read_list_constants(exported)
    signature = _call_signature(exported, in_spec, in_leaves, captured, dyn, state)
    control_flow.carry_additional_inputs(exported.graph_module)
    try:
        # issue 7: weights go in as raw bytes (tensor_literals), not through tolist() (~8 s on ResNet-18).
        importer = fx_importer(TensorLiteralHooks())
        if weights == "external":
            by_reference = import_with_weight_arguments(importer, exported)
            module = importer.module
        else:
            by_reference = {}
            module = fx.export_and_import(exported, output_type="raw", func_name="main",
                                          decomposition_table={}, fx_importer=importer)
    except Exception as e:
        raise import_failure(e, exported.graph) from e
    return ImportedProgram(module, signature, exported, time.perf_counter() - start, state,
                           as_exported, by_reference)


def fx_importer(hooks: Any = None) -> Any:
    """torch-mlir's FX importer, in a fresh context, as both of lowerkit's imports use it: each
    op's location names its module path and FX node around its file:line
    (`locations.name_node_locations`), and control flow's higher-order ops are imported
    (`control_flow.node_importer_class`)."""
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras.fx_importer import FxImporter

    context = ir.Context()
    torch_dialect.register_dialect(context)
    return name_node_locations(FxImporter(
        context=context, hooks=hooks, graph_node_importer_cls=control_flow.node_importer_class()))


def _input_leaves(leaves: list) -> list[Leaf]:
    """Tensors become specs, Python scalars constants baked into the program."""
    out: list[Leaf] = []
    for v in leaves:
        if isinstance(v, torch.Tensor):
            out.append(TensorSpec.of(v))
        elif isinstance(v, (int, float, bool, str, type(None))):
            out.append(Constant(v))
        else:
            raise IngressError(
                f"argument of type {type(v).__name__} is not supported: pass tensors, Python "
                "scalars or None (nested in tuples, lists or dicts)"
            )
    return out


def _export(program: torch.nn.Module, inputs: list, dyn: list, why: str) -> Any:
    """``torch.export`` (non-strict); any failure is the user's program not exporting."""
    try:
        return torch.export.export(program, tuple(inputs),
                                   dynamic_shapes=(tuple(dyn) + (None,) * (len(inputs) - len(dyn)),)
                                   if dyn else None,
                                   strict=False)
    except Exception as e:  # torch.export raises many types; all mean "could not export"
        raise IngressError(f"stage 'torch-export' failed{why}: {type(e).__name__}: {e}") from e


def _with_explicit_state(exported: Any, wrapper: "_TensorLeavesProgram", tensors: list,
                         dyn: list) -> tuple[Any, dict[str, torch.Tensor]]:
    """Buffers the program mutates (running statistics, counters, caches) become explicit
    state: inputs and trailing outputs of the compiled function, kept by the Artifact.

    torch.export keeps in-place ops; decomposition functionalises them, and only then are
    mutated buffers and inputs known. torch-mlir's importer is then told not to decompose."""
    mutated = sorted(set(exported.graph_signature.buffers_to_mutate.values()))
    if not mutated:
        return exported, {}
    buffers = dict(wrapper.named_buffers())
    state = {name: buffers[name].detach().clone() for name in mutated}
    stateful = _StatefulProgram(wrapper, list(state), len(tensors))
    again = _export(stateful, [*tensors, *state.values()], dyn,
                    f" on a program that mutates its buffers {mutated}")
    try:
        return _decompose(again), state
    except Exception as e:
        raise IngressError(
            f"stage 'torch-export' failed on a program that mutates its buffers "
            f"{mutated}: {type(e).__name__}: {e}") from e


def _call_signature(exported: Any, in_spec: Any, in_leaves: list[Leaf], captured: dict,
                    dyn: list, state: dict[str, torch.Tensor]) -> CallSignature:
    """What a call takes and returns, read off the exported graph: dynamic dims named after
    the user's Dim where given; inputs changed in place lead the outputs (a call copies them
    back into the caller's tensors, as eager would have changed them)."""
    user_inputs_all = list(exported.graph_signature.user_inputs)
    mutated_inputs = [user_inputs_all.index(name) for name in
                      exported.graph_signature.user_inputs_to_mutate.values()]
    user_inputs = [
        n for n in exported.graph.nodes
        if n.op == "placeholder" and n.name in exported.graph_signature.user_inputs
    ]
    specs = []
    for i, node in enumerate(user_inputs):
        val = node.meta["val"]
        names = _dim_names(dyn[i]) if i < len(dyn) else {}
        shape = tuple(
            static_size(d) if is_concrete_int(d) else names.get(j, str(d))
            for j, d in enumerate(val.shape)
        )
        specs.append(TensorSpec(shape, val.dtype))
    it = iter(specs)
    in_leaves = [next(it) if isinstance(l, TensorSpec) else l for l in in_leaves]

    out_nodes = [n for n in exported.graph.nodes if n.op == "output"][0].args[0]
    for i, node in zip(mutated_inputs, out_nodes):
        new = TensorSpec.of(node.meta["val"]).shape
        if all(isinstance(d, int) for d in (*new, *specs[i].shape)) and new != specs[i].shape:
            raise IngressError(
                f"stage 'torch-import' failed: the program changes its input #{i} in place to "
                f"shape {list(new)}, but that input has shape {list(specs[i].shape)} (an out= "
                "argument that eager resizes, or reshapes and returns): lowerkit writes an "
                "input back only at its own shape; pass an out= tensor of the result's shape")
    out_vals = iter(n.meta["val"] for n in out_nodes[len(mutated_inputs):])
    out_leaves: list[Leaf] = []
    for l in captured["out_leaves"]:
        if l is None:
            v = next(out_vals)
            out_leaves.append(TensorSpec.of(v))
        else:
            out_leaves.append(l)
    return CallSignature(in_spec, in_leaves, captured["out_spec"], out_leaves,
                         state=[TensorSpec.of(v) for v in state.values()],
                         mutated_inputs=mutated_inputs)
