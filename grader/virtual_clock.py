"""A virtual clock for grading timers: seconds that advance only when a stand-in workload says so.

Labs 1 and 6 grade a timing function (``time_call``, ``measure_times``) on stand-in workloads whose true
duration is known. Their work advances this clock instead of sleeping, and the check hands the clock to the
student's timer as its ``clock`` argument (as lab 4's ``time_call`` gets its command queue's clock): the timer reads
it for every measurement, as a GPU timer reads the device's clock (CUDA events) rather than the host's. The
stand-ins' work shows on this clock only — ``time.perf_counter`` sees microseconds of Python — so a timer that reads
another clock (the course's own ``gc.measure`` included, however it is loaded) measures the wrong thing. The verdict
is exact on any machine however busy, and a check takes milliseconds instead of the workloads' seconds.
"""

from __future__ import annotations

import math
from typing import Any

READ_STEP = 1e-6  # seconds the virtual clock moves on at each read by the timer


class VirtualClock:
    """``clock()``: the time in seconds, like ``time.perf_counter()``. It advances only by the stand-ins' work (and
    by ``READ_STEP`` at each read, as a real clock moves while it is read: a loop that waits for the clock to pass
    a mark ends). ``busy_until``: when the one in-order queue of the stand-ins' work drains; ``reads``: how often
    the timer read it; each workload in ``workloads`` is told of each read (``saw_read``)."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now, self.busy_until, self.reads = 1000.0, 0.0, 0
        self.tick = tick  # resolution in seconds (0: exact): a coarse clock shows whole ticks only
        self.workloads: list[Any] = []

    def __call__(self) -> float:
        self.reads += 1
        for w in self.workloads:
            w.saw_read()
        now, self.now = self.now, self.now + READ_STEP
        # a clock that ticks every `tick` seconds (time.time() on Windows: about 16 ms) reads the last tick
        return math.floor(now / self.tick) * self.tick if self.tick else now

    def __repr__(self) -> str:
        return f"<virtual clock [s], ticks of {self.tick * 1e3:g} ms>" if self.tick else "<virtual clock [s]>"
