"""One launch: the CUDA threads, their scheduling, barriers and warp operations, and what memory
saw.

Every CUDA thread is a *greenlet* (a coroutine with its own stack, switched in the calling OS
thread): a launch needs no OS thread of its own, whatever its size. Blocks run one after another (a
cooperative launch that calls ``grid.sync()`` starts the next block while the earlier ones wait
there). Inside a block the scheduler runs each thread until it blocks — at ``cuda.syncthreads()``,
at a warp operation, at ``grid.sync()`` — or yields from a long loop; when no thread can run, it
resolves what the blocked threads wait for:

- a warp operation (``shfl_*_sync``, ``*_sync`` votes, ``syncwarp``, ``activemask``) completes when
  every lane its mask names has arrived at the same operation with the same mask, or has exited; a
  lane named in the mask that waits elsewhere is a deadlock, reported as synccheck reports it;
- a block barrier releases when every thread of the block that has not exited waits at one (Volta
  and later wait for all *non-exited* threads, so an early ``return`` before the barrier is fine). A
  thread that went *past* the barrier without calling it (a ``syncthreads()`` inside an ``if`` only
  some threads take), or threads waiting at different ``syncthreads()`` calls, are *barrier
  divergence*: undefined in CUDA (a GPU may hang), reported as an error; the launch goes on.

Memory: each access to global or shared memory is appended to the launch's access log (thread,
statement, element, kind, epoch); races are found from the log when the report is made
(``races.py``). Fresh shared and local memory is poisoned, and reading an element no thread wrote
gives a tracked uninitialised value.
"""

from __future__ import annotations

import contextvars
import math
import sys
import time
import types
from array import array
from collections import deque
from functools import partial
from typing import Any, Callable

import numpy as np

from . import state
from .barriers import Barriers
from .dims import SHARED_OPTIN_LIMIT, STATIC_SHARED_LIMIT, Dim3, unlinear
from .errors import (BudgetExceeded, KernelError, NotModelled, OutOfBounds, ThreadKilled,
                     UninitializedCondition)
from .instrument import (
    Compiled,
    compile_function,
    current_user_frame,
    freeze,
    python_function,
    rebind,
    signature_key,
    where,
)
from .memory import ATOMIC, Root, TracedArray
from .numbatypes import typed
from .races import detect
from .report import (UNINIT_HINT, ArrayInfo, Float64Op, KernelReport, SyncIssue,
                     UninitializedUse, group_ranges)
from .threads import (
    BARRIER,
    CHECK_EVERY,
    DONE,
    ERROR,
    GRID,
    PREEMPT,
    READY,
    WARP,
    SimBlock,
    SimThread,
    at,
    snapshot_value,
)
from .values import Origin, Uninit, as_dtype, poisoned
from .warps import WarpOps
MAX_RACES_KEPT = 50
MAX_EXAMPLES = 20


