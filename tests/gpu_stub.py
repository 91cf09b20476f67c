"""The GPU libraries stubbed at their boundary (issue 25: the GPU path, testable without a GPU).

No GPU has ever run this course. This module stands in for the three libraries the course talks to on a GPU, so that
every GPU-only branch of ``gpucourse`` and ``grader`` can run on a CPU and fail there on a wrong name, a wrong
signature or a host/device mix-up:

- **CuPy** (``cupy``, ``cupy.cuda``, ``cupy.cuda.runtime``): arrays backed by NumPy that refuse implicit conversion
  (``np.asarray(a)`` raises as in CuPy; ``.get()`` copies back) and NumPy arrays as operands; streams, events and
  kernels on a *virtual device clock* (each stream a queue of work with durations, events timestamps on it,
  ``get_elapsed_time`` the difference, refused before the events completed — as ``cudaEventElapsedTime`` returns
  ``cudaErrorNotReady``); pinned host memory with a real address, ``memcpyAsync`` that really copies between known
  host and device buffers; ``RawKernel``/``RawModule`` for the course's own kernels (spin, lead, empty, raise_flag).
  Signatures checked against cupy/cupy at 6b6d9563 (2026-08-20): ``cupy/cuda/stream.pyx`` (Event, Stream,
  get_current_stream, get_elapsed_time), ``cupy/cuda/device.pyx`` (Device, attributes from ``cudaDevAttr*`` names
  without the prefix), ``cupy/cuda/graph.pyx`` (Graph.launch/upload), ``cupy/cuda/pinned_memory.pyx``
  (alloc_pinned_memory, PinnedMemoryPointer.ptr/size()/buffer protocol), ``cupy/cuda/memory.pyx`` (MemoryPointer),
  ``cupy/_core/raw.pyx`` (RawKernel, RawModule), ``cupy/_core/core.pyx`` (ndarray.get/set/fill/__array__/
  __array_ufunc__/__array_function__) and ``cupy_backends/cuda/api/runtime.pyx`` (getDeviceProperties' keys,
  memGetInfo, memcpyAsync, the memcpy kinds of ``runtime.pxd``).
- **numba-cuda** (installed: 0.30.4): the real ``numba.cuda.jit`` and the real launch configuration
  (``kernel[grid, block, stream, sharedmem]``, which itself raises numba-cuda's ``NumbaPerformanceWarning`` for a
  small grid); only ``CUDADispatcher.call`` — compile and launch, the part that needs a driver — is replaced: the
  kernel runs on the course's SIMT executor (``gpucourse.simt.run``) on the device arrays' memory. Host (NumPy)
  arguments raise numba-cuda's own implicit-copy warning (``cudadrv/devicearray.py``) and are copied back.
- **JAX**: ``jax.devices("gpu")``/``("cuda")`` map to the CPU device (the course reads attributes of it or places
  arrays on it; a fake device object would fail ``SingleDeviceSharding``).

The fixture :func:`gpu_backend` installs the three and makes ``gpucourse.backend.get_backend()`` a GPU backend,
built by the course's own ``select_backend("gpu")`` from the stubbed CuPy's device discovery.
"""

from __future__ import annotations

import ctypes
import re
import sys
import threading
import types
import warnings
import weakref
from typing import Any

import numpy as np
import pytest
from numpy.lib.mixins import NDArrayOperatorsMixin

# -- the device: an H100 SXM as cudaGetDeviceProperties / cudaDeviceGetAttribute report it ------------------------

DEVICE_NAME = b"NVIDIA H100 80GB HBM3"  # bytes, as runtime.getDeviceProperties returns 'name'
CLOCK_KHZ = 1_980_000
SMS = 132
L2_BYTES = 50 * 2**20
TOTAL_MEM = 85_031_714_816
SMEM_PER_SM = 233_472  # 228 KiB
SMEM_OPTIN = 232_448  # 227 KiB
SMEM_DEFAULT = 48 * 1024  # a launch above this needs max_dynamic_shared_size_bytes (cudaFuncSetAttribute)
HBM_BYTES_PER_MS = 3.0e9  # 3 TB/s, in bytes per ms of the virtual clock
FLOPS_PER_MS = 50e9  # 50 TFLOP/s
COPY_BYTES_PER_MS = 25e6  # 25 GB/s over PCIe
LAUNCH_MS = 0.002  # an empty kernel's time on the device

