"""Runtime: load a vmfb on an IREE driver and call it with torch tensors.

The device is opened lazily, at the first call, so compiling for a target never needs the
device. Calls go straight to IREE's VM (no per-call reflection), to keep the per-call cost low.
"""

from __future__ import annotations

import atexit
import math
import os
import threading
import weakref
from typing import Any

import numpy as np
import torch

from ..errors import CheckError, DeviceLostError, LowerkitError, TargetError
from ..iree.transients import twin_name
from ..ir import CHECK_MARK
from . import huge_pages, transients
from .worker_stack import ensure_worker_stacks
from .yielding_wait import YieldingWait

# torch dtype -> (numpy dtype used for the host copy, IREE element type name)
_ELEMENT_TYPES = {
    torch.float32: (np.float32, "FLOAT_32"),
    torch.float16: (np.float16, "FLOAT_16"),
    torch.float64: (np.float64, "FLOAT_64"),
    torch.bfloat16: (np.uint16, "BFLOAT_16"),
    torch.int8: (np.int8, "SINT_8"),
    torch.uint8: (np.uint8, "UINT_8"),
    torch.int16: (np.int16, "SINT_16"),
    torch.int32: (np.int32, "SINT_32"),
    torch.int64: (np.int64, "SINT_64"),
    torch.bool: (np.bool_, "BOOL_8"),
    torch.complex64: (np.complex64, "COMPLEX_64"),
    torch.complex128: (np.complex128, "COMPLEX_128"),
}

_NP_TO_TORCH = {
    np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16,
    np.dtype(np.float64): torch.float64, np.dtype(np.int8): torch.int8,
    np.dtype(np.uint8): torch.uint8, np.dtype(np.int16): torch.int16,
    np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64,
    np.dtype(np.bool_): torch.bool, np.dtype(np.complex64): torch.complex64,
    np.dtype(np.complex128): torch.complex128,
}


def wide_dtypes(storage_bits: "tuple[int, ...]") -> dict[torch.dtype, torch.dtype]:
    """The host dtypes that cross a call as 32-bit on a target storing only ``storage_bits``
    (what `widen-narrow-io` made of the compiled function's signature), and their wide dtype."""
    wide: dict[torch.dtype, torch.dtype] = {}
    if 8 not in storage_bits:
        wide.update({torch.bool: torch.int32, torch.int8: torch.int32, torch.uint8: torch.int32})
    if 16 not in storage_bits:
        wide.update({torch.float16: torch.float32, torch.bfloat16: torch.float32,
                     torch.int16: torch.int32})
    return wide


def available_drivers() -> list[str]:
    import iree.runtime as rt

    return sorted(rt.query_available_drivers())


