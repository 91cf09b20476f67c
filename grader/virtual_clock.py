"""A virtual clock for grading timers: seconds that advance only when a stand-in workload says so.

Labs 1, 4 and 6 grade a timing function (``time_call``, ``measure_times``) on stand-in workloads
whose true duration is known (:class:`Workload`, shared by labs 1 and 4; lab 6 has its own). Their
work advances this clock instead of sleeping, and the check hands the clock to the student's timer
as its ``clock`` argument: the timer reads it for every measurement, as a GPU timer reads the
device's clock (CUDA events) rather than the host's. The stand-ins' work shows on this clock only —
``time.perf_counter`` sees microseconds of Python — so a timer that reads another clock (the
course's own ``gc.measure`` included, however it is loaded) measures the wrong thing. The verdict is
exact on any machine however busy, and a check takes milliseconds instead of the workloads' seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

READ_STEP = 1e-6  # seconds the virtual clock moves on at each read by the timer


class VirtualClock:
    """``clock()``: the time in seconds, like ``time.perf_counter()``. It advances only by the
    stand-ins' work (and by ``READ_STEP`` at each read, as a real clock moves while it is read: a
    loop that waits for the clock to pass a mark ends). ``busy_until``: when the one in-order queue
    of the stand-ins' work drains; ``reads``: how often the timer read it; each workload in
    ``workloads`` is told of each read (``saw_read``)."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now, self.busy_until, self.reads = 1000.0, 0.0, 0
        self.tick = tick  # resolution in seconds (0: exact): a coarse clock shows whole ticks only
        self.workloads: list[Any] = []

    def __call__(self) -> float:
        self.reads += 1
        for w in self.workloads:
            w.saw_read()
        now, self.now = self.now, self.now + READ_STEP
        # a clock that ticks every `tick` seconds (time.time() on Windows: about 16 ms) reads the
        # last tick
        return math.floor(now / self.tick) * self.tick if self.tick else now

    def __repr__(self) -> str:
        return (
            f"<virtual clock [s], ticks of {self.tick * 1e3:g} ms>"
            if self.tick
            else "<virtual clock [s]>"
        )


# -- a stand-in workload on that clock (labs 1 and 4: time_call) -----------------------------------

DISPATCH = 10e-6  # seconds an asynchronous call takes to return (it only enqueues its work)


class Pending:
    """What an asynchronous call returns (like a JAX or CuPy array): the work is queued, not done.
    ``block_until_ready()`` waits until it is (on the workload's virtual clock);
    ``jax.block_until_ready`` and ``gc.block`` call it."""

    def __init__(self, workload: "Workload", ready_at: float):
        self._workload, self._ready_at, self.ready = workload, ready_at, False

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(out)`` and ``jax.device_get(out)`` copy the result to the host: they wait
        for it first."""
        self.block_until_ready()
        return np.asarray(self._ready_at, dtype=dtype)

    def block_until_ready(self) -> "Pending":
        w = self._workload
        w.clock.now = max(w.clock.now, self._ready_at)
        # one in-order queue (a CUDA stream, a JAX device): once this result exists, so does every
        # result queued before it — waiting for the last call of a batch waits for the whole batch.
        # Results finish in call order, so the ones not yet ready are the tail of the list from
        # w._unready on
        while w._unready < len(w._open) and w._open[w._unready]._ready_at <= self._ready_at:
            w._open[w._unready].ready = True
            w._unready += 1
            w._blocked += 1
        return self

    def __repr__(self) -> str:
        return "<Pending result: call block_until_ready() before using it>"


@dataclass(eq=False)
class Workload:
    """A call whose true duration is known, for grading a timing function on any machine, however
    busy: ``work_s`` of work per call, on a :class:`grader.virtual_clock.VirtualClock` (``clock``:
    it advances by the work, not by the host's time, so a busy machine changes nothing; the check
    passes it to the student's timer as its ``clock`` argument), an extra ``first_s`` on the first
    call (compilation, which blocks the caller), asynchronous dispatch (the call returns a
    :class:`Pending` at once and the work runs in order in the background, as on a GPU stream), and
    load ``spikes``: the calls (counted from 0) that take ``spike_factor`` times longer. Nothing
    makes a call faster than its work: repeated identical calls are only ever slowed down (by other
    programs), so the minimum of waited-for runs is the call's time, as the median is. It counts its
    calls and how many results were waited for, and notes ``leftover``: whether the timer's first
    clock read after the first call came while that call's work was still queued (a warm-up not
    waited for: its work lands in the first timed run; labs 4 and 6 reject it too)."""

    work_s: float
    first_s: float = 0.0
    asynchronous: bool = False
    spikes: tuple[int, ...] = ()
    spike_factor: float = 20.0
    # the clock's resolution (0: exact): a call shorter than a tick times as 0 or one tick
    tick_s: float = 0.0

    # a dataclass: a hidden case's workload travels to a sandbox as its fields
    # (grader/pipeline/wire.py), and _TimingProblem.call resets it (calls, queue) before the
    # student's function gets it
    def __post_init__(self) -> None:
        self.spikes = tuple(self.spikes)
        self.reset()

    def reset(self) -> None:
        """No call made, a fresh clock (a case that came as data was rebuilt from its fields without
        __init__)."""
        self.calls, self._blocked, self._busy_until, self._open, self._unready = 0, 0, 0.0, [], 0
        self._first: Pending | None = None
        self._reads_at_first, self.leftover = 0, False
        self.clock = VirtualClock(self.tick_s)
        self.clock.workloads = [self]  # told of each of the timer's reads (saw_read)

    def saw_read(self) -> None:
        """The clock's callback on each read by the timer: the first read after the first call
        decides ``leftover``."""
        if self._first is not None and self.clock.reads == self._reads_at_first + 1:
            self.leftover = self.clock.now < self._first._ready_at

    def _work(self) -> float:
        return self.work_s * (self.spike_factor if self.calls in self.spikes else 1.0)

    def __call__(self, *args: Any) -> Any:
        d, compile_s = self._work(), (self.first_s if self.calls == 0 else 0.0)
        self.calls += 1
        if self.calls == 1:
            # the timer's reads before the first call (0: not timed)
            self._reads_at_first = self.clock.reads
        # tracing and compiling block the caller (JAX, CuPy): only the work is queued
        self.clock.now += compile_s
        if not self.asynchronous:
            self.clock.now += d
            return float(d + compile_s)
        self.clock.now += DISPATCH
        # queued work runs in order, one call after another
        self._busy_until = max(self.clock.now, self._busy_until) + d
        result = Pending(self, self._busy_until)
        self._open.append(result)
        if self.calls == 1:
            self._first = result
        return result

    @property
    def first_call_timed(self) -> bool:
        """Whether the timer read its clock before the first call (the one that compiles) and after
        it."""
        return (
            self.calls > 0 and self._reads_at_first > 0 and self.clock.reads > self._reads_at_first
        )

    def unwaited(self) -> int:
        """Asynchronous results never waited for."""
        return len(self._open) - self._unready

    def __repr__(self) -> str:
        parts = [
            f"{self.work_s * 1e3:g} ms of {'asynchronous' if self.asynchronous else 'synchronous'}"
            " work"
        ]
        if self.tick_s:
            parts.append(f"a clock that ticks every {self.tick_s * 1e3:g} ms")
        if self.first_s:
            parts.append(f"first call +{self.first_s * 1e3:.0f} ms")
        if self.spikes:
            parts.append(
                f"calls {', '.join(map(str, self.spikes))} slowed {self.spike_factor:g}× by load"
            )
        return "<workload: " + ", ".join(parts) + ">"
