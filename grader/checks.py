"""Shared check functions for nbgrader test cells.

Every check raises :class:`CheckFailure` (an ``AssertionError``) with a message a student can act
on: ``"gemm_k(64, 32, 65_536, 14_336, 'float32') → k: expected 16, got 32"``. Checks never print
to stderr: nbgrader scores a test cell that writes anything there as 0.

Messages never show two different values the same way: :func:`show_pair` prints the expected and the
received value with the fewest digits that tell them apart, and names the types (NumPy dtype, int vs
float) when the values print alike (``expected 0.300000012 (float32), got 0.3 (float64)``, never
"expected 0.3, got 0.3"). In a notebook a failure renders as its message alone
(:mod:`grader.feedback`), not as a traceback through the grader.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable

import numpy as np


class CheckFailure(AssertionError):
    """A student's answer is wrong; the message says what was expected and what came back."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback (see grader.feedback): the message first, the
        student's own frames when their code raised, never the grader's frames."""
        from .feedback import render_failure

        return render_failure(self)


# significant digits of a float in a message, unless more are needed to tell two values apart
DIGITS = 6


def show(x: Any, digits: int | None = DIGITS, sep: str = ",") -> str:
    """Format a value for a message: thousands separators for ints (``1,000``; ``1_000`` inside a
    tuple or with ``sep="_"``, e.g. in an argument list, where a comma would be ambiguous),
    ``digits`` significant digits for floats, ``(1,)`` for a one-element tuple, shape and dtype for
    an array. ``digits=None``: the shortest text that reads back as the same float."""
    if isinstance(x, (bool, np.bool_)) or x is None:
        return repr(bool(x)) if isinstance(x, np.bool_) else repr(x)
    if isinstance(x, np.str_):
        return repr(str(x))
    if isinstance(x, (str, bytes)):
        return repr(x)
    if isinstance(x, Integral):
        return f"{int(x):{sep}}"
    if isinstance(x, Real):
        x = float(x)
        if digits is None or not math.isfinite(x):
            return repr(x)
        return f"{x + 0.0:.{digits}g}"  # + 0.0: a negative zero prints as 0
    if isinstance(x, tuple):
        inner = ", ".join(show(v, digits, "_") for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"array of shape {shape_text(x.shape)} and dtype {x.dtype}"
    return repr(x)


def shape_text(shape: Iterable[int]) -> str:
    """``(3, 4)``, ``(5,)``: an array shape as Python writes it (no thousands separators)."""
    return repr(tuple(int(d) for d in shape))


def _type_name(x: Any) -> str:
    dtype = getattr(x, "dtype", None)
    # a NumPy scalar: its dtype says float32 vs float64
    if dtype is not None and not hasattr(x, "__len__"):
        return str(dtype)
    return type(x).__name__


def _alike(a: str, b: str) -> bool:
    """Two formatted values that a reader would take for the same number ("1,000" vs "1000")."""
    return a.replace(",", "").replace("_", "") == b.replace(",", "").replace("_", "")


def show_pair(expected: Any, got: Any) -> tuple[str, str]:
    """``(show(expected), show(got))``, with enough digits to see that they differ, and their types
    named when the types differ but the values print alike."""
    e, g = show(expected), show(got)
    if not _alike(e, g):
        return e, g
    for digits in (9, 12, None):
        shown_expected, shown_got = show(expected, digits), show(got, digits)
        if not _alike(shown_expected, shown_got):
            e, g = shown_expected, shown_got
            break
    type_expected, type_got = _type_name(expected), _type_name(got)
    numpy_types = isinstance(expected, np.generic) or isinstance(got, np.generic)
    # float32 vs float64 is the likely mistake: say it
    if _alike(e, g) or (type_expected != type_got and numpy_types):
        e, g = f"{e} ({type_expected})", f"{g} ({type_got})"
    return e, g


def fail(what: str, expected: Any, got: Any, hint: str = "") -> None:
    e, g = show_pair(expected, got)
    raise CheckFailure(f"{what}: expected {e}, got {g}" + (f". Hint: {hint}" if hint else ""))


def _both_nan(a: Any, b: Any) -> bool:
    try:
        return isinstance(a, (Real, np.number)) and isinstance(b, (Real, np.number)) \
            and math.isnan(float(a)) and math.isnan(float(b))
    except (TypeError, ValueError):
        return False


def expect_type(what: str, got: Any, types: type | tuple[type, ...], description: str) -> None:
    if isinstance(got, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise CheckFailure(f"{what}: expected {description}, got the bool {got!r}")
    if not isinstance(got, types):
        raise CheckFailure(f"{what}: expected {description}, got {type(got).__name__} {show(got)}")


def expect_tuple(what: str, got: Any, names: str) -> tuple:
    """A function that must return several values: ``names`` lists them, e.g. "flops, bytes".
    Returns the tuple."""
    n = len(names.split(","))
    if not isinstance(got, (tuple, list)) or len(got) != n:
        hint = " (did you forget `return`?)" if got is None else ""
        if isinstance(got, (tuple, list)):
            desc = (
                f"a {type(got).__name__} of {len(got)}:"
                f" {_clip(show(got if isinstance(got, tuple) else list(got)))}"
            )
        else:
            desc = f"{type(got).__name__} {_clip(show(got))}" if got is not None else "None"
        raise CheckFailure(f"{what}: expected a tuple ({names}), got {desc}{hint}")
    return tuple(got)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def expect_equal(what: str, got: Any, expected: Any, hint: str = "") -> None:
    if _both_nan(got, expected):
        return
    if got != expected:
        fail(what, expected, got, hint)


INT53 = 2**53  # the largest range in which a float64 holds every integer exactly
INT64 = 2**63


def expect_int(what: str, got: Any, expected: int, hint: str = "") -> None:
    """An exact integer answer (a NumPy integer or an integral float like 6.0 counts as an int)."""
    if isinstance(got, (Real, np.number)) and not isinstance(got, (bool, np.bool_)):
        value = float(got)
        if math.isfinite(value) and value.is_integer() and int(got) == expected:
            return
        if isinstance(got, (float, np.floating)) and abs(expected) > INT53 and math.isfinite(value):
            hint = hint or ("a float holds every integer exactly only up to 2**53; "
                            "compute with Python ints (// instead of /)")
        elif isinstance(got, np.integer) and not -INT64 <= expected < INT64:
            hint = hint or (
                f"the answer does not fit in {got.dtype}: NumPy integers overflow silently; "
                "compute with Python ints (int(...))"
            )
    elif got is None:
        fail(what, expected, got, hint or "your function returned None: did you forget `return`?")
    elif not isinstance(got, (bool, np.bool_)):
        raise CheckFailure(
            f"{what}: expected the integer {show(expected)}, got {type(got).__name__} "
            f"{_clip(show(got))}"
            + (f". Hint: {hint}" if hint else "")
        )
    fail(what, expected, got, hint)


def expect_close(
    what: str, got: Any, expected: float, rtol: float = 1e-6, atol: float = 0.0, hint: str = ""
) -> None:
    if got is None:
        fail(what, expected, got, hint or "your function returned None: did you forget `return`?")
    try:
        value = float(got)
    except (TypeError, ValueError):
        raise CheckFailure(
            f"{what}: expected a number close to {show(expected)}, got {type(got).__name__} "
            f"{_clip(show(got))}"
        ) from None
    if _both_nan(value, expected) or math.isclose(value, expected, rel_tol=rtol, abs_tol=atol):
        return
    e, g = show_pair(expected, got)
    near = ""
    if (
        math.isfinite(value)
        and math.isfinite(expected)
        and expected != 0
        and abs(value - expected) < 1e-3 * abs(expected)
    ):
        near = (
            f" (relative difference {abs(value - expected) / abs(expected):.1e}, more than the"
            f" {rtol:g} allowed)"
        )
    raise CheckFailure(f"{what}: expected {e}, got {g}{near}" + (f". Hint: {hint}" if hint else ""))


def expect_choice(
    what: str, got: Any, expected: str, choices: Iterable[str], hint: str = ""
) -> None:
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


def expect_array_close(
    what: str,
    got: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    dtype: Any = None,
) -> None:
    """Shape (and ``dtype`` when given), then values within the dtype's precision. A failure says
    how many elements are wrong, which is the first and where the largest error is. NaN matches NaN,
    inf matches inf."""
    if got is None:
        raise CheckFailure(f"{what}: expected an array, got None (did you forget `return`?)")
    try:
        g = to_host(got)
    except Exception:
        raise CheckFailure(f"{what}: expected an array, got {type(got).__name__}") from None
    e = to_host(expected)
    if g.shape != e.shape:
        dtypes = f" (and dtype {g.dtype}, expected {np.dtype(dtype)})" if dtype is not None and \
            g.dtype != np.dtype(dtype) else ""
        transposed = ". Hint: is it transposed?" if g.ndim == 2 and g.shape == e.shape[::-1] else ""
        raise CheckFailure(
            f"{what} shape: expected {shape_text(e.shape)}, got {shape_text(g.shape)}"
            f"{dtypes}{transposed}"
        )
    if dtype is not None and g.dtype != np.dtype(dtype):
        raise CheckFailure(f"{what}: expected dtype {np.dtype(dtype)}, got {g.dtype} (the shape "
                           f"{shape_text(g.shape)} is right)")
    if g.dtype == bool and e.dtype == bool:
        bad = g != e
    else:
        if not np.issubdtype(g.dtype, np.number):
            raise CheckFailure(f"{what}: expected numbers, got an array of dtype {g.dtype}")
        if rtol is None:
            rtol = RTOL.get(str(g.dtype), 1e-6)
        got64, expected64 = g.astype(np.float64), e.astype(np.float64)
        finite = np.isfinite(expected64)
        if atol is None:
            atol = (
                rtol * max(1.0, float(np.max(np.abs(expected64[finite])))) if finite.any() else 0.0
            )
        with np.errstate(invalid="ignore"):
            err = np.abs(got64 - expected64)
            # an infinite expected value only matches itself (|inf - -inf| <= rtol·inf would hold)
            ok = (
                (finite & (err <= atol + rtol * np.abs(expected64)))
                | (got64 == expected64)
                | (np.isnan(got64) & np.isnan(expected64))
            )
        bad = ~ok
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        msg = (
            f"{what}: {int(bad.sum()):,} of {g.size:,} elements are wrong; first at index"
            f" {shape_text(first)}: {_elements(e[first], g[first])}"
        )
        if g.dtype != bool and bad.sum() > 1:
            with np.errstate(invalid="ignore"):
                score = np.where(bad, np.nan_to_num(err, nan=np.inf), -1.0)
            worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(score)), g.shape))
            if worst != first:
                msg += (
                    f"; largest error at index {shape_text(worst)}: {_elements(e[worst], g[worst])}"
                )
        raise CheckFailure(msg)


def _elements(expected: Any, got: Any) -> str:
    e, g = show_pair(expected.item() if hasattr(expected, "item") else expected,
                     got.item() if hasattr(got, "item") else got)
    return f"expected {e}, got {g}"
