"""The cycle-stepped weight-stationary systolic array: results, cycle counts, traffic, tiling, schedules.

The register-level array (PE registers, lab 7's exercises 1 and 2) is the answer side's,
grader/answers/systolic_course.py; the course installs the array seen from its edges (a delay line), the tiled array
and the course's stored runs of the register-level one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpucourse import systolic
from grader.answers import systolic_course as registers
from grader.answers.lab07_tpu import pe_step


@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (4, 3, 3), (7, 2, 5), (1, 8, 3), (9, 6, 1), (5, 5, 5)])
def test_matmul_is_exact_and_takes_the_formula_cycles(M, K, N):
    rng = np.random.default_rng(M * 100 + K * 10 + N)
    A, W = rng.integers(-5, 6, (M, K)).astype(float), rng.integers(-5, 6, (K, N)).astype(float)
    run = registers.matmul(A, W)
    assert np.array_equal(run.C, A @ W)
    assert run.cycles == systolic.cycles(M, K, N) == M + K + N - 2
    assert run.useful_macs == M * K * N
    assert (run.weight_loads, run.activation_loads, run.output_stores) == (K * N, M * K, M * N)


def test_one_cycle_fewer_loses_the_last_result():
    """The cycle count is tight: the last result leaves the bottom in the very last cycle."""
    rng = np.random.default_rng(1)
    A, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    hw = systolic.WeightStationaryArray(W)
    outs = [hw.tick(registers.skewed_inputs(A, t)[0]) for t in range(systolic.cycles(3, 4, 2))]
    assert np.isclose(outs[-1][1], (A @ W)[2, 1])  # C[M-1, N-1] leaves at cycle (M-1)+(K-1)+(N-1)
    assert not np.isclose(outs[-2][1], (A @ W)[2, 1])


def test_pe_step_moves_activations_right_and_sums_down():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    p = np.array([[10.0, 20.0], [30.0, 40.0]])
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    a_new, p_new = pe_step(a, p, W, np.array([5.0, 6.0]))
    assert np.array_equal(a_new, [[5.0, 1.0], [6.0, 3.0]])
    assert np.array_equal(p_new, [[5.0, 2.0], [10.0 + 18.0, 20.0 + 12.0]])
    assert np.array_equal(a, [[1.0, 2.0], [3.0, 4.0]]) and np.array_equal(p, [[10.0, 20.0], [30.0, 40.0]])


def test_frames_follow_the_static_schedule():
    A, W = np.ones((4, 3)), np.ones((3, 2))
    run = registers.matmul(A, W, record=True)
    sched = systolic.schedule(4, 3, 2)
    assert len(run.frames) == run.cycles
    for f in run.frames:
        planned = np.zeros((3, 2), bool)
        planned[np.nonzero(sched == f.cycle)[1:]] = True
        assert np.array_equal(planned, f.active)
    leaving = sorted((m, n) for f in run.frames for n, (m, _) in f.out.items())
    assert leaving == [(m, n) for m in range(4) for n in range(2)]  # every result leaves exactly once


def test_schedule_is_data_independent():
    W = np.arange(12.0).reshape(3, 4)
    r1 = registers.matmul(np.zeros((5, 3)), W, record=True)
    r2 = registers.matmul(np.random.default_rng(0).standard_normal((5, 3)) * 1e9, W, record=True)
    assert r1.cycles == r2.cycles
    assert all(np.array_equal(f1.active, f2.active) for f1, f2 in zip(r1.frames, r2.frames))


def test_tile_in_a_larger_array_matches_the_tiling_model():
    rng = np.random.default_rng(3)
    A, W = rng.standard_normal((10, 5)), rng.standard_normal((5, 3))
    run = registers.matmul(A, W, rows=8, cols=8)
    model = systolic.TiledGemm(10, 5, 3, 8, 8)
    assert np.allclose(run.C, A @ W)
    assert run.cycles == model.cycles == 10 + 8 + 8 - 2
    assert run.utilization == pytest.approx(model.utilization)
    with pytest.raises(ValueError):
        systolic.WeightStationaryArray(np.ones((9, 2)), rows=8, cols=8)


@pytest.mark.parametrize("rows, cols", [(4, 4), (4, 3), (3, 5)])
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 9])
@pytest.mark.parametrize("buffers", [1, 2])
def test_tiled_model_matches_the_cycle_by_cycle_array(rows, cols, M, buffers):
    """The closed form against the array clocked register by register, weight shift chains and latches included:
    M below, at and above the array's rows; K and N multiples and non-multiples of the tile; one and many tiles."""
    rng = np.random.default_rng(rows * 100 + cols * 10 + M + buffers)
    for K, N in ((4, 4), (5, 3), (9, 10), (3, 13), (12, 8)):
        A, W = rng.integers(-3, 4, (M, K)).astype(float), rng.integers(-3, 4, (K, N)).astype(float)
        run = systolic.run_tiled(A, W, rows, cols, buffers=buffers)
        model = systolic.TiledGemm(M, K, N, rows, cols, buffers=buffers)
        assert np.array_equal(run.C, A @ W)
        assert run.cycles == model.cycles, (K, N)
        assert run.useful_macs == M * K * N == run.busy.sum()
        assert run.utilization == pytest.approx(model.utilization)
        assert [s.start for s in run.schedule] == [t * model.period for t in range(model.tiles)]


