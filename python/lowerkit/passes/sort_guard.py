"""refuse-long-sorts: on Vulkan, a sort along more than 256 elements is refused, not run.

IREE 3.13's SPIR-V code for ``iree_linalg_ext.sort`` gives unsorted rows along a dimension
longer than about 256 (lavapipe: every row of ``torch.sort`` of a 5x300 tensor came back
unsorted, values and indices, with no error; 64 to 256 elements sorted right). lowerkit's
decompositions sort short static dims data-parallel, without ``iree_linalg_ext.sort``; what
still reaches IREE's sort along a longer (or dynamic) dimension on Vulkan would be a silent
wrong answer, so it is refused with the op's source line instead. Runs in IREE's MLIR build,
on linalg on tensors, for Vulkan targets.
"""

from __future__ import annotations

import re
from typing import Any

from ..ir import Build

NAME = "refuse-long-sorts"
BUILD = "iree"
MAX_SORT = 256
_TENSOR = re.compile(r"^tensor<((?:[0-9?]+x)*)[\w]+>$")


def _length(op: Any, ir: Any) -> int | None:
    """The sorted dimension's size (None when dynamic)."""
    dim = ir.IntegerAttr(op.attributes["dimension"]).value
    m = _TENSOR.match(str(op.results[0].type))
    dims = m.group(1).rstrip("x").split("x") if m and m.group(1) else []
    size = dims[dim] if dim < len(dims) else "?"
    return None if size == "?" else int(size)


def refuse(module_op: Any, pass_: Any = None) -> None:
    ir = Build.of_object(module_op).ir
    sorts = []

    def visit(op):
        if op.name in ("tm_tensor.sort", "iree_linalg_ext.sort"):
            sorts.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    failed = False
    for op in sorts:
        length = _length(op, ir)
        if length is None or length > MAX_SORT:
            along = "a dynamic dimension" if length is None else f"{length} elements"
            op.location.emit_error(
                f"'{op.name}' along {along} is refused on Vulkan: IREE 3.13's "
                f"SPIR-V sort leaves rows longer than {MAX_SORT} unsorted; sort on the CPU "
                f"target, or along at most {MAX_SORT} static elements")
            failed = True
    if failed:
        if pass_ is None:
            raise RuntimeError("refuse-long-sorts: a sort is refused on Vulkan")
        pass_.signal_pass_failure()


def run(module_op: Any, pass_: Any = None) -> None:
    refuse(module_op, pass_)
