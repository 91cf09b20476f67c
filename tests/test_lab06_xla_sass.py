"""Lab 6's new checks, exercised directly: the fused kernel's coalescing and one-pass requirements (on the
instrumented executor), the hidden cases' coverage, the measurement exercise's method checks, and the time model."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from grader.checks import CheckFailure
from grader.labs import lab06_xla_sass as lab

cuda = gc.get_backend().cuda


@cuda.jit
def _good(x, w, b, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = max(x[i, j] * w[j] + b[j], 0.0)


@cuda.jit
def _two_pass(x, w, b, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * w[j] + b[j]
        out[i, j] = max(out[i, j], 0.0)


@cuda.jit
def _rows_on_x(x, w, b, out):  # right values, but the lanes of a warp take different rows: uncoalesced
    i, blk = cuda.grid(2)
    if i < out.shape[0] and blk == 0:
        for j in range(out.shape[1]):
            out[i, j] = max(x[i, j] * w[j] + b[j], 0.0)


def test_fused_kernel_passes_and_its_traffic_equals_xlas():
    case = lab.KERNEL.visible[0]
    grid, block, args, _ = lab._kernel_launch(case)
    r = gc.simt.run(_good, grid, block, *args)
    lab._kernel_require(r, case, "good")  # no exception
    t = lab.traffic(r)
    x = case.args[0]
    assert t["out"]["writes"] == x.size and t["out"]["reads"] == 0 and t["x"]["read"] == x.size
    assert r.sectors_per_request("x") <= lab.MAX_SECTORS
    lab.KERNEL.check(_good, hidden=True)


def test_two_pass_kernel_fails_on_the_round_trip():
    with pytest.raises(CheckFailure, match="reads `out` back"):
        lab.KERNEL.check(_two_pass)


def test_uncoalesced_kernel_fails_on_sectors():
    from grader.problem import Case

    rng = np.random.default_rng(3)
    case = Case((rng.standard_normal((40, 45)).astype(np.float32), rng.standard_normal(45).astype(np.float32),
                 rng.standard_normal(45).astype(np.float32)))
    grid, block, args, _ = lab._kernel_launch(case)
    r = gc.simt.run(_rows_on_x, grid, block, *args)
    assert np.allclose(args[3], lab.scale_bias_relu_reference(*case.args), atol=1e-5)  # the values are right ...
    with pytest.raises(CheckFailure, match="sectors"):  # ... the access pattern is not
        lab._kernel_require(r, case, "rows on x")


def test_hidden_kernel_cases_cover_the_boundaries():
    shapes = [c.args[0].shape for c in lab.KERNEL.hidden_cases()]
    assert any(m == 1 for m, _ in shapes) and any(n < 32 for _, n in shapes) and any(m == n for m, n in shapes)
    assert all(n % 32 and m % 4 for m, n in shapes if m > 1)  # never multiples of the block
    assert all(c.args[0].dtype == np.float32 for c in lab.KERNEL.hidden_cases())


def test_time_model_hidden_cases_reach_every_dominant_term():
    answers = [lab.fusion_time_ratio(*c.args) for c in lab.TIME_MODEL.hidden_cases()]
    assert {d for _, d in answers} == set(lab.TERMS)
    visible = lab.fusion_time_ratio(*lab.TIME_MODEL.visible[0].args)
    assert visible[0] == pytest.approx((3 * 12e-6 + 8 * 2**22 / 20e9 + 2048e-6) / (12e-6 + 4 * 2**22 / 20e9))


def _timer(sync=True, warmup=True, stat=min, runs=5):
    import time

    import jax

    def measure_times(slow, fast, *args):
        def one(fn):
            if warmup:
                jax.block_until_ready(fn(*args))
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                out = fn(*args)
                if sync:
                    jax.block_until_ready(out)
                times.append(time.perf_counter() - t0)
            return stat(times)
        return one(slow), one(fast)
    return measure_times


def test_measure_exercise_is_exact_for_the_right_method_and_names_each_mistake():
    import statistics

    lab.MEASURE.check(_timer(), hidden=True)
    lab.MEASURE.check(_timer(stat=statistics.median), hidden=True)
    with pytest.raises(CheckFailure, match="block_until_ready"):
        lab.MEASURE.check(_timer(sync=False))
    with pytest.raises(CheckFailure, match="at least 4 times"):
        lab.MEASURE.check(_timer(runs=2))
    with pytest.raises(CheckFailure, match="first call"):
        lab.MEASURE.check(_timer(warmup=False, stat=lambda t: sum(t) / len(t)))
    with pytest.raises(CheckFailure, match="slow run"):  # a mean over a run hit by a load spike (hidden case)
        lab.MEASURE.check(_timer(stat=lambda t: sum(t) / len(t)), hidden=True)


def test_the_virtual_clock_is_removed_afterwards():
    import time

    before = time.perf_counter()
    lab.MEASURE.check(_timer())
    assert 0 <= time.perf_counter() - before < 60  # the real clock is back


def test_sass_counts_cases_include_the_sm90a_target():
    assert ("sm_90a" in {c.args[1] for c in lab.SASS_COUNTS.visible}
            and "sm_90a" in {c.args[1] for c in lab.SASS_COUNTS.hidden_cases()})
