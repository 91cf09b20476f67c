"""The one timing helper every measurement in the course goes through.

GPUs (and JAX, even on a CPU) run work *asynchronously*: a call returns as soon as the work is
queued. A stopwatch around the call then measures the queueing, not the work. :func:`measure`
therefore

1. warms up (compilation, caches, lazy allocation) and discards those runs,
2. after every call waits for the result: ``jax.block_until_ready`` on JAX values (pytrees
   included), ``cudaDeviceSynchronize`` on the GPU backend, ``block_until_ready()`` on anything else
   that has it,
3. repeats and reports the median and the spread (interquartile range), never a single run.

On the GPU backend ``clock="cuda"`` times with CUDA events recorded on the current stream instead of
the host clock: the GPU's own view of how long the queued work took.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .backend import get_backend


@dataclass(frozen=True)
class Timing:
    """Seconds per call over ``len(times)`` measured runs."""

    times: tuple[float, ...]  # seconds, one per measured call
    synchronized: bool
    clock: str

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def q25(self) -> float:
        return float(np.percentile(self.times, 25))

    @property
    def q75(self) -> float:
        return float(np.percentile(self.times, 75))

    @property
    def best(self) -> float:
        return float(min(self.times))

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (0.05 = the middle half lies within 5 %)."""
        return (self.q75 - self.q25) / self.median if self.median > 0 else math.inf

    def rate(self, amount: float) -> float:
        """``amount`` per second at the median time (FLOP/s for FLOPs, B/s for bytes)."""
        return amount / self.median

    def __str__(self) -> str:
        return (
            f"{format_seconds(self.median)} (median of {len(self.times)}, IQR"
            f" ±{self.spread * 50:.1f}%)"
        )


