"""Ingress for ``torch.compile``: one graph Dynamo captured, after ``aot_autograd``, into the
MLIR ``torch`` dialect.

Such a graph is already functional ATen (decomposed with `importer.decomposition_table`) and its
placeholders are its flat inputs, parameters included, so torch-mlir's FX importer takes it as
a stateless graph. The call signature is the flat tuple of inputs and outputs: a dynamic size
(a SymInt input) is a `ScalarSpec` named like the tensor dimensions it sizes, passed at every
call; a SymInt output is a `SizeSpec`, computed on the host from the call's sizes, and an int
output a constant. What lowerkit cannot take (a size computed from data, a float input) is
refused with an `IngressError` saying what it is, so that the backend runs that graph eagerly
and records why.
"""

from __future__ import annotations

import math

import time
from typing import Any, Mapping, Sequence

import torch
import torch.utils._pytree as pytree

from ..errors import IngressError
from ..ir import WEIGHT_ATTRIBUTE
from . import checks, control_flow, symbolic_scalars, weight_computations
from .import_errors import import_failure
from .importer import ImportedProgram, fx_importer
from .weights import mark_weight_arguments
from .signature import (CallSignature, Constant, ItemSpec, Leaf, ScalarSpec, SizeSpec,
                        TensorSpec)


def _leaf(value: Any, what: str, scalars: bool) -> Leaf:
    """A tensor's spec (a symbolic dimension by its name), or a SymInt input's."""
    if scalars and isinstance(value, torch.SymInt):
        return ScalarSpec(str(value))
    if not isinstance(value, torch.Tensor):
        kind = "float and bool outputs are" if not scalars else "float and bool inputs are"
        raise IngressError(f"stage 'torch-import' failed: {what} is a {type(value).__name__} "
                           f"({kind} not supported yet)")
    return TensorSpec.of(value)


def _symbols(example_inputs: Sequence[Any]) -> dict[str, tuple[str, int, int]]:
    """Where each size symbol of the inputs can be read at a call: an int input, or a
    dimension of a tensor input."""
    found: dict[str, tuple[str, int, int]] = {}
    for i, v in enumerate(example_inputs):
        dims = [(-1, v)] if isinstance(v, torch.SymInt) else \
            list(enumerate(v.shape)) if isinstance(v, torch.Tensor) else []
        for d, size in dims:
            if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                name = str(size.node.expr)
                found.setdefault(name, (name, i, d))
    return found


_ITEM_DTYPES = {torch.SymInt: torch.int64, torch.SymFloat: torch.float64,
                torch.SymBool: torch.bool}


def _from_data(value: Any, symbols: dict[str, tuple[str, int, int]]) -> bool:
    """Whether ``value`` is a scalar computed from tensor data (an unbacked ``u0`` of
    ``.item()``), which no input size determines."""
    if not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return False
    return any(str(s) not in symbols for s in value.node.expr.free_symbols) \
        or not isinstance(value, torch.SymInt)


def _size_leaf(value: Any, what: str, symbols: dict[str, tuple[str, int, int]]) -> Leaf:
    """An int output: a constant, or a `SizeSpec` when it is a size of the inputs."""
    if isinstance(value, (bool, int, float)):  # a plain Python scalar, bool included
        return Constant(value)
    from torch.utils._sympy.printers import PythonPrinter

    expr = value.node.expr
    missing = sorted(str(s) for s in expr.free_symbols if str(s) not in symbols)
    if missing:
        raise IngressError(f"stage 'torch-import' failed: {what} is the SymInt {expr}, computed "
                           f"from data ({', '.join(missing)}), not from the input sizes")
    used = tuple(symbols[str(s)] for s in sorted(expr.free_symbols, key=str))
    return SizeSpec(PythonPrinter().doprint(expr), used)


