"""Lab 6's new checks, exercised directly: the fused kernel's coalescing and one-pass requirements (on the
instrumented executor), the hidden cases' coverage, the measurement exercise's method checks, and the time model."""

from __future__ import annotations

import importlib
import math
import re

import numpy as np
import pytest

import gpucourse as gc
from grader.checks import CheckFailure
from grader.answers import lab06_xla_sass as answers
from grader.labs import lab06_xla_sass as lab

cuda = gc.get_backend().cuda


@cuda.jit
def _good(x, w, b, out):
    j, i0 = cuda.grid(2)
    tx = cuda.threadIdx.x
    sw = cuda.shared.array(32, np.float32)
    sb = cuda.shared.array(32, np.float32)
    if cuda.threadIdx.y == 0 and j < out.shape[1]:
        sw[tx] = w[j]
        sb[tx] = b[j]
    cuda.syncthreads()
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = max(x[i, j] * sw[tx] + sb[tx], np.float32(0.0))


@cuda.jit
def _two_pass(x, w, b, out):
    j, i0 = cuda.grid(2)
    tx = cuda.threadIdx.x
    sw = cuda.shared.array(32, np.float32)
    sb = cuda.shared.array(32, np.float32)
    if cuda.threadIdx.y == 0 and j < out.shape[1]:
        sw[tx] = w[j]
        sb[tx] = b[j]
    cuda.syncthreads()
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = x[i, j] * sw[tx] + sb[tx]
            out[i, j] = max(out[i, j], np.float32(0.0))


@cuda.jit
def _one_per_element(x, w, b, out):  # §5.2's scale_2d, its formula changed: the grid's few rows of blocks only
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = max(x[i, j] * w[j] + b[j], np.float32(0.0))


@cuda.jit
def _vectors_per_element(x, w, b, out):  # a grid-stride loop, w and b read from global memory for every element
    j, i0 = cuda.grid(2)
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = max(x[i, j] * w[j] + b[j], np.float32(0.0))


@cuda.jit
def _no_barrier(x, w, b, out):  # staged in shared memory, read by the other rows of threads without a barrier
    j, i0 = cuda.grid(2)
    tx = cuda.threadIdx.x
    sw = cuda.shared.array(32, np.float32)
    sb = cuda.shared.array(32, np.float32)
    if cuda.threadIdx.y == 0 and j < out.shape[1]:
        sw[tx] = w[j]
        sb[tx] = b[j]
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = max(x[i, j] * sw[tx] + sb[tx], np.float32(0.0))


@cuda.jit
def _rows_on_x(x, w, b, out):  # right values, but the lanes of a warp take different rows: uncoalesced
    i, blk = cuda.grid(2)
    if i < out.shape[0] and blk == 0:
        for j in range(out.shape[1]):
            out[i, j] = max(x[i, j] * w[j] + b[j], np.float32(0.0))


@cuda.jit
def _one_row_of_threads_loops(x, w, b, out):  # coalesced and one pass, but one row of threads does every row
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if cuda.blockIdx.y == 0 and cuda.threadIdx.y == 0 and j < out.shape[1]:
        wj, bj = w[j], b[j]
        for i in range(out.shape[0]):
            out[i, j] = max(x[i, j] * wj + bj, np.float32(0.0))


def test_a_kernel_whose_threads_loop_over_every_row_is_not_a_grid_stride_loop():
    case = lab.KERNEL.visible[0]
    launch = lab._kernel_launch(case)
    grid, block, args = launch.grid, launch.block, launch.args
    r = gc.simt.run(_one_row_of_threads_loops, grid, block, *args)
    assert np.allclose(args[3], answers.scale_bias_relu_reference(*case.args), atol=1e-5)  # the values are right ...
    assert r.sectors_per_request(list(r.arrays)[0]) <= lab.MAX_SECTORS  # ... coalesced, one pass ...
    with pytest.raises(CheckFailure, match="grid-stride loop over the rows"):  # ... but the grid's threads idle
        lab.KERNEL.check(_one_row_of_threads_loops)
    with pytest.raises(CheckFailure, match="grid-stride loop over the rows"):
        lab.KERNEL.check(_one_row_of_threads_loops, hidden=True)


def test_fused_kernel_passes_and_its_traffic_equals_xlas():
    case = lab.KERNEL.visible[0]
    launch = lab._kernel_launch(case)
    grid, block, args = launch.grid, launch.block, launch.args
    assert grid[1] * block[1] < case.args[0].shape[0]  # fewer rows of threads than rows
    r = gc.simt.run(_good, grid, block, *args)
    lab._kernel_require(r, case, "good")  # no exception
    t = lab.traffic(r)
    x, n = case.args[0], case.args[0].shape[1]
    assert set(t) == {"x", "w", "b", "out"}  # the shared arrays are not global traffic
    assert t["out"]["writes"] == x.size and t["out"]["reads"] == 0 and t["x"]["read"] == x.size
    assert t["w"]["reads"] == t["b"]["reads"] == n * grid[1]  # once per column per block
    assert r.sectors_per_request("x") <= lab.MAX_SECTORS
    lab.KERNEL.check(_good, hidden=True)


@cuda.jit
def _registers(x, w, b, out):
    j, i0 = cuda.grid(2)
    if j < out.shape[1]:
        wj, bj = w[j], b[j]  # once per thread: the thread's column is the same for every row it handles
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = max(x[i, j] * wj + bj, np.float32(0.0))


def test_vectors_hoisted_into_registers_pass():
    """A fresh expert read: the epilogue most engineers write holds its column's w and b in registers, read once
    per thread before the row loop — as right as staging them once per block in shared memory."""
    lab.KERNEL.check(_registers)
    lab.KERNEL.check(_registers, hidden=True)


def test_section_5_kernels_with_the_formula_changed_fail():
    """Issue 20: §5.2's scale_2d (one thread per element) leaves the rows the small grid does not reach; its
    grid-stride loop reads w and b once per element instead of once per block; staging without a barrier races."""
    with pytest.raises(CheckFailure, match="elements are wrong"):
        lab.KERNEL.check(_one_per_element)
    for kernel, why in ((_vectors_per_element, "shared memory"), (_no_barrier, "race")):
        with pytest.raises(CheckFailure, match=why):
            lab.KERNEL.check(kernel)
        with pytest.raises(CheckFailure, match=why):
            lab.KERNEL.check(kernel, hidden=True)


def test_two_pass_kernel_fails_on_the_round_trip():
    with pytest.raises(CheckFailure, match="reads `out` back"):
        lab.KERNEL.check(_two_pass)


def test_uncoalesced_kernel_fails_on_sectors():
    from grader.problem import Case

    rng = np.random.default_rng(3)
    case = Case((rng.standard_normal((40, 45)).astype(np.float32), rng.standard_normal(45).astype(np.float32),
                 rng.standard_normal(45).astype(np.float32)), {"rows_of_blocks": 1})
    launch = lab._kernel_launch(case)
    grid, block, args = launch.grid, launch.block, launch.args
    r = gc.simt.run(_rows_on_x, grid, block, *args)
    assert np.allclose(args[3], answers.scale_bias_relu_reference(*case.args), atol=1e-5)  # the values are right ...
    with pytest.raises(CheckFailure, match="sectors"):  # ... the access pattern is not
        lab._kernel_require(r, case, "rows on x")


def test_hidden_kernel_cases_cover_the_boundaries():
    assert lab.KERNEL.has_answers()  # the generator: grader/answers/lab06_xla_sass.py
    for seed in range(4):
        cases = lab.KERNEL.hidden_cases(seed=seed)
        shapes = [(*c.args[0].shape, c.kwargs["rows_of_blocks"]) for c in cases]
        assert any(m == 1 for m, _, _ in shapes) and any(n < 32 for _, n, _ in shapes)
        assert any(m == n for m, n, _ in shapes)
        assert all(n % 32 and m % (4 * g) for m, n, g in shapes if m > 1)  # never multiples of the block or grid
        assert any(4 * g > m > 1 for m, _, g in shapes)  # idle rows of threads
        assert max(math.ceil(m / (4 * g)) for m, _, g in shapes) >= 5  # a thread loops over 5 rows or more
        assert len({g for _, _, g in shapes}) >= 2 and all(c.args[0].dtype == np.float32 for c in cases)


