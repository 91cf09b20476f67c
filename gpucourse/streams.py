"""The command queue and CUDA streams as a model: what the GPU's front end does with the work the
host queues.

Two models, both on a *virtual* clock in microseconds (µs), so their answers are exact and the same
on every machine:

- :class:`CommandQueue` — article 000's ring buffer (명령 큐): the host pushes commands and
  returns at once, the device pops and runs them one after another, asynchronously. Two costs, kept
  apart: ``launch_us`` is the host time per launch (it sets the launch *throughput*), ``latency_us``
  is the time from the push to the start on an idle device (launch *latency*). ``synchronize()`` is
  ``cudaDeviceSynchronize``.
- :func:`simulate` — streams (in-order queues) feeding the GPU's engines. The rules:

  1. **in order within a stream**: an op starts only after the previous op *of its stream* has
     finished;
  2. **events**: an op may also wait for ops of other streams (``waits``: ``cudaEventRecord`` after
     them, ``cudaStreamWaitEvent`` before it);
  3. **the legacy default stream** (``LEGACY``, CUDA's stream 0 without per-thread default streams):
     an op on it waits for everything issued before it on the *blocking* streams, and every op
     issued after it on a blocking stream waits for it (CUDA Runtime API, "Stream synchronization
     behavior"). Streams named in ``nonblocking`` (``cudaStreamNonBlocking``) are exempt. A
     per-thread default stream is an ordinary blocking stream;
  4. **issue**: the host issues ops in list order; each issue (a launch, a ``cudaMemcpyAsync``)
     costs the host ``launch_us``; an op cannot start before ``latency_us`` after its issue.
     ``graph=True`` issues the whole list with *one* launch, as replaying a CUDA graph does. A
     :class:`HostSync` in the list stops the host until what it waits for has finished
     (``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cudaEventSynchronize``, or any call
     that synchronises implicitly: a synchronous ``cudaMemcpy`` to the host, ``.item()``,
     ``print``);
  5. **hardware queues**: streams are mapped round-robin, in order of first use, onto
     ``Machine.connections`` hardware work queues (CUDA opens 8 per context by default,
     ``CUDA_DEVICE_MAX_CONNECTIONS``, 1–32; Hyper-Q hardware has 32). A queue hands out its commands
     in order: an op is dispatched only after every op issued before it on the same queue was
     dispatched, so streams sharing a queue can wait on each other's dependencies — a *false
     dependency*;
  6. **engines**: kernels (``engine="compute"``) share the GPU's SMs — a kernel occupies ``sms`` of
     them while it runs and starts only when that many are free, and at most
     ``Machine.max_resident_kernels`` run at once (128 on compute capability 7.5 and later: CUDA C++
     Programming Guide, technical specifications); copies use a copy engine per direction
     (``"h2d"``, ``"d2h"``), one copy at a time per engine;
  7. **greedy, in issue order**: whenever something finishes, every dispatched op whose engine has
     room starts, earliest-issued first (a later small kernel may slip past an earlier one that does
     not fit).

  What the model leaves out, on purpose — the limits of treating a kernel as "``sms`` SMs for
  ``duration`` µs": the block scheduler places a kernel's *blocks*, not the kernel, on SMs, and
  several kernels' blocks can share an SM when registers, shared memory and thread slots allow; a
  kernel that launches enough blocks fills every SM and a later kernel's blocks start only as its
  blocks retire (tail overlap), not all at once; concurrent kernels slow each other down through
  shared memory bandwidth, L2 and power; and nothing here says when the *hardware* chooses to run
  two kernels of different streams concurrently — streams only allow it.

Correctness, apart from timing: :func:`happens_before` orders ops by stream order, events, the
legacy default stream and host synchronisations; :func:`races` lists pairs of ops that touch the
same buffer (``reads`` / ``writes``), at least one writing, with no such order between them — a data
race whatever the timeline shows.

On an NVIDIA GPU, :func:`measure_on_gpu` runs the same list of ops for real — CuPy streams
(blocking, non-blocking or the legacy default stream), spin kernels that each hold ``sms`` SMs for
``duration`` µs, asynchronous copies from pinned host memory, CUDA events around every op — and
returns a measured :class:`Timeline` to draw beside the model's prediction;
:func:`measure_launch_on_gpu` separates launch latency from launch throughput.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

ENGINES = ("compute", "h2d", "d2h")
# Okabe-Ito
ENGINE_COLORS = {"compute": "#0072B2", "h2d": "#E69F00", "d2h": "#009E73", "host": "#999999"}
LEGACY = "legacy default"  # the legacy default stream (CUDA's stream 0, `cp.cuda.Stream.null`)


# -- the command queue -----------------------------------------------------------------------------

class Pending:
    """The result of a queued command: returned at once, ready only when the device has run the
    command (like a JAX array right after dispatch, or CuPy output before a synchronize)."""

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

    - ``launch(work_us)`` costs the host ``launch_us`` and returns a :class:`Pending` at once:
      ``launch_us`` is the host's time per launch, which bounds the launch *throughput* (at most one
      launch per ``launch_us``);
    - the device runs commands in order: a command starts ``latency_us`` after it was pushed (the
      launch *latency*: doorbell, fetching the command, setting up the grid), and not before the
      previous one has finished — so latency is paid in full by a kernel launched into an idle
      queue, and hidden behind the running kernel when the queue is full;
    - when ``capacity`` commands are outstanding the ring buffer is full and ``launch`` waits for a
      free slot (the host stalls: CUDA's launch queue holds about a thousand launches);
    - ``synchronize()`` (``cudaDeviceSynchronize``) waits until the device is idle.

    ``clock()`` returns the host's time in *seconds*, a drop-in for ``time.perf_counter``.
    """

    launch_us: float = 4.0
    latency_us: float = 0.0
    capacity: int = 1024
    host_us: float = 0.0
    device_free_us: float = 0.0
    # (name, pushed, start, end) µs
    log: list[tuple[str, float, float, float]] = field(default_factory=list)

    def clock(self) -> float:
        return self.host_us * 1e-6

    def host_work(self, us: float) -> None:
        """The host is busy for ``us`` µs (Python code, tracing, compiling)."""
        self.host_us += us

    def launch(self, work_us: float, name: str = "kernel") -> Pending:
        outstanding = [end for (_, _, _, end) in self.log if end > self.host_us]
        # ring buffer full: wait for the oldest command to finish
        if len(outstanding) >= self.capacity:
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