PROPS = {
    "name": DEVICE_NAME, "totalGlobalMem": TOTAL_MEM, "sharedMemPerBlock": SMEM_DEFAULT, "regsPerBlock": 65536,
    "warpSize": 32, "maxThreadsPerBlock": 1024, "maxThreadsDim": (1024, 1024, 64),
    "maxGridSize": (2**31 - 1, 65535, 65535), "clockRate": CLOCK_KHZ, "totalConstMem": 65536, "major": 9, "minor": 0,
    "multiProcessorCount": SMS, "memoryClockRate": 2_619_000, "memoryBusWidth": 5120, "l2CacheSize": L2_BYTES,
    "maxThreadsPerMultiProcessor": 2048, "sharedMemPerMultiprocessor": SMEM_PER_SM,
    "sharedMemPerBlockOptin": SMEM_OPTIN, "concurrentKernels": 1,
}
ATTRIBUTES = {  # Device(i).attributes: cudaDevAttr* without the prefix (cupy/cuda/device.pyx _get_attributes)
    "ClockRate": CLOCK_KHZ, "MultiProcessorCount": SMS, "MaxSharedMemoryPerMultiprocessor": SMEM_PER_SM,
    "MaxSharedMemoryPerBlockOptin": SMEM_OPTIN, "MaxSharedMemoryPerBlock": SMEM_DEFAULT, "WarpSize": 32,
    "MaxThreadsPerBlock": 1024, "L2CacheSize": L2_BYTES, "ComputeCapabilityMajor": 9, "ComputeCapabilityMinor": 0,
    "MaxThreadsPerMultiProcessor": 2048, "MemoryClockRate": 2_619_000, "GlobalMemoryBusWidth": 5120,
}


class CUDARuntimeError(RuntimeError):
    """cupy_backends.cuda.api.runtime.CUDARuntimeError (``status`` and a cudaError name in the message)."""

    def __init__(self, status: int, name: str):
        self.status = status
        super().__init__(f"{name}: {name}")


# -- the virtual device: streams are queues on one clock (ms) ------------------------------------------------------

class _State(threading.local):
    pass


_STATE = _State()
_ALL_STREAMS: "weakref.WeakValueDictionary[int, Stream]" = weakref.WeakValueDictionary()
_DEVICE_ARRAYS: "weakref.WeakValueDictionary[int, ndarray]" = weakref.WeakValueDictionary()
_PINNED: "weakref.WeakSet[PinnedMemoryPointer]" = weakref.WeakSet()
_NEXT_HANDLE = [0x7000]
NOW = [0.0]  # the device time the host has waited for (ms): an idle stream's next work starts no earlier
LOG: list = []  # what reached the device, in order: ("kernel", name, grid, block, shared_mem, stream ptr), ...


def _handle() -> int:
    _NEXT_HANDLE[0] += 0x10
    return _NEXT_HANDLE[0]


def _stack() -> list:
    if not hasattr(_STATE, "streams"):
        _STATE.streams = []
    return _STATE.streams


def _enqueue(stream: "Stream", ms: float, what: tuple) -> None:
    """Queue ``ms`` of work on ``stream``: it starts when the stream reaches it (legacy default-stream rules: the null
    stream waits for every blocking stream, a blocking stream for the null stream)."""
    if stream._capture is not None:
        stream._capture.append((ms, what))
        return
    start = max(stream._t, NOW[0])
    null = Stream.null
    if stream is null:
        start = max([start] + [s._t for s in _ALL_STREAMS.values() if not s.non_blocking])
    elif not stream.non_blocking:
        start = max(start, null._t)
    stream._t = start + ms
    stream._seq += 1
    LOG.append(what)


def _charge(nbytes: float = 0.0, flops: float = 0.0) -> None:
    """An array operation on the current stream: one launch, its bytes at HBM speed, its FLOPs at the peak."""
    _enqueue(get_current_stream(), LAUNCH_MS + nbytes / HBM_BYTES_PER_MS + flops / FLOPS_PER_MS, ("array op",))


# -- cupy.cuda.Stream, Event, Graph (cupy/cuda/stream.pyx, graph.pyx) ---------------------------------------------

class Stream:
    """cupy.cuda.Stream(null=False, non_blocking=False, ptds=False, priority=None)."""

    null: "Stream" = None  # type: ignore[assignment]
    ptds: "Stream" = None  # type: ignore[assignment]

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False, priority: Any = None):
        self.ptr = 0 if null else _handle()
        self.device_id = -1 if (null or ptds) else 0
        self.non_blocking = bool(non_blocking) and not null
        self._t = 0.0
        self._seq = 0
        self._synced = 0
        self._capture: list | None = None
        _ALL_STREAMS[id(self)] = self

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self) -> int:
        return self.ptr

    def __enter__(self) -> "Stream":
        _stack().append(self)
        return self

    def __exit__(self, *args: Any) -> None:
        _stack().pop()

    def use(self) -> "Stream":
        st = _stack()
        st[:] = [self]
        return self

    @property
    def done(self) -> bool:
        return self._synced >= self._seq

    def synchronize(self) -> None:
        self._synced = self._seq
        NOW[0] = max(NOW[0], self._t)

    def record(self, event: "Event | None" = None) -> "Event":
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        if event._stream is None:
            return  # cudaStreamWaitEvent on a never-recorded event: completes at once
        self._t = max(self._t, event._t)

    def begin_capture(self, mode: Any = None) -> None:
        if self.ptr == 0:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        self._capture = []

    def end_capture(self) -> "Graph":
        if self._capture is None:
            raise CUDARuntimeError(5, "cudaErrorIllegalState")
        graph, self._capture = Graph(self._capture), None
        return graph

    def is_capturing(self) -> bool:
        return self._capture is not None

    @property
    def is_non_blocking(self) -> bool:
        return self.non_blocking

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (device {self.device_id})>"