def _canonicalize(graph: torch.fx.Graph) -> None:
    """Rewrites of what ``aot_autograd`` leaves that torch-mlir lowers badly or not at all.

    * ``expand(x, sizes)``: a size equal to ``x``'s own (symbolic) dimension becomes -1. Given
      a SymInt there (SDPA's math form, ``repeat_kv``, the mask: ``expand(t, [1, 2, 32, s0+1])``),
      torch-mlir cannot tell that the dimension is kept and emits a broadcast that may stretch a
      size-1 dimension (a ``tensor.extract`` gather under ``select(dim == 1, 0, i)``); IREE's
      data-tiled matvec then fuses that gather and needs an unbounded stack buffer
      ("exceeded stack allocation limit"). An expand that keeps every dimension is dropped.
    * ``true_divide.Tensor`` (Dynamo's ``tensorify_python_scalars`` inserts it after the
      decompositions ran, for a Python float it passes as a 0-d tensor under ``dynamic=True``)
      becomes ``div.Tensor``, the same op, which torch-mlir knows.
    * ``math.trunc`` / ``floor`` / ``ceil`` of a float read from data (``int(t)`` of a float
      ``t`` under ``capture_scalar_outputs``), and ``sym_float`` of an int read from data:
      torch-mlir's importer has no symbolic form of them, so the rounding or the conversion is
      done on the 0-d tensor before it is read.
    """
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target is aten.true_divide.Tensor:
            node.target = aten.div.Tensor
        elif node.target in _ON_THE_TENSOR and _read_from_data(node.args[0]):
            _apply_before_reading(graph, node)
        elif node.target is aten.expand.default:
            src, sizes = node.args[0], node.args[1]
            before, after = src.meta.get("val"), node.meta.get("val")
            if before is None or after is None or before.dim() != len(sizes):
                continue
            kept = [statically_known_true(a == b) for a, b in zip(before.shape, after.shape)]
            if all(kept):
                node.replace_all_uses_with(src)
                graph.erase_node(node)
            elif any(kept):
                node.args = (src, [-1 if k else s for k, s in zip(kept, sizes)])
    symbolic_scalars.rewrite(graph)
    checks.keep(graph)
    graph.eliminate_dead_code()  # the sym_size nodes only the expands used


# A Python function applied to a scalar read from data -> (the same on its tensor, the dtype)
_ON_THE_TENSOR = {
    math.trunc: (torch.ops.aten.trunc.default, torch.int64),
    math.floor: (torch.ops.aten.floor.default, torch.int64),
    math.ceil: (torch.ops.aten.ceil.default, torch.int64),
    torch.sym_float: (None, torch.float64),
}


def _read_from_data(arg: Any) -> bool:
    return isinstance(arg, torch.fx.Node) and \
        arg.target is torch.ops.aten._local_scalar_dense.default


