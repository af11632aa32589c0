"""replace-empty-views: a view of a tensor with no elements is a new empty tensor.

torch-mlir (20261001) divides by the element count when it infers the ``-1`` of
``aten.view``/``aten.reshape`` of a tensor with no elements (``x.reshape(-1)`` of a 0x3 ``x``),
and the linalg-on-tensors stage dies with SIGFPE (found by lowerkit's fuzzer; see
test_fuzz_regressions.py). The result type already holds the static sizes torch.export
inferred, and the result has no elements, so the view is replaced by ``new_zeros`` of
those sizes (spelling out the sizes in the view is not enough: it still divides). Runs on the torch dialect, before the backend
contract; only static, empty inputs are touched.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "replace-empty-views"
_VIEWS = {"torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view"}


def _rewrite(op: Any) -> list[Any] | None:
    x = op.operands[0]
    source, result = t.vtensor(x), t.vtensor(op.results[0])
    if source is None or result is None or None in source[0] or None in result[0]:
        return None
    if 0 not in source[0]:
        return None
    # any tensor of the result's type will do: it has no elements
    none = t.make_none()
    new = t.make_op("torch.aten.new_zeros", [x, t.make_int_list(result[0]), none, none, none, none],
                    op.results[0].type)
    return [new]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _VIEWS, _rewrite)
