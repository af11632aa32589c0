"""Weight arguments to IREE parameters, on IREE's side of the crossing.

``@main``'s arguments marked ``{lowerkit.parameter = "name"}`` (`lowerkit.ingress.weights`)
become ``util.global private @... = #stream.parameter.named<"model"::"name">`` loaded at the
top of the function. IREE treats an immutable global as a constant: what the program computes
from weights alone (a transposed or packed weight, a folded BatchNorm scale) is hoisted into
an initializer that runs once when the module loads, with whatever weights are bound then.
The vmfb holds code only, so another checkpoint of the same model reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TYPE_CHECKING

from .. import derived_weights
from ..derived_weights import Derivation
from ..errors import StageError
from ..ir import WEIGHT_ATTRIBUTE as ATTRIBUTE, Build

if TYPE_CHECKING:
    from ..stages.stage import FunctionStage

STAGE = "externalize-weights"
SCOPE = "model"  # the parameter scope every weight is named in


@dataclass(frozen=True)
class ParameterSlot:
    """One parameter the compiled module reads: its name and the tensor type IREE stores it as
    (after the target's fixes, which may widen an element type). A slot with a
    ``derivation`` holds a value torch makes from the model's tensors when they are bound
    (`lowerkit.derived_weights`), not one of them."""

    key: str
    shape: tuple[int, ...]
    element: str  # MLIR element type: f32, bf16, i64, i1, ...
    derivation: Derivation | None = None

    @property
    def state_keys(self) -> tuple[str, ...]:
        """The model's names (state-dict keys) for the tensors this slot is made from."""
        return self.derivation.inputs if self.derivation is not None else (self.key,)

    @property
    def state_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shapes of those tensors."""
        return self.derivation.input_shapes if self.derivation is not None else (self.shape,)

    def to_json(self) -> dict:
        d = {"key": self.key, "shape": list(self.shape), "element": self.element}
        if self.derivation is not None:
            d["derivation"] = self.derivation.to_json()
        return d

    @staticmethod
    def from_json(d: dict) -> "ParameterSlot":
        derivation = d.get("derivation")
        return ParameterSlot(d["key"], tuple(d["shape"]), d["element"],
                             Derivation.from_json(derivation) if derivation else None)


def global_name(index: int) -> str:
    """The symbol of the global that holds the ``index``-th slot."""
    return f"__lowerkit_weight_{index}"


def externalize(module: Any, function: str = "main") -> list[ParameterSlot]:
    """Rewrite, in place, the marked arguments of ``function`` in an IREE-build ``module``
    into parameter globals; the slots, in argument order (none: the module is unchanged)."""
    from iree.compiler import ir

    slots: list[ParameterSlot] = []
    with module.context, ir.Location.unknown():
        func = _function(module, function)
        if func is None or "arg_attrs" not in func.attributes:
            return slots
        ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        arg_attrs = list(ir.ArrayAttr(func.attributes["arg_attrs"]))
        block = func.regions[0].blocks[0]
        at_top = ir.InsertionPoint.at_block_begin(block)
        before_func = ir.InsertionPoint(func)
        kept_types, kept_attrs, removed = [], [], []
        for index, (arg_type, attrs) in enumerate(zip(ftype.inputs, arg_attrs)):
            marks = ir.DictAttr(attrs)
            if ATTRIBUTE not in marks:
                kept_types.append(arg_type)
                kept_attrs.append(attrs)
                continue
            key = ir.StringAttr(marks[ATTRIBUTE]).value
            tensor = ir.RankedTensorType(arg_type)
            if any(ir.ShapedType.is_dynamic_size(d) for d in tensor.shape):
                raise StageError(STAGE, f"weight '{key}' has a dynamic shape {arg_type}")
            name = global_name(len(slots))
            quoted = key.replace("\\", "\\\\").replace('"', '\\"')
            before_func.insert(ir.Operation.parse(
                f'util.global private @{name} = '
                f'#stream.parameter.named<"{SCOPE}"::"{quoted}"> : {arg_type}'))
            load = ir.Operation.create("util.global.load", results=[arg_type],
                                       attributes={"global": ir.FlatSymbolRefAttr.get(name)})
            at_top.insert(load)
            block.arguments[index].replace_all_uses_with(load.result)
            removed.append(index)
            derivation = (Derivation.loads(ir.StringAttr(marks[derived_weights.ATTRIBUTE]).value)
                          if derived_weights.ATTRIBUTE in marks else None)
            slots.append(ParameterSlot(key, tuple(tensor.shape), str(tensor.element_type),
                                       derivation))
        if not slots:
            return slots
        for index in reversed(removed):
            block.erase_argument(index)
        func.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(kept_types, ftype.results))
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(kept_attrs)
        if not module.operation.verify():
            raise StageError(STAGE, "the module does not verify after its weights became globals")
    return slots


def stage() -> "tuple[FunctionStage, list[ParameterSlot]]":
    """The stage that runs `externalize` (in IREE's build, after the target's fixes), and the
    list it fills with the module's slots."""
    from ..stages.stage import FunctionStage

    slots: list[ParameterSlot] = []

    def run(module: Any) -> None:
        slots[:] = externalize(module)

    return FunctionStage(STAGE, run, Build.IREE), slots


def has_weight_arguments(module: Any, function: str = "main") -> bool:
    """Whether ``function`` (of a module of either build) takes weights by reference."""
    ir = Build.of(module).ir
    with module.context:
        func = _function(module, function, ir)
        return func is not None and "arg_attrs" in func.attributes and any(
            ATTRIBUTE in ir.DictAttr(a) for a in ir.ArrayAttr(func.attributes["arg_attrs"]))


def _function(module, name: str, ir: Any = None):
    if ir is None:
        from iree.compiler import ir

    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    return None
