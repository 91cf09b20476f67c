"""Element types and uninitialised values.

- :func:`as_dtype` accepts every way a kernel names an element type: ``np.float32``, ``"float32"``,
  and numba's scalar types (``numba.float32``, ``numba.types.int32``), as GPU-Puzzles and numba's
  documentation write them.
- :class:`ScalarType` is what ``simt.cuda.float32`` is: usable as a dtype, as a cast inside a kernel
  (``float32(x)``), and in signatures (``float32[:]``), like ``numba.cuda.float32``.
- Fresh shared and local memory (and ``cuda.device_array``) is *poisoned*: floats hold NaN, integers
  a repeating 0xDEADBEEF pattern, as a GPU's memory holds whatever was there before. Reading an
  element no thread wrote gives an :class:`Uninit` value instead of a number. It flows through
  arithmetic like valgrind's undefined bits; *using* it — storing it to global memory, branching on
  it, indexing with it, converting it — is reported (``KernelReport.uninitialized``), so a read
  whose value is discarded (a padded tile) is no error. A branch or loop condition on it also stops
  the launch at once (:class:`~gpucourse.simt.errors.UninitializedCondition`): which way the GPU
  goes is garbage, and a ``while`` on a poisoned value would never end here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import state
from .numbatypes import TYPED, from_float32, to_j64

_NUMBA_NAMES = {"boolean": "bool", "bool_": "bool", "byte": "uint8"}


def as_dtype(d: Any) -> np.dtype:
    """NumPy dtype of ``d``: a NumPy dtype or type, a string, or a numba scalar type
    (``numba.float32``)."""
    if isinstance(d, np.dtype):
        return d
    try:
        return np.dtype(d)
    except TypeError:
        pass
    name = getattr(d, "name", None)
    if isinstance(name, str):
        name = _NUMBA_NAMES.get(name, name)
        try:
            return np.dtype(name)
        except TypeError:
            pass
    raise TypeError(
        f"{d!r} is not an element type a kernel can use (np.float32, 'float32' or numba.float32)"
    )


# -- poison ----------------------------------------------------------------------------------------

_PATTERN = 0xDEADBEEFDEADBEEF


def poison_value(dtype: np.dtype) -> Any:
    """What a never-written element of ``dtype`` holds here: NaN for floats, 0xDEADBEEF… for
    integers."""
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "b":
        return True
    bits = dtype.itemsize * 8
    return np.array(_PATTERN & ((1 << bits) - 1), dtype=f"u{dtype.itemsize}").view(dtype)[()]


def poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    a = np.empty(shape, dtype=dtype)
    a.fill(poison_value(dtype))
    return a


class Origin:
    """Where an uninitialised value came from: an element of an array no thread had written."""

    __slots__ = ("array", "index", "thread", "line")

    def __init__(self, array: str, index: tuple, thread: tuple[int, int], line: str):
        self.array, self.index, self.thread, self.line = array, index, thread, line

    def __str__(self) -> str:
        idx = ", ".join(str(i) for i in self.index)
        return (
            f"{self.array}[{idx}], which no thread had written, read by thread {self.thread[1]} of"
            f" block {self.thread[0]}{self.line}"
        )


def _binary(self: "Uninit", other: Any) -> "Uninit":
    return self


def _unary(self: "Uninit") -> "Uninit":
    return self


class Uninit:
    """An uninitialised value. Arithmetic and comparisons give Uninit; turning it into a concrete
    value (``if``, an index, ``float()``, ``math.*``, a store to global memory) is reported as a
    use."""

    __slots__ = ("origin",)
    __array_ufunc__ = None  # NumPy scalars defer to our reflected operators
    __array_priority__ = 1000

    def __init__(self, origin: Origin):
        self.origin = origin

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _binary
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _binary
    __pow__ = __rpow__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _binary
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __divmod__ = __rdivmod__ = __matmul__ = (
        _binary
    )
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _binary
    __neg__ = __pos__ = __abs__ = __invert__ = _unary

    def __hash__(self) -> int:
        return id(self)

    def _use(self, how: str) -> None:
        run = state.CURRENT.run
        if run is not None:
            run.uninit_use(self.origin, how)

    def __bool__(self) -> bool:
        how = "a branch or a condition depends on it"
        run = state.CURRENT.run
        if run is not None:
            run.uninit_condition(self.origin, how)  # stops the thread's launch (in a kernel)
        return True

    def __index__(self) -> int:
        self._use("it is used as an index or a loop bound")
        return 0

    def __int__(self) -> int:
        self._use("it is converted to an integer")
        return 0

    def __float__(self) -> float:
        self._use("it is converted to a float (a math function or a cast)")
        return math.nan

    def __complex__(self) -> complex:
        self._use("it is converted to a complex number")
        return complex(math.nan, math.nan)

    def __round__(self, n: int | None = None) -> Any:
        self._use("it is rounded")
        return 0

    __trunc__ = __floor__ = __ceil__ = __int__

    def __repr__(self) -> str:
        return f"<uninitialised: {self.origin.array}{list(self.origin.index)}>"

    __str__ = __repr__


# -- numba-style scalar types ----------------------------------------------------------------------

class ArrayType:
    """``float32[:]``, ``float32[:, ::1]`` in a signature: only its dtype and rank matter here."""

    def __init__(self, scalar: "ScalarType", ndim: int):
        self.scalar, self.ndim = scalar, ndim
        self.dtype = scalar.dtype

    def __repr__(self) -> str:
        return f"array({self.scalar.name}, {self.ndim}d)"


class ScalarType:
    """``simt.cuda.float32`` and friends: a dtype (``np.dtype(float32)`` works), a cast
    (``float32(x)`` inside a kernel rounds like the GPU does) and a signature element
    (``float32[:]``, ``float32(float32, int32)``)."""

    def __init__(self, name: str):
        self.name = name
        self.dtype = np.dtype(_NUMBA_NAMES.get(name, name)) if name != "void" else None

    def __call__(self, *args: Any) -> Any:
        if self.dtype is None or (
            args and all(isinstance(a, (ScalarType, ArrayType)) for a in args)
        ):
            # float32(float32, int32): a signature, as numba spells one
            return Signature(self, args)
        (value,) = args
        if isinstance(value, Uninit):
            return value
        return cast(value, self.dtype)

    def __getitem__(self, item: Any) -> ArrayType:
        return ArrayType(self, len(item) if isinstance(item, tuple) else 1)

    def __repr__(self) -> str:
        return self.name


class Signature:
    def __init__(self, ret: ScalarType, args: tuple):
        self.return_type, self.args = ret, args

    def __repr__(self) -> str:
        return f"{self.return_type!r}({', '.join(map(repr, self.args))})"


def cast(value: Any, dtype: np.dtype) -> Any:
    """``value`` as a scalar of ``dtype`` with the GPU's conversion: integers wrap, floats truncate
    toward zero."""
    # float32 -> F32, int32 -> I32, ...: a kernel value typed as numba-cuda types it
    if dtype == np.float64 and from_float32(value):
        return to_j64(value)  # np.float64(x_f32): FP64 from here on, noted where it computes
    t = TYPED.get(dtype, dtype.type)
    if dtype.kind in "iu" and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        bits = dtype.itemsize * 8
        v = int(value) & ((1 << bits) - 1)
        if dtype.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        return t(v)
    if dtype.kind in "iu" and isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            return t(0)  # undefined in C; cvt.rzi gives 0 for NaN on NVIDIA GPUs
        return cast(int(f), dtype)
    with np.errstate(all="ignore"):
        return t(dtype.type(value)) if t is not dtype.type else t(value)


SCALAR_TYPES = {n: ScalarType(n) for n in (
    "void", "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}
