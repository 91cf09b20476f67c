"""Lab 4 — the command queue, launch overhead and streams: the problems and their references.

Every schedule is judged by the course's stream/engine model (``gpucourse.streams.simulate``): in order within
a stream, events across streams, kernels sharing the SMs, one copy engine per direction, times in µs. On a GPU
the chunked pipeline of exercise 5 is also run for real with CuPy streams and timed with CUDA events.

No installed code answers an exercise (issue 20): the model predicts a makespan for given ops, and exercises 1 and 5
ask its inverses — how long one op may run before a deadline is missed, the fewest chunks whose pipeline meets a
deadline — which a student answers by reasoning about the schedule or by using the model as a tool (the specs say
so). The course's §4.7 pipeline is another shape (a stream per engine) than exercise 5's (a stream per chunk).
tests/attacks/lab04_streams.py holds what a student could assemble from installed code; each scores less than full.

This module is the lab's *exercise side* (specs, visible cases, comparisons, checks: what students install); the
references and hidden-case generators are its answer side, grader/answers/lab04_streams.py (the instructor's only;
grader/DESIGN.md). The visible cases' expected values ship as data: lab04_streams.expected.json. time_call's cases
are data too (:class:`TimingSetup`: durations, repeat, per-call factors), built afresh into a simulated jitted
function and the clock of its command queue wherever the student's function runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from gpucourse import streams as st

from ..checks import CheckFailure, expect_close, expect_int, expect_tuple
from ..problem import Case, Problem, _short

SEED_STREAMS = {"1": ["A", "B", "C"], "2": ["D", "E"], "3": ["F", "G", "H", "I"]}
SEED_DURATIONS = {"A": 30.0, "B": 20.0, "C": 25.0, "D": 40.0, "E": 15.0, "F": 10.0, "G": 20.0, "H": 15.0, "I": 30.0}


# -- Exercise 1: how long may one op take? (the inverse of predicting a makespan) --------------------------------


def _compare_max_duration(what: str, got: Any, expected: float | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(f"{what}: expected None (even with {case.args[3]!r} taking 0 µs the schedule ends after "
                               f"the deadline), got {got!r}"[:400])
        return
    if got is None:
        raise CheckFailure(f"{what}: expected {expected:g} µs, got None: the other ops alone meet the deadline "
                           f"(None only when even a duration of 0 misses it)")
    expect_close(what, got, expected, rtol=1e-9, atol=1e-6,  # µs: a search with the model ends near 0 µs, not at it
                 hint="deadline − (when op can start at the earliest) − (the longest chain of ops that must follow "
                      "it: its stream's later ops and the ops that wait for it, through events, transitively); a "
                      "non-critical op may grow by more than the deadline's margin")


MAX_DURATION = Problem(
    name="max_duration",
    spec="""
        max_duration(streams, durations, waits, op, deadline_us) -> µs, or None
        streams:   {stream: [op, op, ...]}   ops of one stream run in this order, one after another
        durations: {op: µs}
        waits:     {op: [other ops]}         events: op may start only after these ops (of other streams) ended
        Every kernel is small: the GPU runs any number of them at once (no SM limit, a hardware queue per stream),
        and queuing costs nothing. Everything is queued at t = 0. An op starts as soon as the previous op of its
        stream and every op it waits for have finished; the schedule ends when its last op finishes.
        Return the largest duration of `op` (every other op as given) for which the schedule still ends by
        deadline_us; None when it misses the deadline even with `op` taking 0 µs.
        You may use gc.streams.simulate to try durations (on gc.streams.Machine(sms=10**6, connections=None): the
        default machine has 132 SMs and 8 hardware queues), or reason about the chains of ops through `op`.
    """,
    visible=[Case((SEED_STREAMS, SEED_DURATIONS, {"E": ["B"], "H": ["D"]}, "B", 100.0)),
             Case((SEED_STREAMS, SEED_DURATIONS, {"E": ["B"], "H": ["D"]}, "D", 90.0)),
             Case((SEED_STREAMS, SEED_DURATIONS, {}, "I", 30.0)),
             Case(({"s0": ["x", "y"]}, {"x": 1.5, "y": 2.0}, {}, "x", 4.0))],
    compare=_compare_max_duration,
)


# -- Exercise 2: streams and events for a dependency graph -------------------------------------------------------
# A program's copies and kernels form a DAG (each task needs the results of some earlier ones). The host must give
# every task a stream and the events (waits) that guarantee each dependency, without adding any ordering the data
# does not need. The checker: every dependency is guaranteed (stream order or events, transitively), events only
# on tasks issued earlier, and the model's makespan (8 hardware queues, as CUDA's default) is no longer than the
# ideal — every task waiting for exactly its dependencies and nothing else.

def _compare_dag(what: str, got: Any, expected: list[st.Op], case: Case) -> None:
    tasks, deps = case.args
    if not isinstance(got, (list, tuple)) or not all(isinstance(op, st.Op) for op in got):
        raise CheckFailure(f"{what}: expected a list of gc.streams.Op (in issue order), got {type(got).__name__}")
    want = {name: (engine, float(us), int(sms)) for name, engine, us, sms in tasks}
    names = [op.name for op in got]
    if sorted(names) != sorted(want):
        missing, extra = sorted(set(want) - set(names)), sorted(set(names) - set(want))
        raise CheckFailure(f"{what}: expected every task once; missing {missing[:6]}, unexpected or repeated "
                           f"{sorted(extra + [n for n in set(names) if names.count(n) > 1])[:6]}")
    for op in got:
        engine, us, sms = want[op.name]
        if op.engine != engine or abs(op.duration - us) > 1e-9 * max(1.0, us) or (engine == "compute" and op.sms != sms):
            raise CheckFailure(f"{what}: task {op.name} must be Op({op.name!r}, stream, {us:g}, {engine!r}"
                               + (f", sms={sms})" if engine == "compute" else ")")
                               + f", got engine {op.engine!r}, duration {op.duration:g}, sms {op.sms}")
    position = {n: i for i, n in enumerate(names)}
    for op in got:
        later = [w for w in op.waits if position[w] > position[op.name]]
        if later:
            raise CheckFailure(f"{what}: {op.name} waits for {later[0]}, which is issued after it: a "
                               "cudaStreamWaitEvent on an event not yet recorded waits for nothing. Issue what "
                               "you wait for first")
    hb = st.happens_before(got)
    for name, needs in deps.items():
        for d in needs:
            if d not in hb[name]:
                raise CheckFailure(f"{what}: {name} needs the result of {d}, but nothing orders them (neither "
                                   f"the same stream with {d} first, nor an event, directly or through other "
                                   "ordered tasks): a race")
    # the reference's schedule reaches the ideal on every case (tests/test_lab04_streams.py), so its makespan is
    # the target: the ideal itself (every task on its own stream, unlimited queues) is an answer, and stays on the
    # answer side (grader/answers/lab04_streams.py: dag_target)
    target = st.simulate(expected).makespan
    timeline = st.simulate(got)
    if timeline.makespan > target * (1 + 1e-9):
        n_streams = len({op.stream for op in got})
        raise CheckFailure(f"{what}: correct, but the model's makespan is {timeline.makespan:g} µs, expected at "
                           f"most {target:g} µs (every task waiting for exactly its dependencies). Something waits "
                           "for work it does not need: a task placed behind an unrelated one in its stream, a "
                           "surplus event, or " + (f"{n_streams} streams sharing 8 hardware queues"
                                                   if n_streams > 8 else "too few streams for kernels that could "
                                                   "run side by side"))


_DAG_VISIBLE_TASKS = [("in0", "h2d", 20.0, 1), ("in1", "h2d", 20.0, 1), ("k0", "compute", 50.0, 40),
                      ("k1", "compute", 50.0, 40), ("sum", "compute", 10.0, 132), ("out", "d2h", 20.0, 1)]
_DAG_VISIBLE_DEPS = {"k0": ["in0"], "k1": ["in1"], "sum": ["k0", "k1"], "out": ["sum"]}
# the answer side's false_dependency_dag(np.random.default_rng(4)): one stream per task (12 streams on 8 hardware
# queues) picks up a false dependency here; following the pipelines reaches the ideal (tests/test_lab04_streams.py)
_DAG_FALSE_DEPENDENCY_TASKS = [
    ("kLong", "compute", 200.0, 44), ("kTail", "compute", 19.0, 44), ("in0", "h2d", 13.0, 1), ("in1", "h2d", 10.0, 1),
    ("inC", "h2d", 14.0, 1), ("k0", "compute", 29.0, 20), ("k1", "compute", 29.0, 20), ("out0", "d2h", 5.0, 1),
    ("out1", "d2h", 9.0, 1), ("kC1", "compute", 104.0, 44), ("kC2", "compute", 91.0, 44), ("outC", "d2h", 17.0, 1)]
_DAG_FALSE_DEPENDENCY_DEPS = {"kTail": ["kLong"], "k0": ["in0"], "k1": ["in1"], "out0": ["k0"], "out1": ["k1"],
                              "kC1": ["inC"], "kC2": ["kC1"], "outC": ["kC2"]}

DAG = Problem(
    name="schedule_dag",
    spec="""
        schedule_dag(tasks, deps) -> list of gc.streams.Op, in the order the host issues them
        tasks: [(name, engine, duration_us, sms), ...] in a valid issue order (every task after those it needs);
               engine is "h2d", "compute" or "d2h"; sms = SMs a kernel occupies (1 for copies).
        deps:  {name: [names of tasks whose results it needs]}.
        Return one Op(name, stream, duration_us, engine, sms=sms, waits=(...)) per task: choose its stream and
        the events it waits for (waits = tasks of other streams that must finish first). Rules the checker
        enforces:
        - correct: every dependency is guaranteed — the needed task is earlier in the same stream, or waited for,
          directly or through other ordered tasks (an unordered pair is a race);
        - events only on tasks issued earlier in your list (waiting on an event not yet recorded waits for nothing);
        - overlapped: gc.streams.simulate(your list) on the default model GPU — 132 SMs, one copy engine per
          direction, and 8 hardware queues (CUDA_DEVICE_MAX_CONNECTIONS: a 9th stream shares a queue with the
          1st) — finishes no later than the ideal, where every task waits for exactly its dependencies.
    """,
    visible=[Case((_DAG_VISIBLE_TASKS, _DAG_VISIBLE_DEPS)), Case((_DAG_FALSE_DEPENDENCY_TASKS, _DAG_FALSE_DEPENDENCY_DEPS))],
    compare=_compare_dag,
)


# -- Exercise 3: fix a broken timing snippet --------------------------------------------------------------------

@dataclass(frozen=True)
class TimingSetup:
    """One case of time_call, as data (it travels to a grading sandbox as these fields): :meth:`build` makes the
    arguments afresh — a simulated jitted function on a new command queue, not compiled yet, and that queue's
    virtual clock — every time the student's function is called, so re-running a test cell sees the same situation.

    ``factors``: call number (1 = the first timed call) -> work multiplier: calls on a shared machine differ
    from one another, and load spikes (another program took the machine) make some calls many times slower.
    ``start_us``: what the clock reads when time_call starts (time.perf_counter never starts at 0)."""

    work_us: float
    compile_us: float
    launch_us: float
    repeat: int
    factors: dict[int, float] = field(default_factory=dict)
    start_us: float = 0.0

    def build(self) -> tuple:
        """(f, x, repeat, clock): time_call's arguments, on a fresh CommandQueue."""
        q = st.CommandQueue(launch_us=self.launch_us, host_us=self.start_us)
        return (st.SimulatedJit(q, self.work_us, self.compile_us, "f", factors=dict(self.factors or {})),
                np.ones(4, np.float32), self.repeat, st.VirtualClock(q))

    def __repr__(self) -> str:  # a message names a case by the arguments time_call is called with
        return ", ".join(_short(a) for a in self.build())