def test_real_size_array_two_tiles():
    rng = np.random.default_rng(5)
    for M in (5, 128, 200):
        A, W = rng.standard_normal((M, 256)), rng.standard_normal((256, 100))
        run = systolic.run_tiled(A, W, 128, 128)
        assert np.allclose(run.C, A @ W)
        assert run.cycles == systolic.TiledGemm(M, 256, 100).cycles == max(M, 128) + M + 254


def test_the_earliest_schedule_is_tight():
    """Starting any tile one cycle earlier breaks the array: the simulator raises at the cycle it would go wrong."""
    rng = np.random.default_rng(2)
    for M in (2, 4, 7):  # below, at and above rows = 4
        A, W = rng.standard_normal((M, 9)), rng.standard_normal((9, 10))
        sched = systolic.tile_schedule(M, 9, 4)
        for t in range(1, len(sched)):
            early = list(sched)
            early[t] = systolic.TileTimes(sched[t].latch, sched[t].start - 1)
            with pytest.raises(systolic.ScheduleHazard):
                systolic.run_tiled(A, W, 4, 4, schedule=early)


def test_one_weight_register_cannot_run_the_double_buffered_schedule():
    rng = np.random.default_rng(4)
    A, W = rng.standard_normal((6, 8)), rng.standard_normal((8, 8))
    with pytest.raises(systolic.ScheduleHazard, match="overwritten"):
        systolic.run_tiled(A, W, 4, 4, buffers=1, schedule=systolic.tile_schedule(6, 4, 4, buffers=2))
    single = systolic.run_tiled(A, W, 4, 4, buffers=1)
    assert np.allclose(single.C, A @ W) and single.cycles == systolic.TiledGemm(6, 8, 8, 4, 4, buffers=1).cycles
    with pytest.raises(ValueError):
        systolic.run_tiled(A, W, 4, 4, schedule=systolic.tile_schedule(6, 3, 4))  # 4 tiles, 3 entries


def test_tiled_gemm_counts_tiles_padding_and_the_weight_load():
    t = systolic.TiledGemm(1024, 300, 200, 128, 128)
    assert t.tiles == 3 * 2 and t.period == 1024
    assert t.cycles == 5 * 1024 + 1024 + 254
    assert t.utilization == pytest.approx(1024 * 300 * 200 / (t.cycles * 128 * 128))
    assert t.utilization == pytest.approx(t.spatial * t.temporal)
    assert systolic.TiledGemm(7, 128, 128).cycles == systolic.cycles(7, 128, 128)  # one tile: fill + stream + drain
    one = systolic.TiledGemm(1, 4096, 4096)  # M = 1: the 128-cycle weight load of every tile limits it
    assert one.weight_load_bound and one.cycles == 1023 * 128 + 1 + 254
    assert one.utilization == pytest.approx(1 / 128, rel=0.01)
    half = next(M for M in range(1, 300) if systolic.TiledGemm(M, 4096, 4096).utilization >= 0.5)
    assert half == 65  # M/128, less the one fill and drain
    assert systolic.TiledGemm(8192, 4096, 4096).utilization > 0.99
    # the model this course used to teach, fill and drain charged to every tile, is far off for many tiles
    assert 1024 * systolic.cycles(1, 128, 128) > 1.9 * one.cycles
    single = systolic.TiledGemm(64, 4096, 4096, buffers=1)
    assert single.period == 64 + 127 and single.cycles > 1.4 * systolic.TiledGemm(64, 4096, 4096).cycles
    with pytest.raises(ValueError):
        systolic.TiledGemm(0, 4, 4)
    with pytest.raises(ValueError):
        systolic.TiledGemm(4, 4, 4, buffers=0)
    with pytest.raises(ValueError):
        systolic.TiledGemm(4, 4, 4, weight_rows_per_cycle=0)