def format_seconds(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def block(result: Any) -> Any:
    """Wait until ``result`` (any pytree of JAX/CuPy/NumPy values) has really been computed.

    Args:
        result: what a call returned: a JAX array, a CuPy or NumPy array, or a pytree of them.
    Returns:
        ``result`` itself, once every array in it is ready.
    """
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.block_until_ready(result)  # calls block_until_ready() on every pytree leaf that has it
    else:
        for leaf in _leaves(result):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()
    backend = get_backend()
    if backend.is_gpu:
        backend.sync()  # CuPy kernels queued on any stream
    return result


def _leaves(x: Any):
    """Leaves of nested dicts, lists and tuples (JAX's pytrees, when JAX is not imported)."""
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


def measure(
    fn: Callable[..., Any],
    *args: Any,
    warmup: int = 2,
    repeat: int = 15,
    max_seconds: float | None = 5.0,
    sync: bool = True,
    clock: str = "host",
    **kwargs: Any,
) -> Timing:
    """Time ``fn(*args, **kwargs)``: ``warmup`` discarded calls, then ``repeat`` measured ones.

    ``sync=False`` reproduces the classic mistake (the stopwatch stops when the call *returns*) so
    that the course can show how wrong it is. ``max_seconds`` stops repeating early (at least 3
    runs) for slow calls. ``clock="cuda"`` uses CUDA events on the GPU backend.

    Args:
        fn: the call to time; *args, **kwargs: its arguments.
        warmup: discarded calls; repeat: measured calls; max_seconds: stop early after this long.
        sync: wait for the result before stopping the clock; clock: "host" or "cuda" (events).
    Returns:
        a :class:`Timing`: every run's seconds, with ``best`` and ``median``.
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    if clock not in ("host", "cuda"):
        raise ValueError("clock must be 'host' or 'cuda'")
    backend = get_backend()
    if clock == "cuda" and not backend.is_gpu:
        raise ValueError("clock='cuda' needs the GPU backend; use the default host clock on CPU")

    for _ in range(warmup):
        out = fn(*args, **kwargs)
        if sync:
            block(out)

    times: list[float] = []
    started = time.perf_counter()
    if clock == "cuda":
        return Timing(
            _cuda_event_times(fn, args, kwargs, repeat, max_seconds, started),
            synchronized=True,
            clock=clock,
        )
    for i in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        if sync:
            block(out)
        times.append(time.perf_counter() - t0)
        if max_seconds is not None and i >= 2 and time.perf_counter() - started > max_seconds:
            break
    if not sync:
        block(out)  # don't leave queued work running into the next measurement
    return Timing(tuple(times), synchronized=sync, clock=clock)


# the GPU is kept busy this long before the first start event: more than a launch's host path
LEAD_S = 200e-6
_LEAD_SOURCE = r"""
// one thread spins: the GPU is busy, no memory is touched
extern "C" __global__ void lead(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""
_LEAD: dict[int, Any] = {}


def _lead_kernel(cp: Any) -> Any:
    if id(cp) not in _LEAD:
        _LEAD[id(cp)] = cp.RawKernel(_LEAD_SOURCE, "lead")
    return _LEAD[id(cp)]


def _clock_hz(cp: Any) -> float:
    """The SM clock the device reports (cudaDevAttrClockRate, kHz), in Hz; 2 GHz where it reports
    none (a spin then lasts longer than LEAD_S on a slower clock: harmless)."""
    khz = cp.cuda.Device().attributes.get("ClockRate")
    if khz is None:
        khz = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id).get("clockRate")
    return float(khz) * 1e3 if khz else 2e9


def _cuda_event_times(
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict,
    repeat: int,
    max_seconds: float | None,
    started: float,
) -> tuple[float, ...]:
    """Seconds per call on the GPU's own clock: a pair of CUDA events around each call, every call
    queued behind the previous one with no synchronisation in between, and one wait at the end.
    Synchronising after each call would leave the GPU idle while Python prepares the next launch
    (numba-cuda's dispatch takes tens of µs): the start event would then run at once, and the
    interval would include that wait. Queued back to back, each call's start event runs when the
    previous call's work ends, so the interval is the GPU's work — for kernels longer than a
    launch's host time; shorter ones are launch-bound, and their intervals show it. The first call
    has no previous one: a spin kernel of LEAD_S, queued before its start event, keeps the GPU busy
    while the call is launched (it touches no memory, so no cache sees it), so even a single timed
    call (``repeat=1``) is device time."""
    cp = get_backend().xp
    # the stream fn's work is queued on (`with stream:` selects it)
    stream = cp.cuda.get_current_stream()
    # on the current stream, before `start`
    _lead_kernel(cp)((1,), (1,), (cp.int64(int(LEAD_S * _clock_hz(cp))),))
    pairs = []
    out = None
    for i in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        out = fn(*args, **kwargs)
        end.record(stream)
        pairs.append((start, end))
        # the host's time only bounds how much is queued (at least 3 calls), like the host clock's
        # max_seconds
        if max_seconds is not None and i >= 2 and time.perf_counter() - started > max_seconds:
            break
    pairs[-1][1].synchronize()
    block(out)
    return tuple(cp.cuda.get_elapsed_time(a, b) / 1e3 for a, b in pairs)  # ms -> s


def confirm_faster(
    fast: Callable[..., Any],
    slow: Callable[..., Any],
    *args: Any,
    factor: float = 1.0,
    claim: str = "",
    rounds: int = 3,
    repeat: int = 7,
) -> float:
    """Check that ``fast(*args)`` beats ``slow(*args)`` by more than ``factor`` — the numerical
    check after a speed claim — on a machine that may be busy. All ``rounds`` rounds run (a fixed
    number, whatever they show), each timing both back to back; the claim is judged once, on each
    function's best run over all rounds (a load spike slows some runs down, never speeds one up).
    Returns slow's best / fast's best; raises AssertionError with every round's ratio when that is
    not above ``factor``."""
    slow_runs: list[float] = []
    fast_runs: list[float] = []
    ratios = []
    for _ in range(rounds):
        t_slow = measure(slow, *args, repeat=repeat)
        t_fast = measure(fast, *args, repeat=repeat)
        slow_runs += t_slow.times
        fast_runs += t_fast.times
        ratios.append(t_slow.best / t_fast.best if t_fast.best > 0 else math.inf)
    ratio = min(slow_runs) / min(fast_runs) if min(fast_runs) > 0 else math.inf
    if ratio > factor:
        return ratio
    shown = ", ".join(f"{r:.2f}×" for r in ratios)
    raise AssertionError(
        f"{claim or 'speed claim'}: expected more than {factor:g}×, measured {ratio:.2f}× (best "
        f"against best over {rounds} rounds; each round's: {shown})"
    )


class Stopwatch:
    """Timestamps inside ONE run, for showing *when* things happen (a call returning before its
    result is ready), not for measuring how long something takes — use :func:`measure` for that.

        sw = gc.timing.Stopwatch()
        y = f(x);              t_return = sw.elapsed()
        y.block_until_ready(); t_done = sw.elapsed()
    """

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        """Seconds since the stopwatch was created."""
        return time.perf_counter() - self.start