def timing_case(work_us: float, compile_us: float, launch_us: float, repeat: int,
                factors: dict[int, float] | None = None, start_us: float = 0.0) -> Case:
    return Case((TimingSetup(float(work_us), float(compile_us), float(launch_us), int(repeat), dict(factors or {}),
                             float(start_us)),))


def built(case: Case) -> Case:
    """A time_call case with its arguments built afresh (a case of another form unchanged)."""
    if len(case.args) == 1 and isinstance(case.args[0], TimingSetup):
        return Case(case.args[0].build())
    return case


class _TimingProblem(Problem):
    """time_call's Problem: a case is a :class:`TimingSetup` (data); every call of the student's function gets its
    arguments built afresh (in the student's kernel, in the grading sandbox's worker), so no state carries over
    from one call, or one run of a test cell, to the next. The reference (answer side) takes the TimingSetup."""

    def call(self, fn: Callable[..., Any], case: Case, limit: float | None = None) -> Any:
        return super().call(fn, built(case), limit)


# sorted 0.8, 0.95, 1.0, [1.1], 1.3, 4.0, 6.0: the median is the 4th call, neither the first nor the second-smallest
TIMING_SPREAD = {1: 1.3, 2: 0.8, 3: 6.0, 4: 1.1, 5: 0.95, 6: 4.0, 7: 1.0}