def test_payoff_rows_hidden_cases_reach_every_dominant_term_and_run_past_a_loop():
    """The hidden cases name every dominant term, hold a fused side of 2 kernels and page faults on the fused side,
    and a size of tens of millions of rows or more (a loop over m, one at a time, runs out of time); at rows the
    ratio is still at least the target, at rows + 1 it is below."""
    def ratio(calls, row_bytes, row_faults, machine, m):
        t = [calls[i] * machine["dispatch"] + m * row_bytes[i] / machine["bandwidth"]
             + m * row_faults[i] * machine["fault"] for i in (0, 1)]
        return t[0] / t[1]

    for seed in range(3):
        cases = lab.TIME_MODEL.hidden_cases(seed)
        results = [answers.fusion_payoff_rows(*c.args) for c in cases]
        assert {d for _, d in results} == set(lab.TERMS)
        assert max(r for r, _ in results) > 2e7
        assert any(c.args[0][1] > 1 for c in cases) and any(c.args[2][1] > 0 for c in cases)
        for c, (rows, _) in zip(cases, results):
            calls, row_bytes, row_faults, machine, target = c.args
            assert rows >= 1 and ratio(*c.args[:4], rows) >= target > ratio(*c.args[:4], rows + 1)
    visible = answers.fusion_payoff_rows(*lab.TIME_MODEL.visible[0].args)
    assert visible == ((3 - 2) * 5e-6 * 3e12 // (2 * 20480 - 36864), "memory") == (3662, "memory")


def test_payoff_rows_is_not_the_course_forward_model():
    """gc.fusion.FusionModel computes the forward ratio; the exercise asks for its inverse (the forward ratio is
    wrong), and the course no longer ships the exercise's classifier (gc.fusion.dominant)."""
    F = gc.fusion

    def forward(calls, row_bytes, row_faults, machine, target):
        model = F.FusionModel(F.Side(calls[0], row_bytes[0], row_faults[0], 0.0),
                              F.Side(calls[1], row_bytes[1], row_faults[1], 0.0),
                              machine["dispatch"], machine["bandwidth"], machine["fault"])
        terms = model.terms(model.unfused)
        return model.predicted_ratio, max(terms, key=terms.get)

    with pytest.raises(CheckFailure, match="→ rows"):
        lab.TIME_MODEL.check(forward)
    assert not hasattr(F, "dominant") and not lab.TIME_MODEL.forbid


def _timer(sync=True, warmup=True, stat=min, runs=5, batch=True):
    """A timer: warm-up, then ``runs`` timed batches (grown until one spans 0.2 s on the clock: lab 1's coarse clock
    cases need it) or, with ``batch=False``, single calls; each waited for through its last result."""
    import jax

    def measure_times(slow, fast, *args, clock):
        def one(fn):
            if warmup:
                jax.block_until_ready(fn(*args))

            def run(k):
                t0 = clock()
                for _ in range(k):
                    out = fn(*args)
                if sync:
                    jax.block_until_ready(out)
                return (clock() - t0) / k

            k = 1
            while batch and run(k) * k < 0.2:
                k *= 2
            return stat([run(k) for _ in range(runs)])
        return one(slow), one(fast)
    return measure_times


def test_measure_exercise_is_exact_for_the_right_method_and_names_each_mistake():
    import statistics

    lab.MEASURE.check(_timer(), hidden=True)
    lab.MEASURE.check(_timer(stat=statistics.median), hidden=True)
    with pytest.raises(CheckFailure, match="block_until_ready"):
        lab.MEASURE.check(_timer(sync=False))
    with pytest.raises(CheckFailure, match="at least 4 times"):
        lab.MEASURE.check(_timer(runs=2, batch=False))
    with pytest.raises(CheckFailure, match="first call"):
        lab.MEASURE.check(_timer(warmup=False, stat=lambda t: sum(t) / len(t), batch=False))
    with pytest.raises(CheckFailure, match="pull a mean up"):  # a mean over a run hit by a load spike (hidden case)
        lab.MEASURE.check(_timer(stat=lambda t: sum(t) / len(t), batch=False), hidden=True)
    with pytest.raises(CheckFailure, match="ticks every 2 ms"):  # one call per timed run on the coarse clock
        lab.MEASURE.check(_timer(batch=False))


def test_a_batching_timer_without_warm_up_is_told_the_compile_sized_its_batches():
    """Review C1: a timer that grows its batches to 0.2 s, waits for the last result and keeps the best of several,
    but never warms up: the first call's compile (0.3 s) lands in its first batch, which then looks long enough, so
    every batch stays at one call and the coarse clock reads 0 — the message names that (as lab 1's time_call does),
    not the batching advice the timer already follows; visible and hidden alike. A warmed-up timer that does not
    batch still gets the batching advice, and the warmed-up batching timer passes."""
    for hidden in (False, True):
        with pytest.raises(CheckFailure) as err:
            lab.MEASURE.check(_timer(warmup=False), hidden=hidden)
        assert "the first call compiles (about 0.3 s): timed inside your first batch" in str(err.value)
        assert "batches stayed at one call each" in str(err.value) and "Time BATCHES" not in str(err.value)
        with pytest.raises(CheckFailure, match="Time BATCHES of calls"):
            lab.MEASURE.check(_timer(batch=False), hidden=hidden)
    lab.MEASURE.check(_timer(), hidden=True)
    # fast timed after slow: the reads of slow's timing before fast's first call are not a timed compile
    seen = lab.MEASURE.observe(_timer(batch=False), lab.MEASURE.visible[1])
    assert not any(lab.compile_timed(w) for w in seen["workloads"])
    seen = lab.MEASURE.observe(_timer(warmup=False), lab.MEASURE.visible[1])
    assert all(lab.compile_timed(w) for w in seen["workloads"])


def test_the_coarse_clock_cases_need_batches():
    """Lab 1's coarse clock (issue 20): calls of 20–60 µs on a clock that ticks every 2 ms, visible and on every
    seed's hidden cases; one call per timed run — the course's timer's loop — reads 0 or a whole tick."""
    assert [w.tick_s for w in lab.MEASURE.visible[1].args[:2]] == [2e-3, 2e-3]
    for seed in range(6):
        ticked = [c for c in lab.MEASURE.hidden_cases(seed=seed) if c.args[0].tick_s]
        assert len(ticked) == 2 and all(2e-5 <= w.seconds <= 6e-5 for c in ticked for w in c.args[:2])
        assert any(c.args[0].spikes and c.args[0].spikes[0] > 6 for c in lab.MEASURE.hidden_cases(seed=seed))
        assert any(c.args[0].spikes and c.args[0].compile_s > 0.3 for c in ticked)
    slow, fast, a = lab.fresh_workloads(*lab.MEASURE.visible[1].args[:2]) + [None]
    assert slow.clock is fast.clock and slow.clock.tick == 2e-3 and "ticks of 2 ms" in repr(slow.clock)


def test_the_timer_is_handed_the_stand_ins_clock_and_the_wall_clock_is_untouched():
    """Issue 20: the stand-ins' shared virtual clock is passed as ``clock``; nothing replaces time.perf_counter or
    timeit's timer (the course's timers, which read them, measure the wrong clock instead)."""
    import time
    import timeit

    before = (time.perf_counter, timeit.default_timer)
    got = []
    lab.MEASURE.observe(lambda slow, fast, *args, clock: got.append((slow, fast, clock)) or (0.0, 0.0),
                        lab.MEASURE.visible[0])
    slow, fast, clock = got[0]
    assert clock is slow.clock is fast.clock and repr(clock) == "<virtual clock [s]>"
    assert (time.perf_counter, timeit.default_timer) == before and not lab.MEASURE.forbid


def test_sass_counts_cases_include_the_sm90a_target_and_the_default_arch():
    hidden = {c.args[1] if len(c.args) > 1 else "default" for c in lab.SASS_COUNTS.hidden_cases()}
    assert "sm_90a" in {c.args[1] for c in lab.SASS_COUNTS.visible} and {"sm_90a", "default"} <= hidden


# Correct timing methods that a student may write, as notebook cells (their own globals): each must get full marks.
CORRECT_TIMERS = {
    # the solution's method: batches doubled until one spans 0.2 s on the clock, the best of 3
    "batches grown to 0.2 s, sync on the last result, best of 3": """
import jax
def measure_times(slow, fast, *args, clock):
    def per_call(fn):
        jax.block_until_ready(fn(*args))
        def run(n):
            t0 = clock()
            for _ in range(n):
                out = fn(*args)
            jax.block_until_ready(out)
            return (clock() - t0) / n
        n = 1
        while run(n) * n < 0.2:
            n *= 2
        return min(run(n) for _ in range(3))
    return per_call(slow), per_call(fast)
""",
    "batches grown by 10, block on the list of all results, median of 5": """
import statistics, jax
def measure_times(slow, fast, *args, clock):
    def per_call(fn):
        jax.block_until_ready(fn(*args))
        def run(n):
            t0 = clock()
            jax.block_until_ready([fn(*args) for _ in range(n)])
            return (clock() - t0) / n
        n = 1
        while run(n) * n < 0.1:
            n *= 10
        return statistics.median(run(n) for _ in range(5))
    return per_call(slow), per_call(fast)
""",
    # each call waited for (it pays its 10 µs dispatch too), timeit's autorange choosing the batch
    "timeit.Timer(..., timer=clock): autorange, then the best of repeat": """
import timeit, jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        t = timeit.Timer(lambda: jax.block_until_ready(fn(*args)), timer=clock)
        number, _ = t.autorange()
        return min(t.repeat(repeat=3, number=number)) / number
    return best(slow), best(fast)
""",
    # §0 step 10: reading the value on the host (np.asarray, jax.device_get) waits for the queued work too
    "synchronized with np.asarray(last result), best of 4": """
import numpy as np
def measure_times(slow, fast, *args, clock):
    def best(fn):
        np.asarray(fn(*args))
        n, runs = 1, []
        while True:
            t0 = clock()
            for _ in range(n):
                out = fn(*args)
            np.asarray(out)
            t = clock() - t0
            if t >= 0.2:
                break
            n *= 2
        for _ in range(4):
            t0 = clock()
            for _ in range(n):
                out = fn(*args)
            np.asarray(out)
            runs.append((clock() - t0) / n)
        return min(runs)
    return best(slow), best(fast)
""",
    "synchronized with jax.device_get(last result), median of 3": """
import statistics, jax
def measure_times(slow, fast, *args, clock):
    def med(fn):
        jax.device_get(fn(*args))
        def run(n):
            t0 = clock()
            for _ in range(n):
                out = fn(*args)
            jax.device_get(out)
            return clock() - t0
        n = 1
        while run(n) < 0.2:
            n *= 2
        return statistics.median(run(n) / n for _ in range(3))
    return med(slow), med(fast)
""",
    # a top-level helper (another cell) that takes the clock to read
    "helper bench(fn, *args, clock) at the top level": """
import jax
def bench(fn, *args, clock, runs=3):
    jax.block_until_ready(fn(*args))
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            out = fn(*args)
        jax.block_until_ready(out)
        if clock() - t0 > 0.2:
            break
        n *= 2
    times = []
    for _ in range(runs):
        t0 = clock()
        for _ in range(n):
            out = fn(*args)
        jax.block_until_ready(out)
        times.append((clock() - t0) / n)
    return min(times)
def measure_times(slow, fast, *args, clock):
    return bench(slow, *args, clock=clock), bench(fast, *args, clock=clock)
""",
}


def _cell(source):
    namespace = {}
    exec(compile(source, "<student cell>", "exec"), namespace)
    return namespace["measure_times"]


@pytest.mark.parametrize("method", sorted(CORRECT_TIMERS))
def test_every_correct_timing_method_gets_full_marks(method):
    fn = _cell(CORRECT_TIMERS[method])
    lab.MEASURE.check(fn)
    lab.MEASURE.check(fn, hidden=True)
    for seed in SEEDS:  # other students' hidden cases too
        _check_with_seed(fn, seed)


SEEDS = range(12)


def _check_with_seed(fn, seed):
    """The hidden check as the grading command runs it for the student whose seed is ``seed``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lab.MEASURE, "seed", lambda: seed)
        lab.MEASURE.check(fn, hidden=True)


def test_the_queue_runs_calls_in_order_one_after_another():
    slow, fast, a = lab._workloads(0.04, 0.02)
    clock = slow.clock
    first = slow(a)
    assert first.done_at == pytest.approx(1000.0 + 0.3 + 10e-6 + 0.04)  # compile on the host, dispatch, 40 ms of work
    fast(a).block_until_ready()  # warm fast up too: the queue is empty again
    outs = [slow(a) for _ in range(3)] + [fast(a)]
    assert outs[0].done_at == pytest.approx(clock.now - 3 * 10e-6 + 10e-6 + 0.04)
    assert outs[1].done_at == pytest.approx(outs[0].done_at + 0.04)  # the second starts when the first ends
    assert outs[3].done_at == pytest.approx(outs[2].done_at + 0.02)  # fast's work waits for slow's
    outs[-1].block_until_ready()
    assert clock.now == pytest.approx(outs[-1].done_at)


def test_another_clock_is_named_not_blamed_on_synchronization():
    """A right method on time.perf_counter or time.process_time (not the clock given) never sees the work: the
    message says which clock to read, not that the results were not waited for."""
    for other in ("time.perf_counter", "time.process_time"):
        fn = _cell(f"""
import time, jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        runs = []
        for _ in range(4):
            t0 = {other}()
            jax.block_until_ready(fn(*args))
            runs.append({other}() - t0)
        return min(runs)
    return best(slow), best(fast)
""")
        with pytest.raises(CheckFailure, match="never read the clock it was given") as info:
            lab.MEASURE.check(fn)
        assert "block_until_ready" not in str(info.value)


def _pasted_measure():
    """gc.timing.measure's source pasted into a notebook cell, unchanged."""
    import inspect

    namespace = {}
    exec("import math, sys, time\nfrom gpucourse.backend import get_backend\n"
         "from gpucourse.timing import Timing, block\n" + inspect.getsource(gc.timing.measure), namespace)
    return namespace["measure"]


def test_the_course_timers_measure_the_wrong_clock_however_they_are_loaded():
    """Issue 20: gc.measure (and §6.3's gc.fusion.best_run) stay installed and unlocked; they read time.perf_counter,
    on which the stand-ins' work never shows — called, loaded a second time from the file, or pasted, they fail
    visibly and on every seed's hidden cases."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("gpucourse.timing_again", gc.timing.__file__)
    again = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = again  # as the importlib recipe does (its dataclass looks its module up)
    spec.loader.exec_module(again)
    timers = [lambda f, *a: gc.measure(f, *a).best, lambda f, *a: again.measure(f, *a).median,
              lambda f, *a: _pasted_measure()(f, *a).best, lambda f, *a: gc.fusion.best_run(f, *a)[0]]
    for t in timers:
        def lazy(slow, fast, *args, clock, t=t):
            return t(slow, *args), t(fast, *args)

        with pytest.raises(CheckFailure, match="never read the clock it was given"):
            lab.MEASURE.check(lazy)
        for seed in (0, 7):
            with pytest.raises(CheckFailure, match="never read the clock it was given"):
                _check_with_seed(lazy, seed)


# Wrong timing methods, as notebook cells: each must fail, with a message that names its mistake.
WRONG_TIMERS = {
    "batch of N, never synchronized": ("""
import jax
def measure_times(slow, fast, *args, clock, n=8):
    def per_call(fn):
        jax.block_until_ready(fn(*args))
        t0 = clock()
        for _ in range(n):
            fn(*args)
        return (clock() - t0) / n
    return per_call(slow), per_call(fast)
""", "block_until_ready"),
    "batch of N, waits for the FIRST result only": ("""
import jax
def measure_times(slow, fast, *args, clock, n=8):
    def per_call(fn):
        jax.block_until_ready(fn(*args))
        best = []
        for _ in range(3):
            t0 = clock()
            outs = [fn(*args) for _ in range(n)]
            jax.block_until_ready(outs[0])
            best.append((clock() - t0) / n)
        return min(best)
    return per_call(slow), per_call(fast)
""", "far too short"),
    "timeit.repeat without synchronization": ("""
import timeit, jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        return min(timeit.repeat(lambda: fn(*args), number=1, repeat=5, timer=clock))
    return best(slow), best(fast)
""", "enqueue"),
    "compile time included (no warm-up, batch of N)": ("""
import jax
def measure_times(slow, fast, *args, clock, n=4):
    def per_call(fn):
        t0 = clock()
        jax.block_until_ready([fn(*args) for _ in range(n)])
        return (clock() - t0) / n
    return per_call(slow), per_call(fast)
""", "first call"),
    "mean of 5 runs (a load spike pulls it up)": ("""
import statistics, jax
def measure_times(slow, fast, *args, clock):
    def mean(fn):
        jax.block_until_ready(fn(*args))
        runs = []
        for _ in range(5):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            runs.append(clock() - t0)
        return statistics.mean(runs)
    return mean(slow), mean(fast)
""", "pull a mean up", True),
}


WRONG_TIMERS |= {
    # right on an exact clock (the methods that passed before the coarse-clock cases): one call, or a fixed few,
    # per timed run reads 0 or a whole 2 ms tick when a call's work takes tens of µs
    "one call at a time, best of 5 (right on an exact clock only)": ("""
import jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        runs = []
        for _ in range(5):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            runs.append(clock() - t0)
        return min(runs)
    return best(slow), best(fast)
""", "ticks every 2 ms"),
    "timeit.repeat(number=1) with timer=clock": ("""
import timeit, jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        return min(timeit.repeat(lambda: jax.block_until_ready(fn(*args)), number=1, repeat=5, timer=clock))
    return best(slow), best(fast)
""", "ticks every 2 ms"),
    "a fixed batch of 8, sync once, divide by 8": ("""
import jax
def measure_times(slow, fast, *args, clock, n=8):
    def per_call(fn):
        jax.block_until_ready(fn(*args))
        batches = []
        for _ in range(3):
            t0 = clock()
            for _ in range(n):
                out = fn(*args)
            jax.block_until_ready(out)
            batches.append((clock() - t0) / n)
        return min(batches)
    return per_call(slow), per_call(fast)
""", "ticks every 2 ms"),
    # the spikes hit timed runs 3, 4, 5 and 6 in four hidden cases: the last run is a slow one on every seed
    "warm up, time 4 runs, return the last": ("""
import jax
def measure_times(slow, fast, *args, clock):
    def last(fn):
        jax.block_until_ready(fn(*args))
        for _ in range(4):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            t = clock() - t0
        return t
    return last(slow), last(fast)
""", "single run that another process slowed down", True),
    "3 waited warm-ups, then one timed run": ("""
import jax
def measure_times(slow, fast, *args, clock):
    def once(fn):
        for _ in range(3):
            jax.block_until_ready(fn(*args))
        t0 = clock()
        jax.block_until_ready(fn(*args))
        return clock() - t0
    return once(slow), once(fast)
""", "you timed 1 call of slow"),
    # the warm-up's work is still queued when the clock starts: the first timed run holds two calls' work
    "warm-up not waited for, median of 3": ("""
import statistics, jax
def measure_times(slow, fast, *args, clock):
    def med(fn):
        fn(*args)
        runs = []
        for _ in range(3):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            runs.append(clock() - t0)
        return statistics.median(runs)
    return med(slow), med(fast)
""", "leftover work"),
    "warm-up not waited for, best of 5": ("""
import jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        fn(*args)
        runs = []
        for _ in range(5):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            runs.append(clock() - t0)
        return min(runs)
    return best(slow), best(fast)
""", "leftover work"),
    "gc.measure on the given functions": ("""
import gpucourse as gc
def measure_times(slow, fast, *args, clock):
    return gc.measure(slow, *args).best, gc.measure(fast, *args).best
""", "never read the clock it was given"),
    "the right method on time.perf_counter, not the clock given": ("""
import time, jax
def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*args))
            runs.append(time.perf_counter() - t0)
        return min(runs)
    return best(slow), best(fast)
