"""replace-empty-results: an ATen op whose results have no elements is replaced by new empty
tensors.

torch-mlir (20261001) and IREE 3.13 fail on several ops of tensors with no elements, where the
result is fully known from its type (found by lowerkit's fuzzer; see test_fuzz_regressions.py):

- torch-mlir divides by the element count when it infers the ``-1`` of
  ``aten.view``/``aten.reshape`` (``x.reshape(-1)`` of a 0x3 ``x``), and the linalg-on-tensors
  stage dies with SIGFPE (spelling out the sizes in the view is not enough: it still divides);
- ``adaptive_max_pool2d`` of a zero-size batch fails with "unexpected loop dimension for
  convolution op";
- an empty slice starting at the end of its dim (``b[:, 2:]`` of a dim of one, after another
  slice) makes iree-compile fail with "offset 1 is out-of-bounds: 1 >= 1".

The result types already hold the static sizes torch.export inferred, and a result with no
elements has no values to compute, so each is replaced by ``new_zeros`` of its sizes and dtype
(a literal of no elements where the op has no tensor operand, as ``empty_strided``).
In the value-semantics torch dialect an ``aten`` op whose operands and results are value
tensors has no other effect, so any such op qualifies (in-place ``*_`` ops and custom ops do
not). Runs on the torch dialect, before the backend contract.
"""

from __future__ import annotations

from typing import Any

from . import _torch_ir as t

NAME = "replace-empty-results"
# torch's ScalarType codes, for new_zeros' dtype argument
_DTYPE_CODES = {"ui8": 0, "si8": 1, "si16": 2, "si32": 3, "si64": 4, "f16": 5, "f32": 6,
                "f64": 7, "i1": 11, "bf16": 15}


def _candidate(name: str) -> bool:
    return name.startswith("torch.aten.") and not name.endswith("_")


def _rewrite(op: Any) -> list[Any] | None:
    if not len(op.results) or not len(op.operands):
        return None
    if any(str(v.type).startswith("!torch.tensor") for v in (*op.operands, *op.results)):
        return None  # not value semantics: the op may write through a reference
    results = [t.vtensor(r) for r in op.results]
    if any(r is None or None in r[0] or 0 not in r[0] or r[1] not in _DTYPE_CODES
           for r in results):
        return None
    x = op.operands[0]
    source = t.vtensor(x)
    if source is None and all(r[1][0] in "fs" for r in results):
        # no tensor to take new_zeros' device from (``empty_strided``: an allocation, not
        # pure, which stayed beside the literals its readers became and which torch-mlir
        # could not legalize: campaign seed 2119, program 80, a log_softmax over 0x0)
        return [t.make_literal(shape, dtype, []) for shape, dtype in results]
    if source is None or None in source[0]:
        return None
    none = t.make_none()
    return [t.make_op("torch.aten.new_zeros",
                      [x, t.make_int_list(shape), t.make_int(_DTYPE_CODES[dtype]), none, none, none],
                      old.type)
            for (shape, dtype), old in zip(results, op.results)]


def run(module_op: Any, pass_: Any = None) -> None:
    t.rewrite_each(module_op, _candidate, _rewrite)