def _compare_timing(what: str, got: Any, expected: tuple[float, float], case: Case) -> None:
    expect_tuple(what, got, "first_seconds, steady_seconds")
    expect_close(f"{what} → first call [s]", got[0], expected[0], rtol=1e-9,
                 hint="time the first call on its own: it includes compiling, and wait for its result")
    expect_close(f"{what} → steady state [s]", got[1], expected[1], rtol=1e-9,
                 hint="the call returns before the work is done: block_until_ready() before reading the clock; "
                      "and the median of exactly the `repeat` timed calls (without the first)")


def _real_jax_timing(fn: Callable, hidden: bool) -> str:
    """Visible test only: the student's function on a real jitted JAX call, against gc.measure."""
    if hidden:
        return ""
    import jax
    import jax.numpy as jnp

    import gpucourse as gc

    a = jnp.asarray(np.random.default_rng(0).standard_normal((640, 640)).astype(np.float32),
                    device=gc.get_backend().jax_device)
    f = jax.jit(lambda a: jnp.tanh(a @ a) @ a)
    first, steady = fn(f, a, 5, time.perf_counter)
    truth = gc.measure(f, a, repeat=5).median
    if not steady >= 0.3 * truth:
        raise CheckFailure(f"time_call on a real jax.jit function: steady state {steady * 1e6:.0f} µs, but the call "
                           f"really takes {truth * 1e6:.0f} µs (gc.measure): the clock stopped before the work ended")
    return (f"\n  real JAX (640×640 matmuls): first call {first * 1e3:.1f} ms (with compile), "
            f"steady {steady * 1e3:.2f} ms; gc.measure says {truth * 1e3:.2f} ms")


