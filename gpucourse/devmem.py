"""A device-memory budget: allocations on a "GPU" that can run out, like a real one.

A discrete GPU has its own memory (VRAM/HBM). Data gets there only by an explicit copy from host
memory (``to_device``), results come back only by an explicit copy (``to_host``), and when an
allocation does not fit the allocator raises an out-of-memory error — the device never pages to disk
(article 002). This module makes that contract checkable on any machine:

    mem = DeviceMemory(budget=8 * 2**20)          # an 8 MiB "GPU"
    d = mem.to_device(x_host[:1000])              # host -> device copy (counted), allocation
                                                  # (tracked)
    r = np.sqrt(d * d + 1.0)                      # device arithmetic: results and temporaries are
                                                  # allocations
    y = mem.to_host(r)                            # device -> host copy (counted), a NumPy array
    del d, r                                      # memory returns to the pool when the last
                                                  # reference goes
    mem.peak, mem.h2d_bytes, mem.h2d_copies       # what the checker reads

Storage is the backend's array module: NumPy on CPU (the "device" is a second buffer in the same
RAM, so a copy is a memcpy, not a PCIe transfer), CuPy on a GPU (real device memory; the budget is
enforced on top of CuPy's memory pool). Like CuPy, a :class:`DeviceArray` refuses implicit
conversion to NumPy: use ``mem.to_host`` (or ``.get()``), so every byte that crosses the bus is
counted.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .backend import get_backend


class OutOfMemoryError(MemoryError):
    """An allocation did not fit in the device-memory budget (the message mimics CUDA's)."""


def _fmt(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{int(nbytes)} bytes"


@dataclass
class _Record:
    nbytes: int
    generation: int


class DeviceMemory:
    """A device-memory budget in bytes that tracks live allocations, their peak, and host↔device
    copies.

    ``budget``: bytes the device may hold at once. ``name``: shown in error messages. Counters:
    ``in_use`` and ``peak`` (bytes), ``allocations`` (count), ``h2d_bytes``/``h2d_copies`` and
    ``d2h_bytes``/``d2h_copies`` (bytes and number of copies in each direction).
    """

    def __init__(self, budget: int, name: str = "simulated GPU", xp: Any = None):
        if budget <= 0:
            raise ValueError("budget must be a positive number of bytes")
        self.budget = int(budget)
        self.name = name
        self.xp = xp if xp is not None else get_backend().xp
        self._generation = 0
        self.reset()

    # -- accounting --------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every allocation and zero the counters (arrays from before stop counting when
        freed)."""
        self._generation += 1
        self.in_use = 0
        self.peak = 0
        self.allocations = 0
        self.h2d_bytes = self.h2d_copies = 0
        self.d2h_bytes = self.d2h_copies = 0

    @property
    def free(self) -> int:
        """Bytes still available."""
        return self.budget - self.in_use

    def _reserve(self, nbytes: int) -> _Record:
        if self.in_use + nbytes > self.budget:
            raise OutOfMemoryError(
                f"{self.name}: out of memory. Tried to allocate {_fmt(nbytes)} ({nbytes:,} bytes); "
                f"{_fmt(self.budget)} total capacity, {_fmt(self.in_use)} already allocated, "
                f"{_fmt(self.free)} free"
                + (" (held by device arrays still alive: memory returns only when an array's last"
                   " reference goes — `del` the ones you are done with — and what you keep at once"
                   " must fit together)" if self.in_use else "")
            )
        self.in_use += nbytes
        self.peak = max(self.peak, self.in_use)
        self.allocations += 1
        return _Record(nbytes, self._generation)

    def _release(self, record: _Record) -> None:
        if record.generation == self._generation:
            self.in_use -= record.nbytes

    def _adopt(self, data: Any) -> "DeviceArray":
        """Wrap a freshly computed backend array as a tracked allocation (raises if it does not
        fit)."""
        record = self._reserve(int(data.nbytes))
        return DeviceArray(self, data, record)

    # -- what programs call ------------------------------------------------------------------------
    def empty(self, shape: Any, dtype: Any = np.float32) -> "DeviceArray":
        """Allocate without initialising (``cudaMalloc``). The budget is checked before any memory
        is touched."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        record = self._reserve(nbytes)
        return DeviceArray(self, self.xp.empty(shape, dtype=dtype), record)

    def to_device(self, host: Any) -> "DeviceArray":
        """Copy a host (NumPy) array into device memory: one host→device transfer."""
        host = np.asarray(host)
        record = self._reserve(int(host.nbytes))  # fail before copying, as cudaMalloc would
        data = self.xp.array(host, copy=True)
        self.h2d_bytes += int(host.nbytes)
        self.h2d_copies += 1
        return DeviceArray(self, data, record)

    def to_host(self, dev: "DeviceArray") -> np.ndarray:
        """Copy a device array back to host memory as NumPy: one device→host transfer."""
        if not isinstance(dev, DeviceArray):
            raise TypeError(f"to_host expects a DeviceArray, got {type(dev).__name__}")
        data = dev.data
        host = (
            data.get()
            if hasattr(data, "get") and not isinstance(data, np.ndarray)
            else np.array(data, copy=True)
        )
        self.d2h_bytes += int(host.nbytes)
        self.d2h_copies += 1
        return host

    def _scalar_to_host(self, value: Any) -> Any:
        """A 0-d result of device arithmetic (a reduction's sum, max, ...) as a host scalar — on a
        GPU a real copy (and a wait for the work that made it), so it is counted as one device→host
        transfer."""
        host = (
            value.get()[()]
            if hasattr(value, "get")
            else value[()] if isinstance(value, np.ndarray) else value
        )
        self.d2h_bytes += int(np.asarray(host).nbytes)
        self.d2h_copies += 1
        return host

    def __repr__(self) -> str:
        return f"DeviceMemory(budget={self.budget:,} bytes)"

    def summary(self) -> str:
        return (
            f"{self.name}: budget {_fmt(self.budget)}, peak {_fmt(self.peak)}"
            f" ({self.peak / self.budget:.0%}), {self.allocations} allocations, host→device"
            f" {self.h2d_copies} copies / {_fmt(self.h2d_bytes)}, device→host {self.d2h_copies}"
            f" copies / {_fmt(self.d2h_bytes)}"
        )


def _unwrap(x: Any) -> Any:
    if isinstance(x, DeviceArray):
        return x.data
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


def _memory_of(values: Any) -> DeviceMemory | None:
    for v in values:
        if isinstance(v, DeviceArray):
            return v.memory
        if isinstance(v, (list, tuple)):
            m = _memory_of(v)
            if m is not None:
                return m
    return None


class DeviceArray(NDArrayOperatorsMixin):
    """An array that lives in a :class:`DeviceMemory`. Arithmetic on it runs "on the device": NumPy
    ufuncs, operators and array functions return new tracked DeviceArrays. Slices are views (no new
    allocation). The allocation is released when the last reference to the array (and to its views)
    disappears."""

    __array_priority__ = 100

    def __init__(
        self,
        memory: DeviceMemory,
        data: Any,
        record: _Record | None,
        base: "DeviceArray | None" = None,
    ):
        self.memory = memory
        self.data = data
        self._base = base  # a view keeps its parent's allocation alive
        if record is not None:
            weakref.finalize(self, memory._release, record)

    # -- array-like surface ------------------------------------------------------------------------
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    nbytes = property(lambda self: int(self.data.nbytes))
    itemsize = property(lambda self: self.data.itemsize)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, on {self.memory.name!r})"

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(
            "Implicit conversion of a DeviceArray to a NumPy array is not allowed (as in CuPy): "
            "copy it explicitly with mem.to_host(a)"
        )

    def get(self) -> np.ndarray:
        """Copy to host memory (CuPy's spelling of ``mem.to_host``)."""
        return self.memory.to_host(self)

    def __getitem__(self, index: Any) -> "DeviceArray":
        return DeviceArray(self.memory, self.data[_unwrap(index)], None, base=self._base or self)

    def __setitem__(self, index: Any, value: Any) -> None:
        # every host→device byte must be counted
        if isinstance(value, np.ndarray) and value.ndim > 0:
            raise TypeError("assigning a host array into device memory needs an explicit copy: "
                            "mem.to_device(host) first")
        self.data[_unwrap(index)] = _unwrap(value)

    def _wrap(self, result: Any) -> Any:
        if isinstance(result, tuple):
            return tuple(self._wrap(r) for r in result)
        # a scalar result comes back to the host: a device→host copy
        if getattr(result, "ndim", None) == 0:
            return self.memory._scalar_to_host(result)
        if hasattr(result, "shape") and hasattr(result, "dtype") and not np.isscalar(result):
            return self.memory._adopt(result)
        return result

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
        if out is not None:  # written in place: no new allocation
            return out[0] if len(out) == 1 else out
        return self._wrap(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        memory = _memory_of(args) or self.memory
        result = func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        if getattr(result, "ndim", None) == 0:  # np.sum(d): a host scalar, a device→host copy
            return memory._scalar_to_host(result)
        return (
            memory._adopt(result)
            if hasattr(result, "nbytes") and getattr(result, "ndim", 0) > 0
            else result
        )

    # reductions and a few methods, so that d.sum() and friends work like on NumPy/CuPy arrays
    def _method(name: str):  # noqa: N805 (a helper that builds methods)
        def method(self: "DeviceArray", *args: Any, **kwargs: Any) -> Any:
            result = getattr(self.data, name)(*_unwrap(args), **kwargs)
            # a scalar comes back to the host: counted
            if hasattr(result, "ndim") and result.ndim == 0:
                return self.memory._scalar_to_host(result).item()
            return self._wrap(result)

        method.__name__ = name
        return method

    sum = _method("sum")
    max = _method("max")
    min = _method("min")
    mean = _method("mean")
    astype = _method("astype")
    copy = _method("copy")
    del _method

    def reshape(self, *shape: Any) -> "DeviceArray":
        """A view with another shape (no new allocation)."""
        return DeviceArray(self.memory, self.data.reshape(*shape), None, base=self._base or self)