class Executable:
    """One vmfb loaded on one IREE driver; ``invoke`` maps tensor lists to tensor lists."""

    def __init__(self, vmfb: bytes, driver: str, function: str = "main",
                 widen: dict[torch.dtype, torch.dtype] | None = None, weights: Any = None):
        self._vmfb = vmfb
        # the program's IREE parameters (`lowerkit.runtime.weights.WeightBinding`), or None
        self.weights = weights
        self.driver = driver
        self.function = function
        # host dtype -> the dtype it crosses the call as (`wide_dtypes`); outputs come back wide
        self.widen = widen or {}
        self._lock = threading.Lock()
        self._loaded: tuple | None = None
        self._weight_arrays: list = []  # what IREE reads the weights from, for this load
        self._generation = 0  # which of its driver's devices it was loaded on (`forget_device`)
        self._host_path = _HostPath(self) if driver == "local-task" else None  # issue 7
        # IREE's wait for the task system's workers spins: long calls wait as SCHED_BATCH
        self._wait = YieldingWait() if driver == "local-task" else None

    def _load(self) -> tuple:
        import iree.runtime as rt

        if self.driver not in rt.query_available_drivers():
            raise TargetError(
                f"IREE runtime driver '{self.driver}' is not available in this build; "
                f"available: {', '.join(available_drivers())}"
            )
        generation = _GENERATIONS.get(self.driver, 0)
        device = open_device(self.driver)
        _LIVE.add(self)
        instance = rt.VmInstance()
        hal = rt.create_hal_module(instance, device)
        module = rt.VmModule.copy_buffer(instance, self._vmfb)
        modules = [hal, module]
        if self.weights is not None:
            # the arrays IREE reads the weights from in place live as long as this context;
            # derived ones are made anew for each load, and go with the context they served
            parameters, self._weight_arrays = self.weights.module(rt, instance)
            modules.insert(1, parameters)
        try:
            context = rt.VmContext(instance, modules=modules)
        except Exception as e:
            if device_lost(e):  # loading runs the module's initializers on the device
                forget_device(self.driver, device)
                raise
            if self.weights is not None and "parameter" in str(e).lower():
                raise LowerkitError(
                    f"the compiled program could not load its weights (IREE parameters) on "
                    f"'{self.driver}': {e}") from e
            if "INCOMPATIBLE" in str(e) or "not found or unavailable" in str(e):
                raise TargetError(
                    f"the compiled module has no executables for IREE driver '{self.driver}' "
                    f"(compile for it, e.g. target='cpu+vulkan'): {e}") from e
            raise
        fn = module.lookup_function(self.function)
        if fn is None:
            raise LowerkitError(f"the compiled module has no function '{self.function}'")
        storage = None
        twin = module.lookup_function(twin_name(self.function)) if transients.wanted() else None
        size = transients.size_of(twin) if twin is not None else 0
        if transients.pays(size):
            fn = twin
            storage = transients.TransientStorage(rt, device, size,
                                                  self.driver.startswith("local-"))
        self._generation = generation
        return rt, device, context, fn, storage

    @property
    def settled(self) -> bool:
        """Whether later calls run on one driver: on local-task the first calls are trials that
        alternate with a local-sync twin (`_HostPath`), so they time neither driver alone."""
        return self._host_path is None or self._host_path.decided

    @property
    def loaded(self) -> tuple:
        """(rt, device, context, function, transient storage or None), loaded at first use and
        again after its device was lost (`forget_device`)."""
        loaded = self._loaded
        if loaded is None or self._generation != _GENERATIONS.get(self.driver, 0):
            with self._lock:
                if self._loaded is None or self._generation != _GENERATIONS.get(self.driver, 0):
                    self._loaded = None
                    self._loaded = self._load()
                loaded = self._loaded
        return loaded

    def forget_lost_device(self) -> None:
        """Drop this program's contexts and, for every program, the lost device they ran on."""
        with self._lock:
            loaded, self._loaded = self._loaded, None
        if loaded is not None:
            forget_device(self.driver, loaded[1])

    def invoke(self, tensors: list["torch.Tensor | int"], n_results: int) -> list[torch.Tensor]:
        """Call the program with tensors (and ints, for its scalar arguments).

        A call that loses its device (Vulkan's VK_ERROR_DEVICE_LOST: every later call on that
        device fails too) runs once more on a fresh device: inputs are copied per call, so
        the retry computes what the first call would have. A second loss raises
        DeviceLostError."""
        try:
            return self._invoke(tensors, n_results)
        except Exception as e:
            _raise_failed_check(e)
            if not device_lost(e):
                raise
            self.forget_lost_device()
        try:
            return self._invoke(tensors, n_results)
        except Exception as e:
            if not device_lost(e):
                raise
            self.forget_lost_device()
            raise DeviceLostError(
                f"the '{self.driver}' device was lost running this program, and again on a "
                f"fresh device: the program itself may be what loses it; the next call opens "
                f"another device. {e}") from e

    def call(self, context: Any, fn: Any, args: Any, results: Any,
             storage: "transients.TransientStorage | None" = None) -> float | None:
        """``context.invoke(fn, args, results)``: on local-task, timed (the seconds are returned)
        and, after a long call, waiting as `yielding_wait` says; elsewhere untimed (None).
        ``storage``: the loaded program's kept transient memory, one buffer of which the call
        takes as its last argument."""
        if storage is not None:
            return storage.invoke(self._call, context, fn, args, results)
        return self._call(context, fn, args, results)

    def _call(self, context: Any, fn: Any, args: Any, results: Any) -> float | None:
        if self._wait is not None:
            return self._wait.invoke(context, fn, args, results)
        context.invoke(fn, args, results)
        return None

    def _invoke(self, tensors: list["torch.Tensor | int"], n_results: int) -> list[torch.Tensor]:
        """One call: every input is copied into a buffer of IREE's: IREE may compute in place in an
        argument's buffer (a sort of its input did), so handing it the caller's memory
        (DLPack) would write into the caller's tensors; and a result may come back in an
        argument's buffer, which is then lowerkit's copy, never the caller's tensor."""
        path = self._host_path
        rt, device, context, fn, storage = self.loaded if path is None else path.pick()
        hal = _hal(rt)
        alloc = device.allocator.allocate_buffer_copy
        memory, usage, element_types = hal.memory, hal.usage, hal.element_types
        huge = (huge_pages.MIN_BYTES if self.driver.startswith("local-") and huge_pages.madvise()
                else math.inf)
        args = rt.VmVariantList(len(tensors))
        push = args.push_ref
        widen = self.widen
        for t in tensors:  # ~2 µs an input: a small program's call is a few of these
            if type(t) is int:  # a dynamic size (ScalarSpec)
                args.push_int(t)
                continue
            if t.requires_grad:
                t = t.detach()
            if widen and t.dtype in widen:
                t = t.to(widen[t.dtype])
            if not t.is_contiguous():
                t = t.contiguous()
            if t.dtype is torch.bfloat16:
                arr = t.view(torch.int16).numpy().view(np.uint16)
            else:
                arr = t.numpy()
            if arr.nbytes >= huge:  # host memory: a large one's pages faulted in as huge ones
                push(huge_pages.copy_in(rt, device, memory, usage, arr, element_types[t.dtype]))
            else:
                push(alloc(memory, usage, device, arr, element_types[t.dtype]))
        results = rt.VmVariantList(n_results)
        try:
            seconds = self.call(context, fn, args, results, storage)
            if path is not None and not path.decided:
                path.record(context, seconds)
        except Exception as e:
            raise LowerkitError(f"the compiled program failed at run time on '{self.driver}': {e}") from e
        view = rt.HalBufferView
        if self.driver.startswith("local-"):  # host memory: the tensors alias IREE's buffers
            return [_host_tensor(rt, results.get_as_object(i, view)) for i in range(n_results)]
        return [self._to_torch(rt, device, results.get_as_object(i, view))
                for i in range(n_results)]

    @staticmethod
    def _to_torch(rt: Any, device: Any, bv: Any) -> torch.Tensor:
        # The element type comes back as a plain int, which never equals the bindings' enum:
        # it is looked up by value, as for host results.
        shape = list(bv.shape)
        known = _hal(rt).to_torch.get(int(bv.element_type))
        if known is None:
            return torch.from_numpy(
                _read(rt, device, bv, rt.HalElementType.map_to_dtype(bv.element_type), shape))
        np_dtype, dtype = known
        if dtype is torch.bool:
            np_dtype = np.dtype(np.uint8)
        t = torch.from_numpy(_read(rt, device, bv, np_dtype, shape))
        return t.view(dtype) if dtype in (torch.bfloat16, torch.bool) else t