TIMING = _TimingProblem(
    name="time_call",
    spec="""
        time_call(f, x, repeat, clock) -> (first_seconds, steady_seconds)
        f is a jitted function: calling it returns at once, before the device has done the work; its result has
        .block_until_ready(). clock() returns the time in seconds (time.perf_counter or a virtual clock: use
        the one you are given for every reading).
        first_seconds:  the first call f(x), including waiting for its result (compile + run).
        steady_seconds: the median of `repeat` more calls, each timed until its result is ready (on a shared
                        machine no two calls take quite the same time).
    """,
    visible=[timing_case(250.0, 800.0, 4.0, 5), timing_case(40.0, 300.0, 5.0, 3),
             timing_case(100.0, 500.0, 4.0, 7, TIMING_SPREAD)],  # only the median of the 7 timed calls fits
    compare=_compare_timing,
    after=_real_jax_timing,
)


# -- Exercise 4: how many tiny launches make overhead dominate? ------------------------------------------------------


def _compare_launches(what: str, got: Any, expected: tuple[int, list[float]], case: Case) -> None:
    expect_tuple(what, got, "N, makespans")
    expect_int(f"{what} → N", got[0], expected[0],
               "the smallest N with T(N) > 2·work_us, strictly: where T(N) equals 2·work_us the GPU idles exactly as "
               "long as it works, not longer")
    makespans = got[1]
    if not hasattr(makespans, "__len__") or len(makespans) != len(expected[1]):
        raise CheckFailure(f"{what} → makespans: expected a list of the {len(expected[1])} makespans T(1) … "
                           f"T({expected[0]}), got {makespans!r}"[:400])
    for k, (g, e) in enumerate(zip(makespans, expected[1]), start=1):
        expect_close(f"{what} → T({k}) [µs]", g, e, rtol=1e-9,
                     hint="kernels longer than a launch keep the GPU busy from the first launch on (T = launch + "
                          "work); shorter ones wait for the host (T = N·launch + work/N)")


def _launch_report(fn: Callable, hidden: bool) -> str:
    if hidden:
        return ""
    n, _ = fn(1000.0, 4.0)
    return (f"\n  1 ms of work, 4 µs per launch: overhead dominates from {n:,} launches, i.e. kernels of "
            f"{1000.0 / n:.2f} µs — about half the launch cost")