def _signature(x: Any) -> tuple:
    """What ``jax.jit`` keys its compile cache on, for one argument: an array's shape and dtype,
    else its type."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ("array", tuple(x.shape), str(x.dtype))
    return (type(x).__name__,)


class SimulatedJit:
    """A stand-in for a ``jax.jit`` function on a :class:`CommandQueue`: the first call traces and
    compiles on the host (``compile_us``, synchronous, like XLA's compile), every call then enqueues
    ``work_us`` of device work and returns a :class:`Pending` at once — exactly what a real jitted
    function does, on a clock that makes every timing exact. As with ``jax.jit``, a call whose
    arguments differ in shape, dtype or type from every earlier call traces and compiles again."""

    def __init__(
        self,
        queue: CommandQueue,
        work_us: float,
        compile_us: float = 0.0,
        name: str = "f",
        factors: dict[int, float] | None = None,
    ):
        self.queue, self.work_us, self.compile_us, self.__name__ = queue, work_us, compile_us, name
        # call number (0 = the first, compiling call) -> work multiplier
        self.factors = dict(factors or {})
        self.calls = 0
        self.signatures: set[tuple] = set()  # argument signatures compiled so far (jax.jit's cache)

    @property
    def compiled(self) -> bool:
        return bool(self.signatures)

    def __call__(self, *args: Any) -> Pending:
        signature = tuple(_signature(a) for a in args)
        if signature not in self.signatures:
            self.queue.host_work(self.compile_us)
            self.signatures.add(signature)
        # a load spike (> 1) or a lucky call (< 1)
        work = self.work_us * self.factors.get(self.calls, 1.0)
        self.calls += 1
        return self.queue.launch(work, self.__name__)

    def __repr__(self) -> str:
        varies = ", some calls slower or faster (a shared machine)" if self.factors else ""
        return (
            f"<jit {self.__name__}: compiles in {self.compile_us:g} µs, {self.work_us:g} µs of"
            f" device work per call{varies}, launch {self.queue.launch_us:g} µs>"
        )


class VirtualClock:
    """``clock()`` reads the host time of a :class:`CommandQueue` in seconds: use it like
    ``time.perf_counter``."""

    def __init__(self, queue: CommandQueue):
        self.queue = queue

    def __call__(self) -> float:
        return self.queue.clock()

    def __repr__(self) -> str:
        return "<virtual clock [s]>"


# -- streams and engines ---------------------------------------------------------------------------

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
    reads: tuple[str, ...] = ()  # buffers it reads (for races(); the timing ignores them)
    writes: tuple[str, ...] = ()  # buffers it writes

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(
                f"op {self.name!r}: engine must be one of {ENGINES}, got {self.engine!r}"
            )
        if not (self.duration >= 0 and math.isfinite(self.duration)):
            raise ValueError(
                f"op {self.name!r}: duration must be a finite number of µs >= 0, got"
                f" {self.duration!r}"
            )
        for name in ("waits", "reads", "writes"):
            value = getattr(self, name)
            if isinstance(value, (str, list)):
                object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))


@dataclass(frozen=True)
class HostSync:
    """The host stops issuing work until something has finished on the device.

    ``on="device"``: ``cudaDeviceSynchronize`` (every op issued before it); ``on=<stream name>``:
    ``cudaStreamSynchronize`` (the ops issued before it on that stream); ``on=(op names, ...)``:
    ``cudaEventSynchronize`` on events recorded after those ops. Calls that synchronise implicitly
    are one of these too: a synchronous ``cudaMemcpy`` device→host waits for its copy (and, on the
    legacy default stream, for the blocking streams); ``x.item()``, ``print(x)`` or
    ``np.asarray(x)`` wait for ``x``."""

    name: str
    on: Any = "device"  # "device" | stream name | tuple of op names


@dataclass(frozen=True)
class Machine:
    """What the model shares out: SMs for kernels, one copy engine per direction, hardware work
    queues."""

    sms: int = 132  # H100/H200 SXM
    h2d_engines: int = 1
    d2h_engines: int = 1
    # hardware work queues in use (CUDA_DEVICE_MAX_CONNECTIONS; None: one per stream)
    connections: int | None = 8
    max_resident_kernels: int = 128  # kernels running at once (compute capability 7.5 and later)
    name: str = "H100-class GPU (132 SMs, one copy engine per direction, 8 hardware queues)"

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
    """Spans of one run, model or measured, in µs from the run's start (host waits have engine
    "host")."""

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
        # ends sort before starts at the same time (-1 < 1): touching spans don't overlap
        for _, d in points:
            now += d
            best = max(best, now)
        return best

    def table(self) -> str:
        rows = [f"{'op':>8} {'stream':>7} {'engine':>8} {'start':>9} {'end':>9}   [µs]"]
        for s in sorted(self.spans, key=lambda s: (s.start, s.name)):
            rows.append(f"{s.name:>8} {s.stream:>7} {s.engine:>8} {s.start:9.1f} {s.end:9.1f}")
        return "\n".join(rows)


def _check_items(items: Sequence[Any]) -> None:
    for x in items:
        if not isinstance(x, (Op, HostSync)):
            raise TypeError(f"expected streams.Op or streams.HostSync, got {type(x).__name__}")
    names = [x.name for x in items]
    if len(set(names)) != len(names):
        raise ValueError("op names must be unique")
    known = {x.name for x in items if isinstance(x, Op)}
    for x in items:
        if isinstance(x, Op):
            missing = [w for w in x.waits if w not in known]
            if missing:
                raise ValueError(f"op {x.name!r} waits for unknown op(s) {missing}")
        elif isinstance(x, HostSync):
            if isinstance(x.on, (tuple, list)) and any(w not in known for w in x.on):
                raise ValueError(
                    f"host sync {x.name!r} waits for unknown op(s)"
                    f" {[w for w in x.on if w not in known]}"
                )
        else:
            raise TypeError(f"expected streams.Op or streams.HostSync, got {type(x).__name__}")


def device_dependencies(
    items: Sequence[Any], nonblocking: Iterable[str] = ()
) -> dict[str, set[str]]:
    """For each op, the ops it waits for on the device: its stream predecessor, its events, and the
    legacy default stream's implicit ones (rule 3). Host synchronisations are not included (see
    happens_before)."""
    nonblocking = set(nonblocking)
    last: dict[str, str] = {}  # stream -> last op issued on it
    last_legacy: str | None = None
    deps: dict[str, set[str]] = {}
    for x in items:
        if not isinstance(x, Op):
            continue
        d = set(x.waits)
        if x.stream in last:
            d.add(last[x.stream])
        if x.stream == LEGACY:  # waits for all work issued so far on blocking streams
            d.update(op for s, op in last.items() if s != LEGACY and s not in nonblocking)
        # blocking streams wait for the legacy stream
        elif x.stream not in nonblocking and last_legacy is not None:
            d.add(last_legacy)
        deps[x.name] = d
        last[x.stream] = x.name
        if x.stream == LEGACY:
            last_legacy = x.name
    return deps


def _awaited(sync: HostSync, before: list[Op]) -> list[str]:
    if sync.on == "device":
        return [op.name for op in before]
    if isinstance(sync.on, str):
        return [op.name for op in before if op.stream == sync.on]
    return list(sync.on)


def happens_before(items: Sequence[Any], nonblocking: Iterable[str] = ()) -> dict[str, set[str]]:
    """For each op, every op guaranteed to have finished before it starts: the transitive closure of
    stream order, events, the legacy default stream and host synchronisations (ops issued after a
    HostSync come after what it waited for). Independent of durations: this is what makes a schedule
    correct, not what the clock shows.

    Args:
        items: ``Op`` and ``HostSync`` in host issue order.
        nonblocking: streams created with ``cudaStreamNonBlocking``.
    Returns:
        ``{op name: names of the ops guaranteed to finish before it starts}``.
    """
    items = list(items)
    _check_items(items)
    edges = device_dependencies(items, nonblocking)
    ops: list[Op] = []
    host_done: set[str] = set()  # ops a host sync has waited for so far
    for x in items:
        if isinstance(x, HostSync):
            host_done.update(_awaited(x, ops))
        else:
            edges[x.name] |= host_done
            ops.append(x)
    closure: dict[str, set[str]] = {}

    def visit(name: str, stack: tuple[str, ...] = ()) -> set[str]:
        if name in closure:
            return closure[name]
        if name in stack:
            raise ValueError(f"cyclic dependencies through {name!r}")
        out: set[str] = set()
        for d in edges[name]:
            out.add(d)
            out |= visit(d, stack + (name,))
        closure[name] = out
        return out

    for op in ops:
        visit(op.name)
    return closure


def races(items: Sequence[Any], nonblocking: Iterable[str] = ()) -> list[tuple[str, str, str]]:
    """(op, op, buffer) for every pair of ops that access the same buffer, at least one of them
    writing, with no happens-before order between them: a data race, whether or not the two overlap
    in a particular timeline.

    Args:
        items: ``Op`` and ``HostSync`` in host issue order.
        nonblocking: streams created with ``cudaStreamNonBlocking``.
    Returns:
        (op, op, buffer) for each unordered pair of accesses that conflict.
    """
    items = list(items)
    hb = happens_before(items, nonblocking)
    ops = [x for x in items if isinstance(x, Op)]
    found = []
    for i, a in enumerate(ops):
        for b in ops[i + 1:]:
            for buf in sorted(
                (set(a.writes) & (set(b.reads) | set(b.writes))) | (set(a.reads) & set(b.writes))
            ):
                if a.name not in hb[b.name] and b.name not in hb[a.name]:
                    found.append((a.name, b.name, buf))
    return found


def simulate(
    ops: Sequence[Any],
    machine: Machine = Machine(),
    launch_us: float = 0.0,
    latency_us: float = 0.0,
    graph: bool = False,
    nonblocking: Iterable[str] = (),
) -> Timeline:
    """Run ``ops`` (``Op`` and ``HostSync``, in host issue order) through the stream/engine model;
    returns the predicted timeline (host waits appear as spans of engine "host" on the row "host").

    ``launch_us``: host cost per issued op (rule 4); ``latency_us``: from issue to the earliest
    start; ``graph=True``: one launch issues all ops (a CUDA graph replay; no HostSync inside a
    graph); ``nonblocking``: streams created with ``cudaStreamNonBlocking`` (exempt from the legacy
    stream's rule 3).

    Args:
        ops: ``Op`` and ``HostSync`` in host issue order (durations in µs).
        machine: SMs, copy engines and hardware queues.
        launch_us, latency_us: host cost per issue, and issue-to-start latency, in µs.
        graph: issue the whole list with one launch.
        nonblocking: streams created with ``cudaStreamNonBlocking``.
    Returns:
        the :class:`Timeline`: each op's start and end in µs, and the makespan.
    """
    items = list(ops)
    _check_items(items)
    if graph and any(isinstance(x, HostSync) for x in items):
        raise ValueError("a CUDA graph cannot contain a host synchronisation")
    nonblocking = frozenset(nonblocking)
    deps = device_dependencies(items, nonblocking)
    cmds: list[Op] = []
    issued: list[float] = []
    host_spans: list[Span] = []
    host = 0.0
    for x in items:  # rule 4: issue times; a host sync needs the device's timeline up to it
        if isinstance(x, HostSync):
            waited = _awaited(x, cmds)
            ends = _schedule(cmds, issued, deps, machine, latency_us) if waited else {}
            done = max((ends[n][1] for n in waited), default=host)
            host_spans.append(Span(x.name, "host", "host", host, max(host, done), host))
            host = max(host, done)
        else:
            host = launch_us if graph else host + launch_us
            cmds.append(x)
            issued.append(host)
    times = _schedule(cmds, issued, deps, machine, latency_us)
    spans = [
        Span(op.name, op.stream, op.engine, *times[op.name], issued[i]) for i, op in enumerate(cmds)
    ]
    return Timeline(tuple(spans + host_spans), source="model")


def _schedule(cmds: list[Op], issued: list[float], deps: dict[str, set[str]], machine: Machine,
              latency_us: float) -> dict[str, tuple[float, float]]:
    """(start, end) of every op under rules 1–3 and 5–7, given the issue times."""
    n = len(cmds)
    need = [min(op.sms, machine.sms) if op.engine == "compute" else 1 for op in cmds]
    for i, op in enumerate(cmds):
        if need[i] < 1 or machine.capacity(op.engine) < 1:
            raise ValueError(
                f"op {op.name!r} needs at least one unit of {op.engine} and the machine must"
                " have one"
            )
    streams_in_order = list(dict.fromkeys(op.stream for op in cmds))
    queue_of = {
        s: k if not machine.connections else k % machine.connections
        for k, s in enumerate(streams_in_order)
    }
    queue = [queue_of[op.stream] for op in cmds]
    free = {e: machine.capacity(e) for e in ENGINES}
    resident = 0
    dispatched = [False] * n
    started: dict[int, float] = {}
    end: dict[str, float] = {}
    running: list[tuple[float, int]] = []
    t = 0.0
    while len(end) < n:
        changed = True
        while changed:
            changed = False
            for e, i in [r for r in running if r[0] <= t]:  # completions
                running.remove((e, i))
                free[cmds[i].engine] += need[i]
                resident -= cmds[i].engine == "compute"
                end[cmds[i].name] = e
                changed = True
            blocked_queues: set[int] = set()
            for i in range(n):  # rule 5: each hardware queue dispatches in issue order
                if dispatched[i]:
                    continue
                ready = issued[i] + latency_us <= t and all(
                    d in end and end[d] <= t for d in deps[cmds[i].name]
                )
                if queue[i] in blocked_queues or not ready:
                    blocked_queues.add(queue[i])
                    continue
                dispatched[i] = changed = True
            for i in range(n):  # rules 6 and 7: engines, earliest-issued first
                if dispatched[i] and i not in started:
                    op = cmds[i]
                    if need[i] <= free[op.engine] and (
                        op.engine != "compute" or resident < machine.max_resident_kernels
                    ):
                        free[op.engine] -= need[i]
                        resident += op.engine == "compute"
                        started[i] = t
                        running.append((t + op.duration, i))
                        changed = True
        if len(end) == n:
            break
        upcoming = [e for e, _ in running if e > t] + [
            issued[i] + latency_us
            for i in range(n)
            if not dispatched[i] and issued[i] + latency_us > t
        ]
        if not upcoming:
            stuck = ", ".join(cmds[i].name for i in range(n) if cmds[i].name not in end)
            raise ValueError(
                f"deadlock: {stuck} can never start (a wait on an op issued later in its own"
                " stream?)"
            )
        t = min(upcoming)
    return {cmds[i].name: (started[i], end[cmds[i].name]) for i in range(n)}


def on_one_stream(ops: Iterable[Any], stream: str = "s0") -> list[Any]:
    """The same ops, all issued into one stream (the serial baseline)."""
    return [replace(op, stream=stream) if isinstance(op, Op) else op for op in ops]


def from_streams(
    streams: dict[str, Sequence[tuple[str, float]]],
    sms: int = 1,
    engine: str = "compute",
    waits: dict[str, Sequence[str]] | None = None,
) -> list[Op]:
    """Ops from ``{stream: [(name, µs), ...]}``, issued stream by stream (how a host program usually
    does it)."""
    waits = waits or {}
    return [Op(name, stream, float(us), engine=engine, sms=sms, waits=tuple(waits.get(name, ())))
            for stream, chain in streams.items() for name, us in chain]


# -- drawing ---------------------------------------------------------------------------------------

def plot_timeline(timeline: Timeline, ax: Any = None, title: str = "", label_ops: bool = True,
                  streams: Sequence[str] | None = None, xmax: float | None = None) -> Any:
    """One row per stream, one bar per op (coloured by engine), time in µs on the x axis.

    Pass the same ``xmax`` (µs) to timelines drawn one above the other so that their time axes
    compare.
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
            ax.text(
                span.start + span.duration / 2,
                y,
                span.name,
                ha="center",
                va="center",
                color="white",
                fontsize=9,
                fontweight="bold",
                clip_on=True,
            )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first stream on top
    ax.set_xlim(0, right)
    ax.grid(axis="y", visible=False)
    used = [e for e in (*ENGINES, "host") if any(s.engine == e for s in timeline.spans)]
    ax.legend(handles=[Patch(color=ENGINE_COLORS[e], label=e) for e in used], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=9)
    return ax


# -- the same ops on a real GPU --------------------------------------------------------------------

_SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    // every block spins on its SM's clock: the kernel holds gridDim.x SMs for `cycles` cycles
    // (launched with enough dynamic shared memory that no two of its blocks fit on one SM)
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""

_LAUNCH_SOURCE = r"""
extern "C" __global__ void empty() { }
extern "C" __global__ void raise_flag(volatile int* flag) {
    // tells the host that this kernel has started: one store to pinned host memory, over PCIe
    if (threadIdx.x == 0 && blockIdx.x == 0) { *flag = 1; __threadfence_system(); }
}
"""


def gpu_spin_kernel() -> Any:
    """A CuPy ``RawKernel`` ``spin(cycles)``: every block busy-waits ``cycles`` SM clock cycles (GPU
    only)."""
    from .backend import get_backend

    return get_backend().xp.RawKernel(_SPIN_SOURCE, "spin")


def _device_attribute(attribute: str, prop: str) -> int:
    """A CUDA device attribute of device 0 (``cp.cuda.Device(0).attributes``, e.g. "ClockRate"),
    falling back to ``cudaGetDeviceProperties``' field ``prop`` (CUDA 13 dropped some of those
    fields)."""
    from .backend import get_backend

    cp = get_backend().xp
    value = cp.cuda.Device(0).attributes.get(attribute)
    if value is None:
        value = cp.cuda.runtime.getDeviceProperties(0)[prop]
    return int(value)


def gpu_cycles(us: float) -> int:
    """SM clock cycles in ``us`` µs at the device's reported clock rate (GPU only)."""
    khz = _device_attribute("ClockRate", "clockRate")
    return int(us * khz / 1e3)


def side_by_side_sms(sm_count: int, kernels: int = 3, most: int = 40) -> int:
    """SMs per spin kernel (at most ``most``) such that ``kernels`` of them fit on a GPU of
    ``sm_count`` SMs side by side: §4's measured overlap needs each stream's kernel to leave room
    for the others (a T4 has 40 SMs)."""
    return max(1, min(most, sm_count // kernels))


# a jitted call's host-side dispatch: about 10-30 µs (the notebook prints the one it measures)
DISPATCH_S = 30e-6


def async_demo_size(gemm_flops: float | None, factor: float = 20.0) -> int:
    """n of §4.2's two n³ matmuls: the smallest power of two from 1024 whose 4n³ FLOPs take
    ``factor`` × a dispatch at ``gemm_flops`` FLOP/s (a GPU's float32-GEMM peak,
    :func:`hardware.f32_gemm_peak`; None: a GPU the course has no figures for, sized for 2 PFLOP/s)
    — so that completion is far later than the call's return."""
    rate = 2e15 if gemm_flops is None else gemm_flops
    n = 1024
    while 4 * n**3 / rate < factor * DISPATCH_S:
        n *= 2
    return n


def one_block_per_sm_smem() -> int:
    """Dynamic shared memory (bytes) that makes each block of a kernel take an SM to itself: more
    than half of an SM's shared memory, within the per-block opt-in limit (GPU only). Blocks are
    placed by the block scheduler; this is how a kernel of ``k`` blocks is made to hold exactly
    ``k`` SMs."""
    per_sm = _device_attribute("MaxSharedMemoryPerMultiprocessor", "sharedMemPerMultiprocessor")
    optin = _device_attribute("MaxSharedMemoryPerBlockOptin", "sharedMemPerBlockOptin")
    return min(per_sm // 2 + 1024, optin)


def measure_on_gpu(ops: Sequence[Any], repeat: int = 3, copy_bytes_per_us: float = 25e3,
                   nonblocking: Iterable[str] = ()) -> Timeline:
    """Run ``ops`` for real on the GPU backend and return the measured timeline (µs, best of
    ``repeat`` runs).

    One CuPy stream per model stream: ``LEGACY`` is the legacy default stream
    (``cp.cuda.Stream.null``), streams in ``nonblocking`` are created with
    ``cudaStreamNonBlocking``, the others are ordinary blocking streams — the same convention as
    :func:`simulate` (they differ only when an op runs on ``LEGACY``). A kernel is a spin kernel of
    ``sms`` blocks × 1024 threads, each with more than half an SM's shared memory, so that it holds
    exactly ``sms`` SMs for ``duration`` µs at the reported SM clock; a copy moves ``nbytes`` (else
    ``duration × copy_bytes_per_us``) between pinned host memory and device memory with
    ``cudaMemcpyAsync``; ``waits`` become ``cudaEventRecord`` / ``cudaStreamWaitEvent``; a
    :class:`HostSync` calls the device, stream or event synchronisation it names. Each op is
    bracketed by CUDA events in its stream: its measured start is when its stream reached it (an op
    waiting for an engine shows as started early). Raises :class:`gpucourse.BackendUnavailable` on
    CPU.
    """
    from .backend import BackendUnavailable, get_backend

    be = get_backend()
    if not be.is_gpu:
        raise BackendUnavailable("measure_on_gpu needs the GPU backend: " + be.gpu.reason)
    cp = be.xp
    items = list(ops)
    _check_items(items)
    cmds = [x for x in items if isinstance(x, Op)]
    kernel = gpu_spin_kernel()
    smem = one_block_per_sm_smem()
    kernel.max_dynamic_shared_size_bytes = smem  # opt in above the default 48 KiB per block
    sm_count = _device_attribute("MultiProcessorCount", "multiProcessorCount")
    # read the clock rate once, not inside the launch loop
    cycles_per_us = gpu_cycles(1000.0) / 1000.0
    names = list(dict.fromkeys(op.stream for op in cmds))
    nonblocking_set = set(nonblocking)
    streams = {
        name: (
            cp.cuda.Stream.null
            if name == LEGACY
            else cp.cuda.Stream(non_blocking=name in nonblocking_set)
        )
        for name in names
    }
    # timestamps of host syncs, outside every model stream
    marker = cp.cuda.Stream(non_blocking=True)
    buffers = {}
    for op in cmds:
        if op.engine != "compute":
            n = int(op.nbytes or op.duration * copy_bytes_per_us)
            host = cp.cuda.alloc_pinned_memory(max(n, 1))
            buffers[op.name] = (host, cp.empty(max(n, 1), dtype=cp.uint8), n)
    kernel((1,), (32,), (cp.int64(1),), shared_mem=smem)  # compile and load before timing
    be.sync()

    best: Timeline | None = None
    for _ in range(repeat):
        origin = cp.cuda.Event()
        origin.record(marker)
        for s in streams.values():
            s.wait_event(origin)
        marks: dict[str, tuple[Any, Any]] = {}
        done: dict[str, Any] = {}
        syncs: list[tuple[str, Any]] = []
        for x in items:
            if isinstance(x, HostSync):
                if x.on == "device":
                    be.sync()
                elif isinstance(x.on, str):
                    streams[x.on].synchronize()
                else:
                    for w in x.on:
                        done[w].synchronize()
                resumed = cp.cuda.Event()
                resumed.record(marker)  # when the host went on (marker is idle: it runs at once)
                syncs.append((x.name, resumed))
                continue
            op, s = x, streams[x.stream]
            for w in op.waits:
                s.wait_event(done[w])
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record(s)
            if op.engine == "compute":
                cycles = cp.int64(int(op.duration * cycles_per_us))
                with s:  # CuPy launches kernels on the current stream
                    kernel((max(1, min(op.sms, sm_count)),), (1024,), (cycles,), shared_mem=smem)
            else:
                host, dev, n = buffers[op.name]
                cuda_runtime = cp.cuda.runtime
                kind = (
                    cuda_runtime.memcpyHostToDevice
                    if op.engine == "h2d"
                    else cuda_runtime.memcpyDeviceToHost
                )
                src, dst = (
                    (host.ptr, dev.data.ptr) if op.engine == "h2d" else (dev.data.ptr, host.ptr)
                )
                # pinned host memory: a true DMA, async
                cuda_runtime.memcpyAsync(dst, src, n, kind, s.ptr)
            stop.record(s)
            marks[op.name] = (start, stop)
            done[op.name] = stop
        be.sync()
        elapsed = (
            lambda event: cp.cuda.get_elapsed_time(origin, event) * 1e3
        )  # noqa: E731  (ms -> µs)
        spans = [
            Span(
                op.name,
                op.stream,
                op.engine,
                elapsed(marks[op.name][0]),
                elapsed(marks[op.name][1]),
            )
            for op in cmds
        ]
        spans += [
            Span(name, "host", "host", elapsed(event), elapsed(event)) for name, event in syncs
        ]
        run = Timeline(tuple(spans), source="measured")
        if best is None or run.makespan < best.makespan:
            best = run
    return best


@dataclass(frozen=True)
class LaunchCosts:
    """What a launch costs, measured on the GPU (seconds). See :func:`measure_launch_on_gpu`."""

    latency: float  # host call → the kernel is running (idle queue): the host saw the kernel's flag
    # host time per launch call, back to back: the host side of launch throughput — a CuPy
    # RawKernel call from Python, so it includes Python's and CuPy's own per-call overhead on top of
    # CUDA's launch
    enqueue: float
    # GPU time per empty kernel with the queue kept full: the device side of throughput
    gpu_per_kernel: float
    graph_per_kernel: float  # GPU time per empty kernel replayed from a CUDA graph
    # launch + stream synchronize of one empty kernel: what a loop that waits every step pays
    round_trip: float
    event_pair: float  # CUDA events around one empty kernel on an idle queue (GPU clock)
    # the host had queued all n launches before the spin kernel ended: gpu_per_kernel is the GPU's
    # own rate, not the host's enqueue rate seen through a queue that ran dry (or filled up and
    # blocked)
    host_ahead: bool = True


def measure_launch_on_gpu(n: int = 512, repeat: int = 30) -> LaunchCosts:
    """Launch latency vs launch throughput, measured separately on the GPU backend (CuPy raw
    kernels).

    - ``latency``: the host reads ``time.perf_counter``, launches a kernel whose first thread writes
      a flag into pinned host memory, and spins until it sees the flag: enqueue → running, plus one
      PCIe write (an upper bound). Median of ``repeat``, each on an idle queue.
    - ``enqueue``: ``n`` launches back to back, host time per call (how fast the host can feed the
      queue). Each is a CuPy ``RawKernel`` call from Python: the figure includes Python's and CuPy's
      per-call overhead on top of CUDA's own launch cost — a C++ ``<<<…>>>`` launch costs the host
      less.
    - ``gpu_per_kernel``: ``n`` empty kernels queued behind a spin kernel long enough to hide the
      host (8× the host's measured time to queue them, at least 5 ms; once more with 32× if the host
      still fell behind), CUDA events around the ``n``: the GPU's own time per launch once it never
      waits for the host. ``n`` stays well below the depth of CUDA's launch queue (about a thousand
      entries): were the queue to fill, the host would block until the spin ended and the events
      would time the host's enqueue rate instead. ``host_ahead`` records that the host had queued
      all ``n`` while the spin kernel was still running (its end event not yet reached).
    - ``graph_per_kernel``: the same ``n`` kernels captured in a CUDA graph and replayed, CUDA
      events.
    - ``round_trip``: launch one empty kernel and ``synchronize`` the stream, host clock, median of
      ``repeat``.
    - ``event_pair``: CUDA events recorded just before and after one empty kernel on an idle stream.
    """
    import time

    import numpy as np

    from .backend import BackendUnavailable, get_backend

    be = get_backend()
    if not be.is_gpu:
        raise BackendUnavailable("measure_launch_on_gpu needs the GPU backend: " + be.gpu.reason)
    cp = be.xp
    module = cp.RawModule(code=_LAUNCH_SOURCE)
    empty, raise_flag = module.get_function("empty"), module.get_function("raise_flag")
    spin = gpu_spin_kernel()
    stream = cp.cuda.Stream(non_blocking=True)
    # with unified addressing, the same pointer works in a kernel
    pinned = cp.cuda.alloc_pinned_memory(4)
    flag = np.frombuffer(pinned, dtype=np.int32, count=1)
    arg = (np.uint64(pinned.ptr),)
    latencies, trips, pairs = [], [], []
    with stream:  # every launch below goes to `stream` (CuPy launches on the current stream)
        empty((1,), (1,), ())
        raise_flag((1,), (1,), arg)
        spin((1,), (1,), (cp.int64(1),))
        stream.synchronize()
        for _ in range(repeat):
            flag[0] = 0
            stream.synchronize()
            t0 = time.perf_counter()
            raise_flag((1,), (1,), arg)
            deadline = t0 + 1.0
            while flag[0] == 0 and time.perf_counter() < deadline:
                pass
            latencies.append(time.perf_counter() - t0)
            stream.synchronize()
            t0 = time.perf_counter()
            empty((1,), (1,), ())
            stream.synchronize()
            trips.append(time.perf_counter() - t0)
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(stream)
            empty((1,), (1,), ())
            b.record(stream)
            b.synchronize()
            pairs.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
        if flag[0] == 0:
            raise RuntimeError(
                "the kernel's flag never reached the host: pinned memory is not mapped here"
            )

        t0 = time.perf_counter()
        for _ in range(n):
            empty((1,), (1,), ())
        enqueue = (time.perf_counter() - t0) / n
        stream.synchronize()

        # µs of spinning: far longer than the host needed to queue n launches (8×: the host may be
        # slowed by other programs or a page fault while queuing); if it still fell behind, once
        # more with a 4× longer spin
        for margin in (8.0, 32.0):
            hide = max(margin * enqueue * n * 1e6, 5_000.0)
            a, b = cp.cuda.Event(), cp.cuda.Event()
            spin((1,), (1,), (cp.int64(gpu_cycles(hide)),))
            a.record(stream)
            for _ in range(n):
                empty((1,), (1,), ())
            # the spin is still running: every launch is queued before the GPU needs it
            host_ahead = not a.done
            b.record(stream)
            b.synchronize()
            if host_ahead:
                break
        gpu_per_kernel = cp.cuda.get_elapsed_time(a, b) * 1e-3 / n

    # capture needs a stream other than the legacy default one
    capture = cp.cuda.Stream(non_blocking=True)
    with capture:
        capture.begin_capture()
        for _ in range(n):
            empty((1,), (1,), ())
        graph = capture.end_capture()
    graph.launch(stream=stream)  # upload once
    stream.synchronize()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(stream)
    graph.launch(stream=stream)
    b.record(stream)
    b.synchronize()
    graph_per_kernel = cp.cuda.get_elapsed_time(a, b) * 1e-3 / n
    return LaunchCosts(
        latency=float(np.median(latencies)),
        enqueue=enqueue,
        gpu_per_kernel=gpu_per_kernel,
        graph_per_kernel=graph_per_kernel,
        round_trip=float(np.median(trips)),
        event_pair=float(np.median(pairs)),
        host_ahead=host_ahead,
    )