def _new_null_streams() -> None:
    Stream.null = Stream(null=True)
    Stream.ptds = Stream(ptds=True)
    Stream.ptds.non_blocking = False


_new_null_streams()


def get_current_stream(device_id: int = -1) -> Stream:
    """cupy.cuda.get_current_stream(int device_id=-1): the innermost ``with stream:``, else the null stream."""
    st = _stack()
    return st[-1] if st else Stream.null


class Event:
    """cupy.cuda.Event(block=False, disable_timing=False, interprocess=False)."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        self.ptr = _handle()
        self.disable_timing = disable_timing
        self._stream: Stream | None = None
        self._seq = 0
        self._t = 0.0

    @property
    def done(self) -> bool:
        return self._stream is None or self._stream._synced >= self._seq

    def record(self, stream: Stream | None = None) -> None:
        stream = stream if stream is not None else get_current_stream()
        if not isinstance(stream, Stream):
            raise AttributeError(f"{type(stream).__name__!r} object has no attribute 'ptr'")
        if stream._capture is not None:
            raise CUDARuntimeError(900, "cudaErrorStreamCaptureUnsupported")
        _enqueue(stream, 0.0, ("event", self.ptr, stream.ptr))
        self._stream, self._seq, self._t = stream, stream._seq, stream._t

    def synchronize(self) -> None:
        if self._stream is not None:
            self._stream._synced = max(self._stream._synced, self._seq)
            NOW[0] = max(NOW[0], self._t)


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """cupy.cuda.get_elapsed_time(start_event, end_event) -> ms; cudaEventElapsedTime's errors."""
    for ev in (start_event, end_event):
        if not isinstance(ev, Event):
            raise AttributeError(f"{type(ev).__name__!r} object has no attribute 'ptr'")
        if ev._stream is None or ev.disable_timing:
            raise CUDARuntimeError(400, "cudaErrorInvalidResourceHandle")
        if not ev.done:
            raise CUDARuntimeError(600, "cudaErrorNotReady")
    return float(end_event._t - start_event._t)


class Graph:
    """cupy.cuda.graph.Graph: made by Stream.end_capture only."""

    def __init__(self, nodes: list):
        self._nodes = nodes

    def launch(self, stream: Stream | None = None) -> None:
        s = stream if stream is not None else get_current_stream()
        total = sum(ms for ms, _ in self._nodes) * 0.5  # replayed launches cost the device less
        _enqueue(s, total, ("graph", len(self._nodes), s.ptr))

    def upload(self, stream: Stream | None = None) -> None:
        pass


# -- memory: device arrays, pinned host memory, cudaMemcpyAsync ----------------------------------------------------

class MemoryPointer:
    """cupy.cuda.MemoryPointer: ``ptr`` and the copies between device memory."""

    def __init__(self, owner: "ndarray"):
        self._owner = owner
        self.ptr = int(owner._a.__array_interface__["data"][0])
        self.device_id = 0

    def copy_from_device(self, src: "MemoryPointer", size: int) -> None:
        if not isinstance(src, MemoryPointer):
            raise TypeError(f"Argument 'src' has incorrect type (expected cupy.cuda.memory.MemoryPointer, got "
                            f"{type(src).__name__})")
        ctypes.memmove(self.ptr, src.ptr, int(size))
        _charge(2 * size)

    def copy_from_host(self, mem: Any, size: int) -> None:
        ctypes.memmove(self.ptr, int(getattr(mem, "value", mem) or 0), int(size))
        _enqueue(get_current_stream(), size / COPY_BYTES_PER_MS, ("h2d", size))

    def copy_to_host(self, mem: Any, size: int) -> None:
        ctypes.memmove(int(getattr(mem, "value", mem) or 0), self.ptr, int(size))
        _enqueue(get_current_stream(), size / COPY_BYTES_PER_MS, ("d2h", size))


