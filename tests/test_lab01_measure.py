"""Lab 1's measuring exercises, checked without nbgrader: the timing workloads behave like JAX/CuPy calls, a correct
timer on the clock it is handed passes on every seed (with the median or the minimum), the classic mistakes fail (an
un-waited warm-up too, as in labs 4 and 6; another clock, the course's gc.measure however loaded); explain_point's
hidden cases cover every verdict and its boundaries on every seed; the redesigned
inverse exercises (max_batch_within, min_size_for_fraction) grade their ties on every seed."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

import gpucourse as gc
from grader.answers import lab01_blas_roofline as answers
from grader import virtual_clock as vclock
from grader.checks import CheckFailure
from grader.labs import lab01_blas_roofline as lab
from grader.problem import Case

TIME_CALL, EXPLAIN = lab.problems["time_call"], lab.problems["explain_point"]
assert all(p.has_answers() for p in lab.problems.values())  # lab 1 is split: bind its references and generators


def autorange(run_batch) -> int:
    """timeit's autorange: 1, 2, 5, 10, 20, 50, ... calls until one batch takes at least 0.2 s."""
    k = 1
    while run_batch(k) < 0.2:
        k = k * 5 // 2 if str(k)[0] == "2" else k * 2
    return k


def timer(warmup=True, wait=True, stat=np.median, batch=True):
    """A timer with one choice changed at a time. ``batch``: each of the `repeat` measurements is a batch of calls
    sized by autorange (a coarse clock's cases need it); ``batch=False``: one call per measurement."""
    def time_call(fn, *args, clock, repeat=5):
        if warmup:
            gc.block(fn(*args))

        def run(k):
            start = clock()
            for _ in range(k):
                out = fn(*args)
            if wait:
                gc.block(out)
            return (clock() - start) / k

        k = autorange(lambda k: run(k) * k) if batch else 1
        return float(stat([run(k) for _ in range(repeat)]))

    return time_call


def without_coarse_clocks(cases):
    """The cases whose clock is exact: where a one-call-per-measurement timer's other mistakes show by name."""
    return [c for c in cases if not c.args[0].tick_s]


def test_workloads_behave_like_asynchronous_calls():
    """On the workload's virtual clock, exactly: compiling blocks the caller, the work is only queued (the call
    returns after DISPATCH), waiting runs the clock to the result, the queue runs in order; nothing sleeps."""
    w = lab.Workload(0.02, first_s=0.05, asynchronous=True)
    clock = w.clock
    t0, real0 = clock.now, time.perf_counter()
    pending = w()
    assert clock.now - t0 == pytest.approx(0.05 + lab.DISPATCH) and w.unwaited() == 1  # compiled; work queued
    gc.block(pending)
    assert clock.now - t0 == pytest.approx(0.05 + lab.DISPATCH + 0.02) and w.unwaited() == 0  # compile + work
    a, b = w(), w()  # queued back to back: waiting for the second waits for both
    t1 = clock.now
    b.block_until_ready()
    assert clock.now - t1 == pytest.approx(2 * 0.02 - lab.DISPATCH) and w.calls == 3 and w.unwaited() == 0
    c = w()
    assert w.unwaited() == 1  # queued after b: waiting for b did not wait for it
    np.asarray(c)  # reading the value on the host waits for it too
    assert w.unwaited() == 0
    w.reset()
    assert w.calls == 0 and w.unwaited() == 0 and w.clock is not clock  # a fresh clock
    sync = lab.Workload(0.01, spikes=(1,))
    t2 = sync.clock.now
    assert (sync(), sync()) == pytest.approx((0.01, 0.2)) and sync.clock.now - t2 == pytest.approx(0.21)  # a spike
    assert sync() == pytest.approx(0.01) and sync.clock.now - t2 == pytest.approx(0.22)  # never faster than its work
    assert time.perf_counter() - real0 < 0.05  # nothing slept
    assert "asynchronous" in repr(w) and "slowed 20×" in repr(sync)


