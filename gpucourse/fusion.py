"""What fusion saves, measured: kernels dispatched, bytes moved, page faults taken — and a model of
the time ratio.

Unfused, a chain of k elementwise ops runs k kernels; each reads its operands from memory and writes
a fresh result. Fused, one kernel reads the inputs once and writes once. XLA's cost model counts the
bytes (``gc.xla.compiled(f, ...).bytes_accessed``), so the *byte ratio* is a prediction. The *time
ratio* differs because each call also pays

- a fixed **dispatch** cost (Python → JAX → the runtime → a kernel launch: microseconds per call,
  CPU or GPU), and
- on a CPU, the **page faults** of freshly allocated outputs: the first write to each 4 KiB page of
  new memory traps into the operating system. (A GPU's caching allocator hands out device memory it
  already holds: no faults.)

The model, per call::

    t ≈ calls · dispatch + bytes / bandwidth + page_faults · fault_cost

Every term is measured here (:func:`explain`): dispatch on a one-element call, page faults with
``getrusage`` (Linux and macOS), the cost of one fault by touching fresh memory, the bandwidth
calibrated on the fused call (where its dispatch and faults leave it time:
``FusionModel.calibrated``); the model then predicts the unfused time, which is measured too.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .timing import block, measure

PAGE = mmap.PAGESIZE  # bytes per base page: 4 KiB on x86-64, 4 or 64 KiB on arm64 Linux


def _minor_faults() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


THP = "/sys/kernel/mm/transparent_hugepage"


def _thp_read(path: str) -> str | None:
    """The [bracketed] choice of a THP sysfs file, or None where it does not exist."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    chosen = [w[1:-1] for w in text.split() if w.startswith("[") and w.endswith("]")]
    return chosen[0] if chosen else None


def thp_mode() -> str | None:
    """Linux's top-level transparent-huge-page mode: "always" (any large enough anonymous mapping
    may get huge pages), "madvise" (only regions that ask with madvise(MADV_HUGEPAGE), as NumPy does
    for arrays of 4 MiB and more), "never"; None where the file does not exist (not Linux, or THP
    compiled out)."""
    return _thp_read(f"{THP}/enabled")


