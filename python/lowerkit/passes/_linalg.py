"""Which loops of a ``linalg.generic`` reduce: what most of lowerkit's fixes key on.

A fused reduction (`fence-reductions`), a reduction's narrow result (`widen-narrow-storage`,
`narrow-index-math`), a batched contraction (`fence-batched-matmul-operands`) and a cast a
reduction reads (`fold-wide-casts-into-reductions`) are all told apart by the op's
``iterator_types``. Works in either MLIR build.
"""

from __future__ import annotations

import re
from typing import Any

# named ops that reduce, each over its innermost loops
NAMED_REDUCTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.vecmat",
                    "linalg.batch_matvec", "linalg.batch_vecmat", "linalg.dot", "linalg.conv_",
                    "linalg.depthwise_conv_", "linalg.pooling_", "linalg.contract")


def reduction_loops(op: Any) -> list[bool]:
    """For each loop of a ``linalg.generic``, whether it reduces; empty for any other op."""
    if op.name != "linalg.generic" or "iterator_types" not in op.attributes:
        return []
    # read from the array's text: no Python attribute object per loop
    return [kind == "reduction" for kind in _ITERATOR.findall(str(op.attributes["iterator_types"]))]


_ITERATOR = re.compile(r"#linalg\.iterator_type<(\w+)>")


def reduces(op: Any) -> bool:
    """Whether ``op`` is a ``linalg.generic`` with a reduction loop."""
    return any(reduction_loops(op))
