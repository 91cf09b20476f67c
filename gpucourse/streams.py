"""The command queue and CUDA streams as a model: what the GPU's front end does with the work the host queues.

Two models, both on a *virtual* clock in microseconds (µs), so their answers are exact and the same on every
machine:

- :class:`CommandQueue` — the seed's ring buffer (명령 큐): the host pushes commands and returns at once, the
  device pops and runs them one after another, asynchronously. ``synchronize()`` is ``cudaDeviceSynchronize``.
- :func:`simulate` — several streams (in-order queues) feeding the GPU's engines. The rules:

  1. **in order within a stream**: an op starts only after the previous op *of its stream* has finished;
  2. **events**: an op may also wait for ops of other streams (``waits``: ``cudaEventRecord`` after them,
     ``cudaStreamWaitEvent`` before it);
  3. **issue**: the host issues ops in list order; each issue (a launch, a ``cudaMemcpyAsync``) costs the host
     ``launch_us``; an op cannot start before it was issued. ``graph=True`` issues the whole list with *one*
     launch, as replaying a CUDA graph does;
  4. **engines**: kernels (``engine="compute"``) share the GPU's SMs — a kernel occupies ``sms`` of them while it
     runs and starts only when that many are free; copies use a copy engine per direction (``"h2d"``,
     ``"d2h"``), one copy at a time per engine, like the two DMA engines of a data-centre GPU;
  5. **greedy, in issue order**: whenever something finishes, every op whose stream, events and engine allow it
     starts, earliest-issued first (a later small kernel may slip past an earlier one that does not fit).

  What the model leaves out, on purpose: a kernel's blocks really start one by one as SMs free up (here a
  kernel needs all its SMs at once), concurrent kernels slow each other down through shared memory bandwidth
  and caches, and a real GPU has a limited number of hardware queues (128 on Hopper-class GPUs).

On an NVIDIA GPU, :func:`measure_on_gpu` runs the same list of ops for real — CuPy streams, spin kernels that
occupy ``sms`` SMs for ``duration`` µs, asynchronous copies from pinned host memory, CUDA events around every op
— and returns a measured :class:`Timeline` to draw beside the model's prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

ENGINES = ("compute", "h2d", "d2h")
ENGINE_COLORS = {"compute": "#0072B2", "h2d": "#E69F00", "d2h": "#009E73"}  # Okabe-Ito, as gc.plotting


# -- the command queue ------------------------------------------------------------------------------------------

class Pending:
    """The result of a queued command: returned at once, ready only when the device has run the command
    (like a JAX array right after dispatch, or CuPy output before a synchronize)."""

    def __init__(self, queue: "CommandQueue", end_us: float, name: str):
        self.queue, self.end_us, self.name = queue, end_us, name

    def is_ready(self) -> bool:
        return self.queue.host_us >= self.end_us

    def block_until_ready(self) -> "Pending":
        """Wait (on the host) until this command has finished: an event synchronize."""
        self.queue.host_us = max(self.queue.host_us, self.end_us)
        return self

    def __repr__(self) -> str:
        state = "ready" if self.is_ready() else "pending"
        return f"<{self.name}: {state}, done at t = {self.end_us:g} µs>"


@dataclass
class CommandQueue:
    """One host thread, one device, one queue between them, on a virtual clock (µs).

    - ``launch(work_us)`` costs the host ``launch_us`` and returns a :class:`Pending` at once;
    - the device runs commands in order: a command starts ``latency_us`` after it was pushed, and not before
      the previous one has finished;
    - when ``capacity`` commands are outstanding the ring buffer is full and ``launch`` waits for a free slot
      (the host stalls: CUDA's launch queue holds about a thousand launches);
    - ``synchronize()`` (``cudaDeviceSynchronize``) waits until the device is idle.

    ``clock()`` returns the host's time in *seconds*, a drop-in for ``time.perf_counter``.
    """

    launch_us: float = 4.0
    latency_us: float = 0.0
    capacity: int = 1024
    host_us: float = 0.0
    device_free_us: float = 0.0
    log: list[tuple[str, float, float, float]] = field(default_factory=list)  # (name, pushed, start, end) µs

    def clock(self) -> float:
        return self.host_us * 1e-6

    def host_work(self, us: float) -> None:
        """The host is busy for ``us`` µs (Python code, tracing, compiling)."""
        self.host_us += us

    def launch(self, work_us: float, name: str = "kernel") -> Pending:
        outstanding = [end for (_, _, _, end) in self.log if end > self.host_us]
        if len(outstanding) >= self.capacity:  # ring buffer full: wait for the oldest command to finish
            self.host_us = sorted(outstanding)[len(outstanding) - self.capacity]
        self.host_us += self.launch_us
        start = max(self.host_us + self.latency_us, self.device_free_us)
        end = start + work_us
        self.device_free_us = end
        self.log.append((name, self.host_us, start, end))
        return Pending(self, end, name)

    def synchronize(self) -> None:
        self.host_us = max(self.host_us, self.device_free_us)

    def device_busy_us(self) -> float:
        return sum(end - start for (_, _, start, end) in self.log)


class SimulatedJit:
    """A stand-in for a ``jax.jit`` function on a :class:`CommandQueue`: the first call traces and compiles on
    the host (``compile_us``, synchronous, like XLA's compile), every call then enqueues ``work_us`` of device
    work and returns a :class:`Pending` at once — exactly what a real jitted function does, on a clock that
    makes every timing exact."""

    def __init__(self, queue: CommandQueue, work_us: float, compile_us: float = 0.0, name: str = "f"):
        self.queue, self.work_us, self.compile_us, self.__name__ = queue, work_us, compile_us, name
        self.compiled = False

    def __call__(self, *args: Any) -> Pending:
        if not self.compiled:
            self.queue.host_work(self.compile_us)
            self.compiled = True
        return self.queue.launch(self.work_us, self.__name__)

    def __repr__(self) -> str:
        return (f"<jit {self.__name__}: compiles in {self.compile_us:g} µs, {self.work_us:g} µs of device work per "
                f"call, launch {self.queue.launch_us:g} µs>")


class VirtualClock:
    """``clock()`` reads the host time of a :class:`CommandQueue` in seconds: use it like ``time.perf_counter``."""

    def __init__(self, queue: CommandQueue):
        self.queue = queue

    def __call__(self) -> float:
        return self.queue.clock()

    def __repr__(self) -> str:
        return "<virtual clock [s]>"


# -- streams and engines ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Op:
    """One command in a stream. ``duration`` in µs is how long it runs once it has its engine."""

    name: str
    stream: str
    duration: float  # µs
    engine: str = "compute"  # "compute" | "h2d" | "d2h"
    sms: int = 1  # compute: SMs its blocks occupy while it runs (capped at the machine's SM count)
    waits: tuple[str, ...] = ()  # ops (any stream) whose completion it waits for: events
    nbytes: int = 0  # copies: bytes moved (the GPU runner copies this many)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"op {self.name!r}: engine must be one of {ENGINES}, got {self.engine!r}")
        if not (self.duration >= 0 and math.isfinite(self.duration)):
            raise ValueError(f"op {self.name!r}: duration must be a finite number of µs >= 0, got {self.duration!r}")
        if isinstance(self.waits, (str, list)):
            object.__setattr__(self, "waits", (self.waits,) if isinstance(self.waits, str) else tuple(self.waits))


@dataclass(frozen=True)
class Machine:
    """What the model shares out: SMs for kernels, one copy engine per direction by default."""

    sms: int = 132  # H100/H200 SXM
    h2d_engines: int = 1
    d2h_engines: int = 1
    name: str = "H100-class GPU (132 SMs, one copy engine per direction)"

    def capacity(self, engine: str) -> int:
        return {"compute": self.sms, "h2d": self.h2d_engines, "d2h": self.d2h_engines}[engine]


@dataclass(frozen=True)
class Span:
    name: str
    stream: str
    engine: str
    start: float  # µs
    end: float  # µs
    issued: float = 0.0  # µs: when the host had issued it

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Timeline:
    """Spans of one run, model or measured, in µs from the run's start."""

    spans: tuple[Span, ...]
    source: str = "model"

    @property
    def makespan(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    def span(self, name: str) -> Span:
        for s in self.spans:
            if s.name == name:
                return s
        raise KeyError(name)

    def streams(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.spans:
            seen.setdefault(s.stream, None)
        return list(seen)

    def busy(self, engine: str) -> float:
        """µs during which at least one op of ``engine`` ran (the union of its spans)."""
        total, end = 0.0, -math.inf
        for s in sorted((s for s in self.spans if s.engine == engine), key=lambda s: s.start):
            if s.start > end:
                total += s.duration
                end = s.end
            elif s.end > end:
                total += s.end - end
                end = s.end
        return total

    def max_concurrency(self, engine: str = "compute") -> int:
        """The largest number of ``engine`` ops running at the same instant."""
        points = sorted([(s.start, 1) for s in self.spans if s.engine == engine]
                        + [(s.end, -1) for s in self.spans if s.engine == engine])
        best = now = 0
        for _, d in points:  # ends sort before starts at the same time (-1 < 1): touching spans don't overlap
            now += d
            best = max(best, now)
        return best

    def table(self) -> str:
        rows = [f"{'op':>8} {'stream':>7} {'engine':>8} {'start':>9} {'end':>9}   [µs]"]
        for s in sorted(self.spans, key=lambda s: (s.start, s.name)):
            rows.append(f"{s.name:>8} {s.stream:>7} {s.engine:>8} {s.start:9.1f} {s.end:9.1f}")
        return "\n".join(rows)


def simulate(ops: Sequence[Op], machine: Machine = Machine(), launch_us: float = 0.0, latency_us: float = 0.0,
             graph: bool = False) -> Timeline:
    """Run ``ops`` (in host issue order) through the stream/engine model; returns the predicted timeline.

    ``launch_us``: host cost per issued op (rule 3); ``latency_us``: from issue to the earliest start;
    ``graph=True``: one launch issues all ops (a CUDA graph replay).
    """
    ops = list(ops)
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        raise ValueError("op names must be unique")
    known = set(names)
    for op in ops:
        missing = [w for w in op.waits if w not in known]
        if missing:
            raise ValueError(f"op {op.name!r} waits for unknown op(s) {missing}")
    issued = [launch_us if graph else (i + 1) * launch_us for i in range(len(ops))]
    previous: dict[str, str | None] = {}
    before: list[str | None] = []
    for op in ops:  # the op issued just before, in the same stream
        before.append(previous.get(op.stream))
        previous[op.stream] = op.name
    need = [min(op.sms, machine.sms) if op.engine == "compute" else 1 for op in ops]
    free = {e: machine.capacity(e) for e in ENGINES}
    for i, op in enumerate(ops):
        if need[i] < 1 or machine.capacity(op.engine) < 1:
            raise ValueError(f"op {op.name!r} needs at least one unit of {op.engine} and the machine must have one")

    end: dict[str, float] = {}
    running: list[tuple[float, int]] = []  # (end time, op index)
    spans: dict[int, Span] = {}
    waiting = list(range(len(ops)))
    t = 0.0
    while waiting or running:
        for i in list(waiting):  # rule 5: greedy, earliest-issued first
            op = ops[i]
            deps = [before[i], *op.waits]
            ready = issued[i] + latency_us <= t and all(d is None or (d in end and end[d] <= t) for d in deps)
            if ready and need[i] <= free[op.engine]:
                free[op.engine] -= need[i]
                running.append((t + op.duration, i))
                spans[i] = Span(op.name, op.stream, op.engine, t, t + op.duration, issued[i])
                waiting.remove(i)
                if op.duration == 0:
                    break  # let the zero-length op finish before anything else is considered
        upcoming = [e for e, _ in running] + [issued[i] + latency_us for i in waiting if issued[i] + latency_us > t]
        if not upcoming:
            stuck = ", ".join(ops[i].name for i in waiting)
            raise ValueError(f"deadlock: {stuck} can never start (a wait on an op issued later in its own stream?)")
        t = min(upcoming)
        for e, i in [r for r in running if r[0] <= t]:
            running.remove((e, i))
            free[ops[i].engine] += need[i]
            end[ops[i].name] = e
    return Timeline(tuple(spans[i] for i in range(len(ops))), source="model")


def on_one_stream(ops: Iterable[Op], stream: str = "s0") -> list[Op]:
    """The same ops, all issued into one stream (the serial baseline)."""
    return [replace(op, stream=stream) for op in ops]


def from_streams(streams: dict[str, Sequence[tuple[str, float]]], sms: int = 1, engine: str = "compute",
                 waits: dict[str, Sequence[str]] | None = None) -> list[Op]:
    """Ops from ``{stream: [(name, µs), ...]}``, issued stream by stream (how a host program usually does it)."""
    waits = waits or {}
    return [Op(name, stream, float(us), engine=engine, sms=sms, waits=tuple(waits.get(name, ())))
            for stream, chain in streams.items() for name, us in chain]


# -- drawing -----------------------------------------------------------------------------------------------------

def plot_timeline(timeline: Timeline, ax: Any = None, title: str = "", label_ops: bool = True,
                  streams: Sequence[str] | None = None, xmax: float | None = None) -> Any:
    """One row per stream, one bar per op (coloured by engine), time in µs on the x axis.

    Pass the same ``xmax`` (µs) to timelines drawn one above the other so that their time axes compare.
    """
    from matplotlib.patches import Patch

    from . import plotting

    ax = plotting.axes("time [µs]", "stream [id]", title or f"Timeline ({timeline.source})", ax=ax)
    ax.set_axisbelow(True)
    rows = list(streams) if streams is not None else timeline.streams()
    right = xmax if xmax is not None else max(timeline.makespan, 1e-9) * 1.02
    for span in timeline.spans:
        y = rows.index(span.stream)
        ax.barh(y, span.duration, left=span.start, height=0.6, color=ENGINE_COLORS[span.engine],
                edgecolor="white", linewidth=1.0)
        if label_ops and span.duration > 0.06 * right:  # room for the label
            ax.text(span.start + span.duration / 2, y, span.name, ha="center", va="center", color="white",
                    fontsize=9, fontweight="bold", clip_on=True)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first stream on top
    ax.set_xlim(0, right)
    ax.grid(axis="y", visible=False)
    used = [e for e in ENGINES if any(s.engine == e for s in timeline.spans)]
    ax.legend(handles=[Patch(color=ENGINE_COLORS[e], label=e) for e in used], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=9)
    return ax


# -- the same ops on a real GPU ---------------------------------------------------------------------------------

_SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    // every block spins on its SM's clock: the kernel occupies gridDim.x SMs for `cycles` cycles
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


def gpu_spin_kernel() -> Any:
    """A CuPy ``RawKernel`` ``spin(cycles)``: every block busy-waits ``cycles`` SM clock cycles (GPU only)."""
    from .backend import get_backend

    return get_backend().xp.RawKernel(_SPIN_SOURCE, "spin")


def gpu_cycles(us: float) -> int:
    """SM clock cycles in ``us`` µs at the device's reported clock rate (GPU only)."""
    from .backend import get_backend

    khz = get_backend().xp.cuda.runtime.getDeviceProperties(0)["clockRate"]
    return int(us * khz / 1e3)


def measure_on_gpu(ops: Sequence[Op], repeat: int = 3, copy_bytes_per_us: float = 25e3) -> Timeline:
    """Run ``ops`` for real on the GPU backend and return the measured timeline (µs, best of ``repeat`` runs).

    One non-blocking CuPy stream per model stream; a kernel is a spin kernel of ``2 × sms`` blocks × 1024
    threads (an SM holds at most 2048 threads on Ampere/Hopper, so it fills ``sms`` SMs) that runs ``duration``
    µs at the reported SM clock; a copy moves ``nbytes`` (else ``duration × copy_bytes_per_us``)
    between pinned host memory and device memory with ``cudaMemcpyAsync``; ``waits`` become
    ``cudaEventRecord`` / ``cudaStreamWaitEvent``. Each op is bracketed by CUDA events in its stream: its
    measured start is when its stream reached it (an op waiting for an engine shows as started early).
    Raises :class:`gpucourse.BackendUnavailable` on CPU.
    """
    from .backend import BackendUnavailable, get_backend

    be = get_backend()
    if not be.is_gpu:
        raise BackendUnavailable("measure_on_gpu needs the GPU backend: " + be.gpu.reason)
    cp = be.xp
    kernel = gpu_spin_kernel()
    cycles_per_us = gpu_cycles(1000.0) / 1000.0  # read the clock rate once, not inside the launch loop
    streams = {name: cp.cuda.Stream(non_blocking=True) for name in dict.fromkeys(op.stream for op in ops)}
    buffers = {}
    for op in ops:
        if op.engine != "compute":
            n = int(op.nbytes or op.duration * copy_bytes_per_us)
            host = cp.cuda.alloc_pinned_memory(max(n, 1))
            buffers[op.name] = (host, cp.empty(max(n, 1), dtype=cp.uint8), n)
    kernel((1,), (1,), (cp.int64(1),))  # compile and load before timing
    be.sync()

    best: Timeline | None = None
    for _ in range(repeat):
        origin = cp.cuda.Event()
        origin.record(cp.cuda.Stream.null)
        for s in streams.values():
            s.wait_event(origin)
        marks: dict[str, tuple[Any, Any]] = {}
        done: dict[str, Any] = {}
        for op in ops:
            s = streams[op.stream]
            for w in op.waits:
                s.wait_event(done[w])
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record(s)
            if op.engine == "compute":
                cycles = cp.int64(int(op.duration * cycles_per_us))
                with s:  # CuPy launches kernels on the current stream
                    kernel((2 * max(1, op.sms),), (1024,), (cycles,))  # 2 × 1024 threads fill an SM
            else:
                host, dev, n = buffers[op.name]
                rt = cp.cuda.runtime
                kind = rt.memcpyHostToDevice if op.engine == "h2d" else rt.memcpyDeviceToHost
                src, dst = (host.ptr, dev.data.ptr) if op.engine == "h2d" else (dev.data.ptr, host.ptr)
                rt.memcpyAsync(dst, src, n, kind, s.ptr)  # pinned host memory: a true DMA, async
            stop.record(s)
            marks[op.name] = (start, stop)
            done[op.name] = stop
        be.sync()
        spans = tuple(
            Span(op.name, op.stream, op.engine,
                 cp.cuda.get_elapsed_time(origin, marks[op.name][0]) * 1e3,
                 cp.cuda.get_elapsed_time(origin, marks[op.name][1]) * 1e3)
            for op in ops
        )
        run = Timeline(spans, source="measured")
        if best is None or run.makespan < best.makespan:
            best = run
    return best
