"""fold-empty-contractions: a matrix product over a zero-length dimension is its init value.

``iree-compile`` 3.13 dies with SIGFPE on a ``linalg.matmul`` whose contraction dimension
has size 0 (e.g. ``(3x0) @ (0x4)``). The product of nothing is the zero-filled init tensor
torch-mlir already passes as the op's output operand, so the op is replaced by it. Runs on
linalg on tensors.
"""

from __future__ import annotations

import re
from typing import Any

NAME = "fold-empty-contractions"
# op -> (which input, which dim of it) holds the contraction size
_CONTRACTION_DIM = {
    "linalg.matmul": (0, -1), "linalg.batch_matmul": (0, -1), "linalg.matvec": (0, -1),
    "linalg.vecmat": (0, 0), "linalg.dot": (0, 0), "linalg.batch_matvec": (0, -1),
    "linalg.matmul_transpose_a": (0, 0), "linalg.matmul_transpose_b": (0, -1),
    "linalg.batch_matmul_transpose_b": (0, -1), "linalg.batch_reduce_matmul": (0, -1),
}
_TENSOR = re.compile(r"^tensor<((?:[0-9?]+x)*)[\w]+>$")


def _dims(value: Any) -> list[str] | None:
    m = _TENSOR.match(str(value.type))
    return m.group(1).rstrip("x").split("x") if m and m.group(1) else None


def run(module_op: Any, pass_: Any = None) -> None:
    from torch_mlir import ir

    found = []

    def visit(op):
        where = _CONTRACTION_DIM.get(op.name)
        if where is not None:
            dims = _dims(op.operands[where[0]])
            if dims and dims[where[1]] == "0":
                found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    for op in found:
        init = op.operands[len(op.operands) - 1]
        op.results[0].replace_all_uses_with(init)
        op.erase()
