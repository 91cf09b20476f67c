"""``gpucourse.simt.cuda``: numba-cuda's API, executed by the course's instrumented executor.

One object plays both parts of ``numba.cuda``, as the real module does:

- on the host: ``@cuda.jit`` (with or without signatures, ``device=True``), launches ``kernel[grid,
  block]`` and ``kernel[grid, block, stream, sharedmem]``, ``to_device``, ``device_array(_like)``,
  ``copy_to_host``, ``synchronize``, streams and events (synchronous here);
- inside a kernel: ``threadIdx``/``blockIdx``/``blockDim``/``gridDim``, ``grid``, ``gridsize``,
  ``laneid``, ``warpsize``, ``shared``/``local``/``const`` arrays, every ``atomic``, ``syncthreads``
  and its ``_count/_and/_or`` forms, ``threadfence*``, the warp intrinsics (``shfl_*_sync``,
  ``all/any/eq/ballot_sync``, ``match_*_sync``, ``activemask``, ``lanemask_lt``, ``syncwarp``),
  ``cg.this_grid().sync()`` and the integer and float intrinsics (``popc``, ``brev``, ``clz``,
  ``ffs``, ``fma``, ``cbrt``).

A kernel written against it runs unchanged on a GPU with numba-cuda. Each launch leaves its
:class:`~gpucourse.simt.report.KernelReport` in ``kernel.last_report``. Anything else numba-cuda
offers raises :class:`~gpucourse.simt.errors.NotModelled`, which says so in words.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from . import state
from .state import running as _run
from .atomics import _Atomic
from .dims import FULL_MASK, WARP_SIZE, check_launch, dim3
from .errors import KernelError, NotModelled
from .host import DeviceArray, _Device, _Event, _Stream
from .launch import Launch, caller_site
from .memory import TracedArray
from .numbatypes import F32, I32, J64, U32, typed
from .numbatypes import _note as _note_fp64
from .values import SCALAR_TYPES, Uninit, as_dtype, cast, poisoned

if TYPE_CHECKING:
    from .report import KernelReport


def _host_only(what: str) -> None:
    """Refuse a host API call made by a kernel's thread: numba-cuda has none of it in a kernel."""
    run = state.CURRENT.run
    if run is not None and run.cur is not None:
        raise NotModelled(
            f"`cuda.{what}` inside a kernel",
            "numba-cuda has no host API in a kernel (no allocation, no stream or event, no"
            " synchronize): per-thread scratch is cuda.local.array, per-block cuda.shared.array",
        )


class OutsideKernel(RuntimeError, AttributeError):
    """``cuda.threadIdx`` (and friends) read outside a running kernel (an AttributeError too, so
    hasattr is False)."""


