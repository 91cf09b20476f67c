"""Lab 4 — the command queue, launch overhead and streams: the problems and their references.

Every schedule is judged by the course's stream/engine model (``gpucourse.streams.simulate``): in
order within a stream, events across streams, kernels sharing the SMs, one copy engine per
direction, times in µs. On a GPU the chunked pipeline of exercise 5 is also run for real with CuPy
streams and timed with CUDA events.

No installed code answers an exercise (issue 20): the model predicts a makespan for given ops, and
exercises 1 and 5 ask its inverses — how long one op may run before a deadline is missed, the fewest
chunks whose pipeline meets a deadline — which a student answers by reasoning about the schedule or
by using the model as a tool (the specs say so). The course's §4.7 pipeline is another shape (a
stream per engine) than exercise 5's (a stream per chunk). Exercise 4's queue
(gc.streams.CommandQueue) gives T(N) one launch at a time; its cases' N reach 10^8, so only T's
closed form, inverted, answers them. Exercise 3's clock ticks every 2 ms on some cases, where a
timer that times one call per measurement (gc.measure's loop, however it is loaded) reads 0 or a
whole tick. tests/attacks/lab04_streams.py holds what a student could assemble from installed code;
each scores less than full.

This module is the lab's *exercise side* (specs, visible cases, comparisons, checks: what students
install); the references and hidden-case generators are its answer side,
grader/answers/lab04_streams.py (the instructor's only; grader/DESIGN.md). The visible cases'
expected values ship as data: lab04_streams.expected.json. time_call's cases are data too: lab 1's
stand-in workload (grader.virtual_clock.Workload: its fields travel), reset for every call of the
student's function, whose clock the check hands in.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from gpucourse import streams as st

from ..checks import CheckFailure, expect_close, expect_int, expect_tuple, show
from ..problem import Case, Problem
from ..virtual_clock import DISPATCH, Workload

ARTICLE_STREAMS = {"1": ["A", "B", "C"], "2": ["D", "E"], "3": ["F", "G", "H", "I"]}
ARTICLE_DURATIONS = {
    "A": 30.0,
    "B": 20.0,
    "C": 25.0,
    "D": 40.0,
    "E": 15.0,
    "F": 10.0,
    "G": 20.0,
    "H": 15.0,
    "I": 30.0,
}


# -- how long may one op take? (the inverse of predicting a makespan) ------------------------------


def _compare_max_duration(what: str, got: Any, expected: float | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(
                (f"{what}: expected None (even with {case.args[3]!r} taking 0 µs the schedule ends"
                 f" after the deadline), got {got!r}")[:400]
            )
        return
    if got is None:
        raise CheckFailure(
            f"{what}: expected {expected:g} µs, got None: the other ops alone meet the deadline "
            "(None only when even a duration of 0 misses it)"
        )
    # µs: a search with the model ends near 0 µs, not at it
    expect_close(
        what,
        got,
        expected,
        rtol=1e-9,
        atol=1e-6,
        hint=(
            "deadline − (when op can start at the earliest) − (the longest chain of ops that must"
            " follow it: its stream's later ops and the ops that wait for it, through events,"
            " transitively); a non-critical op may grow by more than the deadline's margin"
        ),
    )


MAX_DURATION = Problem(
    name="max_duration",
    spec="""
        max_duration(streams, durations, waits, op, deadline_us) -> µs, or None
        streams:   {stream: [op, op, ...]}   ops of one stream run in this order, one after another
        durations: {op: µs}
        waits:     {op: [other ops]}         events: op may start only after these ops (of other
                                             streams) have ended.
        Every kernel is small: the GPU runs any number of them at once (no SM limit, a hardware
        queue per stream), and queuing costs nothing. Everything is queued at t = 0. An op starts
        as soon as the previous op of its stream and every op it waits for have finished; the
        schedule ends when its last op finishes.
        Return the largest duration of `op` (every other op as given) for which the schedule still
        ends by deadline_us; None when it misses the deadline even with `op` taking 0 µs.
        You may use gc.streams.simulate to try durations (on
        gc.streams.Machine(sms=10**6, connections=None): the default machine has 132 SMs and 8
        hardware queues), or reason about the chains of ops through `op`.
    """,
    visible=[Case((ARTICLE_STREAMS, ARTICLE_DURATIONS, {"E": ["B"], "H": ["D"]}, "B", 100.0)),
             Case((ARTICLE_STREAMS, ARTICLE_DURATIONS, {"E": ["B"], "H": ["D"]}, "D", 90.0)),
             Case((ARTICLE_STREAMS, ARTICLE_DURATIONS, {}, "I", 30.0)),
             Case(({"s0": ["x", "y"]}, {"x": 1.5, "y": 2.0}, {}, "x", 4.0))],
    compare=_compare_max_duration,
)


# -- streams and events for a dependency graph -----------------------------------------------------
# A program's copies and kernels form a DAG (each task needs the results of some earlier ones). The
# host must give every task a stream and the events (waits) that guarantee each dependency, without
# adding any ordering the data does not need. The checker: every dependency is guaranteed (stream
# order or events, transitively), events only on tasks issued earlier, and the model's makespan (8
# hardware queues, as CUDA's default) is no longer than the ideal — every task waiting for exactly
# its dependencies and nothing else.

def _compare_dag(what: str, got: Any, expected: list[st.Op], case: Case) -> None:
    tasks, deps = case.args
    if not isinstance(got, (list, tuple)) or not all(isinstance(op, st.Op) for op in got):
        raise CheckFailure(
            f"{what}: expected a list of gc.streams.Op (in issue order), got {type(got).__name__}"
        )
    want = {name: (engine, float(us), int(sms)) for name, engine, us, sms in tasks}
    names = [op.name for op in got]
    if sorted(names) != sorted(want):
        missing, extra = sorted(set(want) - set(names)), sorted(set(names) - set(want))
        raise CheckFailure(
            f"{what}: expected every task once; missing {missing[:6]}, unexpected or repeated "
            f"{sorted(extra + [n for n in set(names) if names.count(n) > 1])[:6]}"
        )
    for op in got:
        engine, us, sms = want[op.name]
        if (
            op.engine != engine
            or abs(op.duration - us) > 1e-9 * max(1.0, us)
            or (engine == "compute" and op.sms != sms)
        ):
            raise CheckFailure(
                f"{what}: task {op.name} must be Op({op.name!r}, stream, {us:g}, {engine!r}"
                + (f", sms={sms})" if engine == "compute" else ")")
                + f", got engine {op.engine!r}, duration {op.duration:g}, sms {op.sms}"
            )
    position = {n: i for i, n in enumerate(names)}
    for op in got:
        later = [w for w in op.waits if position[w] > position[op.name]]
        if later:
            raise CheckFailure(
                f"{what}: {op.name} waits for {later[0]}, which is issued after it: a "
                "cudaStreamWaitEvent on an event not yet recorded waits for nothing. Issue what "
                "you wait for first"
            )
    hb = st.happens_before(got)
    for name, needs in deps.items():
        for d in needs:
            if d not in hb[name]:
                raise CheckFailure(
                    f"{what}: {name} needs the result of {d}, but nothing orders them (neither "
                    f"the same stream with {d} first, nor an event, directly or through other "
                    "ordered tasks): a race"
                )
    # the reference's schedule reaches the ideal on every case (tests/test_lab04_streams.py), so its
    # makespan is the target: the ideal itself (every task on its own stream, unlimited queues) is
    # an answer, and stays on the answer side (grader/answers/lab04_streams.py: dag_target)
    target = st.simulate(expected).makespan
    timeline = st.simulate(got)
    if timeline.makespan > target * (1 + 1e-9):
        n_streams = len({op.stream for op in got})
        raise CheckFailure(
            f"{what}: correct, but the model's makespan is {timeline.makespan:g} µs, expected at"
            f" most {target:g} µs (every task waiting for exactly its dependencies). Something"
            " waits for work it does not need: a task placed behind an unrelated one in its"
            " stream, a surplus event, or "
            + (
                f"{n_streams} streams sharing 8 hardware queues"
                if n_streams > 8
                else "too few streams for kernels that could run side by side"
            )
        )


_DAG_VISIBLE_TASKS = [
    ("in0", "h2d", 20.0, 1),
    ("in1", "h2d", 20.0, 1),
    ("k0", "compute", 50.0, 40),
    ("k1", "compute", 50.0, 40),
    ("sum", "compute", 10.0, 132),
    ("out", "d2h", 20.0, 1),
]
_DAG_VISIBLE_DEPS = {"k0": ["in0"], "k1": ["in1"], "sum": ["k0", "k1"], "out": ["sum"]}
# the answer side's false_dependency_dag(np.random.default_rng(4)): one stream per task (12 streams
# on 8 hardware queues) picks up a false dependency here; following the pipelines reaches the ideal
# (tests/test_lab04_streams.py)
_DAG_FALSE_DEPENDENCY_TASKS = [
    ("kLong", "compute", 200.0, 44),
    ("kTail", "compute", 19.0, 44),
    ("in0", "h2d", 13.0, 1),
    ("in1", "h2d", 10.0, 1),
    ("inC", "h2d", 14.0, 1),
    ("k0", "compute", 29.0, 20),
    ("k1", "compute", 29.0, 20),
    ("out0", "d2h", 5.0, 1),
    ("out1", "d2h", 9.0, 1),
    ("kC1", "compute", 104.0, 44),
    ("kC2", "compute", 91.0, 44),
    ("outC", "d2h", 17.0, 1),
]
_DAG_FALSE_DEPENDENCY_DEPS = {
    "kTail": ["kLong"],
    "k0": ["in0"],
    "k1": ["in1"],
    "out0": ["k0"],
    "out1": ["k1"],
    "kC1": ["inC"],
    "kC2": ["kC1"],
    "outC": ["kC2"],
}

DAG = Problem(
    name="schedule_dag",
    spec="""
        schedule_dag(tasks, deps) -> list of gc.streams.Op, in the order the host issues them
        tasks: [(name, engine, duration_us, sms), ...] in a valid issue order (every task
               after those it needs); engine is "h2d", "compute" or "d2h"; sms = SMs a kernel
               occupies (1 for copies).
        deps:  {name: [names of tasks whose results it needs]}.
        Return one Op(name, stream, duration_us, engine, sms=sms, waits=(...)) per task: choose its
        stream and the events it waits for (waits = tasks of other streams that must finish first).
        Rules the checker enforces:
        - correct: every dependency is guaranteed — the needed task is earlier in the same stream,
          or waited for, directly or through other ordered tasks (an unordered pair is a race);
        - events only on tasks issued earlier in your list (waiting on an event not yet
          recorded waits for nothing);
        - overlapped: gc.streams.simulate(your list) on the default model GPU — 132 SMs, one copy
          engine per direction, and 8 hardware queues (CUDA_DEVICE_MAX_CONNECTIONS; in the model a
          9th stream shares a queue with the 1st: round-robin, as observed — CUDA does not document
          the mapping) — finishes no later than the ideal, where every task waits for exactly its
          dependencies.
    """,
    visible=[
        Case((_DAG_VISIBLE_TASKS, _DAG_VISIBLE_DEPS)),
        Case((_DAG_FALSE_DEPENDENCY_TASKS, _DAG_FALSE_DEPENDENCY_DEPS)),
    ],
    compare=_compare_dag,
)


# -- fix a broken timing snippet -------------------------------------------------------------------

# The stand-in is lab 1's (grader.virtual_clock.Workload, one timing lesson for the course): an
# asynchronous call that queues ``work_s`` on an in-order queue and returns after DISPATCH (its
# launch), a first call that compiles (``first_s``, blocking the caller), load spikes that only ever
# slow a call down (20×, or by half a batch), and a clock that only the work moves — some cases'
# clock ticks every 2 ms, so a call of tens of µs timed alone reads 0 or a whole tick.

X = np.ones(4, np.float32)  # what f is called on (the stand-in ignores it)


def timing_case(
    work_s: float,
    first_s: float,
    repeat: int,
    spikes: tuple[int, ...] = (),
    tick_s: float = 0.0,
    spike_factor: float | None = None,
) -> Case:
    """time_call(f, x, repeat, clock) on an asynchronous Workload (the clock is the workload's,
    added per call); ``spike_factor``: how much slower a spiked call runs (the Workload's default
    when None)."""
    extra = {} if spike_factor is None else {"spike_factor": float(spike_factor)}
    return Case(
        (
            Workload(
                float(work_s),
                first_s=float(first_s),
                asynchronous=True,
                spikes=tuple(spikes),
                tick_s=float(tick_s),
                **extra,
            ),
            X,
            int(repeat),
        )
    )


class _TimingProblem(Problem):
    """time_call's Problem: every call of the student's function gets the case's workload afresh (no
    call made, its first call compiling again, a new clock) and that clock as its 4th argument,
    however often a cell is re-run; a case travels to a grading sandbox as the workload's fields (a
    dataclass)."""

    def call(self, fn: Callable[..., Any], case: Case, limit: float | None = None) -> Any:
        w = case.args[0]
        w.reset()
        return super().call(fn, Case((*case.args, w.clock)), limit)


# steady state, measured / true: a call timed alone and waited for takes its launch (DISPATCH) + its
# work; a batch of calls back to back hides the launches behind the work (the queue never runs dry),
# so a batch measures the work per call. Both are right, with the minimum or the median. The band's
# edges: a batch spans >= 0.2 s, so a 2 ms tick moves it by <= 1 %; an un-waited call (DISPATCH +
# clock reads, ~11 µs) lands below every case's work (>= 20 µs)
STEADY_LO, STEADY_HI = 0.97, 1.03
READS_S = 3e-6  # the virtual clock moves 1 µs at each read: a few reads inside one measurement


def _compare_timing(what: str, got: Any, expected: tuple[float, float], case: Case) -> None:
    w = case.args[0]
    expect_tuple(what, got, "first_seconds, steady_seconds")
    first, work = expected
    for value in got:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise CheckFailure(f"{what}: expected two numbers of seconds, got {got!r}"[:400])
    lo, hi = first - w.tick_s - READS_S, first + w.tick_s + READS_S
    if getattr(w, "calls", 0) and not getattr(getattr(w, "clock", None), "reads", 1) \
            and not (lo <= got[0] <= hi and STEADY_LO * work <= got[1]):
        # judged where the calls ran: the clock handed over saw no read (time.perf_counter,
        # gc.measure, timeit's own)
        raise CheckFailure(
            f"{what}: expected about {show(first)} s and {show(work)} s, got {got!r}. Hint: you"
            " never read the clock you were given (the 4th argument): only f's work moves it, as a"
            " GPU's work shows on the device's timer — time.perf_counter here sees none of it"
        )
    if not lo <= got[0] <= hi:
        raise CheckFailure(
            f"{what} → first call [s]: expected {show(first)} s (compile + launch + work; between"
            f" {show(lo)} and {show(hi)}), got {show(got[0])}. Hint: time the first call on its"
            " own: it includes compiling; wait for its result before you stop the clock"
        )
    lo, hi = STEADY_LO * work, STEADY_HI * (work + DISPATCH) + READS_S
    if lo <= got[1] <= hi:
        return
    if w.tick_s and got[1] < lo or got[1] > hi and w.tick_s and work < w.tick_s:
        hint = (
            f"this clock ticks every {show(w.tick_s)} s and one call takes about {show(work)} s:"
            " timed alone, a call reads as 0 or as one whole tick. Time batches of calls that span"
            " many ticks (grow the batch until it takes at least 0.2 s on clock), wait for each"
            " batch's last result, divide by the batch size"
        )
    elif got[1] < lo:
        hint = ("the call returns before its work is done (it only queues it): wait for the result "
                "(.block_until_ready()) before you stop the clock")
    else:
        hint = (
            "some calls were slowed by other programs (load spikes): the minimum or the median of"
            " the `repeat` measurements ignores them, the mean does not; and don't count the first"
            " (compiling) call"
        )
    raise CheckFailure(
        f"{what} → steady state [s]: expected the time of one call, between {show(lo)} s (its work:"
        f" calls back to back hide their launches) and {show(hi)} s (a call timed alone: launch +"
        f" work), got {show(got[1])}. Hint: {hint}"
    )


class _ArgumentsSeen:
    """The workload as f, counting the calls made on anything but the case's x (jax.jit compiles
    again for an argument of another shape, dtype or type: a timer must time f(x))."""

    def __init__(self, workload: Workload) -> None:
        self.workload, self.others = workload, 0

    def __call__(self, *args: Any) -> Any:
        if len(args) != 1 or args[0] is not X:
            self.others += 1
        return self.workload(*args)


def _timing_method(fn: Callable[..., Any], hidden: bool) -> str:
    """By method, on a fresh workload: the first call timed and waited for before any other call,
    then at least `repeat` more calls, every result waited for (itself, or through a later result of
    the same in-order queue)."""
    repeat = 4 if hidden else 3
    w = Workload(0.004, first_s=0.02, asynchronous=True)
    f = _ArgumentsSeen(w)
    with TIMING.locked(fn):
        fn(f, X, repeat, w.clock)
    if f.others:
        raise CheckFailure(
            f"time_call(f, x, {repeat}, clock) called f {f.others} times on something other than x:"
            " a jitted function traces and compiles again for an argument of another shape, dtype"
            " or type — time f(x), on the x you are given"
        )
    if w.calls < repeat + 1:
        raise CheckFailure(
            f"time_call(f, x, {repeat}, clock) called f {w.calls} times: expected the first call"
            f" plus at least {repeat} timed ones"
        )
    if w.clock.reads < 4:
        raise CheckFailure(
            f"time_call(f, x, {repeat}, clock) read the clock it was given {w.clock.reads} times:"
            " read it (and no other clock) before and after the first call and around every"
            " measurement"
        )
    if w.leftover:
        raise CheckFailure(
            f"time_call(f, x, {repeat}, clock): when you read the clock after the first call, its"
            " work was still running (the call returns before its work is done): wait for its"
            " result (.block_until_ready()) before you stop the clock"
        )
    if w.unwaited():
        raise CheckFailure(
            f"time_call(f, x, {repeat}, clock) never waited for {w.unwaited()} of the {w.calls}"
            " results (nor for any result queued after them): wait for the result before stopping"
            " the clock"
        )
    return f"\n  method: {w.calls} calls, the first timed alone, every result waited for"


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
        raise CheckFailure(
            f"time_call on a real jax.jit function: steady state {steady * 1e6:.0f} µs, but the"
            f" call really takes {truth * 1e6:.0f} µs (gc.measure): the clock stopped before the"
            " work ended"
        )
    return (f"\n  real JAX (640×640 matmuls): first call {first * 1e3:.1f} ms (with compile), "
            f"steady {steady * 1e3:.2f} ms; gc.measure says {truth * 1e3:.2f} ms")


def _timing_after(fn: Callable, hidden: bool) -> str:
    return _timing_method(fn, hidden) + _real_jax_timing(fn, hidden)


TIMING = _TimingProblem(
    name="time_call",
    spec="""
        time_call(f, x, repeat, clock) -> (first_seconds, steady_seconds)
        f is a jitted function: calling it returns at once, when the work is queued, not done
        (the work runs in call order, one call after another, as on a GPU stream); its result has
        .block_until_ready(), which waits for it. clock() returns the time in seconds: read it,
        and no other clock, for every measurement (the checks hand you a clock that only f's work
        moves, as a GPU's work shows on the device's timer; the last visible check hands you
        time.perf_counter and a real jax.jit function).
        first_seconds:  the first call f(x) alone, waited for: compile + launch + run.
        steady_seconds: the time of one later call. Measure `repeat` times (none of them the first
                        call) and return the MINIMUM or the MEDIAN of the `repeat` measurements —
                        both are accepted: other programs on a shared machine only ever slow a call
                        down, never speed one up, so the minimum is the call's own time, robust to
                        any number of slowed runs (but it trusts the luckiest run: wrong where runs
                        really differ, e.g. only some find their data in a cache); the median is
                        robust to fewer than half of the runs slowed (and to a lucky one). The mean
                        is not: one slowed run pulls it up (these checks slow some calls 20×, or
                        stall one for half a batch: another program holding the core).
        Wait for every result you time: an un-waited call measures only its launch and fails.
        A clock has a resolution: some checks hand you a clock that ticks every 2 ms, and a call
        takes tens of µs — timed alone it reads as 0 or as one whole tick. So let each of the
        `repeat` measurements be a BATCH of k calls back to back, waited for through the batch's
        LAST result (the queue runs in order), divided by k: grow k (doubling it, 1, 2, 4, 8, …, or
        as timeit's autorange does, 1, 2, 5, 10, 20, …) until one batch takes at least 0.2 s on
        clock, then time `repeat` batches
        of that size. Back to back, the launches hide behind the work (§4.4), so a batch measures
        a call's work; a call timed alone also pays its launch: both are right (the check accepts
        anything from the work to launch + work, within 3 %).
    """,
    visible=[
        timing_case(250e-6, 0.3, 5),
        timing_case(40e-6, 0.25, 5, spikes=(2, 4)),
        timing_case(30e-6, 0.2, 3, tick_s=2e-3),
        # 1.2 ms calls: batches of 256 reach 0.2 s; after the warm-up and the batches 1 … 256
        # that size them (calls 0 … 511), two calls inside the 2nd and 4th timed batches each
        # stall for half a batch
        timing_case(1.2e-3, 0.3, 5, spikes=(3 * 256 + 37, 5 * 256 + 101), spike_factor=1 + 256 / 2),
    ],
    compare=_compare_timing,
    after=_timing_after,
)


# -- how many tiny launches make overhead dominate? ------------------------------------------------
# The course's command queue (gc.streams.CommandQueue) runs one split of the work: N launches for
# T(N). Finding N by running it for N = 1, 2, … (or bisecting over N with it) costs O(N) launches
# per T(N), and the cases' N reach millions to hundreds of millions: the exercise is to derive T(N)
# in closed form (the queue checks it on small N) and invert it exactly.


def _compare_launches(what: str, got: Any, expected: tuple[int, list[float]], case: Case) -> None:
    ns = case.args[2]
    expect_tuple(what, got, "N, makespans")
    expect_int(
        f"{what} → N",
        got[0],
        expected[0],
        "the smallest N with T(N) > 2·work_us, strictly (where T(N) equals 2·work_us the GPU idles"
        " exactly as long as it works, not longer): N·launch + work/N = 2·work at its larger root,"
        " and N is the first integer past it (a root exactly on an integer is a tie: the next one)",
    )
    makespans = got[1]
    if not hasattr(makespans, "__len__") or len(makespans) != len(expected[1]):
        raise CheckFailure(
            (f"{what} → makespans: expected a list of the {len(expected[1])} makespans T(n) for n"
             f" in {ns}, got {makespans!r}")[:400]
        )
    for n, g, e in zip(ns, makespans, expected[1]):
        expect_close(
            f"{what} → T({n:_}) [µs]",
            g,
            e,
            rtol=1e-9,
            hint=(
                "kernels at least as long as a launch keep the GPU busy from the first launch on (T"
                " = launch + work); shorter ones wait for the host (T = N·launch + work/N)"
            ),
        )


def _launch_report(fn: Callable, hidden: bool) -> str:
    if hidden:
        return ""
    n, _ = fn(1000.0, 4.0, [1])
    big, _ = fn(5e6, 2.5, [1])
    return (
        f"\n  1 ms of work, 4 µs per launch: overhead dominates from {n:,} launches, i.e. kernels"
        f" of {1000.0 / n:.2f} µs — about half the launch cost; 5 s of work, 2.5 µs per launch:"
        f" from {big:,}"
    )


# T(N) == 2·work_us exactly at an integer N (every number exact in binary): N·launch + work/N =
# 2·work with work = 1024, N = 16, launch = 124 (1984 + 64 = 2048); and work = 96, N = 4, launch =
# 42 (168 + 24 = 192)
LAUNCH_TIES = [Case((1024.0, 124.0, [1, 8, 9, 16, 17])), Case((96.0, 42.0, [1, 2, 3, 4, 5]))]

# the spec's bound on N: far beyond a loop over N (or a queue run of N launches)
MAX_LAUNCHES = 10**9


LAUNCHES = Problem(
    name="launches_to_dominate",
    spec="""
        launches_to_dominate(work_us, launch_us, ns) -> (N, makespans)
        work_us of GPU work is split into n equal kernels (work_us / n each), queued one by
        one into one stream.
        The host needs launch_us per launch: kernel i (i = 1..n) is queued at time i·launch_us
        and starts as soon as it is queued and kernel i−1 has finished. The makespan T(n) is
        when kernel n finishes.
        N: the smallest N ≥ 1 for which T(N) > 2·work_us: the GPU then idles longer than it works.
        makespans: [T(n) for n in ns], in µs (ns: a list of kernel counts).
        gc.streams.CommandQueue(launch_us=...) runs this queue, one launch at a time: use it to see
        T(n) for small n and to check your formula. But the test cases split up to minutes of work
        into kernels of a few µs: N and the n in ns reach hundreds of millions (N ≤ 10^9), where
        running the queue — or any loop over the kernels or over N — takes hours. Derive T(n) in
        closed form (two regimes: the GPU is the bottleneck, or the host is), then invert it for N:
        solve for the root, or bisect over N with your formula.
        Ties: where T(N) equals 2·work_us exactly, the GPU idles exactly as long as it works, not
        longer: that N does not count, the answer is a later one. Every test case keeps T(N) and
        T(N − 1) either exactly equal to 2·work_us (exactly representable: floating point computes
        the tie, and its root, exactly) or more than a relative 1e-12 away from it, so rounding
        never decides, whether you evaluate T or compute the root in floating point (check your N
        with T on a few cases: T(N − 1) <= 2·work_us < T(N)).
    """,
    visible=[
        Case((1000.0, 4.0, [1, 100, 250, 251, 499, 500])),
        Case((30.0, 5.0, [1, 2, 6, 7, 11, 12])),
        Case((3.0, 4.0, [1, 2, 10])),
        LAUNCH_TIES[0],
        Case((5e6, 2.5, [1, 10**6, 2 * 10**6, 2 * 10**6 + 1, 3_999_999, 4_000_000])),
    ],
    compare=_compare_launches,
    after=_launch_report,
)


# -- the fewest chunks that meet a deadline --------------------------------------------------------

MAX_CHUNKS = 32  # the spec's bound on the chunk count: a search over every count stays fast


def _own_pipeline(what: str, ops: Any, n_streams: int, launch_us: float) -> None:
    """The student's own pipeline, whatever its chunk count: no more streams than given, chunk i on
    the stream of i % n_streams (what bounds device memory to n_streams chunks), and each chunk's
    copy-in, kernel and copy-out ordered by stream order or events — guaranteed, not only on the
    timeline (a race is named as one, not as a wrong chunk count)."""
    if not isinstance(ops, (list, tuple)) or not ops or not all(isinstance(o, st.Op) for o in ops):
        return
    streams = {op.stream for op in ops}
    if len(streams) > n_streams:
        raise CheckFailure(
            f"{what}: expected at most {n_streams} streams, got {len(streams)}: the spec puts all"
            " three ops of chunk i (copy in, kernel, copy out) on ONE stream, stream i % n_streams"
            " — not a stream per engine"
        )
    names = {op.name for op in ops}
    stream_of = {op.name: op.stream for op in ops}
    chunks = 0
    while {f"h2d{chunks}", f"k{chunks}", f"d2h{chunks}"} <= names:
        chunks += 1
    slot: dict[int, Any] = {}  # i % n_streams -> the stream its chunks use
    for i in range(chunks):
        mine = {stream_of[f"{p}{i}"] for p in ("h2d", "k", "d2h")}
        want = slot.setdefault(i % n_streams, next(iter(mine)))
        if mine != {want} or list(slot.values()).count(want) > 1:
            raise CheckFailure(
                f"{what}: chunk {i}'s ops run on {sorted(map(str, mine))}: the spec puts all three"
                f" ops of chunk i on ONE stream, stream i % n_streams, a different one for each"
                " i % n_streams (a stream per engine does not bound how many chunks are on the"
                " device at once)"
            )
    try:
        before = st.happens_before(list(ops))
    except Exception:  # an ill-formed list: the checks below name what is wrong with it
        return
    for i in range(chunks):
        if f"h2d{i}" not in before[f"k{i}"] or f"k{i}" not in before[f"d2h{i}"]:
            raise CheckFailure(
                f"{what}: chunk {i} may be computed or copied back before its data arrived: keep"
                f" h2d{i}, k{i}, d2h{i} in order (same stream, or events)"
            )


def _compare_chunks(
    what: str, got: Any, expected: tuple[int | None, list[st.Op]], case: Case
) -> None:
    nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us = case.args
    n_want, want_ops = expected
    expect_tuple(what, got, "n_chunks, ops")
    n_got, ops = got
    if n_want is None:
        if n_got is not None or len(ops):
            raise CheckFailure(
                f"{what}: expected (None, []): no chunk count up to {MAX_CHUNKS} finishes within "
                f"{target_us:g} µs, got n_chunks = {n_got!r} and {len(ops)} ops"
            )
        return
    _own_pipeline(what, ops, n_streams, launch_us)  # a race or too many streams, named first
    tie = st.simulate(want_ops, launch_us=launch_us).makespan == target_us
    if tie and isinstance(n_got, int) and n_got > n_want:
        raise CheckFailure(
            f"{what} → n_chunks: expected {n_want}, got {n_got}: {n_want} chunks finish at exactly"
            f" {target_us:g} µs, and a makespan equal to the target counts (≤, not <)"
        )
    hint = (
        "try every chunk count from 1 up and keep the first whose pipeline's makespan, launches"
        " included (simulate(ops, launch_us=launch_us)), is within target_us: more chunks overlap"
        " more but each one costs three launches, so the makespan falls, then rises again"
    )
    if n_got is None:  # the search ran, and no count met the target in the student's pipelines
        one = st.simulate(st.on_one_stream(want_ops), launch_us=launch_us).makespan
        hint = (
            f"your search found no count within {target_us:g} µs, yet {n_want} chunks on"
            f" {n_streams} streams finish at"
            f" {st.simulate(want_ops, launch_us=launch_us).makespan:g} µs"
            + (f" (on one stream they take {one:g} µs)" if one > target_us else "")
            + ": the makespan is not monotonic in the chunk count (it falls, then rises again: each"
            " chunk costs three launches), so a bisection can miss the smallest count — try every"
            " count from 1 up; and build each candidate's pipeline with chunk i on stream i %"
            f" n_streams, all {n_streams} streams (n_streams is an argument: fewer streams overlap"
            " less), its makespan simulated with launch_us"
        )
    expect_int(f"{what} → n_chunks", n_got, n_want, hint)
    if not isinstance(ops, (list, tuple)) or not all(isinstance(op, st.Op) for op in ops):
        raise CheckFailure(
            f"{what} → ops: expected a list of gc.streams.Op, got {type(ops).__name__}"
        )
    want = {op.name: op for op in want_ops}
    have = {op.name: op for op in ops}
    if sorted(have) != sorted(want) or len(have) != len(ops):
        missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
        raise CheckFailure(
            f"{what} → ops: expected h2d<i>, k<i>, d2h<i> for i = 0..{n_want - 1}, once each; "
            f"missing {missing[:6]}, unexpected {extra[:6]}"
        )
    for name, op in want.items():
        g = have[name]
        if g.engine != op.engine:
            raise CheckFailure(f"{what}: op {name} must use engine {op.engine!r}, got {g.engine!r}")
        expect_close(f"{what} → duration of {name} [µs]", g.duration, op.duration, rtol=1e-9,
                     hint="chunk i has nbytes // n bytes, plus one for the first nbytes % n chunks")
        if op.engine == "compute" and g.sms != op.sms:
            raise CheckFailure(
                f"{what}: kernel {name} must occupy all {op.sms} SMs, got sms={g.sms}"
            )
        if op.engine != "compute" and g.nbytes != op.nbytes:
            raise CheckFailure(
                f"{what}: copy {name} must say how many bytes it moves, nbytes={op.nbytes} (the "
                f"chunk's size), got nbytes={g.nbytes!r}: on a GPU that is what it copies"
            )
    # streams and each chunk's order were checked on the student's own pipeline (_own_pipeline)
    timeline = st.simulate(ops, launch_us=launch_us)
    limit = min(target_us, st.simulate(want_ops, launch_us=launch_us).makespan * (1 + 1e-9))
    if timeline.makespan > limit:
        raise CheckFailure(
            f"{what}: the right chunk count, but your ops finish at {timeline.makespan:g} µs"
            f" (launches of {launch_us:g} µs included), expected at most {limit:g} µs: chunk i on"
            " stream i % n_streams, issued chunk by chunk (h2d, kernel, d2h)"
        )


def _gpu_overlap(fn: Callable, hidden: bool) -> str:
    """On a GPU (visible test): the student's pipeline run for real, against the same ops on one
    stream."""
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
        raise CheckFailure(
            f"fewest_chunks on the GPU: the model predicts {predicted:.2f}× over one stream, the "
            f"GPU measured only {measured:.2f}× (CUDA events)"
        )
    return (
        f"\n  on this GPU: your {n} chunks ran {measured:.2f}× faster than the same ops on one"
        f" stream (model: {predicted:.2f}×)"
    )


CHUNKS = Problem(
    name="fewest_chunks",
    spec="""
        fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us)
            -> (n_chunks, ops)
        The classic chunked pipeline with n chunks: chunk i has nbytes // n bytes, one more for
        the first nbytes % n chunks, and runs on stream i % n_streams; per chunk three ops,
        issued chunk by chunk:
            Op(f"h2d{i}", stream, µs, "h2d", nbytes=size)      size / h2d_Bps seconds
            Op(f"k{i}", stream, µs, "compute", sms=132)        size / compute_Bps seconds
            Op(f"d2h{i}", stream, µs, "d2h", nbytes=size)      size / d2h_Bps seconds
        (durations in µs; the kernel fills all 132 SMs). Each op costs the host launch_us to issue:
        the pipeline's makespan is gc.streams.simulate(ops, launch_us=launch_us).makespan. (A
        stream's next copy-in waits for its copy-out, so at most n_streams chunks occupy device
        memory at once.) Return the smallest n (1 ≤ n ≤ 32) whose pipeline finishes within target_us
        (makespan ≤ target_us: a makespan equal to the target counts), and that pipeline's ops in
        issue order; (None, []) when no n up to 32 does.
    """,
    # no launch cost; a remainder of 3 bytes; launches that make the makespan rise again from 5
    # chunks on (only the smallest count fits: a bisection over 1..32 misses it); a target no count
    # reaches; a target equal to 4 chunks' makespan (every duration a dyadic number of µs, so the
    # tie is exact in any order of computing: "within" includes the target)
    visible=[Case((2 * 10**6, 2, 25e9, 50e9, 25e9, 0.0, 130.0)),
             Case((100 * 10**6 + 3, 3, 25e9, 40e9, 20e9, 5.0, 8000.0)),
             Case((8 * 10**6, 2, 25e9, 50e9, 25e9, 30.0, 540.0)),
             Case((8 * 10**6, 3, 25e9, 50e9, 25e9, 20.0, 400.0)),
             Case((2**24, 2, 2.0**30, 2.0**31, 2.0**30, 8.0, 23445.5))],
    compare=_compare_chunks,
    after=_gpu_overlap,
)

problems = {p.name: p for p in (MAX_DURATION, DAG, TIMING, LAUNCHES, CHUNKS)}
