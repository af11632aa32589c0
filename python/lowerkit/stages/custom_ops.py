"""Custom PyTorch ops: lowerings written in Python for ``torch.library.custom_op`` ops.

torch-mlir's FX importer keeps an op it does not know as ``torch.operator "torch.ns.name"``,
which torch-mlir cannot legalize. A lowering registered for ``"ns::name"`` replaces that op
with torch-dialect ops, in the ``lower-custom-ops`` stage that opens the default pipeline:

    @lowerkit.custom_op_lowering("demo::squared_relu")
    def _(b, x):
        r = b.op("torch.aten.relu", x)
        return b.op("torch.aten.mul.Tensor", r, r)
"""

from __future__ import annotations

from typing import Any, Callable

from ..registry import custom_ops
from .stage import PythonPassStage

# torch.operator namespaces that are torch's own (left to torch-mlir, never reported).
_TORCH_NAMESPACES = {"aten", "prims", "quantized_decomposed", "_quantized", "quantized", "torchvision"}


def custom_op_lowering(op: str) -> Callable[[Callable], Callable]:
    """Decorator registering ``fn(builder, *operands)`` as the lowering of custom op ``op``.

    ``op`` is the name given to ``torch.library.custom_op`` (``"namespace::name"``). The
    function returns the replacement value (or a list, one per result of the op).
    """
    if "::" not in op:
        raise ValueError(f"custom op names are 'namespace::name', got {op!r}")

    def register(fn: Callable) -> Callable:
        custom_ops.register(op, lambda: fn)
        return fn

    return register


class TorchBuilder:
    """Builds torch-dialect ops in place of one ``torch.operator``.

    ``op(name, *operands, result_type=None, **attributes)`` creates an op whose single result
    has ``result_type`` (the custom op's first result type unless given); ``int``, ``float``,
    ``bool`` and ``none`` make torch constants.
    """

    def __init__(self, operator: Any):
        from torch_mlir import ir

        self._ir = ir
        self.operator = operator
        self.result_types = [r.type for r in operator.results]

    @property
    def result_type(self) -> Any:
        return self.result_types[0]

    def op(self, name: str, *operands: Any, result_type: Any = None, **attributes: Any) -> Any:
        rt = self.result_type if result_type is None else result_type
        if isinstance(rt, str):
            rt = self._ir.Type.parse(rt)
        attrs = {k: v if isinstance(v, self._ir.Attribute) else self._ir.Attribute.parse(str(v))
                 for k, v in attributes.items()}
        created = self._ir.Operation.create(name, results=[rt], operands=list(operands),
                                            attributes=attrs)
        return created.result

    def _constant(self, name: str, type_: str, attr: str) -> Any:
        return self._ir.Operation.create(
            name, results=[self._ir.Type.parse(type_)],
            attributes={"value": self._ir.Attribute.parse(attr)},
        ).result

    def int(self, value: int) -> Any:
        return self._constant("torch.constant.int", "!torch.int", f"{int(value)} : i64")

    def float(self, value: float) -> Any:
        return self._constant("torch.constant.float", "!torch.float", f"{float(value)!r} : f64")

    def bool(self, value: bool) -> Any:
        return self._constant("torch.constant.bool", "!torch.bool", "true" if value else "false")

    def none(self) -> Any:
        return self._ir.Operation.create("torch.constant.none", results=[self._ir.Type.parse("!torch.none")]).result


def custom_op_name(operator: Any) -> str:
    """``"ns::name"`` of a ``torch.operator`` op (its ``name`` is ``"torch.ns.name"``)."""
    full = str(operator.attributes["name"]).strip('"')
    if full.startswith("torch."):
        full = full[len("torch."):]
    ns, _, rest = full.partition(".")
    return f"{ns}::{rest}"


def _lower_custom_ops(op: Any, pass_: Any) -> None:
    from torch_mlir import ir

    operators: list = []

    def visit(o):
        if o.name == "torch.operator":
            operators.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    failed = False
    for operator in operators:
        name = custom_op_name(operator)
        if name not in custom_ops:
            if name.split("::")[0] not in _TORCH_NAMESPACES:
                operator.location.emit_error(
                    f"custom op '{name}' has no lowering; register one with "
                    f"@lowerkit.custom_op_lowering({name!r})"
                )
                failed = True
            continue
        lowering = custom_ops.get(name)
        with ir.InsertionPoint(operator), operator.location:
            result = lowering(TorchBuilder(operator), *operator.operands)
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(values) != len(operator.results):
            operator.location.emit_error(
                f"the lowering of '{name}' returned {len(values)} value(s) for "
                f"{len(operator.results)} result(s)"
            )
            failed = True
            continue
        for old, new in zip(operator.results, values):
            old.replace_all_uses_with(new)
        operator.erase()
    if failed:
        pass_.signal_pass_failure()


def lower_custom_ops() -> PythonPassStage:
    """The stage replacing every custom op that has a registered lowering."""
    return PythonPassStage(
        "lower-custom-ops", _lower_custom_ops,
        description="replace torch.operator ops of custom PyTorch ops by their Python lowerings",
    )
