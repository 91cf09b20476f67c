"""An instrumented SIMT executor for numba-cuda kernels: what each thread, warp and block did.

Two ways in, the same executor::

    report = simt.run(kernel, griddim, blockdim, *args)  # args: NumPy arrays (written in place)
                                    # and scalars
    report.simt_efficiency          # active lanes per issued warp step / 32
    report.per_thread("global")     # mean reads/writes per thread of global memory
    report.races                    # conflicting accesses between barriers: deterministic, never
                                    # by luck
    report.problems()               # synchronisation errors, races, uses of uninitialised memory

    cuda = simt.cuda                # numba-cuda's API (the course's CPU backend: be.cuda)
    @cuda.jit
    def add_one(a): ...
    add_one[blocks, threads](a)     # runs here, unchanged on a GPU with numba-cuda
    add_one.last_report             # the same report, for the student's own kernel

``kernel`` may be the executor's (``simt.cuda.jit``), numba-cuda's (real target or numba's
simulator) or a plain function: the executor runs the kernel's *Python source*, so the same report
comes out on a laptop and on an H100.

How it executes (deterministically, in the calling OS thread):

- every CUDA thread is a coroutine (a greenlet): a launch starts **no OS thread**, whatever its
  size. Blocks run one after the other; inside a block each thread runs until it reaches
  ``cuda.syncthreads()`` (the end of a *phase*), a warp operation or its end, in thread order; then
  the next phase starts. A warp operation (``shfl_*_sync``, votes, ``syncwarp``, ``activemask``)
  completes when the lanes its mask names have all arrived; ``cg.this_grid().sync()`` holds each
  block until every block has reached it.
- every access to an argument array (global memory) or a ``cuda.shared.array`` (shared memory, one
  per block) goes through :class:`TracedArray`, which bounds-checks the index (a negative index
  wraps like Python, as numba-cuda compiles it, with a warning in the report; past the end is an
  error) and records who touched which element when. Fresh shared and local memory is poisoned (NaN,
  0xDEADBEEF): a value read before any thread wrote it is tracked, and its use reported.
- a **race** is two threads touching one element, at least one of them writing, with nothing
  ordering them: same block and same phase (unless a ``syncwarp`` or a fence + atomic hand-off
  orders them), or different blocks (blocks never synchronise, except across ``grid.sync()``).
  Atomics do not race with each other.
- each thread's executed source statements form its *trace*. A warp issues one step per distinct
  statement its threads are at, lowest first in program order (loop iterations are ordered by their
  count): threads at the same statement share the step, threads elsewhere wait masked off. **SIMT
  efficiency** = active lanes / (steps × 32). Granularity is one source statement of the kernel (not
  one instruction: a one-line ``a if c else b`` is one step); device functions count as part of the
  statement that calls them, each statement executed inside one (and each loop iteration) as
  another step of that statement (a GPU inlines them: lanes that take an `if` inside one, or loop
  longer, diverge there).
- a loop that runs too long (``max_iterations`` per thread), a spin-wait no thread can end, or a
  deadlocked barrier ends the launch with :class:`KernelError`, naming the thread and the source
  line.

Modules: ``api`` (numba-cuda's ``cuda``, in kernels and on the host), ``host`` (device arrays,
streams, events), ``atomics``, ``run`` (``simt.run``), ``launch`` (one launch: scheduling, budgets,
memory hooks), ``threads`` (the CUDA threads and blocks), ``barriers`` (block and grid barriers,
barrier divergence), ``warps`` (warp operations), ``memory`` (traced arrays), ``races`` (the race
search), ``instrument`` (source → traced function), ``values`` (dtypes, poison), ``report``
(:class:`KernelReport`), ``plots`` (access maps, launch trees), ``dims`` (geometry, limits),
``errors``.
"""

from __future__ import annotations

from .api import CudaAPI, DeviceArray, DeviceFunction, Kernel, cuda
from .dims import SECTOR_BYTES, WARP_SIZE, Dim3, dim3
from .errors import KernelError, NotModelled, OutOfBounds
from .instrument import code_names
from .memory import TracedArray
from .plots import launch_tree, plot_access
from .report import (
    UNINIT_HINT,
    Float64Op,
    KernelReport,
    Race,
    ReportData,
    SyncIssue,
    UninitializedUse,
    WarpStats,
    race_hint,
)
from .run import run
from .values import Uninit

__all__ = [
    "CudaAPI",
    "DeviceArray",
    "DeviceFunction",
    "Dim3",
    "Float64Op",
    "Kernel",
    "KernelError",
    "KernelReport",
    "NotModelled",
    "OutOfBounds",
    "Race",
    "ReportData",
    "SECTOR_BYTES",
    "SyncIssue",
    "TracedArray",
    "Uninit",
    "UninitializedUse",
    "WARP_SIZE",
    "WarpStats",
    "code_names",
    "cuda",
    "dim3",
    "launch_tree",
    "plot_access",
    "race_hint",
    "UNINIT_HINT",
    "run",
]
