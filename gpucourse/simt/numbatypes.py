"""Scalar arithmetic in the types numba-cuda gives it, not NumPy's (NEP 50).

numba-cuda types a Python float literal or float argument as float64 and an int literal or argument
as int64, and mixes them with a float32 or a small integer the way its typing rules say
(``numba/core/typing/builtins.py``, checked against ``numba.cuda.compile_ptx``): ``float32 * 0.1``,
``float32 / 3``, ``float32 * float64`` and ``acc = 0.0; acc += float32`` are float64 (the GPU
converts with ``cvt.f64.f32`` and computes in FP64, the trap of lab 5); ``int32 * int32``, ``int32
<< 2`` are int64 and ``uint32 - uint32`` is uint64 (numba promotes every integer operand to 64
bits); ``float32 ** int`` stays float32. NumPy 2 instead keeps ``np.float32(x) * 0.1`` a float32 (a
Python scalar is "weak"), and ``np.int32 * np.int32`` an int32.

So an element loaded from a float32 array (or a cast ``np.float32(x)``, a float32 argument, a
float32 math result) is an :class:`F32` (a Python float holding the float32's exact value,
``.dtype`` float32) whose operators promote as numba-cuda does; small integers (int8 … uint32) are
subclasses of their NumPy type (``TypedInt32``, ...) whose arithmetic gives an int64 (a Python int)
or, both operands unsigned, a uint64. Python floats and ints (literals, arguments, ``range``) stay
what they are: float64 and int64. The builtins ``min``, ``max`` and ``float`` are typed too
(``max(x_f32, 1.0)`` is a float64, ``float(x_f32)`` a float32), and ``math.floor/ceil/trunc`` give a
float (:mod:`gpucourse.simt.gpumath`). A float64 value made from a float32 operand is noted with the
kernel line that made it (:meth:`gpucourse.simt.launch.Launch.fp64_made`,
``KernelReport.float64_ops``), and so is every operation of a float32 with a value loaded from a
float64 array (:class:`F64`: a float64 accumulator array) — but once a computed value is a
float64, later float64-with-float32 operations are NumPy's own and not counted again, so a line's
count is a lower bound.

Known differences left: int64 arithmetic on Python ints does not wrap at 2**63 (as before); NumPy
functions called on kernel values (``np.sqrt(x)``) follow NumPy's rules; ``isinstance(x,
np.float32)`` inside a kernel sees the executor's types.
"""

from __future__ import annotations

import operator
import sys
from functools import partial
from typing import Any, Callable

import numpy as np

from . import state

_f32 = np.float32
_f64 = np.float64
_MASK64 = (1 << 64) - 1


def _wrap_i64(v: int) -> int:
    if -(1 << 63) <= v < (1 << 63):
        return v
    v &= _MASK64
    return v - (1 << 64) if v >= 1 << 63 else v


def _note(depth: int = 2) -> None:
    """A float64 value is being made from a float32 operand: record the kernel line (the frame
    ``depth`` calls up, or the nearest kernel frame above it)."""
    run = state.CURRENT.run
    if run is not None and run.cur is not None:
        run.fp64_made(sys._getframe(depth))


# -- the numba type of a Python or NumPy scalar ---------------------------------------------------
# (kind, bits): kind "f" float, "i" signed, "u" unsigned, "b" bool; None: not a scalar we type

def _ntype(o: Any) -> tuple[str, int] | None:
    c = o.__class__
    t = _TYPES.get(c)
    if t is not None:
        return t
    if isinstance(o, np.generic):
        dt = o.dtype
        if dt.kind in "fiub":
            return (dt.kind, dt.itemsize * 8)
        return None
    if isinstance(o, bool):
        return ("b", 1)
    if isinstance(o, int):
        return ("i", 64)
    if isinstance(o, float):
        return ("f", 64)
    return None