def huge_page_kib(madvised: bool) -> int | None:
    """The largest huge page (KiB) an anonymous region gets on first touch — one that asked for huge
    pages with madvise(MADV_HUGEPAGE) (``madvised``) or not — 0 when none, None where THP is not
    readable. Reads the per-size controls of Linux >= 6.8 (hugepages-<size>kB/enabled: always,
    madvise, never, or inherit the top-level mode) where they exist, else the top-level mode for the
    PMD size (2 MiB on x86-64)."""
    top = thp_mode()
    if top is None:
        return None
    if thp_disabled_for_this_process():
        return 0
    enabled = lambda mode: mode == "always" or (mode == "madvise" and madvised)  # noqa: E731
    sizes = {}
    try:
        names = os.listdir(THP)
    except OSError:
        names = []
    for name in names:
        if name.startswith("hugepages-") and name.endswith("kB"):
            mode = _thp_read(f"{THP}/{name}/enabled")
            sizes[int(name[len("hugepages-"):-2])] = top if mode == "inherit" else mode
    if not sizes:
        try:
            with open(f"{THP}/hpage_pmd_size") as f:
                sizes = {int(f.read()) // 1024: top}
        except (OSError, ValueError):
            sizes = {2048: top}
    return max([kib for kib, mode in sizes.items() if enabled(mode)], default=0)


def thp_disabled_for_this_process() -> bool:
    """Whether prctl(PR_SET_THP_DISABLE) switched THP off for this process (``THP_enabled: 0`` in
    /proc/self/status), whatever the system settings say."""
    try:
        with open("/proc/self/status") as f:
            return any(line.split() == ["THP_enabled:", "0"] for line in f)
    except OSError:
        return False


def glibc_madvises_malloc() -> bool:
    """Whether glibc's malloc asks for huge pages itself (the glibc.malloc.hugetlb tunable set to 1
    or 2 in GLIBC_TUNABLES): then buffers that never ask, such as XLA:CPU's, are madvised too."""
    tunables = dict(
        kv.split("=", 1)
        for kv in os.environ.get("GLIBC_TUNABLES", "").replace(":", " ").split()
        if "=" in kv
    )
    return tunables.get("glibc.malloc.hugetlb", "0") in ("1", "2")


def fault_bound(nbytes: int, madvised: bool) -> tuple[int | None, float]:
    """For a fresh anonymous buffer of ``nbytes``, first touched: (the largest huge page, KiB, that
    the THP settings allow it, 0 if none, None where THP is not readable; the most page faults per
    base page it can then take — 1 without huge pages, else one per huge page plus base pages at its
    two unaligned ends). The settings say what is *allowed*: the kernel still falls back to base
    pages when it cannot find or charge a huge page (:func:`thp_fallbacks` counts that)."""
    kib = huge_page_kib(madvised)
    if not kib:
        return kib, 1.0
    huge = kib * 1024
    return kib, min(1.0, PAGE / huge + 2 * huge / nbytes)


def thp_fallbacks() -> int | None:
    """How often the kernel wanted a huge page on a fault and fell back to base pages (no free huge
    page, or a memory cgroup could not charge it): thp_fault_fallback + thp_fault_fallback_charge in
    /proc/vmstat."""
    try:
        with open("/proc/vmstat") as f:
            counts = dict(line.split() for line in f if line.startswith("thp_fault_fallback"))
    except OSError:
        return None
    return sum(int(v) for v in counts.values()) if counts else None


def numpy_asks_for_huge_pages() -> bool | None:
    """Whether NumPy madvises its large allocations (>= 4 MiB) for huge pages: on by default on
    Linux >= 4.6, off with NUMPY_MADVISE_HUGEPAGE=0; None where this NumPy does not say."""
    try:
        from numpy._core.multiarray import _get_madvise_hugepage
    except ImportError:
        try:
            from numpy.core.multiarray import _get_madvise_hugepage
        except ImportError:
            return None
    return bool(_get_madvise_hugepage())


def page_faults(fn: Callable[..., Any], *args: Any, repeat: int = 5) -> float | None:
    """Minor page faults per call of ``fn(*args)`` (after one warm-up call), or None where the OS
    doesn't count them."""
    block(fn(*args))
    start = _minor_faults()
    if start is None:
        return None
    for _ in range(repeat):
        block(fn(*args))
    return (_minor_faults() - start) / repeat


def fault_cost(pages: int = 4096, repeat: int = 3) -> float | None:
    """Seconds per minor page fault on this machine: map fresh anonymous memory (4 KiB pages:
    transparent huge pages refused with ``madvise``), write one byte per page, divide the time by
    the faults counted (best of ``repeat``; None where faults are not counted).

    Args:
        pages: 4 KiB pages mapped and touched per run.
        repeat: runs.
    Returns:
        seconds per minor page fault, or None where faults are not counted.
    """
    import mmap
    import time

    if _minor_faults() is None:
        return None
    best = math.inf
    for _ in range(repeat):
        buf = mmap.mmap(-1, pages * PAGE)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        view = np.frombuffer(buf, dtype=np.uint8)
        faults_before, t0 = _minor_faults(), time.perf_counter()
        view[::PAGE] = 1  # one write per page: one fault per page
        dt, faults = time.perf_counter() - t0, _minor_faults() - faults_before
        del view
        buf.close()
        if faults >= pages // 2:
            best = min(best, dt / faults)
    return best if best < math.inf else None


@dataclass(frozen=True)
class Side:
    """One way of running the chain: how many calls, bytes, page faults per call, and its measured
    time."""

    calls: int  # kernels dispatched per evaluation
    bytes: float  # bytes XLA's cost model says they access
    faults: float  # minor page faults per evaluation (0 where not counted)
    seconds: float  # measured, best of several runs


@dataclass(frozen=True)
class FusionModel:
    """``t ≈ calls·dispatch + bytes/bandwidth + faults·fault_cost`` for the unfused and the fused
    chain.

    Args:
        unfused, fused: each side's calls, bytes moved, page faults and measured seconds.
        dispatch: seconds per call.
        bandwidth: bytes per second.
        fault_cost: seconds per minor page fault.
        rounds: measured/model ratio of each round measured (this one included).
    """

    unfused: Side
    fused: Side
    dispatch: float  # seconds per call, measured on a one-element call
    bandwidth: float  # bytes/s, calibrated on the fused call (a floor where not ``calibrated``)
    fault_cost: float  # seconds per page fault (0 where not measurable)
    # measured/model of every round :func:`explain` measured (this one included)
    rounds: tuple[float, ...] = ()

    def terms(self, side: Side) -> dict[str, float]:
        """Seconds the model attributes to each term for one side."""
        return {"dispatch": side.calls * self.dispatch, "memory": side.bytes / self.bandwidth,
                "page faults": side.faults * self.fault_cost}

    def predicted(self, side: Side) -> float:
        return sum(self.terms(side).values())

    @property
    def byte_ratio(self) -> float:
        return self.unfused.bytes / self.fused.bytes

    @property
    def predicted_ratio(self) -> float:
        return self.predicted(self.unfused) / self.predicted(self.fused)

    @property
    def measured_ratio(self) -> float:
        return self.unfused.seconds / self.fused.seconds

    @property
    def calibrated(self) -> bool:
        """Whether the fused call left time for its bytes once its dispatch and page faults (at
        ``fault_cost`` each) are taken off: only then is ``bandwidth`` a calibration. Where they
        already take (nearly) all of it — the fault cost is measured once, apart from the timed runs
        and by touching pages from one thread, so on a shared machine it can exceed what the run's
        faults took — :func:`explain` sets the memory time to 5 % of the fused time, and
        ``bandwidth`` is that floor, not a measurement."""
        f = self.fused
        return f.seconds - f.calls * self.dispatch - f.faults * self.fault_cost > 0.05 * f.seconds

    @property
    def off(self) -> float:
        """measured ratio / model ratio: 1.0 where the model explains the measurement."""
        return self.measured_ratio / self.predicted_ratio

    def table(self) -> str:
        rows = [
            f"{'':9} {'calls':>5} {'MB moved':>9} {'faults':>8} {'dispatch':>10} {'memory':>10} "
            f"{'faults':>10} {'model':>10} {'measured':>10}"
        ]
        for name, side in (("unfused", self.unfused), ("fused", self.fused)):
            t = self.terms(side)
            rows.append(
                f"{name:9} {side.calls:>5} {side.bytes / 1e6:>9.1f} {side.faults:>8.0f} "
                + " ".join(f"{t[k] * 1e6:>8.0f}µs" for k in ("dispatch", "memory", "page faults"))
                + f" {self.predicted(side) * 1e6:>8.0f}µs {side.seconds * 1e6:>8.0f}µs"
            )
        # seconds of the fused call that are not memory traffic
        overhead = self.fused.calls * self.dispatch + self.fused.faults * self.fault_cost
        bandwidth = (
            f"bandwidth {self.bandwidth / 1e9:.1f} GB/s"
            if self.calibrated
            else (
                "bandwidth not calibrated: the fused call's dispatch and faults at the measured"
                " cost take"
                f" {overhead * 1e6:.0f}"
                f" µs of its {self.fused.seconds * 1e6:.0f} µs, so its memory term is a floor of 5"
                " % of it"
            )
        )
        rows.append(
            f"byte ratio {self.byte_ratio:.2f}×; model {self.predicted_ratio:.2f}×; measured "
            f"{self.measured_ratio:.2f}× (dispatch {self.dispatch * 1e6:.1f} µs/call, {bandwidth}, "
            f"{self.fault_cost * 1e6:.2f} µs/fault)"
        )
        if self.rounds:
            rows.append(
                f"measured/model of every round: {', '.join(f'{r:.2f}' for r in self.rounds)} "
                f"(this table: the median round, {self.off:.2f})"
            )
        return "\n".join(rows)


def dispatch_cost(fn: Callable[..., Any], *tiny_args: Any, repeat: int = 30) -> float:
    """Seconds per call of ``fn`` on inputs so small that the call is all overhead (best of
    ``repeat``).

    Args:
        fn: the call; *tiny_args: inputs of one or a few elements.
        repeat: runs.
    Returns:
        seconds per call (the best run).
    """
    return measure(fn, *tiny_args, repeat=repeat, max_seconds=2.0).best


def best_run(
    fn: Callable[..., Any], *args: Any, repeat: int = 9, warmup: int = 2
) -> tuple[float, float]:
    """(seconds, page faults) of the fastest of ``repeat`` synchronized runs: time and faults from
    the same run, so a run that faulted is charged its own faults (a load spike slows a run down,
    never speeds one up).

    Args:
        fn: the call to time; *args: its arguments.
        repeat: measured runs; warmup: discarded runs first.
    Returns:
        (seconds, page faults) of the fastest run.
    """
    import time

    for _ in range(warmup):
        block(fn(*args))
    best = (math.inf, 0.0)
    for _ in range(repeat):
        faults_before, t0 = _minor_faults(), time.perf_counter()
        block(fn(*args))
        dt, faults_after = time.perf_counter() - t0, _minor_faults()
        best = min(
            best, (dt, float(faults_after - faults_before) if faults_before is not None else 0.0)
        )
    return best


def _timed(fn: Callable[..., Any], args: tuple) -> tuple[float, float]:
    import time

    faults_before, t0 = _minor_faults(), time.perf_counter()
    block(fn(*args))
    dt, faults_after = time.perf_counter() - t0, _minor_faults()
    return dt, (float(faults_after - faults_before) if faults_before is not None else 0.0)


def _best_interleaved(a: Callable[..., Any], b: Callable[..., Any], args: tuple, repeat: int,
                      warmup: int = 2) -> tuple[tuple[float, float], tuple[float, float]]:
    """Like :func:`best_run` for two functions, their runs alternating (a, b, a, b, …) so that both
    see the same load on a shared machine: their ratio then drifts far less than that of two runs
    measured one after the other."""
    for _ in range(warmup):
        block(a(*args))
        block(b(*args))
    best_a = best_b = (math.inf, 0.0)
    for _ in range(repeat):
        best_a = min(best_a, _timed(a, args))
        best_b = min(best_b, _timed(b, args))
    return best_a, best_b


def explain(
    unfused: Callable[..., Any],
    fused: Callable[..., Any],
    args: tuple,
    tiny_args: tuple,
    calls: tuple[int, int],
    nbytes: tuple[float, float],
    repeat: int = 9,
    rounds: int = 3,
) -> FusionModel:
    """Measure both sides on ``args`` (fastest of ``repeat`` runs, with that run's page faults), the
    per-call dispatch cost (on ``tiny_args``) and the cost of one page fault; calibrate the
    bandwidth on the fused side; return the model. The two sides' runs alternate, so both see the
    same load. ``rounds`` independent rounds are measured and every one is kept (``model.rounds``:
    each round's measured/model); the model returned is the round with the median measured/model —
    never the round that happens to agree best, so a systematic gap between model and machine shows
    instead of being retried away."""
    cost = fault_cost() or 0.0
    models = []
    for _ in range(rounds):
        (t_u, f_u), (t_f, f_f) = _best_interleaved(unfused, fused, args, repeat)
        d = dispatch_cost(fused, *tiny_args)
        # what the fused call spent on bytes
        memory_time = max(t_f - calls[1] * d - f_f * cost, 0.05 * t_f)
        models.append(
            FusionModel(
                Side(calls[0], nbytes[0], f_u, t_u),
                Side(calls[1], nbytes[1], f_f, t_f),
                d,
                nbytes[1] / memory_time,
                cost,
            )
        )
    offs = tuple(m.off for m in models)
    median = sorted(models, key=lambda m: m.off)[(len(models) - 1) // 2]
    return dataclasses.replace(median, rounds=offs)


__all__ = [
    "PAGE",
    "FusionModel",
    "Side",
    "best_run",
    "dispatch_cost",
    "explain",
    "fault_cost",
    "fault_bound",
    "glibc_madvises_malloc",
    "huge_page_kib",
    "numpy_asks_for_huge_pages",
    "page_faults",
    "thp_disabled_for_this_process",
    "thp_fallbacks",
    "thp_mode",
]
