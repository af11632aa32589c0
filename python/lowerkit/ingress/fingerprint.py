"""A program's fingerprint without tracing it: what a warm process's compile cache answers from.

A cache hit used to need the whole torch import (``torch.export`` and decompositions, seconds
for ResNet-50) because the key hashed the imported IR. Within one process the IR is a function
of what the fingerprint reads, the way Dynamo's guards decide a graph still holds:

- every submodule: its class, the bytecode of the class's functions, its attributes
  (strides, eps, ``training``, ...), and its parameters' and buffers' names, shapes and dtypes
  (not their values: they are IREE parameters, read at load);
- what ``forward`` reads (`_Reader`), as Dynamo guards only on what code reads (issue 73): the
  globals it and the methods it names load, transitively through the functions and classes
  those are, closures' cells, class attributes and ``module.attr`` reads; not the rest of the
  file (a script's timer, IPython's ``_i``). Where the code reads globals it does not name
  (``globals()``, ``eval``, ``sys._getframe``), every function and plain value at the top of
  each file it met, as before, and the fingerprint's ``note`` says so;
- the call: the structure of the arguments, each tensor's shape, dtype, strides and
  ``requires_grad``, each Python scalar's value, and ``dynamic_shapes``;
- torch's grad mode, default dtype and deterministic mode, ``LOWERKIT_DECOMPOSITIONS`` and
  ``LOWERKIT_DERIVED_WEIGHTS``.

When anything is beyond what it can read (a hook, a tensor or an unknown object held as an
attribute, a tensor the code reads as a global, a function rather than a module, a tensor off
the CPU) it gives None, and the program is traced as before. An object the code reads that it
cannot read through stands by its identity (Dynamo's ``ID_MATCH``). A method reached only by a
name computed at run time (``getattr(self, f"act_{i}")``) enters by its code, not its reads.

Across processes (`Fingerprint.portable`): the compile cache keeps a fingerprint's program key
on disk only when nothing in it stands by identity, no code reads other frames, and no
operator of a library outside torch is named, since those hold only within one process. The
Python and NumPy versions are in the digest, and the recipe it is given carries torch's,
torch-mlir's, IREE's and lowerkit's own sources'.
"""

from __future__ import annotations

import builtins
import contextlib
import dis
import enum
import functools
import hashlib
import importlib.util
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


# Builtins through which code reads globals of its file it does not name: all its file counts.
_DYNAMIC = {"globals", "eval", "exec", "vars", "locals", "__import__"}
# Module attributes that reach other frames' globals: every file met counts.
_FRAME_READERS = {("sys", "_getframe"), ("inspect", "currentframe"), ("inspect", "stack"),
                  ("inspect", "getouterframes")}
# Packages fixed by their version (torch's is in the key, the rest hold no model state): their
# functions, classes and module attributes are named, not read.
_FIXED = {"torch", "functorch", "numpy", "typing", "builtins", "typing_extensions"}


def _fixed(module_name: str | None) -> bool:
    top = (module_name or "").partition(".")[0]
    return top in _FIXED or top in sys.stdlib_module_names


def _code(code: types.CodeType, out: list) -> None:
    out += [code.co_name, code.co_code, code.co_names, code.co_varnames, code.co_freevars]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code(const, out)
        elif isinstance(const, frozenset):  # ``x in {"a", "b"}``: its order is the hash seed's
            out.append(f"frozenset{sorted(map(repr, const))}")
        else:
            out.append(repr(const))


@functools.lru_cache(maxsize=8192)
def _reads(code: types.CodeType) -> tuple:
    """What ``code`` and the code nested in it read: the globals it loads, each with the
    attributes read straight off it (``mod.sub.attr``); the modules it imports (level, name,
    names imported from it); and every name it uses (attributes, methods, constant strings:
    ``getattr(self, "helper")``), to find the methods it may call."""
    reads: list = []
    imports: list = []
    names: dict = {}
    pending = [code]
    while pending:
        c = pending.pop()
        ins = list(dis.get_instructions(c))
        for i, op in enumerate(ins):
            if op.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                chain = []
                for nxt in ins[i + 1:]:
                    if nxt.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                        break
                    chain.append(nxt.argval)
                reads.append((op.argval, tuple(chain)))
            elif op.opname == "IMPORT_NAME" and i >= 2:
                level, fromlist = ins[i - 2].argval, ins[i - 1].argval
                imports.append((level if isinstance(level, int) else 0, op.argval,
                                tuple(fromlist or ())))
        names.update(dict.fromkeys(c.co_names))
        names.update(dict.fromkeys(
            k for k in c.co_consts if isinstance(k, str) and k.isidentifier()))
        pending += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return tuple(reads), tuple(imports), tuple(names)


