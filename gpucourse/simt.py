"""An instrumented SIMT executor for numba-cuda kernels: what each thread, warp and block did.

``numba.cuda`` is either the real CUDA target or numba's CUDA simulator, decided once per process
(``NUMBA_ENABLE_CUDASIM`` is read when ``numba.cuda`` is first imported), so the two cannot live side by side.
This module needs neither: it runs the kernel's *Python function* (``kernel.py_func``, present on both) with its
own stand-in for the ``cuda`` module, so the same report comes out on a laptop and on an H100::

    report = simt.run(kernel, griddim, blockdim, *args)   # args: NumPy arrays (written in place) and scalars
    report.simt_efficiency          # active lanes per issued warp step / 32
    report.per_thread("global")     # mean reads/writes per thread of global memory
    report.races                    # conflicting accesses between barriers: deterministic, never by luck

How it executes (deterministically, one Python thread at a time):

- blocks run one after the other; inside a block every thread runs up to its next ``cuda.syncthreads()``
  (a *phase*), in thread order, then the next phase starts. Kernels without a barrier run thread after thread
  in the caller's thread; kernels with one get a cooperative Python thread per CUDA thread.
- every access to an argument array (global memory) or a ``cuda.shared.array`` (shared memory, one per block)
  goes through :class:`TracedArray`, which bounds-checks the index (a negative or too-large index is an error,
  as on a GPU, not NumPy's wrap-around) and records who touched which element when.
- a **race** is two threads touching one element, at least one of them writing, with no barrier between them:
  same block and same phase, or different blocks (blocks never synchronise). Atomics are not races.
- each thread's executed source lines form its *trace*. A warp issues one step per distinct line its threads
  are at, lowest first in program order (loop iterations are ordered by their count): threads on the same
  line share the step, threads elsewhere wait masked off. **SIMT efficiency** = active lanes / (steps × 32).
  Granularity is one source line of the kernel; device functions count as part of the line that calls them.
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
import textwrap
import threading
import types
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np

WARP_SIZE = 32  # threads per warp on every NVIDIA GPU to date
SECTOR_BYTES = 32  # global memory is served in 32-byte sectors (4 per 128-byte cache line)


class KernelError(RuntimeError):
    """The kernel raised (an out-of-bounds index included); the message names the thread and the line."""


class OutOfBounds(IndexError):
    pass


class Dim3(NamedTuple):
    x: int
    y: int = 1
    z: int = 1


def dim3(v: int | tuple) -> Dim3:
    if isinstance(v, (int, np.integer)):
        return Dim3(int(v))
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or min(v) < 1:
        raise ValueError(f"a launch dimension must be 1 to 3 positive ints, got {v}")
    return Dim3(*v)


# --------------------------------------------------------------------------------------------------------------
# per-thread context and the stand-in for `numba.cuda`
# --------------------------------------------------------------------------------------------------------------

class _Ctx(threading.local):
    run: "_Run | None" = None
    tid = 0  # global linear thread id
    block = 0  # linear block id
    tidx = Dim3(0)
    bidx = Dim3(0)
    phase = 0
    trace: list | None = None
    worker: "_Worker | None" = None
    shared_calls = 0


_ctx = _Ctx()


class _Shared:
    @staticmethod
    def array(shape, dtype):
        run = _ctx.run
        k = _ctx.shared_calls
        _ctx.shared_calls += 1
        bufs = run.shared_buffers
        if k == len(bufs):  # first thread of the block to reach this declaration allocates it
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            bufs.append(TracedArray(np.zeros(shape, dtype=np.dtype(dtype)), f"shared{k}", "shared", run))
        return bufs[k]


class _Local:
    @staticmethod
    def array(shape, dtype):  # per-thread local memory / registers: not traced
        return np.zeros(shape, dtype=np.dtype(dtype))


class _Const:
    @staticmethod
    def array_like(a):
        return np.array(a)


class _Atomic:
    @staticmethod
    def _do(arr, idx, op):
        if not isinstance(arr, TracedArray):
            raise TypeError("cuda.atomic.* needs an array argument or a shared array")
        key = arr._key(idx)
        old = arr._a[key]
        arr._a[key] = op(old)
        arr._run.record(arr, key, "a")
        return old

    @classmethod
    def add(cls, arr, idx, val):
        return cls._do(arr, idx, lambda o: o + val)

    @classmethod
    def sub(cls, arr, idx, val):
        return cls._do(arr, idx, lambda o: o - val)

    @classmethod
    def max(cls, arr, idx, val):
        return cls._do(arr, idx, lambda o: max(o, val))

    @classmethod
    def min(cls, arr, idx, val):
        return cls._do(arr, idx, lambda o: min(o, val))

    @classmethod
    def exch(cls, arr, idx, val):
        return cls._do(arr, idx, lambda o: val)


class _FakeCuda:
    """What a kernel sees as ``cuda`` inside :func:`run`."""

    warpsize = WARP_SIZE
    shared = _Shared()
    local = _Local()
    const = _Const()
    atomic = _Atomic()

    @property
    def threadIdx(self):
        return _ctx.tidx

    @property
    def blockIdx(self):
        return _ctx.bidx

    @property
    def blockDim(self):
        return _ctx.run.block

    @property
    def gridDim(self):
        return _ctx.run.grid

    @property
    def laneid(self):
        return _ctx.run.local_id(_ctx.tidx) % WARP_SIZE

    def grid(self, ndim):
        t, b, d = _ctx.tidx, _ctx.bidx, _ctx.run.block
        xs = (t.x + b.x * d.x, t.y + b.y * d.y, t.z + b.z * d.z)
        return xs[0] if ndim == 1 else xs[:ndim]

    def gridsize(self, ndim):
        g, d = _ctx.run.grid, _ctx.run.block
        xs = (g.x * d.x, g.y * d.y, g.z * d.z)
        return xs[0] if ndim == 1 else xs[:ndim]

    def syncthreads(self):
        w = _ctx.worker
        if w is None:
            raise KernelError("cuda.syncthreads() outside a cooperative launch")
        w.wait_at_barrier()
        _ctx.phase += 1

    def jit(self, *a, **k):  # a `@cuda.jit(device=True)` decorator evaluated inside a kernel: leave it alone
        return (lambda f: f) if not (a and callable(a[0])) else a[0]


FAKE_CUDA = _FakeCuda()


# --------------------------------------------------------------------------------------------------------------
# traced memory
# --------------------------------------------------------------------------------------------------------------

class TracedArray:
    """A NumPy array seen through a kernel: element accesses only, bounds-checked, every one recorded."""

    __slots__ = ("_a", "name", "space", "_run", "id")

    def __init__(self, a: np.ndarray, name: str, space: str, run: "_Run"):
        self._a, self.name, self.space, self._run = a, name, space, run
        self.id = len(run.arrays)
        run.arrays.append(self)

    shape = property(lambda self: self._a.shape)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    dtype = property(lambda self: self._a.dtype)

    def __len__(self):
        return len(self._a)

    def _key(self, idx) -> tuple:
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != self._a.ndim:
            raise OutOfBounds(f"{self.name}{list(idx)}: {len(idx)} indices for a {self._a.ndim}-D array "
                              "(kernels access one element at a time)")
        out = []
        for i, n in zip(idx, self._a.shape):
            if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                raise OutOfBounds(f"{self.name}[{idx}]: indices must be integers, got {type(i).__name__}")
            if not 0 <= i < n:
                raise OutOfBounds(f"{self.name}{list(int(v) for v in idx)} is out of bounds for shape "
                                  f"{self._a.shape} (missing guard?)")
            out.append(int(i))
        return tuple(out)

    def __getitem__(self, idx):
        key = self._key(idx)
        self._run.record(self, key, "r")
        return self._a[key]

    def __setitem__(self, idx, value):
        key = self._key(idx)
        self._a[key] = value
        self._run.record(self, key, "w")

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._a, dtype=dtype)

    def __repr__(self):
        return f"<{self.space} array {self.name} {self._a.shape} {self._a.dtype}>"


@dataclass(frozen=True)
class Race:
    space: str  # "global" or "shared"
    array: str
    index: tuple
    kind: str  # "read-after-write", "write-after-read", "write-after-write"
    first: tuple  # (block id, thread id within block) of the earlier access
    second: tuple

    def __str__(self):
        return (f"{self.kind} race on {self.space} {self.array}{list(self.index)}: block {self.first[0]} thread "
                f"{self.first[1]} and block {self.second[0]} thread {self.second[1]}, no syncthreads() between")


# --------------------------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------------------------

SPACES = ("global", "shared")
_COL = {("global", "r"): 0, ("global", "w"): 1, ("shared", "r"): 2, ("shared", "w"): 3}
MAX_RACES_KEPT = 50


class _Run:
    def __init__(self, grid: Dim3, block: Dim3):
        self.grid, self.block = grid, block
        self.tpb = block.x * block.y * block.z
        self.n_threads = self.tpb * grid.x * grid.y * grid.z
        self.counts = np.zeros((self.n_threads, 5), dtype=np.int64)  # global r/w, shared r/w, atomics
        self.traces: list[list[int]] = [[] for _ in range(self.n_threads)]
        self.arrays: list[TracedArray] = []
        self.shared_buffers: list[TracedArray] = []
        self.log: list[tuple[int, int, int, int, str]] = []  # (tid, trace position, array id, flat index, kind)
        self.state: dict[tuple[int, tuple], list] = {}  # (array id, index) -> accesses [(tid, block, phase, kind)]
        self.races: list[Race] = []
        self.race_count = 0
        self._race_seen: set = set()

    def local_id(self, t: Dim3) -> int:
        return t.x + self.block.x * (t.y + self.block.y * t.z)

    def record(self, arr: TracedArray, key: tuple, kind: str) -> None:
        c = _ctx
        tid, trace = c.tid, c.trace
        col = 4 if kind == "a" else _COL[arr.space, kind]
        self.counts[tid, col] += 1
        flat = int(np.ravel_multi_index(key, arr._a.shape)) if len(key) > 1 else key[0]
        self.log.append((tid, len(trace) - 1, arr.id, flat, kind))
        if kind == "a":
            return
        me = (tid, c.block, c.phase, kind)
        hist = self.state.setdefault((arr.id, key), [])
        for other in hist:
            if other[0] != tid and "w" in (kind, other[3]) and (other[1] != me[1] or other[2] == me[2]):
                self._race(arr, key, other, me)
                break
        if kind == "w" or len(hist) < 64:  # keep every write, and enough reads to catch a later write
            hist.append(me)

    def _race(self, arr, key, a, b) -> None:
        self.race_count += 1
        kind = {("w", "r"): "read-after-write", ("r", "w"): "write-after-read"}.get((a[3], b[3]), "write-after-write")
        tag = (arr.id, key, kind)
        if tag in self._race_seen or len(self.races) >= MAX_RACES_KEPT:
            return
        self._race_seen.add(tag)
        self.races.append(Race(arr.space, arr.name, key, kind, (a[1], a[0] - a[1] * self.tpb),
                               (b[1], b[0] - b[1] * self.tpb)))


class _Abort(BaseException):
    pass


class _Worker(threading.Thread):
    """One CUDA thread of a block that synchronises: runs only when the scheduler hands it the turn."""

    def __init__(self, body: Callable[[], None], sched: threading.Semaphore, block_state: dict):
        super().__init__(daemon=True)
        self.body, self.sched, self.block_state = body, sched, block_state
        self.go = threading.Semaphore(0)
        self.state = "ready"
        self.exc: BaseException | None = None

    def run(self):
        self.go.acquire()
        try:
            if self.block_state["abort"]:
                raise _Abort
            self.body(self)
            self.state = "done"
        except _Abort:
            self.state = "aborted"
        except BaseException as exc:  # handed to the scheduler, re-raised there
            self.exc, self.state = exc, "error"
        finally:
            self.sched.release()

    def wait_at_barrier(self):
        self.state = "barrier"
        self.sched.release()
        self.go.acquire()
        if self.block_state["abort"]:
            raise _Abort


def _python_function(kernel: Any) -> Callable:
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None) or kernel
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"expected a @cuda.jit kernel or a Python function, got {type(kernel).__name__}")
    return fn


def _is_cuda_module(v: Any) -> bool:
    return isinstance(v, types.ModuleType) and v.__name__.split(".")[:2] == ["numba", "cuda"]


def _rebind(fn: Callable, cache: dict) -> Callable:
    """A copy of ``fn`` whose ``cuda`` (and device functions) are this module's stand-ins."""
    if fn in cache:
        return cache[fn]
    g = dict(fn.__globals__)
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, None)
    cache[fn] = new
    for name in code_names(fn.__code__):
        v = g.get(name)
        if _is_cuda_module(v):
            g[name] = FAKE_CUDA
        elif v is not None and not isinstance(v, type) and isinstance(getattr(v, "py_func", None), types.FunctionType):
            g[name] = _rebind(v.py_func, cache)  # a @cuda.jit(device=True) function
    if fn.__closure__:
        cells = tuple(types.CellType(FAKE_CUDA if _is_cuda_module(c.cell_contents) else c.cell_contents)
                      for c in fn.__closure__)
        new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, cells)
        cache[fn] = new
    return new


