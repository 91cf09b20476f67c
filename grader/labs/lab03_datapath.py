"""Lab 3 — CPU SIMD vs GPU SIMT, and how data reaches the GPU: the problems and their references.

Conventions the specs share (the course notebook derives them):
- a processor is a dict {"flops": FLOP/s, "bandwidth": bytes/s of its own memory}; work on it takes the
  roofline time max(flops / proc["flops"], bytes / proc["bandwidth"]) where bytes = bytes read + bytes written;
- a link is a dict {"bandwidth": bytes/s, "latency": seconds per copy}; a copy of b bytes takes
  latency + b / bandwidth;
- offloading = copy the inputs to the GPU, process there, copy the outputs back (seed 002's program).

This module is the lab's *exercise side* (specs, visible cases, comparisons, checks: what students install); the
references and hidden-case generators are its answer side, grader/answers/lab03_datapath.py (the instructor's
only; grader/DESIGN.md). The visible cases' expected values ship as data: lab03_datapath.expected.json.
chunked_map's cases are plain data too (x, a ``Device`` of some budget, a ``DeviceFn`` by name, copies): every call
gets a fresh DeviceMemory, and its check is observed here and judged there (``DeviceProblem``: the result and the
device's counters come back as data).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gpucourse import devmem

from ..checks import CheckFailure, expect_array_close, expect_choice, expect_close, expect_int, expect_tuple
from ..problem import Case, ObservedProblem, Problem

CPUS = [{"flops": 0.6e12, "bandwidth": 60e9}, {"flops": 3.0e12, "bandwidth": 400e9}, {"flops": 1.5e12, "bandwidth": 90e9}]
GPUS = [{"flops": 67e12, "bandwidth": 3.35e12}, {"flops": 989.4e12, "bandwidth": 3.35e12},
        {"flops": 19.5e12, "bandwidth": 2.039e12}, {"flops": 989.4e12, "bandwidth": 4.8e12}]
# PCIe 4.0 / 5.0 ×16 after their 128b/130b encoding (course §3.6), and NVLink 4
LINKS = [{"bandwidth": 31.5e9, "latency": 10e-6}, {"bandwidth": 63.0e9, "latency": 8e-6},
         {"bandwidth": 450e9, "latency": 2e-6}]


# -- Exercise 1: offload or not? --------------------------------------------------------------------------------


def _compare_decision(what: str, got: Any, expected: tuple, case: Case) -> None:
    expect_tuple(what, got, "cpu_seconds, gpu_seconds, 'cpu' or 'gpu'")
    expect_close(f"{what} → cpu_seconds", got[0], expected[0], rtol=1e-9,
                 hint="the CPU's roofline time: max(flops / flops-per-second, bytes / bandwidth)")
    expect_close(f"{what} → gpu_seconds", got[1], expected[1], rtol=1e-9,
                 hint="copy in (latency + bytes/bandwidth) + the GPU's roofline time + copy out")
    expect_choice(f"{what} → decision", got[2], expected[2], ("cpu", "gpu"),
                  "offload only when the GPU path, copies included, is strictly faster")


# Ties, exactly representable: every rate a power of two and every time a sum of a few powers of two, so the GPU path
# (copies included) and the CPU take *exactly* the same time in floating point, whatever order a correct answer adds
# them in. "Strictly faster" then decides: a tie stays on the CPU (exercise 1), and the break-even size is one past
# 2·latency / (a − b) when that is an integer (exercise 2).
TIE_CPU, TIE_GPU = {"flops": 2.0**40, "bandwidth": 2.0**35}, {"flops": 2.0**50, "bandwidth": 2.0**40}
TIE_LINK = {"bandwidth": 2.0**34, "latency": 2.0**-17}
# 2 MiB moved: the GPU path is 2·(2^-17 + 2^-14) + 2^-19 = 73·2^-19 s (memory-bound on the GPU); 73·2^21 FLOPs make
# the CPU compute-bound at exactly 73·2^-19 s too
DECISION_TIE = Case((73.0 * 2**21, 2.0**20, 2.0**20, TIE_CPU, TIE_GPU, TIE_LINK))
DECISION_TIE_NO_OUTPUT = Case((73.0 * 2**21, 2.0**21, 0.0, TIE_CPU, TIE_GPU,  # 2^-17 + 2^-13 + 2^-19 + 2^-17: the same
                               TIE_LINK))
# per element: CPU a = 8 B / 2^33 B/s = 2^-30 s, GPU b = 8 / 2^35 + 8 / 2^40 = 2^-32 + 2^-37 s, a − b = 95·2^-37 s;
# latency 95·2^-23 s (≈ 11 µs) puts the tie at n = 2·latency / (a − b) = 2^15 exactly: the answer is 2^15 + 1
BREAK_EVEN_TIE = Case((1.0, 8.0, 0.0, {"flops": 2.0**40, "bandwidth": 2.0**33}, TIE_GPU,
                       {"bandwidth": 2.0**35, "latency": 95.0 * 2**-23}))


DECISION = Problem(
    name="offload_decision",
    forbid=("gpucourse.datapath.offload_times",),
    spec="""
        offload_decision(flops, bytes_in, bytes_out, cpu, gpu, link) -> (cpu_seconds, gpu_seconds, choice)
        A computation does `flops` FLOPs, reads `bytes_in` bytes and writes `bytes_out` bytes.
        - On the CPU it takes the roofline time with the CPU's dict: max(flops / cpu["flops"],
          (bytes_in + bytes_out) / cpu["bandwidth"]).
        - Offloaded, it is seed 002's program: copy bytes_in to the GPU over `link`, run (roofline time with the
          GPU's dict, same bytes), copy bytes_out back. Each copy costs link["latency"] + bytes / link["bandwidth"],
          even a copy of 0 bytes.
        choice is "gpu" when gpu_seconds < cpu_seconds, else "cpu".
    """,
    visible=[Case((2e9, 4e6, 4e6, CPUS[0], GPUS[0], LINKS[1])),  # 500 FLOP/byte: offloading pays
             Case((1e6, 8e6, 4e6, CPUS[0], GPUS[0], LINKS[1])),  # vector add: the copies alone cost more
             DECISION_TIE],  # exactly equal times: not strictly faster, so "cpu"
    compare=_compare_decision,
)

# -- Exercise 2: the break-even size -----------------------------------------------------------------------------


def _compare_break_even(what: str, got: Any, expected: int | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(f"{what}: expected None (offloading never pays: per element, the copies plus the GPU "
                               f"work are slower than the CPU), got {got!r}")
        return
    expect_int(what, got, expected, "cost(n) is linear on both sides: CPU n·a, GPU 2·latency + n·b; solve n·a > 2·latency + n·b")


BREAK_EVEN = Problem(
    name="break_even_elements",
    forbid=("gpucourse.datapath.break_even", "gpucourse.datapath.offload_times"),
    spec="""
        break_even_elements(flops_per_element, in_per_element, out_per_element, cpu, gpu, link) -> int or None
        A workload of n elements does n·flops_per_element FLOPs, reads n·in_per_element bytes and writes
        n·out_per_element bytes. Return the smallest n >= 1 for which offload_decision(...) chooses "gpu"
        (GPU time, both copies included, strictly below CPU time), or None if no n ever does.
        Ties: at an n where both times are exactly equal the CPU is chosen, so the answer is the next n; when one
        element costs exactly as much on the GPU path (its copies included) as on the CPU, offloading never pays
        (the two copy latencies are never recovered): None.
        Answers can exceed 10^8 (a small saving per element pays back the copies late): solve for n; a loop
        over n = 1, 2, 3, ... runs out of the check's time limit.
        Every test case keeps its times either exactly equal (exactly representable: floating point computes the
        tie exactly, in any order) or more than a relative 1e-12 apart at the answer and the n before it, so
        rounding never decides.
    """,
    visible=[Case((1000.0, 8, 4, CPUS[0], GPUS[0], LINKS[1])), Case((1.0, 8, 4, CPUS[0], GPUS[0], LINKS[1])),
             BREAK_EVEN_TIE],  # equal at n = 2^15 exactly: the answer is the next n
    compare=_compare_break_even,
)

# -- Exercise 3: bigger than device memory ------------------------------------------------------------------------

# the device functions' bodies, by name: a case names its function (DeviceFn), so that it travels as data
_BODIES: dict[str, Callable[[Any], Any]] = {
    "scale_shift": lambda a: a * 3.0 + 1.0,
    "hypot1": lambda a: np.sqrt(a * a + 2.0),
    "relu": lambda a: np.maximum(a, 0.0),
}


@dataclass(frozen=True)
class DeviceFn:
    """An elementwise "kernel" whose working set is at most `copies` arrays the size of its input (input included).
    It works on DeviceArrays only: a host array is refused, so the result must come from the device (the
    reference calls the bodies directly). Plain data (its name picks its body in ``_BODIES``): a case holding one
    travels to a sandbox as data (grader/pipeline/wire.py)."""

    name: str
    copies: int

    def __call__(self, a: Any) -> Any:
        if not isinstance(a, devmem.DeviceArray):
            raise TypeError(f"{self.name} runs on the device: pass it a DeviceArray (d = mem.to_device(chunk)), "
                            f"not a {type(a).__module__}.{type(a).__name__}")
        return _BODIES[self.name](a)

    def __repr__(self) -> str:
        return self.name


KERNELS = [DeviceFn("scale_shift", 3), DeviceFn("hypot1", 3), DeviceFn("relu", 2)]


@dataclass(frozen=True)
class Device:
    """A case's device: its budget in bytes, as plain data. Every call of the student's function gets a fresh
    ``gpucourse.devmem.DeviceMemory`` built from it (empty, counters at zero), in the kernel and in the grader's
    worker alike: re-running the visible test cell starts from a fresh device. Messages show it as the
    DeviceMemory the function receives."""

    budget: int
    name: str = "lab GPU"

    def memory(self) -> devmem.DeviceMemory:
        return devmem.DeviceMemory(self.budget, name=self.name, xp=np)

    def __repr__(self) -> str:
        return f"DeviceMemory(budget={self.budget:,} bytes)"


def min_chunks(n: int, itemsize: int, budget: int, copies: int) -> int:
    """The fewest chunks the spec allows: chunks of budget // (copies · itemsize) elements (the spec's own formula,
    so it stays here, where the visible check judges without the answer side)."""
    return -(-n // (budget // (copies * itemsize)))


def _observation(got: Any, mem: devmem.DeviceMemory) -> dict[str, Any]:
    """What the judge reads after a call, as plain data: what came back (the array if it is a host array) and the
    device's counters."""
    host = isinstance(got, np.ndarray)
    return {"returned": type(got).__name__, "device_array": isinstance(got, devmem.DeviceArray),
            "shape": tuple(int(d) for d in got.shape) if host else None, "dtype": str(got.dtype) if host else None,
            "result": got if host else None, "h2d_bytes": mem.h2d_bytes, "d2h_bytes": mem.d2h_bytes,
            "h2d_copies": mem.h2d_copies, "peak": mem.peak}