class PinnedMemoryPointer(bytearray):
    """cupy.cuda.PinnedMemoryPointer: page-locked host memory; ``ptr``, ``size()``, the buffer protocol."""

    def __init__(self, size: int):
        super().__init__(int(size))
        self.mem = self
        self.ptr = ctypes.addressof((ctypes.c_char * max(1, len(self))).from_buffer(self)) if len(self) else 0
        _PINNED.add(self)

    def __hash__(self) -> int:  # bytearray is unhashable; WeakSet needs a hash
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def size(self) -> int:
        return len(self)

    def __int__(self) -> int:
        return self.ptr


def alloc_pinned_memory(size: int) -> PinnedMemoryPointer:
    """cupy.cuda.alloc_pinned_memory(size_t size)."""
    return PinnedMemoryPointer(size)


def _where(ptr: int, n: int) -> str:
    for a in list(_DEVICE_ARRAYS.values()):
        lo, hi = np.lib.array_utils.byte_bounds(a._a)
        if lo <= ptr and ptr + n <= hi:
            return "device"
    for p in list(_PINNED):
        if p.ptr <= ptr and ptr + n <= p.ptr + len(p):
            return "pinned"
    return "unknown"


def _memcpy(dst: int, src: int, size: int, kind: int) -> tuple[str, str]:
    for name, v in (("dst", dst), ("src", src), ("size", size), ("kind", kind)):
        if not isinstance(v, (int, np.integer)):
            raise TypeError(f"an integer is required for {name}, got {type(v).__name__}")
    src_at, dst_at = _where(int(src), int(size)), _where(int(dst), int(size))
    need = {1: ("host", "device"), 2: ("device", "host"), 3: ("device", "device")}.get(int(kind))
    if need is not None:
        for side, at, want in (("src", src_at, need[0]), ("dst", dst_at, need[1])):
            if (want == "device") != (at == "device"):
                raise CUDARuntimeError(1, f"cudaErrorInvalidValue (memcpy kind {kind}: {side} is {at} memory, "
                                          f"expected {want} memory)")
    got = (src_at, dst_at)
    ctypes.memmove(int(dst), int(src), int(size))
    return got


def _stream_of(ptr: int) -> Stream:
    for s in list(_ALL_STREAMS.values()):
        if s.ptr == ptr:
            return s
    raise CUDARuntimeError(400, "cudaErrorInvalidResourceHandle (no such stream)")


# -- cupy.cuda.runtime ---------------------------------------------------------------------------------------------

def _runtime_module() -> types.ModuleType:
    rt = types.ModuleType("cupy_backends.cuda.api.runtime")
    rt.CUDARuntimeError = CUDARuntimeError
    rt.memcpyHostToHost, rt.memcpyHostToDevice, rt.memcpyDeviceToHost = 0, 1, 2  # runtime.pxd
    rt.memcpyDeviceToDevice, rt.memcpyDefault = 3, 4
    rt.streamDefault, rt.streamNonBlocking = 0, 1
    rt.getDeviceCount = lambda: 1
    rt.getDevice = lambda: 0

    def getDeviceProperties(device: int) -> dict:  # cpdef getDeviceProperties(int device)
        if int(device) != 0:
            raise CUDARuntimeError(101, "cudaErrorInvalidDevice")
        return dict(PROPS)

    def deviceGetAttribute(attrib: int, device: int) -> int:
        raise CUDARuntimeError(1, "cudaErrorInvalidValue")

    def memGetInfo() -> tuple[int, int]:  # cpdef memGetInfo(): (free, total)
        used = sum(a._a.nbytes for a in list(_DEVICE_ARRAYS.values()) if a._a.base is None)
        return TOTAL_MEM - used, TOTAL_MEM

    def memcpyAsync(dst: int, src: int, size: int, kind: int, stream: int) -> None:
        # cpdef memcpyAsync(intptr_t dst, intptr_t src, size_t size, int kind, intptr_t stream)
        if not isinstance(stream, (int, np.integer)):
            raise TypeError(f"an integer is required for stream (a Stream's .ptr), got {type(stream).__name__}")
        s = _stream_of(int(stream))
        src_kind, dst_kind = _memcpy(dst, src, size, kind)
        engine = "h2d" if dst_kind == "device" and src_kind != "device" else "d2h"
        _enqueue(s, int(size) / COPY_BYTES_PER_MS, (engine, int(size), s.ptr))

    def memcpy(dst: int, src: int, size: int, kind: int) -> None:
        _memcpy(dst, src, size, kind)
        _enqueue(Stream.null, int(size) / COPY_BYTES_PER_MS, ("memcpy", int(size)))

    def deviceSynchronize() -> None:
        for s in list(_ALL_STREAMS.values()):
            s.synchronize()

    rt.getDeviceProperties, rt.deviceGetAttribute, rt.memGetInfo = getDeviceProperties, deviceGetAttribute, memGetInfo
    rt.memcpyAsync, rt.memcpy, rt.deviceSynchronize = memcpyAsync, memcpy, deviceSynchronize
    rt.driverGetVersion = lambda: 12080
    rt.runtimeGetVersion = lambda: 12060
    return rt