class Launch(Barriers, WarpOps):
    """Everything one ``kernel[grid, block](*args)`` needs while it runs, and the report it
    leaves."""

    def __init__(
        self,
        kernel: Any,
        grid: Dim3,
        block: Dim3,
        args: tuple,
        *,
        cuda: Any,
        sharedmem: int = 0,
        block_order: str = "forward",
        max_iterations: int = 1_000_000,
        time_limit: float | None = 60.0,
    ):
        self.cuda = cuda
        self.grid, self.block = grid, block
        self.tpb = block.x * block.y * block.z
        self.n_blocks = grid.x * grid.y * grid.z
        self.n_threads = self.tpb * self.n_blocks
        self.sharedmem = int(sharedmem)
        self.block_order = block_order
        self.max_iterations, self.time_limit = max_iterations, time_limit
        self.py = python_function(kernel)
        self.name = self.py.__name__
        self.traces: list[list[int]] = [[] for _ in range(self.n_threads)]
        # 3 int64 words per access: tid << 32 | (trace position + 1), root id << 40 | position,
        # epoch id << 2 | kind
        self.log = array("q")
        # epoch id -> (block, barrier phase, grid phase)
        self.epochs: list[tuple[int, int, int]] = []
        # tid -> (log rows, vector clocks) at syncwarps
        self.sync_hist: dict[int, tuple[list[int], list[tuple]]] = {}
        # tid -> (log rows, fence knowledge)
        self.knows_hist: dict[int, tuple[list[int], list[dict]]] = {}
        self.roots: list[Root] = []
        self.nwrites = 0
        self.uninit: list[UninitializedUse] = []
        self.uninit_count = 0
        self.uninit_reads = 0
        self._uninit_seen: set = set()
        self.sync_errors: list[SyncIssue] = []
        self._sync_seen: dict[tuple, int] = {}
        self.warnings: list[str] = []
        # (code, line) -> float64 values made from float32 there
        self.fp64: dict[tuple[types.CodeType, int], int] = {}
        self._warn_seen: set = set()
        self.static_shared = 0
        self.local_bytes = 0
        self._static_sites: dict[Any, int] = {}
        self._shared_names: dict[Any, str] = {}
        self.compiled: dict[types.CodeType, Compiled] = {}
        self.user_codes: set = set()
        self._devices: dict[int, Callable] = {}
        self._warp_checked: set[tuple] = set()
        self._consts: dict[int, TracedArray] = {}
        self.cur: SimThread | None = None
        self.blocks_started: list[SimBlock] = []
        self.sched: Any = None  # the scheduler's greenlet
        self.deadline = math.inf
        self.kernel = compile_function(self.py, trace=True)
        self._register(self.kernel)
        self.kernel_code = self.py.__code__
        g, closure = rebind(self.py, cuda, cuda._wrap_dispatcher)
        self.globals, self.closure = freeze(self.py, g, closure, signature_key(args))
        self.args = [self._argument(a, i) for i, a in enumerate(args)]
        self._check_aliasing()

    # -- arguments ---------------------------------------------------------------------------------
    def new_epoch(self, block: int, phase: int, gphase: int) -> int:
        self.epochs.append((block, phase, gphase))
        return len(self.epochs) - 1

    def add_root(self, root: Root) -> int:
        self.roots.append(root)
        return len(self.roots) - 1

    def _argument(self, a: Any, i: int) -> Any:
        names = self.py.__code__.co_varnames[:self.py.__code__.co_argcount]
        name = names[i] if i < len(names) else f"arg{i}"
        host, init = self.cuda._host_view(a)
        if host is None:
            if isinstance(a, TracedArray):
                raise TypeError(
                    f"argument {name}: an array of an earlier launch cannot be passed to a kernel"
                )
            # a np.float32 argument is a float32 (F32); Python floats and ints: float64, int64
            return typed(a)
        if host.dtype.kind not in "biufc":
            raise NotModelled(f"kernel arguments of dtype {host.dtype} (argument {name})")
        root = Root(self, name, "global", host.shape, host.dtype, initialised=init is None)
        if init is not None:
            # a cuda.device_array: unwritten elements stay uninitialised across launches
            root.init, root.mode = init, 2
        return TracedArray(host, root, self)

    def _check_aliasing(self) -> None:
        arrays = [a for a in self.args if isinstance(a, TracedArray)]
        for i, a in enumerate(arrays):
            for b in arrays[i + 1:]:
                if np.may_share_memory(a._a, b._a):
                    self.warn(
                        ("alias", a.name, b.name),
                        f"arguments {a.name} and {b.name} share memory: accesses "
                        "through one are not checked against accesses through the other",
                    )

    # -- compiled functions ------------------------------------------------------------------------
    def _register(self, c: Compiled) -> None:
        code = c.code if c.code is not None else c.original.__code__
        self.compiled[code] = c
        self.user_codes.add(code)

    def call_device(self, dev: Any, args: tuple, kwargs: dict) -> Any:
        """A device function called from a running thread: its instrumented version (budgeted
        loops)."""
        fn = self._devices.get(id(dev))
        if fn is None:
            python_fn = dev.py_func
            c = compile_function(python_fn, trace=True)
            self._register(c)
            g, closure = rebind(python_fn, self.cuda, self.cuda._wrap_dispatcher)
            g, closure = freeze(python_fn, g, closure, ())
            fn = c.make(g, closure, self.device_step, self.device_loop)
            self._devices[id(dev)] = fn
        return fn(*args, **kwargs)

    def device_step(self, line: int) -> None:
        """A statement of a device function: one more step of the kernel statement that called it
        (a GPU inlines device functions: an `if` inside one that some lanes take diverges the warp
        there, as it would in the kernel)."""
        trace = self.cur.trace
        if trace:
            trace.append(trace[-1])

    def device_loop(self, line: int) -> None:
        """A device function's loop iteration: one more step of the kernel statement that called it
        (a GPU inlines device functions, so a loop whose trip count differs between lanes diverges
        the warp there as it would in the kernel), and one iteration of the budget."""
        t = self.cur
        if t.trace:
            t.trace.append(t.trace[-1])
        n = t.iters = t.iters + 1
        if not n % CHECK_EVERY:
            self.checkpoint(t, line, sys._getframe(1))

    # -- running -----------------------------------------------------------------------------------
    def execute(self) -> KernelReport:
        if state.CURRENT.run is not None:
            raise RuntimeError(
                "a kernel cannot launch a kernel (numba-cuda has no dynamic parallelism)"
            )
        static_dyn = self.sharedmem
        if static_dyn > SHARED_OPTIN_LIMIT:
            raise ValueError(
                f"{static_dyn:,} bytes of dynamic shared memory per block: the most a block can"
                f" have on an H100 is {SHARED_OPTIN_LIMIT:,} (a GPU refuses the launch)"
            )
        order = [unlinear(b, self.grid) for b in range(self.n_blocks)]
        if self.block_order == "reverse":
            order.reverse()
        greenlet = self._greenlet = _greenlet()
        state.CURRENT.run = self
        cuda_dict = self.cuda.__dict__
        cuda_dict["blockDim"], cuda_dict["gridDim"] = self.block, self.grid
        saved_trace = sys.gettrace()
        self.sched = greenlet.getcurrent()
        self.deadline = time.perf_counter() + self.time_limit if self.time_limit else math.inf
        settrace = self.kernel.code is None
        pending = deque(order)
        parked: list[SimBlock] = []
        try:
            # as on a GPU: overflow wraps, 0/0 is NaN, and nothing is printed
            with np.errstate(all="ignore"):
                # each thread runs in it (NumPy's errstate lives there)
                self._context = contextvars.copy_context()
                if settrace:
                    sys.settrace(self._tracer)
                while pending or parked:
                    if pending:
                        bidx = pending.popleft()
                        blk = self._start_block(bidx)
                        if self._run_block(blk) == GRID:
                            parked.append(blk)
                    else:
                        self._release_grid(parked)
                        again, parked = parked, []
                        for blk in again:
                            if self._run_block(blk) == GRID:
                                parked.append(blk)
        except KernelError as exc:
            self._abandon()
            exc.report = self.report(complete=False)
            raise
        except BaseException:
            self._abandon()
            raise
        finally:
            sys.settrace(saved_trace)
            state.CURRENT.run = None
            self.cur = None
            for k in ("threadIdx", "blockIdx", "blockDim", "gridDim", "laneid"):
                cuda_dict.pop(k, None)
        return self.report()

    def _start_block(self, bidx: Dim3) -> SimBlock:
        bid = bidx.x + self.grid.x * (bidx.y + self.grid.y * bidx.z)
        blk = SimBlock(self, bid, bidx)
        if self.sharedmem:
            blk.dyn = Root(
                self,
                "dynamic_shared",
                "shared",
                (self.sharedmem,),
                np.dtype(np.uint8),
                initialised=False,
                block=bid,
            )
            # all-ones bytes: NaN as any float
            blk.dyn_data = np.full(self.sharedmem, 0xFF, dtype=np.uint8)
        self.blocks_started.append(blk)
        for t in blk.threads:
            fn = self.kernel.make(self.globals, self.closure, t.trace.append, t.loop)
            t.glet = self._greenlet(partial(self._body, t, fn), parent=self.sched)
            t.glet.gr_context = self._context.copy()
        return blk

    def _body(self, t: SimThread, fn: Callable) -> None:
        try:
            result = fn(*self.args)
            if result is not None:
                t.exc = TypeError(
                    f"a kernel cannot return a value (it returned {result!r}): numba-cuda kernels"
                    " return nothing; write results into an output array"
                )
                t.state = ERROR
                return
            t.state = DONE
        except ThreadKilled:
            t.state = DONE
        except BaseException as exc:  # handed to the scheduler, which turns it into a KernelError
            t.exc, t.state = exc, ERROR

    def _run_block(self, blk: SimBlock) -> str:
        runnable = blk.runnable
        cuda_dict = self.cuda.__dict__
        cuda_dict["blockIdx"] = blk.bidx
        stall = 0
        while True:
            while runnable:
                t = runnable.popleft()
                self.cur = t
                cuda_dict["threadIdx"] = t.tidx
                cuda_dict["laneid"] = t.lane
                t.glet.switch()
                s = t.state
                if s is PREEMPT:
                    t.state = READY
                    runnable.append(t)
                    if t.stalled:
                        stall += 1
                        if stall > len(runnable):
                            raise self._livelock(blk, t)
                    else:
                        stall = 0
                    continue
                stall = 0
                if s is ERROR:
                    # the user stopped the cell: stop
                    if isinstance(t.exc, (KeyboardInterrupt, SystemExit)):
                        raise t.exc
                    raise self._thread_error(t)
            if blk.pending_warp and self._resolve_warp(blk):
                continue
            live = [t for t in blk.threads if t.state is not DONE]
            if not live:
                return DONE
            states = {t.state for t in live}
            if states == {BARRIER}:
                self._release_barrier(blk, live)
                continue
            if states == {GRID}:
                return GRID
            raise self._deadlock(blk, live)

    def _abandon(self) -> None:
        """Unwind every thread still suspended (their frames hold the kernel's locals)."""
        for blk in self.blocks_started:
            for t in blk.threads:
                g = t.glet
                if g is not None and not g.dead and g:
                    try:
                        g.throw(ThreadKilled)
                    # a dying thread must not mask the real error
                    except BaseException:  # noqa: BLE001
                        pass
                t.glet = None

    def _tracer(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        """Statement tracing for a kernel whose source is not available (sys.settrace)."""
        if frame.f_code is self.kernel_code:
            return self._trace_line
        return None

    def _trace_line(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            t = self.cur
            t.trace.append(frame.f_lineno)
            t.iters += 1
            if t.iters > 8 * self.max_iterations or (
                not t.iters % 4096 and time.perf_counter() > self.deadline
            ):
                raise BudgetExceeded(self._budget_text(t))
        return self._trace_line

    # -- budgets -----------------------------------------------------------------------------------
    def _budget_text(self, t: SimThread) -> str:
        if time.perf_counter() > self.deadline:
            return (
                f"the launch ran for more than {self.time_limit:g} s: an endless loop, or a kernel"
                " too big for an instrumented run (launch fewer threads)"
            )
        return (
            f"the thread ran more than {self.max_iterations:,} loop iterations: an endless loop? (a"
            " `while` whose condition never changes, or a loop bound that is never reached)"
        )

    def checkpoint(self, t: SimThread, line: int, frame: types.FrameType) -> None:
        """Every CHECK_EVERY loop iterations: the budgets, then a chance for the other threads to
        run."""
        if t.iters > self.max_iterations or time.perf_counter() > self.deadline:
            raise BudgetExceeded(self._budget_text(t))
        snap = (self.nwrites, tuple((k, snapshot_value(v)) for k, v in frame.f_locals.items()))
        t.stalled = snap == t.snap
        t.snap = snap
        t.state = PREEMPT
        self.sched.switch()

    def _livelock(self, blk: SimBlock, t: SimThread) -> KernelError:
        frame_line = t.trace[-1] if t.trace else None
        others = [u for u in blk.threads if u.state in (BARRIER, WARP, GRID)]
        waiting = (
            f"; threads {group_ranges([u.lt for u in others])} of the block wait at a barrier"
            if others
            else ""
        )
        msg = (
            f"{t.where()}{where(self.kernel_code, frame_line)} loops forever: neither its variables"
            " nor any memory change from one iteration to the next (an endless loop, or a"
            f" spin-wait on a value no thread that can still run will write{waiting}). On a GPU the"
            " kernel would hang"
        )
        return KernelError(msg, thread=(blk.id, t.lt), line=frame_line)

    # -- errors from threads -----------------------------------------------------------------------
    def _thread_error(self, t: SimThread) -> KernelError:
        exc = t.exc
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code in self.user_codes:
                frames.append((tb.tb_frame.f_code, tb.tb_lineno))
            tb = tb.tb_next
        loc, line = "", None
        if frames:
            code, line = frames[-1]
            loc = where(code, line)
            if code.co_name != self.name and len(frames) > 1:
                loc += f" in device function {code.co_name}, called{where(*frames[0])}"
            elif code.co_name != self.name:
                loc += f" in device function {code.co_name}"
        elif t.trace:
            line = t.trace[-1]
            loc = where(self.kernel_code, line)
        who = t.where()
        if self.block.y * self.block.z > 1 or self.grid.y * self.grid.z > 1:
            who += f" (threadIdx {tuple(t.tidx)}, blockIdx {tuple(t.blk.bidx)})"
        if isinstance(exc, (BudgetExceeded, NotModelled, OutOfBounds, UninitializedCondition)):
            text = str(exc)
        elif isinstance(exc, ZeroDivisionError):
            text = (
                f"ZeroDivisionError: {exc} (on a GPU a float division by zero gives inf or nan, an"
                " integer one an undefined value: guard the divisor)"
            )
        elif isinstance(exc, RecursionError):
            text = "RecursionError: the device functions call each other without end"
        else:
            text = f"{exc.__class__.__name__}: {exc}"
        err = KernelError(f"{who}{loc}: {text}", thread=(t.blk.id, t.lt), line=line)
        err.__cause__ = exc
        return err

    def _deadlock(self, blk: SimBlock, live: list[SimThread]) -> KernelError:
        if blk.warp_problem:
            return KernelError(blk.warp_problem, thread=(blk.id, live[0].lt))
        groups: dict[str, list[int]] = {}
        for t in live:
            groups.setdefault(self._waitingat(t), []).append(t.lt)
        parts = "; ".join(f"threads {group_ranges(v)} wait {k}" for k, v in groups.items())
        return KernelError(f"block {blk.id} is deadlocked: {parts}. On a GPU the kernel would hang",
                           thread=(blk.id, live[0].lt))

    def _waitingat(self, t: SimThread) -> str:
        if t.state is BARRIER:
            return f"at cuda.{t.wait[0]}(){at(t.wait[2])}"
        if t.state is GRID:
            return f"at grid.sync(){at(t.wait[2])}"
        if t.state is WARP:
            return f"at cuda.{t.wait[0]}(){at(t.wait[3])}"
        return "running"

    # -- memory ------------------------------------------------------------------------------------
    def shared_array(self, shape: Any, dtype: Any, site: tuple) -> TracedArray:
        t = self.cur
        if t is None:
            raise RuntimeError("cuda.shared.array() outside a kernel")
        blk = t.blk
        arr = blk.shared.get(site)
        if arr is not None:
            return arr
        self._constant_shape(
            site, "a dynamic size: cuda.shared.array(0, dtype) with kernel[grid, block, 0, nbytes]"
        )
        dt = _element_type(dtype, "shared")
        shape = _shape(shape)
        name = self._array_name(site)
        if shape == (0,) or (len(shape) == 1 and shape[0] == 0):
            if blk.dyn is None:
                raise ValueError(
                    "cuda.shared.array(0, ...) is dynamic shared memory, but the launch gave none:"
                    " launch with kernel[grid, block, stream, nbytes]"
                )
            n = self.sharedmem // dt.itemsize
            data = blk.dyn_data[: n * dt.itemsize].view(dt)
            arr = TracedArray(data, blk.dyn, self, np.arange(n, dtype=np.int64) * dt.itemsize)
        else:
            nbytes = int(np.prod(shape)) * dt.itemsize
            if site not in self._static_sites:
                self._static_sites[site] = nbytes
                self.static_shared = sum(self._static_sites.values())
                if self.static_shared > STATIC_SHARED_LIMIT:
                    raise ValueError(
                        f"{self.static_shared:,} bytes of static shared memory per block: the limit"
                        f" is {STATIC_SHARED_LIMIT:,} (48 KiB); on a GPU the kernel fails to"
                        " compile (ptxas: too much shared data). Larger tiles need dynamic shared"
                        " memory"
                    )
            root = Root(self, name, "shared", shape, dt, initialised=False, block=blk.id)
            arr = TracedArray(poisoned(shape, dt), root, self)
        blk.shared[site] = arr
        return arr

    def _constant_shape(self, site: tuple, instead: str) -> None:
        c = self.compiled.get(site[0])
        why = c.runtime_shapes.get(site[1]) if c is not None else None
        # a run-time shape gets what to use instead; an expression's message already says (it ends
        # in ".")
        if why:
            raise TypeError(why if why.endswith(".") else f"{why}; use {instead}")

    def _array_name(self, site: tuple) -> str:
        name = self._shared_names.get(site)
        if name is None:
            code, line = site[0], site[1]
            c = self.compiled.get(code)
            base = (
                c.names.get(line) if c is not None else None
            ) or f"shared{len(self._shared_names)}"
            name = base
            taken = set(self._shared_names.values()) | {
                r.name for r in self.roots if r.space == "global"
            }
            k = 2
            while name in taken:
                name = f"{base}#{k}"
                k += 1
            self._shared_names[site] = name
        return name

    def local_array(self, shape: Any, dtype: Any, site: tuple) -> TracedArray:
        t = self.cur
        arr = t.locals_.get(site)
        if arr is None:
            self._constant_shape(site, "the largest size any thread needs, as a global constant")
            dt = _element_type(dtype, "local")
            shape = _shape(shape)
            name = self._array_name(site)
            root = Root(None, name, "local", shape, dt, logged=False, initialised=False)
            root.run = self
            arr = TracedArray(poisoned(shape, dt), root, self)
            t.locals_[site] = arr
            self.local_bytes = max(self.local_bytes, sum(a.nbytes for a in t.locals_.values()))
        return arr

    def const_array(self, a: Any) -> TracedArray:
        # a kernel argument (global memory): numba-cuda compiles const.array_like(argument) to the
        # argument itself (plain global loads), so it stays the logged global array — a copy here
        # would let reads escape every budget (the thirteenth attack)
        if isinstance(a, TracedArray) and a._root.space == "global":
            return a
        host = a._a if isinstance(a, TracedArray) else np.asarray(a)
        arr = self._consts.get(id(a))
        if arr is None:
            root = Root(
                None,
                f"const{len(self._consts)}",
                "const",
                host.shape,
                host.dtype,
                logged=False,
                readonly=True,
            )
            root.run = self
            arr = TracedArray(host.copy(), root, self)
            self._consts[id(a)] = arr
        return arr

    def on_atomic(self, root: Root, flat: int, changed: bool) -> None:
        t = self.cur
        if changed:
            self.nwrites += 1
        if root.logged:
            app = root.logapp
            app(t.log_tid_bits + len(t.trace))
            app(root.ridh + flat)
            app(t.log_epoch_bits + ATOMIC)
        # fence + atomic: acquire what earlier releasers published here, then publish this thread's
        # fenced accesses
        rel = root.rel
        if rel is not None:
            got = rel.get(flat)
            if got:
                k = dict(t.knows) if t.knows else {}
                for tid2, seq in got.items():
                    if seq > k.get(tid2, -1):
                        k[tid2] = seq
                self._set_knows(t, k)
        if t.fenced >= 0:
            if root.rel is None:
                root.rel = {}
            slot = root.rel.setdefault(flat, {})
            if t.knows:
                for tid2, seq in t.knows.items():
                    if seq > slot.get(tid2, -1):
                        slot[tid2] = seq
            slot[t.tid] = max(slot.get(t.tid, -1), t.fenced)

    def _set_knows(self, t: SimThread, k: dict) -> None:
        t.knows = k
        seqs, dicts = self.knows_hist.setdefault(t.tid, ([], []))
        seqs.append(len(self.log) // 3)
        dicts.append(k)

    def fence(self, scope: str) -> None:
        t = self.cur
        if scope != "block":
            # accesses logged before this row are published by the next atomic
            t.fenced = len(self.log) // 3

    def uninit_read(self, root: Root, flat: int) -> Uninit:
        self.uninit_reads += 1
        origin = root.origins.get(flat)
        if origin is None:
            t = self.cur
            origin = Origin(root.name, root.index_of(flat), (t.blk.id, t.lt), self._here())
        return Uninit(origin)

    def uninit_use(self, origin: Origin, how: str) -> None:
        self.uninit_count += 1
        t = self.cur
        here = self._here()
        key = (origin.array, how.split(" ")[0:4].__repr__(), here)
        if key in self._uninit_seen or len(self.uninit) >= MAX_EXAMPLES:
            return
        self._uninit_seen.add(key)
        self.uninit.append(UninitializedUse(origin, how, (t.blk.id, t.lt) if t else (-1, -1), here))

    def uninit_condition(self, origin: Origin, how: str) -> None:
        """A branch or loop condition computed from an uninitialised value: reported as a use, and
        — inside a kernel thread (not a warp vote or barrier predicate the scheduler evaluates) —
        the launch stops here."""
        self.uninit_use(origin, how)
        t = self.cur
        if t is not None and t.glet is not None and self._greenlet.getcurrent() is t.glet:
            raise UninitializedCondition(
                f"a branch or loop condition depends on an uninitialised value: {origin}. The"
                f" launch stops here: on a GPU the branch would follow whatever that memory held"
                f" (a `while` on it may never end). Hint: {UNINIT_HINT}"
            )

    def _here(self) -> str:
        frame = current_user_frame(self.user_codes)
        return where(frame.f_code, frame.f_lineno) if frame is not None else ""

    def negative_index(self, root: Root, desc: str, i: int, n: int) -> None:
        here = self._here()
        self.warn(
            ("neg", root.name, here),
            f"{desc}{here}: a negative index wraps around like Python's, to element {i + n} of {n}"
            " (numba-cuda adds the length; in CUDA C the same index reads before the array — if"
            " the wrap is not what you meant, guard the index)",
        )

    def fp64_made(self, frame: Any) -> None:
        """A float32 operand was promoted to float64 (numba-cuda's typing: ``x * 0.1``, ``acc = 0.0;
        acc += x``): count it at the kernel line (or the device-function line) making the value."""
        codes = self.user_codes
        while frame is not None and frame.f_code not in codes:
            frame = frame.f_back
        if frame is None:
            return
        key = (frame.f_code, frame.f_lineno)
        self.fp64[key] = self.fp64.get(key, 0) + 1

    def float64_ops(self) -> list[Float64Op]:
        return [Float64Op(line, where(code, line), n, code.co_name) for (code, line), n in sorted(
            self.fp64.items(), key=lambda kv: (kv[0][0].co_name != self.name, kv[0][1]))]

    def warn(self, key: tuple, text: str) -> None:
        if key not in self._warn_seen and len(self.warnings) < MAX_EXAMPLES:
            self._warn_seen.add(key)
            self.warnings.append(text)

    def sync_issue(self, key: tuple, kind: str, text: str) -> None:
        n = self._sync_seen.get(key)
        if n is None:
            self._sync_seen[key] = len(self.sync_errors)
            if len(self.sync_errors) < MAX_EXAMPLES:
                self.sync_errors.append(SyncIssue(kind, text))

    # -- the report --------------------------------------------------------------------------------
    def report(self, complete: bool = True) -> KernelReport:
        log = unpack_log(self.log)
        roots = [ArrayInfo(r.name, r.space, r.shape, r.dtype, r.unit) for r in self.roots]
        races, race_count, benign, benign_at = detect(
            log,
            np.array(self.epochs, dtype=np.int64).reshape(-1, 3),
            self.tpb,
            self.roots,
            self.traces,
            self.kernel_code,
            self.sync_hist,
            self.knows_hist,
        )
        return KernelReport(
            self.name,
            self.grid,
            self.block,
            self.traces,
            log,
            roots,
            self.kernel.loops,
            self.kernel.header,
            races=races,
            race_count=race_count,
            benign_races=benign,
            benign_at=benign_at,
            uninitialized=self.uninit,
            uninitialized_count=self.uninit_count,
            uninitialized_reads=self.uninit_reads,
            sync_errors=self.sync_errors,
            warnings=self.warnings,
            float64_ops=self.float64_ops(),
            shared_bytes=self.static_shared,
            dynamic_shared_bytes=self.sharedmem,
            local_bytes=self.local_bytes,
            complete=complete,
        )


def _greenlet() -> Any:
    try:
        from greenlet import greenlet
    # a dependency of the course (pyproject.toml); Colab ships it with SQLAlchemy
    except ImportError:
        raise RuntimeError(
            "the course's SIMT executor needs the greenlet package: pip install greenlet"
        ) from None
    return greenlet


def unpack_log(log: array) -> np.ndarray:
    """(accesses, 6) int64: tid, trace position (-1: none), root id, position in the root, kind,
    epoch id."""
    w = (
        np.frombuffer(log, dtype=np.int64).reshape(-1, 3)
        if len(log)
        else np.zeros((0, 3), np.int64)
    )
    out = np.empty((len(w), 6), dtype=np.int64)
    out[:, 0] = w[:, 0] >> 32
    out[:, 1] = (w[:, 0] & 0xFFFFFFFF) - 1
    out[:, 2] = w[:, 1] >> 40
    out[:, 3] = w[:, 1] & ((1 << 40) - 1)
    out[:, 4] = w[:, 2] & 3
    out[:, 5] = w[:, 2] >> 2
    return out


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(
            f"an array shape must be an int or a tuple of ints, got {shape!r}"
        ) from None


def _element_type(dtype: Any, space: str) -> np.dtype:
    """A shared or local array's element type. ``None`` is not one: NumPy reads ``np.dtype(None)``
    as float64, but numba-cuda's typing of ``cuda.{space}.array(shape, None)`` fails and the kernel
    does not compile."""
    if dtype is None:
        raise TypeError(
            f"cuda.{space}.array(shape, None): an array needs an element type (np.float32,"
            " np.int32, ...); numba-cuda does not compile it without one"
        )
    return as_dtype(dtype)


def caller_site() -> tuple:
    """(code, line) of the kernel statement calling a cuda.* function, and the call instruction (a
    site key)."""
    f = sys._getframe(2)
    return (f.f_code, f.f_lineno, f.f_lasti)