def _compare_chunked(what: str, seen: Any, expected: np.ndarray, case: Case) -> None:
    """Judge an observation (``_observation``'s, live or decoded from the worker's data) against fn(x)."""
    x, device, fn, copies = case.args
    if not isinstance(seen, dict) or "h2d_copies" not in seen:
        raise CheckFailure(f"{what}: no observation of the call (its result and the device's counters) came back")
    if seen["device_array"]:
        raise CheckFailure(f"{what}: expected a host (NumPy) array, got a DeviceArray: copy results back with mem.to_host")
    if seen["shape"] is None:
        raise CheckFailure(f"{what}: expected a NumPy array, got {seen['returned']}")
    shape, dtype = tuple(seen["shape"]), seen["dtype"]
    if shape != expected.shape or dtype != str(expected.dtype):
        raise CheckFailure(f"{what}: expected shape {expected.shape} and dtype {expected.dtype}, "
                           f"got shape {shape} and dtype {dtype}")
    got = seen["result"]
    if not isinstance(got, np.ndarray):
        raise CheckFailure(f"{what}: the array it returned did not come back as data")
    if not np.array_equal(got, expected):
        bad = np.flatnonzero(got != expected)
        raise CheckFailure(f"{what}: {bad.size} of {got.size} elements differ from fn(x); first at index {bad[0]}: "
                           f"expected {expected[bad[0]]!r}, got {got[bad[0]]!r}")
    if seen["h2d_bytes"] != x.nbytes:
        raise CheckFailure(f"{what}: every input byte must cross to the device exactly once: expected "
                           f"{x.nbytes:,} bytes host→device, got {seen['h2d_bytes']:,}")
    if seen["d2h_bytes"] != expected.nbytes:
        raise CheckFailure(f"{what}: expected {expected.nbytes:,} bytes device→host (the result, once), "
                           f"got {seen['d2h_bytes']:,}")
    need = min_chunks(x.size, x.itemsize, device.budget, copies)
    expect_int(f"{what} → number of chunks (host→device copies)", seen["h2d_copies"], need,
               "use the largest chunk that fits: budget // (copies · itemsize) elements")
    if seen["peak"] > device.budget:  # the tracker raises before this can happen; kept as the stated contract
        raise CheckFailure(f"{what}: peak device memory {seen['peak']:,} bytes exceeds the budget {device.budget:,}")