@pytest.mark.parametrize("k", [2, 3, 4, 8])
@pytest.mark.parametrize("buffers", [1, 2, 3, 5])
def test_faster_weight_load_against_the_cycle_by_cycle_array(k, buffers):
    """The weight-load rate is a model parameter (TPU v1: one row per cycle). With k rows per cycle the tiled model
    still agrees with the clocked array to the cycle, whatever limits it: stream, weight load or weight registers."""
    rng = np.random.default_rng(10 * k + buffers)
    limits = set()
    for rows, cols in ((4, 4), (6, 5), (8, 3)):
        for M in (1, 2, 3, 7):
            for K, N in ((9, 10), (12, 8), (3, 13)):
                A, W = rng.integers(-3, 4, (M, K)).astype(float), rng.integers(-3, 4, (K, N)).astype(float)
                run = systolic.run_tiled(A, W, rows, cols, buffers=buffers, weight_rows_per_cycle=k)
                model = systolic.TiledGemm(M, K, N, rows, cols, buffers=buffers, weight_rows_per_cycle=k)
                assert np.array_equal(run.C, A @ W)
                assert run.cycles == model.cycles and run.busy.sum() == M * K * N
                limits.add(model.limit)
    assert buffers == 1 or len(limits) >= 2  # the cases reach more than one regime (one register: always the registers)


def test_faster_weight_load_is_tight_and_bounded_by_the_registers():
    """Starting any tile one cycle early breaks the array, for a fast weight port too; and a fast port with two
    registers is bound by the registers (a column latches tile t only after tile t − 2 has drained)."""
    rng = np.random.default_rng(12)
    A, W = rng.standard_normal((2, 16)), rng.standard_normal((16, 12))
    sched = systolic.tile_schedule(2, 16, 4, buffers=2, weight_rows_per_cycle=4)  # 4 × 4 tiles of 4×3
    for t in range(1, len(sched)):
        early = list(sched)
        early[t] = systolic.TileTimes(sched[t].latch, sched[t].start - 1)
        with pytest.raises(systolic.ScheduleHazard):
            systolic.run_tiled(A, W, 4, 3, schedule=early, weight_rows_per_cycle=4)
    v1, fast2, fast8 = (systolic.TiledGemm(16, 4096, 4096, buffers=b, weight_rows_per_cycle=k)
                        for k, b in ((1, 2), (8, 2), (8, 8)))
    assert v1.limit == "weight load" and v1.period == 128
    assert fast2.limit == "weight registers" and fast2.period == pytest.approx((16 + 127) / 2)
    assert fast8.period == pytest.approx(143 / 8) and fast8.utilization > 0.85 > 0.25 > fast2.utilization


def test_schedulers_under_the_same_memory():
    hit = lambda r: 50  # noqa: E731
    fixed = {systolic.warp_schedule(4, 3, 10, hit, np.random.default_rng(s)).cycles for s in range(3)}
    assert len(fixed) == 1  # no randomness: the same time every run
    # with one warp nothing hides latency: 3 × (1 issue + 50 latency) then the last 10 compute cycles, serialised
    assert systolic.warp_schedule_cycles(1, 3, 10, hit, np.random.default_rng(0)) == 3 * (1 + 50 + 10)
    assert systolic.static_schedule(3, 10, hit, np.random.default_rng(0), buffers=1).cycles == 3 * (1 + 50 + 10)
    mixed = lambda r: r.choice([20, 300])  # noqa: E731
    warps = [systolic.warp_schedule(4, 3, 10, mixed, np.random.default_rng(s)) for s in range(10)]
    static = [systolic.static_schedule(12, 10, mixed, np.random.default_rng(s), buffers=4) for s in range(10)]
    assert len({w.cycles for w in warps}) > 1 and len({s.cycles for s in static}) > 1  # both depend on latency
    assert len({w.order for w in warps}) > 1 and len({s.order for s in static}) == 1  # only one order changes
    assert all(len(s.order) == 12 * 11 for s in static)
    with pytest.raises(ValueError):
        systolic.static_schedule(3, 10, hit, np.random.default_rng(0), buffers=0)


