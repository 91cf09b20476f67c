"""Shared check functions for nbgrader test cells.

Every check raises :class:`CheckFailure` (an ``AssertionError``) with a message a student can act on:
``"gemm_cost(64, 32, 16, 'float32') → flops: expected 65,536, got 32,768"``. Checks never print to
stderr: nbgrader scores a test cell that writes anything there as 0.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable

import numpy as np


class CheckFailure(AssertionError):
    """A student's answer is wrong; the message says what was expected and what came back."""


def show(x: Any) -> str:
    """Format a value for a message: thousands separators for ints, 6 significant digits for floats."""
    if isinstance(x, bool) or x is None:
        return repr(x)
    if isinstance(x, Integral):
        return f"{int(x):,}"
    if isinstance(x, Real):
        x = float(x)
        return f"{x:.6g}" if math.isfinite(x) else repr(x)
    if isinstance(x, tuple):
        return "(" + ", ".join(show(v) for v in x) + ")"
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"array of shape {tuple(x.shape)} and dtype {x.dtype}"
    return repr(x)


def fail(what: str, expected: Any, got: Any, hint: str = "") -> None:
    msg = f"{what}: expected {show(expected)}, got {show(got)}"
    raise CheckFailure(msg + (f". Hint: {hint}" if hint else ""))


def expect_type(what: str, got: Any, types: type | tuple[type, ...], description: str) -> None:
    if isinstance(got, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise CheckFailure(f"{what}: expected {description}, got the bool {got!r}")
    if not isinstance(got, types):
        raise CheckFailure(f"{what}: expected {description}, got {type(got).__name__} {show(got)}")


def expect_tuple(what: str, got: Any, names: str) -> tuple:
    """A function that must return several values: ``names`` lists them, e.g. "flops, bytes". Returns the tuple."""
    n = len(names.split(","))
    if not isinstance(got, (tuple, list)) or len(got) != n:
        hint = " (did you forget `return`?)" if got is None else ""
        desc = f"a {type(got).__name__} of {len(got)}" if isinstance(got, (tuple, list)) else type(got).__name__
        raise CheckFailure(f"{what}: expected a tuple ({names}), got {desc}{hint}")
    return tuple(got)


def expect_equal(what: str, got: Any, expected: Any, hint: str = "") -> None:
    if got != expected:
        fail(what, expected, got, hint)


def expect_int(what: str, got: Any, expected: int, hint: str = "") -> None:
    """An exact integer answer (a NumPy integer or an integral float like 6.0 counts as an int)."""
    if isinstance(got, (Real, np.number)) and not isinstance(got, bool):
        if float(got).is_integer() and int(got) == expected:
            return
    elif got is None:
        fail(what, expected, got, hint or "your function returned None: did you forget `return`?")
    fail(what, expected, got, hint)


def expect_close(what: str, got: Any, expected: float, rtol: float = 1e-6, atol: float = 0.0, hint: str = "") -> None:
    if got is None:
        fail(what, expected, got, hint or "your function returned None: did you forget `return`?")
    try:
        value = float(got)
    except (TypeError, ValueError):
        raise CheckFailure(f"{what}: expected a number close to {show(expected)}, got {show(got)}") from None
    if not math.isclose(value, expected, rel_tol=rtol, abs_tol=atol):
        fail(what, expected, value, hint)


def expect_choice(what: str, got: Any, expected: str, choices: Iterable[str], hint: str = "") -> None:
    choices = tuple(choices)
    if got not in choices:
        raise CheckFailure(f"{what}: expected one of {', '.join(map(repr, choices))}, got {got!r}")
    if got != expected:
        fail(what, expected, got, hint)


# float precision the backend's arithmetic can be held to, relative to a float64 reference
RTOL = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 2e-4, "float64": 1e-9}


def to_host(a: Any) -> np.ndarray:
    """NumPy view of a NumPy, CuPy or JAX array."""
    if hasattr(a, "get") and type(a).__module__.split(".")[0] == "cupy":
        a = a.get()
    return np.asarray(a)


def expect_array_close(what: str, got: Any, expected: Any, rtol: float | None = None, atol: float | None = None) -> None:
    """Shape, then values (within the dtype's precision); reports the worst element."""
    if got is None:
        raise CheckFailure(f"{what}: expected an array, got None (did you forget `return`?)")
    try:
        g = to_host(got)
    except Exception:
        raise CheckFailure(f"{what}: expected an array, got {type(got).__name__}") from None
    e = to_host(expected)
    if g.shape != e.shape:
        fail(f"{what} shape", tuple(e.shape), tuple(g.shape))
    if rtol is None:
        rtol = RTOL.get(str(g.dtype), 1e-6)
    if atol is None:
        atol = rtol * max(1.0, float(np.max(np.abs(e)))) if e.size else 0.0
    if not np.issubdtype(g.dtype, np.number):
        raise CheckFailure(f"{what}: expected numbers, got an array of dtype {g.dtype}")
    err = np.abs(g.astype(np.float64) - e.astype(np.float64))
    bad = ~(err <= atol + rtol * np.abs(e.astype(np.float64)))  # NaN counts as bad
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckFailure(
            f"{what}: {int(bad.sum())} of {g.size} elements are wrong; first at index {idx}: "
            f"expected {show(float(e[idx]))}, got {show(float(g[idx]))}"
        )