""", "never read the clock it was given"),
}


@pytest.mark.parametrize("method", sorted(WRONG_TIMERS))
def test_every_wrong_timing_method_fails_and_is_named(method):
    source, why, *hidden_only = WRONG_TIMERS[method]
    fn = _cell(source)
    if not hidden_only:
        with pytest.raises(CheckFailure, match=why):
            lab.MEASURE.check(fn)
    for seed in SEEDS:  # on every student's hidden cases, not only on some seeds
        with pytest.raises(CheckFailure, match=why):
            _check_with_seed(fn, seed)


def _entry_opcodes(hlo):  # written here, without the course's HLO readers
    import re

    entry = re.search(r"^ENTRY .*?^}", hlo, re.S | re.M).group(0)
    return re.findall(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([\w\-]+)\(", entry, re.M)


def test_rows_within_agrees_with_xlas_own_count():
    """Exercise 2's ground truth stays XLA's, independent of the reference's formula: on the visible cases and a
    seed's hidden ones, XLA's cost analysis (each op compiled alone, and the chain jitted) says that the reference's
    m rows fit the budget and m + 1 rows do not, op by op and fused."""
    p = lab.ROWS_WITHIN
    for c in p.visible + p.hidden_cases(0):
        n, dtype, ops, budget = c.args
        rows = answers._rows_within_reference(*c.args)
        for side, m in enumerate(rows):
            assert m == 0 or answers.traffic_xla(m, n, dtype, ops)[side] <= budget, (c.args, side, m)
            assert answers.traffic_xla(m + 1, n, dtype, ops)[side] > budget, (c.args, side, m + 1)


def test_rows_within_cases_hold_what_the_spec_promises_and_the_mistakes_hinge_on():
    """n ≥ 2, budgets below 2**24 bytes (XLA's float32 count is exact there), answers ≤ 100,000; every op and dtype;
    on every seed: exact ties on both sides, 0 rows, 0 op by op with fused rows left, a budget below the row vectors
    alone, and answers in the tens of thousands."""
    p = lab.ROWS_WITHIN
    for seed in range(6):
        cases = [c.args for c in p.hidden_cases(seed)]
        rows = [answers._rows_within_reference(*a) for a in cases]
        assert all(n >= 2 and 0 < budget < 2**24 and max(r) <= 100_000 for (n, _, _, budget), r in zip(cases, rows))
        assert {op for _, _, ops, _ in cases for op in ops} == set(lab.OPS)
        assert {dtype for _, dtype, _, _ in cases} == {"float32", "bfloat16", "float16"}
        for side in (0, 1):
            assert any(r[side] and answers._traffic_rule(n, d, ops, r[side])[side] == budget
                       for (n, d, ops, budget), r in zip(cases, rows)), (seed, side)
        assert (0, 0) in rows and any(r[0] == 0 < r[1] for r in rows) and max(r[1] for r in rows) > 10_000
        assert any(budget < answers._traffic_rule(n, d, ops, 0)[1] for n, d, ops, budget in cases)


def test_rows_within_locks_nothing_of_xla_a_search_over_its_count_is_the_students_answer():
    """Class B by design: XLA's count is the forward model, so lab 6 no longer locks XLA (no ByHand, nothing
    forbidden) and a bisection over gc.xla.compiled(...).bytes_accessed, abstract shapes, passes."""
    import jax
    import jax.numpy as jnp

    from grader.labs.lab02_backprop import ByHand

    assert not isinstance(lab.ROWS_WITHIN, ByHand) and lab.ROWS_WITHIN.forbid == ()
    assert all(p.forbid == () and not isinstance(p, ByHand) for p in lab.problems.values())
    locked = [(obj, label) for p in lab.problems.values() for *_, obj, label in p.answer_sites()]
    assert not any(obj is gc.xla.compiled or label.startswith(("gpucourse.xla", "jax")) for obj, label in locked)
    unary = {"relu": lambda a: jnp.maximum(a, 0), "tanh": jnp.tanh, "exp": jnp.exp}

    def rows_within(n, dtype, ops, budget_bytes):
        def step(op):
            return unary[op] if op in unary else (lambda a, v: a * v) if op.startswith("mul") else (lambda a, v: a + v)

        def operands(m, chosen):
            return [jax.ShapeDtypeStruct((n,) if op.endswith("_row") else (m, n), dtype) for op in chosen
                    if op not in unary]

        def chain(x, *vs):
            it = iter(vs)
            for op in ops:
                x = step(op)(x) if op in unary else step(op)(x, next(it))
            return x

        def traffic(m, side):
            x = jax.ShapeDtypeStruct((m, n), dtype)
            if side == 0:
                return sum(gc.xla.compiled(step(op), x, *operands(m, [op])).bytes_accessed for op in ops)
            return gc.xla.compiled(chain, x, *operands(m, ops)).bytes_accessed

        found = []
        for side in (0, 1):
            lo, hi = 0, 100_001
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if traffic(mid, side) <= budget_bytes else (lo, mid)
            found.append(lo)
        return tuple(found)

    lab.ROWS_WITHIN.check(rows_within)


def test_breaking_op_cases_tell_the_first_breaker_from_the_last():
    def last(hlo):
        return [op for op in _entry_opcodes(hlo) if op not in answers.BOOKKEEPING][-1]

    visible = [c.args[0] for c in lab.BREAKING_OP.visible]
    assert any(answers.breaking_op(h)[0] != last(h) for h in visible)
    for seed in range(3):
        hidden = [c.args[0] for c in lab.BREAKING_OP.hidden_cases(seed)]
        assert sum(answers.breaking_op(h)[0] != last(h) for h in hidden) >= 2
    with pytest.raises(CheckFailure, match="expected"):
        lab.BREAKING_OP.check(lambda hlo: (last(hlo), 0))


def test_breaking_op_bytes_are_read_from_the_breakers_type():
    """By hand on the visible cases: sort of a 6×10 float32 array writes 240 bytes; top_k (a custom-call) a tuple of
    5×2 float32 values and 5×2 int32 indices, 80; an FFT of real float32 numbers writes complex64 (8 bytes each).
    The hidden cases hold every breaker, bfloat16 chains (XLA:CPU sorts them in float32: the inputs' dtype is not
    the answer) and tuple types, so a reader of the inputs' dtype or of a tuple's first array fails."""
    assert [answers.breaking_op(c.args[0]) for c in lab.BREAKING_OP.visible] == [
        ("sort", 6 * 10 * 4), ("custom-call", 5 * 2 * 4 + 5 * 2 * 4), ("sort", 4 * 6 * 4), ("fft", 3 * 9 * 8)]
    for seed in range(3):
        hidden = [c.args[0] for c in lab.BREAKING_OP.hidden_cases(seed)]
        ops = {answers.breaking_op(h)[0] for h in hidden}
        assert {"sort", "fft", "custom-call", "conditional"} <= ops
        assert any("bf16[" in h and " f32[" in h.split(" sort(")[0].splitlines()[-1] for h in hidden if " sort(" in h)
        assert any(re.search(r"= \([^)]*,[^)]*\) custom-call\(", h) for h in hidden)  # top_k: a two-array tuple


def test_breaking_op_is_not_answered_by_the_course_hlo_readers():
    """The course's HLO readers list the ENTRY opcodes (gpucourse.xla.entry_ops) but ship no set of bookkeeping
    opcodes to filter them with (review finding: entry_ops + BOOKKEEPING gave the opcode in one line): the nearest
    installed set, the structure check's ONE_KERNEL_OPS, lets a copy through, and even the full filter (written by
    the student, as the spec asks) with a byte count that assumes the inputs' dtype scores less than full."""
    assert not hasattr(gc.xla, "BOOKKEEPING") and not hasattr(lab, "BOOKKEEPING")

    def nearest_installed(hlo):
        return next(op for op in gc.xla.entry_ops(hlo) if op not in lab.ONE_KERNEL_OPS)

    hidden = [c.args[0] for c in lab.BREAKING_OP.hidden_cases(0)]
    assert any(nearest_installed(h) != answers.breaking_op(h)[0] for h in hidden)  # the copy-first case

    def opcode_only(hlo):
        return next(op for op in gc.xla.entry_ops(hlo) if op not in answers.BOOKKEEPING)

    assert all(opcode_only(c.args[0]) == answers.breaking_op(c.args[0])[0] for c in lab.BREAKING_OP.visible)
    with pytest.raises(CheckFailure, match="expected a tuple"):
        lab.BREAKING_OP.check(opcode_only)

    def float32_bytes(hlo):
        op = opcode_only(hlo)
        line = next(ln for ln in gc.xla.computations(hlo)["ENTRY"].splitlines() if f" {op}(" in ln)
        return op, 4 * sum(math.prod(int(d) for d in dims.split(",") if d)
                           for dims in re.findall(r"\[([\d,]*)\]", line.split(f" {op}(")[0]))

    with pytest.raises(CheckFailure, match="bytes of the value fft produces"):
        lab.BREAKING_OP.check(float32_bytes)
    assert not lab.BREAKING_OP.forbid  # nothing left to lock: no helper computes the answer