def test_figures_draw_without_error():
    import matplotlib

    matplotlib.use("Agg")
    run = registers.matmul(np.ones((2, 2)), np.eye(2), record=True)
    fig = systolic.frame_grid(run, np.eye(2), ncols=2)
    assert len(fig.axes) == 4
    html = systolic.animate(run, np.eye(2), interval_ms=100).to_jshtml()
    assert "<script" in html and html.count("data:image/png") >= run.cycles


@pytest.mark.parametrize("K, N, M, rows, cols", [(1, 1, 3, None, None), (3, 4, 5, None, None), (4, 2, 1, None, None),
                                                  (2, 3, 6, 5, 4), (5, 5, 2, 5, 7)])
def test_the_installed_array_delivers_what_the_registers_deliver(K, N, M, rows, cols):
    """The course's WeightStationaryArray (a delay line: no PE registers) and the register-level array clocked with
    pe_step deliver the same values at the bottom edge in every cycle, for any input stream (bubbles included)."""
    rng = np.random.default_rng(K * 100 + N * 10 + M)
    W = rng.integers(-4, 5, (K, N)).astype(float)
    edge = systolic.WeightStationaryArray(W, rows, cols)
    regs = registers.RegisterArray(W, rows, cols)
    for t in range(M + (rows or K) + (cols or N) + 3):
        a_in = rng.integers(-4, 5, K).astype(float) * (rng.random(K) < 0.8)
        assert np.array_equal(edge.tick(a_in), regs.tick(a_in, np.full(K, -1)))
    assert edge.cycle == regs.cycle and not hasattr(edge, "p")


def test_the_course_data_is_what_the_register_level_array_gives_today():
    """gpucourse/data/systolic_runs.json (the runs course/07 shows) against the answer side's model, recomputed."""
    stored = json.loads(systolic.DATA.read_text(encoding="utf-8"))
    fresh = json.loads(registers.course_data_text())
    errors = lambda d: [r.pop("max_error") for runs in d["runs"].values() for r in runs]  # noqa: E731
    assert errors(stored) == pytest.approx(errors(fresh), abs=1e-12), "run python -m grader.answers.systolic_course"
    assert stored == fresh, "gpucourse/data/systolic_runs.json is stale: run python -m grader.answers.systolic_course"
    runs = systolic.stored_runs()
    one = runs["cycle_by_cycle"][0]
    assert np.array_equal(one.C, one.A @ one.W) and len(one.frames) == one.cycles == 8


def test_the_register_level_model_is_not_installed():
    for name in ("pe_step", "matmul", "skewed_inputs"):
        assert not hasattr(systolic, name), name


# -- lab 7's systolic_matmul checker: the result must come out of the array ------------------------------------------

def _solution(A, W, hw=None):
    M, K = A.shape
    N = W.shape[1]
    hw = systolic.WeightStationaryArray(W) if hw is None else hw
    C = np.zeros((M, N))
    for t in range(systolic.cycles(M, K, N)):
        m_in = t - np.arange(K)
        ok = (m_in >= 0) & (m_in < M)
        out = hw.tick(np.where(ok, A[np.clip(m_in, 0, M - 1), np.arange(K)], 0.0))
        m_out = t - (K - 1) - np.arange(N)
        done = (m_out >= 0) & (m_out < M)
        C[m_out[done], np.arange(N)[done]] = out[done]
    return C, hw


def _zeros_then_numpy(A, W):
    """Clocks the right number of cycles with nothing in the array, then returns NumPy's answer."""
    M, K = A.shape
    hw = systolic.WeightStationaryArray(W)
    for _ in range(systolic.cycles(M, K, W.shape[1])):
        hw.tick(np.zeros(K))
    return A @ W, hw