def _float_result(a: tuple[str, int], b: tuple[str, int]) -> int:
    """Bits of the float result of a float op int/float (numba: np.promote_types of the two)."""
    bits = 0
    for k, n in (a, b):
        if k == "f":
            bits = max(bits, n)
    for k, n in (a, b):
        if k in "iu" and n >= 32:
            return 64  # int32/uint32/int64 with float32: float64
    return max(bits, 32) if bits < 64 else 64


# -- float32 ---------------------------------------------------------------------------------------
# F32 is a Python float holding a float32's value exactly. Arithmetic between two float32s runs on
# the doubles and is rounded once to float32 by adding NumPy's -0.0f (a Python float is "weak" for
# NumPy, so the sum is a float32 and the addition of -0.0 is exact): faster than any NumPy scalar
# constructor, and exact, since for + - * / a float64 result rounded to float32 equals the float32
# operation (53 >= 2 * 24 + 2 bits).

_NZ = np.float32(-0.0)
_fnew = float.__new__


def _f32_arith(name: str, op: Callable[[Any, Any], Any]) -> tuple[Callable, Callable]:
    fop = getattr(float, f"__{name}__") if name in ("add", "sub", "mul") else None

    def f32op(a: float, b: float) -> Any:
        if fop is not None:
            return _fnew(F32, _NZ + fop(a, b))
        # /, //, %, **: NumPy's float32 operation (IEEE inf/nan on 0)
        return _fnew(F32, op(_f32(a), _f32(b)))

    def fwd(self: Any, o: Any) -> Any:
        c = o.__class__
        if c is F32:
            return _fnew(F32, _NZ + fop(self, o)) if fop is not None else f32op(self, o)
        if c is int and name == "pow":
            return F32(_pow_int(_f32(self), o))  # float32 ** integer stays float32
        if c is float or c is int:
            _note()
            return op(_f64(self), o)
        if c is _f32:
            return f32op(self, float(o))
        t = _ntype(o)
        if t is None:
            return NotImplemented
        return _mixed(op, name, self, o, t, False)

    def rev(self: Any, o: Any) -> Any:
        c = o.__class__
        if c is float or c is int:
            _note()
            return op(o, _f64(self))
        if c is _f32:
            return f32op(float(o), self)
        t = _ntype(o)
        if t is None:
            return NotImplemented
        return _mixed(op, name, self, o, t, True)

    fwd.__name__, rev.__name__ = f"__{name}__", f"__r{name}__"
    return fwd, rev


def _mixed(op: Callable, name: str, f: Any, o: Any, t: tuple[str, int], reverse: bool) -> Any:
    if t[0] in "iub" and name == "pow" and not reverse:
        return F32(_pow_int(_f32(f), int(o)))
    bits = _float_result(("f", 32), t)
    if bits == 32:
        a, b = _f32(f), _f32(o)
        return F32(op(b, a) if reverse else op(a, b))
    _note()
    a, b = _f64(f), _f64(o)
    return op(b, a) if reverse else op(a, b)


def _pow_int(base: Any, exp: int) -> Any:
    """numba's float ** integer: exponentiation by squaring in the base's float type (numbers.py
    int_power_impl)."""
    float_type = base.__class__
    r = float_type(1)
    invert = exp < 0
    e = -exp if invert else exp
    a = base
    while e:
        if e & 1:
            r = float_type(r * a)
        e >>= 1
        if not e:
            break
        a = float_type(a * a)
    return float_type(float_type(1) / r) if invert else r