def test_the_timer_is_handed_the_workloads_clock_and_only_that_clock_sees_the_work():
    """Issue 20: the check passes the workload's virtual clock as ``clock``; each read counts and moves it on (a
    spin-wait ends); the wall clock sees microseconds of Python only, so a timer reading time.perf_counter (or
    time.process_time) is told to read the clock it was given — not blamed on its synchronization."""
    w = lab.Workload(0.01, asynchronous=True)
    seen = []
    lab.TIME_CALL.call(lambda fn, *args, clock, repeat=5: seen.append((fn, clock)) or 0.0, Case((w,), {"repeat": 3}))
    assert seen[0][0] is w and seen[0][1] is w.clock and repr(w.clock) == "<virtual clock [s]>"
    before, reads = w.clock(), w.clock.reads
    assert w.clock() == before + vclock.READ_STEP and w.clock.reads == reads + 1
    for other in (time.perf_counter, time.process_time):
        wrong = timer()
        def on_another_clock(fn, *args, clock, repeat=5, other=other):  # noqa: E306
            return wrong(fn, *args, clock=other, repeat=repeat)

        with pytest.raises(CheckFailure, match=r"never read the clock you were given") as info:
            TIME_CALL.check(on_another_clock)
        assert "block" not in str(info.value).split("Hint:")[1]


def test_timeit_spin_waits_and_stopwatch_classes_on_the_given_clock_pass():
    """Correct timers in other shapes: timeit with timer=clock, a stopwatch class holding the clock, a 1 ms pause
    between runs spun on the clock (each read moves it on: the loop ends)."""
    import timeit

    def with_timeit(fn, *args, clock, repeat=5):
        gc.block(fn(*args))
        t = timeit.Timer(lambda: gc.block(fn(*args)), timer=clock)
        number, _ = t.autorange()
        return float(np.median(t.repeat(repeat=repeat, number=number))) / number

    class Stopwatch:
        def __init__(self, clock):
            self.clock = clock

        def lap(self, f, k):
            t0 = self.clock()
            for _ in range(k):
                out = f()
            gc.block(out)
            return (self.clock() - t0) / k

    def with_stopwatch(fn, *args, clock, repeat=5):
        gc.block(fn(*args))
        watch = Stopwatch(clock)
        k = autorange(lambda k: watch.lap(lambda: fn(*args), k) * k)
        return float(np.median([watch.lap(lambda: fn(*args), k) for _ in range(repeat)]))

    def with_cool_down(fn, *args, clock, repeat=5):
        gc.block(fn(*args))

        def run(k):
            deadline = clock() + 1e-4
            while clock() < deadline:  # a pause between runs (each read moves the clock on: the loop ends)
                pass
            t0 = clock()
            for _ in range(k):
                out = fn(*args)
            gc.block(out)
            return (clock() - t0) / k

        k = autorange(lambda k: run(k) * k)
        return float(np.median([run(k) for _ in range(repeat)]))

    for good in (with_timeit, with_stopwatch, with_cool_down):
        TIME_CALL.check(good)
        TIME_CALL.check(good, hidden=True)

    for good in (timer(), timer(stat=np.min)):
        TIME_CALL.check(good)
        TIME_CALL.check(good, hidden=True)

    def answers_without_a_clock(fn, *args, clock, repeat=5):
        for _ in range(repeat + 1):
            gc.block(fn(*args))
        return 0.01

    with pytest.raises(CheckFailure, match=r"you never read the clock you were given"):
        TIME_CALL.check(answers_without_a_clock)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_correct_timer_passes_and_the_classic_mistakes_fail(seed):
    cases = TIME_CALL.hidden(np.random.default_rng(seed))
    problem = type(TIME_CALL)(TIME_CALL.name, TIME_CALL.spec, TIME_CALL.reference, TIME_CALL.visible,  # resets workloads
                              lambda rng: cases, TIME_CALL.compare, TIME_CALL.after)
    problem.check(timer(), hidden=True)
    problem.check(timer(stat=np.min), hidden=True)  # the minimum is right too: nothing runs faster than its work
    assert any(c.args[0].tick_s for c in cases)
    with pytest.raises(CheckFailure, match="ticks every"):  # one call per measurement, on a coarse clock
        problem.check(timer(batch=False), hidden=True)
    exact = type(TIME_CALL)(TIME_CALL.name, TIME_CALL.spec, TIME_CALL.reference, without_coarse_clocks(TIME_CALL.visible),
                            lambda rng: without_coarse_clocks(cases), TIME_CALL.compare, TIME_CALL.after)
    for wrong, why in ((timer(wait=False, batch=False), "wait for the result"),
                       (timer(warmup=False, batch=False), "compilation"),
                       (timer(stat=np.mean, batch=False), "the mean does not")):
        with pytest.raises(CheckFailure, match=why):
            exact.check(wrong, hidden=True)
    with pytest.raises(CheckFailure, match="wait for the result"):  # batched, never waited for
        problem.check(timer(wait=False), hidden=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_minimum_and_the_median_both_pass_visibly_and_hidden(seed):
    """Review 2026-12-06 G1: the course, gc.confirm_faster and lab 6 keep the best run; repeated identical calls are
    only ever slowed down, so lab 1 takes the minimum as it takes the median (no "lucky" runs faster than the work)."""
    assert not any(hasattr(c.args[0], "lucky") for c in TIME_CALL.visible)
    cases = TIME_CALL.hidden(np.random.default_rng(seed))
    problem = type(TIME_CALL)(TIME_CALL.name, TIME_CALL.spec, TIME_CALL.reference, TIME_CALL.visible,
                              lambda rng: cases, TIME_CALL.compare, TIME_CALL.after)
    for stat in (np.min, np.median):
        problem.check(timer(stat=stat))
        problem.check(timer(stat=stat), hidden=True)


def test_a_warm_up_not_waited_for_fails_as_in_labs_4_and_6():
    """Review 2026-12-06 G1: a warm-up whose result is never waited for leaves its work in the first timed run; labs
    4 and 6 reject it, and so does lab 1's method check (visible and hidden), by name."""
    unwaited_warmup = timer(warmup=False)

    def unwaited_warmup(fn, *args, clock, repeat=5, batched=timer(warmup=False)):  # noqa: F811
        fn(*args)  # the warm-up, never waited for
        return batched(fn, *args, clock=clock, repeat=repeat)

    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="its work was still running"):
            TIME_CALL.check(unwaited_warmup, hidden=hidden)


