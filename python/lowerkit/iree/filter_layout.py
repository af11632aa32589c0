"""Convolution filters read in the layout IREE computes in, made on the host at bind time.

With data-tiled convolutions (`lowerkit.tuning.DATA_TILED`) IREE's preprocessing turns every
``linalg.conv_2d_nchw_fchw`` channels-last, which transposes its filter from FCHW to HWCF.
When the filter is a weight held as an IREE parameter, IREE cannot fold that transpose at
compile time, so it hoists it into an initializer: one more executable to generate code for
per filter shape, and a pass over every filter when the module loads. ResNet-18 had eight of
them (README, "What in iree-compile holds ResNet-18").

Here the parameter holds the filter as HWCF already, and the program transposes it back to
FCHW. IREE's own transpose then meets this one and the two cancel, so no initializer is left.
The HWCF copy is made by torch when the weights are bound (`lowerkit.runtime.weights`): a
permute of the model's tensor, recorded in the slot as a `lowerkit.derived_weights.Derivation`,
so another checkpoint of the same model still needs no compile.
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ..derived_weights import Derivation, enabled
from ..errors import StageError
from ..ir import Build
from .parameters import SCOPE, ParameterSlot, global_name

if TYPE_CHECKING:
    from ..stages.stage import FunctionStage

STAGE = "filters-channels-last"
# the preprocessing that turns convolutions channels-last (`lowerkit.tuning.DATA_TILED_FLAGS`)
CHANNELS_LAST_PASS = "iree-preprocessing-convert-conv-to-channels-last"

# the convolution whose filter IREE's conv-to-channels-last rewrites, and the operand it is
CONVOLUTION, FILTER_OPERAND = "linalg.conv_2d_nchw_fchw", 1
# slot = state.permute(TO_HWCF): FCHW -> HWCF; the program reads it back with FROM_HWCF
TO_HWCF, FROM_HWCF = (2, 3, 1, 0), (3, 2, 0, 1)


def hwcf_key(key: str) -> str:
    """The parameter name of ``key``'s filter in HWCF (distinct in an .irpa from the tensor)."""
    return f"{key}@permute({','.join(map(str, TO_HWCF))})"


def wanted(flags: Any) -> bool:
    """Whether iree-compile, run with ``flags``, turns convolutions channels-last (and
    derived weights are not turned off: `lowerkit.derived_weights.ENV`)."""
    return enabled() and any(CHANNELS_LAST_PASS in f for f in flags)


def stage(slots: list[ParameterSlot]) -> "FunctionStage":
    """The stage that runs `read_filters_channels_last` after `lowerkit.iree.parameters`'s
    (whose ``slots`` it updates in place)."""
    from ..stages.stage import FunctionStage

    def run(module: Any) -> None:
        with module.context, Build.IREE.ir.Location.unknown():
            slots[:] = read_filters_channels_last(module, slots)
            if not module.operation.verify():
                raise StageError(STAGE, "the module does not verify after its filters "
                                        "became HWCF parameters")

    return FunctionStage(STAGE, run, Build.IREE)


def read_filters_channels_last(module: Any, slots: list[ParameterSlot]) -> list[ParameterSlot]:
    """Rewrite, in place, each weight global of ``module`` that is a convolution's filter to
    hold HWCF, read back to FCHW; return ``slots`` with those slots permuted. Call it inside
    the module's context."""
    from iree.compiler import ir
    from iree.compiler.dialects import tensor

    from ..op_views.linalg import TransposeOp, fill_builtin_region  # not linalg's op DSL

    globals_: dict[str, Any] = {}
    loads: dict[str, list[Any]] = {}

    def visit(op: Any) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if inner.name == "util.global.load":
                        name = ir.FlatSymbolRefAttr(inner.attributes["global"]).value
                        loads.setdefault(name, []).append(inner)
                    visit(inner)

    for op in module.body.operations:
        op = op.operation
        if op.name == "util.global":
            globals_[ir.StringAttr(op.attributes["sym_name"]).value] = op
        else:
            visit(op)

    out = list(slots)
    for index, slot in enumerate(slots):
        name = global_name(index)
        mine = loads.get(name, [])
        if len(slot.shape) != 4 or not mine or not any(
                _is_filter(use) for load in mine for use in load.result.uses):
            continue
        fchw = ir.RankedTensorType(mine[0].result.type)
        f, c, kh, kw = fchw.shape
        if kh * kw == 1:  # a 1x1 filter's transpose is 2-D: IREE folds it into its packing
            continue
        hwcf = ir.RankedTensorType.get([kh, kw, c, f], fchw.element_type)
        key = hwcf_key(slot.key)
        quoted = key.replace("\\", "\\\\").replace('"', '\\"')
        glob = globals_[name]
        glob.attributes["type"] = ir.TypeAttr.get(hwcf)
        glob.attributes["initial_value"] = ir.Attribute.parse(
            f'#stream.parameter.named<"{SCOPE}"::"{quoted}"> : {hwcf}')
        for load in mine:
            at = ir.InsertionPoint(load)
            with load.location:
                read = ir.Operation.create("util.global.load", results=[hwcf],
                                           attributes=dict(load.attributes), ip=at)
                with at:
                    empty = tensor.EmptyOp([f, c, kh, kw], fchw.element_type)
                    back = TransposeOp(result=[fchw], input=read.result, init=empty.result,
                                       permutation=list(FROM_HWCF))
                    fill_builtin_region(back.operation)
            load.result.replace_all_uses_with(back.results[0])
            load.erase()
        made = slot.derivation or Derivation.of(slot.key, slot.shape)
        out[index] = ParameterSlot(key, (kh, kw, c, f), slot.element,
                                   made.then("aten::permute.default", list(TO_HWCF)))
    return out


def _is_filter(use: Any) -> bool:
    return use.owner.name == CONVOLUTION and use.operand_number == FILTER_OPERAND