def test_mma_flops_cases_hold_every_tensor_core_opcode_and_both_warp_level_shapes():
    """Over the visible and hidden cases every opcode of the family appears (issue 21: FP8 QGMMA, int8 IGMMA and
    IMMA, FP64 DMMA beside HMMA and HGMMA), a warp-level shape with m = 8 beside m = 16, and a kernel without any."""
    texts = [c.args[0] for c in lab.MMA_FLOPS.visible] + [c.args[0] for c in lab.MMA_FLOPS.hidden_cases(0)]
    found = {m.group(1) for t in texts for m in re.finditer(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z]+MMA)\.", t)}
    assert set(lab.TENSOR_CORE) <= found
    assert any("IMMA.8816" in t for t in texts) and any("IMMA.16832" in t for t in texts)
    assert 0 in [answers.mma_flops_reference(t) for t in texts]


def test_the_on_this_machine_cell_pairs_each_time_with_its_own_page_faults():
    from pathlib import Path

    source = next(Path(__file__).parents[1].glob("solutions/lab06*/lab06*.py")).read_text()
    cell = source[source.index('"grade_id": "on_this_machine"'):].split("# %%", 1)[0]
    assert "gc.fusion.best_run" in cell and "page_faults(" not in cell  # not the mean faults beside the min time
    assert "measured / ratio" in cell  # measured/model printed


def test_the_split_sends_as_data_only_the_cases_whose_generators_left_the_sandbox():
    """Lab 6 is split: every exercise's answers live in grader/answers (their hidden cases travel to the sandbox as
    data, and must be data; the jitted functions, the kernel, the toolchain exercise and the timer are observed there
    and judged in the grader)."""
    from grader import grade
    from grader.pipeline.recheck import split_problems
    from grader.pipeline.wire import encode_cases

    assert split_problems(grade.Lab.find("lab06_xla_sass")) == set(answers.ANSWERS) == {
        "fused_bias_gelu", "rows_within", "breaking_op", "fixed_scale_tanh", "scale_bias_relu_kernel",
        "mma_flops", "sass_counts", "measure_times", "fusion_payoff_rows"} == set(lab.problems)
    for name in answers.ANSWERS:
        assert not hasattr(lab, answers.ANSWERS[name][0].__name__), f"{name}'s reference is on the exercise side"
        assert encode_cases(lab.problems[name].hidden_cases())
    # nor do the solutions of the jitted exercises, of mma_flops and of sass_counts ship with the exercise side
    # (lab.gelu_tanh is exercise 1's given activation, not an answer: the exercise is the precision around it)
    for name in ("fused_bias_gelu", "fixed_scale_tanh", "mma_flops", "sass_counts"):
        assert not hasattr(lab, name), name
    # the re-check observes the exercises with a check of their own and calls mma_flops: none is kernel-only
    from grader.pipeline.recheck import _called, _observed

    assert all(_observed(p, True) and not _called(p)
               for p in (lab.BIAS_GELU, lab.FIX_SCALE, lab.SASS_COUNTS, lab.MEASURE))
    assert _called(lab.MMA_FLOPS)
    lab7 = grade.Lab.find("lab07_tpu")
    assert split_problems(lab7) == set(importlib.import_module("grader.labs.lab07_tpu").problems)