def test_the_method_check_needs_a_warm_up_and_every_result_waited_for():
    def no_warmup(fn, *args, clock, repeat=5):  # lands in the band (median), but never discards a run
        times = []
        for _ in range(repeat):
            start = clock()
            gc.block(fn(*args))
            times.append(clock() - start)
        return float(np.median(times))

    def waits_for_the_last_only(fn, *args, clock, repeat=5):
        gc.block(fn(*args))
        start = clock()
        outs = [fn(*args) for _ in range(repeat)]
        gc.block(outs[-1])
        return (clock() - start) / repeat

    def never_waits(fn, *args, clock, repeat=5):
        fn(*args)
        start = clock()
        for _ in range(repeat):
            fn(*args)
        return (clock() - start) / repeat

    with pytest.raises(CheckFailure, match="warm-up"):
        lab._timing_method(no_warmup, hidden=False)
    with pytest.raises(CheckFailure, match="still running"):  # its warm-up first: not waited for either
        lab._timing_method(never_waits, hidden=False)
    # the work runs in order, one call after another: waiting for the last result of a batch waits for all of it,
    # so the method check accepts it (the value check judges the statistic: a batch's mean is not a median)
    assert "every result waited for" in lab._timing_method(waits_for_the_last_only, hidden=False)


# Correct timers a student may write, as notebook cells with their own globals: each must get full marks.
AUTORANGE_SOURCE = '''def autorange(run_batch):
    k = 1
    while run_batch(k) < 0.2:
        k = k * 5 // 2 if str(k)[0] == "2" else k * 2
    return k
'''

