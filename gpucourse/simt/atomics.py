"""``cuda.atomic.*``: read-modify-write of one element of global or shared memory, with numba-cuda's
semantics (docs/source/reference/kernel.rst): each returns the old value; integers wrap like the
hardware; ``inc``/``dec`` wrap at the limit like CUDA's atomicInc/atomicDec; ``max``/``min`` keep
the stored value when either side is NaN, ``nanmax``/``nanmin`` treat NaN as missing. Atomics never
race with each other; against plain accesses they do.
"""

from __future__ import annotations

from typing import Any, Callable

from . import state
from .state import running as _run
from .memory import TracedArray
from .numbatypes import typed
from .values import Uninit, cast


# The element types numba-cuda types each atomic on (numba_cuda/numba/cuda/cudadecl.py:
# all_numba_types, integer_numba_types, unsigned_int_numba_types): any other dtype is a TypingError
# when compiled for a GPU.
_ALL = ("int32", "uint32", "int64", "uint64", "float32", "float64")
_INTS = ("int32", "uint32", "int64", "uint64")
DTYPES = {**dict.fromkeys(("add", "sub", "max", "min", "nanmax", "nanmin"), _ALL),
          **dict.fromkeys(("and_", "or_", "xor", "exch", "cas"), _INTS),
          **dict.fromkeys(("inc", "dec"), ("uint32", "uint64"))}


def _check_dtype(name: str, dtype: Any) -> None:
    allowed = DTYPES.get(name)
    if allowed is not None and dtype is not None and dtype.name not in allowed:
        hint = " (an unsigned counter: np.uint32)" if name in ("inc", "dec") else ""
        article = "an" if dtype.name[0] in "aeiou" else "a"
        raise TypeError(
            f"cuda.atomic.{name} on {article} {dtype.name} array: numba-cuda supports it on "
            f"{', '.join(allowed)} arrays only{hint}, so this kernel does not compile for a GPU"
        )


def _operand(run: Any, v: Any, what: str) -> Any:
    if isinstance(v, Uninit):
        run.uninit_use(v.origin, f"it is the operand of cuda.atomic.{what}")
        return 0
    return v


class _Atomic:
    """cuda.atomic.*: read-modify-write of one element, returning the old value (numba-cuda's
    semantics)."""

    @staticmethod
    def _do(name: str, ary: Any, idx: Any, op: Callable[[Any], Any]) -> Any:
        run = _run(f"atomic.{name}")
        if not isinstance(ary, TracedArray):
            raise TypeError(
                f"cuda.atomic.{name} needs an array element of global or shared memory (a kernel"
                f" argument or a cuda.shared.array), got {type(ary).__name__}"
            )
        root = ary._root
        _check_dtype(name, root.dtype)
        if root.readonly:
            raise TypeError(f"cuda.atomic.{name}: {root.name} is constant memory (read-only)")
        key, flat = ary.element(idx)
        old = ary._a[key]
        if root.init is not None and not root.init[flat]:
            run.uninit_use(run.uninit_read(root, flat).origin, f"cuda.atomic.{name} updates it")
        new = op(old)
        changed = not (new == old or (new != new and old != old))
        if changed:
            ary._a[key] = cast(new, root.dtype) if root.dtype.kind in "iu" else new
        if root.init is not None:
            root.init[flat] = 1
        run.on_atomic(root, flat, changed)
        return typed(old)

    @classmethod
    def _val(cls, ary: Any, v: Any, name: str) -> Any:
        run = state.CURRENT.run
        v = _operand(run, v, name) if run is not None else v
        dt = getattr(ary, "dtype", None)
        return cast(v, dt) if dt is not None else v

    @classmethod
    def add(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "add")
        return cls._do("add", ary, idx, lambda o: o + v)

    @classmethod
    def sub(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "sub")
        return cls._do("sub", ary, idx, lambda o: o - v)

    @classmethod
    def and_(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "and_")
        return cls._do("and_", ary, idx, lambda o: o & v)

    @classmethod
    def or_(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "or_")
        return cls._do("or_", ary, idx, lambda o: o | v)

    @classmethod
    def xor(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "xor")
        return cls._do("xor", ary, idx, lambda o: o ^ v)

    @classmethod
    def exch(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "exch")
        return cls._do("exch", ary, idx, lambda o: v)

    @classmethod
    def inc(cls, ary: Any, idx: Any, val: Any) -> Any:
        """``ary[idx] = 0 if ary[idx] >= val else ary[idx] + 1`` (CUDA's atomicInc: a counter that
        wraps at val)."""
        v = cls._val(ary, val, "inc")
        return cls._do("inc", ary, idx, lambda o: o - o if o >= v else o + 1)

    @classmethod
    def dec(cls, ary: Any, idx: Any, val: Any) -> Any:
        """``ary[idx] = val if ary[idx] == 0 or ary[idx] > val else ary[idx] - 1`` (CUDA's
        atomicDec)."""
        v = cls._val(ary, val, "dec")
        return cls._do("dec", ary, idx, lambda o: v if (o == 0 or o > v) else o - 1)

    @classmethod
    def max(cls, ary: Any, idx: Any, val: Any) -> Any:
        """Python's max with the stored value first: a NaN on either side leaves the stored
        value."""
        v = cls._val(ary, val, "max")
        return cls._do("max", ary, idx, lambda o: v if v > o else o)

    @classmethod
    def min(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "min")
        return cls._do("min", ary, idx, lambda o: v if v < o else o)

    @classmethod
    def nanmax(cls, ary: Any, idx: Any, val: Any) -> Any:
        """NaN counts as missing: the other value wins."""
        v = cls._val(ary, val, "nanmax")
        return cls._do("nanmax", ary, idx, lambda o: v if (o != o or v > o) else o)

    @classmethod
    def nanmin(cls, ary: Any, idx: Any, val: Any) -> Any:
        v = cls._val(ary, val, "nanmin")
        return cls._do("nanmin", ary, idx, lambda o: v if (o != o or v < o) else o)

    @classmethod
    def cas(cls, ary: Any, idx: Any, old: Any, val: Any) -> Any:
        """``if ary[idx] == old: ary[idx] = val``; returns the value found."""
        cmp, v = cls._val(ary, old, "cas"), cls._val(ary, val, "cas")
        return cls._do("cas", ary, idx, lambda o: v if o == cmp else o)

    @classmethod
    def compare_and_swap(cls, ary: Any, old: Any, val: Any) -> Any:
        """The older form: element 0 of a 1-D array."""
        return cls.cas(ary, 0, old, val)