# -- exercises 1 and 4: the jitted functions, observed here and judged there --------------------------------------

def _gelu(x, b, r):
    import math

    import jax.numpy as jnp

    f32 = jnp.float32  # computed in float32, rounded once
    u = x.astype(f32) + b.astype(f32)
    g = 0.5 * u * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))
    return (r.astype(f32) + g).astype(x.dtype)


def _gelu_row_loop(x, b, r):  # right values; a while loop over rows: more than one fusion
    import math

    import jax
    import jax.numpy as jnp

    f32 = jnp.float32

    def row(xr):
        u = xr.astype(f32) + b.astype(f32)
        return 0.5 * u * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))
    return (r.astype(f32) + jax.lax.map(row, x)).astype(x.dtype)


def _gelu_bfloat16(x, b, r):  # one fusion, but bfloat16 arithmetic throughout: a rounding after every op
    import jax

    return r + jax.nn.gelu(x + b, approximate=True)


def _gelu_f32(x, b, r):  # right values, computed and returned in float32: the bfloat16 cases want bfloat16
    import jax.numpy as jnp

    return _gelu(x.astype(jnp.float32), b.astype(jnp.float32), r.astype(jnp.float32))


def _scale(x, d, b):
    import jax.numpy as jnp

    return jnp.tanh(x * d + b)


def _scale_einsum(x, d, b):  # right values; still a dot against the diagonal matrix
    import jax.numpy as jnp

    return jnp.tanh(jnp.einsum("ij,jk->ik", x, jnp.diag(d)) + b)


def _scale_materialized(x, d, b):  # right values, one dot-free program, but the scaled x is written out and returned
    import jax.numpy as jnp

    y = x * d
    return jnp.tanh(y + b), y


JIT_WRONG = {"fused_bias_gelu": [(_gelu_row_loop, "expected exactly 1 fusion"), (_gelu_f32, "expected dtype bfloat16"),
                                (_gelu_bfloat16, "more than one bfloat16 rounding")],
             "fixed_scale_tanh": [(_scale_einsum, "expected exactly 1 fusion"),
                                  (_scale_materialized, "expected|outputs|shape")]}


def test_jitted_exercises_are_judged_from_plain_data_as_the_live_check_judges():
    """observe → wire → judge in another process gives the live check's verdict: the solutions pass every visible
    and hidden case (values and structure), each wrong answer fails with the same message either way."""
    from grader.pipeline.wire import decode, encode, has_unsupported

    for name, right in (("fused_bias_gelu", _gelu), ("fixed_scale_tanh", _scale)):
        p = lab.problems[name]
        assert isinstance(p, lab._JitProblem) and p.after is None
        for case in [*p.visible, *p.hidden_cases()]:
            seen = p.observe(right, case)
            data = json_roundtrip(encode(seen))
            assert not has_unsupported(data) and seen["error"] is None
            p.judge(decode(data), p.reference(*case.args), case)
        for wrong, words in JIT_WRONG[name]:
            case = next(c for c in p.visible if "bfloat16" in str(c.args[0].dtype)) \
                if words.startswith(("expected dtype", "more than one bfloat16")) else p.visible[-1]
            want = p.reference(*case.args)
            with pytest.raises(CheckFailure, match=words) as live:
                p.judge(p.observe(wrong, case), want, case)
            with pytest.raises(CheckFailure) as outside:
                p.judge(decode(json_roundtrip(encode(p.observe(wrong, case)))), want, case)
            assert str(outside.value) == str(live.value)
            with pytest.raises(CheckFailure, match=words):
                p.check(wrong)


def json_roundtrip(data):
    import json

    return json.loads(json.dumps(data))


def test_jitted_exercise_structure_rules_and_incomplete_observations():
    """The rules read only the data: a forged or partial observation is refused, each rule has its message."""
    p = lab.FIX_SCALE
    case = p.visible[-1]
    want = p.reference(*case.args)
    good = p.observe(_scale, case)
    p.judge(good, want, case)
    s = good["structure"]
    assert s["fusions"] == ["kLoop"] and s["has_op"] == {"dot": False} and s["temp_bytes"] == 0
    assert s["bytes_accessed"] == good["input_bytes"] + s["output_bytes"] == (8 * 12 + 12 + 12 + 8 * 12) * 4
    bad = {"fusions": {"fusions": ["kLoop", "kLoop"]}, "entry_ops": {"entry_ops": ["parameter", "fusion", "sort"]},
           "has_op": {"has_op": {"dot": True}}, "bytes_accessed": {"bytes_accessed": s["bytes_accessed"] + 4},
           "temp_bytes": {"temp_bytes": 64}}
    words = {"fusions": "expected exactly 1 fusion", "entry_ops": r"ops outside the fusion: \['sort'\]",
             "has_op": "still contains a `dot`", "bytes_accessed": "bytes accessed", "temp_bytes": "64 temporary"}
    for key, change in bad.items():
        with pytest.raises(CheckFailure, match=words[key]):
            p.judge({**good, "structure": {**s, **change}}, want, case)
    for seen in (None, {**good, "structure": None}, {**good, "structure": {"fusions": ["kLoop"]}}):
        with pytest.raises(CheckFailure, match="did not come back|no observation"):
            p.judge(seen, want, case)
    with pytest.raises(CheckFailure, match="raised ZeroDivisionError"):
        p.judge(p.observe(lambda x, d, b: 1 / 0, case), want, case)
    with pytest.raises(CheckFailure, match="expected"):  # wrong values fail before the structure is looked at
        p.judge({**good, "value": np.asarray(good["value"]) + 1}, want, case)


def test_jitted_exercises_without_the_answer_side(monkeypatch, capsys):
    """As in the student edition and the grading sandbox: the visible check judges against the stored values (a
    wrong answer still fails); the hidden check outside grading says it runs at grading, and inside (cases
    installed as data) jits and observes the student's function and judges nothing but whether it ran."""
    import grader.problem as problem_mod
    import grader.seeding as seeding
    from grader.pipeline.wire import decode_cases, encode_cases

    p = lab.BIAS_GELU
    cases = decode_cases(json_roundtrip(encode_cases(p.hidden_cases())))
    monkeypatch.setattr(problem_mod, "_answer_module", lambda lab_module: None)
    monkeypatch.setattr(p, "reference", None)
    monkeypatch.setattr(p, "hidden", None)
    assert not p.has_answers()
    p.check(_gelu)
    out = capsys.readouterr().out
    assert "✓ fused_bias_gelu: 3 visible cases passed" in out and "(16, 24) float32: 1 kLoop fusion" in out
    with pytest.raises(CheckFailure, match="expected dtype bfloat16"):
        p.check(_gelu_f32)
    p.check(_gelu, hidden=True)
    assert "the hidden tests run when your lab is graded" in capsys.readouterr().out
    monkeypatch.setattr(seeding, "installed_cases", lambda name: cases if name == "fused_bias_gelu" else None)
    p.check(_gelu_row_loop, hidden=True)  # runs: judged by the grader, not here
    assert "ran on 4 hidden cases; they are judged by the grader" in capsys.readouterr().out
    with pytest.raises(CheckFailure, match="raised ZeroDivisionError"):
        p.check(lambda x, b, r: 1 / 0, hidden=True)


# -- exercise 6: mma_flops' reference, checked against the course's Sass and by hand ---------------------------------

def _mma_flops_by_variants(text):
    """Another student's mma_flops: gpucourse's Sass lists the full opcodes (variants), a table the warp-level shapes."""
    from gpucourse import toolchain

    shapes = {"16816": 16 * 8 * 16, "1688": 16 * 8 * 8, "16832": 16 * 8 * 32, "8816": 8 * 8 * 16}
    total = 0
    for op in lab.TENSOR_CORE:
        for spelling, n in toolchain.Sass(text).variants(op).items():
            shape = spelling.split(".")[1]
            total += n * 2 * (math.prod(int(v) for v in shape.split("x")) if "x" in shape else shapes[shape])
    return total


def test_mma_flops_reference_agrees_with_the_course_sass_variants():
    """The answer side's reference (written from nvdisasm's syntax) and gpucourse's Sass (which lists full opcodes:
    variants) find the same tensor-core instructions on the saved real listings, on kernels compiled now where
    NVIDIA's toolchain is installed, and on synthetic SASS; the shapes are read as the spec says."""
    from gpucourse import toolchain
    from gpucourse.toolchain import ELEMENTWISE_CU, WGMMA_CU, unrolled_fma_cu, wmma_cu

    by_variants = _mma_flops_by_variants

    texts = list(lab.saved_sass().values())
    assert len(texts) == 7
    if toolchain.available():
        texts += [toolchain.sass_of(ELEMENTWISE_CU).text, toolchain.sass_of(wmma_cu(3)).text,
                  toolchain.sass_of(unrolled_fma_cu(7)).text, toolchain.sass_of(WGMMA_CU, arch="sm_90a").text]
    texts += [c.args[0] for seed in range(3) for c in lab.MMA_FLOPS.hidden_cases(seed)]
    for text in texts:
        assert answers.mma_flops_reference(text) == by_variants(text), text[:200]
    assert sum(answers.mma_flops_reference(t) > 0 for t in texts) > 20