# T(N) == 2·work_us exactly at an integer N (every number exact in binary): N·launch + work/N = 2·work
# with work = 1024, N = 16, launch = 124 (1984 + 64 = 2048); and work = 96, N = 4, launch = 42 (168 + 24 = 192)
LAUNCH_TIES = [Case((1024.0, 124.0)), Case((96.0, 42.0))]

MAX_LAUNCHES = 2000  # the spec's bound on N: a kernel-by-kernel simulation of T(1..N) (O(N²)) stays fast


LAUNCHES = Problem(
    name="launches_to_dominate",
    spec="""
        launches_to_dominate(work_us, launch_us) -> (N, makespans)
        work_us of GPU work is split into N equal kernels (work_us / N each), queued one by one into one stream.
        The host needs launch_us per launch: kernel i (i = 1..N) is queued at time i·launch_us and starts as
        soon as it is queued and kernel i−1 has finished. The makespan T(N) is when kernel N finishes.
        N: the smallest N ≥ 1 for which T(N) > 2·work_us: the GPU then idles longer than it works.
        makespans: the list [T(1), T(2), …, T(N)] in µs.
        On every test case N ≤ 2,000 (so even simulating the N kernels one by one for each N is fast enough).
        gc.streams.simulate gives one T(N) (the course's §4.4 does so), but it is a general simulator, O(N²) for one
        N: calling it for every N up to hundreds takes minutes. Find T(N)'s two regimes (or run this one queue
        yourself, kernel after kernel).
        Ties: where T(N) equals 2·work_us exactly, the GPU idles exactly as long as it works, not longer: that N
        does not count, the answer is a later one. Every test case keeps T(N) and T(N − 1) either exactly equal to
        2·work_us (exactly representable: floating point computes the tie exactly) or more than a relative 1e-12
        away from it, so rounding never decides.
    """,
    visible=[Case((1000.0, 4.0)), Case((30.0, 5.0)), Case((3.0, 4.0)), LAUNCH_TIES[0]],
    compare=_compare_launches,
    after=_launch_report,
)


# -- Exercise 5: the fewest chunks that meet a deadline ---------------------------------------------------------

MAX_CHUNKS = 32  # the spec's bound on the chunk count: a search over every count stays fast


def _compare_chunks(what: str, got: Any, expected: tuple[int | None, list[st.Op]], case: Case) -> None:
    nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us = case.args
    n_want, want_ops = expected
    expect_tuple(what, got, "n_chunks, ops")
    n_got, ops = got
    if n_want is None:
        if n_got is not None or len(ops):
            raise CheckFailure(f"{what}: expected (None, []): no chunk count up to {MAX_CHUNKS} finishes within "
                               f"{target_us:g} µs, got n_chunks = {n_got!r} and {len(ops)} ops")
        return
    expect_int(f"{what} → n_chunks", n_got, n_want,
               "try every chunk count from 1 up and keep the first whose pipeline's makespan, launches included "
               "(simulate(ops, launch_us=launch_us)), is within target_us: more chunks overlap more but each one "
               "costs three launches, so the makespan falls, then rises again")
    if not isinstance(ops, (list, tuple)) or not all(isinstance(op, st.Op) for op in ops):
        raise CheckFailure(f"{what} → ops: expected a list of gc.streams.Op, got {type(ops).__name__}")
    want = {op.name: op for op in want_ops}
    have = {op.name: op for op in ops}
    if sorted(have) != sorted(want) or len(have) != len(ops):
        missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
        raise CheckFailure(f"{what} → ops: expected h2d<i>, k<i>, d2h<i> for i = 0..{n_want - 1}, once each; "
                           f"missing {missing[:6]}, unexpected {extra[:6]}")
    for name, op in want.items():
        g = have[name]
        if g.engine != op.engine:
            raise CheckFailure(f"{what}: op {name} must use engine {op.engine!r}, got {g.engine!r}")
        expect_close(f"{what} → duration of {name} [µs]", g.duration, op.duration, rtol=1e-9,
                     hint="chunk i has nbytes // n bytes, plus one for the first nbytes % n chunks")
        if op.engine == "compute" and g.sms != op.sms:
            raise CheckFailure(f"{what}: kernel {name} must occupy all {op.sms} SMs, got sms={g.sms}")
        if op.engine != "compute" and g.nbytes != op.nbytes:
            raise CheckFailure(f"{what}: copy {name} must say how many bytes it moves, nbytes={op.nbytes} (the "
                               f"chunk's size), got nbytes={g.nbytes!r}: on a GPU that is what it copies")
    if len({op.stream for op in ops}) > n_streams:
        raise CheckFailure(f"{what}: expected at most {n_streams} streams, got {len({op.stream for op in ops})}")
    timeline = st.simulate(ops, launch_us=launch_us)
    for i in range(n_want):
        h, k, d = (timeline.span(f"{p}{i}") for p in ("h2d", "k", "d2h"))
        if k.start < h.end or d.start < k.end:
            raise CheckFailure(f"{what}: chunk {i} is computed or copied back before its data arrived: keep h2d{i}, "
                               f"k{i}, d2h{i} in order (same stream, or events)")
    limit = min(target_us, st.simulate(want_ops, launch_us=launch_us).makespan * (1 + 1e-9))
    if timeline.makespan > limit:
        raise CheckFailure(f"{what}: the right chunk count, but your ops finish at {timeline.makespan:g} µs (launches "
                           f"of {launch_us:g} µs included), expected at most {limit:g} µs: chunk i on stream "
                           "i % n_streams, issued chunk by chunk (h2d, kernel, d2h)")


