"""What numba-cuda's ``cuda`` module offers on the host, as the executor has it: device arrays
(copies the host reaches only by copying), streams and events (everything runs at once, in order),
the device's limits."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np

from .dims import (
    H100_SMS,
    MAX_THREADS_PER_BLOCK,
    SHARED_OPTIN_LIMIT,
    STATIC_SHARED_LIMIT,
    WARP_SIZE,
)


class _Stream:
    def __init__(self, handle: int = 0):
        self.handle = handle

    def synchronize(self) -> None:
        return None

    @contextlib.contextmanager
    def auto_synchronize(self):
        yield self

    def __int__(self) -> int:
        return self.handle

    def __repr__(self) -> str:
        return (
            f"<gpucourse.simt stream {self.handle} (the executor runs everything at once, in"
            " order)>"
        )


class _Event:
    def __init__(self, timing: bool = True):
        self.timing, self.t = timing, None

    def record(self, stream: Any = 0) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Any = 0) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: "_Event") -> float:
        """Milliseconds of *host* time between the two records: the executor is not a GPU."""
        if self.t is None or end.t is None:
            raise RuntimeError("record both events before asking for the time between them")
        return (end.t - self.t) * 1e3


class _Device:
    """What ``cuda.get_current_device()`` returns here: the limits the executor enforces (an H100's,
    sm_90)."""

    name = b"gpucourse SIMT executor (sm_90 limits, no GPU)"
    # numba-cuda's Device.id: the device's ordinal
    id = 0
    compute_capability = (9, 0)
    WARP_SIZE = WARP_SIZE
    MAX_THREADS_PER_BLOCK = MAX_THREADS_PER_BLOCK
    MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_Y, MAX_BLOCK_DIM_Z = 1024, 1024, 64
    MAX_GRID_DIM_X, MAX_GRID_DIM_Y, MAX_GRID_DIM_Z = 2**31 - 1, 65535, 65535
    MAX_SHARED_MEMORY_PER_BLOCK = STATIC_SHARED_LIMIT
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = SHARED_OPTIN_LIMIT
    MULTIPROCESSOR_COUNT = H100_SMS

    def reset(self) -> None:
        return None

    def __repr__(self) -> str:
        return "<gpucourse SIMT executor: CUDA threads run as coroutines on this CPU>"


# -- host-side arrays ------------------------------------------------------------------------------

class DeviceArray:
    """What ``cuda.to_device`` / ``cuda.device_array`` return: "device" memory the host reaches only
    by copies. A ``device_array``'s elements are uninitialised until something writes them (reading
    one is reported)."""

    __slots__ = ("_data", "_init")

    def __init__(self, data: np.ndarray, init: bytearray | None = None):
        self._data, self._init = data, init

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    size = property(lambda self: self._data.size)
    ndim = property(lambda self: self._data.ndim)
    strides = property(lambda self: self._data.strides)
    nbytes = property(lambda self: self._data.nbytes)
    alloc_size = nbytes

    def __len__(self) -> int:
        return len(self._data)

    def copy_to_host(self, ary: np.ndarray | None = None, stream: Any = 0) -> np.ndarray:
        if ary is None:
            return self._data.copy()
        np.copyto(ary, self._data)
        return ary

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        src = ary._data if isinstance(ary, DeviceArray) else np.asarray(ary)
        np.copyto(self._data, src)
        self._init = None

    def __getitem__(self, idx: Any) -> Any:
        sub = self._data[idx]
        if isinstance(sub, np.ndarray):
            return DeviceArray(sub)
        return sub

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._data[idx] = value._data if isinstance(value, DeviceArray) else value
        if self._init is not None:
            flags = np.frombuffer(self._init, dtype=np.uint8).reshape(self._data.shape)
            flags[idx] = 1

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._data, dtype=dtype)  # a copy, as a device-to-host transfer would give

    def reshape(self, *shape: Any, order: str = "C") -> "DeviceArray":
        return DeviceArray(self._data.reshape(*shape, order=order))

    def ravel(self, order: str = "C") -> "DeviceArray":
        return DeviceArray(self._data.ravel(order=order))

    def is_c_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._data.flags.f_contiguous)

    def __repr__(self) -> str:
        return f"<gpucourse.simt DeviceArray {self._data.shape} {self._data.dtype}>"