class F32(float):
    """A float32 value in a kernel (its exact value, as a Python float): arithmetic as numba-cuda
    types it (float32 with float32 and small ints, float64 with a Python float or int, a float64 or
    an int32/int64). Comparisons are float's own: numba-cuda compares a float32 with a float64 in
    float64, which is exact."""

    __slots__ = ()
    dtype = np.dtype(np.float32)
    itemsize = 4

    def __new__(cls, value: Any = 0.0) -> "F32":
        with np.errstate(over="ignore"):
            return _fnew(cls, _f32(value))  # rounded to nearest float32

    __add__, __radd__ = _f32_arith("add", operator.add)
    __sub__, __rsub__ = _f32_arith("sub", operator.sub)
    __mul__, __rmul__ = _f32_arith("mul", operator.mul)
    __truediv__, __rtruediv__ = _f32_arith("truediv", operator.truediv)
    __floordiv__, __rfloordiv__ = _f32_arith("floordiv", operator.floordiv)
    __mod__, __rmod__ = _f32_arith("mod", operator.mod)
    __pow__, __rpow__ = _f32_arith("pow", operator.pow)
    __hash__ = float.__hash__

    def __divmod__(self, o: Any) -> Any:
        return (self // o, self % o)

    def __neg__(self) -> "F32":
        return _fnew(F32, -float(self))

    def __pos__(self) -> "F32":
        return self

    def __abs__(self) -> "F32":
        return _fnew(F32, abs(float(self)))

    def __repr__(self) -> str:
        return repr(_f32(self))

    def __str__(self) -> str:
        return str(_f32(self))

    def __reduce__(self) -> Any:
        return (F32, (float(self),))

    def item(self) -> float:
        return float(self)


as_f32 = partial(_fnew, F32)
"""``as_f32(v)``: a float32 loaded from memory (a NumPy float32) as a kernel value: exact, no
rounding needed (a C call: loads are the executor's hot path)."""


# -- small integers --------------------------------------------------------------------------------

def _int_arith(name: str, op: Callable[[int, int], Any]) -> tuple[Callable, Callable]:
    def calc(a: Any, type_a: tuple, b: Any, type_b: tuple) -> Any:
        if type_a[0] == "f" or type_b[0] == "f":
            return NotImplemented  # F32/float: their own methods (or float arithmetic) decide
        if name == "truediv":
            return _f64(int(a)) / _f64(int(b))
        if name == "pow":
            int_a, int_b = int(a), int(b)
            if int_b < 0:
                return 0 if abs(int_a) != 1 else (int_a if int_b % 2 else 1)
            r = int_a ** int_b
        else:
            r = op(int(a), int(b))
        if type_a[0] == "u" and type_b[0] in "ub":
            return np.uint64(r & _MASK64)  # both unsigned: uint64
        if type_b[0] == "u" and type_a[0] in "ub":
            return np.uint64(r & _MASK64)
        if (type_a == ("u", 64) or type_b == ("u", 64)):
            return _wrap_i64(r)  # numba-cuda: uint64 op int64 is int64
        return _wrap_i64(r)

    def fwd(self: Any, o: Any) -> Any:
        c = o.__class__
        if c is int:
            return (
                _wrap_i64(op(int(self), o))
                if name not in ("truediv", "pow")
                else calc(self, self._nt, o, ("i", 64))
            )
        if c is float:
            return op(_f64(int(self)), o) if name != "pow" else _f64(int(self)) ** o
        t = _ntype(o)
        if t is None or t[0] == "f":
            if t is not None and o.__class__ is not F32:
                return _int_float(op, name, self, o, t, False)
            return NotImplemented
        return calc(self, self._nt, o, t)

    def rev(self: Any, o: Any) -> Any:
        c = o.__class__
        if c is int:
            return (
                _wrap_i64(op(o, int(self)))
                if name not in ("truediv", "pow")
                else calc(o, ("i", 64), self, self._nt)
            )
        if c is float:
            return op(o, _f64(int(self)))
        t = _ntype(o)
        if t is None:
            return NotImplemented
        if t[0] == "f":
            return _int_float(op, name, self, o, t, True)
        return calc(o, t, self, self._nt)

    return fwd, rev


def _int_float(op: Callable, name: str, i: Any, f: Any, t: tuple, reverse: bool) -> Any:
    bits = _float_result(i._nt, t)
    float_type = _f64 if bits == 64 else _f32
    a, b = float_type(int(i)), float_type(f)
    r = op(b, a) if reverse else op(a, b)
    return F32(r) if bits == 32 else r


def _int_shift(op: Callable) -> tuple[Callable, Callable]:
    def fwd(self: Any, o: Any) -> Any:
        t = _ntype(o)
        if t is None or t[0] == "f":
            return NotImplemented
        r = op(int(self), int(o))
        return np.uint64(r & _MASK64) if self._nt[0] == "u" else _wrap_i64(r)

    def rev(self: Any, o: Any) -> Any:
        t = _ntype(o)
        if t is None or t[0] == "f":
            return NotImplemented
        r = op(int(o), int(self))
        return np.uint64(r & _MASK64) if t[0] == "u" and self._nt[0] == "u" else _wrap_i64(r)

    return fwd, rev


def _int_cmp(op: Callable) -> Callable:
    def cmp(self: Any, o: Any) -> Any:
        t = _ntype(o)
        if t is None:
            return NotImplemented
        if t[0] == "f":
            return op(float(int(self)), float(o))
        return op(int(self), int(o))
    return cmp


def _small_int(base: type) -> type:
    dt = np.dtype(base)
    ns: dict[str, Any] = {
        "__slots__": (),
        "_nt": (dt.kind, dt.itemsize * 8),
        "__hash__": base.__hash__,
        "__doc__": (
            f"A {dt.name} value in a kernel: arithmetic promotes to 64 bits as in numba-cuda."
        ),
    }
    for name, op in (
        ("add", operator.add),
        ("sub", operator.sub),
        ("mul", operator.mul),
        ("truediv", operator.truediv),
        ("floordiv", operator.floordiv),
        ("mod", operator.mod),
        ("pow", operator.pow),
        ("and", operator.and_),
        ("or", operator.or_),
        ("xor", operator.xor),
    ):
        ns[f"__{name}__"], ns[f"__r{name}__"] = _int_arith(name, op)
    ns["__lshift__"], ns["__rlshift__"] = _int_shift(operator.lshift)
    ns["__rshift__"], ns["__rrshift__"] = _int_shift(operator.rshift)
    for name, op in (
        ("lt", operator.lt),
        ("le", operator.le),
        ("gt", operator.gt),
        ("ge", operator.ge),
        ("eq", operator.eq),
        ("ne", operator.ne),
    ):
        ns[f"__{name}__"] = _int_cmp(op)
    unsigned = dt.kind == "u"
    # numba negates/inverts in the operand's own width, then extends to 64 bits (-uint8(200) is 56,
    # -int32(-2**31) stays -2**31)
    own = (1 << dt.itemsize * 8) - 1
    if unsigned:
        ns["__neg__"] = lambda self: np.uint64(-int(self) & own)
        ns["__invert__"] = lambda self: np.uint64(~int(self) & own)
    else:
        half = (own + 1) // 2

        def neg(self: Any) -> int:
            v = -int(self) & own
            return v - own - 1 if v >= half else v

        ns["__neg__"] = neg
        ns["__invert__"] = lambda self: ~int(self)
    ns["__pos__"] = lambda self: self
    ns["__abs__"] = lambda self: cls(abs(int(self))) if not unsigned else self
    ns["__repr__"] = ns["__str__"] = lambda self: repr(base(self))
    ns["__reduce__"] = lambda self: (base, (int(self),))
    cls = type(f"Typed{dt.name.capitalize()}", (base,), ns)
    return cls


I8, I16, I32 = _small_int(np.int8), _small_int(np.int16), _small_int(np.int32)
U8, U16, U32 = _small_int(np.uint8), _small_int(np.uint16), _small_int(np.uint32)

_TYPES: dict[type, tuple[str, int]] = {
    float: ("f", 64), int: ("i", 64), bool: ("b", 1), np.bool_: ("b", 1),
    F32: ("f", 32), np.float32: ("f", 32), np.float64: ("f", 64), np.float16: ("f", 16),
    np.int64: ("i", 64), np.uint64: ("u", 64),
}
for _c in (I8, I16, I32, U8, U16, U32):
    _TYPES[_c] = _c._nt
    _TYPES[_c.__mro__[1]] = _c._nt

def _f64_arith(name: str, op: Callable[[Any, Any], Any], always: bool) -> tuple[Callable, Callable]:
    """The operator pair of a float64 kernel value: noted with every operand (``always``: a
    :class:`J64`, made from a float32) or only with a float32 one (an :class:`F64`)."""

    def noted(o: Any) -> bool:
        c = o.__class__
        return always or c is F32 or c is _f32

    def fwd(self: Any, o: Any) -> Any:
        if always and _ntype(o) is None:
            return NotImplemented
        if noted(o):
            _note()
        return op(_f64(self), _f64(o) if o.__class__ is F32 else o)

    def rev(self: Any, o: Any) -> Any:
        if always and _ntype(o) is None:
            return NotImplemented
        if noted(o):
            _note()
        return op(_f64(o) if o.__class__ is F32 else o, _f64(self))

    fwd.__name__, rev.__name__ = f"__{name}__", f"__r{name}__"
    return fwd, rev


def _f64_operators(cls: type, always: bool) -> type:
    """Install the arithmetic operators of a float64 kernel-value class (see :func:`_f64_arith`)."""
    for name, op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                     ("mod", operator.mod), ("pow", operator.pow)):
        fwd, rev = _f64_arith(name, op, always)
        setattr(cls, f"__{name}__", fwd)
        setattr(cls, f"__r{name}__", rev)
    return cls


