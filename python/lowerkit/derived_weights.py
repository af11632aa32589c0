"""Weights the compiled program reads that torch makes from the model's own, at bind time.

With the weights as IREE parameters, IREE cannot fold at compile time what a program computes
from weights alone: it hoists each such computation into an initializer, which is one more
executable to generate code for and one more pass over the weights when the module loads. A
BatchNorm's ``1 / sqrt(running_var + eps)`` and the channels-last transpose of a convolution's
filter are the common ones.

A `Derivation` is that computation written down: the model's tensors it reads (by state-dict
key) and the ATen ops that make the value from them. The program reads the result as one more
parameter, and `lowerkit.runtime.weights` runs the ops with torch whenever weights are bound,
so another checkpoint of the same model still needs no compile. It travels as JSON: in the
IR (an argument attribute, so that two programs that derive differently never share a cache
entry) and in a saved artifact.

Only ATen and prims ops are recorded, and only those run from this JSON: `evaluate` looks each
name up in ``torch.ops.aten`` and ``torch.ops.prims`` (`NAMESPACES`) and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import LowerkitError

# the argument attribute that carries a derived weight's recipe, beside `ir.WEIGHT_ATTRIBUTE`
ATTRIBUTE = "lowerkit.derivation"
# "0" leaves every weight computation to IREE's initializers, as before (to compare, or to
# rule this out when a derived weight is suspected)
ENV = "LOWERKIT_DERIVED_WEIGHTS"


def enabled() -> bool:
    """Whether lowerkit derives weights on the host (`ENV` is not "0")."""
    import os

    return os.environ.get(ENV, "1") != "0"


class NotRecordable(Exception):
    """An argument `Derivation` cannot write as JSON: the op is left to the program."""


@dataclass(frozen=True)
class Step:
    """One ATen or prims op: ``op`` as ``"aten::add.Tensor"`` (``torch.ops.aten.add.Tensor``),
    its arguments as JSON, where ``{"value": i}`` is the i-th value (the inputs, then each
    step's result)."""

    op: str
    args: tuple
    kwargs: dict

    def to_json(self) -> dict:
        return {"op": self.op, "args": list(self.args), "kwargs": dict(self.kwargs)}

    @staticmethod
    def from_json(d: dict) -> "Step":
        return Step(d["op"], tuple(d["args"]), dict(d["kwargs"]))


@dataclass(frozen=True)
class Derivation:
    """A value made from ``inputs`` (state-dict keys, of ``input_shapes``) by ``steps``; the
    last step's result is the value."""

    inputs: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]

    def then(self, op: str, *args: Any) -> "Derivation":
        """This value with one more op applied to it (``{"value": last}`` is passed first)."""
        last = {"value": len(self.inputs) + len(self.steps) - 1}
        return Derivation(self.inputs, self.input_shapes,
                          (*self.steps, Step(op, (last, *map(encode, args)), {})))

    @staticmethod
    def of(key: str, shape: tuple[int, ...]) -> "Derivation":
        """The tensor ``key`` itself (no steps yet)."""
        return Derivation((key,), (tuple(shape),), ())

    def evaluate(self, tensors: "dict[str, Any]") -> Any:
        """The value, from ``tensors`` (by state-dict key), computed now by torch."""
        import torch

        values = [tensors[k] for k in self.inputs]
        with torch.no_grad():
            for step in self.steps:
                op = resolve(step.op)
                args = [decode(a, values) for a in step.args]
                kwargs = {k: decode(v, values) for k, v in step.kwargs.items()}
                values.append(op(*args, **kwargs))
        return values[-1].detach()

    def to_json(self) -> dict:
        return {"inputs": list(self.inputs), "input_shapes": [list(s) for s in self.input_shapes],
                "steps": [s.to_json() for s in self.steps]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_json(d: dict) -> "Derivation":
        return Derivation(tuple(d["inputs"]), tuple(tuple(s) for s in d["input_shapes"]),
                          tuple(Step.from_json(s) for s in d["steps"]))

    @staticmethod
    def loads(text: str) -> "Derivation":
        return Derivation.from_json(json.loads(text))


# the op namespaces a recipe may name: torch's pure core ops, nothing a user registered
NAMESPACES = ("aten", "prims")


def op_name(op: Any) -> str:
    """``torch.ops.aten.add.Tensor`` -> ``"aten::add.Tensor"``."""
    return f"{op.namespace}::{op._opname}.{op._overloadname}"


def _convert_element_type(a: Any, dtype: Any) -> Any:
    return a.to(dtype, copy=True)


# Ops run as the tensor method that does the same: torch's prims run behind
# ``torch._disable_dynamo``, whose first call imports Dynamo: most of a fresh process's first
# call when it bound ResNet-50's folded weights from a warm cache (issue 73).
_EAGER = {"prims::convert_element_type.default": _convert_element_type}


def resolve(name: str) -> Any:
    """The op ``name`` (`op_name`) names, looked up in `NAMESPACES` only."""
    import torch

    if name in _EAGER:
        return _EAGER[name]
    namespace, _, rest = name.partition("::")
    packet, _, overload = rest.partition(".")
    try:
        if namespace not in NAMESPACES:
            raise AttributeError(namespace)
        return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")
    except AttributeError:
        raise LowerkitError(f"a derived weight's recipe names {name}, which this torch does not "
                            "have or lowerkit does not run (a recipe from another torch "
                            "version?)") from None


def encode(value: Any, refs: "dict[Any, int] | None" = None) -> Any:
    """``value`` as JSON; a key of ``refs`` (an FX node) as the value it numbers."""
    import torch

    if refs is not None and _hashable(value) and value in refs:
        return {"value": refs[value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [encode(v, refs) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": "cpu"}  # bound weights are on the host
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    raise NotRecordable(type(value).__name__)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def decode(value: Any, values: list) -> Any:
    import torch

    if isinstance(value, list):
        return [decode(v, values) for v in value]
    if isinstance(value, dict):
        if "value" in value:
            return values[value["value"]]
        (kind, name), = value.items()
        if kind == "device":
            return torch.device(name)
        return getattr(torch, name)  # dtype, layout, memory_format
    return value