def _chunk_case(rng: np.random.Generator, n: int, dtype: str, ratio: float, fn: DeviceFn) -> Case:
    x = rng.standard_normal(n).astype(dtype)
    budget = max(fn.copies * x.itemsize, int(x.nbytes * ratio) + int(rng.integers(0, 97)))
    return Case((x, Device(budget), fn, fn.copies))


def _chunked_visible() -> list[Case]:
    rng = np.random.default_rng(3)
    return [_chunk_case(rng, 10_000, "float32", 0.25, KERNELS[0]), _chunk_case(rng, 1_000, "float64", 4.0, KERNELS[2])]


@dataclass
class DeviceProblem(ObservedProblem):
    """A Problem whose answer works on a device: each call gets a fresh DeviceMemory (``Device.memory``), and the
    check reads the device's counters after it. Observed here, judged there (grader/DESIGN.md): ``observe`` calls
    the student's function and returns its result and the counters as plain data; ``judge`` (``compare`` on that
    data) decides, in the student's kernel for visible cases and in the grader for every case."""

    def observe(self, fn: Callable[..., Any], case: Case, limit: float | None = None) -> dict[str, Any]:
        """Call ``fn`` on ``case`` (answers locked, time-limited) with a copy of x and a fresh DeviceMemory; the
        observation as plain data. Raises what ``fn`` raises."""
        x, device, dfn, copies = case.args
        mem = device.memory()
        got = self.call(fn, Case((np.array(x, copy=True), mem, dfn, copies)), limit)
        return _observation(got, mem)

    def judge(self, seen: Any, expected: Any, case: Case) -> None:
        self.compare(self.what(case), seen, expected, case)


