"""The calling convention of a compiled program: which Python values go in and come out.

torch.export specialises Python scalars (floats, ints, bools, None) into the graph, so the
compiled function takes only the tensor leaves of ``(args, kwargs)``. `CallSignature` remembers
the whole structure, checks every call against it, and rebuilds the model's own output
structure (tensor, tuple, list, dict, nested, with None or ints beside tensors).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..errors import InputError

_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float32, torch.float16, torch.bfloat16, torch.float64,
    torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
    torch.complex64, torch.complex128,
)}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def static_size(d: Any) -> int:
    """A size as an int: a SymInt can be a constant (``run_decompositions`` gives a dimension
    that ``torch.export`` specialised a SymInt whose string is its value, which a call must
    then be checked against like any static size)."""
    return d if isinstance(d, int) else int(d.node.expr)


@dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of one tensor leaf; a ``str`` dimension is dynamic and named."""

    shape: tuple[int | str, ...]
    dtype: torch.dtype

    def describe(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"tensor[{dims}] {dtype_name(self.dtype)}"

    @staticmethod
    def of(tensor: torch.Tensor) -> "TensorSpec":
        """The spec of a real or fake tensor; a symbolic dimension is named by its symbol."""
        # here, not at the top: it brings sympy, which a cache hit never needs
        from torch.fx.experimental.symbolic_shapes import is_concrete_int

        return TensorSpec(tuple(static_size(d) if is_concrete_int(d) else str(d)
                                for d in tensor.shape), tensor.dtype)

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": dtype_name(self.dtype)}

    @staticmethod
    def from_json(d: dict) -> "TensorSpec":
        return TensorSpec(tuple(d["shape"]), _DTYPES[d["dtype"]])


@dataclass(frozen=True)
class Constant:
    """A non-tensor leaf that torch.export baked into the program."""

    value: Any

    def describe(self) -> str:
        return f"constant {self.value!r}"


@dataclass(frozen=True)
class ScalarSpec:
    """An integer given at every call (a dynamic size of ``torch.compile``, a SymInt), named
    like the dynamic tensor dimensions it must agree with."""

    name: str

    def describe(self) -> str:
        return f"int {self.name}"


@dataclass(frozen=True)
class SizeSpec:
    """An int output computed from the input sizes (a SymInt a graph returns, as a training
    forward graph returns sizes for its backward): evaluated on the host from each call's
    inputs, as Python, never by the compiled program."""

    expr: str                                  # a Python expression over the symbols
    symbols: tuple[tuple[str, int, int], ...]  # (symbol, flat input, its dim; -1: an int input)

    def describe(self) -> str:
        return f"int {self.expr}"

    @functools.cached_property
    def _code(self) -> Any:
        return compile(self.expr, "<size>", "eval")

    def value(self, inputs: list[Any]) -> int:
        env = {name: inputs[i] if d < 0 else inputs[i].shape[d] for name, i, d in self.symbols}
        return int(eval(self._code, {"__builtins__": {}, "max": max, "min": min}, env))


@dataclass(frozen=True)
class ItemSpec(TensorSpec):
    """A Python scalar the program computed from data (``t.item()``, ``int(t)`` under Dynamo's
    ``capture_scalar_outputs``): the compiled program returns it as a 0-d tensor, and the host
    makes it the int, float or bool eager returns."""

    def describe(self) -> str:
        return f"{self.kind} from data"

    @property
    def kind(self) -> str:
        return "bool" if self.dtype is torch.bool else \
            "float" if self.dtype.is_floating_point else "int"

    def value(self, tensor: torch.Tensor) -> int | float | bool:
        return tensor.item()

    def to_json(self) -> dict:
        return {"item": dtype_name(self.dtype)}


Leaf = TensorSpec | Constant | ScalarSpec | SizeSpec
# Types a call's tensors may have on the fast path (torch.compile hands over the parameters)
_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _same_constant(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@dataclass
class CallSignature:
    """Inputs and outputs of a compiled program, as pytrees of `TensorSpec` and `Constant`."""

    in_spec: pytree.TreeSpec
    in_leaves: list[Leaf]
    out_spec: pytree.TreeSpec
    out_leaves: list[Leaf]
    # Buffers the program mutates: extra trailing inputs and outputs of the compiled function,
    # whose values the Artifact keeps from call to call, as the module's buffers would change.
    state: list[TensorSpec] = field(default_factory=list)
    # Tensor inputs (by index among the tensor inputs) the program changes in place: their new
    # values lead the compiled function's outputs and are copied back into the caller's tensors.
    mutated_inputs: list[int] = field(default_factory=list)
    # Whether the compiled function takes the random ops' seed, a 0-d int64 tensor, as its last
    # input (after the state): the program draws random numbers (`passes/seed_input.py`), and
    # each call passes a seed drawn from torch's default generator (`runtime.artifact`).
    seeded: bool = False

    # -- calling ---------------------------------------------------------------------------
    def describe_inputs(self) -> str:
        described = [l.describe() for l in self.in_leaves]
        try:
            args, kwargs = pytree.tree_unflatten(described, self.in_spec)
        except Exception:  # a container that computes on its leaves (a transformers cache)
            return "(" + ", ".join(described) + ")"
        parts = [_describe_node(a) for a in args] + [f"{k}={_describe_node(v)}"
                                                     for k, v in kwargs.items()]
        return "(" + ", ".join(parts) + ")"

    def flatten_inputs(self, args: tuple, kwargs: dict) -> list[torch.Tensor | int]:
        """Check a call against the signature; return what the executable takes: tensors, and
        ints for `ScalarSpec` inputs."""
        static = self._static_inputs
        if static is not None and not kwargs and len(args) == len(static):
            for value, (dtype, shape) in zip(args, static):  # the common call, checked cheaply
                if type(value) not in _PLAIN or value.dtype is not dtype \
                        or value.shape != shape or not value.is_cpu:
                    break  # the full check below says what is wrong
            else:
                return list(args)
        if not kwargs and len(args) == self._positional_tensors and all(
                type(a) in _PLAIN for a in args):
            leaves = list(args)  # the common call: tensors only, nothing to flatten
        else:
            leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs or {})))
            if spec != self.in_spec:
                raise InputError(
                    f"arguments do not match the compiled signature {self.describe_inputs()}: "
                    f"got {_describe_call(args, kwargs)}"
                )
        tensors: list[torch.Tensor] = []
        bound: dict[str, int] = {}
        for i, (value, leaf) in enumerate(zip(leaves, self.in_leaves)):
            where = f"input {i}"
            if isinstance(leaf, Constant):
                if isinstance(value, torch.Tensor) or not _same_constant(value, leaf.value):
                    raise InputError(
                        f"{where} was {leaf.value!r} when the program was compiled and is baked "
                        f"into it; got {value!r}. Recompile to use another value. "
                        f"Signature: {self.describe_inputs()}"
                    )
                continue
            if isinstance(leaf, ScalarSpec):
                if type(value) is not int or bound.setdefault(leaf.name, value) != value:
                    raise InputError(
                        f"{where} must be an int {leaf.name}"
                        + (f" equal to {bound[leaf.name]} (the size it names)"
                           if type(value) is int else f", got {type(value).__name__}")
                        + f". Signature: {self.describe_inputs()}")
                tensors.append(value)
                continue
            if not isinstance(value, torch.Tensor):
                raise InputError(
                    f"{where} must be a {leaf.describe()}, got {type(value).__name__}. "
                    f"Signature: {self.describe_inputs()}"
                )
            if value.dtype != leaf.dtype:
                raise InputError(
                    f"{where} has dtype {dtype_name(value.dtype)}, expected "
                    f"{dtype_name(leaf.dtype)}. Signature: {self.describe_inputs()}"
                )
            if value.dim() != len(leaf.shape) or not _shape_fits(value.shape, leaf.shape, bound):
                raise InputError(
                    f"{where} has shape {list(value.shape)}, expected {leaf.describe()}"
                    f"{_bound_note(bound)}. Signature: {self.describe_inputs()}"
                )
            if value.device.type != "cpu":
                if value.device.type == "meta":
                    raise InputError(
                        f"{where} is a meta tensor: it has a shape but no data to run on. "
                        f"Signature: {self.describe_inputs()}"
                    )
                value = value.cpu()
            tensors.append(value)
        return tensors

    @functools.cached_property
    def _positional_tensors(self) -> int:
        """n when the program takes exactly n positional tensors (the fast path), else -1."""
        n = len(self.in_leaves)
        plain = pytree.tree_flatten((tuple(range(n)), {}))[1]
        return n if plain == self.in_spec and all(isinstance(l, TensorSpec)
                                                  for l in self.in_leaves) else -1

    @functools.cached_property
    def _static_inputs(self) -> tuple[tuple[torch.dtype, torch.Size], ...] | None:
        """(dtype, shape) of each input when the program takes positional tensors of static
        shapes only: such a call is checked by comparing these, with nothing to bind."""
        if self._positional_tensors < 0 or not all(
                all(isinstance(d, int) for d in l.shape) for l in self.in_leaves):
            return None
        return tuple((l.dtype, torch.Size(l.shape)) for l in self.in_leaves)

    @functools.cached_property
    def _tuple_of_tensors(self) -> bool:
        """Whether the outputs are a flat tuple of tensors (a multi-output model's usual form)."""
        n = len(self.out_leaves)
        plain = pytree.tree_flatten(tuple(range(n)))[1]
        return plain == self.out_spec and all(type(l) is TensorSpec for l in self.out_leaves)

    @functools.cached_property
    def _single_output(self) -> bool:
        return self.out_spec.is_leaf() and type(self.out_leaves[0]) is TensorSpec

    @functools.cached_property
    def _retyped_outputs(self) -> tuple[tuple[int, torch.dtype], ...]:
        """The outputs `_as_dtype` may retype (integer and bool ones; it never changes a float
        output), so that a call with float outputs only skips it (~0.3 µs an output)."""
        return tuple((i, l.dtype) for i, l in enumerate(self.out_leaves)
                     if isinstance(l, TensorSpec) and not l.dtype.is_floating_point)

    @functools.cached_property
    def sizes_out(self) -> bool:
        """Whether an output is a `SizeSpec`: `unflatten_outputs` then needs the inputs."""
        return any(isinstance(l, SizeSpec) for l in self.out_leaves)

    def unflatten_outputs(self, tensors: list[Any], inputs: list[Any] | None = None) -> Any:
        if self._single_output:
            return _as_dtype(tensors[0], self.out_leaves[0].dtype)
        if self._tuple_of_tensors:
            retyped = self._retyped_outputs
            if not retyped:
                return tuple(tensors)
            out = list(tensors)
            for i, dtype in retyped:
                out[i] = _as_dtype(out[i], dtype)
            return tuple(out)
        it = iter(tensors)
        leaves = [l.value(next(it)) if isinstance(l, ItemSpec)
                  else _as_dtype(next(it), l.dtype) if isinstance(l, TensorSpec)
                  else l.value(inputs) if isinstance(l, SizeSpec) else l.value
                  for l in self.out_leaves]
        return pytree.tree_unflatten(leaves, self.out_spec)

    @property
    def tensor_inputs(self) -> list[TensorSpec]:
        return [l for l in self.in_leaves if isinstance(l, TensorSpec)]

    @functools.cached_property
    def tensor_outputs(self) -> list[TensorSpec]:
        return [l for l in self.out_leaves if isinstance(l, TensorSpec)]

    # -- saving ----------------------------------------------------------------------------
    def to_json(self) -> dict:
        def leaf(l: Leaf) -> dict:
            if isinstance(l, ScalarSpec):
                return {"scalar": l.name}
            if isinstance(l, SizeSpec):
                return {"size": l.expr, "symbols": [list(x) for x in l.symbols]}
            if isinstance(l, ItemSpec):
                return l.to_json()
            return {"tensor": l.to_json()} if isinstance(l, TensorSpec) else {"constant": l.value}

        return {
            "in_spec": _dump_spec(self.in_spec),
            "in_leaves": [leaf(l) for l in self.in_leaves],
            "out_spec": _dump_spec(self.out_spec),
            "out_leaves": [leaf(l) for l in self.out_leaves],
            "state": [s.to_json() for s in self.state],
            "mutated_inputs": list(self.mutated_inputs),
            "seeded": self.seeded,
        }

    @staticmethod
    def from_json(d: dict) -> "CallSignature":
        def leaf(x: dict) -> Leaf:
            if "scalar" in x:
                return ScalarSpec(x["scalar"])
            if "size" in x:
                return SizeSpec(x["size"], tuple(tuple(v) for v in x["symbols"]))
            if "item" in x:
                return ItemSpec((), _DTYPES[x["item"]])
            return TensorSpec.from_json(x["tensor"]) if "tensor" in x else Constant(x["constant"])

        return CallSignature(
            _load_spec(d["in_spec"]),
            [leaf(x) for x in d["in_leaves"]],
            _load_spec(d["out_spec"]),
            [leaf(x) for x in d["out_leaves"]],
            [TensorSpec.from_json(x) for x in d.get("state", [])],
            list(d.get("mutated_inputs", [])),
            bool(d.get("seeded", False)),
        )

    def json_safe(self) -> bool:
        try:
            json.dumps(self.to_json())
            return True
        except (TypeError, ValueError):
            return False