class Device:
    """cupy.cuda.Device(device=None): ``id``, ``attributes``, ``synchronize()``, ``compute_capability``."""

    def __init__(self, device: Any = None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise CUDARuntimeError(101, "cudaErrorInvalidDevice")

    @property
    def attributes(self) -> dict:
        return dict(ATTRIBUTES)

    @property
    def compute_capability(self) -> str:
        return "90"

    @property
    def mem_info(self) -> tuple[int, int]:
        return cuda.runtime.memGetInfo()

    def synchronize(self) -> None:
        cuda.runtime.deviceSynchronize()

    def use(self) -> None:
        pass

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *args: Any) -> None:
        pass

    def __int__(self) -> int:
        return self.id


# -- cupy.RawKernel / RawModule: the course's own kernels, by what their source says ------------------------------

def _scalar_arg(a: Any, what: str) -> Any:
    if isinstance(a, np.ndarray):
        raise TypeError(f"Unsupported type <class 'numpy.ndarray'> ({what}: a host array; copy it with cupy.asarray)")
    if not isinstance(a, (bool, int, float, complex, np.generic, ndarray)) and \
            not hasattr(a, "__cuda_array_interface__"):
        raise TypeError(f"Unsupported type {type(a)} ({what})")
    return a


def _dim(d: Any, what: str) -> tuple[int, ...]:
    if isinstance(d, (int, np.integer)):
        return (int(d),)
    if not isinstance(d, tuple) or not 1 <= len(d) <= 3 or not all(isinstance(v, (int, np.integer)) for v in d):
        raise TypeError(f"{what} must be an int or a tuple of 1-3 ints, got {d!r}")
    return tuple(int(v) for v in d)


class RawKernel:
    """cupy.RawKernel(code, name, options=(), backend='nvrtc', *, translate_cucomplex=False,
    enable_cooperative_groups=False, jitify=None); ``kernel(grid, block, args, *, shared_mem=0, stream=None)``."""

    def __init__(self, code: str, name: str, options: tuple = (), backend: str = "nvrtc", *,
                 translate_cucomplex: bool = False, enable_cooperative_groups: bool = False, jitify: Any = None):
        if not isinstance(code, str) or not isinstance(name, str):
            raise TypeError("code and name must be str")
        m = re.search(r'extern\s+"C"\s+__global__\s+void\s+' + re.escape(name) + r"\s*\(([^)]*)\)", code)
        if m is None:  # nvrtc compiles, then cuModuleGetFunction fails
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name!r} in the source)")
        self.code, self.name, self.options, self.backend = code, name, options, backend
        self.params = [p.strip() for p in m.group(1).split(",") if p.strip()]
        self._max_dynamic = 0
        self.__name__ = name

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self._max_dynamic

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, nbytes: int) -> None:
        if int(nbytes) > SMEM_OPTIN:
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE: max_dynamic_shared_size_bytes above the device's opt-in "
                               "limit")
        self._max_dynamic = int(nbytes)

    def __call__(self, grid: Any, block: Any, args: tuple, *, shared_mem: int = 0, stream: Any = None,
                 enable_cooperative_groups: bool = False) -> None:
        g, b = _dim(grid, "grid"), _dim(block, "block")
        if not isinstance(args, tuple):
            raise TypeError(f"args must be a tuple, got {type(args).__name__}")
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments, {len(args)} given")
        args = tuple(_scalar_arg(a, f"{self.name} argument {i}") for i, a in enumerate(args))
        if int(np.prod(b)) > 1024:
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE: more than 1024 threads per block")
        if shared_mem > max(SMEM_DEFAULT, self._max_dynamic):
            raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: {shared_mem} bytes of dynamic shared memory without "
                               "max_dynamic_shared_size_bytes set that high")
        s = stream if stream is not None else get_current_stream()
        ms = LAUNCH_MS
        if "clock64()" in self.code:  # a spin: its first argument is the cycles to spin
            ms += int(args[0]) / CLOCK_KHZ
        if self.name == "raise_flag":  # *flag = 1 in (mapped) pinned host memory
            ptr = int(args[0])
            if _where(ptr, 4) != "pinned":
                raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: the flag is not in mapped pinned memory")
            ctypes.c_int32.from_address(ptr).value = 1
        elif self.name not in ("spin", "lead", "empty"):
            raise NotImplementedError(f"the stub knows what spin, lead, empty and raise_flag do, not {self.name}")
        _enqueue(s, ms, ("kernel", self.name, g, b, int(shared_mem), s.ptr))