CORRECT_TIMERS = {
    "timeit autorange + repeat with timer=clock, median": """
import timeit
import numpy as np
import gpucourse as gc
def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    t = timeit.Timer(lambda: gc.block(fn(*args)), timer=clock)
    number, _ = t.autorange()
    return float(np.median(t.repeat(repeat=repeat, number=number))) / number
""",
    "jax.block_until_ready on each call, statistics.median of batches": """
import statistics
import jax
AUTORANGE
def time_call(fn, *args, clock, repeat=5):
    jax.block_until_ready(fn(*args))
    def run(k):
        t0 = clock()
        for _ in range(k):
            jax.block_until_ready(fn(*args))
        return clock() - t0
    k = autorange(run)
    return statistics.median(run(k) / k for _ in range(repeat))
""",
    "np.asarray(out) of the batch's last result waits for the batch, minimum": """
import numpy as np
AUTORANGE
def time_call(fn, *args, clock, repeat=5):
    np.asarray(fn(*args))
    def run(k):
        t0 = clock()
        outs = [fn(*args) for _ in range(k)]
        np.asarray(outs[-1])
        return clock() - t0
    k = autorange(run)
    return min(run(k) / k for _ in range(repeat))
""",
    "jax.device_get of the last result, batch doubled until 0.5 s, median": """
import numpy as np
import jax
def time_call(fn, *args, clock, repeat=5):
    jax.device_get(fn(*args))
    def run(k):
        t0 = clock()
        for _ in range(k):
            out = fn(*args)
        jax.device_get(out)
        return clock() - t0
    k = 1
    while run(k) < 0.5:
        k *= 2
    return float(np.median([run(k) / k for _ in range(repeat)]))
""",
    "median of batches, blocking on the list of all results": """
import numpy as np
import jax
AUTORANGE
def time_call(fn, *args, clock, repeat=5):
    jax.block_until_ready(fn(*args))
    def run(k):
        t0 = clock()
        jax.block_until_ready([fn(*args) for _ in range(k)])
        return clock() - t0
    k = autorange(run)
    return float(np.median([run(k) / k for _ in range(repeat)]))
""",
}
CORRECT_TIMERS = {k: v.replace("AUTORANGE\n", AUTORANGE_SOURCE) for k, v in CORRECT_TIMERS.items()}


@pytest.mark.parametrize("method", sorted(CORRECT_TIMERS))
def test_every_correct_timing_method_gets_full_marks(method):
    namespace = {}
    exec(compile(CORRECT_TIMERS[method], "<student cell>", "exec"), namespace)
    fn = namespace["time_call"]
    TIME_CALL.check(fn)
    TIME_CALL.check(fn, hidden=True)