def _unskewed_then_numpy(A, W):
    """Feeds whole rows of A at once (no skew) but returns NumPy's answer."""
    M, K = A.shape
    hw = systolic.WeightStationaryArray(W)
    for t in range(systolic.cycles(M, K, W.shape[1])):
        hw.tick(A[t] if t < M else np.zeros(K))
    return A @ W, hw


def test_lab7_systolic_checker_accepts_the_array_and_rejects_numpy_in_disguise():
    from grader.checks import CheckFailure
    from grader.labs.lab07_tpu import SYSTOLIC

    SYSTOLIC.check(_solution)
    SYSTOLIC.check(_solution, hidden=True)
    for cheat in (_zeros_then_numpy, _unskewed_then_numpy):
        for hidden in (False, True):
            with pytest.raises(CheckFailure, match="did not compute it"):
                SYSTOLIC.check(cheat, hidden=hidden)


def _schedule_then_numpy(A, W, hw=None):
    """Review m2: the right schedule (skewed in, exactly M + K + N - 2 cycles, zeros outside it), the array's
    outputs ignored and C computed in NumPy."""
    M, K = A.shape
    hw = systolic.WeightStationaryArray(W) if hw is None else hw
    for t in range(systolic.cycles(M, K, W.shape[1])):
        m_in = t - np.arange(K)
        ok = (m_in >= 0) & (m_in < M)
        hw.tick(np.where(ok, A[np.clip(m_in, 0, M - 1), np.arange(K)], 0.0))
    return A @ W, hw


def test_a_stuck_pe_delivers_a_at_w_with_that_weight_replaced():
    A = np.arange(1.0, 13.0).reshape(4, 3)
    W = np.arange(6.0).reshape(3, 2) - 2
    hw = systolic.WeightStationaryArray(W, stuck=(2, 1, 7.0))
    wired = W.copy()
    wired[2, 1] = 7.0
    C, hw = _solution(A, W, hw)
    np.testing.assert_allclose(C, A @ wired)
    assert np.array_equal(hw.W, W) and hw.stuck == (2, 1, 7.0) and "stuck at 7" in repr(hw)
    with pytest.raises(ValueError, match="outside"):
        systolic.WeightStationaryArray(W, stuck=(3, 0, 1.0))


def test_lab7_systolic_checker_hands_a_faulty_array_so_c_must_come_from_it():
    """Review m2: one visible and one hidden case hand the student a faulty array (a PE's weight stuck at another
    value): a schedule that reads C from the array passes, clocking it twice in a row (the case hands a fresh copy
    each call); NumPy's A @ W after the right schedule fails visible and hidden, the message naming the fault; a new
    array instead of the one handed over is named too."""
    from grader.checks import CheckFailure
    from grader.labs.lab07_tpu import SYSTOLIC

    assert sum("hw" in c.kwargs for c in SYSTOLIC.visible) == 1
    assert sum("hw" in c.kwargs for c in SYSTOLIC.hidden_cases()) == 1
    for hidden in (False, True):
        SYSTOLIC.check(_solution, hidden=hidden)
        SYSTOLIC.check(_solution, hidden=hidden)
        with pytest.raises(CheckFailure, match=r"array is faulty — PE \(\d+, \d+\) multiplies by .* not A @ W"):
            SYSTOLIC.check(_schedule_then_numpy, hidden=hidden)
        with pytest.raises(CheckFailure, match="the one you returned is another"):
            SYSTOLIC.check(lambda A, W, hw=None: _solution(A, W), hidden=hidden)


def test_the_faulty_array_case_travels_as_data():
    """The hidden faulty-array case goes to a grading sandbox as data and comes back an equal array."""
    from grader.labs.lab07_tpu import SYSTOLIC
    from grader.wire import decode_cases, encode_cases

    case = next(c for c in SYSTOLIC.hidden_cases() if "hw" in c.kwargs)
    (back,) = decode_cases(encode_cases([case]))
    hw = back.kwargs["hw"]
    assert isinstance(hw, systolic.WeightStationaryArray) and hw.stuck == case.kwargs["hw"].stuck
    assert np.array_equal(hw.wired(), case.kwargs["hw"].wired())
