"""An entry point that takes its transient memory from the caller.

IREE allocates a call's intermediate tensors as one slab at each call and frees it at the
end. On a CPU a slab past glibc's largest mmap threshold is mapped afresh by the kernel at
every call, and the call faults it in page by page: for a 3-D CNN such as R3D-18 that is a
share of its call that `benchmarks/transients.py` measures.

IREE 3.13 lets a function take that memory as an argument (``!hal.buffer
{iree.abi.transients}``; its size is the reflection key ``iree.abi.transients.size.constant``).
`caller_storage` adds such a twin of the entry function, ``<name>$transients``, which calls the
entry function itself: IREE inlines it and shares its executables, so the module still holds
each dispatch once, and ``<name>`` stays callable as before (by ``iree-run-module``, or by a
user's own IREE runtime). `lowerkit.runtime.transients` keeps the buffers the twin is called
with.
"""

from __future__ import annotations

import math

from ..ir import to_bytecode

SUFFIX = "$transients"
# The twin is compiled only for a program that makes an intermediate tensor this large. The
# twin costs iree-compile more time (IREE compiles the host side of the program for both entry
# points), and a slab that fits glibc's heap gains nothing from it
# (`lowerkit.runtime.transients.MIN_SLAB_BYTES`). The slab's size is known only once compiled;
# the largest tensor predicts it. In benchmarks/transients.py's run (transients-zen4.json, which
# stores both sizes of each program), the three programs whose slab passed glibc's threshold
# (R3D-18, DeepLabV3, R3D-18's 64-channel block) each make a larger tensor than this, and the
# four whose slab did not (ResNet-50, ViT-B/16, ConvNeXt-tiny, MobileNetV3-small) none. A
# program it mispredicts costs a compile for nothing, or keeps IREE's slab per call as before.
MIN_LARGEST_BYTES = 12 << 20


def twin_name(function: str) -> str:
    """The name of ``function``'s twin that takes its transient memory as an argument."""
    return function + SUFFIX


def caller_storage(bytecode: bytes, function: str = "main") -> bytes:
    """``bytecode`` (IREE's input, linalg on tensors) with ``function``'s twin added, or as it
    is where the twin could not say its size when compiled (a function with a dynamic shape:
    its slab's size depends on the call), where no intermediate tensor reaches
    `MIN_LARGEST_BYTES`, or where ``function`` is not found."""
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
        if _largest_intermediate(entry) < MIN_LARGEST_BYTES:
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


def _largest_intermediate(entry) -> int:
    """The bytes of the largest statically shaped tensor an op of ``entry`` makes."""
    from iree.compiler import ir

    largest = [0]

    def visit(op):
        for value in op.results:
            t = value.type
            if isinstance(t, ir.RankedTensorType) and t.has_static_shape:
                try:
                    bits = t.element_type.width
                except AttributeError:  # complex or index: as wide as the widest scalar
                    bits = 64
                largest[0] = max(largest[0], math.prod(t.shape) * max(bits, 8) // 8)
        return ir.WalkResult.ADVANCE

    entry.operation.walk(visit)
    return largest[0]