def test_mma_flops_reference_on_hand_counted_lines():
    """Ground truth counted by hand, line by line: guards (@P0, @!PT, @UP0), every opcode of the family, a kernel
    name and comments full of opcodes, labels, directives, encodings, and look-alikes (HFMA2, MOVM, LDSM)."""
    sass = """
//--------------------- .text.HMMA_QGMMA_kernel --------------------------
        .section  .text.HMMA_QGMMA_kernel,"ax",@progbits
HMMA_QGMMA_kernel:
        /* HMMA.16816.F32 x9, QGMMA.64x256x32 below */
        /*0000*/                   HMMA.16816.F32 R16, R4.reuse, R12, RZ ;   /* 0x0000000304007223 */
                                                                          /* 0x004fe20000000007 */
        /*0010*/               @P0 HMMA.1688.F32.TF32 R1, R4, R3, R7 ;
        /*0020*/              @!PT IMMA.8816.S8.S8 R2, R4, R3, R7 ;
.L_x_0:
        /*0030*/              @UP0 DMMA.8x8x4 R16, R4, R12, RZ ;
        /*0040*/                   QGMMA.64x16x32.F32.E4M3.E4M3 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0050*/                   IGMMA.64x8x32.S8.S8 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0060*/                   HGMMA.64x8x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0070*/                   IMMA.16832.S8.S8 R8, R8.ROW, R4.COL, RZ ;
        /*0080*/                   HFMA2 R2, -RZ, RZ, 0, 0 ;
        /*0090*/                   MOVM.16.MT88 R2, R2 ;
        /*00a0*/                   LDSM.16.M88.4 R4, [R2] ;
        /*00b0*/             @!P1 EXIT ;
"""
    by_hand = 2 * (16 * 8 * 16 + 16 * 8 * 8 + 8 * 8 * 16 + 8 * 8 * 4 + 64 * 16 * 32 + 64 * 8 * 32 + 64 * 8 * 16
                   + 16 * 8 * 32)
    assert answers.mma_flops_reference(sass) == by_hand == 131584


_WARP_REGEX = r"/\*[0-9a-f]+\*/\s+(?:@!?\w+\s+)?([A-Z][A-Z0-9_]*)\.(\w+)"


def _mma_flops_misreading(n: int = 8, predicated: bool = True):
    """A student's mma_flops with a misreading: warp-level shapes with this n; the predicated lines skipped when
    ``predicated`` is False."""
    pattern = _WARP_REGEX if predicated else _WARP_REGEX.replace(r"(?:@!?\w+\s+)?", "")

    def mma_flops(sass):
        total = 0
        for base, shape in re.findall(pattern, sass):
            if base in lab.TENSOR_CORE:
                if "x" in shape:
                    dims = [int(v) for v in shape.split("x")]
                else:
                    dims = [16, n, int(shape[3:])] if shape.startswith("16") else [8, n, int(shape[2:])]
                total += 2 * math.prod(dims)
        return total

    return mma_flops


def test_mma_flops_misreadings_get_their_own_hints():
    """Review finding: HMMA.16816 decoded as 16×16×16, or the predicated (@P0) lines skipped, got only the generic
    hint. Each case carries what those misreadings count (the answer side computes it for a hidden case; a visible
    case's are written down and must agree), and an answer equal to one of them is told its mistake, visible and
    hidden alike."""
    assert _mma_flops_misreading()(lab.MMA_FLOPS.visible[0].args[0]) == 8192  # the misreading helper, unmisread
    for case in lab.MMA_FLOPS.visible:
        assert case.args[0].misread == answers.mma_flops_misread(case.args[0]), repr(case.args[0])
    for case in lab.MMA_FLOPS.hidden_cases(0):
        assert case.args[0].misread == answers.mma_flops_misread(case.args[0]), repr(case.args[0])
    misreadings = {"n = 16": (_mma_flops_misreading(n=16), r"a warp-level shape's n is 8, not 16: HMMA\.16816 is"
                                                          r" m16 n8 k16"),
                   "predicated skipped": (_mma_flops_misreading(predicated=False),
                                          r"your count leaves out the predicated lines \(@P0 HMMA…")}
    for fn, hint in misreadings.values():
        for hidden in (False, True):
            with pytest.raises(CheckFailure, match=rf"expected [\d,]+, got [\d,]+\. Hint: {hint}"):
                lab.MMA_FLOPS.check(fn, hidden=hidden)
    # another wrong count keeps the generic hint; a plain string (a case that travelled as data) has no misreadings
    case = lab.MMA_FLOPS.visible[0]
    with pytest.raises(CheckFailure, match="every tensor-core opcode of both levels"):
        lab.MMA_FLOPS.compare("mma_flops", 8191, 8192, case)
    with pytest.raises(CheckFailure, match="every tensor-core opcode of both levels"):
        lab.MMA_FLOPS.compare("mma_flops", 16384, 8192, type(case)((str(case.args[0]),)))


def test_mma_flops_visible_cases_are_fixed_data(monkeypatch):
    """The visible cases (and so their expected values in lab06_xla_sass.expected.json) do not depend on whether
    NVIDIA's toolchain is installed: no compile when they are built; where it is installed, the saved listings
    are what a fresh compile prints (their instruction lines)."""
    from gpucourse import toolchain

    before = [str(c.args[0]) for c in lab.MMA_FLOPS.visible]
    monkeypatch.setattr(toolchain, "available", lambda: False)
    monkeypatch.setattr(toolchain, "sass_of", lambda *a, **k: pytest.fail("a visible case compiled CUDA"))
    assert [str(c.args[0]) for c in lab._mma_visible()] == before
    monkeypatch.undo()
    saved = lab.saved_sass()
    assert set(saved) == set(lab.SAVED_SOURCES)
    if toolchain.available():
        for name, (src, arch) in lab.SAVED_SOURCES.items():
            fresh = toolchain.sass_of(src, arch=arch)
            assert toolchain.Sass(saved[name]).instructions == fresh.instructions, name
    # the other data types' tensor-core opcodes, as nvdisasm printed them (issue 21)
    assert "QGMMA.64x8x32.F32.E4M3.E4M3" in saved["fp8 wgmma sm_90a"]
    assert "IGMMA.64x8x32.S8.S8" in saved["int8 wgmma sm_90a"]
    assert "DMMA.8x8x4" in saved["fp64 mma sm_90"] and "IMMA.16816.S8.S8" in saved["int8 mma sm_90"]
    assert "IMMA.8816.S8.S8" in saved["int8 mma sm_90"]


# -- sass_counts and measure_times: observed where the student's code runs, judged in the grader ---------------------

def _over_the_wire(x):
    """What crosses between a sandbox and the grader: JSON text of the wire format, decoded (no object crosses)."""
    import json

    from grader.pipeline.wire import decode, encode

    return decode(json.loads(json.dumps(encode(x), allow_nan=True)))


def _message(run):
    try:
        run()
    except CheckFailure as exc:
        return str(exc)
    return None


def test_measure_times_is_judged_from_data_as_live():
    """Every timer of this file, right or wrong, on the visible case and two students' hidden cases: the case sent
    as data (its stand-ins rebuilt from their parameters on one new clock), observed, the observation sent back as
    data and judged against the true times gives the verdict and message of the in-process check — and that
    observation reads the counters the rules need."""
    from grader.pipeline.wire import decode_cases, encode_cases

    p = lab.MEASURE
    timers = {**{k: _cell(v) for k, v in CORRECT_TIMERS.items()}, **{k: _cell(v[0]) for k, v in WRONG_TIMERS.items()}}
    best = _timer()
    timers["best of 5, as NumPy float32"] = lambda slow, fast, *args, clock: tuple(
        np.float32(t) for t in best(slow, fast, *args, clock=clock))
    cases = [*p.visible, *p.hidden_cases(seed=0), *p.hidden_cases(seed=5)]
    sent = decode_cases(_over_the_wire(encode_cases(cases)))
    assert [repr(c.args[:2]) for c in sent] == [repr(c.args[:2]) for c in cases]  # messages name them the same
    failed = set()
    for name, fn in timers.items():
        for case, there in zip(cases, sent):
            want = p.reference(*case.args)
            live = _message(lambda: p.judge(p.observe(fn, case), want, case))
            seen = _over_the_wire(p.observe(fn, there))
            assert set(seen) == {"result", "reads", "workloads"} and len(seen["workloads"]) == 2
            assert _message(lambda: p.judge(seen, want, case)) == live, (name, case)
            failed |= {name} if live else set()
    assert failed == set(WRONG_TIMERS)  # every wrong timer fails on some case, no right one on any
    with pytest.raises(CheckFailure, match="no observation of your timer came back"):
        p.judge({"result": (0.04, 0.02)}, (0.04, 0.02), cases[0])


def test_a_case_sent_as_data_starts_from_fresh_stand_ins_on_one_clock():
    slow, fast, a = lab.MEASURE.visible[0].args
    slow(a), fast(a)  # used once (as a check run twice would): the next run must not inherit it
    again = lab.fresh_workloads(slow, fast)
    assert [w.calls for w in again] == [0, 0] and again[0].clock is again[1].clock is not slow.clock
    assert again[0].clock.workloads == again and again[0].clock.reads == 0
    assert (again[0].seconds, again[1].seconds, again[0].compile_s) == (0.04, 0.02, 0.3)


def _without_answers(monkeypatch, *problems):
    """As in the student edition and a grading sandbox: no reference, no hidden-case generator."""
    import grader.problem as problem_mod

    monkeypatch.setattr(problem_mod, "_answer_module", lambda lab_module: None)
    for p in problems:
        monkeypatch.setattr(p, "reference", None)
        monkeypatch.setattr(p, "hidden", None)
        assert not p.has_answers()


def test_without_the_answer_side_the_timer_is_judged_on_stored_times_and_hidden_cases_only_run(monkeypatch, capsys):
    import grader.seeding as seeding
    from grader.pipeline.wire import decode_cases, encode_cases

    hidden = lab.MEASURE.hidden_cases(seed=3)
    _without_answers(monkeypatch, lab.MEASURE)
    assert lab.MEASURE.visible_expected() == [(0.04, 0.02), (4e-5, 2.5e-5)]  # lab06_xla_sass.expected.json
    lab.MEASURE.check(_timer())
    assert "✓ measure_times: 2 visible cases passed" in capsys.readouterr().out
    with pytest.raises(CheckFailure, match="block_until_ready"):
        lab.MEASURE.check(_timer(sync=False))
    lab.MEASURE.check(_timer(), hidden=True)
    assert "the hidden tests run when your lab is graded" in capsys.readouterr().out
    data = decode_cases(_over_the_wire(encode_cases(hidden)))
    monkeypatch.setattr(seeding, "installed_cases", lambda name: data if name == "measure_times" else None)
    lab.MEASURE.check(_timer(stat=lambda t: sum(t) / len(t), batch=False), hidden=True)  # wrong, judged outside
    assert "ran on 9 hidden cases; they are judged by the grader" in capsys.readouterr().out
    with pytest.raises(CheckFailure, match="raised ZeroDivisionError"):
        lab.MEASURE.check(_cell("def measure_times(slow, fast, *args, clock):\n    return 1 / 0\n"), hidden=True)