class _Hal:
    """IREE enum values looked up once, not on every call (each lookup is a Python attribute
    walk into the bindings, and a small program's call is only a few microseconds)."""

    def __init__(self, rt: Any):
        self.memory = rt.MemoryType.DEVICE_LOCAL
        self.usage = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING
        self.element_types = {dt: getattr(rt.HalElementType, name)
                              for dt, (_, name) in _ELEMENT_TYPES.items()}
        # IREE element type -> (numpy dtype to view the bytes as, torch dtype of the result)
        self.to_torch: dict[Any, tuple[Any, torch.dtype]] = {}
        for dt, (np_dtype, name) in _ELEMENT_TYPES.items():
            self.to_torch[int(getattr(rt.HalElementType, name))] = (
                np.dtype(np.int16 if dt is torch.bfloat16 else np_dtype), dt)
        self.to_torch[int(rt.HalElementType.INT_8)] = (np.dtype(np.int8), torch.int8)
        self.to_torch[int(rt.HalElementType.INT_16)] = (np.dtype(np.int16), torch.int16)
        self.to_torch[int(rt.HalElementType.INT_32)] = (np.dtype(np.int32), torch.int32)
        self.to_torch[int(rt.HalElementType.INT_64)] = (np.dtype(np.int64), torch.int64)


_HAL: _Hal | None = None


def _hal(rt: Any) -> _Hal:
    global _HAL
    if _HAL is None:
        _HAL = _Hal(rt)
    return _HAL


