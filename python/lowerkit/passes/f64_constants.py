"""round-f64-constants: an f64 constant narrowed by ``arith.truncf`` is the narrow constant.

torch-mlir turns a Python float argument (``torch.arange(-1, 5, 1.3)``'s step, ``renorm``'s
``maxnorm``) into an ``f64`` constant and an ``arith.truncf`` to the tensor's float type.
lowerkit keeps f64 as f64 for iree-compile (``--iree-input-demote-f64-to-f32=false``, so that
float64 programs compute in float64), and IREE 3.13 then cannot lower that ``truncf`` where it
hoists it out of the dispatches: "failed to legalize operation 'util.initializer'" (or
'arith.truncf') for every configuration of the compile ladder (torch-mlir's e2e
``ArangeStartStepFloatModule`` and ``RenormModuleFloat32NegativeDim``). The constant is
rounded here as ``truncf`` rounds (to nearest, ties to even). Runs on linalg on tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NAME = "round-f64-constants"
_NARROW = {"f32": np.float32, "f16": np.float16}


def run(module_op: Any, pass_: Any = None) -> None:
    from torch_mlir import ir

    found = []

    def visit(op):
        if op.name == "arith.truncf" and str(op.operands[0].type) == "f64" \
                and str(op.results[0].type) in _NARROW \
                and getattr(op.operands[0].owner, "name", None) == "arith.constant":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    for op in found:
        value = ir.FloatAttr(op.operands[0].owner.attributes["value"]).value
        narrow = op.results[0].type
        rounded = float(_NARROW[str(narrow)](value))
        with ir.InsertionPoint(op), op.location:
            constant = ir.Operation.create(
                "arith.constant", results=[narrow],
                attributes={"value": ir.FloatAttr.get(narrow, rounded)}).results[0]
        op.results[0].replace_all_uses_with(constant)
        op.erase()