class RawModule:
    """cupy.RawModule(*, code=None, path=None, options=(), backend='nvrtc', translate_cucomplex=False,
    enable_cooperative_groups=False, name_expressions=None, jitify=None); ``get_function(name)``."""

    def __init__(self, *, code: str | None = None, path: str | None = None, options: tuple = (),
                 backend: str = "nvrtc", translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 name_expressions: Any = None, jitify: Any = None):
        if (code is None) == (path is None):
            raise TypeError("One of code and path keyword arguments must be given.")
        self.code = code if code is not None else open(path).read()

    def get_function(self, name: str) -> RawKernel:
        return RawKernel(self.code, name)


# -- cupy.ndarray: NumPy inside, CuPy's refusals outside -----------------------------------------------------------

def _refuse_host(x: Any, what: str) -> None:
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type <class 'numpy.ndarray'> ({what}: CuPy does not take host arrays; "
                        "cupy.asarray(x) first)")


def _unwrap(x: Any, what: str) -> Any:
    if isinstance(x, ndarray):
        return x._a
    _refuse_host(x, what)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, what) for v in x)
    return x


def _wrap(r: Any) -> Any:
    if isinstance(r, np.ndarray):
        return ndarray._of(r)
    if isinstance(r, np.generic):  # CuPy's reductions return 0-d device arrays, not host scalars
        return ndarray._of(np.asarray(r))
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    return r


def _bytes_of(values: Any) -> int:
    return sum(v._a.nbytes for v in values if isinstance(v, ndarray))


class ndarray(NDArrayOperatorsMixin):
    """cupy.ndarray, backed by a NumPy array that stands for device memory."""

    __array_priority__ = 100

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None, order: str = "C"):
        self._a = np.empty(shape, dtype=dtype, order=order)
        _DEVICE_ARRAYS[id(self)] = self

    @classmethod
    def _of(cls, a: np.ndarray) -> "ndarray":
        self = cls.__new__(cls)
        self._a = a
        _DEVICE_ARRAYS[id(self)] = self
        return self

    # attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: ndarray._of(self._a.T))
    flags = property(lambda self: self._a.flags)
    device = property(lambda self: Device(0))

    @property
    def data(self) -> MemoryPointer:
        return MemoryPointer(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (int(a.__array_interface__["data"][0]), False),
                "version": 3, "strides": None if a.flags.c_contiguous else a.strides, "descr": a.dtype.descr,
                "stream": 1}

    # conversions: explicit only (cupy/_core/core.pyx __array__)
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def get(self, stream: Any = None, order: str = "C", out: np.ndarray | None = None,
            blocking: bool = True) -> np.ndarray:
        """cpdef get(self, stream=None, order='C', out=None, blocking=True)"""
        s = stream if stream is not None else get_current_stream()
        _enqueue(s, self._a.nbytes / COPY_BYTES_PER_MS, ("d2h", self._a.nbytes))
        if blocking:  # cudaMemcpy to pageable memory: the host waits for the stream
            s.synchronize()
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
            if out.shape != self._a.shape or out.dtype != self._a.dtype:
                raise ValueError(f"Shape or dtype mismatch: {out.shape} {out.dtype} vs {self.shape} {self.dtype}")
            np.copyto(out, self._a)
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """cpdef set(self, arr, stream=None)"""
        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        s = stream if stream is not None else get_current_stream()
        _enqueue(s, arr.nbytes / COPY_BYTES_PER_MS, ("h2d", arr.nbytes))
        np.copyto(self._a, arr)

    def item(self) -> Any:
        return self._a.item()

    def tolist(self) -> Any:
        return self._a.tolist()

    def __int__(self) -> int:
        return int(self.get())

    def __float__(self) -> float:
        return float(self.get())

    def __bool__(self) -> bool:
        return bool(self.get())

    def __index__(self) -> int:
        return int(self.get())

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return "stub-cupy " + repr(self._a)

    def __getitem__(self, index: Any) -> Any:
        return _wrap(self._a[_unwrap(index, "an index")])

    def __setitem__(self, index: Any, value: Any) -> None:
        # CuPy copies a host array assigned into device memory (an implicit host-to-device copy that it allows)
        self._a[_unwrap(index, "an index")] = value._a if isinstance(value, ndarray) else value
        _charge(self._a.nbytes)

    # what runs on the device
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o, f"{ufunc.__name__}'s out") for o in out)
            if not all(isinstance(o, ndarray) for o in out):
                raise TypeError(f"{ufunc.__name__}: out must be a cupy.ndarray")
        raw = [_unwrap(x, f"operand of {ufunc.__name__}") for x in inputs]
        result = getattr(ufunc, method)(*raw, **kwargs)
        _charge(_bytes_of(inputs) + _bytes_of(out or ()) + np.asarray(result).nbytes)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raw_args = _unwrap(args, f"argument of {func.__name__}")
        raw_kwargs = {k: _unwrap(v, f"argument of {func.__name__}") for k, v in kwargs.items()}
        result = func(*raw_args, **raw_kwargs)
        _charge(2 * self.nbytes)
        return _wrap(result)

    def __matmul__(self, other: Any) -> "ndarray":
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> "ndarray":
        return matmul(other, self)

    # methods that run a kernel
    def fill(self, value: Any) -> None:
        self._a.fill(value)
        _charge(self._a.nbytes)

    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> "ndarray":
        return ndarray._of(self._a.reshape(*shape, order=order))

    def ravel(self, order: str = "C") -> "ndarray":
        return ndarray._of(self._a.ravel(order))

    def view(self, dtype: Any = None) -> "ndarray":
        return ndarray._of(self._a.view(dtype) if dtype is not None else self._a.view())

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None,
               copy: bool = True) -> "ndarray":
        _charge(2 * self.nbytes)
        return ndarray._of(self._a.astype(dtype, order=order, copy=copy))

    def copy(self, order: str = "C") -> "ndarray":
        _charge(2 * self.nbytes)
        return ndarray._of(self._a.copy(order))

    def _reduce(name: str):  # noqa: N805
        def method(self: "ndarray", *args: Any, **kwargs: Any) -> Any:
            _charge(self.nbytes)
            return _wrap(getattr(self._a, name)(*_unwrap(args, name), **kwargs))

        method.__name__ = name
        return method

    sum, max, min, mean = _reduce("sum"), _reduce("max"), _reduce("min"), _reduce("mean")
    argmax, argmin, prod = _reduce("argmax"), _reduce("argmin"), _reduce("prod")
    any, all = _reduce("any"), _reduce("all")
    del _reduce


