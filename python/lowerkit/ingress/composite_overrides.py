"""Cheaper composite-op overrides while lowerkit decomposes a graph, on the torch it was
measured against.

torch 2.13 overrides every CompositeImplicitAutograd op each time a graph is decomposed
(``ExportedProgram.run_decompositions``, and `lowerkit.backend`'s inference graphs): about
5,700 ``OperatorBase.py_impl`` registrations, each building its ``Callable[_P, _T]``
annotations, after a fresh walk of every op namespace for the list of those ops. For a small
program that was about half the decomposition's time (`benchmarks/composite_overrides.py`).

`cheap_overrides` keeps torch's semantics and removes that cost for its span:

- ``py_impl`` with a dispatch key registers as torch does (the same checks, the same table,
  the cache cleared) without building annotations; any other key goes to torch's own;
- the list of composite ops is reused while the dispatcher's composite registrations and the
  op namespaces are unchanged (a newly registered op makes a new list), by run_decompositions
  and by the building of a decomposition table alike, and making it materializes the
  dispatcher's composite ops once, not once per op namespace.

Both are put back when it ends. On another torch (`ACTIVE`) it changes nothing.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import torch

# The torch these shortcuts were written and measured against: its py_impl and its list of
# composite ops are what they reproduce.
MEASURED_ON = "2.13."
ACTIVE = torch.__version__.startswith(MEASURED_ON)

_LOCK = threading.RLock()
_DEPTH = 0
_SAVED: dict[str, Any] = {}
_CIA_LIST: list = [None, frozenset()]  # [its key (`_cia_key`), the list]: the latest only


def _quick_py_impl(original: Any) -> Any:
    from torch._C import DispatchKey

    def py_impl(self: Any, k: Any) -> Any:
        if not isinstance(k, DispatchKey) or k == DispatchKey.Python:
            return original(self, k)

        def inner(fn: Any) -> Any:
            if k in self.py_kernels:
                raise RuntimeError(
                    f"Trying to override a python impl for {k} on operator {self.name()}")
            self.py_kernels[k] = fn
            self._dispatch_cache.clear()
            return fn

        return inner

    return py_impl


def _cia_key() -> tuple:
    """What the composite-op list is computed from: the dispatcher's composite registrations
    and each op namespace's ops."""
    regs = torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")
    spaces = tuple((name, len(getattr(getattr(torch.ops, name, None), "_dir", ())))
                   for name in torch.ops._dir)
    return tuple(regs), spaces  # compared whole on a hit: no two lists share a key


@contextlib.contextmanager
def _materialized_once() -> Iterator[None]:
    """torch 2.13 materializes every composite op of the dispatcher into ``torch.ops`` once
    per op namespace while it lists them (16 times while building torch-mlir's table in a fresh
    process, most of its cost); nothing is registered in between, so the first time does it
    all."""
    import torch._export.utils as export_utils

    real = export_utils._materialize_cpp_cia_ops
    done: list[bool] = []

    def once() -> None:
        if not done:
            real()
            done.append(True)

    export_utils._materialize_cpp_cia_ops = once
    try:
        yield
    finally:
        export_utils._materialize_cpp_cia_ops = real


def _reused_cia_list(original: Any) -> Any:
    def collect() -> set:
        if _CIA_LIST[0] != _cia_key():
            with _materialized_once():
                found = frozenset(original())
            # keyed by the state it was read in: listing materializes ops into the namespaces
            # the key counts, so a key taken before would never match the next call's
            _CIA_LIST[:] = [_cia_key(), found]
        return set(_CIA_LIST[1])  # callers remove from it

    return collect


@contextlib.contextmanager
def cheap_overrides() -> Iterator[None]:
    """The shortcuts above for the span of the ``with`` (nested spans share one)."""
    global _DEPTH
    if not ACTIVE:
        yield
        return
    import torch._ops as ops
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    with _LOCK:
        if _DEPTH == 0:
            _SAVED["py_impl"] = ops.OperatorBase.py_impl
            _SAVED["collect"] = exported_program._collect_all_valid_cia_ops
            ops.OperatorBase.py_impl = _quick_py_impl(_SAVED["py_impl"])
            # run_decompositions lists them, and so does building a decomposition table
            # (torch-mlir's, the first time: `torch.export.decomp_utils`)
            reused = _reused_cia_list(_SAVED["collect"])
            exported_program._collect_all_valid_cia_ops = reused
            decomp_utils._collect_all_valid_cia_ops = reused
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                ops.OperatorBase.py_impl = _SAVED.pop("py_impl")
                exported_program._collect_all_valid_cia_ops = _SAVED["collect"]
                decomp_utils._collect_all_valid_cia_ops = _SAVED.pop("collect")