def _apply_before_reading(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """``trunc(t.item())`` -> ``t.trunc().to(int64).item()``, the same int; ``float(t.item())``
    of an int ``t`` -> ``t.to(float64).item()``."""
    op, dtype = _ON_THE_TENSOR[node.target]
    tensor = node.args[0].args[0]
    example = tensor.meta["val"]
    with graph.inserting_before(node):
        if op is not None:
            tensor = graph.call_function(op, (tensor,))
            symbolic_scalars.describe(tensor, torch.empty(example.shape, dtype=example.dtype))
        cast = graph.call_function(torch.ops.aten._to_copy.default, (tensor,), {"dtype": dtype})
        symbolic_scalars.describe(cast, torch.empty(example.shape, dtype=dtype))
        read = graph.call_function(torch.ops.aten._local_scalar_dense.default, (cast,))
    read.meta["val"] = node.meta["val"]
    node.replace_all_uses_with(read)
    graph.erase_node(node)


def _read_constants_once(graph: torch.fx.Graph) -> None:
    """A constant (``get_attr``) used more than once is read once, through a ``clone`` that
    torch-mlir folds away: its FX importer (20261001) binds a ``get_attr`` at each use and
    asserts "Node already has a value" at the second, which every frozen weight used twice
    hit (GPT-2's embedding tied to its output layer)."""
    for node in list(graph.nodes):
        if node.op != "get_attr":
            continue
        uses: list[torch.fx.Node] = []
        for user in node.users:
            torch.fx.node.map_arg((user.args, user.kwargs),
                                  lambda a: uses.append(a) if a is node else None)
        if len(uses) < 2:
            continue
        with graph.inserting_after(node):
            read = graph.call_function(torch.ops.aten.clone.default, (node,))
        read.meta.update(node.meta)
        node.replace_all_uses_with(read, delete_user_cb=lambda user: user is not read)


def import_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 weights: Mapping[int, tuple[str, torch.Tensor]] | None = None) -> ImportedProgram:
    """``gm`` (a functional ATen graph of ``aot_autograd``) in torch-mlir's torch dialect.
    ``weights``: inputs (by position) that are a module's parameters or buffers, with their
    parameter names and tensors. Each becomes an argument of ``@main`` marked as a weight
    (`lowerkit.ingress.weights`), which IREE reads at load as a parameter: the call signature
    leaves them out."""
    from torch_mlir import ir

    start = time.perf_counter()
    weights = dict(weights or {})
    every_input = list(example_inputs)
    example_inputs = [v for i, v in enumerate(every_input) if i not in weights]
    in_leaves = [_leaf(v, f"input {i}", True) for i, v in enumerate(example_inputs)]
    graph = torch.fx.Graph()
    outputs = graph.graph_copy(gm.graph, {})
    if not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)
    values = [n.meta.get("val") if isinstance(n, torch.fx.Node) else n for n in outputs]
    symbols = _symbols(example_inputs)
    # A None output (the gradient of an input that needs none) is a constant of the signature,
    # a size one computed from the inputs' sizes at each call: the compiled function returns
    # the tensors, and the scalars computed from data as 0-d tensors (`ItemSpec`).
    returned, out_leaves = [], []
    for i, (node, v) in enumerate(zip(outputs, values)):
        if isinstance(v, torch.Tensor):
            returned.append(node)
            out_leaves.append(_leaf(v, f"output {i}", False))
        elif _from_data(v, symbols):
            spec = ItemSpec((), _ITEM_DTYPES[type(v)])
            item = graph.call_function(torch.ops.aten.scalar_tensor.default, (node,),
                                       {"dtype": spec.dtype})  # appended: no output node yet
            symbolic_scalars.describe(item, torch.empty((), dtype=spec.dtype))
            returned.append(item)
            out_leaves.append(spec)
        elif v is None:
            out_leaves.append(Constant(None))
        else:
            out_leaves.append(_size_leaf(v, f"output {i}", symbols))
    graph.output(tuple(returned))
    _canonicalize(graph)  # after the output: dead code elimination keeps what it returns
    _read_constants_once(graph)
    names = [n.name for n in graph.nodes if n.op == "placeholder"]
    keys = {names[i]: weights[i][0] for i in weights} if len(names) == len(every_input) else {}
    # what the graph computes from weights alone, torch computes at bind time
    derived = weight_computations.hoist(graph, keys) if keys else {}
    signature = CallSignature(pytree.tree_flatten((tuple(example_inputs), {}))[1], in_leaves,
                              pytree.tree_flatten(tuple(values))[1], out_leaves)
    # owned by a module holding gm's attributes: the importer reads constants (get_attr) and
    # rewrites as_strided through the owner
    owner = torch.fx.GraphModule(gm, graph)
    control_flow.carry_additional_inputs(owner)
    graph = owner.graph
    importer = fx_importer()
    try:
        # higher-order ops' subgraphs (while_loop's cond and body) first, as private
        # functions, as the exported path does (`weights.import_with_weight_arguments`)
        importer._import_all_child_modules(owner, "main", False)
        func = importer.import_stateless_graph(graph, func_name="main").operation
    except Exception as e:
        raise import_failure(e, graph) from e
    if keys:
        mark_weight_arguments(func, graph, keys, derived)
    elif weights:
        with func.context:
            func.attributes["arg_attrs"] = ir.ArrayAttr.get([
                ir.DictAttr.get({WEIGHT_ATTRIBUTE: ir.StringAttr.get(weights[i][0])}
                                if i in weights else {})
                for i in range(len(every_input))])
    return ImportedProgram(importer.module, signature, gm, time.perf_counter() - start,
                           weights={name: t for name, t in weights.values()})