def _gpu_overlap(fn: Callable, hidden: bool) -> str:
    """On a GPU (visible test): the student's pipeline run for real, against the same ops on one stream."""
    import gpucourse as gc

    if hidden or not gc.gpu_available():
        return ""
    n, ops = fn(256 * 2**20, 4, 25e9, 50e9, 25e9, 5.0, 15_000.0)
    if n is None or not ops:
        return ""
    overlapped, serial = st.measure_on_gpu(ops), st.measure_on_gpu(st.on_one_stream(ops))
    predicted = st.simulate(st.on_one_stream(ops)).makespan / st.simulate(ops).makespan
    measured = serial.makespan / overlapped.makespan
    if predicted > 1.4 and measured < 1.1:
        raise CheckFailure(f"fewest_chunks on the GPU: the model predicts {predicted:.2f}× over one stream, the "
                           f"GPU measured only {measured:.2f}× (CUDA events)")
    return (f"\n  on this GPU: your {n} chunks ran {measured:.2f}× faster than the same ops on one stream "
            f"(model: {predicted:.2f}×)")


CHUNKS = Problem(
    name="fewest_chunks",
    spec="""
        fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us) -> (n_chunks, ops)
        The classic chunked pipeline with n chunks: chunk i has nbytes // n bytes, one more for the first
        nbytes % n chunks, and runs on stream i % n_streams; per chunk three ops, issued chunk by chunk:
            Op(f"h2d{i}", stream, µs, "h2d", nbytes=size)      size / h2d_Bps seconds
            Op(f"k{i}", stream, µs, "compute", sms=132)        size / compute_Bps seconds
            Op(f"d2h{i}", stream, µs, "d2h", nbytes=size)      size / d2h_Bps seconds
        (durations in µs; the kernel fills all 132 SMs). Each op costs the host launch_us to issue: the pipeline's
        makespan is gc.streams.simulate(ops, launch_us=launch_us).makespan. (A stream's next copy-in waits for
        its copy-out, so at most n_streams chunks occupy device memory at once.)
        Return the smallest n (1 ≤ n ≤ 32) whose pipeline finishes within target_us (makespan ≤ target_us: a
        makespan equal to the target counts), and that pipeline's ops in issue order; (None, []) when no n up to
        32 does.
    """,
    # no launch cost; a remainder of 3 bytes; launches that make the makespan rise again from 5 chunks on (only
    # the smallest count fits: a bisection over 1..32 misses it); a target no count reaches
    visible=[Case((2 * 10**6, 2, 25e9, 50e9, 25e9, 0.0, 130.0)),
             Case((100 * 10**6 + 3, 3, 25e9, 40e9, 20e9, 5.0, 8000.0)),
             Case((8 * 10**6, 2, 25e9, 50e9, 25e9, 30.0, 540.0)),
             Case((8 * 10**6, 3, 25e9, 50e9, 25e9, 20.0, 400.0))],
    compare=_compare_chunks,
    after=_gpu_overlap,
)

problems = {p.name: p for p in (MAX_DURATION, DAG, TIMING, LAUNCHES, CHUNKS)}