_PICKLED = "pickle:"


def _describe_node(value: Any) -> str:
    return str(value) if isinstance(value, (str, int, float, bool, type(None), list, tuple, dict)) \
        else f"{type(value).__name__}(...)"


def _dump_spec(spec: pytree.TreeSpec) -> str:
    """A tree spec as text. pytree's JSON knows only the types registered with a serialized
    name; others, such as the ``torch.return_types.max`` that ``x.max(dim)`` returns, are
    pickled (their classes are importable)."""
    try:
        return pytree.treespec_dumps(spec)
    except NotImplementedError:
        import base64
        import pickle

        return _PICKLED + base64.b64encode(pickle.dumps(spec)).decode()


def _load_spec(text: str) -> pytree.TreeSpec:
    if text.startswith(_PICKLED):
        import base64
        import pickle

        return pickle.loads(base64.b64decode(text[len(_PICKLED):]))
    return pytree.treespec_loads(text)


def _as_dtype(t: Any, dtype: torch.dtype) -> Any:
    """Outputs come back as eager's dtype: MLIR's integers are signless, so IREE returns an
    ``i8`` buffer for a ``uint8`` result; the bits are the same, the type is eager's."""
    if isinstance(t, torch.Tensor) and t.dtype is not dtype:
        if t.dtype.itemsize == dtype.itemsize and not t.dtype.is_floating_point \
                and not dtype.is_floating_point:
            return t.view(dtype)
    return t


def _shape_fits(actual: torch.Size, expected: tuple[int | str, ...], bound: dict[str, int]) -> bool:
    for a, e in zip(actual, expected):
        if isinstance(e, int):
            if a != e:
                return False
        elif bound.setdefault(e, a) != a:
            return False
    return True


def _bound_note(bound: dict[str, int]) -> str:
    if not bound:
        return ""
    return " (with " + ", ".join(f"{k}={v}" for k, v in bound.items()) + " from earlier inputs)"


def _describe_call(args: tuple, kwargs: dict | None) -> str:
    def one(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"tensor{list(v.shape)} {dtype_name(v.dtype)}"
        if isinstance(v, (list, tuple)):
            inner = ", ".join(one(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner})"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {one(x)}" for k, x in v.items()) + "}"
        return repr(v)

    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in (kwargs or {}).items()]
    return "(" + ", ".join(parts) + ")"