CHUNKED = DeviceProblem(
    name="chunked_map",
    spec="""
        chunked_map(x, mem, fn, copies) -> fn(x) as a NumPy array, computed on a device too small for x.
        x: a 1-D host (NumPy) array. mem: a gpucourse.devmem.DeviceMemory with mem.budget bytes.
        fn: an elementwise device function; while it runs on a chunk it holds at most `copies` arrays the size of
        that chunk (the chunk itself included).
        Process x chunk by chunk: mem.to_device(chunk) → fn(d) → mem.to_host(r), writing each piece of the result
        into a host array. Rules the checker enforces:
        - never exceed the budget (the tracker raises OutOfMemoryError, as a GPU would);
        - use as few chunks as possible: chunks of budget // (copies · x.itemsize) elements (the last one shorter);
        - every input byte goes to the device once, every result byte comes back once;
        - the result must be exactly fn(x).
        Memory returns to the device only when the last reference to an array goes (as in CuPy): `del` your
        device arrays before you copy the next chunk.
    """,
    visible=_chunked_visible(),
    compare=_compare_chunked,
)

# -- Exercise 4: SIMT lane utilization ------------------------------------------------------------------------------

WARP = 32


def _compare_warp(what: str, got: Any, expected: tuple[int, float], case: Case) -> None:
    expect_tuple(what, got, "issued_instructions, utilization")
    expect_int(f"{what} → issued instructions", got[0], expected[0],
               "per warp: the if-path is issued if any lane takes it, the else-path if any lane takes it")
    expect_close(f"{what} → utilization", got[1], expected[1], rtol=1e-9,
                 hint="useful lane-instructions / (32 · issued); lanes past the last thread are never useful")