def code_names(code: types.CodeType) -> set[str]:
    """Every global/attribute name a function's code (and the code nested in it) refers to."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= code_names(c)
    return names


def _uses_barrier(fn: Callable, seen: set | None = None) -> bool:
    seen = seen if seen is not None else set()
    if fn in seen:
        return False
    seen.add(fn)
    if "syncthreads" in code_names(fn.__code__):
        return True
    for name in code_names(fn.__code__):
        v = fn.__globals__.get(name)
        if isinstance(v, types.FunctionType) and _uses_barrier(v, seen):
            return True
    return False


@dataclass(frozen=True)
class _Loop:
    start: int
    end: int


def _loops(fn: Callable) -> tuple[list[_Loop], dict[int, int]]:
    """The kernel's loops (absolute line ranges) and which line heads which loop; empty without source."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return [], {}
    off = fn.__code__.co_firstlineno - 1
    loops = [_Loop(n.lineno + off, n.end_lineno + off) for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))]
    return loops, {lp.start: i for i, lp in enumerate(loops)}


def _event_keys(trace: list[int], loops: list[_Loop], header: dict[int, int]) -> list[tuple]:
    """Program-order keys for a thread's line trace: (loop header, iteration) for each enclosing loop, then the line."""
    keys, stack = [], []
    for ln in trace:
        while stack and not loops[stack[-1][0]].start <= ln <= loops[stack[-1][0]].end:
            stack.pop()
        h = header.get(ln)
        if h is not None:
            if stack and stack[-1][0] == h:
                stack[-1][1] += 1
            else:
                stack.append([h, 0])
        keys.append(tuple((loops[i].start, c) for i, c in stack) + ((ln, 0),))
    return keys