_ABSENT = object()


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


# Special methods a forward does not call on what is already built (the model's modules), and
# of these, the ones it calls on a class it reads when it builds one.
_NOT_CALLED = {"__init__", "__new__", "__post_init__", "__init_subclass__", "__set_name__",
               "__class_getitem__", "__del__", "__getstate__", "__setstate__", "__reduce__",
               "__reduce_ex__", "__copy__", "__deepcopy__", "__repr__", "__str__", "__dir__",
               "__format__", "__sizeof__"}
_BUILDING = {"__init__", "__new__", "__post_init__"}


def _custom_operator(fn: Any) -> bool:
    """An operator registered outside torch (``torch.ops.mylib.op``): what it does is not in
    the fingerprint."""
    if type(fn).__name__ not in ("OpOverload", "OpOverloadPacket"):
        return False
    name = getattr(fn, "_qualified_op_name", None) or str(fn)
    return name.partition("::")[0].partition(".")[0] not in ("aten", "prims")


class _Reader:
    """Walks what a model's code reads, from ``forward`` (and the special methods Python calls
    by itself): the globals each function loads (and the attributes it reads off modules), the
    functions and classes those name, the methods its code names, closures' cells and class
    attributes; as Dynamo guards only on what the code reads, a global nothing reads (IPython's
    ``_i``, a script's timer) does not enter the fingerprint. Every method's own code enters
    it, reached or not."""

    def __init__(self, out: list):
        self.out = out
        self.seen: set = set()
        self.modules: set = set()  # the modules whose globals the walked code reads
        self.dynamic: list = []    # why every file met is read: what the walk cannot see
        self.whole: dict = {}      # modules read whole (globals(), imported in a function, ...)
        self.reached: set = {"forward"}
        self.waiting: dict = {}    # a method's name -> its functions, walked once it is reached
        self.local: list = []      # what holds in this process only (an identity, ...)

    def function(self, fn: Any) -> None:
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        module = getattr(fn, "__module__", None)
        if code is None or _fixed(module) or not isinstance(getattr(fn, "__globals__", None), dict):
            # a builtin or a library's function: named by where it lives, with the user's
            # function it may wrap (a decorator of torch's without functools.wraps)
            self.out.append(f"{module or '?'}.{getattr(fn, '__qualname__', repr(fn))}")
            if code is None and not _fixed(module) or _custom_operator(fn):
                # a compiled library's function or a custom operator: named, not read; what
                # it does may change with a package another process has at another version
                self.local.append(f"names {module or '?'}.{getattr(fn, '__qualname__', '?')}")
            if isinstance(code, types.CodeType):  # torch's Conv2d.forward calls _conv_forward
                self.reach(_reads(code)[2])
            inner = [getattr(fn, "__wrapped__", None)]
            for cell in getattr(fn, "__closure__", None) or ():
                with contextlib.suppress(ValueError):
                    inner.append(cell.cell_contents)
            for f in inner:
                if isinstance(f, (types.FunctionType, type)) and not _fixed(f.__module__):
                    self.out.append(self.value(f, strict=False))
            return
        if fn in self.seen:  # held, so that its id is not another's
            self.out.append(f"fn {fn.__qualname__}")
            return
        self.seen.add(fn)
        _code(code, self.out)
        self.out.append(self.value(fn.__defaults__, strict=False))
        self.out.append(self.value(fn.__kwdefaults__, strict=False))
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell: a name assigned later in the outer function
                contents = _ABSENT
            self.out.append("cell " + self.value(contents, strict=False))
        self.globals(code, fn.__globals__, fn.__qualname__)

    def globals(self, code: types.CodeType, namespace: dict, where: str) -> None:
        self.modules.add(namespace.get("__name__"))
        reads, imports, names = _reads(code)
        for name, chain in reads:
            value = namespace.get(name, _ABSENT)
            if value is _ABSENT:
                value = getattr(builtins, name, _ABSENT)
                if name in _DYNAMIC and value is not _ABSENT:
                    self.whole.setdefault(namespace.get("__name__"), f"{where} calls {name}()")
            self.out.append(f"global {name}")
            if (value is torch and chain[:1] == ("ops",) and len(chain) > 1
                    and chain[1] not in ("aten", "prims")):  # torch.ops.mylib.op: not torch's
                self.local.append(f"{where} calls torch.ops.{chain[1]}")
            for attr in chain:  # mod.sub.attr: read the attribute, not the whole module
                if not isinstance(value, types.ModuleType):
                    break
                if (value.__name__.partition(".")[0], attr) in _FRAME_READERS:
                    self.dynamic.append(f"{where} reads {value.__name__}.{attr}")
                elif (value.__name__, attr) == ("sys", "modules"):  # sys.modules[__name__]
                    self.whole.setdefault(namespace.get("__name__"), f"{where} reads sys.modules")
                if _fixed(value.__name__):
                    break
                value = getattr(value, attr, _ABSENT)
                self.out.append(f".{attr}")
            else:
                if isinstance(value, types.ModuleType) and not _fixed(value.__name__):
                    # handed on whole (getattr(mod, name), f(mod)): all its file is read
                    self.whole.setdefault(value.__name__, f"{where} uses it whole")
            self.out.append(self.value(value, strict=False))
        for level, name, imported in imports:
            try:
                name = importlib.util.resolve_name("." * level + name,
                                                   namespace.get("__package__") or "")
            except (ImportError, ValueError):
                pass
            if _fixed(name):
                continue
            module = sys.modules.get(name)
            self.out.append(f"import {name} {module is not None}")
            if module is not None and imported and "*" not in imported:
                for attr in imported:  # from x import f: f, as a global would be
                    value = getattr(module, attr, _ABSENT)
                    if isinstance(value, types.ModuleType) and not _fixed(value.__name__):
                        self.whole.setdefault(value.__name__, f"{where} imports it")
                    self.out.append(f"{attr}={self.value(value, strict=False)}")
            elif module is not None:  # one not there is in the fingerprint as absent
                self.whole.setdefault(name, f"{where} imports it")
        self.reach(names)

    def reach(self, names) -> None:
        """Walk the methods of the model's classes that code naming ``names`` may call."""
        for name in names:
            if name not in self.reached:
                self.reached.add(name)
                for fn in self.waiting.pop(name, ()):
                    self.function(fn)

    def klass(self, cls: type, built: bool = True) -> None:
        """``built``: a class of the model's modules (built before the program runs); else a
        class the code reads, which it may build: its constructor is walked too."""
        called = (lambda name: _dunder(name) and name not in _NOT_CALLED) if built else (
            lambda name: _dunder(name) and (name not in _NOT_CALLED or name in _BUILDING))
        for klass in cls.__mro__:
            if klass in self.seen or klass is object:
                continue
            self.seen.add(klass)
            if _fixed(klass.__module__):  # torch's own: fixed by torch's version, in the key;
                self.library_class(klass, called)  # only the names its methods call count
                continue
            self.out.append(f"class {klass.__module__}.{klass.__qualname__}")
            for name, member in sorted(vars(klass).items(), key=lambda kv: kv[0]):
                if isinstance(member, property):
                    functions = [f for f in (member.fget, member.fset) if f is not None]
                elif isinstance(member, (types.FunctionType, staticmethod, classmethod)):
                    functions = [getattr(member, "__func__", member)]
                elif isinstance(member, _PLAIN):
                    self.out.append(f"{name}={member!r}")
                    continue
                elif not _dunder(name):
                    self.out.append(f"{name}={self.value(member, strict=False)}")
                    continue
                else:
                    continue
                self.out.append(name)
                for fn in functions:
                    if not isinstance(getattr(fn, "__code__", None), types.CodeType):
                        self.out.append(self.value(fn, strict=False))
                        continue
                    _code(fn.__code__, self.out)  # its code, reached or not
                    if called(name) or name in self.reached:
                        self.function(fn)
                    else:
                        self.waiting.setdefault(name, []).append(fn)

    def library_class(self, klass: type, called) -> None:
        """A torch class the model's classes derive from: the methods of theirs that its
        methods call (``_conv_forward`` from ``Conv2d.forward``) are reached."""
        for name, member in vars(klass).items():
            fn = getattr(member, "__func__", member)
            if isinstance(fn, types.FunctionType):
                if called(name) or name in self.reached:
                    self.reach(_reads(fn.__code__)[2])
                else:
                    self.waiting.setdefault(name, []).append(fn)

    def value(self, v: Any, strict: bool = True, depth: int = 0) -> str:
        """A stable text for a value; `_Unreadable` when ``strict`` and unknown, else an object
        it cannot read stands by its identity (the mapping lives in this process), as a
        Dynamo ``ID_MATCH`` guard. A plain object (a model's config) is read through its
        attributes, a few levels deep; a function or class through what its code reads."""
        if isinstance(v, _PLAIN):
            return repr(v)
        if v is _ABSENT:
            return "<absent>"
        if isinstance(v, (torch.dtype, torch.device, torch.Size, torch.memory_format, enum.Enum)):
            return repr(v)
        if isinstance(v, (tuple, list, set, frozenset)):
            items = sorted(map(repr, v)) if isinstance(v, (set, frozenset)) else v
            return f"{type(v).__name__}[{','.join(self.value(x, strict, depth) for x in items)}]"
        if isinstance(v, dict):
            return "{" + ",".join(f"{self.value(k, strict, depth)}:{self.value(x, strict, depth)}"
                                  for k, x in v.items()) + "}"
        if isinstance(v, torch.Tensor) or (type(v).__module__ == "numpy"
                                           and getattr(v, "shape", ()) != ()):
            raise _Unreadable(type(v).__name__)  # a constant the program holds
        if type(v).__module__ == "numpy" and hasattr(v, "dtype"):
            return f"{v.dtype}:{v!r}"  # a NumPy scalar
        if isinstance(v, torch.nn.Module) and not strict:
            return self.loose_module(v)
        if isinstance(v, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)) \
                or type(v).__name__ in ("OpOverload", "OpOverloadPacket"):
            out: list = []
            self.out, saved = out, self.out
            try:
                self.function(v)
            finally:
                self.out = saved
            if isinstance(v, types.MethodType):
                out.append(self.value(v.__self__, strict, depth))
            return hashlib.sha256(repr(out).encode()).hexdigest()
        if isinstance(v, functools.partial):
            parts = (self.value(p, strict, depth) for p in (v.func, v.args, v.keywords))
            return f"partial({','.join(parts)})"
        if isinstance(v, type):
            if not _fixed(v.__module__):
                self.klass(v, built=False)
            return f"class {v.__module__}.{v.__qualname__}"
        if isinstance(v, types.ModuleType):
            return f"module {v.__name__}"
        if hasattr(v, "__wrapped__") and callable(v):  # functools.lru_cache and the like
            return f"{type(v).__qualname__}({self.value(v.__wrapped__, strict, depth)})"
        if isinstance(v, (functools.cached_property, functools.partialmethod)):
            inner = v.func if isinstance(v, functools.cached_property) else functools.partial(
                v.func, *v.args, **v.keywords)
            return f"{type(v).__qualname__}({self.value(inner, strict, depth)})"
        if (depth < 3 and hasattr(v, "__dict__") and not isinstance(v, torch.nn.Module)
                and not callable(v) and (strict or not _fixed(type(v).__module__))):
            try:
                if not _fixed(type(v).__module__):  # its methods and class attributes
                    self.klass(type(v))
                fields = ",".join(f"{k}={self.value(x, strict, depth + 1)}"
                                  for k, x in sorted(vars(v).items(), key=lambda kv: kv[0]))
                return f"{type(v).__module__}.{type(v).__qualname__}({fields})"
            except _Unreadable:
                if strict:
                    raise
        if strict:
            raise _Unreadable(type(v).__name__)
        self.local.append(f"reads a {type(v).__qualname__} by its identity")
        return f"<{type(v).__module__}.{type(v).__qualname__} #{id(v)}>"

    def loose_module(self, module: torch.nn.Module) -> str:
        """A module outside the model's tree that its code reads (transformers' ``gelu``): read
        as the tree's are, when it holds no tensor (they would be the program's constants)."""
        if next(module.parameters(), None) is not None or next(module.buffers(), None) is not None:
            raise _Unreadable(f"module {type(module).__name__} with tensors")
        parts = []
        for name, m in module.named_modules():
            if _hooks(m):
                raise _Unreadable("hooks")
            self.klass(type(m))
            parts.append(f"{name}:{type(m).__module__}.{type(m).__qualname__}(" + ",".join(
                f"{a}={self.value(x)}" for a, x in vars(m).items()
                if a not in _SKIPPED_ATTRIBUTES and not (a.startswith("_") and a.endswith("hooks")))
                + ")")
        return "module " + ";".join(parts)

    def whole_files(self) -> None:
        """Every function and plain value at the top of each module read whole (its code
        calls ``globals()`` or ``eval``, imports it in a function, hands it on whole), and of
        each file it met when the code reads other frames (``sys._getframe``): the
        fingerprint as it was before issue 73."""
        names = set(self.whole) | (self.modules if self.dynamic else set())
        for module_name in sorted(m for m in names if m and not _fixed(m)):
            namespace = getattr(sys.modules.get(module_name), "__dict__", {})
            for name, value in sorted(namespace.items(), key=lambda kv: kv[0]):
                if name.startswith("__"):
                    continue
                if isinstance(value, types.FunctionType):
                    self.out.append(name)
                    _function(value, self.out)
                elif isinstance(value, _PLAIN):
                    self.out.append(f"{name}={value!r}")