def _host_tensor(rt: Any, bv: Any) -> torch.Tensor:
    """A result of a host driver (local-sync, local-task) as a tensor over the buffer's own
    memory, without a copy: the array holds the mapping, which keeps the buffer alive as long
    as the tensor.

    The mapping is read through the buffer protocol (``np.frombuffer``: ~0.5 µs) rather than
    ``MappedMemory.asarray`` (~3-10 µs, most of a small output's cost). The protocol exports
    the memory read-only, so the array is; the tensor over it stays writable, as torch's are,
    and torch warns about that once per process: that one warning is silenced here.
    Each output of a small program costs this much per call, so the element type's reading is
    looked up once (`_host_reading`) and nothing else is asked of the bindings."""
    reading = _HOST_READINGS.get(bv.element_type)
    if reading is None:
        reading = _host_reading(rt, bv.element_type)
    np_dtype, dtype, view = reading
    shape = bv.shape
    count = math.prod(shape)
    if count == 0:
        return torch.zeros(shape, dtype=dtype)
    array = np.frombuffer(bv.map(), np_dtype, count).reshape(shape)
    t = torch.from_numpy(array) if _READ_ONLY_WARNED else _from_read_only(array)
    return t if view is None else t.view(view)


# IREE element type (the plain int a buffer view reports) -> (numpy dtype to read the bytes
# as, torch dtype of the result, the dtype to view the tensor as, or None when it already is)
_HOST_READINGS: dict[int, tuple[Any, torch.dtype, torch.dtype | None]] = {}


def _host_reading(rt: Any, element_type: int) -> tuple[Any, torch.dtype, torch.dtype | None]:
    known = _hal(rt).to_torch.get(int(element_type))
    if known is None:  # an element type torch has no dtype for: numpy's reading of it
        np_dtype = np.dtype(rt.HalElementType.map_to_dtype(element_type))
        dtype = _NP_TO_TORCH[np_dtype]
    else:
        np_dtype, dtype = known
    view = None if _NP_TO_TORCH.get(np.dtype(np_dtype)) is dtype else dtype  # bfloat16's bits
    reading = (np_dtype, dtype, view)
    _HOST_READINGS[element_type] = reading
    return reading


_READ_ONLY_WARNED = False


def _from_read_only(array: np.ndarray) -> torch.Tensor:
    global _READ_ONLY_WARNED
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        t = torch.from_numpy(array)
    _READ_ONLY_WARNED = True
    return t


class _HostPath:
    """Which CPU driver serves host calls of one local-task program (issue 7).

    local-task runs dispatches on worker threads: fast for big programs, but a call costs
    ~100 µs of thread hand-offs, more than a small model takes in eager PyTorch. local-sync
    runs the same vmfb inline in the caller's thread (~10 µs). The first calls alternate
    between the two, timed, and the one with the faster best call serves the rest; the other
    is then dropped.
    ``LOWERKIT_CPU_DRIVER=local-task|local-sync`` fixes the choice.
    """

    TRIALS = 5  # timed calls per driver
    LONG_CALL_S = 0.02  # a first local-task call this long decides for local-task at once

    def __init__(self, executable: "Executable"):
        self._main = executable
        self._twin: Executable | None = None
        self._times: dict[int, list[float]] = {}
        self._chosen: tuple | None = None
        forced = os.environ.get("LOWERKIT_CPU_DRIVER", "auto")
        if forced == "local-task":
            self._chosen = ()  # resolved to the main executable at the first call
        elif forced == "local-sync":
            self._twin = Executable(executable._vmfb, "local-sync", executable.function,
                                    executable.widen, executable.weights)
            self._chosen = ("twin",)

    @property
    def decided(self) -> bool:
        return self._chosen is not None

    def pick(self) -> tuple:
        chosen = self._chosen
        if chosen is not None:
            if chosen == ():
                return self._main.loaded
            if chosen == ("twin",):
                return self._twin.loaded
            return chosen
        if not self._times:  # the first call: local-task's, timed before a twin is loaded
            return self._main.loaded
        if self._twin is None:
            self._twin = Executable(self._main._vmfb, "local-sync", self._main.function,
                                    self._main.widen, self._main.weights)
        n_main = len(self._times.get(id(self._main.loaded[2]), ()))
        n_twin = len(self._times.get(id(self._twin.loaded[2]), ()))
        return self._twin.loaded if n_twin < n_main else self._main.loaded

    def record(self, context: Any, seconds: float) -> None:
        self._times.setdefault(id(context), []).append(seconds)
        if self._twin is None:  # local-task's first call
            if seconds > self.LONG_CALL_S:
                # that long, its hand-offs are noise and local-sync (one thread) cannot win:
                # not loading the twin spares its load and its copy of what IREE computes from
                # the weights at load
                self._chosen = self._main.loaded
            return
        main, twin = self._main.loaded, self._twin.loaded
        t_main, t_twin = self._times.get(id(main[2]), []), self._times.get(id(twin[2]), [])
        if min(len(t_main), len(t_twin)) >= self.TRIALS:
            # The fastest of each driver's trials: on a shared machine noise only ever adds
            # time, and a median could still pick local-task when most of local-sync's few
            # trials were preempted (seen in `lowerkit bench` under load: a 4 µs program then
            # cost 0.2-0.45 ms a call on local-task, with 10 ms stalls, instead of ~35 µs).
            if min(t_twin) < min(t_main):
                self._chosen = twin
            else:
                self._chosen = main
                self._twin = None  # free the twin's copy of the weights