class J64(float):
    """A float32 made float64: by a conditional that joins it with a float64 (``x if c else 0.0``,
    numba-cuda's unification), by a cast (``np.float64(x)``), or by a store into a float64 shared
    or local array and a load back. The conversion itself is not arithmetic: stored straight back
    into a float32 array it costs two F2F at most (ptxas may remove them), and nothing is noted.
    Any arithmetic it takes part in is FP64 on a value made from a float32 (``v = x[i] if c else
    -math.inf; e = math.exp(v - m)``): noted at that line, and the result is a NumPy float64."""

    __slots__ = ()
    dtype = np.dtype(np.float64)
    itemsize = 8

    __hash__ = float.__hash__


_f64_operators(J64, always=True)


class F64(np.float64):
    """A float64 loaded from a float64 array (a local or shared array the kernel made float64, or a
    float64 argument). Its arithmetic with a float32 value is a float64 made from a float32 operand
    (``cvt.f64.f32``, then an FP64 instruction: ``acc = cuda.local.array(n, np.float64); acc[c] =
    acc[c] * alpha + p``), noted as F32's own mixed operations are — NumPy's float64 would take the
    float32 as a Python float and say nothing. Otherwise NumPy's float64, and its results plain
    NumPy float64s."""

    __slots__ = ()

    __hash__ = np.float64.__hash__