def _function(fn: Any, out: list) -> None:
    """A function's own code, defaults and cells, without what it reads (`whole_files`)."""
    _code(fn.__code__, out)
    out.append(repr(fn.__defaults__))
    for cell in fn.__closure__ or ():
        try:
            out.append(repr(type(cell.cell_contents)))
        except ValueError:
            out.append("<empty>")


def _few(reasons) -> str:
    reasons = list(dict.fromkeys(reasons))
    more = f"; and {len(reasons) - 3} more" if len(reasons) > 3 else ""
    return "; ".join(reasons[:3]) + more


class Fingerprint(str):
    """A fingerprint (its hex digest) with a note on what it guards, for the cache's note, and
    whether it may stand for its program in another process (`portable`; else why not)."""

    note: str = ""
    portable: bool = False
    local: str = ""


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
                options: dict) -> Fingerprint | None:
    """The hex digest of everything the imported program depends on (see the module's doc),
    with ``options`` (lowerkit's own: target, pipeline, flags, ...); None when the program
    holds something it cannot read. Its ``note`` says when it guards whole files."""
    if not isinstance(fn, torch.nn.Module) or _global_hooks():
        return None
    out: list = [repr(sorted(options.items())), torch.is_grad_enabled(),
                 repr(torch.get_default_dtype()), torch.are_deterministic_algorithms_enabled(),
                 # lowerkit's own decompositions at import, and derived weights, on or off
                 os.environ.get("LOWERKIT_DECOMPOSITIONS", "1"),
                 os.environ.get("LOWERKIT_DERIVED_WEIGHTS", "1"),
                 # for another process: bytecode and NumPy's functions (named, not read)
                 sys.version, getattr(sys.modules.get("numpy"), "__version__", None)]
    reader = _Reader(out)
    try:
        for name, module in fn.named_modules(remove_duplicate=False):
            if _hooks(module):
                return None
            out.append(f"module {name}")
            reader.klass(type(module))
            for attr, value in vars(module).items():
                if attr in _SKIPPED_ATTRIBUTES or (attr.startswith("_") and attr.endswith("hooks")):
                    continue
                if isinstance(value, torch.Tensor):
                    return None  # a tensor that is neither parameter nor buffer: a constant
                out.append(f"{attr}={reader.value(value)}")
            for kind, table in (("p", module._parameters), ("b", module._buffers)):
                for key, t in table.items():
                    out.append(f"{kind} {key} " + ("None" if t is None else _tensor(t)))
        leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs or {})))
        out.append(str(spec))
        for leaf in leaves:
            out.append(_tensor(leaf) if isinstance(leaf, torch.Tensor) else reader.value(leaf))
        out.append(repr(dynamic_shapes))
        reader.whole_files()
    except (_Unreadable, RecursionError):
        return None
    digest = Fingerprint(hashlib.sha256(repr(out).encode()).hexdigest())
    local = reader.local + reader.dynamic
    digest.portable = not local
    digest.local = _few(local)
    if reader.dynamic:
        digest.note = "guards whole files, as before issue 73: " + _few(reader.dynamic)
    elif reader.whole:
        digest.note = "reads whole files: " + _few(f"{m} ({why})"
                                                   for m, why in reader.whole.items())
    return digest