# nvdisasm's SASS of toolchain.ELEMENTWISE_CU (out[i] = fmaxf(x[i] * y[i] + z[i], 0)) for sm_90, as NVRTC 13.5 and
# nvdisasm V13.5.37 print it (the trailing NOP padding left out). Read by eye: x*y + z is the one FFMA at 0x0140,
# the relu the FMNMX after it; three LDG.E, one STG.E; no tensor-core instruction (no HMMA, no HGMMA).
ELEMENTWISE_SASS_13_5 = """\
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   S2UR UR4, SR_CTAID.X ;
        /*0030*/                   LDC R11, c[0x0][RZ] ;
        /*0040*/                   IMAD R11, R11, UR4, R0 ;
        /*0050*/                   ULDC UR4, c[0x0][0x230] ;
        /*0060*/                   ISETP.GE.AND P0, PT, R11, UR4, PT ;
        /*0070*/               @P0 EXIT ;
        /*0080*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0090*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*00a0*/                   LDC.64 R4, c[0x0][0x218] ;
        /*00b0*/                   LDC.64 R6, c[0x0][0x220] ;
        /*00c0*/                   IMAD.WIDE R2, R11, 0x4, R2 ;
        /*00d0*/                   LDC.64 R8, c[0x0][0x228] ;
        /*00e0*/                   LDG.E R3, desc[UR4][R2.64] ;
        /*00f0*/                   IMAD.WIDE R4, R11, 0x4, R4 ;
        /*0100*/                   LDG.E R4, desc[UR4][R4.64] ;
        /*0110*/                   IMAD.WIDE R6, R11, 0x4, R6 ;
        /*0120*/                   LDG.E R7, desc[UR4][R6.64] ;
        /*0130*/                   IMAD.WIDE R8, R11, 0x4, R8 ;
        /*0140*/                   FFMA R0, R4, R3, R7 ;
        /*0150*/                   FMNMX R11, RZ, R0, !PT ;
        /*0160*/                   STG.E desc[UR4][R8.64], R11 ;
        /*0170*/                   EXIT ;
        /*0180*/                   BRA `(.L_x_0);
"""
EYE_COUNTS = [{"FFMA": 1, "tensor_flops": 0},  # the SASS above
              {"FFMA": 0, "tensor_flops": 2 * 2 * 16 * 8 * 16},  # wmma 16×16×16: two HMMA.16816.F32 (0x0160, 0x0170)
              {"FFMA": 0, "tensor_flops": 2 * 64 * 8 * 16},  # wgmma m64n8k16: one HGMMA.64x8x16.F32
              {"FFMA": 0, "tensor_flops": 2 * 64 * 8 * 32},  # fp8 wgmma m64n8k32: one QGMMA.64x8x32.F32.E4M3.E4M3
              # Horner with 3 terms in a kernel named FFMA_poly: FADD (the first term folds), FFMA at 0x00f0 and
              # 0x0100; the name's 9 other 'FFMA's in the listing are no instructions
              {"FFMA": 2, "tensor_flops": 0},
              # mixed_fma(3, 2, 2): FFMA at 0x01b0 and 0x01d0 (the first float term folds); HFMA2 at 0x01e0,
              # HFMA2.MMA at 0x0150 and 0x0200, DFMA at 0x01f0 — no FP32 FMA, no matrix instruction
              {"FFMA": 2, "tensor_flops": 0}]


def test_the_stored_visible_counts_are_what_nvdisasm_printed_read_by_eye():
    """The visible counts ship as data (lab06_xla_sass.expected.json) with the toolchain that computed them; they
    are the counts read by eye in nvdisasm's output (above, and the HMMA/HGMMA lines of the other two kernels
    printed by that toolchain). Where that toolchain is installed, it still prints exactly that SASS."""
    from gpucourse import toolchain
    from grader.problem import _expected_data

    stored = _expected_data(lab)["sass_counts"]
    assert [s["counts"] for s in stored] == EYE_COUNTS
    made_with = {s["toolchain"] for s in stored}
    assert made_with == {"NVRTC 13.5 (nvidia-cuda-nvrtc 13.5.37), nvdisasm V13.5.37"}
    lines = ELEMENTWISE_SASS_13_5.splitlines()
    words = [ln.split("*/")[1].split() for ln in lines]  # by hand, not with Sass.count: skip a predicate (@P0)
    opcodes = [w[1] if w[0].startswith("@") else w[0] for w in words]
    assert opcodes[7] == "EXIT" and len(opcodes) == 25
    assert opcodes.count("FFMA") == 1 and opcodes.count("FMNMX") == 1 and opcodes.count("LDG.E") == 3
    assert not any(op.split(".")[0] in lab.TENSOR_CORE for op in opcodes)
    if toolchain.versions() in made_with:
        text = toolchain.sass_of(lab.ELEMENTWISE_CU).text
        printed = [ln for ln in text.splitlines() if ln.strip().startswith("/*") and not ln.strip().endswith("NOP;")]
        assert printed == lines


def _right_counts(source, arch="sm_90"):
    """A student's sass_counts: the toolchain's steps, the FFMA count, then the student's mma_flops."""
    from gpucourse import toolchain

    sass = toolchain.disassemble(toolchain.compile_cuda(source, arch=arch))
    return {"FFMA": toolchain.Sass(sass).count("FFMA"), "tensor_flops": _mma_flops_by_variants(sass)}


def test_sass_counts_counting_the_text_overcounts_a_kernel_named_ffma():
    """Review finding: counting 'FFMA' as a substring of nvdisasm's text got full marks; a kernel whose name holds
    FFMA (a visible case and a hidden one) has it in the listing's headers, labels and symbols: the count of the
    text is too high there, and the message says to count instructions."""
    from gpucourse import toolchain

    if not toolchain.available():
        pytest.skip(f"needs NVIDIA's compiler wheels: {toolchain.describe()}")

    def text_count(source, arch="sm_90"):
        sass = toolchain.disassemble(toolchain.compile_cuda(source, arch=arch))
        return {"FFMA": sass.count("FFMA"), "tensor_flops": _mma_flops_by_variants(sass)}

    p = lab.SASS_COUNTS
    named = [c for c in p.visible + p.hidden_cases(0) if "FFMA" in repr(p.readable(c))]
    assert len(named) == 2
    for case in named:
        sass = toolchain.sass_of(*case.args)
        assert sass.text.count("FFMA") > sass.count("FFMA") > 0
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match=r"<CUDA C: \w*FFMA\w*>, 'sm_90'\) → FFMA: expected \d+, got \d+\. Hint:"
                                               r" count instructions, not text: the kernel's name '\w*FFMA\w*'"):
            p.check(text_count, hidden=hidden)
    p.check(_right_counts)
    p.check(_right_counts, hidden=True)


def test_sass_counts_counting_every_fma_opcode_is_told_only_ffma_counts():
    """A kernel with float, half2 and double FMAs (visible and hidden): counting every opcode that holds 'FMA'
    (HFMA2, HFMA2.MMA, DFMA) overcounts, and the message names the other two kinds. The opcodes are read here by
    splitting nvdisasm's lines, not with Sass.count."""
    import re

    from gpucourse import toolchain

    if not toolchain.available():
        pytest.skip(f"needs NVIDIA's compiler wheels: {toolchain.describe()}")
    p = lab.SASS_COUNTS
    mixed = [c for c in p.visible + p.hidden_cases(0) if "__hfma2" in c.args[0]]
    assert len(mixed) == 2
    for case in mixed:
        lines = [ln.split("*/", 1)[1].split() for ln in toolchain.sass_of(*case.args).text.splitlines()
                 if re.match(r"\s*/\*[0-9a-f]{4}\*/", ln)]
        opcodes = [w[1] if w[0].startswith("@") else w[0] for w in lines if w]
        bases = {op.split(".")[0] for op in opcodes}
        assert {"FFMA", "HFMA2", "DFMA"} <= bases, bases

    def every_fma(source, arch="sm_90"):
        sass = toolchain.disassemble(toolchain.compile_cuda(source, arch=arch))
        n = len(re.findall(r"^\s*/\*[0-9a-f]+\*/\s+[A-Z0-9]*FMA", sass, re.M))
        return {"FFMA": n, "tensor_flops": _mma_flops_by_variants(sass)}

    for hidden in (False, True):
        with pytest.raises(CheckFailure, match=r"<CUDA C: mixed_fma>, 'sm_90'\) → FFMA: expected \d+, got \d+\. Hint:"
                                               r" only FP32 FMAs count: .*HFMA2.*DFMA"):
            p.check(every_fma, hidden=hidden)


def test_sass_counts_without_the_answer_side_and_with_another_toolchain(monkeypatch, capsys):
    """Without the answer side the visible check judges against the stored counts; where the installed toolchain
    is not the one that computed them, a disagreement is said to be the versions', not called a wrong answer."""
    from gpucourse import toolchain

    if not toolchain.available():
        pytest.skip(f"needs NVIDIA's compiler wheels: {toolchain.describe()}")
    p = lab.SASS_COUNTS

    right = _right_counts

    def no_arch(source, arch="sm_90"):  # forgets the target: wgmma does not compile for sm_90
        return _right_counts(source)

    def plus_one(source, arch="sm_90"):
        return {k: v + 1 for k, v in _right_counts(source, arch).items()}

    _without_answers(monkeypatch, p)
    p.check(right)
    assert f"✓ sass_counts: {len(p.visible)} visible cases passed (NVRTC" in capsys.readouterr().out
    with pytest.raises(CheckFailure, match="raised RuntimeError"):
        p.check(no_arch)
    with pytest.raises(CheckFailure, match=r"→ FFMA: expected 1, got 2"):
        p.check(plus_one)
    monkeypatch.setattr(toolchain, "versions", lambda: "NVRTC 99.0, nvdisasm V99.0.0")
    p.check(right)  # the same counts under another version: right
    with pytest.raises(CheckFailure, match="cannot be judged with this toolchain") as info:
        p.check(plus_one)
    assert "computed with NVRTC 13.5" in str(info.value) and "NVRTC 99.0" in str(info.value)


