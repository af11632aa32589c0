"""``lowerkit.compile``: a PyTorch program to a callable `Artifact` in one call."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from . import collector, registry, tuning
from .cache import CompileCache, recipe_key, resolve_cache
from .errors import LowerkitError, StageError, UnsupportedError
from .ingress.fingerprint import fingerprint
from .ir import Build, op_histogram
from .iree import bridge, compiler, filter_layout, parameters, transients
from .passes import seed_input
from .runtime.artifact import Artifact
from .runtime.verify import verified
from .stages import dump_index
from .stages.dump import DumpInstrument, fx_op_histogram
from .stages.instrument import Instrument
from .stages.pipeline import Pipeline
from .stages.stage import StageRecord
from .target import Target, llvmcpu_flags, prefetch_host_cpu, resolve_host_cpu

if TYPE_CHECKING:
    from .ingress.importer import ImportedProgram

# What a compile that traces loads (torch.export's tracer with Dynamo and AOT Autograd,
# torch-mlir's FX importer, IREE's IR bindings): most of a fresh process's import time, which
# a compile the cache answers by fingerprint never needs (issue 73). Loaded at the first compile
# that traces, then frozen with what the compile found (`collector.loaded`), so that the
# collection ending the first compile walks only what the compile made (README, "Full
# collections").
_COMPILE_PATH = ("torch.export._trace", "torch_mlir.fx", "iree.compiler.ir",
                 "lowerkit.ingress.importer")


def _load_compile_path() -> None:
    if all(name in sys.modules for name in _COMPILE_PATH):
        return
    for name in _COMPILE_PATH:
        with contextlib.suppress(ImportError):  # a private module: loaded later if renamed
            importlib.import_module(name)
    collector.loaded()


def import_program(*args, **kwargs) -> "ImportedProgram":
    """`lowerkit.ingress.importer.import_program`, loaded on first use."""
    from .ingress.importer import import_program as imported

    return imported(*args, **kwargs)

DEFAULT_PIPELINE = "torch-to-linalg"


def resolve_pipeline(pipeline: "str | Pipeline | None") -> Pipeline:
    if pipeline is None:
        pipeline = DEFAULT_PIPELINE
    if isinstance(pipeline, str):
        return registry.pipelines.get(pipeline)
    if isinstance(pipeline, Pipeline):
        return pipeline
    raise TypeError(f"pipeline must be a registered name or a Pipeline, got {type(pipeline).__name__}")


def default_weights(target: "str | Target") -> str:
    """``"inline"`` for a target that runs on Vulkan, ``"external"`` otherwise (see `compile`)."""
    from .target import Target

    return "inline" if "vulkan" in Target.parse(target).runtime_drivers else "external"


# held from its start: the host-CPU question below imports IREE's bindings, which set off a
# full collection when imported before the hold
@collector.held()
def compile(
    fn: Callable,
    args: Any = (),
    kwargs: dict | None = None,
    *,
    target: "str | Target" = "cpu",
    pipeline: "str | Pipeline | None" = None,
    dynamic_shapes: Any = None,
    dump_dir: "str | Path | DumpInstrument | None" = None,
    instruments: Sequence[Instrument] = (),
    iree_flags: Sequence[str] = (),
    cache: "CompileCache | str | Path | bool | None" = None,
    device: str | None = None,
    verify: "bool | dict" = False,
    iree_phases: bool = False,
    weights: str | None = None,
    convolutions: str | None = None,
) -> Artifact:
    """Import ``fn(*args, **kwargs)``, lower it through ``pipeline`` and compile it for ``target``.

    ``fn`` is an ``nn.Module`` or a function; arguments follow ``torch.export.export``
    (``dynamic_shapes`` too). Python scalars among the arguments are baked into the program.
    ``target`` may name several devices (``"cpu+vulkan"``); ``device`` picks the one to run on.
    ``cache``: the compile cache (`lowerkit.cache`; on by default, ``False`` turns it off, a
    folder or a `CompileCache` puts it elsewhere); dumps and instruments bypass it.
    ``iree_flags``: more iree-compile flags, after lowerkit's own; one known to give wrong
    answers with them on the installed IREE is refused (`compiler.MISCOMPILING_FLAGS`).
    ``verify``: every call also runs ``fn`` eagerly and raises `VerificationError` on a mismatch
    (``True``, ``{"tol": lowerkit.Tolerance(...)}`` or ``{"rtol": ..., "atol": ...}``;
    see `lowerkit.runtime.verify`).
    ``iree_phases``: record the time and ops of each of IREE's phases for `Artifact.stage_table`
    (iree-compile prints every phase for it, which costs compile time: the README's
    compile-time table, column `phases`; a dump always records them).
    ``weights``: ``"external"`` (the default, except on Vulkan) passes the model's parameters
    and buffers to the compiled program as IREE parameters, read at load from the model's own
    tensors: the IR and the vmfb hold code only, in-place changes to the weights are seen, and
    another checkpoint reuses the code (`Artifact.bind_weights`). ``"inline"`` compiles them
    in as constants: the default for a target with a Vulkan device, where IREE 3.13's loading
    of parameters now and then hung or lost lavapipe's device
    (benchmarks/vulkan_parameter_loads.py).
    ``convolutions``: how dense 2-D convolutions reach a CPU target (`tuning.CONVOLUTIONS`):
    ``"rule"`` (the default: per tap or im2col, by shape or a stored choice),
    ``"data-tiled"`` (whole, for IREE's data tiling, channels-last; the rule's form if
    iree-compile rejects that) or ``"im2col"`` (every convolution whole: the fewest
    dispatches, so the shortest compile, for iterating on a model; its calls may be slower).
    Which is faster depends on the model (README, "Data-tiled convolutions").
    """
    defaulted = weights is None
    if weights is None:
        weights = default_weights(target)
    if verify:
        art = compile(fn, args, kwargs, target=target, pipeline=pipeline,
                      dynamic_shapes=dynamic_shapes, dump_dir=dump_dir, instruments=instruments,
                      iree_flags=iree_flags, cache=cache, device=device,
                      iree_phases=iree_phases, weights=weights, convolutions=convolutions)
        return verified(art, fn, verify)
    title = getattr(type(fn), "__name__", None) if isinstance(fn, torch.nn.Module) else None

    def program_fingerprint(recipe: str) -> str | None:
        if weights != "external":  # inline weights are code: only the traced IR keys them
            return None
        return fingerprint(fn, args, kwargs, dynamic_shapes,
                           {"recipe": recipe, "weights": weights, "device": device})

    # iree-compile's word on the host's CPU (the cache key's first need), asked now: its child
    # process runs while the program is traced
    prefetch_host_cpu([*Target.parse(target).flags, *iree_flags])
    with (tuning.forced_convolutions(convolutions) if convolutions is not None
          else contextlib.nullcontext()):
        art = compile_imported(
            lambda: import_program(fn, args, kwargs, dynamic_shapes, weights), target=target,
            pipeline=pipeline, title=title or getattr(fn, "__name__", "program"),
            dump_dir=dump_dir, instruments=instruments, iree_flags=iree_flags, cache=cache,
            device=device, iree_phases=iree_phases, fingerprint=program_fingerprint,
            weights_of=fn)
    if defaulted and weights == "inline" and isinstance(fn, torch.nn.Module):
        art.watch_inlined_weights(fn)  # the caller did not ask for a snapshot of them
    return art


@collector.held()  # a cold compile spent 0.7 s in full collections of the whole heap
def compile_imported(
    load: Callable[[], ImportedProgram],
    *,
    target: "str | Target" = "cpu",
    pipeline: "str | Pipeline | None" = None,
    title: str = "program",
    dump_dir: "str | Path | DumpInstrument | None" = None,
    instruments: Sequence[Instrument] = (),
    iree_flags: Sequence[str] = (),
    cache: "CompileCache | str | Path | bool | None" = None,
    device: str | None = None,
    iree_phases: bool = False,
    fingerprint: "Callable[[str], str | None] | None" = None,
    weights_of: Any = None,
) -> Artifact:
    """Everything after the front end, for any front end (``torch.export`` in `compile`, a
    graph of ``torch.compile`` in `lowerkit.backend`): ``load()`` imports the program, then the
    pipeline, the target's fixes and iree-compile run, through the compile cache, or with a
    dump (and its index, also when a stage fails) in ``dump_dir``.
    ``fingerprint(recipe)``: the program's fingerprint (`lowerkit.ingress.fingerprint`), by
    which the cache answers a program this process traced before without calling ``load``;
    ``weights_of``: the module whose tensors such an answer binds."""
    target = Target.parse(target)
    target.driver_for(device)  # a device the target cannot run on fails before compiling
    pipe = resolve_pipeline(pipeline)
    instruments = list(instruments)
    dump = dump_dir if isinstance(dump_dir, DumpInstrument) else (
        DumpInstrument(dump_dir) if dump_dir is not None else None)
    if dump is None:
        # a cached entry may lack the phases: asking for them compiles
        resolved = resolve_cache(cache)
        store = resolved if not instruments and not iree_phases else None
        known = None
        if store is not None and fingerprint is not None:
            known = fingerprint(recipe_key(pipe, target, iree_flags))
            if known is not None:
                art = store.recall(known, device)
                if art is not None:
                    if art.parameters:
                        art.bind_weights(weights_of)
                    return art
        art = _compile(load, target, pipe, None, instruments, iree_flags, store, device,
                       iree_phases, known)
        if store is None:
            art.cache_note = ("off" if resolved is None
                              else "off: instruments or IREE's phases asked for")
        return art
    instruments.append(dump)
    try:
        art = _compile(load, target, pipe, dump, instruments, iree_flags, None, device)
    except LowerkitError as e:
        if getattr(e, "stage", None) == compiler.STAGE:  # pipeline stages report themselves
            dump.write(f"{compiler.STAGE}.error", str(e) + "\n", ".txt", kind="error")
            dump.add_failed_graph(e)
        dump_index.write_report(dump.directory, dump.entries, title=title, target=target.name, error=str(e))
        dump.clean_staging()
        raise
    dump_index.write_report(dump.directory, dump.entries, title=title, target=target.name)
    art.cache_note = "off: a dump runs every stage"
    return art


def _compile(load, target, pipe, dump, instruments, iree_flags, store=None, device=None,
             iree_phases=False, fingerprint=None):
    _load_compile_path()
    with tuning.applied(target) as tuned, tuning.per_tap_written() as per_tap:
        imported = load()
        # a stored whole-compile choice (the matmul tile); a flag the caller gave wins
        given = {f.split("=", 1)[0] for f in iree_flags or ()}
        caller_flags = list(iree_flags or ())
        iree_flags = [*caller_flags, *(f for f in tuning.applied_flags()
                                       if f.split("=", 1)[0] not in given)]
        data_tiled = tuning.dense_convolutions_whole()
        every_whole = tuning.every_convolution_whole()
        why = tuning.why_convolutions()
    records = [StageRecord("torch-import", Build.TORCH_MLIR, imported.seconds,
                           op_histogram(imported.module))]

    def lower(phases: bool = False) -> Artifact:
        art = lower_program(phases)
        # the records iree-compile took, whichever way the program went
        stats = art.compile_stats or {}
        took = {}
        if stats.get("tuned_dispatches"):
            took[tuning.DISPATCH] = (f"{stats['tuned_dispatches']} dispatch(es) with lowerkit "
                                     f"tune's configs")
        if stats.get("flag_set") and tuning.forcing_flag_set() is None:
            took[tuning.FLAG_SET] = stats["flag_set"]
        if took:
            art.tuned = {**art.tuned, **took}
        return art

    def lower_program(phases: bool) -> Artifact:
        if data_tiled and dump is None:
            return _data_tiled_or_rule(imported, records, load, target, pipe, instruments,
                                       caller_flags, iree_flags, device, phases, tuned, why)
        # convolutions written per tap: if the fast configuration rejects them, they go whole
        # before the ladder's safer rungs are tried (`_with_convolutions_whole`)
        whole_first = bool(per_tap) and dump is None and tuning.forcing() is None
        try:
            art = _lower(imported, records, target, pipe, dump, instruments, iree_flags, device,
                         phases, last_rung=0 if whole_first else None)
        except UnsupportedError:
            raise  # the target cannot do what the program asks, per tap or whole
        except StageError as e:
            if not whole_first or "timed out after" in e.summary:
                raise
            return _with_convolutions_whole(e, load, target, pipe, instruments, iree_flags,
                                            device, phases, len(per_tap), tuned)
        art.tuned = dict(tuned)  # before the cache stores it: a cache hit says it too
        if every_whole:
            art.compile_stats = {**(art.compile_stats or {}), "convolutions": EVERY_WHOLE}
        return art

    if store is not None:
        art = store.lookup_or_compile(imported, pipe, target, iree_flags, device, lower,
                                      fingerprint)
    else:
        art = lower(iree_phases)
    # Mutated buffers start from this model's values, also when the code came from the cache;
    # its weights are this model's too (the code never holds them).
    art.state = [t.clone() for t in imported.state.values()]
    if art.parameters:
        art.bind_weights(imported.weights)
    return art


def _with_convolutions_whole(rejected: StageError, load, target, pipe, instruments, iree_flags,
                             device, phases, count: int, tuned: dict) -> Artifact:
    """The fast configuration rejected a program whose import wrote convolutions per tap: the
    program imported again with every convolution whole, if iree-compile takes that with its
    fast configuration; else the per-tap program down the ladder's safer rungs. A per-tap
    convolution fused with a transposing consumer overflowed IREE's 32 KiB stack limit with
    data tiling (Whisper's convolutional front end), and dropping data tiling slows every
    matmul of the model, where whole convolutions slow only themselves (Whisper's encoder:
    383 against 783 ms a call). Whole is tried before the safer rungs: on the way down,
    Whisper's encoder failed on two of them and compiled thrown-away code on a third, about
    5 of the 12.8 s its compile took."""
    import warnings

    with tuning.forced(tuning.IM2COL):
        whole = load()
    try:  # kept only on the fast rung: no compile on the safer ones
        retried = _lower(whole, [StageRecord("torch-import", Build.TORCH_MLIR, whole.seconds,
                                             op_histogram(whole.module))],
                         target, pipe, None, instruments, iree_flags, device, phases, last_rung=0)
    except StageError as e:
        if "timed out after" in e.summary:
            raise
        retried = None
    if retried is not None and retried.compile_rung.startswith("fast"):
        retried.compile_stats = {**(retried.compile_stats or {}),
                                 "rung": f"{retried.compile_rung}, convolutions whole"}
        # a new artifact: no stored convolution choice decided its code; a stored matmul tile did
        retried.tuned = {k: v for k, v in tuned.items() if k == tuning.MATMUL_TILE}
        warnings.warn(f"iree-compile took the fast configuration once the {count} convolution(s) "
                      f"written per tap were left whole (IREE's im2col or its own kernels), where "
                      f"per tap it rejected it ({rejected.summary}): compiled that way "
                      "(Artifact.compile_rung)", stacklevel=_callers_level())
        return retried
    with tuning.applied(target) as again_tuned:  # whole needs a safer rung too: per tap, as asked
        again = load()
    art = _lower(again, [StageRecord("torch-import", Build.TORCH_MLIR, again.seconds,
                                     op_histogram(again.module))],
                 target, pipe, None, instruments, iree_flags, device, phases)
    art.tuned = dict(again_tuned)
    return art


def _callers_level() -> int:
    """The ``stacklevel`` that makes a warning name the first frame outside lowerkit (the
    caller's line), however deep the compile that warns (cache, retries, the backend)."""
    import sys

    package = str(Path(__file__).resolve().parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(package)
                                 or frame.f_code.co_filename.endswith("contextlib.py")):
        frame, level = frame.f_back, level + 1
    return level


EVERY_WHOLE = ("im2col, as asked: every convolution whole (dense ones through IREE's im2col, "
               "depthwise ones through its own kernel)")


# Seen in the configured executables (`--compile-to=executable-configurations`) for one
# 512-channel 3x3 convolution: for znver4 its encodings resolve to packed tiles and it compiles
# as a data-tiled matmul (Mmt4dTilingExpert); for znver3 the same encodings resolve to the
# layout it had (an identity copy), and it compiles by IREE's generic convolution pipeline
# (ConvTileAndDecomposeExpert) with 4-wide vector tiles. ResNet-18 so ran 11x slower than by
# the rule on a Zen 3 (benchmarks/results/conv-strategy-zen3.json).
DIRECT_CONVOLUTIONS = (
    "convolutions='data-tiled' on a CPU without AVX-512: IREE 3.13 data-tiles convolutions only "
    "for 512-bit vectors, and compiles them for this CPU as direct convolutions, several times "
    "slower than the rule's per-tap or im2col forms (README, \"Data-tiled convolutions\"); "
    "convolutions='rule' keeps those")


def _data_tiled_or_rule(imported, records, load, target, pipe, instruments, caller_flags,
                        iree_flags, device, phases, tuned: dict,
                        why: str | None = None) -> Artifact:
    """A program whose dense convolutions go whole for IREE's data tiling (`tuning.DATA_TILED`)
    on the fast rung; if iree-compile rejects that, the program as the rule writes it, compiled
    as usual. The safer rungs drop data tiling, and the rule's code beats that: ResNet-50's
    residual blocks, before lowerkit raised the stack limit, were rejected data-tiled, and
    without data tiling ran 71 against 57 ms a call. ``why``: how lowerkit chose the strategy
    when no caller asked (`tuning.why_convolutions`); a rejection is then recorded, not warned
    of."""
    import warnings

    direct = not tuning.data_tiling_pays(target)
    if why is None and direct:
        warnings.warn(DIRECT_CONVOLUTIONS, stacklevel=_callers_level())
    try:
        art = _lower(imported, records, target, pipe, None, instruments, iree_flags, device,
                     phases, last_rung=0)
    except UnsupportedError:
        raise
    except StageError as e:
        if "timed out after" in e.summary:
            raise
        with tuning.forced_convolutions(tuning.RULE):
            art = _compile(load, target, pipe, None, instruments, caller_flags, device=device,
                           iree_phases=phases)
        art.compile_stats = {**(art.compile_stats or {}),
                             "rung": f"{art.compile_rung}, convolutions by the rule",
                             "convolutions": "by the rule: iree-compile rejected data-tiled"}
        if why is not None:
            return art
        warnings.warn(f"iree-compile rejected the data-tiled convolutions on its fast "
                      f"configuration ({e.summary}): compiled with the convolutions as the rule "
                      "writes them (per tap or im2col; Artifact.compile_rung)",
                      stacklevel=_callers_level())
        return art
    art.tuned = dict(tuned)
    said = f" ({why}; convolutions='rule' keeps the rule)" if why is not None else ""
    if direct:
        said += " (not by IREE 3.13 on this CPU, which has no AVX-512: direct convolutions)"
    art.compile_stats = {**(art.compile_stats or {}), "convolutions": tuning.DATA_TILED + said}
    return art


def _refuse_float64_io(signature, target) -> None:
    """A target without float64 (IREE demotes its f64 to f32) cannot take or give float64."""
    if target.float64:
        return
    specs = [*signature.tensor_inputs, *signature.tensor_outputs, *signature.state]
    wide = sorted({str(s.dtype) for s in specs if s.dtype in (torch.float64, torch.complex128)})
    if wide:
        raise UnsupportedError(
            "torch-import",
            f"{' and '.join(wide)} inputs or outputs are not supported on '{target.name}': its "
            "devices have no Float64 (IREE computes its f64 in f32); pass float32, or compile for "
            "a GPU with Float64, e.g. 'vulkan:llvmpipe' or 'vulkan:rdna3'")


def _lower(imported, records, target, pipe, dump, instruments, iree_flags, device,
           iree_phases=False, last_rung=None):
    _refuse_float64_io(imported.signature, target)
    if dump is not None:
        dump.write("fx-graph", imported.fx_code(), suffix=".py", kind="fx-graph",
                   build="torch", ops=fx_op_histogram(imported.exported))
        dump.write_module("torch-import", imported.module, records[0])

    lowering = pipe.run(imported.module, instruments=instruments)
    records += lowering.records
    module = lowering.module
    fixes = registry.pipelines.factory("target-fixes")(target=target, after=Build.of(module))
    slots: list = []
    if imported.weights:  # weights passed by reference become IREE parameters
        externalize, slots = parameters.stage()
        extra = [externalize]
        if filter_layout.wanted([*target.compile_flags(), *iree_flags]):
            extra.append(filter_layout.stage(slots))
        fixes = Pipeline(fixes.name, [*fixes.stages, *extra], description=fixes.description)
    done = fixes.run(module, instruments=instruments)
    records += done.records
    module = done.module

    iree_flags = (*iree_flags, *compiler.dynamic_shape_flags(imported.signature, target))
    start = time.perf_counter()
    bytecode = bridge.to_iree_bytecode(module)
    serialise = time.perf_counter() - start
    program = compiler.program_key(bytecode)
    if target.backend == "llvm-cpu":  # calls keep their transient memory (`iree.transients`)
        bytecode = transients.caller_storage(bytecode)
    tuning.reached_iree_compile(program)
    flag_set = tuning.flag_set(target, program)
    result = compiler.compile_to_vmfb(
        bytecode, target, list(iree_flags), last_rung=last_rung, first_rung=flag_set,
        dispatch_configs=tuning.dispatch_configs(target) if "llvm-cpu" in target.backend else None,
        **(dump.iree_options() if dump is not None else {"phases": iree_phases}))
    records.append(StageRecord(compiler.STAGE, Build.IREE, serialise + result.seconds, Counter()))
    if dump is not None:
        dump.add_compile(result)
    signature = imported.signature
    if seed_input.takes_seed(module):  # random ops: a seed from torch's generator each call
        signature = dataclasses.replace(signature, seeded=True)
    art = Artifact(result.vmfb, target, signature, records, device)
    art.parameters = slots
    art.compile_stats = {**compiler.statistics(result), "program": program,
                         **({"flag_set": flag_set} if flag_set else {})}
    if "llvm-cpu" in target.backend.split("+"):  # what the CPU code may use, checked at load
        resolved = resolve_host_cpu(llvmcpu_flags([*target.flags, *iree_flags]))
        art.cpu = {k: resolved[k] for k in ("cpu", "cpu_features") if k in resolved}
    return art