def _read(rt: Any, device: Any, bv: Any, np_dtype: Any, shape: list[int]) -> np.ndarray:
    """Copy a buffer view's contents into a fresh host array."""
    if 0 in shape:
        return np.zeros(shape, dtype=np_dtype)
    if not _mappable(rt, bv.get_buffer()):
        return _read_staged(rt, device, bv, np_dtype, shape)
    try:
        mapped = bv.map()
        return np.array(mapped.asarray(shape, np.dtype(np_dtype)), copy=True)
    except Exception:
        return _read_staged(rt, device, bv, np_dtype, shape)


def _mappable(rt: Any, buffer: Any) -> bool:
    """Whether the host can map a buffer directly (GPU results usually cannot: Vulkan's are
    device-local, and importing host memory needs 4096-byte alignment that numpy lacks)."""
    usage = int(buffer.allowed_usage())
    memory = int(buffer.memory_type())
    return bool(usage & int(rt.BufferUsage.MAPPING_SCOPED)) and bool(
        memory & int(rt.MemoryType.HOST_VISIBLE))


def _read_staged(rt: Any, device: Any, bv: Any, np_dtype: Any, shape: list[int]) -> np.ndarray:
    """Read back through a host-visible staging buffer that IREE allocates (so it is aligned as
    the device wants), for devices whose memory is not mappable; waits for the copy."""
    source = bv.get_buffer()
    size = source.byte_length()
    needed = int(np.prod(shape)) * np.dtype(np_dtype).itemsize
    if size < needed:
        raise LowerkitError(f"device buffer holds {size} bytes, {needed} expected for {shape}")
    alloc = device.allocator
    host = alloc.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=size,
    )
    sem = device.create_semaphore(0)
    device.queue_copy(source, host, wait_semaphores=rt.HalFence.create_at(sem, 0),
                      signal_semaphores=rt.HalFence.create_at(sem, 1))
    rt.HalFence.create_at(sem, 1).wait()
    return np.array(host.map().asarray(shape, np.dtype(np_dtype)), copy=True)


def usable_drivers() -> list[str]:
    """Drivers for which a device can be opened here (e.g. ``local-task``, ``vulkan``)."""
    import iree.runtime as rt

    ensure_worker_stacks()  # before IREE creates any driver, which reads it once
    usable = []
    for name in available_drivers():
        try:
            if rt.get_driver(name).query_available_devices():
                usable.append(name)
        except Exception:
            pass
    return usable


# -- devices shared by every executable of a driver -------------------------------------------
# One device per driver, so that tensors left on a device by one artifact can feed another.
_DEVICES: dict[str, Any] = {}
_DEVICES_LOCK = threading.Lock()
# driver -> how many of its devices were lost: what loaded on an older one loads again
_GENERATIONS: dict[str, int] = {}
_LIVE: "weakref.WeakSet[Executable]" = weakref.WeakSet()
# Tensors left on a device: their buffers must go before the device does at exit.
_RESIDENT: "weakref.WeakSet[DeviceTensor]" = weakref.WeakSet()


