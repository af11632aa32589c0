"""replace-empty-results: an op whose results have no elements is replaced by new empty tensors.

torch-mlir (20261001) fails on several ops of tensors with no elements, where the result is
fully known from its type (found by lowerkit's fuzzer; see test_fuzz_regressions.py):

- it divides by the element count when it infers the ``-1`` of ``aten.view``/``aten.reshape``
  (``x.reshape(-1)`` of a 0x3 ``x``), and the linalg-on-tensors stage dies with SIGFPE
  (spelling out the sizes in the view is not enough: it still divides);
- ``adaptive_max_pool2d`` of a zero-size batch fails with "unexpected loop dimension for
  convolution op".

The result types already hold the static sizes torch.export inferred, and a result with no
elements has no values to compute, so each is replaced by ``new_zeros`` of its sizes and dtype.
Only the listed pure ops with static, empty results are touched (a view also needs an empty
input). Runs on the torch dialect, before the backend contract.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "replace-empty-results"
_VIEWS = {"torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view"}
_POOLS = {f"torch.aten.{kind}_pool{n}d{suffix}"
          for kind in ("max", "avg", "adaptive_max", "adaptive_avg") for n in (1, 2, 3)
          for suffix in ("", "_with_indices")}
# torch's ScalarType codes, for new_zeros' dtype argument
_DTYPE_CODES = {"ui8": 0, "si8": 1, "si16": 2, "si32": 3, "si64": 4, "f16": 5, "f32": 6,
                "f64": 7, "i1": 11, "bf16": 15}


def _rewrite(op: Any) -> list[Any] | None:
    x = op.operands[0]
    source = t.vtensor(x)
    if source is None or None in source[0]:
        return None
    if op.name in _VIEWS and 0 not in source[0]:
        return None
    results = [t.vtensor(r) for r in op.results]
    if any(r is None or None in r[0] or 0 not in r[0] or r[1] not in _DTYPE_CODES
           for r in results):
        return None
    none = t.make_none()
    return [t.make_op("torch.aten.new_zeros",
                      [x, t.make_int_list(shape), t.make_int(_DTYPE_CODES[dtype]), none, none, none],
                      old.type)
            for (shape, dtype), old in zip(results, op.results)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _VIEWS | _POOLS, _rewrite)