_f64_operators(F64, always=False)

TYPED: dict[np.dtype, Any] = {
    np.dtype(np.float32): as_f32,
    np.dtype(np.float64): F64,
    np.dtype(np.int8): I8,
    np.dtype(np.int16): I16,
    np.dtype(np.int32): I32,
    np.dtype(np.uint8): U8,
    np.dtype(np.uint16): U16,
    np.dtype(np.uint32): U32,
}
"""dtype -> the class of a kernel's values of that type (no entry: the NumPy scalar or Python
value as is)."""


def joined(v: Any, *others: Any) -> Any:
    """The value of a conditional (``x if c else 0.0``, or a variable an ``if`` assigns ``x`` on one
    side and a number literal on the other) as numba-cuda types it: one type for both sides, their
    unification — float32 with a Python float or an int64 is float64 (the float32 side is converted;
    a conversion is not float64 arithmetic, so it is not noted: the arithmetic a float64 value then
    takes part in with a float32 is), a small integer with an int is int64.
    ``others``: the values of the sides whose type is known without running them (a number,
    ``-0.0``, ``float(0)``), or a str: the name of a variable, looked up in the kernel's frame
    (``x if c else zero`` with ``zero = 0.0``); an unbound name is left out."""
    for other in others:
        if isinstance(other, str):
            frame = sys._getframe(1)
            scope = frame.f_locals if other in frame.f_locals else frame.f_globals
            if other not in scope:
                continue
            other = scope[other]
        v = _join_one(v, other)
    return v


