"""The timing helper waits for asynchronous work, warms up, repeats and summarises robustly."""

from __future__ import annotations

import threading
import time

import pytest

import gpucourse as gc
from gpucourse.timing import Timing, format_seconds


class AsyncResult:
    """Like a JAX array: returned at once, ready only after `delay` seconds of background work."""

    def __init__(self, delay: float):
        self._done = threading.Event()
        threading.Timer(delay, self._done.set).start()

    def block_until_ready(self):
        self._done.wait()
        return self


def test_measure_waits_for_asynchronous_results():
    t = gc.measure(lambda: AsyncResult(0.05), warmup=1, repeat=3)
    assert t.median >= 0.045, f"measure returned before the work finished: {t}"
    naive = gc.measure(lambda: AsyncResult(0.05), warmup=0, repeat=3, sync=False)
    assert naive.median < 0.01, "sync=False must stop the clock when the call returns (the classic mistake)"


def test_measure_waits_for_async_values_inside_pytrees():
    t = gc.measure(lambda: {"a": [AsyncResult(0.03)], "b": 1}, warmup=0, repeat=3)
    assert t.median >= 0.025


def test_measure_waits_for_real_jax_dispatch():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    @jax.jit
    def heavy(x):
        for _ in range(8):
            x = jnp.tanh(x @ x) / 64.0
        return x

    x = jnp.ones((512, 512), jnp.float32)
    heavy(x).block_until_ready()
    # the real time of one call: the best of 3 waited-for calls (other programs only slow a call down,
    # so the best is the least disturbed; a mean over a loaded machine once read 2.2x the median)
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        heavy(x).block_until_ready()
        runs.append(time.perf_counter() - t0)
    truth = min(runs)
    synced = gc.measure(heavy, x, warmup=1, repeat=5)
    assert synced.median > 0.5 * truth, f"synchronised timing {synced} is far below the real {truth:.4f}s"


def test_warmup_runs_are_not_measured():
    calls = []

    def fn():
        calls.append(time.perf_counter())
        if len(calls) == 1:  # the first call "compiles"
            time.sleep(0.2)

    t = gc.measure(fn, warmup=1, repeat=4)
    assert len(calls) == 5 and len(t.times) == 4
    assert max(t.times) < 0.1


def test_statistics_are_median_and_iqr():
    t = Timing((1.0, 2.0, 3.0, 4.0, 100.0), synchronized=True, clock="host")
    assert t.median == 3.0 and t.best == 1.0
    assert t.q25 == 2.0 and t.q75 == 4.0
    assert t.spread == pytest.approx(2.0 / 3.0)
    assert t.rate(6.0) == 2.0
    assert "median of 5" in str(t)


def test_max_seconds_stops_early_but_keeps_three_runs():
    t = gc.measure(time.sleep, 0.05, warmup=0, repeat=50, max_seconds=0.1)
    assert 3 <= len(t.times) < 10


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        gc.measure(lambda: None, repeat=0)
    with pytest.raises(ValueError):
        gc.measure(lambda: None, clock="sundial")


def test_cuda_clock_needs_a_gpu(monkeypatch):
    from gpucourse import backend as B

    monkeypatch.setattr(B, "_BACKEND", B.select_backend("cpu"))
    with pytest.raises(ValueError, match="needs the GPU backend"):
        gc.measure(lambda: None, clock="cuda")


def test_format_seconds():
    assert format_seconds(2.5) == "2.5 s"
    assert format_seconds(3.2e-3) == "3.2 ms"
    assert format_seconds(4.1e-6) == "4.1 µs"


@pytest.mark.gpu
def test_cuda_events_time_gpu_work():
    be = gc.get_backend()
    cp = be.xp
    a = cp.ones((4096, 4096), cp.float32)
    events = gc.measure(lambda: a @ a, clock="cuda", repeat=5)
    host = gc.measure(lambda: a @ a, repeat=5)
    unsynced = gc.measure(lambda: a @ a, repeat=5, sync=False)
    assert events.median > 0 and host.median >= 0.8 * events.median
    assert unsynced.median < 0.5 * host.median  # a launch returns long before a 4096³ GEMM ends


def test_confirm_faster_passes_a_real_gap_and_reports_a_missing_one():
    def fast():
        time.sleep(0.001)

    def slow():
        time.sleep(0.004)

    assert gc.confirm_faster(fast, slow, factor=2.0, repeat=3) > 2.0
    with pytest.raises(AssertionError, match=r"expected more than 2×, measured .*× \(best against best over 2 "
                                             r"rounds; each round's: .*×, .*×\)"):
        gc.confirm_faster(slow, fast, factor=2.0, claim="backwards", rounds=2, repeat=3)


def test_confirm_faster_runs_every_round_and_judges_once():
    """A fixed number of rounds, then one verdict: a lucky first round does not end the measurement."""
    calls = {"slow": 0, "fast": 0}

    def fast():
        calls["fast"] += 1

    def slow():
        calls["slow"] += 1
        time.sleep(0.001)

    gc.confirm_faster(fast, slow, factor=2.0, rounds=3, repeat=3)
    warmup = 2  # measure's default
    assert calls == {"slow": 3 * (3 + warmup), "fast": 3 * (3 + warmup)}
