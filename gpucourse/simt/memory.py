"""Traced memory: every element a kernel reads or writes goes through :class:`TracedArray`.

A :class:`Root` is one allocation — a kernel argument (global memory), one block's
``cuda.shared.array``, one thread's ``cuda.local.array``, a ``cuda.const.array_like`` copy of a
module constant (of a kernel argument it is the argument itself, as numba-cuda compiles it). A
:class:`TracedArray` is a view of a root: the root itself, or a slice (``a[i, :]``, ``a[2:5]``,
``a.T``) that numba-cuda allows inside kernels. Element accesses are checked and recorded against
the root, so a race through a slice is the same race.

Indexing follows numba-cuda: integers only; a negative index wraps like Python (numba-cuda emits the
wrap, so ``a[-1]`` is the last element — the report carries a warning, since in CUDA C it would read
before the array); an index outside the array after wrapping is an error here (on a GPU it reads or
corrupts other memory, or stops the kernel with "an illegal memory access"; compute-sanitizer's
memcheck reports it).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .errors import NotModelled, OutOfBounds
from .numbatypes import TYPED, from_float32, to_j64
from .values import Uninit, cast, poison_value

# access kinds, as logged (SAME: a write of the value already there)
READ, WRITE, ATOMIC, SAME = 0, 1, 2, 3


class Root:
    """One allocation the executor tracks. ``unit`` is the bytes per tracked position (the itemsize,
    or 1 for the dynamic shared buffer, which every ``cuda.shared.array(0, dtype)`` aliases at byte
    granularity)."""

    __slots__ = (
        "name",
        "space",
        "rid",
        "shape",
        "dtype",
        "unit",
        "size",
        "logged",
        "readonly",
        "init",
        "origins",
        "rel",
        "run",
        "cstrides",
        "_map",
        "block",
        "logapp",
        "ridh",
        "intlike",
        "mode",
    )

    def __init__(
        self,
        run: Any,
        name: str,
        space: str,
        shape: tuple,
        dtype: np.dtype,
        *,
        unit: int | None = None,
        logged: bool = True,
        readonly: bool = False,
        initialised: bool = True,
        block: int = -1,
    ):
        self.run, self.name, self.space = run, name, space
        self.shape, self.dtype = tuple(shape), dtype
        self.unit = dtype.itemsize if unit is None else unit
        self.size = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        self.logged, self.readonly, self.block = logged, readonly, block
        self.intlike = dtype.kind in "iub"  # a store of a float with a fraction here truncates it
        self.init: bytearray | None = None if initialised else bytearray(self.size)
        # 1: logged and initialised (global arguments: the fastest read), 2: logged, 0: neither
        # (local, const)
        self.mode = (1 if initialised else 2) if logged else 0
        self.origins: dict[int, Any] = {}  # flat -> Origin of an uninitialised value stored there
        # flat -> {tid: fence seq} released there by fence + atomic
        self.rel: dict[int, dict] | None = None
        strides_, acc = [], 1
        for n in reversed(self.shape):
            strides_.append(acc)
            acc *= n
        self.cstrides = tuple(reversed(strides_))  # C-order strides in positions
        self._map: np.ndarray | None = None
        self.rid = run.add_root(self) if run is not None else -1
        # the access log takes 3 int64 words per access (see launch.Launch.log): this root's id sits
        # in bits 40+
        self.logapp = run.log.append if run is not None else None
        self.ridh = self.rid << 40

    def full_map(self) -> np.ndarray:
        """Position of every element of the root's shape (built the first time a slice is taken)."""
        if self._map is None:
            self._map = np.arange(self.size, dtype=np.int64).reshape(self.shape) * (
                1 if self.unit == self.dtype.itemsize else self.dtype.itemsize
            )
        return self._map

    def index_of(self, flat: int) -> tuple:
        """The element index (in the root's shape) of a tracked position."""
        if self.unit != self.dtype.itemsize:  # the byte-addressed dynamic buffer
            return (flat,)
        if len(self.shape) <= 1:
            return (flat,)
        return tuple(int(i) for i in np.unravel_index(flat, self.shape))