ndarray.__module__ = "cupy._core.core"  # type(a).__module__ of a real cupy array


def matmul(a: Any, b: Any, out: Any = None) -> ndarray:
    x, y = _unwrap(a, "matmul operand"), _unwrap(b, "matmul operand")
    r = np.matmul(x, y)
    k = x.shape[-1] if np.ndim(x) else 1
    _charge(_bytes_of((a, b)) + r.nbytes, 2.0 * np.size(r) * k)
    if out is not None:
        out._a[...] = r
        return out
    return _wrap(r)


def asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> ndarray:
    """cupy.asarray(a, dtype=None, order=None, *, blocking=False): host data is copied to the device."""
    if isinstance(a, ndarray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    host = np.array(a, dtype=dtype, order=order or "K", copy=True)
    _enqueue(get_current_stream(), host.nbytes / COPY_BYTES_PER_MS, ("h2d", host.nbytes))
    return ndarray._of(host)


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False, ndmin: int = 0, *,
          blocking: bool = False) -> ndarray:
    if isinstance(obj, ndarray):
        return ndarray._of(np.array(obj._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    host = np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin)
    _enqueue(get_current_stream(), host.nbytes / COPY_BYTES_PER_MS, ("h2d", host.nbytes))
    return ndarray._of(host)


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> np.ndarray:
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return np.asarray(a, order=order)


def get_array_module(*args: Any) -> types.ModuleType:
    return cupy if any(isinstance(a, ndarray) for a in args) else np


def _creation(fn: Any):
    def make(*args: Any, **kwargs: Any) -> ndarray:
        raw = fn(*[a._a if isinstance(a, ndarray) else a for a in args], **kwargs)
        _charge(raw.nbytes)
        return ndarray._of(raw)

    make.__name__ = fn.__name__
    return make


def _module_function(name: str, fn: Any):
    """A NumPy function run "on the device": CuPy arrays in (host arrays refused), CuPy arrays out."""
    def call(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        raw = _unwrap(args, f"argument of cupy.{name}")
        kw = {k: _unwrap(v, f"argument of cupy.{name}") for k, v in kwargs.items()}
        result = fn(*raw, **kw)
        _charge(_bytes_of(args) + (result.nbytes if isinstance(result, np.ndarray) else 0))
        return out if out is not None else _wrap(result)

    call.__name__ = name
    return call


# -- the modules ---------------------------------------------------------------------------------------------------

cuda = types.ModuleType("cupy.cuda")
cuda.runtime = _runtime_module()
cuda.Stream, cuda.Event, cuda.Device, cuda.Graph = Stream, Event, Device, Graph
cuda.get_current_stream, cuda.get_elapsed_time = get_current_stream, get_elapsed_time
cuda.alloc_pinned_memory, cuda.PinnedMemoryPointer, cuda.MemoryPointer = alloc_pinned_memory, PinnedMemoryPointer, \
    MemoryPointer
cuda.is_available = lambda: True
cuda.get_device_id = lambda: 0

cupy = types.ModuleType("cupy")
cupy.__stub__ = True
cupy.__version__ = "13.6.0"
cupy.cuda, cupy.ndarray, cupy.RawKernel, cupy.RawModule = cuda, ndarray, RawKernel, RawModule
cupy.asarray, cupy.array, cupy.asnumpy, cupy.get_array_module, cupy.matmul = asarray, array, asnumpy, \
    get_array_module, matmul
for _n in ("empty", "zeros", "ones", "full", "arange", "linspace", "empty_like", "zeros_like", "ones_like",
           "full_like"):
    setattr(cupy, _n, _creation(getattr(np, _n)))
for _n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
           "complex64", "complex128", "bool_", "dtype", "newaxis", "pi", "inf", "nan", "e"):
    setattr(cupy, _n, getattr(np, _n))  # cupy's dtypes and constants are NumPy's own objects


def _cupy_getattr(name: str) -> Any:
    fn = getattr(np, name, None)
    if fn is None or name.startswith("_") or isinstance(fn, (type, types.ModuleType)):
        raise AttributeError(f"module 'cupy' (stub) has no attribute {name!r}")
    return _module_function(name, fn)


cupy.__getattr__ = _cupy_getattr
MODULES = {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.runtime": cuda.runtime,
           "cupy_backends.cuda.api.runtime": cuda.runtime}


def reset() -> None:
    """A fresh device: no queued work, no streams but the default ones, an empty launch log."""
    _ALL_STREAMS.clear()
    _stack().clear()
    _new_null_streams()
    LOG.clear()
    NOW[0] = 0.0


# -- numba-cuda: the real dispatcher and launch configuration, the launch itself on the SIMT executor ---------------

HOST_COPY_WARNING = "Host array used in CUDA kernel will incur copy overhead to/from device."  # devicearray.py


def _device_call(self: Any, args: tuple, launch_config: Any) -> None:
    """Stands for ``numba.cuda.dispatcher.CUDADispatcher.call(self, args, launch_config)`` (numba-cuda 0.30.4): compile
    and launch. Device arrays (``__cuda_array_interface__``: CuPy's) are used in place; host NumPy arrays are
    copied with numba-cuda's own warning; scalars pass; anything else is a typing error, as numba's."""
    from numba.cuda.core import config
    from numba.cuda.core.errors import NumbaPerformanceWarning

    from gpucourse import simt

    for a in args:
        if isinstance(a, np.ndarray):
            if config.CUDA_WARN_ON_IMPLICIT_COPY:
                warnings.warn(NumbaPerformanceWarning(HOST_COPY_WARNING))
        elif not (hasattr(a, "__cuda_array_interface__") or isinstance(a, (bool, int, float, complex, np.generic))):
            raise TypeError(f"numba-cuda cannot type argument {a!r} of type {type(a).__name__}")
    simt.run(self.py_func, launch_config.griddim, launch_config.blockdim, *args, sharedmem=launch_config.sharedmem,
             time_limit=30.0)
    stream = get_current_stream()
    _enqueue(stream, LAUNCH_MS, ("numba kernel", self.py_func.__name__, launch_config.griddim,
                                 launch_config.blockdim, launch_config.sharedmem, stream.ptr))


# -- the fixture ---------------------------------------------------------------------------------------------------

def install(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Put the stubs in place for one test and return the GPU backend ``get_backend()`` now gives."""
    import jax
    from numba.cuda import dispatcher

    from gpucourse import backend

    reset()
    for name, module in MODULES.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(dispatcher.CUDADispatcher, "call", _device_call)
    real_devices = jax.devices

    def devices(backend: Any = None) -> list:  # jax.devices(backend=None)
        if backend in ("gpu", "cuda"):
            return real_devices("cpu")  # the GPU mapped to the CPU device (see the module doc)
        return real_devices(backend)

    monkeypatch.setattr(jax, "devices", devices)
    be = backend.select_backend("gpu")  # the course's own device discovery, on the stubbed CuPy
    monkeypatch.setattr(backend, "_BACKEND", be)
    return be


@pytest.fixture
def gpu_backend(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The GPU backend on stubbed CuPy, numba-cuda launch and JAX GPU devices (see the module doc)."""
    with warnings.catch_warnings():
        be = install(monkeypatch)
    yield be
    reset()
