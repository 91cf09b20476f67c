"""``math`` as a kernel sees it on a GPU: IEEE results where CPython raises, and numba-cuda's result
types.

CPython's ``math`` raises where the GPU's libdevice returns an IEEE special value:
``math.exp(1000.0)`` raises OverflowError, ``math.log(0.0)`` and ``math.sqrt(-1.0)`` raise
ValueError, but ``__nv_exp`` gives ``inf``, ``__nv_log(0)`` gives ``-inf`` and ``__nv_sqrt(-1)``
gives ``nan`` (IEEE 754 and the CUDA Math API's special cases). numba-cuda also types these
functions by their argument (numba_cuda ``cudamath.py``: ``float32(float32)``, ``float64(float64)``,
``float64(int64)``), so ``math.exp`` of a float32 is ``expf``: a float32, ``inf`` past ~88.72, where
CPython's float64 result would still be finite.

The executor gives a kernel this module in place of ``math``
(:func:`gpucourse.simt.instrument.replacement`): the float functions below compute in float64
(NumPy, with floating-point errors ignored, for the special values) and round once to the result
type numba-cuda gives; everything else is ``math``'s own.
"""

from __future__ import annotations

import math
import sys
import types
from typing import Any, Callable

import numpy as np

from .numbatypes import F32

_F32S = (F32, np.float32)  # a kernel's float32 values (F32) and NumPy's

# name -> (NumPy float64 function giving IEEE special values, number of float arguments)
_UNARY = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "fabs": np.fabs,
}
if sys.version_info >= (3, 11):
    _UNARY["exp2"] = np.exp2
_BINARY = {
    "pow": np.power,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "fmod": np.fmod,
    "copysign": np.copysign,
}


# math functions numba-cuda also types float32 -> float32 that the tables above do not hold (their
# NumPy twin is the fallback where CPython raises)
_TYPED_TOO = {
    "erf": lambda x: math.nan,  # CPython raises on nothing but a non-number
    "erfc": lambda x: math.nan,
    "degrees": np.degrees,
    "radians": np.radians,
}


def _result_dtype(args: tuple) -> np.dtype:
    """numba-cuda's signatures: float32 when the first argument and every other float argument are
    float32."""
    floats = [a for a in args if isinstance(a, (float, np.floating))]
    # a Python int is an int64 to numba-cuda: with a float32 it picks the float64 signature
    # (math.pow(x_f32, 2) is float64; math.pow(x_f32, np.int32(2)) float32)
    wide_int = any(type(a) is int for a in args)
    if isinstance(args[0], _F32S) and all(isinstance(a, _F32S) for a in floats) and not wide_int:
        return np.dtype(np.float32)  # float32(float32, ...), and pow(float32, int32)
    return np.dtype(np.float64)


def _gamma_special(x: float, log: bool) -> float:
    """tgamma/lgamma where CPython raises: poles (0 and the negative integers) and overflow (CUDA
    Math API)."""
    if x == 0.0:
        # tgamma(±0) = ±inf; lgamma(±0) = +inf
        return math.inf if log else math.copysign(math.inf, x)
    if x < 0 and x == math.floor(x):
        # lgamma(negative integer) = +inf; tgamma(negative integer) = NaN
        return math.inf if log else math.nan
    return math.inf  # overflow (x > 171.6 for tgamma)


def _wrap(name: str, fn: Callable, numpy_fn: Callable | None) -> Callable:
    original = getattr(math, name)

    def gpu(*args: Any) -> Any:
        dt = _result_dtype(args)
        try:
            value = original(*args)
        except (OverflowError, ValueError):
            if numpy_fn is not None:
                with np.errstate(all="ignore"):
                    value = float(numpy_fn(*(np.float64(a) for a in args)))
            else:
                value = _gamma_special(float(args[0]), log=name == "lgamma")
        with np.errstate(over="ignore"):
            return F32(value) if dt == np.float32 else dt.type(value)

    gpu.__name__ = gpu.__qualname__ = name
    gpu.__doc__ = f"math.{name} with the GPU's IEEE special values and numba-cuda's result type."
    gpu.__module__ = __name__
    return gpu


