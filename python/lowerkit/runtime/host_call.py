"""An artifact's call with less Python around IREE's, for a caller that makes the same call
many times: the torch.compile backend, whose graphs Dynamo calls with positional host tensors
of the shapes and dtypes it guards (issue 73).

`Artifact.__call__` serves every kind of call: keyword arguments, containers, device tensors,
mutated inputs and buffers, a random seed, widened dtypes, a driver still being chosen
(`executable._HostPath`), a lost device. `host_caller` returns a function for the one kind a
compiled graph makes, which checks each input's dtype and shape (as the signature's cheap path
does), copies the inputs into IREE's buffers and reads the results, with everything else looked
up once: the driver's context and function, the element types, the buffer allocator. Any other
call, a call before the driver is chosen, a call after the weights changed in place or were
bound anew, and any failure go through `Artifact.__call__`, which says what is wrong; the
function then specialises again.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch

from . import huge_pages
from .executable import _hal, _host_tensor

_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _eligible(art: Any) -> bool:
    """Whether ``art``'s calls can take the short path at all (its kind of program)."""
    sig = art.signature
    return (art._inlined is None and not art.state and not sig.seeded and not sig.mutated_inputs
            and not sig.sizes_out and sig._static_inputs is not None
            and art.driver in ("local-task", "local-sync"))


def _invoker(exe: Any, dtypes: Sequence[torch.dtype], n_results: int) -> Callable | None:
    """``exe``'s call for host tensors of ``dtypes`` (contiguous or not): a list of tensors in,
    a list of result tensors out; None when its driver is not chosen yet, or a dtype crosses
    the call widened or as another type's bits (bfloat16). On the local-sync twin that
    `executable._HostPath` chose, IREE's invoke is called as it is, not through the
    `yielding_wait` policy switches that `Executable.call` makes for local-task's waits."""
    if not exe.settled or any(d in exe.widen or d is torch.bfloat16 for d in dtypes):
        return None
    path = exe._host_path
    loaded = exe.loaded if path is None else path.pick()
    rt, device, context, fn, storage = loaded
    hal = _hal(rt)
    alloc = device.allocator.allocate_buffer_copy
    memory, usage = hal.memory, hal.usage
    types = [hal.element_types[d] for d in dtypes]
    huge = huge_pages.MIN_BYTES if huge_pages.madvise() else math.inf
    copy_in = huge_pages.copy_in
    variants, view, call = rt.VmVariantList, rt.HalBufferView, exe.call
    if path is not None and path._twin is not None and loaded is path._twin.loaded:
        # local-sync runs the program in the caller's thread: there is no wait on workers for
        # `yielding_wait` to yield, only its two policy switches around a long call
        def call(context: Any, fn: Any, args: Any, results: Any, storage: Any) -> None:
            if storage is not None:
                storage.invoke(_invoke, context, fn, args, results)
            else:
                context.invoke(fn, args, results)
    n_in = len(types)
    outs = range(n_results)

    def invoke(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        args = variants(n_in)
        push = args.push_ref
        for t, element in zip(tensors, types):
            if t.requires_grad:
                t = t.detach()
            if not t.is_contiguous():
                t = t.contiguous()
            arr = t.numpy()
            if arr.nbytes >= huge:
                push(copy_in(rt, device, memory, usage, arr, element))
            else:
                push(alloc(memory, usage, device, arr, element))
        results = variants(n_results)
        call(context, fn, args, results, storage)
        get = results.get_as_object
        return [_host_tensor(rt, get(i, view)) for i in outs]
    return invoke


def _invoke(context: Any, fn: Any, args: Any, results: Any) -> None:
    context.invoke(fn, args, results)


def host_caller(art: Any) -> Callable[..., Any]:
    """A function that answers as ``art(*tensors)`` does, for positional host tensors, with
    less work a call where ``art`` allows it (see the module's docstring); ``art.__call__``
    itself where it does not."""
    if not _eligible(art):
        return art.__call__
    sig = art.signature
    static = sig._static_inputs
    dtypes = [d for d, _ in static]
    n_in, n_out = len(static), len(sig.tensor_outputs)
    finish = tuple if sig._tuple_of_tensors and not sig._retyped_outputs \
        else sig.unflatten_outputs
    slow = art.__call__
    # what the short path was made for: the loaded executable and its weights' versions
    held: list = [None, None, None]  # [executable, invoker, weight versions or None]

    def specialise() -> None:
        exe = art._executable
        held[:] = [None, None, None]
        if exe is None:
            return
        invoke = _invoker(exe, dtypes, n_out)
        if invoke is None:
            return
        weights = art._weights
        held[:] = [exe, invoke,
                   weights._versions if weights is not None and weights.tensors else None]

    def call(*tensors: Any) -> Any:
        exe, invoke, versions = held
        if invoke is None or art._executable is not exe or (
                versions is not None and versions.changed()) or len(tensors) != n_in:
            out = slow(*tensors)  # loads, reloads or says what is wrong
            specialise()
            return out
        for value, (dtype, shape) in zip(tensors, static):
            if type(value) not in _PLAIN or value.dtype is not dtype \
                    or value.shape != shape or not value.is_cpu:
                return slow(*tensors)
        try:
            outputs = invoke(tensors)
        except Exception:  # noqa: BLE001 - the full call raises what lowerkit says of it
            held[:] = [None, None, None]
            return slow(*tensors)
        return finish(outputs)
    call.__wrapped__ = slow
    call.short = lambda: held[1] is not None  # whether the next plain call takes the short path
    return call