@dataclass(frozen=True)
class WarpStats:
    block: int
    warp: int  # warp index inside the block
    threads: int  # threads of the launch in this warp (< 32 for a partial last warp)
    steps: int  # issued steps (one per distinct line the warp's threads execute, in lockstep)
    active: int  # sum over steps of the lanes that executed it
    divergent: int = 0  # steps that ran while other not-yet-finished lanes of the warp waited masked off

    @property
    def efficiency(self) -> float:
        return self.active / (self.steps * WARP_SIZE) if self.steps else 1.0


@dataclass
class KernelReport:
    """What one instrumented launch did. Per-thread counts are indexed by global linear thread id."""

    name: str
    grid: Dim3
    block: Dim3
    counts: np.ndarray = field(repr=False)  # (threads, 5): global reads, global writes, shared reads, shared writes, atomics
    warps: list[WarpStats] = field(repr=False)
    races: list[Race]
    race_count: int
    arrays: dict[str, tuple[int, ...]] = field(repr=False)  # array name -> shape
    itemsize: dict[str, int] = field(repr=False)
    accesses: list[tuple] = field(repr=False)  # (tid, warp step key, array name, flat index, kind)
    traces: list[list[int]] = field(repr=False)

    @property
    def threads_per_block(self) -> int:
        return self.block.x * self.block.y * self.block.z

    @property
    def n_threads(self) -> int:
        return self.counts.shape[0]

    @property
    def n_blocks(self) -> int:
        return self.grid.x * self.grid.y * self.grid.z

    @property
    def issued_steps(self) -> int:
        return sum(w.steps for w in self.warps)

    @property
    def divergent_steps(self) -> int:
        """Warp steps issued while some live lanes of the warp sat masked off (a branch split the warp)."""
        return sum(w.divergent for w in self.warps)

    @property
    def simt_efficiency(self) -> float:
        steps = self.issued_steps
        return sum(w.active for w in self.warps) / (steps * WARP_SIZE) if steps else 1.0

    def per_thread(self, space: str = "global") -> dict[str, float]:
        """Mean and max reads and writes per thread of ``space`` ('global' or 'shared')."""
        r, w = self.counts[:, _COL[space, "r"]], self.counts[:, _COL[space, "w"]]
        return {"reads": float(r.mean()), "writes": float(w.mean()), "max_reads": int(r.max()), "max_writes": int(w.max())}

    def total(self, space: str, kind: str) -> int:
        return int(self.counts[:, _COL[space, kind]].sum())

    @property
    def atomics(self) -> int:
        return int(self.counts[:, 4].sum())

    def sectors_per_request(self, array: str, kind: str | None = None) -> float:
        """Mean 32-byte sectors one warp-wide access of ``array`` touches (1 element/thread coalesced float32: 4)."""
        groups: dict[tuple, set] = defaultdict(set)
        size = self.itemsize[array]
        for tid, step, name, flat, k in self.accesses:
            if name == array and (kind is None or k == kind):
                groups[step].add(flat * size // SECTOR_BYTES)
        return float(np.mean([len(s) for s in groups.values()])) if groups else 0.0

    def access_map(self, array: str, kind: str = "w", by: str = "block") -> np.ndarray:
        """An array of ``array``'s shape: which block/warp/thread first accessed each element (-1: none)."""
        out = np.full(int(np.prod(self.arrays[array])), -1, dtype=np.int64)
        tpb = self.threads_per_block
        for tid, step, name, flat, k in self.accesses:
            if name == array and k == kind and out[flat] < 0:
                out[flat] = {"block": tid // tpb, "warp": tid // tpb * 10_000 + (tid % tpb) // WARP_SIZE,
                             "thread": tid}[by]
        if by == "warp":  # renumber warps 0, 1, 2, ... in launch order
            ids = {v: i for i, v in enumerate(sorted(set(out[out >= 0])))}
            out = np.array([ids.get(v, -1) for v in out])
        return out.reshape(self.arrays[array])

    def summary(self) -> str:
        g, s = self.per_thread("global"), self.per_thread("shared")
        lines = [
            f"kernel {self.name}: grid {tuple(self.grid)} × block {tuple(self.block)} = {self.n_threads} threads, "
            f"{len(self.warps)} warps",
            f"  global memory per thread: {g['reads']:.2f} reads, {g['writes']:.2f} writes (max {g['max_reads']}, "
            f"{g['max_writes']})",
            f"  shared memory per thread: {s['reads']:.2f} reads, {s['writes']:.2f} writes",
            f"  SIMT efficiency: {self.simt_efficiency:.1%} ({self.issued_steps} warp steps issued, "
            f"{self.divergent_steps} of them divergent)",
            f"  races: {self.race_count}" + (f" — first: {self.races[0]}" if self.races else ""),
        ]
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def run(kernel: Any, griddim: int | tuple, blockdim: int | tuple, *args: Any, block_order: str = "forward") -> KernelReport:
    """Run ``kernel[griddim, blockdim](*args)`` on the instrumented executor and report what happened.

    NumPy array arguments are global memory and are written in place (CuPy arrays are copied to the host
    and back). Scalars pass through. Raises :class:`KernelError` when a thread raises. ``block_order="reverse"``
    runs the blocks last to first: a correct kernel cannot tell (blocks are independent), a racy one can.
    """
    if block_order not in ("forward", "reverse"):
        raise ValueError("block_order must be 'forward' or 'reverse'")
    grid, block = dim3(griddim), dim3(blockdim)
    if block.x * block.y * block.z > 1024:
        raise ValueError(f"a block holds at most 1024 threads, got {tuple(block)}")
    py = _python_function(kernel)
    fn = _rebind(py, {})
    code = py.__code__
    names = list(inspect.signature(py).parameters)
    r = _Run(grid, block)
    device_copies = []
    call_args = []
    for i, a in enumerate(args):
        if hasattr(a, "get") and hasattr(a, "set") and type(a).__module__.split(".")[0] == "cupy":
            host = a.get()
            device_copies.append((a, host))
            a = host
        if isinstance(a, np.ndarray):
            call_args.append(TracedArray(a, names[i] if i < len(names) else f"arg{i}", "global", r))
        else:
            call_args.append(a)
    loops, header = _loops(py)
    barrier = _uses_barrier(py)

    def tracer(frame, event, arg):
        if frame.f_code is code:
            return local
        return None

    def local(frame, event, arg):
        if event == "line":
            _ctx.trace.append(frame.f_lineno)
        return local

    def enter(tid: int, b: int, bidx: Dim3, tidx: Dim3, worker: _Worker | None) -> None:
        c = _ctx
        c.run, c.tid, c.block, c.bidx, c.tidx, c.phase = r, tid, b, bidx, tidx, 0
        c.trace, c.worker, c.shared_calls = r.traces[tid], worker, 0

    def where(tid: int, b: int) -> str:
        t = tid - b * r.tpb
        lines = r.traces[tid]
        return f"thread {t} of block {b}" + (f" (kernel line {lines[-1] - code.co_firstlineno})" if lines else "")

    saved = sys.gettrace()
    order = [Dim3(bx, by, bz) for bz in range(grid.z) for by in range(grid.y) for bx in range(grid.x)]
    if block_order == "reverse":
        order.reverse()
    try:
        for bidx in order:
            b = bidx.x + grid.x * (bidx.y + grid.y * bidx.z)
            r.shared_buffers = []
            tids = [(b * r.tpb + t, Dim3(t % block.x, (t // block.x) % block.y, t // (block.x * block.y)))
                    for t in range(r.tpb)]
            if barrier:
                _run_cooperative(fn, call_args, r, b, bidx, tids, enter, tracer, where)
            else:
                sys.settrace(tracer)
                for tid, tidx in tids:
                    enter(tid, b, bidx, tidx, None)
                    try:
                        fn(*call_args)
                    except Exception as exc:
                        sys.settrace(saved)
                        raise KernelError(f"{where(tid, b)}: {exc.__class__.__name__}: {exc}") from exc
                sys.settrace(saved)
    finally:
        sys.settrace(saved)
        _ctx.run = None
    for dev, host in device_copies:
        dev.set(host)
    return _report(py.__name__, r, loops, header)


def _run_cooperative(fn, call_args, r: _Run, b: int, bidx: Dim3, tids, enter, tracer, where) -> None:
    sched = threading.Semaphore(0)
    state = {"abort": False}

    def body_for(tid, tidx):
        def body(worker):
            enter(tid, b, bidx, tidx, worker)
            sys.settrace(tracer)
            try:
                fn(*call_args)
            finally:
                sys.settrace(None)
        return body

    workers = [_Worker(body_for(tid, tidx), sched, state) for tid, tidx in tids]
    for w in workers:
        w.start()
    alive = workers
    try:
        while alive:
            for w, (tid, _) in zip(workers, tids):
                if w not in alive:
                    continue
                w.go.release()
                sched.acquire()
                if w.state == "error":
                    raise KernelError(f"{where(tid, b)}: {w.exc.__class__.__name__}: {w.exc}") from w.exc
            alive = [w for w in alive if w.state == "barrier"]
    finally:
        state["abort"] = True
        for w in workers:
            if w.state in ("ready", "barrier"):
                w.go.release()
        for w in workers:
            w.join()


def _report(name: str, r: _Run, loops, header) -> KernelReport:
    tpb = r.tpb
    warps: list[WarpStats] = []
    step_of: dict[tuple[int, int], int] = {}  # (tid, trace position) -> global warp-step id
    step_id = 0
    for b in range(r.n_threads // tpb):
        for w0 in range(0, tpb, WARP_SIZE):
            tids = list(range(b * tpb + w0, b * tpb + min(w0 + WARP_SIZE, tpb)))
            keys = [_event_keys(r.traces[t], loops, header) for t in tids]
            pos = [0] * len(tids)
            steps = active = divergent = 0
            while True:
                live = [i for i in range(len(tids)) if pos[i] < len(keys[i])]
                if not live:
                    break
                k = min(keys[i][pos[i]] for i in live)
                lanes = [i for i in live if keys[i][pos[i]] == k]
                for i in lanes:
                    step_of[tids[i], pos[i]] = step_id
                    pos[i] += 1
                active += len(lanes)
                divergent += len(lanes) < len(live)
                steps += 1
                step_id += 1
            warps.append(WarpStats(b, w0 // WARP_SIZE, len(tids), steps, active, divergent))
    arrays = {a.name: a._a.shape for a in r.arrays}
    itemsize = {a.name: a._a.itemsize for a in r.arrays}
    names = [a.name for a in r.arrays]
    accesses = [(tid, step_of.get((tid, p), -1 - tid), names[aid], flat, kind) for tid, p, aid, flat, kind in r.log]
    return KernelReport(name, r.grid, r.block, r.counts, warps, r.races, r.race_count, arrays, itemsize, accesses,
                        r.traces)


# --------------------------------------------------------------------------------------------------------------
# pictures and trees
# --------------------------------------------------------------------------------------------------------------

def plot_access(report: KernelReport, array: str, kind: str = "w", by: str = "block", ax: Any = None, title: str = ""):
    """Draw which block (or warp, or thread) accessed each element of a 1-D or 2-D array."""
    from . import plotting

    m = report.access_map(array, kind, by)
    if m.ndim == 1:
        m = m[None, :]
    ax = plotting.axes("column index [element]", "row index [element]", title or
                       f"{report.name}: {array} {'written' if kind == 'w' else 'read'} by {by}", ax=ax)
    masked = np.ma.masked_less(m, 0)
    im = ax.imshow(masked, cmap="tab20", interpolation="nearest", aspect="auto")
    ax.grid(False)
    ax.figure.colorbar(im, ax=ax, label=f"{by} id [-]")
    return ax


def launch_tree(report: KernelReport, sm_of_block: dict[int, int] | None = None, kernel: str = "",
                stream: str = "", max_blocks: int = 4, max_warps: int = 2, max_threads: int = 2) -> str:
    """The seed 002 tree (kernel → grid → blocks on SMs → warps → threads) for an actual launch."""
    tpb = report.threads_per_block
    k = kernel or report.name
    lines = ["GPU", f"└── Kernel {k}" + (f"   ({stream})" if stream else ""), f"      └── Grid {k} "
             f"{tuple(report.grid)} blocks × {tuple(report.block)} threads"]
    nb = report.n_blocks
    shown = list(range(min(nb, max_blocks)))
    for bi, b in enumerate(shown):
        last_b = bi == len(shown) - 1 and nb <= max_blocks
        sm = f"SM {sm_of_block[b]}" if sm_of_block and b in sm_of_block else "SM ?"
        lines.append(f"           {'└──' if last_b else '├──'} Block {b} ({sm})")
        pre = "               " if last_b else "           │   "
        nw = math.ceil(tpb / WARP_SIZE)
        for w in range(min(nw, max_warps)):
            last_w = w == min(nw, max_warps) - 1 and nw <= max_warps
            t0, t1 = w * WARP_SIZE, min((w + 1) * WARP_SIZE, tpb)
            lines.append(f"{pre}{'└──' if last_w else '├──'} Warp {b}-{w} (threads {t0}–{t1 - 1})")
            pre2 = pre + ("    " if last_w else "│   ")
            for t in range(t0, min(t1, t0 + max_threads)):
                lines.append(f"{pre2}├── Thread {t} (global {b * tpb + t})")
            lines.append(f"{pre2}└── ...")
        if nw > max_warps:
            lines.append(f"{pre}└── ... {nw - max_warps} more warps")
    if nb > max_blocks:
        lines.append(f"           └── ... {nb - max_blocks} more blocks")
    return "\n".join(lines)