def open_device(driver: str) -> Any:
    """The process's device for an IREE driver, opened on first use; TargetError if none."""
    with _DEVICES_LOCK:
        device = _DEVICES.get(driver)
        if device is None:
            import iree.runtime as rt

            ensure_worker_stacks()
            try:
                device = rt.get_driver(driver).create_default_device()
            except Exception as e:
                hint = (" (is a Vulkan ICD installed? Debian: apt-get install mesa-vulkan-drivers "
                        "libvulkan1)" if driver == "vulkan" else "")
                raise TargetError(
                    f"could not open a device for IREE driver '{driver}'{hint}: {e}") from e
            _DEVICES[driver] = device
        return device


def _raise_failed_check(error: BaseException) -> None:
    """A failed run-time check of lowerkit's (IREE's FAILED_PRECONDITION with its message,
    `lowerkit.ingress.checks`) as `CheckError`, with the check's own words; else nothing."""
    text = str(error)
    at = text.find(CHECK_MARK)
    if at < 0:
        return
    message = text[at + len(CHECK_MARK):]
    for end in ("; ; ", "; invoking"):  # IREE's status: "...; <message>; ; invoking ..."
        message = message.split(end, 1)[0]
    message = message.rstrip("; \n")
    raise CheckError(f"run-time check failed: {message}; eager PyTorch refuses such a call "
                     f"too") from error


def device_lost(error: BaseException | None) -> bool:
    """Whether an IREE error (or one it caused) says its device was lost: Vulkan's
    VK_ERROR_DEVICE_LOST, or IREE's DATA_LOSS status, which a lost lavapipe device also gave
    without naming Vulkan's code."""
    for _ in range(8):
        if error is None:
            return False
        if "DEVICE_LOST" in str(error) or "DATA_LOSS" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def forget_device(driver: str, device: Any) -> None:
    """Drop a lost device: the next `open_device` opens a fresh one, and every executable or
    device tensor of the lost one sees its generation is old. A device already replaced (by
    another program that saw the same loss first) is left alone."""
    with _DEVICES_LOCK:
        if _DEVICES.get(driver) is device:
            del _DEVICES[driver]
            _GENERATIONS[driver] = _GENERATIONS.get(driver, 0) + 1


@atexit.register
def _release_at_exit() -> None:
    """Drop contexts and buffers before devices: the Vulkan driver crashes at exit when they
    go in any order the interpreter's teardown happens to pick.

    The CPU drivers are the exception: their outputs are tensors over IREE's own buffers
    (`_host_tensor`), and a module-level ``y = art(x)`` (or any view of it) is released only
    during the interpreter's final teardown, after this. Releasing its mapping then called
    into a destroyed device (SIGSEGV at exit). Their devices and contexts are kept for the
    life of the process instead; the operating system takes the memory back."""
    import ctypes
    import gc

    def keep_forever(obj: Any) -> None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))

    for executable in list(_LIVE):
        if executable.driver.startswith("local-") and executable._loaded is not None:
            keep_forever(executable._loaded)
        executable._loaded = None
    for tensor in list(_RESIDENT):  # a module-level `h = art(x, keep_on_device=True)`
        tensor.view = None
    kept = [d for driver, d in _DEVICES.items() if driver.startswith("local-")]
    for device in kept:
        keep_forever(device)
    if kept:  # kept on purpose: nanobind's report of them as leaks at exit would only alarm
        try:
            from iree._runtime_libs import _runtime

            _runtime.disable_leak_checker()
        except (ImportError, AttributeError):
            pass
    gc.collect()
    _DEVICES.clear()
    gc.collect()