def _join_one(v: Any, other: Any) -> Any:
    t, u = _ntype(v), _ntype(other)
    if t is None or u is None or isinstance(v, bool) or isinstance(other, bool):
        return v
    kind, bits = t
    if u[0] == "f" and u[1] == 64 or u[0] in "iu" and u[1] == 64:
        if kind == "f" and bits == 32:
            # a conversion, not arithmetic: not noted here. Stored straight back into a float32
            # array, ptxas keeps at most the two F2F conversions (or none: lab 5b's dot); the
            # arithmetic it then takes part in is noted there (J64)
            return _fnew(J64, float(v))
        if u[0] == "f":
            return float(v) if kind in "iu" else v
        return int(v) if kind in "iu" and bits < 64 else v
    return v


def typed(v: Any) -> Any:
    """``v`` (a NumPy scalar) as a kernel value typed like numba-cuda."""
    if not isinstance(v, np.generic):
        return v
    c = TYPED.get(v.dtype)
    return c(v) if c is not None else v


# -- builtins min/max: numba-cuda types the result as the operands promoted (np.promote_types) -----

def _dtype_of(v: Any) -> np.dtype | None:
    t = _ntype(v)
    if t is None:
        return None
    k, bits = t
    return np.dtype(np.bool_) if k == "b" else np.dtype(f"{k}{bits // 8}")


def _minmax(pick: Callable) -> Callable:
    def typed_pick(*args: Any, **kw: Any) -> Any:
        r = pick(*args, **kw)
        if kw or len(args) < 2:
            return r
        dts = [_dtype_of(a) for a in args]
        if any(d is None for d in dts):
            return r
        dt = np.result_type(*dts)
        have = _dtype_of(r)
        if have == dt:
            return r
        if dt.kind == "f" and dt.itemsize == 8:
            if any(d == np.float32 for d in dts):
                _note()
            return _f64(r)
        if dt.kind in "iu" and dt.itemsize == 8:
            return int(r) if dt.kind == "i" else np.uint64(int(r))
        if dt == np.float32:
            return F32(r)
        c = TYPED.get(dt, dt.type)
        return c(dt.type(r))

    typed_pick.__name__ = typed_pick.__qualname__ = pick.__name__
    typed_pick.__doc__ = (
        f"{pick.__name__}(...) typed as numba-cuda types it: the operands' promoted type."
    )
    return typed_pick


def _float(x: Any = 0.0) -> Any:
    """float(x) as numba-cuda types it: a float32 stays a float32; anything else is a float64."""
    if x.__class__ is F32:
        return x
    if isinstance(x, np.float32):
        return as_f32(x)
    return float(x)


_float.__name__ = _float.__qualname__ = "float"

BUILTINS = {"min": _minmax(min), "max": _minmax(max), "float": _float}
"""Builtins a kernel gets in their numba-cuda-typed version
(:func:`gpucourse.simt.instrument.rebind`)."""


def from_float32(v: Any) -> bool:
    """``v`` is a float32 kernel value, or a float64 made from one (:class:`J64`)."""
    c = v.__class__
    return c is F32 or c is J64 or c is _f32


def to_j64(v: Any) -> "J64":
    """``v`` as a :class:`J64`: a float64 whose arithmetic is noted."""
    return _fnew(J64, float(v))
