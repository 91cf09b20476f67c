"""The stream/engine model and the command queue: rules checked against hand-worked schedules."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import streams as st
from grader.labs import lab04_streams as lab

SEED = {"1": [("A", 30), ("B", 20), ("C", 25)], "2": [("D", 40), ("E", 15)],
        "3": [("F", 10), ("G", 20), ("H", 15), ("I", 30)]}


def test_in_order_within_a_stream_and_concurrent_across_streams():
    tl = st.simulate(st.from_streams(SEED, sms=40))
    assert tl.makespan == 75 and tl.max_concurrency() == 3
    assert tl.span("B").start == tl.span("A").end and tl.span("I").start == tl.span("H").end


def test_kernels_that_fill_the_gpu_serialize():
    tl = st.simulate(st.from_streams(SEED, sms=132))
    assert tl.makespan == 205 and tl.max_concurrency() == 1


def test_sm_sharing_lets_small_kernels_slip_past_a_big_one():
    ops = [st.Op("big0", "a", 10, sms=100), st.Op("big1", "b", 10, sms=100), st.Op("small", "c", 5, sms=30)]
    tl = st.simulate(ops)
    assert tl.span("big1").start == 10  # waits for SMs
    assert tl.span("small").start == 0  # 100 + 30 <= 132: runs beside big0


def test_events_order_work_across_streams():
    tl = st.simulate(st.from_streams(SEED, sms=40, waits={"E": ["B"]}))
    assert tl.span("E").start == tl.span("B").end == 50


def test_one_copy_engine_per_direction_but_directions_overlap():
    ops = [st.Op("in0", "a", 10, "h2d"), st.Op("in1", "b", 10, "h2d"), st.Op("out", "c", 10, "d2h")]
    tl = st.simulate(ops)
    assert tl.span("in1").start == 10 and tl.span("out").start == 0 and tl.makespan == 20
    assert tl.busy("h2d") == 20 and tl.busy("d2h") == 10


def test_launch_cost_issue_order_and_graphs():
    ops = [st.Op(f"k{i}", "s", 1.0) for i in range(10)]
    assert st.simulate(ops, launch_us=4).makespan == 41  # host-bound: last launch at 40 µs
    assert st.simulate(ops, launch_us=4, graph=True).makespan == 14  # one launch, then back to back
    assert st.simulate(ops, launch_us=4, latency_us=3).makespan == 44


@pytest.mark.parametrize("work,launch", [(200.0, 4.0), (30.0, 5.0), (3.0, 4.0), (1000.0, 1.5)])
def test_lab_closed_form_matches_the_simulation(work, launch):
    for n in (1, 2, 3, 7, 20, 60):
        ops = [st.Op(f"k{i}", "s", work / n) for i in range(n)]
        assert math.isclose(st.simulate(ops, launch_us=launch).makespan, lab.launched_makespan(work, launch, n))
    n = lab.launches_to_dominate(work, launch)
    assert lab.launched_makespan(work, launch, n) > 2 * work
    assert n == 1 or lab.launched_makespan(work, launch, n - 1) <= 2 * work


def test_deadlock_and_bad_input_are_reported():
    with pytest.raises(ValueError, match="deadlock"):
        st.simulate([st.Op("a", "s", 1, waits=("b",)), st.Op("b", "s", 1)])  # b is behind a in its own stream
    with pytest.raises(ValueError, match="unknown"):
        st.simulate([st.Op("a", "s", 1, waits=("zzz",))])
    with pytest.raises(ValueError, match="engine"):
        st.Op("a", "s", 1, engine="tensor")


def test_command_queue_is_asynchronous_and_synchronize_waits():
    q = st.CommandQueue(launch_us=4)
    r = [q.launch(100) for _ in range(3)]
    assert q.host_us == 12 and not any(x.is_ready() for x in r)
    r[0].block_until_ready()
    assert q.host_us == 104 and not r[1].is_ready()
    q.synchronize()
    assert q.host_us == 304 and all(x.is_ready() for x in r)


def test_command_queue_full_ring_buffer_stalls_the_host():
    q = st.CommandQueue(launch_us=1, capacity=2)
    for _ in range(3):
        q.launch(100)
    assert q.host_us == 102  # the third launch waited for the first kernel (done at 101) to free a slot


def test_simulated_jit_compiles_once():
    q = st.CommandQueue(launch_us=2)
    f = st.SimulatedJit(q, work_us=50, compile_us=1000)
    f(0).block_until_ready()
    assert q.host_us == 1052
    f(0).block_until_ready()
    assert q.host_us == 1104
    assert lab.time_call(st.SimulatedJit(q, 50, 1000), None, 3, st.VirtualClock(q)) == pytest.approx((1052e-6, 52e-6))


def test_chunked_pipeline_beats_one_stream_and_respects_dependencies():
    ops = lab.chunked_overlap(10**8, 6, 3, 25e9, 50e9, 25e9)
    tl, serial = st.simulate(ops), st.simulate(st.on_one_stream(ops))
    assert tl.makespan < 0.7 * serial.makespan
    for i in range(6):
        assert tl.span(f"k{i}").start >= tl.span(f"h2d{i}").end and tl.span(f"d2h{i}").start >= tl.span(f"k{i}").end
    assert sum(op.nbytes for op in ops if op.engine == "h2d") == 10**8


def test_timeline_plot_has_units_and_one_row_per_stream():
    import matplotlib

    matplotlib.use("Agg")
    ax = st.plot_timeline(st.simulate(st.from_streams(SEED, sms=40)))
    assert ax.get_xlabel() == "time [µs]" and len(ax.get_yticks()) == 3


def test_measure_on_gpu_refuses_cpu():
    if gc.gpu_available():
        pytest.skip("GPU present")
    with pytest.raises(gc.BackendUnavailable):
        st.measure_on_gpu([st.Op("a", "s", 1)])


@pytest.mark.gpu
def test_gpu_streams_run_concurrently_and_in_order():
    ops = st.from_streams({s: [(n, 10 * us) for n, us in chain] for s, chain in SEED.items()}, sms=16)
    measured = st.measure_on_gpu(ops)
    assert measured.makespan < 0.75 * sum(op.duration for op in ops)
    for a, b in [("A", "B"), ("B", "C"), ("F", "G")]:
        assert measured.span(b).end >= measured.span(a).end


@pytest.mark.gpu
def test_gpu_copy_compute_overlap_matches_the_model_direction():
    ops = lab.chunked_overlap(128 * 2**20, 8, 4, 25e9, 50e9, 25e9)
    overlapped, serial = st.measure_on_gpu(ops), st.measure_on_gpu(st.on_one_stream(ops))
    assert overlapped.makespan < 0.9 * serial.makespan


@pytest.mark.gpu
def test_gpu_stream_sync_returns_before_device_sync():
    be = gc.get_backend()
    cp = be.xp
    spin = st.gpu_spin_kernel()
    a, b = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    spin((1,), (32,), (cp.int64(st.gpu_cycles(1.0)),))
    be.sync()
    with a:
        spin((2,), (1024,), (cp.int64(st.gpu_cycles(30_000.0)),))
    done = cp.cuda.Event()
    done.record(a)
    with b:
        spin((2,), (1024,), (cp.int64(st.gpu_cycles(500.0)),))
    b.synchronize()
    assert not done.done
    be.sync()
    assert done.done


def test_random_schedules_never_deadlock_and_match_the_lab_reference():
    rng = np.random.default_rng(3)
    for _ in range(20):
        streams, durations, waits = lab._random_schedule(rng).args
        ops = [st.Op(n, s, durations[n], waits=tuple(waits.get(n, ()))) for s, c in streams.items() for n in c]
        tl = st.simulate(ops, lab.WIDE)
        for op in ops:
            for w in op.waits:
                assert tl.span(op.name).start >= tl.span(w).end
        assert tl.makespan == lab.predict_makespan(streams, durations, waits)