# -- tensors kept on the device between calls -------------------------------------------------
class DeviceTensor:
    """A tensor that lives in an IREE device's memory: what ``art(x, keep_on_device=True)``
    returns, and what a later call takes as input without a round trip through the host."""

    def __init__(self, view: Any, driver: str, dtype: torch.dtype):
        self.view = view
        self.driver = driver
        self.dtype = dtype
        self.generation = _GENERATIONS.get(driver, 0)  # of the device it lives on
        _RESIDENT.add(self)

    def _check_alive(self) -> None:
        if self.generation != _GENERATIONS.get(self.driver, 0):
            raise DeviceLostError(
                f"this tensor was kept on a '{self.driver}' device that was lost since: its "
                f"contents are gone; compute it again")

    @property
    def shape(self) -> torch.Size:
        return torch.Size(self.view.shape)

    def dim(self) -> int:
        return len(self.view.shape)

    def cpu(self) -> torch.Tensor:
        """Copy to a host torch tensor (of ``dtype``, also when the device holds it widened)."""
        import iree.runtime as rt

        self._check_alive()
        device = open_device(self.driver)
        try:
            t = Executable._to_torch(rt, device, self.view)
        except Exception as e:
            if not device_lost(e):
                raise
            forget_device(self.driver, device)
            raise DeviceLostError(
                f"the '{self.driver}' device was lost: this tensor's contents are gone; the next "
                f"call opens a fresh device. {e}") from e
        if t.dtype != self.dtype and t.dtype.itemsize > self.dtype.itemsize:
            return t.to(self.dtype)  # stored 32-bit by `widen-narrow-io`: exact values
        if t.dtype != self.dtype and t.dtype.itemsize == self.dtype.itemsize \
                and not t.dtype.is_floating_point and not self.dtype.is_floating_point:
            return t.view(self.dtype)  # signless integers: IREE's int8 is the caller's uint8
        return t

    to_torch = cpu

    def numpy(self) -> np.ndarray:
        return self.cpu().numpy()

    @staticmethod
    def from_torch(tensor: torch.Tensor, driver: str) -> "DeviceTensor":
        """Upload a host tensor to the device of ``driver``."""
        import iree.runtime as rt

        return DeviceTensor(upload(rt, open_device(driver), tensor), driver, tensor.dtype)

    def __repr__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"DeviceTensor([{dims}], {str(self.dtype).removeprefix('torch.')}, on {self.driver})"


def upload(rt: Any, device: Any, tensor: torch.Tensor,
           widen: dict[torch.dtype, torch.dtype] | None = None) -> Any:
    """A torch tensor copied into a buffer view on ``device`` (as its wide dtype where
    ``widen`` names one, see `wide_dtypes`)."""
    hal = _hal(rt)
    t = tensor.detach().contiguous()
    if t.device.type != "cpu":
        t = t.cpu()
    if widen and t.dtype in widen:
        t = t.to(widen[t.dtype])
    arr = t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()
    return device.allocator.allocate_buffer_copy(
        memory_type=hal.memory, allowed_usage=hal.usage, device=device, buffer=arr,
        element_type=hal.element_types[t.dtype])


def _torch_dtype(rt: Any, element_type: Any) -> torch.dtype:
    if element_type == rt.HalElementType.BFLOAT_16:
        return torch.bfloat16
    if element_type == rt.HalElementType.BOOL_8:
        return torch.bool
    return _NP_TO_TORCH[np.dtype(rt.HalElementType.map_to_dtype(element_type))]


def invoke_resident(
    executable: Executable, values: list["torch.Tensor | DeviceTensor | int"], n_results: int,
    result_dtypes: list[torch.dtype] | None = None,
) -> list[DeviceTensor]:
    """Call with host or device tensors; the results stay on the device. ``result_dtypes``:
    what the results hold for the caller, when the program returns some widened."""
    rt, device, context, fn, storage = executable.loaded
    args = rt.VmVariantList(len(values))
    widen = executable.widen
    for v in values:
        if type(v) is int:  # a dynamic size (ScalarSpec)
            args.push_int(v)
        elif isinstance(v, DeviceTensor):
            v._check_alive()
            stored, want = _torch_dtype(rt, v.view.element_type), widen.get(v.dtype, v.dtype)
            if v.driver != executable.driver or stored.itemsize != want.itemsize \
                    or stored.is_floating_point != want.is_floating_point:
                # another device, or stored at a width this program does not take: via the host
                args.push_ref(upload(rt, device, v.cpu(), widen))
            else:
                args.push_ref(v.view)
        else:
            args.push_ref(upload(rt, device, v, widen))
    results = rt.VmVariantList(n_results)
    try:
        executable.call(context, fn, args, results, storage)
    except Exception as e:
        if device_lost(e):  # not retried: device inputs of this call may be what was lost
            executable.forget_lost_device()
            raise DeviceLostError(
                f"the '{executable.driver}' device was lost running this program: tensors kept "
                f"on it are gone; the next call opens a fresh device. {e}") from e
        raise LowerkitError(
            f"the compiled program failed at run time on '{executable.driver}': {e}") from e
    out = []
    for i in range(len(results)):
        bv = results.get_as_object(i, rt.HalBufferView)
        dtype = result_dtypes[i] if result_dtypes else _torch_dtype(rt, bv.element_type)
        out.append(DeviceTensor(bv, executable.driver, dtype))
    return out
