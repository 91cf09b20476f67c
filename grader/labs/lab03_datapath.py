"""Lab 3 — CPU SIMD vs GPU SIMT, and how data reaches the GPU: the problems and their references.

Conventions the specs share (the course notebook derives them):
- a processor is a dict {"flops": FLOP/s, "bandwidth": bytes/s of its own memory}; work on it takes
  the roofline time max(flops / proc["flops"], bytes / proc["bandwidth"]) where bytes = bytes read +
  bytes written;
- a link is a dict {"bandwidth": bytes/s, "latency": seconds per copy}; a copy of b bytes takes
  latency + b / bandwidth;
- offloading = copy the inputs to the GPU, process there, copy the outputs back (article 002's
  program).

This module is the lab's *exercise side* (specs, visible cases, comparisons, checks: what students
install); the references and hidden-case generators are its answer side,
grader/answers/lab03_datapath.py (the instructor's only; grader/DESIGN.md). The visible cases'
expected values ship as data: lab03_datapath.expected.json. chunked_map's cases are plain data too
(x, a ``Device`` of some budget, a ``DeviceFn`` by name, copies): every call gets a fresh
DeviceMemory, and its check is observed here and judged there (``DeviceProblem``: the result and the
device's counters come back as data).

No installed code answers an exercise (issue 20): exercises 1 and 2 *use* the course's roofline and
transfer model (gpucourse.datapath) for what it does not compute (which steps share a pair of
copies; the link bandwidth at which offloading starts to pay). Exercise 4 asks for the
thread-to-data layout with the fewest issued instructions: the course's SIMT executor
(gpucourse.simt) and this module's ``issued_by`` count what a layout issues, they do not choose one.
Exercise 5's loss is Tukey's biweight with a cutoff per side, and its gradient: no installed library
computes it (SciPy's robust losses — Huber, pseudo-Huber, soft-L1, Cauchy, arctan — never become
exactly flat beyond a cutoff), and exercise 6's
runs are partly interrupted, so that one weighted fit of every number is not the answer; its size
question uses the fitted model backwards.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gpucourse import devmem

from ..checks import CheckFailure, expect_array_close, expect_close, expect_int, expect_tuple, show
from ..problem import Case, ObservedProblem, Problem

CPUS = [
    {"flops": 0.6e12, "bandwidth": 60e9},
    {"flops": 3.0e12, "bandwidth": 400e9},
    {"flops": 1.5e12, "bandwidth": 90e9},
]
GPUS = [{"flops": 67e12, "bandwidth": 3.35e12}, {"flops": 989.4e12, "bandwidth": 3.35e12},
        {"flops": 19.5e12, "bandwidth": 2.039e12}, {"flops": 989.4e12, "bandwidth": 4.8e12}]
# PCIe 4.0 / 5.0 ×16 after their 128b/130b encoding (course §3.6), and NVLink-C2C (Grace Hopper
# GH200, 450 GB/s each way, course §3.9): an H100 card reaches host memory over PCIe only
LINKS = [{"bandwidth": 31.5e9, "latency": 10e-6}, {"bandwidth": 63.0e9, "latency": 8e-6},
         {"bandwidth": 450e9, "latency": 2e-6}]


# -- where does each step run? ---------------------------------------------------------------------


def _compare_placement(what: str, got: Any, expected: tuple, case: Case) -> None:
    got = expect_tuple(what, got, "seconds, placement")
    places = got[1]
    if not isinstance(places, (list, tuple)) or len(places) != len(case.args[0]) or any(
            p not in ("cpu", "gpu") for p in places):
        raise CheckFailure(
            f"{what} → placement: expected a list of {len(case.args[0])} entries, each 'cpu' or"
            f" 'gpu', got {places!r}"
        )
    off_limits = [
        i for i, (p, s) in enumerate(zip(places, case.args[0])) if p == "gpu" and not s["gpu_ok"]
    ]
    if off_limits:
        raise CheckFailure(
            f"{what} → placement: step {off_limits[0]} needs the CPU (gpu_ok is False), "
            f"got {list(places)!r}"
        )
    if list(places) != list(expected[1]):
        raise CheckFailure(
            f"{what} → placement: expected {list(expected[1])!r}, got {list(places)!r}: a run of "
            "GPU steps pays one copy in and one copy out, not one pair per step; compare every "
            "placement the gpu_ok flags allow"
        )
    expect_close(
        f"{what} → seconds",
        got[0],
        expected[0],
        rtol=1e-9,
        hint=(
            "the best placement's total: each step's roofline time where it runs, plus one copy"
            " (latency + nbytes / bandwidth) every time the array changes sides, the way back at"
            " the end included"
        ),
    )


# the source article's "complicated case": 2 TFLOP steps on either side of a step that needs the CPU
# (64 MiB array)
_PIPE = 2.0**26
PIPELINE_ARTICLE = Case(
    (
        [
            {"flops": 2e12, "bytes": 2 * _PIPE, "gpu_ok": True},
            {"flops": _PIPE, "bytes": 2 * _PIPE, "gpu_ok": False},
            {"flops": 2e12, "bytes": 2 * _PIPE, "gpu_ok": True},
        ],
        _PIPE,
        CPUS[0],
        GPUS[0],
        LINKS[1],
    )
)
# three memory-bound steps over PCIe 4: offloaded alone each loses (two 2 ms copies for a 2.2 ms
# step), together they win (the same two copies for 6.7 ms of CPU work)
PIPELINE_RUN = Case(
    (
        [{"flops": _PIPE / 4, "bytes": 2 * _PIPE, "gpu_ok": True}] * 3,
        _PIPE,
        CPUS[0],
        GPUS[0],
        LINKS[0],
    )
)
# a vector add on a server CPU: the copies alone cost more than the CPU's own memory traffic
PIPELINE_STAY = Case(
    ([{"flops": 2**24, "bytes": 3 * 2**26, "gpu_ok": True}], 2.0**26, CPUS[1], GPUS[1], LINKS[1])
)

PIPELINE = Problem(
    name="place_pipeline",
    spec="""
        place_pipeline(steps, nbytes, cpu, gpu, link) -> (seconds, placement)
        Article 002's program with several processing steps: an array of `nbytes` bytes is loaded
        into host memory, goes through steps[0], steps[1], ... in order, and must be back in host
        memory at the end (to print it).
        steps[i] is a dict {"flops": FLOPs, "bytes": bytes the step reads + writes, "gpu_ok": bool};
        a step whose gpu_ok is False needs the CPU.
        - A step takes its roofline time on the processor it runs on:
          max(step["flops"] / proc["flops"], step["bytes"] / proc["bandwidth"]).
        - The array crosses `link` whenever consecutive steps run on different sides, before the
          first step if it runs on the GPU, and after the last step if that ran on the GPU. Each
          crossing is one copy of nbytes: link["latency"] + nbytes / link["bandwidth"].
        placement: a list with "cpu" or "gpu" for each step. Return the placement with the smallest
        total time (steps + copies) and that total. Every test case has exactly one best placement.
        The course's model (gc.datapath) prices one offload with its two copies; here the copies
        belong to runs of steps, so you decide which steps share them.
    """,
    visible=[PIPELINE_ARTICLE, PIPELINE_RUN, PIPELINE_STAY],
    compare=_compare_placement,
)

# -- how fast must the link be? --------------------------------------------------------------------


def _compare_link(what: str, got: Any, expected: float | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(
                f"{what}: expected None (the two copy latencies plus the GPU's own work already"
                f" take at least the CPU's time: no bandwidth makes offloading pay), got {got!r}"
            )
        return
    if got is None:
        raise CheckFailure(
            f"{what}: expected {expected!r} B/s, got None: a link faster than that makes offloading"
            " pay (the latencies and the GPU's work leave time for the copies)"
        )
    expect_close(
        what,
        got,
        expected,
        rtol=1e-9,
        hint=(
            "offloading pays when 2·latency + (bytes_in + bytes_out) / B + GPU time < CPU time:"
            " solve for B"
        ),
    )


# Tie, exactly representable (powers of two): the CPU reads 2^20 bytes at 2^35 B/s (2^-15 s), the
# GPU at 2^40 B/s (2^-20 s), and the two latencies take the difference, 2 · 31·2^-21 s: no bandwidth
# makes the GPU strictly faster
LINK_TIE = Case(
    (
        1.0,
        2.0**20,
        0.0,
        {"flops": 2.0**40, "bandwidth": 2.0**35},
        {"flops": 2.0**50, "bandwidth": 2.0**40},
        31.0 * 2**-21,
    )
)

LINK = Problem(
    name="min_link_bandwidth",
    spec="""
        min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency)
            -> bandwidth [bytes/s] or None
        A computation does `flops` FLOPs, reads `bytes_in` bytes and writes `bytes_out` bytes. On
        the CPU it takes its roofline time with cpu's dict (bytes = bytes_in + bytes_out).
        Offloaded, it is article 002's program over a link of bandwidth B: copy bytes_in to the GPU
        (latency + bytes_in / B), the GPU's roofline time (same FLOPs and bytes), copy bytes_out
        back (latency + bytes_out / B).
        Offloading is strictly faster than the CPU exactly when B is above some bandwidth B*: return
        B*. Return None when no bandwidth, however large, makes it pay (the two latencies plus the
        GPU's work take at least the CPU's time; an exact tie is not "faster").
        Checked to a relative 1e-9. This is the course's model run backwards:
        gc.datapath.offload_times prices one link; solve for the link instead (a search over it must
        reach 1e-9 and know when to answer None).
    """,
    # 2 TFLOP on 800 MB: a slow link will do
    visible=[Case((2e12, 4e8, 4e8, CPUS[0], GPUS[0], 10e-6)),
             # a vector add: needs a link faster than CPU memory
             Case((1e8, 8e8, 4e8, CPUS[1], GPUS[1], 10e-6)),
             LINK_TIE],  # exactly equal at any B → ∞: None
    compare=_compare_link,
)

# -- bigger than device memory ---------------------------------------------------------------------

# the device functions' bodies, by name: a case names its function (DeviceFn), so that it travels as
# data
_BODIES: dict[str, Callable[[Any], Any]] = {
    "scale_shift": lambda a: a * 3.0 + 1.0,
    "hypot1": lambda a: np.sqrt(a * a + 2.0),
    "relu": lambda a: np.maximum(a, 0.0),
}


@dataclass(frozen=True)
class DeviceFn:
    """An elementwise "kernel" whose working set is at most `copies` arrays the size of its input
    (input included). It works on DeviceArrays only: a host array is refused, so the result must
    come from the device (the reference calls the bodies directly). Plain data (its name picks its
    body in ``_BODIES``): a case holding one travels to a sandbox as data
    (grader/pipeline/wire.py)."""

    name: str
    copies: int

    def __call__(self, a: Any) -> Any:
        if not isinstance(a, devmem.DeviceArray):
            raise TypeError(
                f"{self.name} runs on the device: pass it a DeviceArray (d = mem.to_device(chunk)),"
                f" not a {type(a).__module__}.{type(a).__name__}"
            )
        return _BODIES[self.name](a)

    def __repr__(self) -> str:
        return self.name


KERNELS = [DeviceFn("scale_shift", 3), DeviceFn("hypot1", 3), DeviceFn("relu", 2)]


@dataclass(frozen=True)
class Device:
    """A case's device: its budget in bytes, as plain data. Every call of the student's function
    gets a fresh ``gpucourse.devmem.DeviceMemory`` built from it (empty, counters at zero), in the
    kernel and in the grader's worker alike: re-running the visible test cell starts from a fresh
    device. Messages show it as the DeviceMemory the function receives."""

    budget: int
    name: str = "lab GPU"

    def memory(self) -> devmem.DeviceMemory:
        return devmem.DeviceMemory(self.budget, name=self.name, xp=np)

    def __repr__(self) -> str:
        return f"DeviceMemory(budget={self.budget:,} bytes)"


def min_chunks(n: int, itemsize: int, budget: int, copies: int) -> int:
    """The fewest chunks the budget allows: chunks of budget // (copies · itemsize) elements."""
    return -(-n // (budget // (copies * itemsize)))


# chunks allowed, as a multiple of the fewest: room for double (or triple) buffering
MAX_CHUNKS_FACTOR = 4


def _observation(got: Any, mem: devmem.DeviceMemory) -> dict[str, Any]:
    """What the judge reads after a call, as plain data: what came back (the array if it is a host
    array) and the device's counters."""
    host = isinstance(got, np.ndarray)
    return {
        "returned": type(got).__name__,
        "device_array": isinstance(got, devmem.DeviceArray),
        "shape": tuple(int(d) for d in got.shape) if host else None,
        "dtype": str(got.dtype) if host else None,
        "result": got if host else None,
        "h2d_bytes": mem.h2d_bytes,
        "d2h_bytes": mem.d2h_bytes,
        "h2d_copies": mem.h2d_copies,
        "peak": mem.peak,
    }


def _compare_chunked(what: str, seen: Any, expected: np.ndarray, case: Case) -> None:
    """Judge an observation (``_observation``'s, live or decoded from the worker's data) against
    fn(x)."""
    x, device, fn, copies = case.args
    if not isinstance(seen, dict) or "h2d_copies" not in seen:
        raise CheckFailure(
            f"{what}: no observation of the call (its result and the device's counters) came back"
        )
    if seen["device_array"]:
        raise CheckFailure(
            f"{what}: expected a host (NumPy) array, got a DeviceArray: copy results back with"
            " mem.to_host"
        )
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
        raise CheckFailure(
            f"{what}: {bad.size} of {got.size} elements differ from fn(x); first at index {bad[0]}:"
            f" expected {expected[bad[0]]!r}, got {got[bad[0]]!r}"
        )
    if seen["h2d_bytes"] != x.nbytes:
        raise CheckFailure(
            f"{what}: every input byte must cross to the device exactly once: expected "
            f"{x.nbytes:,} bytes host→device, got {seen['h2d_bytes']:,}"
        )
    if seen["d2h_bytes"] != expected.nbytes:
        raise CheckFailure(
            f"{what}: expected {expected.nbytes:,} bytes device→host (the result, once), "
            f"got {seen['d2h_bytes']:,}"
        )
    # the tracker raises before this can happen; kept as the stated contract
    if seen["peak"] > device.budget:
        raise CheckFailure(
            f"{what}: peak device memory {seen['peak']:,} bytes exceeds the budget"
            f" {device.budget:,}"
        )
    fewest = min_chunks(x.size, x.itemsize, device.budget, copies)
    if seen["h2d_copies"] > MAX_CHUNKS_FACTOR * fewest:
        most = MAX_CHUNKS_FACTOR * fewest
        raise CheckFailure(
            f"{what} → number of chunks (host→device copies): expected at most {MAX_CHUNKS_FACTOR}"
            f" × the fewest the budget allows ({MAX_CHUNKS_FACTOR} × {fewest} = {most}), got"
            f" {seen['h2d_copies']:,}: every copy pays the link's latency, so use chunks about as"
            " large as the budget allows (budget // (copies · itemsize) elements; half that, or a"
            " little more, to double-buffer)"
        )


def _chunk_case(rng: np.random.Generator, n: int, dtype: str, ratio: float, fn: DeviceFn) -> Case:
    x = rng.standard_normal(n).astype(dtype)
    budget = max(fn.copies * x.itemsize, int(x.nbytes * ratio) + int(rng.integers(0, 97)))
    return Case((x, Device(budget), fn, fn.copies))


def _chunked_visible() -> list[Case]:
    rng = np.random.default_rng(3)
    return [
        _chunk_case(rng, 10_000, "float32", 0.25, KERNELS[0]),
        _chunk_case(rng, 1_000, "float64", 4.0, KERNELS[2]),
    ]


@dataclass
class DeviceProblem(ObservedProblem):
    """A Problem whose answer works on a device: each call gets a fresh DeviceMemory
    (``Device.memory``), and the check reads the device's counters after it. Observed here, judged
    there (grader/DESIGN.md): ``observe`` calls the student's function and returns its result and
    the counters as plain data; ``judge`` (``compare`` on that data) decides, in the student's
    kernel for visible cases and in the grader for every case."""

    def observe(
        self, fn: Callable[..., Any], case: Case, limit: float | None = None
    ) -> dict[str, Any]:
        """Call ``fn`` on ``case`` (answers locked, time-limited) with a copy of x and a fresh
        DeviceMemory; the observation as plain data. Raises what ``fn`` raises."""
        x, device, dfn, copies = case.args
        mem = device.memory()
        got = self.call(fn, Case((np.array(x, copy=True), mem, dfn, copies)), limit)
        return _observation(got, mem)

    def judge(self, seen: Any, expected: Any, case: Case) -> None:
        self.compare(self.what(case), seen, expected, case)


CHUNKED = DeviceProblem(
    name="chunked_map",
    spec="""
        chunked_map(x, mem, fn, copies) -> fn(x) as a NumPy array, computed on a
        device too small for x.
        x: a 1-D host (NumPy) array. mem: a gpucourse.devmem.DeviceMemory with mem.budget bytes.
        fn: an elementwise device function; while it runs on a chunk it holds at most `copies`
        arrays the size of that chunk (the chunk itself included).
        Process x chunk by chunk: mem.to_device(chunk) → fn(d) → mem.to_host(r), writing each piece
        of the result into a host array. Rules the checker enforces:
        - the device memory in use never exceeds mem.budget (the tracker raises OutOfMemoryError,
          as a GPU would); a chunk of c elements needs copies · c · x.itemsize bytes while fn runs
          on it, plus whatever else you keep on the device at the same time (a prefetched next
          chunk, if you double-buffer);
        - every input byte goes to the device once, every result byte comes back once;
        - chunks are not needlessly small: at most 4 × the fewest chunks the budget allows (those of
          budget // (copies · x.itemsize) elements; every copy pays the link's latency). One chunk
          at a time at that size passes, and so does double buffering;
        - the result must be exactly fn(x).
        Memory returns to the device only when the last reference to an array goes (as in CuPy):
        `del` your device arrays when you are done with them.
    """,
    visible=_chunked_visible(),
    compare=_compare_chunked,
)

# -- SIMT — lay the data out so that warps agree ---------------------------------------------------
# Not "count what a given grid issues": the course's instrumented executor (gpucourse.simt) counts
# that for any kernel (the third attack read it off its steps and active lanes). The exercise is the
# design the course's §3.3 ends on — arrange the data so that the threads of a warp agree — and its
# count: the executor can check a layout, it does not choose one.

WARP = 32


def issued_by(cond: np.ndarray, order: np.ndarray, cost_if: int, cost_else: int) -> int:
    """Instructions issued by all warps when thread t processes item order[t] (the check's count of
    a layout)."""
    # -1: a missing lane of the last warp
    lanes = np.full(-(-len(cond) // WARP) * WARP, -1, dtype=np.int8)
    lanes[: len(cond)] = np.asarray(cond, dtype=bool)[order]
    warps = lanes.reshape(-1, WARP)
    return int(
        cost_if * (warps == 1).any(axis=1).sum() + cost_else * (warps == 0).any(axis=1).sum()
    )


def _compare_layout(what: str, got: Any, expected: tuple, case: Case) -> None:
    cond, cost_if, cost_else = case.args
    got = expect_tuple(what, got, "order, issued_instructions, utilization")
    n = len(cond)
    try:
        order = np.asarray(got[0])
    # a student's object numpy cannot read: the message says what was expected
    except Exception:  # noqa: BLE001
        order = None
    if (
        order is None
        or order.shape != (n,)
        or not np.issubdtype(order.dtype, np.integer)
        or not np.array_equal(np.sort(order), np.arange(n))
    ):
        raise CheckFailure(
            f"{what} → order: expected a permutation of range({n}) (thread t processes item "
            f"order[t]), got {show(got[0])}"
        )
    fewest = expected[1]
    mine = issued_by(cond, order, cost_if, cost_else)
    if mine != fewest:
        raise CheckFailure(
            f"{what} → order: your layout makes the warps issue {mine} instructions; the fewest"
            f" possible is {fewest}. Hint: put items of one path next to each other so that whole"
            " warps agree, and mind the last warp when len(cond) is not a multiple of 32: which"
            " path should it hold?"
        )
    expect_int(
        f"{what} → issued instructions",
        got[1],
        fewest,
        "the count of the layout you returned: per warp, cost_if if any of its items takes the"
        " if-path, cost_else if any takes the else-path; missing lanes of a partial last warp take"
        " neither",
    )
    expect_close(
        f"{what} → utilization",
        got[2],
        expected[2],
        rtol=1e-9,
        hint=(
            "useful lane-instructions / (32 · issued); lanes past the last thread are never useful"
        ),
    )


WARP_LAYOUT = Problem(
    name="warp_layout",
    spec="""
        warp_layout(cond, cost_if, cost_else) -> (order, issued_instructions, utilization)
        cond: a 1-D NumPy array of bool, one entry per work item. Item i needs
            if cond[i]: <cost_if instructions>  else: <cost_else instructions>.
        You launch len(cond) threads and choose which item each one processes: thread t processes
        item order[t] (order: a permutation of range(len(cond)), a list or an integer array).
        Threads 0..31 form warp 0, 32..63 warp 1, and so on; the last warp may be partial (its
        missing lanes exist but are never active).
        A warp issues the if-path (cost_if instructions) if at least one of its threads has an
        if-item, and the else-path (cost_else) if at least one has an else-item; lanes on the other
        path are masked off meanwhile.
        Return an order whose warps issue the fewest instructions in total, that total, and the lane
        utilization it gives: useful lane-instructions (each item's own path length, summed over
        items) divided by 32 × issued_instructions. Any order that reaches the fewest passes.
        (gpucourse.simt counts what a given layout issues, as the check does; which
        layout is best is yours.)
    """,
    visible=[Case((np.arange(64) % 2 == 0, 10, 10)), Case((np.arange(40) < 20, 3, 9)),
             Case((np.arange(40) < 20, 9, 3))],
    compare=_compare_layout,
)

# -- vectorize a branchy loss and its gradient -----------------------------------------------------


def huber_loop(pred: np.ndarray, target: np.ndarray, delta: float) -> np.ndarray:
    """A branchy loop (the Huber loss of each element: quadratic near 0, linear far away), written
    one element at a time: the shape of what exercise 5 vectorizes, for its own loss (another one:
    Tukey's biweight)."""
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
    """Python lines executed and Python functions entered while ``fn(*args)`` runs; stops past
    ``limit``."""
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
    """A vectorized function's Python-level work does not grow with n: trace it on 40,000
    elements."""
    from gpucourse.timing import measure

    rng = np.random.default_rng(11 if hidden else 10)
    n, limit = 40_000, 2_000
    dtype = "float64" if hidden else "float32"
    pred, target = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    fn(pred[:64], target[:64], 0.4, 0.9)  # warm-up untraced: a numba @njit answer compiles here
    steps = python_steps(fn, pred, target, 0.4, 0.9, limit=limit)
    if steps > limit:
        raise CheckFailure(
            f"asym_tukey_vectorized on {n:,} elements executed more than {limit:,} Python steps"
            " (lines and calls): it still loops over elements in Python. Use whole-array"
            " operations (np.where, np.abs, comparisons and arithmetic on arrays)"
        )
    t_vec = measure(fn, pred, target, 0.4, 0.9, repeat=5, warmup=1, max_seconds=1.0)
    t_loop = measure(
        huber_loop, pred[:4000], target[:4000], 0.7, repeat=3, warmup=0, max_seconds=1.0
    )
    speedup = (t_loop.median * n / 4000) / t_vec.median
    return (
        f"\n  {steps} Python steps for {n:,} elements; about {speedup:,.0f}× faster than"
        " huber_loop's Python loop per element on this machine (a simpler loss, timed on"
        " 4,000 elements: a rough figure)"
    )


def _compare_tukey(what: str, got: Any, expected: tuple, case: Case) -> None:
    got = expect_tuple(what, got, "loss, grad")
    rtol = 1e-5 if case.args[0].dtype == np.float32 else 1e-9
    c = max(case.args[2], case.args[3])  # the larger cutoff
    # absolute parts from the loss's own scale (c²/6, its value beyond the cutoff; the gradient's
    # is c): c²/6 · (1 − w³) loses digits to cancellation for small r, and float32 has 7 of them
    for name, g, e, scale in (
        ("loss", got[0], expected[0], c * c / 6),
        ("grad", got[1], expected[1], c),
    ):
        try:
            expect_array_close(f"{what} → {name}", g, e, rtol=rtol, atol=rtol * scale)
        except CheckFailure as failure:
            mine, theirs = getattr(g, "dtype", None), case.args[0].dtype
            if mine is not None and mine != theirs and np.dtype(mine).itemsize < theirs.itemsize:
                raise CheckFailure(
                    f"{failure}. Your {name} is {mine}, pred is {theirs}: a narrower type rounds"
                    " the result; keep pred's dtype"
                ) from None
            raise CheckFailure(f"{failure}. Hint: {_tukey_hint(got, expected, case)}") from None


def _tukey_hint(got: tuple, expected: tuple, case: Case) -> str:
    """What the wrong values look like, read from the expected values and where the residuals lie
    (no formula of the loss here: this module is installed): swapped outputs, a flipped gradient,
    a wrong gradient beside a right loss, tails that keep pulling (Huber's), a flat value of 0,
    one side wrong."""
    pred, target, lo, hi = case.args
    r = np.asarray(pred, dtype=np.float64) - np.asarray(target, dtype=np.float64)
    try:
        loss, grad = (np.asarray(x, dtype=np.float64).reshape(r.shape) for x in got)
        right_loss, right_grad = (np.asarray(x, dtype=np.float64) for x in expected)
    except (TypeError, ValueError):
        return "return two arrays shaped like pred: (loss, grad)"

    def close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.isclose(a, b, rtol=1e-4, atol=1e-6 * max(lo, hi) ** 2)

    if close(loss, right_grad).all() and close(grad, right_loss).all():
        return "return (loss, grad) in that order"
    loss_right = bool(close(loss, right_loss).all())
    if loss_right and close(grad, -right_grad).all():
        return "grad is d loss / d pred = +r · w² (pred - target, not target - pred)"
    c = np.where(r >= 0, hi, lo)  # each residual's own cutoff
    far = np.abs(r) > max(lo, hi) * (1 + 1e-6)  # beyond both cutoffs
    if far.any() and not np.allclose(grad[far], 0.0, atol=1e-6 * max(lo, hi)):
        if close(loss[far], right_loss[far]).all():  # the loss is flat there already
            return "beyond its cutoff the gradient is 0: the loss is flat there (c²/6)"
        return (
            "beyond its cutoff a residual stops pulling: the loss is flat there (c²/6) and its"
            " gradient 0 — Tukey's loss is not Huber's, whose tails are linear"
        )
    out = np.abs(r) > c * (1 + 1e-6)  # beyond its own side's cutoff
    if out.any() and np.allclose(loss[out], 0.0, atol=1e-6 * float(np.min(c[out])) ** 2):
        return "beyond its cutoff the loss is c²/6 (the value it reaches at |r| = c), not 0"
    if loss_right:
        return "the loss is right; inside the cutoff grad = r · w², with w = 1 − (r/c)²"
    wrong = ~(close(loss, right_loss) & close(grad, right_grad))
    for side, where, cutoff in (("r >= 0", r >= 0, "hi"), ("r < 0", r < 0, "lo")):
        # one side wrong, the other right on several elements: that side's cutoff or formula
        if wrong.any() and not (wrong & ~where).any() and (~where).sum() >= 3:
            return (f"your values are wrong only where {side}: that side's cutoff is {cutoff}"
                    " (c = hi where r >= 0, c = lo where r < 0, picked per element with a mask)")
    return (
        "inside the cutoff loss = c²/6 · (1 − w³) and grad = r · w², with w = 1 − (r/c)² and"
        " c the cutoff of r's side (hi where r >= 0, lo where r < 0); compare your values with"
        " the example's"
    )


ASYM_TUKEY = Problem(
    name="asym_tukey_vectorized",
    spec="""
        asym_tukey_vectorized(pred, target, lo, hi) -> (loss, grad): two arrays shaped like pred,
        computed without a Python loop over elements. Tukey's biweight is a robust loss: a
        residual beyond a cutoff c stops pulling on the fit (its gradient is 0, the loss flat).
        Here each side has its own cutoff. For each i, with r = pred[i] - target[i],
        c = hi if r >= 0 else lo, and w = 1 - (r / c)²:
            loss[i] = c²/6 · (1 - w³)      grad[i] = r · w²     if |r| <= c
            loss[i] = c²/6                 grad[i] = 0          if |r| > c
        grad is d loss / d pred; loss and grad are continuous at r = ±c and at r = 0. Return
        pred's dtype or a wider one. Values are compared to within 1e-5 (float32; 1e-9 in
        float64) of themselves plus that much of the loss's scale (c²/6 with the larger cutoff;
        c for the gradient), so the direct formula's cancellation for small r is fine.
        lab.huber_loop shows the shape of the problem on another loss: one Python iteration
        and a branch per element. The checker traces your function on 40,000 elements: a
        vectorized answer runs a few dozen Python lines whatever n is; a loop runs n of them.
        The example's values are shown rounded to 4 decimals.
    """,
    visible=[
        # r = 0, inside hi = 2 (0.5, 1.5), inside lo = 1 (-0.6), beyond lo (-1.5), beyond hi (3)
        Case((np.array([0.0, 0.5, -0.6, 1.5, -1.5, 3.0]), np.zeros(6), 1.0, 2.0)),
        Case(
            (
                np.linspace(-4, 4, 101, dtype=np.float32),
                np.full(101, 0.5, dtype=np.float32),
                1.5,
                0.5,
            )
        ),
    ],
    compare=_compare_tukey,
    after=_vectorized,
    # the example's (loss, grad) rounded, so that they print as numbers a hand trace can check
    shown=lambda value, case: tuple(
        np.round(np.asarray(v, dtype=np.float64), 4) + 0.0 for v in value  # + 0.0: no "-0.0"
    ),
)

# -- diagnose a transfer from measurements, then size a copy ---------------------------------------
# Each size is timed REPEATS times. Every run carries multiplicative noise (about 2 % of itself),
# and many runs were interrupted (slowed by a factor 1.5–4: another program took the core); every
# size keeps at least one clean run. The answer is graded against the parameters the series was
# drawn from. Taking each size's best run and fitting the *relative* errors (weights 1/t, or a fit
# in log space) meets the bands on every one of 5,000 series drawn like the hidden cases' random
# ones (worst: 4.6 % on the latency, 4.9 % on the bandwidth; with the hidden set's two hard-corner
# cases too, a reader's 5,600 cases gave 7.5 % and 5.0 %, still inside); the median of the runs
# leaves them in 55 % of the series, the mean in all, every run fitted at once in 84 %, and an
# unweighted line through the best runs in 34 %; a line through the smallest and the largest size's
# best runs meets them in almost every series (the spec says so)
# (tests/test_lab03_datapath.py re-measures them).

LATENCY_RTOL, BANDWIDTH_RTOL = 0.15, 0.08
# the size against the one the answer's own latency and bandwidth give (not against the truth: see
# _compare_plan)
SIZE_RTOL = 0.01
NOISE = 0.02  # relative standard deviation of each measured time
REPEATS, INTERRUPTED = 5, 0.45  # runs per size; the chance that a run is interrupted


@dataclass(frozen=True)
class TransferCase(Case):
    # (latency [s], bandwidth [B/s]) the measurements were drawn from, and the size [B] that reaches
    # the case's fraction of that bandwidth (data: the answer side computes it for its cases; the
    # visible ones give it)
    truth: tuple[float, float, float] = (0.0, 0.0, 0.0)


def _compare_plan(what: str, got: Any, expected: tuple, case: Case) -> None:
    latency, bandwidth, size = case.truth
    got = expect_tuple(what, got, "latency_seconds, bandwidth_bytes_per_second, size_bytes")
    expect_close(
        f"{what} → latency [s], within {LATENCY_RTOL:.0%} of the series' true latency",
        got[0],
        latency,
        rtol=LATENCY_RTOL,
        hint=(
            "an interrupted run is slower, never faster: each size's best run is its honest one."
            " Each time then carries noise proportional to itself, so the smallest copies are not"
            " pure latency (nor the largest pure bandwidth); use all the sizes, each weighted by"
            " its relative error (weights 1/t, or a fit in log space)"
        ),
    )
    expect_close(
        f"{what} → bandwidth [B/s], within {BANDWIDTH_RTOL:.0%} of the series' true bandwidth",
        got[1],
        bandwidth,
        rtol=BANDWIDTH_RTOL,
        hint=(
            "bandwidth is 1 / slope of the fitted line, not size / time of one point; fit each"
            " size's best run (an interrupted run is slower, never faster), weighted for relative"
            " errors"
        ),
    )
    # the size is a function of the latency and the bandwidth: its error against the truth is
    # theirs, already graded above (a latency 12 % off, inside its band, puts a correctly computed
    # size 12 % off). So the size is graded against the answer's own latency and bandwidth: that
    # checks the formula, and a fit inside both bands never fails on the size.
    own = case.args[2] / (1.0 - case.args[2]) * float(got[0]) * float(got[1])
    expect_close(
        f"{what} → size [bytes], within {SIZE_RTOL:.0%} of the size your own latency and"
        f" bandwidth give for fraction {case.args[2]}",
        got[2],
        own,
        rtol=SIZE_RTOL,
        hint=(
            "solve size / (latency + size / bandwidth) = fraction · bandwidth for size, with the"
            " latency and bandwidth you return"
        ),
    )


def transfer_series(rng: np.random.Generator, latency: float, bandwidth: float,
                    k: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, seconds): copies of 2**k[0] … 2**(k[1]-1) bytes, each timed REPEATS times with
    multiplicative noise (NOISE relative), a share INTERRUPTED of the runs slowed 1.5–4× (never
    every run of a size)."""
    sizes = 2.0 ** np.arange(*k)
    clean = (latency + sizes / bandwidth)[:, None] * (
        1 + NOISE * rng.standard_normal((sizes.size, REPEATS))
    )
    hit = rng.random((sizes.size, REPEATS)) < INTERRUPTED
    # one clean run at least
    hit[np.arange(sizes.size), rng.integers(0, REPEATS, sizes.size)] = False
    return sizes, np.where(hit, clean * (1 + rng.uniform(0.5, 3.0, hit.shape)), clean)


def _exact_series() -> TransferCase:
    sizes = np.array([1e3, 1e6, 1e9])
    t = 10e-6 + sizes / 25e9
    # the 2nd and 4th runs of each size were interrupted; half the bandwidth is reached at latency ·
    # bandwidth bytes
    return TransferCase((sizes, np.c_[t, 3 * t, t, 2 * t], 0.5), truth=(10e-6, 25e9, 250e3))


# 90 % of 50 GB/s with 8 µs of latency: 0.9 / 0.1 · 8 µs · 50 GB/s = 3.6 MB
TRANSFER_50_GBS = TransferCase(
    (*transfer_series(np.random.default_rng(6), 8e-6, 50e9, (10, 28)), 0.9),
    truth=(8e-6, 50e9, 3.6e6),
)

TRANSFER = Problem(
    name="transfer_plan",
    spec=f"""
        transfer_plan(sizes, seconds, fraction) -> (latency, bandwidth, size)
        Measured host→device copies on a busy machine: seconds[i, j] is the j-th of several timed
        runs of a copy of sizes[i] bytes. The model is
            seconds = latency + size / bandwidth.
        Every run is off by noise *proportional to itself* (about {NOISE:.0%} of it), as timings
        are, and many runs were interrupted (another program took the core): an interrupted run is
        slower, never faster.
        Every size has at least one run that was not interrupted.
        Return latency [s] and bandwidth [bytes/s] estimated from the sizes (any estimator whose
        numbers land within the tolerances below passes: at this noise a line through the smallest
        and the largest size's best runs usually does too, but it leans on the noise of those two
        runs, while a fit over every size's best run, weighted for relative errors, keeps holding as
        the noise grows), and the smallest copy size [bytes] whose effective rate, size / time,
        reaches `fraction` (0 < fraction < 1) of the bandwidth: the chunk size below which a chunked
        transfer (exercise 3) wastes more than 1 - fraction of the link.
        Graded against the latency and bandwidth the measurements were generated from:
        within {LATENCY_RTOL:.0%} for the latency and {BANDWIDTH_RTOL:.0%} for the bandwidth. The
        size follows from those two, so it is graded against the size your own latency and
        bandwidth give (within {SIZE_RTOL:.0%}): a fit inside both bands never fails on the size.
        Least squares (np.polyfit, np.linalg.lstsq) is allowed as a tool: which numbers you give it,
        and how you weigh them, is the exercise (think about which points an ordinary least-squares
        line listens to when the errors grow with the time, and which runs to trust).
    """,
    visible=[_exact_series(), TRANSFER_50_GBS],
    compare=_compare_plan,
)

problems = {p.name: p for p in (PIPELINE, LINK, CHUNKED, WARP_LAYOUT, ASYM_TUKEY, TRANSFER)}