def test_sass_counts_is_judged_from_data_as_live():
    """The hidden cases travel as plain strings and are shown by their kernel's name again; the observation (counts
    and versions) judged in the grader gives the in-process verdict; a reference count off by one is caught."""
    from gpucourse import toolchain
    from grader.pipeline.wire import decode_cases, encode_cases

    if not toolchain.available():
        pytest.skip(f"needs NVIDIA's compiler wheels: {toolchain.describe()}")
    p = lab.SASS_COUNTS
    cases = p.hidden_cases(seed=1)
    sent = decode_cases(_over_the_wire(encode_cases(cases)))
    assert all(type(c.args[0]) is str for c in sent)
    assert [p.readable(c).call_text(p.name) for c in sent] == [c.call_text(p.name) for c in cases]
    assert "<CUDA C: poly>" in cases[0].call_text(p.name)

    right = _right_counts

    for case, there in zip(cases, sent):
        want = p.reference(*case.args)
        seen = _over_the_wire(p.observe(right, there))
        assert seen == {"result": want, "toolchain": toolchain.versions()}
        p.judge(seen, want, case)
        off = {**want, "FFMA": want["FFMA"] + 1}
        with pytest.raises(CheckFailure, match="→ FFMA"):
            p.judge({**seen, "result": off}, want, case)


def test_without_the_toolchain_sass_counts_must_raise_toolchain_missing_and_stays_with_the_kernel(monkeypatch,
                                                                                                  capsys):
    from gpucourse import toolchain
    from grader.pipeline.recheck import _called, _observed

    p = lab.SASS_COUNTS
    assert not _called(p)  # observed: re-checked only by observation
    assert _observed(p, True) == toolchain.available()
    monkeypatch.setattr(toolchain, "missing", lambda: ["nvdisasm (nvidia-cuda-nvdisasm)"])
    assert p.observe is None and not _observed(p, True)  # the re-check leaves its cells to the kernel's verdict

    def compiles(source, arch="sm_90"):
        toolchain.require()

    p.check(compiles)
    p.check(compiles, hidden=True)
    assert "[toolchain missing]" in capsys.readouterr().out
    with pytest.raises(CheckFailure, match="should have raised ToolchainMissing"):
        p.check(lambda source, arch="sm_90": {"FFMA": 1, "tensor_flops": 0})


def test_review_fusion_payoff_hints_teach_the_method_not_the_formula():
    """Review finding 4: the rows hint states no closed form; a wrong dominant term gets a hint naming the unfused
    time's three terms with calls_u dispatches."""
    case = lab.TIME_MODEL.visible[0]
    rows, dominant = answers.fusion_payoff_rows(*case.args)
    with pytest.raises(CheckFailure) as e:
        lab.TIME_MODEL.check(lambda *a: (rows + 7, dominant))
    assert "linear" in str(e.value) and "target·calls_f" not in str(e.value) and "largest integer" not in str(e.value)
    wrong = next(t for t in lab.TERMS if t != dominant)
    with pytest.raises(CheckFailure, match="UNFUSED time.*calls_u"):
        lab.TIME_MODEL.check(lambda *a: (rows, wrong))


def test_review_specs_state_static_counts_and_that_arch_is_not_graded():
    """Review findings 7 and 8: mma_flops is a static count per issuing warp/warpgroup; sass_counts says arch is
    not graded by itself (a function ignoring it cannot be told apart without a failing compile)."""
    assert "STATIC count per issuing warp" in lab.MMA_FLOPS.spec and "warpgroup" in lab.MMA_FLOPS.spec
    assert "not graded by itself" in lab.SASS_COUNTS.spec


@pytest.mark.parametrize("name", ["fused_bias_gelu", "fixed_scale_tanh"])
def test_the_shown_example_has_the_inputs_dtype_while_the_checks_keep_the_float64_truth(name, capsys):
    """The spec says the result has the inputs' dtype: .show()'s example must not print the reference's float64
    (review 2026-12-06 r2, finding 11), while the visible expected values the checks use stay float64."""
    problem = lab.problems[name]
    problem.show()
    example = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Example:"))
    dtype = str(np.asarray(problem.visible[0].args[0]).dtype)
    assert example.endswith(f"->  <{dtype} array {tuple(np.asarray(problem.visible[0].args[0]).shape)}>"), example
    assert np.asarray(problem.visible_expected()[0]).dtype == np.float64


def test_numpy_on_a_tracer_points_at_the_students_line():
    """Issue 22: np.tanh inside the jitted function names the cell's line and says to use jnp, and the exact-erf
    GELU is told that the spec wants the tanh approximation (the ninth GPU read)."""
    import linecache

    import jax
    import jax.numpy as jnp

    from grader.checks import CheckFailure
    from grader.labs import lab06_xla_sass as lab6

    src = ("def fused_bias_gelu(x, b, r):\n    u = x + b\n"
           "    return r + 0.5 * u * (1 + np.tanh(0.7978845608 * (u + 0.044715 * u ** 3)))\n")
    linecache.cache["<cell np-on-tracer>"] = (len(src), None, src.splitlines(True), "<cell np-on-tracer>")
    ns = {"np": np, "jnp": jnp}
    exec(compile(src, "<cell np-on-tracer>", "exec"), ns)  # noqa: S102
    with pytest.raises(CheckFailure) as info:
        lab6.problems["fused_bias_gelu"].check(ns["fused_bias_gelu"])
    assert "at line 3 of your cell (`return r + 0.5 * u * (1 + np.tanh(" in str(info.value)
    assert "use jax.numpy" in str(info.value)
    f32 = jnp.float32

    def exact_gelu(x, b, r):  # computed in float32 and rounded once, but the erf form
        return (r.astype(f32) + jax.nn.gelu(x.astype(f32) + b.astype(f32), approximate=False)).astype(x.dtype)

    with pytest.raises(CheckFailure, match="the spec's is the tanh approximation"):
        lab6.problems["fused_bias_gelu"].check(exact_gelu)


def test_the_bitcast_case_never_draws_a_square_reshape():
    """A grading run seeded for student "b" (the fourth and fifth independent attacks: `0/0`, "grader error:
    AssertionError ('bitcast', ['parameter', 'sort'])") drew m = n for the bitcast case: reshaping (m, m) to (m, m)
    moves nothing and XLA emits no bitcast. The sizes are drawn apart; a square one is what failed."""
    from grader.answers import lab06_xla_sass as answers

    assert all(m != n for m, n in (answers._two_sizes(np.random.default_rng(s)) for s in range(2000)))
    with pytest.raises(AssertionError):
        answers.bookkeeping_first_hlo("sort", "bitcast", 7, 7)
    assert "bitcast" in answers.bookkeeping_first_hlo("sort", "bitcast", 7, 9)


def test_rows_within_hints_name_each_mistake():
    """Round-2 read, kept for the new exercise: right traffic at 4 bytes an element fails the bfloat16 visible case
    with the dtype's size named; and the other mistakes the hints name: each row vector as m·n, the vectors left
    out, a tie left out, the sides swapped."""
    import contextlib
    import io

    import jax.numpy as jnp

    def counted(four=False, vectors_per_row=False, no_vectors=False, strict=False, swapped=False):
        def rows_within(n, dtype, ops, budget_bytes):
            size = 4 if four else jnp.dtype(dtype).itemsize
            vectors = 0 if no_vectors or vectors_per_row else n * sum(op.endswith("_row") for op in ops)
            widest = n * sum(op.endswith("_full") or (vectors_per_row and op.endswith("_row")) for op in ops)
            found = []
            for per_row in (2 * n * len(ops) + widest, 2 * n + widest):
                m = 0
                while size * (per_row * (m + 1) + vectors) + strict <= budget_bytes:
                    m += 1
                found.append(m)
            return tuple(found[::-1] if swapped else found)

        return rows_within

    for kw, why in ((dict(four=True), "at 4 bytes an element, but a bfloat16 element is 2 bytes"),
                    (dict(vectors_per_row=True), "each row vector moves m·n elements"),
                    (dict(no_vectors=True), "without the row vectors' bytes"),
                    (dict(strict=True), r"one row short: 511 rows fit — a traffic equal to the budget fits \(≤"),
                    (dict(swapped=True), "the other side's answer")):
        with pytest.raises(CheckFailure, match=why), contextlib.redirect_stdout(io.StringIO()):
            lab.problems["rows_within"].check(counted(**kw))
    lab.problems["rows_within"].check(counted())  # the same loop, counted right


def test_the_given_gelu_is_jax_own_tanh_gelu_and_the_exercise_is_the_precision_around_it():
    """lab.gelu_tanh is handed out (issue 20: the formula is not the exercise): it equals jax.nn.gelu(approximate=True),
    the ground truth it is checked against, and in bfloat16 it computes in bfloat16 — so wrapping it without the
    float32 casts still fails, and with them passes."""
    import jax
    import jax.numpy as jnp

    u = jnp.linspace(-6, 6, 1001, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(lab.gelu_tanh(u)), np.asarray(jax.nn.gelu(u, approximate=True)),
                               rtol=1e-6, atol=1e-6)
    assert lab.gelu_tanh(u.astype(jnp.bfloat16)).dtype == jnp.bfloat16

    def bf16_throughout(x, b, r):
        return r + lab.gelu_tanh(x + b)

    def float32_once(x, b, r):
        f32 = jnp.float32
        return (r.astype(f32) + lab.gelu_tanh(x.astype(f32) + b.astype(f32))).astype(x.dtype)

    with pytest.raises(CheckFailure, match="one bfloat16 rounding"):
        lab.problems["fused_bias_gelu"].check(bf16_throughout)
    lab.problems["fused_bias_gelu"].check(float32_once)
