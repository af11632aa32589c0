"""An entry point that takes its transient memory from the caller.

IREE allocates a call's intermediate tensors as one slab at each call and frees it at the
end. On a CPU a slab of more than 32 MiB is past glibc's largest mmap threshold: the kernel
maps it afresh at every call and the call faults it in page by page. R3D-18's slab is 66 MiB,
and faulting it cost about a tenth of its call (`docs/performance/real-models.md`).

IREE 3.13 lets a function take that memory as an argument (``!hal.buffer
{iree.abi.transients}``; its size is the reflection key ``iree.abi.transients.size.constant``).
`caller_storage` adds such a twin of the entry function, ``<name>$transients``, which calls the
entry function itself: IREE inlines it and shares its executables, so the module still holds
each dispatch once, and ``<name>`` stays callable as before (by ``iree-run-module``, or by a
user's own IREE runtime). `lowerkit.runtime.transients` keeps the buffers the twin is called
with.
"""

from __future__ import annotations

from ..ir import to_bytecode

SUFFIX = "$transients"


def twin_name(function: str) -> str:
    """The name of ``function``'s twin that takes its transient memory as an argument."""
    return function + SUFFIX


def caller_storage(bytecode: bytes, function: str = "main") -> bytes:
    """``bytecode`` (IREE's input, linalg on tensors) with ``function``'s twin added, or as it
    is where the twin could not say its size when compiled: a function with a dynamic shape
    (its slab's size depends on the call) or one that is not found."""
    from iree.compiler import ir
    from iree.compiler.dialects import func

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(bytecode)
        entry = None
        for op in module.body.operations:
            if (op.operation.name == "func.func"
                    and ir.StringAttr(op.attributes["sym_name"]).value == function):
                entry = op
        if entry is None or "sym_visibility" in entry.attributes:
            return bytecode
        kind = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
        types = [*kind.inputs, *kind.results]
        if any(isinstance(t, ir.ShapedType) and not t.has_static_shape for t in types):
            return bytecode
        storage = ir.Type.parse("!hal.buffer")
        with ir.InsertionPoint(module.body):
            twin = func.FuncOp(twin_name(function), ([*kind.inputs, storage], kind.results))
            twin.arg_attrs = ir.ArrayAttr.get(
                [ir.DictAttr.get({}) for _ in kind.inputs]
                + [ir.DictAttr.get({"iree.abi.transients": ir.UnitAttr.get()})])
            body = twin.add_entry_block()
        with ir.InsertionPoint(body):
            call = func.CallOp(list(kind.results), ir.FlatSymbolRefAttr.get(function),
                               list(body.arguments)[:-1])
            func.ReturnOp(list(call.results))
        return to_bytecode(module)