def _rounding(name: str) -> Callable:
    """math.floor/ceil/trunc as numba-cuda types them (cudamath.py): a float of the argument's type
    (float32 for a float32, float64 otherwise), not CPython's int: ``a[math.floor(x)]`` does not
    compile for a GPU."""
    np_fn = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}[name]

    def gpu(x: Any) -> Any:
        r = np_fn(np.float64(float(x)))
        return F32(r) if isinstance(x, _F32S) else r

    gpu.__name__ = gpu.__qualname__ = name
    gpu.__doc__ = (
        f"math.{name} typed as numba-cuda types it: float32 for a float32, float64 otherwise."
    )
    gpu.__module__ = __name__
    return gpu


def _ldexp(x: Any, i: Any) -> Any:
    dt = np.dtype(np.float32) if isinstance(x, _F32S) else np.dtype(np.float64)
    with np.errstate(all="ignore"):
        r = np.ldexp(np.float64(x), int(i))
        return F32(r) if dt == np.float32 else dt.type(r)


# the math functions numba-cuda compiles in a kernel (each compiled with compile_ptx for sm_90,
# numba-cuda 0.30: tests/test_simt_types.py checks this set against the installed numba-cuda); the
# others (factorial, gcd, isqrt, prod, comb, cbrt, isclose, fsum, ulp, ...) fail to type there
NUMBA_CUDA_MATH = frozenset(
    {
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "ceil",
        "copysign",
        "cos",
        "cosh",
        "degrees",
        "erf",
        "erfc",
        "exp",
        "exp2",
        "expm1",
        "fabs",
        "floor",
        "fmod",
        "frexp",
        "gamma",
        "hypot",
        "isfinite",
        "isinf",
        "isnan",
        "ldexp",
        "lgamma",
        "log",
        "log10",
        "log1p",
        "log2",
        "modf",
        "nextafter",
        "pow",
        "radians",
        "remainder",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "trunc",
    }
)


def _refused(name: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        from .errors import NotModelled

        raise NotModelled(
            f"math.{name} inside a kernel",
            f"numba-cuda has no implementation of math.{name} for the "
            "GPU (it compiles math's elementary functions: exp, log, sqrt, sin, ..., floor, fmod)",
        )

    refused.__name__ = name
    return refused


def _module() -> types.ModuleType:
    mod = types.ModuleType("math", "math as a kernel sees it on a GPU (gpucourse.simt.gpumath)")
    for key in dir(math):
        if not key.startswith("__"):
            v = getattr(math, key)
            setattr(mod, key, v if not callable(v) or key in NUMBA_CUDA_MATH else _refused(key))
    for name, np_fn in _UNARY.items():
        setattr(mod, name, _wrap(name, getattr(math, name), np_fn))
    for name, np_fn in _BINARY.items():
        setattr(mod, name, _wrap(name, getattr(math, name), np_fn))
    for name in ("gamma", "lgamma"):
        setattr(mod, name, _wrap(name, getattr(math, name), None))
    # float in, float out, typed as the argument (float32 for a float32): numba-cuda's signatures
    for name, np_fn in _TYPED_TOO.items():
        if name in NUMBA_CUDA_MATH:
            setattr(mod, name, _wrap(name, getattr(math, name), np_fn))
    mod.ldexp = _ldexp
    for name in ("floor", "ceil", "trunc"):
        setattr(mod, name, _rounding(name))
    mod.__gpumath__ = True
    return mod


GPU_MATH = _module()


def replace(v: Any) -> Any:
    """The GPU version of ``v`` when it is the ``math`` module or one of its functions; ``v``
    otherwise."""
    if v is math:
        return GPU_MATH
    if isinstance(v, types.BuiltinFunctionType) and getattr(v, "__module__", None) == "math":
        return getattr(GPU_MATH, v.__name__, v)
    return v