WARP_EXEC = Problem(
    name="warp_execution",
    forbid=("gpucourse.simd_simt.warp_masks",),
    spec="""
        warp_execution(cond, cost_if, cost_else) -> (issued_instructions, utilization)
        cond: a 1-D NumPy array of bool, one entry per thread. Thread t runs
            if cond[t]: <cost_if instructions>  else: <cost_else instructions>.
        Threads 0..31 form warp 0, 32..63 warp 1, and so on; the last warp may be partial (len(cond) need not be
        a multiple of 32: its missing lanes exist but are never active). A warp issues the if-path (cost_if
        instructions) if at least one of its threads takes it and the else-path if at least one takes that;
        lanes on the other path are masked off meanwhile.
        issued_instructions: total over all warps. utilization: useful lane-instructions (each thread's own
        path length, summed over threads) divided by 32 × issued_instructions.
    """,
    visible=[Case((np.arange(64) % 2 == 0, 10, 10)), Case((np.arange(64) < 32, 10, 10)), Case((np.arange(40) < 40, 4, 9))],
    compare=_compare_warp,
)

# -- Exercise 5: vectorize a loop -----------------------------------------------------------------------------------

def huber_loop(pred: np.ndarray, target: np.ndarray, delta: float) -> np.ndarray:
    """The loop to vectorize: the Huber loss of each element (quadratic near 0, linear far away)."""
    out = np.empty(pred.shape, dtype=np.result_type(pred, target))
    for i in range(len(pred)):
        r = pred[i] - target[i]
        if abs(r) <= delta:
            out[i] = 0.5 * r * r
        else:
            out[i] = delta * (abs(r) - 0.5 * delta)
    return out


class _TooManySteps(Exception):
    pass


def python_steps(fn: Callable[..., Any], *args: Any, limit: int) -> int:
    """Python lines executed and Python functions entered while ``fn(*args)`` runs; stops past ``limit``."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        if count > limit:
            raise _TooManySteps
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn(*args)
    except _TooManySteps:
        pass
    finally:
        sys.settrace(old)
    return count


def _vectorized(fn: Callable[..., Any], hidden: bool) -> str:
    """A vectorized function's Python-level work does not grow with n: trace it on 40,000 elements."""
    from gpucourse.timing import measure

    rng = np.random.default_rng(11 if hidden else 10)
    n, limit = 40_000, 2_000
    dtype = "float64" if hidden else "float32"
    pred, target = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    fn(pred[:64], target[:64], 0.7)  # warm-up untraced: a numba @njit answer compiles here
    steps = python_steps(fn, pred, target, 0.7, limit=limit)
    if steps > limit:
        raise CheckFailure(f"huber_vectorized on {n:,} elements executed more than {limit:,} Python steps (lines and "
                           "calls): it still loops over elements in Python. Use whole-array operations (np.where, "
                           "np.abs, arithmetic on arrays)")
    t_vec = measure(fn, pred, target, 0.7, repeat=5, warmup=1, max_seconds=1.0)
    t_loop = measure(huber_loop, pred[:4000], target[:4000], 0.7, repeat=3, warmup=0, max_seconds=1.0)
    speedup = (t_loop.median * n / 4000) / t_vec.median
    return f"\n  {steps} Python steps for {n:,} elements; about {speedup:,.0f}× faster than the loop on this machine"


HUBER = Problem(
    name="huber_vectorized",
    spec="""
        huber_vectorized(pred, target, delta) -> the same array as huber_loop(pred, target, delta), without a
        Python loop over elements.
        huber_loop computes, for each i, r = pred[i] - target[i] and
            0.5 * r * r                     if |r| <= delta
            delta * (|r| - 0.5 * delta)     otherwise.
        The checker traces your function on 40,000 elements: a vectorized answer runs a few dozen Python lines
        whatever n is; a loop runs n of them.
    """,
    visible=[Case((np.array([0.0, 0.5, -0.5, 3.0, -3.0]), np.zeros(5), 1.0)),
             Case((np.linspace(-4, 4, 101, dtype=np.float32), np.full(101, 0.5, dtype=np.float32), 1.5))],
    compare=lambda what, got, expected, case: expect_array_close(what, got, expected,
                                                                 rtol=1e-5 if case.args[0].dtype == np.float32 else 1e-9),
    after=_vectorized,
)