class TracedArray:
    """A NumPy array seen through a kernel: element accesses are bounds-checked and recorded."""

    __slots__ = ("_a", "_root", "_run", "_map", "_ndim", "_n0", "_n1", "_conv")

    def __init__(self, a: np.ndarray, root: Root, run: Any, pos_map: np.ndarray | None = None):
        self._a, self._root, self._run, self._map = a, root, run, pos_map
        self._ndim = a.ndim
        self._n0 = a.shape[0] if a.ndim else 1
        self._n1 = a.shape[1] if a.ndim > 1 else 1
        # a load gives a value typed as numba-cuda types it (F32, I32, ...)
        self._conv = TYPED.get(a.dtype)

    # -- what a kernel may ask an array ------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    dtype = property(lambda self: self._a.dtype)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    name = property(lambda self: self._root.name)
    space = property(lambda self: self._root.space)

    @property
    def T(self) -> "TracedArray":
        return TracedArray(self._a.T, self._root, self._run, self._positions().T)

    def __len__(self) -> int:
        return self._n0

    def __iter__(self):
        # `sum(s)`, `max(s)`, `for v in s`: numba-cuda compiles a loop over the elements in the
        # calling thread, so each element after the first is one more issued step of that thread's
        # statement (as a written-out loop's body is): a serial reduction's SIMT efficiency shows,
        # however it is spelled
        t = self._run.cur if self._run is not None else None
        for i in range(self._n0):
            if i and t is not None and t.trace:
                t.trace.append(t.trace[-1])
            yield self[i]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # np.asarray(a) / np.dot(a, b) on a device array inside a kernel: numba-cuda compiles no
        # such thing, and the whole array as a NumPy array would read and write memory the executor
        # neither meters nor checks for races
        raise NotModelled(
            "a device array turned into a NumPy array inside a kernel (np.asarray, np.dot, np.sum,"
            " ...)",
            "a CUDA thread reads and writes device memory element by element: a[i], a[i, j]",
        )

    def __repr__(self) -> str:
        view = "" if self._map is None else " (a view)"
        return f"<{self._root.space} array {self._root.name}{view} {self._a.shape} {self._a.dtype}>"

    def __getattr__(self, name: str) -> Any:
        raise NotModelled(
            f"the array attribute or method `.{name}` inside a kernel",
            "numba-cuda refuses the methods that allocate (.copy(), .ravel()) and compiles others:"
            " views (.reshape(), .transpose(), .flat, .real) and reductions run as serial code in"
            " one thread (.sum(), .fill(), .argmax(), .item()); this executor models only .size,"
            " .shape, .ndim, .dtype, .itemsize, .nbytes, .strides and .T: write the index"
            " arithmetic or the loop, or the parallel version the puzzle asks for",
        )

    def _whole(self, *_: Any) -> Any:
        raise TypeError(
            "whole-array arithmetic does not compile in a CUDA kernel: numba-cuda kernels cannot "
            "allocate arrays. Work element by element (one thread per element, or a loop)"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = (
        _whole
    )
    __matmul__ = __rmatmul__ = __pow__ = __neg__ = __iadd__ = __isub__ = __imul__ = _whole

    # -- element access ----------------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        # The executor's hot loop: the fast paths (2-D (int, int) and 1-D int, in range) inline what
        # _load does for global and shared memory; everything else (views, negative indices, local
        # arrays) takes _load.
        cls = idx.__class__
        if cls is tuple:
            if self._ndim == 2 and len(idx) == 2:
                i, j = idx
                if (
                    i.__class__ is int
                    and j.__class__ is int
                    and 0 <= i < self._n0
                    and 0 <= j < self._n1
                ):
                    root = self._root
                    mode = root.mode
                    if mode:
                        flat = i * self._n1 + j if self._map is None else int(self._map[idx])
                        if mode == 2 and not root.init[flat]:
                            return self._load(idx, flat)
                        t = self._run.cur
                        app = root.logapp
                        app(t.log_tid_bits + len(t.trace))
                        app(root.ridh + flat)
                        app(t.log_epoch_bits)
                        conv = self._conv
                        return conv(self._a[idx]) if conv is not None else self._a[idx]
        elif cls is int and self._ndim == 1:
            if 0 <= idx < self._n0:
                root = self._root
                mode = root.mode
                if mode:
                    flat = idx if self._map is None else int(self._map[idx])
                    if mode == 2 and not root.init[flat]:
                        return self._load(idx, flat)
                    t = self._run.cur
                    app = root.logapp
                    app(t.log_tid_bits + len(t.trace))
                    app(root.ridh + flat)
                    app(t.log_epoch_bits)
                    conv = self._conv
                    return conv(self._a[idx]) if conv is not None else self._a[idx]
        key, flat = self._resolve(idx)
        if flat is None:
            return key  # a view
        return self._load(key, flat)

    def __setitem__(self, idx: Any, value: Any) -> None:
        cls = idx.__class__
        if cls is int and self._ndim == 1:
            if 0 <= idx < self._n0:
                return self._store(idx, idx if self._map is None else int(self._map[idx]), value)
        elif cls is tuple and self._ndim == 2 and len(idx) == 2:
            i, j = idx
            if (
                i.__class__ is int
                and j.__class__ is int
                and 0 <= i < self._n0
                and 0 <= j < self._n1
            ):
                return self._store(
                    idx, i * self._n1 + j if self._map is None else int(self._map[i, j]), value
                )
        key, flat = self._resolve(idx)
        if flat is None:  # a[2:5] = v, a[:] = b[:]: every element, one at a time
            view: TracedArray = key
            src = value if isinstance(value, (TracedArray, np.ndarray)) else None
            if src is not None and tuple(src.shape) != view.shape:
                raise ValueError(
                    f"cannot assign an array of shape {tuple(src.shape)} to a slice of shape"
                    f" {view.shape}"
                )
            for k in np.ndindex(*view.shape):
                view[k] = src[k] if src is not None else value
            return None
        return self._store(key, flat, value)

    def _load(self, key: Any, flat: int) -> Any:
        root = self._root
        value = self._a[key]
        if self._conv is not None:
            value = self._conv(value)
        if root.init is not None and not root.init[flat]:
            value = self._run.uninit_read(root, flat)
        if root.logged:
            t = self._run.cur
            app = root.logapp
            app(t.log_tid_bits + len(t.trace))
            app(root.ridh + flat)
            app(t.log_epoch_bits)
        return value

    def _store(self, key: Any, flat: int, value: Any) -> None:
        root = self._root
        if root.readonly:
            raise TypeError(
                f"{root.name} is constant memory (cuda.const.array_like): kernels can only read it"
            )
        if value.__class__ is Uninit:
            self._a[key] = poison_value(root.dtype)
            # garbage reaches the kernel's output (initcheck's finding on a GPU)
            if root.space == "global":
                self._run.uninit_use(value.origin, f"it is stored to global memory "
                                                   f"{root.name}{list(root.index_of(flat))}")
            if root.init is not None:  # shared/local memory: the element stays uninitialised
                root.init[flat] = 0
                root.origins[flat] = value.origin
        else:
            old = self._a[key]
            try:
                self._a[key] = value
            except (OverflowError, TypeError, ValueError) as exc:
                if isinstance(value, (TracedArray, np.ndarray)):
                    raise TypeError(
                        f"cannot store an array into one element of {root.name}"
                    ) from None
                try:
                    self._a[key] = cast(value, root.dtype)
                except Exception:
                    raise TypeError(
                        f"cannot store {value!r} into {root.name} ({root.dtype}): {exc}"
                    ) from None
            if root.init is not None:
                root.init[flat] = 1
                if self._conv is not to_j64 and self._a.dtype == np.float64 and from_float32(value):
                    # a float32 kept in a float64 shared or local array: its loads are J64
                    self._conv = to_j64
            if root.intlike and isinstance(value, (float, np.floating)) and math.isfinite(value) \
                    and not float(value).is_integer():
                self._run.warn(
                    ("trunc", root.name),
                    f"{root.name} holds {root.dtype} but the kernel stored the float "
                    f"{float(value):g} into it: truncated to {self._a[key]!r} (a dtype mismatch?)",
                )
        if root.logged:
            run = self._run
            new = self._a[key]
            same = value.__class__ is not Uninit and (new == old or (new != new and old != old))
            if not same:
                run.nwrites += 1
            t = run.cur
            app = root.logapp
            app(t.log_tid_bits + len(t.trace))
            app(root.ridh + flat)
            app(t.log_epoch_bits + (SAME if same else WRITE))

    # -- index resolution (the slow path) ----------------------------------------------------------
    def _positions(self) -> np.ndarray:
        return self._root.full_map() if self._map is None else self._map

    def _resolve(self, idx: Any) -> tuple[Any, int | None]:
        """(numpy key, tracked position) of an element, or (view, None) for a slice."""
        items = list(idx) if isinstance(idx, tuple) else [idx]
        sliced = False
        for k, item in enumerate(items):
            if item.__class__ is int:
                continue
            if isinstance(item, (bool, np.bool_)):
                raise TypeError(
                    f"{self._root.name}[{item!r}]: a bool is not an array index in a kernel"
                )
            if isinstance(item, np.integer):
                items[k] = int(item)
            elif isinstance(item, slice) or item is Ellipsis or item is None:
                sliced = True
            elif isinstance(item, Uninit):
                item.__index__()  # reports the use
                raise OutOfBounds(f"{self._root.name}[...]: the index is an uninitialised value")
            elif isinstance(item, (float, np.floating)):
                raise TypeError(
                    f"{self._root.name}[{item!r}]: array indices must be integers, got"
                    f" {type(item).__name__} (numba-cuda refuses to compile a float index; use"
                    " int(...))"
                )
            elif isinstance(item, (TracedArray, np.ndarray, list)):
                raise NotModelled(
                    "indexing an array with an array (fancy indexing)",
                    "numba-cuda does not compile it either: index one element at a time",
                )
            else:
                try:
                    items[k] = operator.index(item)
                except TypeError:
                    raise TypeError(
                        f"{self._root.name}[{item!r}]: array indices must be integers, got "
                        f"{type(item).__name__}"
                    ) from None
        if not sliced and len(items) > self._ndim:
            raise OutOfBounds(
                f"{self._describe(items)}: {len(items)} indices for a {self._ndim}-D array"
            )
        if not sliced:
            shape = self._a.shape
            for axis, i in enumerate(items):
                n = shape[axis]
                if i < 0:
                    if i < -n:
                        raise OutOfBounds(self._oob(items, axis))
                    self._run.negative_index(self._root, self._describe(items), i, n)
                    items[axis] = i + n
                elif i >= n:
                    raise OutOfBounds(self._oob(items, axis))
            key = tuple(items)
            if len(items) == self._ndim:
                if self._map is not None:
                    return key, int(self._map[key])
                flat = 0
                for i, s in zip(items, self._root.cstrides):
                    flat += i * s
                return key, flat
        else:
            key = tuple(items)
        try:
            sub = self._a[key]
            sub_map = self._positions()[key]
        except IndexError as exc:
            raise OutOfBounds(f"{self._describe(items)}: {exc}") from None
        # e.g. a[..., 3] on a 1-D array: one element
        if not isinstance(sub, np.ndarray) or sub.ndim == 0:
            return key, int(sub_map)
        return TracedArray(sub, self._root, self._run, sub_map), None

    def _describe(self, items: list) -> str:
        parts = ", ".join(
            ":" if isinstance(i, slice) else "..." if i is Ellipsis else str(i) for i in items
        )
        what = (
            self._root.name if self._map is None else f"a {self._a.shape} view of {self._root.name}"
        )
        return f"{what}[{parts}]"

    def _oob(self, items: list, axis: int) -> str:
        n = self._a.shape[axis]
        return (
            f"{self._describe(items)} is out of bounds for shape {self._a.shape} (axis {axis} has "
            f"{n} element{'s' * (n != 1)}; missing guard?)"
        )

    def element(self, idx: Any) -> tuple[Any, int]:
        """(numpy key, tracked position) of one element (for atomics); raises for a slice."""
        if idx.__class__ is int and self._ndim == 1 and 0 <= idx < self._n0:
            return idx, idx if self._map is None else int(self._map[idx])
        key, flat = self._resolve(idx)
        if flat is None:
            raise TypeError(
                f"{self._root.name}: an atomic operation needs one element, got a slice"
            )
        return key, flat