class _InKernel:
    """``cuda.threadIdx`` and friends: set per thread while a launch runs; outside one, a clear
    error."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj: Any, owner: Any) -> Any:
        if obj is None:
            return self
        raise OutsideKernel(f"cuda.{self.name} only has a value inside a running kernel")


# -- memory spaces ---------------------------------------------------------------------------------

class _Shared:
    @staticmethod
    def array(shape: Any, dtype: Any) -> TracedArray:
        """A block's shared array; ``shape`` 0 is the launch's dynamic shared memory (all such
        arrays alias it)."""
        return _run("shared.array").shared_array(shape, dtype, caller_site())


class _Local:
    @staticmethod
    def array(shape: Any, dtype: Any) -> TracedArray:
        """A thread's private array (registers or local memory); fresh elements are
        uninitialised."""
        return _run("local.array").local_array(shape, dtype, caller_site())


class _Const:
    @staticmethod
    def array_like(a: Any) -> TracedArray:
        """A read-only copy of a host array in constant memory."""
        return _run("const.array_like").const_array(a)


class _GridGroup:
    def sync(self) -> None:
        """Every thread of the grid waits here (a cooperative launch)."""
        _run("cg.this_grid().sync").grid_sync(caller_site())

    @property
    def size(self) -> int:
        run = _run("cg.this_grid().size")
        return run.n_threads


class _CooperativeGroups:
    @staticmethod
    def this_grid() -> _GridGroup:
        _run("cg.this_grid")
        return _GridGroup()


def _mask(mask: Any, what: str) -> int:
    if isinstance(mask, Uninit):
        mask.__int__()
        return FULL_MASK
    if isinstance(mask, (bool, np.bool_)) or not isinstance(mask, (int, np.integer)):
        raise TypeError(
            f"cuda.{what}: the mask must be an integer (numba-cuda: 'Mask type must be an"
            f" integer'), got {type(mask).__name__}"
        )
    return int(mask) & FULL_MASK


def _predicate(p: Any, what: str) -> Any:
    """numba-cuda types syncthreads_count/_and/_or on an integer predicate only (intrinsics.py:
    _syncthreads_predicate accepts types.Integer): a bool does not compile."""
    if isinstance(p, Uninit):
        return p
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
        raise TypeError(
            f"cuda.{what}: numba-cuda takes an integer predicate, got {type(p).__name__} (a kernel "
            f"passing a {type(p).__name__} does not compile for a GPU): write "
            f"cuda.{what}(1 if condition else 0)"
        )
    # its signature is int32(int32): a wider predicate is truncated (2**32 is false)
    return int(p) & 0xFFFFFFFF


def _vote(p: Any, what: str) -> Any:
    """Vote predicates: an integer or a bool (intrinsics.py: vote_sync_intrinsic)."""
    if not isinstance(p, (Uninit, bool, int, np.integer, np.bool_)):
        raise TypeError(
            f"cuda.{what}: the predicate must be an integer or a bool (numba-cuda), got "
            f"{type(p).__name__}"
        )
    return p


_SHFL_TYPES = (np.int32, np.int64, np.float32, np.float64, F32, J64)  # J64: a float64


def _shfl_value(v: Any, what: str) -> Any:
    """numba-cuda shuffles 32- and 64-bit ints and floats only (intrinsics.py:
    shfl_sync_intrinsic)."""
    if isinstance(v, Uninit) or isinstance(v, _SHFL_TYPES) or (type(v) in (int, float)):
        return v
    name = v.dtype.name if isinstance(v, np.generic) else type(v).__name__
    raise TypeError(
        f"cuda.{what}: numba-cuda shuffles int32, int64, float32 and float64 values only, got"
        f" {name} (\"shfl_sync only supports 32- and 64-bit ints and floats\"): convert it first,"
        " e.g. np.int32(x)"
    )


def _round_once(exact: Fraction, approx: float, dt: np.dtype) -> Any:
    """``exact`` rounded to nearest-even in ``dt`` (float32 or float64), once."""
    if exact == 0:
        return dt.type(approx)  # the sign of an exact zero as IEEE gives it
    try:
        r64 = float(exact)  # CPython rounds a Fraction correctly (nearest, ties to even)
    except OverflowError:
        return dt.type(math.inf if exact > 0 else -math.inf)
    if dt == np.float64:
        return np.float64(r64)
    with np.errstate(over="ignore"):
        r = np.float32(r64)
    if not np.isfinite(r):
        return r
    cands = (r, np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf)))
    return min(
        (v for v in cands if np.isfinite(v)),
        key=lambda v: (abs(Fraction(float(v)) - exact), int(np.float32(v).view(np.uint32)) & 1),
    )


def _int_bits(x: Any) -> tuple[int, int]:
    """(value as unsigned, bit width) of an integer as the GPU holds it (a Python int is an
    int64)."""
    if isinstance(x, Uninit):
        x.__int__()
        return 0, 32
    bits = x.dtype.itemsize * 8 if isinstance(x, np.integer) else 64
    return int(x) & ((1 << bits) - 1), bits


def _device_dtype(*xs: Any) -> np.dtype:
    for x in xs:
        if isinstance(x, (np.floating, F32)):
            return x.dtype
    return np.dtype(np.float64)


# -- kernels and device functions ------------------------------------------------------------------

def _wraps(obj: Any, py_func: types.FunctionType, signatures: Any, options: dict | None) -> None:
    """What a decorated function keeps of the function it wraps (as numba's dispatchers do)."""
    obj.py_func = obj.__wrapped__ = py_func
    obj.__name__, obj.__qualname__, obj.__doc__ = (
        py_func.__name__,
        py_func.__qualname__,
        py_func.__doc__,
    )
    obj.__module__ = py_func.__module__
    obj.signatures, obj.options = signatures, options or {}


class Kernel:
    """A ``@cuda.jit`` kernel: launch it as ``kernel[grid, block](*args)`` (or ``[grid, block,
    stream, nbytes]``)."""

    def __init__(
        self,
        py_func: types.FunctionType,
        cuda: "CudaAPI",
        signatures: Any = None,
        options: dict | None = None,
    ):
        _wraps(self, py_func, signatures, options)
        self.last_report = None
        self._cuda = cuda

    def __getitem__(self, config: Any) -> "_Configured":
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise ValueError(
                "a launch configuration is kernel[blocks, threads] or kernel[blocks, threads,"
                f" stream, shared_bytes], got {config!r}"
            )
        grid, block = config[0], config[1]
        stream = config[2] if len(config) > 2 else 0
        shared = config[3] if len(config) > 3 else 0
        return _Configured(self, grid, block, stream, int(shared))

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise ValueError(f"{self.__name__} is a kernel: launch it with a configuration, "
                         f"{self.__name__}[blocks, threads](...)")

    def forall(
        self, ntasks: int, tpb: int = 0, stream: Any = 0, sharedmem: int = 0
    ) -> "_Configured":
        tpb = tpb or 128
        return _Configured(self, max(1, math.ceil(ntasks / tpb)), tpb, stream, sharedmem)

    def launch(self, grid: Any, block: Any, *args: Any, sharedmem: int = 0, **options: Any) -> Any:
        """Run on the executor and return the report (``kernel[grid, block](*args)`` returns
        nothing, like numba)."""
        try:
            report = run(self, grid, block, *args, sharedmem=sharedmem, **options)
        except KernelError as exc:
            self.last_report = exc.report
            raise
        self.last_report = report
        return report

    def _inspect(self, *a: Any, **k: Any) -> Any:
        raise NotModelled(
            "inspecting a kernel's compiled code (inspect_asm, inspect_llvm, inspect_sass, ptx)",
            "numba-cuda prints it; without a GPU, gpucourse.toolchain compiles a kernel to PTX and"
            " SASS for sm_90",
        )

    inspect_asm = inspect_llvm = inspect_sass = inspect_types = _inspect

    def specialize(self, *args: Any) -> "Kernel":
        return self

    @property
    def definitions(self) -> dict:
        return {}

    def __repr__(self) -> str:
        return (
            f"<gpucourse.simt kernel {self.__name__} (run by the course's instrumented executor)>"
        )


class _Configured:
    def __init__(self, kernel: Kernel, grid: Any, block: Any, stream: Any, sharedmem: int):
        self.kernel, self.grid, self.block, self.stream, self.sharedmem = (
            kernel,
            grid,
            block,
            stream,
            sharedmem,
        )

    def __call__(self, *args: Any) -> None:
        self.kernel.launch(self.grid, self.block, *args, sharedmem=self.sharedmem)


class DeviceFunction:
    """A ``@cuda.jit(device=True)`` function: callable from kernels (and, as in numba's simulator,
    from Python)."""

    def __init__(
        self, py_func: types.FunctionType, signatures: Any = None, options: dict | None = None
    ):
        _wraps(self, py_func, signatures, options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        run = state.CURRENT.run
        if run is not None and run.cur is not None:
            return run.call_device(self, args, kwargs)
        return self.py_func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<gpucourse.simt device function {self.__name__}>"


# -- the module-like object ------------------------------------------------------------------------

class CudaAPI:
    """numba-cuda's ``cuda`` module, run by the executor (see the module docstring)."""

    warpsize = WARP_SIZE
    threadIdx = _InKernel("threadIdx")
    blockIdx = _InKernel("blockIdx")
    blockDim = _InKernel("blockDim")
    gridDim = _InKernel("gridDim")
    laneid = _InKernel("laneid")
    shared = _Shared()
    local = _Local()
    const = _Const()
    atomic = _Atomic()
    cg = _CooperativeGroups()
    DeviceNDArray = DeviceArray
    Kernel = Kernel
    DeviceFunction = DeviceFunction
    executor = "gpucourse.simt"

    def __init__(self) -> None:
        for name, t in SCALAR_TYPES.items():
            self.__dict__[name] = t
        self.__dict__["_dispatchers"] = {}

    # -- compiling ---------------------------------------------------------------------------------
    def jit(self, func_or_sig: Any = None, device: bool = False, **options: Any) -> Any:
        """``@cuda.jit``, ``@cuda.jit("void(float32[:])")``, ``@cuda.jit(device=True)``: as
        numba-cuda spells them."""
        def decorate(fn: Any, sigs: Any = None) -> Any:
            if isinstance(fn, (Kernel, DeviceFunction)):
                fn = fn.py_func
            if not isinstance(fn, types.FunctionType):
                raise TypeError(f"cuda.jit decorates a Python function, got {type(fn).__name__}")
            return DeviceFunction(fn, sigs, options) if device else Kernel(fn, self, sigs, options)

        if isinstance(func_or_sig, types.FunctionType):
            return decorate(func_or_sig)
        sigs = func_or_sig
        return lambda fn: decorate(fn, sigs)

    def _wrap_dispatcher(self, d: Any) -> DeviceFunction:
        """A numba dispatcher (real target or simulator) found in a kernel's globals: the executor's
        version."""
        cache = self.__dict__["_dispatchers"]
        hit = cache.get(id(d))
        if hit is None or hit[0] is not d:
            hit = (d, DeviceFunction(d.py_func))
            cache[id(d)] = hit
        return hit[1]

    # -- memory on the host ------------------------------------------------------------------------
    def to_device(
        self, obj: Any, stream: Any = 0, copy: bool = True, to: DeviceArray | None = None
    ) -> DeviceArray:
        _host_only("to_device")
        if to is not None:
            to.copy_to_device(obj)
            return to
        data = obj._data if isinstance(obj, DeviceArray) else np.asarray(obj)
        return DeviceArray(np.array(data, copy=True))

    def device_array(
        self,
        shape: Any,
        dtype: Any = np.float64,
        strides: Any = None,
        order: str = "C",
        stream: Any = 0,
    ) -> DeviceArray:
        """Uninitialised device memory (its elements read as NaN/0xDEADBEEF here and are reported
        when used)."""
        _host_only("device_array")
        shape = (
            (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        )
        dt = as_dtype(dtype)
        data = poisoned(shape, dt)
        if order == "F":
            data = np.asfortranarray(data)
        return DeviceArray(data, bytearray(int(np.prod(shape, dtype=np.int64))))

    def device_array_like(self, ary: Any, stream: Any = 0) -> DeviceArray:
        _host_only("device_array_like")
        return self.device_array(ary.shape, ary.dtype, stream=stream)

    def pinned_array(
        self, shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C"
    ) -> np.ndarray:
        _host_only("pinned_array")
        return np.empty(shape, dtype=as_dtype(dtype), order=order)

    mapped_array = managed_array = pinned_array

    def pinned_array_like(self, ary: Any) -> np.ndarray:
        _host_only("pinned_array_like")
        return np.empty_like(ary)

    mapped_array_like = managed_array_like = pinned_array_like

    @contextlib.contextmanager
    def pinned(self, *arrays: Any):
        _host_only("pinned")
        yield

    mapped = pinned

    def is_cuda_array(self, obj: Any) -> bool:
        return isinstance(obj, DeviceArray)

    def _host_view(self, a: Any) -> tuple[np.ndarray | None, bytearray | None]:
        """(the NumPy array a kernel argument lives in, its uninitialised flags or None)."""
        if isinstance(a, DeviceArray):
            return a._data, a._init
        if isinstance(a, np.ndarray):
            return a, None
        return None, None

    # -- streams, events, devices ------------------------------------------------------------------
    def synchronize(self) -> None:
        _host_only("synchronize")
        return None

    def stream(self) -> _Stream:
        _host_only("stream")
        return _Stream(1)

    def default_stream(self) -> _Stream:
        _host_only("default_stream")
        return _Stream(0)

    legacy_default_stream = per_thread_default_stream = default_stream

    def external_stream(self, ptr: int) -> _Stream:
        _host_only("external_stream")
        return _Stream(int(ptr))

    def event(self, timing: bool = True) -> _Event:
        _host_only("event")
        return _Event(timing)

    @staticmethod
    def event_elapsed_time(start: _Event, end: _Event) -> float:
        return start.elapsed_time(end)

    def is_available(self) -> bool:
        """True: kernels run here (on the executor, not on a GPU)."""
        return True

    def is_supported_version(self) -> bool:
        return True

    def detect(self) -> bool:
        print("gpucourse SIMT executor: CUDA kernels run on this CPU, instrumented (no GPU)")
        return True

    def get_current_device(self) -> _Device:
        return _Device()

    def select_device(self, i: int = 0) -> _Device:
        if i != 0:
            raise ValueError("the executor has one device, 0")
        return _Device()

    def list_devices(self) -> list[_Device]:
        return [_Device()]

    gpus = property(list_devices)

    def close(self) -> None:
        return None

    # -- inside a kernel: indices ------------------------------------------------------------------
    def grid(self, ndim: int) -> Any:
        """The thread's global index: ``blockIdx * blockDim + threadIdx`` along x (and y, z)."""
        run = _run("grid")
        t, b, d = run.cur.tidx, run.cur.blk.bidx, run.block
        if ndim == 1:
            return t.x + b.x * d.x
        xs = (t.x + b.x * d.x, t.y + b.y * d.y, t.z + b.z * d.z)
        if ndim not in (2, 3):
            raise ValueError(f"cuda.grid takes 1, 2 or 3, got {ndim}")
        return xs[:ndim]

    def gridsize(self, ndim: int) -> Any:
        """Threads in the whole grid along x (and y, z): the stride of a grid-stride loop."""
        run = _run("gridsize")
        g, d = run.grid, run.block
        xs = (g.x * d.x, g.y * d.y, g.z * d.z)
        if ndim == 1:
            return xs[0]
        if ndim not in (2, 3):
            raise ValueError(f"cuda.gridsize takes 1, 2 or 3, got {ndim}")
        return xs[:ndim]

    # -- inside a kernel: synchronisation ----------------------------------------------------------
    def syncthreads(self) -> None:
        """Every thread of the block waits here until all have arrived."""
        _run("syncthreads").barrier("syncthreads", None, caller_site())

    def syncthreads_count(self, predicate: Any) -> np.int32:
        pred = _predicate(predicate, "syncthreads_count")
        return I32(_run("syncthreads_count").barrier("syncthreads_count", pred, caller_site()))

    def syncthreads_and(self, predicate: Any) -> np.int32:
        pred = _predicate(predicate, "syncthreads_and")
        return I32(_run("syncthreads_and").barrier("syncthreads_and", pred, caller_site()))

    def syncthreads_or(self, predicate: Any) -> np.int32:
        pred = _predicate(predicate, "syncthreads_or")
        return I32(_run("syncthreads_or").barrier("syncthreads_or", pred, caller_site()))

    def threadfence(self) -> None:
        _run("threadfence").fence("device")

    def threadfence_system(self) -> None:
        _run("threadfence_system").fence("system")

    def threadfence_block(self) -> None:
        _run("threadfence_block").fence("block")

    def syncwarp(self, mask: Any = FULL_MASK) -> None:
        """The lanes of ``mask`` wait for one another (and their memory accesses are ordered)."""
        _run("syncwarp").warp_op("syncwarp", _mask(mask, "syncwarp"), None, caller_site())

    # -- inside a kernel: warp intrinsics ----------------------------------------------------------
    def shfl_sync(self, mask: Any, value: Any, src_lane: Any) -> Any:
        """``value`` from lane ``src_lane`` (only its low 5 bits count, as in the PTX numba-cuda
        emits)."""
        v = _shfl_value(value, "shfl_sync")
        return _run("shfl_sync").warp_op(
            "shfl_sync", _mask(mask, "shfl_sync"), (v, src_lane), caller_site()
        )

    def shfl_up_sync(self, mask: Any, value: Any, delta: Any) -> Any:
        """``value`` from lane ``laneid - delta``; the caller's own ``value`` where that is below
        lane 0."""
        v = _shfl_value(value, "shfl_up_sync")
        return _run("shfl_up_sync").warp_op(
            "shfl_up_sync", _mask(mask, "shfl_up_sync"), (v, delta), caller_site()
        )

    def shfl_down_sync(self, mask: Any, value: Any, delta: Any) -> Any:
        """``value`` from lane ``laneid + delta``; the caller's own ``value`` where that is past
        lane 31."""
        v = _shfl_value(value, "shfl_down_sync")
        return _run("shfl_down_sync").warp_op(
            "shfl_down_sync", _mask(mask, "shfl_down_sync"), (v, delta), caller_site()
        )

    def shfl_xor_sync(self, mask: Any, value: Any, lane_mask: Any) -> Any:
        """``value`` from lane ``laneid ^ lane_mask`` (the butterfly of a warp reduction)."""
        v = _shfl_value(value, "shfl_xor_sync")
        return _run("shfl_xor_sync").warp_op(
            "shfl_xor_sync", _mask(mask, "shfl_xor_sync"), (v, lane_mask), caller_site()
        )

    def all_sync(self, mask: Any, predicate: Any) -> bool:
        p = _vote(predicate, "all_sync")
        return _run("all_sync").warp_op("all_sync", _mask(mask, "all_sync"), p, caller_site())

    def any_sync(self, mask: Any, predicate: Any) -> bool:
        p = _vote(predicate, "any_sync")
        return _run("any_sync").warp_op("any_sync", _mask(mask, "any_sync"), p, caller_site())

    def eq_sync(self, mask: Any, predicate: Any) -> bool:
        p = _vote(predicate, "eq_sync")
        return _run("eq_sync").warp_op("eq_sync", _mask(mask, "eq_sync"), p, caller_site())

    def ballot_sync(self, mask: Any, predicate: Any) -> np.int32:
        """Bit i set where lane i (in the mask, taking part) has a true predicate; an int32, as in
        numba-cuda."""
        p = _vote(predicate, "ballot_sync")
        return _run("ballot_sync").warp_op(
            "ballot_sync", _mask(mask, "ballot_sync"), p, caller_site()
        )

    def match_any_sync(self, mask: Any, value: Any) -> np.int32:
        return _run("match_any_sync").warp_op(
            "match_any_sync", _mask(mask, "match_any_sync"), value, caller_site()
        )

    def match_all_sync(self, mask: Any, value: Any) -> tuple:
        return _run("match_all_sync").warp_op(
            "match_all_sync", _mask(mask, "match_all_sync"), value, caller_site()
        )

    def activemask(self) -> np.uint32:
        """The lanes of the warp executing this call together (the lanes that reached this same
        call)."""
        return U32(_run("activemask").warp_op("activemask", FULL_MASK, None, caller_site()))

    def lanemask_lt(self) -> np.uint32:
        """Bits of all lanes below the caller's (active or not)."""
        run = _run("lanemask_lt")
        return U32((1 << run.cur.lane) - 1)

    # -- inside a kernel: integer and float intrinsics ---------------------------------------------
    @staticmethod
    def popc(x: Any) -> int:
        v, _ = _int_bits(x)
        return bin(v).count("1")

    @staticmethod
    def brev(x: Any) -> Any:
        v, bits = _int_bits(x)
        r = int(format(v, f"0{bits}b")[::-1], 2)
        return cast(r, x.dtype) if isinstance(x, np.integer) else cast(r, np.dtype(np.int64))

    @staticmethod
    def clz(x: Any) -> int:
        v, bits = _int_bits(x)
        return bits - v.bit_length()

    @staticmethod
    def ffs(x: Any) -> int:
        v, _ = _int_bits(x)
        return (v & -v).bit_length()

    @staticmethod
    def fma(a: Any, b: Any, c: Any) -> Any:
        """``a * b + c`` rounded once (PTX fma.rn, as llvm.fma compiles): the exact value, then one
        rounding to the dtype (float32 rounds the exact value directly, never through float64). The
        dtype is numba-cuda's: float32 when all three operands are float32, else float64."""
        # numba-cuda has fma for float32 and for float64: float32 only when all three are float32
        # (an int or a float64 operand picks the float64 one, compile_ptx: fma.rn.f64)
        f32s = sum(isinstance(v, (F32, np.float32)) for v in (a, b, c))
        dt = np.dtype(np.float32 if f32s == 3 else np.float64)
        if 0 < f32s < 3:
            _note_fp64()  # a float32 operand converted for the float64 fma: cvt.f64.f32 and a DFMA
        a64, b64, c64 = float(a), float(b), float(c)
        if not all(math.isfinite(v) for v in (a64, b64, c64)):
            return typed(dt.type(a64 * b64 + c64))  # inf and NaN propagate as in the unfused form
        return typed(
            _round_once(Fraction(a64) * Fraction(b64) + Fraction(c64), a64 * b64 + c64, dt)
        )

    @staticmethod
    def cbrt(x: Any) -> Any:
        """The float whose cube is nearest ``x`` (CUDA's cbrt: within 1 ulp, exact on perfect cubes:
        64 → 4)."""
        dt = _device_dtype(x)
        f = float(x)
        if not math.isfinite(f) or f == 0:
            return typed(dt.type(f))
        y = dt.type(math.copysign(abs(f) ** (1.0 / 3.0), f))  # within an ulp or two of the root
        exact_abs = Fraction(abs(float(dt.type(f))))
        cands = [y, np.nextafter(y, dt.type(np.inf)), np.nextafter(y, dt.type(-np.inf))]
        return typed(min(cands, key=lambda v: abs(Fraction(abs(float(v))) ** 3 - exact_abs)))

    @staticmethod
    def selp(pred: Any, a: Any, b: Any) -> Any:
        return a if pred else b

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        # its descriptor raised: not in a kernel
        if isinstance(type(self).__dict__.get(name), _InKernel):
            raise OutsideKernel(f"cuda.{name} only has a value inside a running kernel")
        raise NotModelled(f"cuda.{name}")

    def __repr__(self) -> str:
        return "<gpucourse.simt.cuda: numba-cuda's API on the course's instrumented SIMT executor>"


cuda = CudaAPI()


def run(
    kernel: Any,
    griddim: Any,
    blockdim: Any,
    *args: Any,
    sharedmem: int = 0,
    block_order: str = "forward",
    max_iterations: int = 1_000_000,
    time_limit: float | None = 60.0,
) -> KernelReport:
    """Run ``kernel[griddim, blockdim, 0, sharedmem](*args)`` on the instrumented executor and
    report what happened.

    ``kernel`` is a ``@cuda.jit`` kernel of this executor (``gpucourse.simt.cuda``), of numba-cuda
    or of numba's simulator, or a plain Python function. NumPy array arguments are global memory,
    written in place (CuPy arrays are copied to the host and back; ``cuda.to_device`` arrays are
    used as they are). Scalars pass through.

    Raises :class:`~gpucourse.simt.errors.KernelError` (with the partial report as ``.report``) when
    a thread raises, a barrier or warp operation deadlocks, or a thread exceeds ``max_iterations``
    loop iterations or the launch ``time_limit`` seconds. ``block_order="reverse"`` runs the blocks
    last to first: a correct kernel cannot tell (blocks are independent), a racy one can.
    """
    if block_order not in ("forward", "reverse"):
        raise ValueError("block_order must be 'forward' or 'reverse'")
    grid, block = dim3(griddim, "grid dimension"), dim3(blockdim, "block dimension")
    check_launch(grid, block)
    copies, host_args = [], []
    for a in args:
        if type(a).__module__.split(".")[0] == "cupy" and hasattr(a, "get"):
            host = a.get()
            copies.append((a, host))
            a = host
        host_args.append(a)
    launch = Launch(
        kernel,
        grid,
        block,
        tuple(host_args),
        cuda=cuda,
        sharedmem=sharedmem,
        block_order=block_order,
        max_iterations=max_iterations,
        time_limit=time_limit,
    )
    report = launch.execute()
    for dev, host in copies:
        dev.set(host)
    if isinstance(kernel, Kernel):
        kernel.last_report = report
    return report