# -- Exercise 6: diagnose a transfer from measurements ---------------------------------------------------------------
# The measurements carry multiplicative noise (each time is off by ~2 % of itself), as timings do. An ordinary
# least-squares line then lets the largest copies — whose absolute errors are milliseconds — drag the intercept
# (a latency of microseconds) anywhere: over 20,000 random series drawn like the hidden cases it leaves the band
# below in 38 % of them (its latency is off by more than 86 % one time in 10), and 4 of the 8 hidden series. The
# answer is therefore graded against the parameters the series was drawn from, within a band that a fit of the
# *relative* errors (weights 1/t, or a fit in log space) meets on every one of those series (worst: 4.5 % on the
# latency, 4.9 % on the bandwidth). tests/test_lab03_datapath.py re-measures both on 5,000 series.

LATENCY_RTOL, BANDWIDTH_RTOL = 0.15, 0.08
NOISE = 0.02  # relative standard deviation of each measured time


@dataclass(frozen=True)
class TransferCase(Case):
    truth: tuple[float, float] = (0.0, 0.0)  # (latency [s], bandwidth [B/s]) the measurements were drawn from


def _compare_fit(what: str, got: Any, expected: tuple[float, float], case: Case) -> None:
    latency, bandwidth = case.truth
    got = expect_tuple(what, got, "latency_seconds, bandwidth_bytes_per_second")
    expect_close(f"{what} → latency [s], within {LATENCY_RTOL:.0%} of the series' true latency", got[0], latency,
                 rtol=LATENCY_RTOL,
                 hint="each time carries noise proportional to itself: an ordinary least-squares line lets the "
                      "big copies' millisecond errors pull the intercept; fit the relative errors (weights 1/t, "
                      "e.g. np.polyfit(..., w=1/seconds)) or fit in log space")
    expect_close(f"{what} → bandwidth [B/s], within {BANDWIDTH_RTOL:.0%} of the series' true bandwidth", got[1],
                 bandwidth, rtol=BANDWIDTH_RTOL,
                 hint="bandwidth is 1 / slope of the fitted line, not size / time of one point")


def transfer_series(rng: np.random.Generator, latency: float, bandwidth: float, k: tuple[int, int]) -> TransferCase:
    """Copies of 2**k[0] … 2**(k[1]-1) bytes timed with multiplicative noise (NOISE relative)."""
    sizes = 2.0 ** np.arange(*k)
    seconds = (latency + sizes / bandwidth) * (1 + NOISE * rng.standard_normal(sizes.size))
    return TransferCase((sizes, seconds), truth=(latency, bandwidth))


FIT = Problem(
    name="fit_transfer",
    spec=f"""
        fit_transfer(sizes, seconds) -> (latency, bandwidth)
        Measured host→device copies: sizes[i] bytes took seconds[i] s. The model is
            seconds = latency + size / bandwidth,
        and each measured time is off by noise *proportional to itself* (about {NOISE:.0%} of it), as timings are.
        Estimate latency [s] and bandwidth [bytes/s] from all the points. Graded against the latency and
        bandwidth the measurements were generated from: within {LATENCY_RTOL:.0%} for the latency and
        {BANDWIDTH_RTOL:.0%} for the bandwidth. (Small copies are all latency, large ones all bandwidth; think about
        which points an ordinary least-squares line listens to when the errors grow with the time.)
    """,
    visible=[TransferCase((np.array([1e3, 1e6, 1e9]), np.array([10e-6 + 1e3 / 25e9, 10e-6 + 1e6 / 25e9,
                                                                  10e-6 + 1e9 / 25e9])), truth=(10e-6, 25e9)),
             transfer_series(np.random.default_rng(6), 8e-6, 50e9, (10, 28))],
    compare=_compare_fit,
)

problems = {p.name: p for p in (DECISION, BREAK_EVEN, CHUNKED, WARP_EXEC, HUBER, FIT)}
