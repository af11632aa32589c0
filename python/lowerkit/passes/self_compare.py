"""keep-nan-self-compare: ``x == x`` stays False where ``x`` is NaN.

torch-mlir (20261001) folds ``aten.eq.Tensor(x, x)`` to a constant ``True`` in its
canonicalizer, whatever ``x`` holds, which is wrong for floats: ``x == x`` is the usual NaN
test, and PyTorch's own decomposition of ``isfinite`` is ``(x == x) & (abs(x) != inf)``, so
``torch.isfinite(nan)`` came back True through ``torch.compile(backend="lowerkit")``
(torch-mlir's e2e ``IsInfiniteModule``) and ``x == x`` was all True through
`lowerkit.compile`. For a float ``x`` the op becomes ``logical_not(isnan(x))``, which is what
it computes and which nothing folds. Runs on the torch dialect, before the backend contract.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "keep-nan-self-compare"
_FLOATS = {"f16", "bf16", "f32", "f64"}


def _rewrite(op: Any) -> list[Any] | None:
    x, y = op.operands
    if x != y:
        return None
    read = t.vtensor(x)
    if read is None or read[1] not in _FLOATS:
        return None
    result = op.results[0].type
    return [t.make_op("torch.aten.logical_not", [t.make_op("torch.aten.isnan", [x], result)],
                      result)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, {"torch.aten.eq.Tensor"}, _rewrite)
