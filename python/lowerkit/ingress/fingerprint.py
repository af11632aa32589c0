"""A program's fingerprint without tracing it: what a warm process's compile cache answers from.

A cache hit used to need the whole torch import (``torch.export`` and decompositions, seconds
for ResNet-50) because the key hashed the imported IR. Within one process the IR is a function
of what the fingerprint reads, the way Dynamo's guards decide a graph still holds:

- every submodule: its class, the bytecode of the class's functions (and of the functions and
  the plain values at the top of the file that defines it: helpers, flags), its attributes
  (strides, eps, ``training``, ...), and its parameters' and buffers' names, shapes and dtypes
  (not their values: they are IREE parameters, read at load);
- the call: the structure of the arguments, each tensor's shape, dtype, strides and
  ``requires_grad``, each Python scalar's value, and ``dynamic_shapes``;
- torch's grad mode, default dtype and deterministic mode, ``LOWERKIT_DECOMPOSITIONS`` and
  ``LOWERKIT_DERIVED_WEIGHTS``.

When anything is beyond what it can read (a hook, a tensor or an unknown object held as an
attribute, a function rather than a module, a tensor off the CPU) it gives None, and the
program is traced as before. It never stands in for the program key across processes: the
mapping from fingerprint to program key lives in the process that traced it.
"""

from __future__ import annotations

import enum
import hashlib
import os
import sys
import types
from typing import Any

import torch
import torch.utils._pytree as pytree

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_SKIPPED_ATTRIBUTES = {"_parameters", "_buffers", "_modules"}


class _Unreadable(Exception):
    """Something the fingerprint cannot vouch for: trace instead."""


def _code(code: types.CodeType, out: list) -> None:
    out += [code.co_name, code.co_code, code.co_names, code.co_varnames, code.co_freevars]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code(const, out)
        else:
            out.append(repr(const))


def _function(fn: Any, out: list) -> None:
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:  # a builtin: named by where it lives
        out.append(f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}")
        return
    _code(code, out)
    out.append(repr(getattr(fn, "__defaults__", None)))
    for cell in getattr(fn, "__closure__", None) or ():
        out.append(_value(cell.cell_contents, strict=False))


def _value(v: Any, strict: bool = True, depth: int = 0) -> str:
    """A stable text for an attribute's value; `_Unreadable` when ``strict`` and unknown. A
    plain object (a model's config) is read through its attributes, a few levels deep."""
    if isinstance(v, _PLAIN):
        return repr(v)
    if isinstance(v, (torch.dtype, torch.device, torch.Size, torch.memory_format, enum.Enum)):
        return repr(v)
    if isinstance(v, (tuple, list, set, frozenset)):
        items = sorted(map(repr, v)) if isinstance(v, (set, frozenset)) else v
        return f"{type(v).__name__}[{','.join(_value(x, strict, depth) for x in items)}]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{_value(k, strict, depth)}:{_value(x, strict, depth)}"
                              for k, x in v.items()) + "}"
    if isinstance(v, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)) \
            or type(v).__name__ in ("OpOverload", "OpOverloadPacket"):
        out: list = []
        _function(v, out)
        return hashlib.sha256(repr(out).encode()).hexdigest()
    if isinstance(v, type):
        return f"class {v.__module__}.{v.__qualname__}"
    if (depth < 3 and hasattr(v, "__dict__") and not isinstance(v, (torch.Tensor, torch.nn.Module))
            and not callable(v)):
        fields = ",".join(f"{k}={_value(x, strict, depth + 1)}"
                          for k, x in sorted(vars(v).items(), key=lambda kv: kv[0]))
        return f"{type(v).__module__}.{type(v).__qualname__}({fields})"
    if strict:
        raise _Unreadable(type(v).__name__)
    return f"<{type(v).__module__}.{type(v).__qualname__}>"


def _source_file_state(module_name: str, seen: set, out: list) -> None:
    """The functions (their bytecode) and plain values at the top of a module's file."""
    if module_name in seen or module_name.startswith(("torch.", "builtins")):
        return
    seen.add(module_name)
    namespace = getattr(sys.modules.get(module_name), "__dict__", {})
    for name, value in sorted(namespace.items(), key=lambda kv: kv[0]):
        if name.startswith("__"):
            continue
        if isinstance(value, types.FunctionType):
            out.append(name)
            _function(value, out)
        elif isinstance(value, _PLAIN):
            out.append(f"{name}={value!r}")


def _class(cls: type, seen: set, out: list) -> None:
    for klass in cls.__mro__:
        if klass in seen or klass.__module__.startswith("torch.") or klass is object:
            continue  # torch's own classes are fixed by torch's version, in the key
        seen.add(klass)
        out.append(f"class {klass.__module__}.{klass.__qualname__}")
        for name, member in sorted(vars(klass).items(), key=lambda kv: kv[0]):
            if isinstance(member, property):
                member = member.fget
            if isinstance(member, (types.FunctionType, staticmethod, classmethod)):
                out.append(name)
                _function(getattr(member, "__func__", member), out)
            elif isinstance(member, _PLAIN):
                out.append(f"{name}={member!r}")
        _source_file_state(klass.__module__, seen, out)


def _hooks(module: torch.nn.Module) -> bool:
    return any(getattr(module, name, None) for name in (
        "_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"))


def _global_hooks() -> bool:
    from torch.nn.modules import module as nn_module

    return any(getattr(nn_module, name, None) for name in (
        "_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
        "_global_backward_pre_hooks"))


def _tensor(t: torch.Tensor) -> str:
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.device.type != "cpu" \
            or t.layout != torch.strided:
        raise _Unreadable(f"tensor {type(t).__name__} on {t.device}")
    return f"T{tuple(t.shape)}{t.dtype}{t.stride()}{t.requires_grad}"


def fingerprint(fn: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
                options: dict) -> str | None:
    """The hex digest of everything the imported program depends on (see the module's doc),
    with ``options`` (lowerkit's own: target, pipeline, flags, ...); None when the program
    holds something it cannot read."""
    if not isinstance(fn, torch.nn.Module) or _global_hooks():
        return None
    out: list = [repr(sorted(options.items())), torch.is_grad_enabled(),
                 repr(torch.get_default_dtype()), torch.are_deterministic_algorithms_enabled(),
                 # lowerkit's own decompositions at import, and derived weights, on or off
                 os.environ.get("LOWERKIT_DECOMPOSITIONS", "1"),
                 os.environ.get("LOWERKIT_DERIVED_WEIGHTS", "1")]
    seen: set = set()
    try:
        for name, module in fn.named_modules(remove_duplicate=False):
            if _hooks(module):
                return None
            out.append(f"module {name}")
            _class(type(module), seen, out)
            for attr, value in vars(module).items():
                if attr in _SKIPPED_ATTRIBUTES or (attr.startswith("_") and attr.endswith("hooks")):
                    continue
                if isinstance(value, torch.Tensor):
                    return None  # a tensor that is neither parameter nor buffer: a constant
                out.append(f"{attr}={_value(value)}")
            for kind, table in (("p", module._parameters), ("b", module._buffers)):
                for key, t in table.items():
                    out.append(f"{kind} {key} " + ("None" if t is None else _tensor(t)))
        leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs or {})))
        out.append(str(spec))
        for leaf in leaves:
            out.append(_tensor(leaf) if isinstance(leaf, torch.Tensor) else _value(leaf))
        out.append(repr(dynamic_shapes))
    except (_Unreadable, RecursionError):
        return None
    return hashlib.sha256(repr(out).encode()).hexdigest()