# Wrong timers, as notebook cells: each must lose marks, with a message that names its mistake.
WRONG_TIMERS = {
    # review 2026-12-06 G1: compiling blocks the call, but its queued work is still running when the timing starts
    # (labs 4 and 6 reject it too)
    "warm-up discarded without waiting, median of batches": ("""
import numpy as np
import gpucourse as gc
AUTORANGE
def time_call(fn, *args, clock, repeat=5):
    fn(*args)  # warm-up: compiles; its result is discarded
    def run(k):
        t0 = clock()
        for _ in range(k):
            out = fn(*args)
        gc.block(out)
        return clock() - t0
    k = autorange(run)
    return float(np.median([run(k) / k for _ in range(repeat)]))
""", "still running"),
    "batches, waits for the FIRST result only": ("""
import numpy as np
import gpucourse as gc
AUTORANGE
def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    def run(k):
        t0 = clock()
        outs = [fn(*args) for _ in range(k)]
        gc.block(outs[0])
        return clock() - t0
    k = autorange(run)
    return float(np.median([run(k) / k for _ in range(repeat)]))
""", "wait for the result|never waited"),
    "timeit autorange without waiting": ("""
import timeit
import numpy as np
def time_call(fn, *args, clock, repeat=5):
    fn(*args)
    t = timeit.Timer(lambda: fn(*args), timer=clock)
    number, _ = t.autorange()
    return float(np.median(t.repeat(repeat=repeat, number=number))) / number
""", "wait for the result|never waited|still running"),
    "one batch including the first (compiling) call": ("""
import jax
def time_call(fn, *args, clock, repeat=5):
    t0 = clock()
    jax.block_until_ready([fn(*args) for _ in range(repeat)])
    return (clock() - t0) / repeat
""", "compilation|warm-up"),
    "the right method on time.perf_counter, not the clock given": ("""
import time
import numpy as np
import gpucourse as gc
AUTORANGE
def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    def run(k):
        t0 = time.perf_counter()
        for _ in range(k):
            out = fn(*args)
        gc.block(out)
        return time.perf_counter() - t0
    k = autorange(run)
    return float(np.median([run(k) / k for _ in range(repeat)]))
""", "never read the clock you were given"),
    "timeit with its default timer": ("""
import timeit
import numpy as np
import gpucourse as gc
def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    t = timeit.Timer(lambda: gc.block(fn(*args)))
    number, _ = t.autorange()
    return float(np.median(t.repeat(repeat=repeat, number=number))) / number
""", "never read the clock you were given"),
    "one waited-for call per measurement on a coarse clock": ("""
import numpy as np
import gpucourse as gc
def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    times = []
    for _ in range(repeat):
        t0 = clock()
        gc.block(fn(*args))
        times.append(clock() - t0)
    return float(np.median(times))
""", "Hint: this clock ticks every"),
}
WRONG_TIMERS = {k: (v.replace("AUTORANGE\n", AUTORANGE_SOURCE), why) for k, (v, why) in WRONG_TIMERS.items()}


@pytest.mark.parametrize("method", sorted(WRONG_TIMERS))
def test_every_wrong_timing_method_loses_marks(method):
    source, why = WRONG_TIMERS[method]
    namespace = {}
    exec(compile(source, "<student cell>", "exec"), namespace)
    with pytest.raises(CheckFailure, match=why):
        TIME_CALL.check(namespace["time_call"])
    with pytest.raises(CheckFailure, match=why):
        TIME_CALL.check(namespace["time_call"], hidden=True)


def _pasted_measure() -> dict:
    """gc.timing.measure's source pasted into a notebook cell, unchanged."""
    import inspect

    namespace = {}
    exec("import math, sys, time\nfrom gpucourse.backend import get_backend\n"
         "from gpucourse.timing import Timing, block\n" + inspect.getsource(gc.timing.measure), namespace)
    return namespace


