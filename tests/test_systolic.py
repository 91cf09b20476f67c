"""The cycle-stepped weight-stationary systolic array: results, cycle counts, traffic, tiling, schedules."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import systolic


@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (4, 3, 3), (7, 2, 5), (1, 8, 3), (9, 6, 1), (5, 5, 5)])
def test_matmul_is_exact_and_takes_the_formula_cycles(M, K, N):
    rng = np.random.default_rng(M * 100 + K * 10 + N)
    A, W = rng.integers(-5, 6, (M, K)).astype(float), rng.integers(-5, 6, (K, N)).astype(float)
    run = systolic.matmul(A, W)
    assert np.array_equal(run.C, A @ W)
    assert run.cycles == systolic.cycles(M, K, N) == M + K + N - 2
    assert run.useful_macs == M * K * N
    assert (run.weight_loads, run.activation_loads, run.output_stores) == (K * N, M * K, M * N)


def test_one_cycle_fewer_loses_the_last_result():
    """The cycle count is tight: the last result leaves the bottom in the very last cycle."""
    rng = np.random.default_rng(1)
    A, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    hw = systolic.WeightStationaryArray(W)
    outs = [hw.tick(systolic.skewed_inputs(A, t)[0]) for t in range(systolic.cycles(3, 4, 2))]
    assert np.isclose(outs[-1][1], (A @ W)[2, 1])  # C[M-1, N-1] leaves at cycle (M-1)+(K-1)+(N-1)
    assert not np.isclose(outs[-2][1], (A @ W)[2, 1])


def test_pe_step_moves_activations_right_and_sums_down():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    p = np.array([[10.0, 20.0], [30.0, 40.0]])
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    a_new, p_new = systolic.pe_step(a, p, W, np.array([5.0, 6.0]))
    assert np.array_equal(a_new, [[5.0, 1.0], [6.0, 3.0]])
    assert np.array_equal(p_new, [[5.0, 2.0], [10.0 + 18.0, 20.0 + 12.0]])
    assert np.array_equal(a, [[1.0, 2.0], [3.0, 4.0]]) and np.array_equal(p, [[10.0, 20.0], [30.0, 40.0]])


def test_frames_follow_the_static_schedule():
    A, W = np.ones((4, 3)), np.ones((3, 2))
    run = systolic.matmul(A, W, record=True)
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
    r1 = systolic.matmul(np.zeros((5, 3)), W, record=True)
    r2 = systolic.matmul(np.random.default_rng(0).standard_normal((5, 3)) * 1e9, W, record=True)
    assert r1.cycles == r2.cycles
    assert all(np.array_equal(f1.active, f2.active) for f1, f2 in zip(r1.frames, r2.frames))


def test_tile_in_a_larger_array_matches_the_tiling_model():
    rng = np.random.default_rng(3)
    A, W = rng.standard_normal((10, 5)), rng.standard_normal((5, 3))
    run = systolic.matmul(A, W, rows=8, cols=8)
    model = systolic.TiledGemm(10, 5, 3, 8, 8)
    assert np.allclose(run.C, A @ W)
    assert run.cycles == model.cycles == 10 + 8 + 8 - 2
    assert run.utilization == pytest.approx(model.utilization)
    with pytest.raises(ValueError):
        systolic.WeightStationaryArray(np.ones((9, 2)), rows=8, cols=8)


def test_tiled_gemm_counts_tiles_padding_and_pipeline():
    t = systolic.TiledGemm(1024, 300, 200, 128, 128)
    assert t.tiles == 3 * 2
    assert t.cycles == 6 * (1024 + 254)
    assert t.utilization == pytest.approx(1024 * 300 * 200 / (t.cycles * 128 * 128))
    assert t.utilization == pytest.approx(t.spatial * t.temporal)
    assert systolic.TiledGemm(1, 4096, 4096).utilization == pytest.approx(1 / 255)
    assert systolic.TiledGemm(8192, 4096, 4096).utilization > 0.96


def test_warp_scheduler_finish_time_depends_on_latencies():
    fixed = [systolic.warp_schedule_cycles(4, 3, 10, lambda r: 50, np.random.default_rng(s)) for s in range(3)]
    assert len(set(fixed)) == 1  # no randomness: the same time every run
    varied = {systolic.warp_schedule_cycles(4, 3, 10, lambda r: r.choice([20, 300]), np.random.default_rng(s))
              for s in range(10)}
    assert len(varied) > 1
    # with one warp nothing hides latency: 3 × (1 issue + 50 latency) then the last 10 compute cycles, serialised
    assert systolic.warp_schedule_cycles(1, 3, 10, lambda r: 50, np.random.default_rng(0)) == 3 * (1 + 50 + 10)


def test_figures_draw_without_error():
    import matplotlib

    matplotlib.use("Agg")
    run = systolic.matmul(np.ones((2, 2)), np.eye(2), record=True)
    fig = systolic.frame_grid(run, np.eye(2), ncols=2)
    assert len(fig.axes) == 4
    html = systolic.animate(run, np.eye(2), interval_ms=100).to_jshtml()
    assert "<script" in html and html.count("data:image/png") >= run.cycles


# -- lab 7's systolic_matmul checker: the result must come out of the array ------------------------------------------

def _solution(A, W):
    M, K = A.shape
    N = W.shape[1]
    hw = systolic.WeightStationaryArray(W)
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