def test_the_course_timer_measures_the_wrong_clock_however_it_is_loaded():
    """Issue 20: gc.measure is the course's instrument in every notebook and stays installed, unlocked; it reads
    time.perf_counter, on which the stand-ins' work never shows — called directly, loaded a second time from its
    file, or pasted, it fails visibly and hidden, and the message says which clock to read."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("gpucourse.timing_again", gc.timing.__file__)  # relative imports
    again = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = again  # as the importlib recipe does (its dataclass looks its module up)
    spec.loader.exec_module(again)
    assert not TIME_CALL.forbid
    for measure in (gc.measure, gc.timing.measure, again.measure, _pasted_measure()["measure"]):
        for stat in ("median", "best"):
            def lazy(fn, *args, clock, repeat=5, measure=measure, stat=stat):
                return getattr(measure(fn, *args, warmup=1, repeat=repeat), stat)

            for hidden in (False, True):
                with pytest.raises(CheckFailure, match="never read the clock you were given"):
                    TIME_CALL.check(lazy, hidden=hidden)


@pytest.mark.parametrize("seed", range(8))
def test_explain_hidden_cases_cover_every_verdict_and_the_boundaries(seed):
    cases = EXPLAIN.hidden(np.random.default_rng(seed))
    verdicts = Counter(EXPLAIN.reference(*c.args) for c in cases)
    assert set(verdicts) == set(lab.EXPLANATIONS) and min(verdicts.values()) >= 2
    assert any(c.args[5] == c.args[6] for c in cases), "working set exactly the cache size"
    ridge_ties = [c for c in cases if c.args[0] / c.args[1] == c.args[3] / c.args[4]]
    assert ridge_ties and all(EXPLAIN.reference(*c.args) == "compute-bound" for c in ridge_ties)


def test_explain_point_reference_on_hand_made_points():
    peak, bw, cache = 100e9, 10e9, 32e6  # ridge 10 FLOP/byte
    assert answers.explain_point(1e9, 1e9, 0.2, peak, bw, 1e9, cache) == "memory-bound"  # 5 of 10 GB/s
    assert answers.explain_point(1e12, 1e9, 20.0, peak, bw, 1e9, cache) == "compute-bound"  # 50 of 100 GFLOP/s
    assert answers.explain_point(1e9, 1e9, 0.05, peak, bw, 1e6, cache) == "cache"  # 20 GB/s from 1 MB
    assert answers.explain_point(1e9, 1e9, 0.05, peak, bw, 1e9, cache) == "impossible"  # 20 GB/s from 1 GB
    assert answers.explain_point(1e12, 1e9, 5.0, peak, bw, 1e6, cache) == "impossible"  # 200 GFLOP/s > peak
    # review 2026-12-06 G2: near the cache size a cache still explains part of it — up to 1 / (1 − cache / ws)
    assert answers.explain_point(1e9, 1e9, 0.05, peak, bw, 40e6, cache) == "cache"  # 2× from 1.25× the cache (≤ 5×)
    assert answers.explain_point(1e9, 1e9, 0.05, peak, bw, 64e6, cache) == "cache"  # 2× from 2× the cache: a tie
    assert answers.explain_point(1e9, 1e9, 0.05, peak, bw, 96e6, cache) == "impossible"  # 2× from 3× (≤ 1.5×)


@pytest.mark.parametrize("seed", range(8))
def test_a_hard_cut_at_the_cache_size_loses_on_every_seed(seed):
    """The old rule ("does not fit ⇒ impossible") and a fixed margin (2× the cache) both lose on every seed."""
    def hard_cut(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes, limit=1.0):
        intensity, achieved = flops / nbytes, flops / seconds
        if achieved > peak_flops:
            return "impossible"
        if achieved > intensity * bandwidth:
            return "cache" if working_set <= limit * cache_bytes else "impossible"
        return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"

    assert _fails_hidden(EXPLAIN, hard_cut, seed)
    assert _fails_hidden(EXPLAIN, lambda *a: hard_cut(*a, limit=2.0), seed)


def _fails_hidden(problem, fn, seed) -> bool:
    """True when ``fn`` loses a hidden case of ``problem`` drawn with ``seed``."""
    for case in problem.hidden(np.random.default_rng(seed)):
        try:
            problem.compare(problem.name, fn(*case.args, **case.kwargs), problem.reference(*case.args, **case.kwargs),
                            case)
        except CheckFailure:
            return True
    return False


@pytest.mark.parametrize("seed", range(12))
def test_an_answer_that_never_checks_the_compute_roof_loses_on_every_seed(seed):
    """The lesson is "above the compute roof nothing explains it": checking only the DRAM roof (a point above the
    peak is then 'cache' when it fits, or 'compute-bound' at a high intensity) must lose on every student's seed."""
    def no_peak(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
        intensity, achieved = flops / nbytes, flops / seconds
        if achieved > intensity * bandwidth:
            return "cache" if achieved * (1 - cache_bytes / working_set) <= intensity * bandwidth else "impossible"
        return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"

    assert _fails_hidden(EXPLAIN, no_peak, seed)
    cases = EXPLAIN.hidden(np.random.default_rng(seed))
    above_peak_fits = [c for c in cases if c.args[0] / c.args[2] > c.args[3] and c.args[5] <= c.args[6]]
    ridge = [c.args[3] / c.args[4] for c in above_peak_fits]
    assert any(c.args[0] / c.args[1] < r for c, r in zip(above_peak_fits, ridge))
    assert any(c.args[0] / c.args[1] >= r for c, r in zip(above_peak_fits, ridge))


@pytest.mark.parametrize("seed", range(12))
def test_ties_are_graded_on_every_seed(seed):
    """max_batch_within: a call that takes exactly the budget meets it, 'compute' on a tie between the roofs;
    min_batch_compute_bound: "reaches" the ridge includes equality; min_size_for_fraction: reaching the fraction
    exactly counts."""
    def over_at_budget(*args):
        got = answers.max_batch_within(*args)
        d_in, d_out, act, weight, peak, bw, budget = args
        s, w = np.dtype(act).itemsize, np.dtype(weight).itemsize
        if got is not None and max(2 * got[0] * d_in * d_out / peak,
                                   (s * got[0] * (d_in + d_out) + w * d_in * d_out) / bw) == budget:
            return (got[0] - 1, got[1]) if got[0] > 1 else None
        return got

    def tie_to_memory(*args):
        got = answers.max_batch_within(*args)
        d_in, d_out, act, weight, peak, bw, budget = args
        s, w = np.dtype(act).itemsize, np.dtype(weight).itemsize
        if got is not None and 2 * got[0] * d_in * d_out / peak == (s * got[0] * (d_in + d_out) + w * d_in * d_out) / bw:
            return got[0], "memory"
        return got

    def strictly_past(d_in, d_out, dtype, peak_flops, bandwidth):
        b = answers.min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth)
        s, ridge = np.dtype(dtype).itemsize, peak_flops / bandwidth
        if b is not None and 2 * b * d_in * d_out / (s * (b * d_in + d_in * d_out + b * d_out)) == ridge:
            b += 1
        return b

    def strictly_above(op, dtype, peak, bw, t0, fraction):
        n = answers.min_size_for_fraction(op, dtype, peak, bw, t0, fraction)
        flops, elements = (2 * n * n, n * n + 2 * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        t = max(flops / peak, elements * np.dtype(dtype).itemsize / bw)
        return n + 1 if t / (t0 + t) == fraction else n

    for wrong, name in ((over_at_budget, "max_batch_within"), (tie_to_memory, "max_batch_within"),
                        (strictly_past, "min_batch_compute_bound"), (strictly_above, "min_size_for_fraction")):
        assert _fails_hidden(lab.problems[name], wrong, seed), (name, wrong.__name__)
    for wrong, name in ((over_at_budget, "max_batch_within"), (strictly_past, "min_batch_compute_bound"),
                        (strictly_above, "min_size_for_fraction")):
        with pytest.raises(CheckFailure):
            lab.problems[name].check(wrong)  # the visible cases show the rule too


def test_no_installed_helper_answers_the_redesigned_exercises():
    """Issue 20: course/01 counts the square GEMM only (no axpy, gemv or general GEMM counts), and the roofline's
    installed helpers (Roofline.bound, .fraction, gc.datapath.roofline_time) answer no exercise in one call:
    the exercises they answered are inverse problems now (tests/attacks/lab01_blas_roofline.py grades the rest)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    course = (root / "course/01_blas_roofline.py").read_text()
    assert '"axpy"' not in course and "def cost(" not in course and "def square_gemm_counts(" in course
    assert {"max_batch_within", "min_size_for_fraction"} <= set(lab.problems)
    assert not {"predict_time", "roof_fraction"} & set(lab.problems)


def test_the_your_machine_cache_gemv_is_timed_as_in_section_1():
    """Review r2 finding 5: a single 512² gemv (~25 µs) flips between roofs with load; the lab's ungraded "Your
    machine" cell times it as §1 does, 32 calls back to back in one run (gemv_op's calls)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    lab_src = (root / "solutions/lab01_blas_roofline/lab01_blas_roofline.py").read_text()
    course_src = (root / "course/01_blas_roofline.py").read_text()
    small_calls = int(re.search(r"^SMALL_CALLS = (\d+)", course_src, re.M).group(1))
    calls = [int(c) for c in re.findall(r"gemv_op\(512,[^\n]*calls=(\d+)\)", lab_src)]
    assert lab_src.count("gemv_op(512") == len(calls) >= 1 and all(c >= small_calls for c in calls), calls


def test_review_gemm_accumulate_hint_and_no_idle_advice():
    """Review findings 10, 13 and 1: an answer adding m·n FLOPs for the accumulate is told that accumulating adds
    none; the L2-compression aside says compression is opt-in; the lab gives no 're-run when idle' advice."""
    from pathlib import Path

    def extra_flops(m, n, flops, nbytes, dtype):  # an accumulating call counted with m·n more FLOPs
        s = np.dtype(dtype).itemsize
        for accumulate in (False, True):
            k, rest = divmod(flops - (m * n if accumulate else 0), 2 * m * n)
            if not rest and k >= 1 and (m * k + k * n + (2 if accumulate else 1) * m * n) * s == nbytes:
                return k, accumulate
        return None

    with pytest.raises(CheckFailure, match="accumulating into C adds no FLOPs"):
        lab.GEMM.check(extra_flops)
    assert "opt-in" in lab.EXPLAIN.spec and "cuMemCreate" in lab.EXPLAIN.spec
    root = Path(__file__).resolve().parents[1]
    for path in (root / "solutions/lab01_blas_roofline/lab01_blas_roofline.py", root / "course/01_blas_roofline.py"):
        text = path.read_text(encoding="utf-8").lower()
        assert "when the machine is idle" not in text and "when it is idle" not in text, path
        assert "re-run this cell" not in text and "re-run when" not in text, path


def test_the_compile_hint_names_a_compile_timed_in_the_first_batch_only():
    """The ninth GPU read: a timer that grows its batch from the first call (no warm-up) times the compile in its
    first batch and is told so; one that warms up but never batches is told to batch, not that it timed the compile."""
    grows = """
import gpucourse as gc
def time_call(fn, *args, clock, repeat=5):
    n = 1
    while True:  # no warm-up: the first call (which compiles) is inside the first batch
        t0 = clock()
        for _ in range(n):
            gc.block(fn(*args))
        if clock() - t0 >= 0.2:
            break
        n *= 2
    runs = []
    for _ in range(repeat):
        t0 = clock()
        for _ in range(n):
            gc.block(fn(*args))
        runs.append((clock() - t0) / n)
    return min(runs)
"""
    single = WRONG_TIMERS["one waited-for call per measurement on a coarse clock"][0].replace("np.median", "np.min")
    for source, hint in ((grows, "Hint: the first call compiles"), (single, "Hint: this clock ticks every")):
        namespace = {}
        exec(compile(source, "<student cell>", "exec"), namespace)
        with pytest.raises(CheckFailure, match=hint):
            TIME_CALL.check(namespace["time_call"], hidden=True)



def test_a_timer_that_waits_but_divides_by_one_more_call_is_told_to_check_its_divisor():
    """Review: a method that waits for every batch but divides by k + 1 was told "the call returned before its work
    was done"; it waited, so the hint now names the divisor."""
    import contextlib
    import io

    right = CORRECT_TIMERS["np.asarray(out) of the batch's last result waits for the batch, minimum"]
    source = right.replace("min(run(k) / k for", "min(run(k) / (k + 1) for")
    assert source != right
    namespace = {}
    exec(compile(source, "<student cell>", "exec"), namespace)
    with pytest.raises(CheckFailure) as failed, contextlib.redirect_stdout(io.StringIO()):
        lab.problems["time_call"].check(namespace["time_call"])
    assert "divide each measurement by the number of calls it timed" in str(failed.value), str(failed.value)
    assert "returned before its work was done" not in str(failed.value)
