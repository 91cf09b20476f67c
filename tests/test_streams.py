"""The stream/engine model and the command queue: rules checked against hand-worked schedules."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import streams as st
from grader.answers import lab04_streams as answers  # the instructor's side: references, hidden-case generators

ARTICLE_STREAMS = {"1": [("A", 30), ("B", 20), ("C", 25)], "2": [("D", 40), ("E", 15)],
        "3": [("F", 10), ("G", 20), ("H", 15), ("I", 30)]}


def test_in_order_within_a_stream_and_concurrent_across_streams():
    tl = st.simulate(st.from_streams(ARTICLE_STREAMS, sms=40))
    assert tl.makespan == 75 and tl.max_concurrency() == 3
    assert tl.span("B").start == tl.span("A").end and tl.span("I").start == tl.span("H").end


def test_kernels_that_fill_the_gpu_serialize():
    tl = st.simulate(st.from_streams(ARTICLE_STREAMS, sms=132))
    assert tl.makespan == 205 and tl.max_concurrency() == 1


def test_sm_sharing_lets_small_kernels_slip_past_a_big_one():
    ops = [st.Op("big0", "a", 10, sms=100), st.Op("big1", "b", 10, sms=100), st.Op("small", "c", 5, sms=30)]
    tl = st.simulate(ops)
    assert tl.span("big1").start == 10  # waits for SMs
    assert tl.span("small").start == 0  # 100 + 30 <= 132: runs beside big0


def test_events_order_work_across_streams():
    tl = st.simulate(st.from_streams(ARTICLE_STREAMS, sms=40, waits={"E": ["B"]}))
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
        assert math.isclose(st.simulate(ops, launch_us=launch).makespan, answers.launched_makespan(work, launch, n))
    ks = list(range(1, 61))
    n, makespans = answers.launches_to_dominate(work, launch, ks)
    assert answers.launched_makespan(work, launch, n) > 2 * work
    assert n == 1 or answers.launched_makespan(work, launch, n - 1) <= 2 * work
    assert len(makespans) == len(ks) and all(  # T(k) as the simulation runs it, busy regime included
        math.isclose(t, st.simulate([st.Op(f"k{i}", "s", work / k) for i in range(k)], launch_us=launch).makespan)
        for k, t in zip(ks, makespans))


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
    g = st.SimulatedJit(q, 50, 1000)  # another function on the same queue: compiles once, then 3 more calls
    for _ in range(4):
        g(None).block_until_ready()
    assert q.host_us == 1104 + 1052 + 3 * 52
    f(np.ones(3)).block_until_ready()  # another argument type: traced and compiled again, as jax.jit does
    assert q.host_us == 1104 + 1052 + 3 * 52 + 1052
    f(np.ones(3, np.float32)).block_until_ready()  # another dtype: again
    f(np.zeros(3)).block_until_ready()  # the same shape and dtype: cached
    assert q.host_us == 1104 + 1052 + 3 * 52 + 1052 + 1052 + 52


def test_chunked_pipeline_beats_one_stream_and_respects_dependencies():
    ops = answers.chunked_pipeline(10**8, 6, 3, 25e9, 50e9, 25e9)
    tl, serial = st.simulate(ops), st.simulate(st.on_one_stream(ops))
    assert tl.makespan < 0.7 * serial.makespan
    for i in range(6):
        assert tl.span(f"k{i}").start >= tl.span(f"h2d{i}").end and tl.span(f"d2h{i}").start >= tl.span(f"k{i}").end
    assert sum(op.nbytes for op in ops if op.engine == "h2d") == 10**8


def test_timeline_plot_has_units_and_one_row_per_stream():
    import matplotlib

    matplotlib.use("Agg")
    ax = st.plot_timeline(st.simulate(st.from_streams(ARTICLE_STREAMS, sms=40)))
    assert ax.get_xlabel() == "time [µs]" and len(ax.get_yticks()) == 3


def test_measure_on_gpu_refuses_cpu():
    if gc.gpu_available():
        pytest.skip("GPU present")
    with pytest.raises(gc.BackendUnavailable):
        st.measure_on_gpu([st.Op("a", "s", 1)])


@pytest.mark.gpu
def test_gpu_streams_run_concurrently_and_in_order():
    ops = st.from_streams({s: [(n, 10 * us) for n, us in chain] for s, chain in ARTICLE_STREAMS.items()}, sms=16)
    measured = st.measure_on_gpu(ops)
    assert measured.makespan < 0.75 * sum(op.duration for op in ops)
    for a, b in [("A", "B"), ("B", "C"), ("F", "G")]:
        assert measured.span(b).end >= measured.span(a).end


@pytest.mark.gpu
def test_gpu_copy_compute_overlap_matches_the_model_direction():
    ops = answers.chunked_pipeline(128 * 2**20, 8, 4, 25e9, 50e9, 25e9)
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
        streams, durations, waits = answers._random_schedule(rng).args
        ops = [st.Op(n, s, durations[n], waits=tuple(waits.get(n, ()))) for s, c in streams.items() for n in c]
        tl = st.simulate(ops, answers.WIDE)
        for op in ops:
            for w in op.waits:
                assert tl.span(op.name).start >= tl.span(w).end
        assert tl.makespan == answers.schedule_end(streams, durations, waits)


def test_legacy_default_stream_synchronizes_with_blocking_streams_only():
    """CUDA Runtime API, stream synchronization behavior: k_1 in s, k_2 in the legacy stream, k_3 in s —
    k_2 blocks on k_1 and k_3 blocks on k_2."""
    ops = [st.Op("k1", "s", 10, sms=10), st.Op("k2", st.LEGACY, 10, sms=10), st.Op("k3", "s", 10, sms=10),
           st.Op("other", "t", 10, sms=10)]
    tl = st.simulate(ops)
    assert tl.span("k2").start == tl.span("k1").end == 10 and tl.span("k3").start == 20
    assert tl.span("other").start == 20  # a blocking stream issued after k2 waits for it too
    free = st.simulate(ops, nonblocking={"s", "t"})  # cudaStreamNonBlocking: no implicit synchronisation
    assert free.span("k2").start == 0 and free.span("other").start == 0 and free.span("k3").start == 10
    assert st.happens_before(ops)["k3"] >= {"k1", "k2"} and "k1" not in st.happens_before(ops, {"s", "t"})["k2"]


def test_streams_beyond_the_hardware_queues_share_them_and_get_false_dependencies():
    # 9 streams, 8 queues: stream 0 and stream 8 share queue 0. B waits for A (its own stream); C, issued after B
    # on stream 8, needs nothing, but cannot pass B in the shared queue until A has finished.
    ops = [st.Op("A", "s0", 100)] + [st.Op(f"x{k}", f"s{k}", 1) for k in range(1, 8)]
    ops += [st.Op("B", "s0", 1), st.Op("C", "s8", 5)]
    assert st.simulate(ops).span("C").start == 100
    assert st.simulate(ops, st.Machine(connections=None)).span("C").start == 0
    assert st.simulate(ops, st.Machine(connections=32)).span("C").start == 0


def test_resident_kernel_limit():
    ops = [st.Op(f"k{i}", f"s{i}", 10) for i in range(3)]
    assert st.simulate(ops, st.Machine(max_resident_kernels=2)).makespan == 20
    assert st.simulate(ops).makespan == 10


def test_host_sync_stops_the_host_and_orders_later_work():
    ops = [st.Op("A", "s0", 100), st.Op("B", "s1", 5), st.HostSync("wait A", on=("A",)), st.Op("C", "s1", 10)]
    tl = st.simulate(ops, launch_us=2)
    assert tl.span("wait A").start == 4 and tl.span("wait A").end == 102  # A ends at 2 + 100
    assert tl.span("C").start == 104  # issued 2 µs after the host resumed
    assert st.happens_before(ops)["C"] == {"A", "B"}  # A through the host wait, B through stream order
    assert st.happens_before(ops)["B"] == set()
    dev = st.simulate([st.Op("A", "s0", 100), st.HostSync("sync"), st.Op("C", "s1", 10)], launch_us=2)
    assert dev.span("C").start == 104
    stream_sync = st.simulate([st.Op("A", "s0", 100), st.Op("B", "s1", 5), st.HostSync("sync", on="s1"),
                               st.Op("C", "s2", 10)], launch_us=2)
    assert stream_sync.span("sync").end == 9 and stream_sync.span("C").start == 11
    with pytest.raises(ValueError, match="graph"):
        st.simulate(ops, graph=True)


def test_races_and_the_caching_allocators_cross_stream_hazard():
    """A block allocated on the copy stream, read by a kernel on the compute stream, freed, and handed out again
    on the copy stream: without record_stream the next copy overwrites it while the kernel may still read it."""
    hazard = [st.Op("copy a", "copy", 10, "h2d", writes=("block0",)),
              st.Op("use a", "compute", 50, waits=("copy a",), reads=("block0",)),
              st.Op("copy b", "copy", 10, "h2d", writes=("block0",))]
    assert st.races(hazard) == [("use a", "copy b", "block0")]
    tl = st.simulate(hazard)
    assert tl.span("copy b").start < tl.span("use a").end  # and in this timeline they do overlap
    fixed = hazard[:2] + [replace_waits(hazard[2], ("use a",))]  # record_stream: reuse after the reader is done
    assert st.races(fixed) == [] and st.simulate(fixed).span("copy b").start == st.simulate(fixed).span("use a").end
    assert st.races([st.Op("r1", "a", 1, reads=("x",)), st.Op("r2", "b", 1, reads=("x",))]) == []  # reads share


def replace_waits(op, waits):
    from dataclasses import replace

    return replace(op, waits=waits)


def test_happens_before_rejects_unknown_items():
    with pytest.raises(TypeError):
        st.happens_before([("a", "s", 1)])
    with pytest.raises(ValueError, match="unknown"):
        st.simulate([st.Op("a", "s", 1), st.HostSync("h", on=("zzz",))])


@pytest.mark.gpu
def test_gpu_kernels_hold_exactly_their_sms():
    """The runner gives each block more than half an SM's shared memory: two kernels that need 60 % of the SMs
    each cannot run side by side, two that need 40 % can — as in the model."""
    n = st._device_attribute("MultiProcessorCount", "multiProcessorCount")
    wide = [st.Op("a", "s1", 2000.0, sms=int(0.6 * n)), st.Op("b", "s2", 2000.0, sms=int(0.6 * n))]
    narrow = [st.Op("a", "s1", 2000.0, sms=int(0.4 * n)), st.Op("b", "s2", 2000.0, sms=int(0.4 * n))]
    assert st.measure_on_gpu(wide).makespan > 1.7 * 2000
    assert st.measure_on_gpu(narrow).makespan < 1.3 * 2000


@pytest.mark.gpu
def test_gpu_legacy_default_stream_serializes_blocking_streams_only():
    ops = [st.Op("k1", "s", 2000.0, sms=8), st.Op("k2", st.LEGACY, 10.0, sms=1), st.Op("k3", "t", 2000.0, sms=8)]
    blocking = st.measure_on_gpu(ops, nonblocking=set())
    free = st.measure_on_gpu(ops, nonblocking={"s", "t"})
    assert blocking.span("k3").start >= 0.9 * blocking.span("k1").end
    assert blocking.makespan > 1.5 * free.makespan


@pytest.mark.gpu
def test_gpu_launch_latency_and_throughput():
    costs = st.measure_launch_on_gpu(n=500, repeat=20)
    assert costs.host_ahead, "the host queued every launch before the spin ended: the events time the GPU"
    assert 0 < costs.enqueue < costs.round_trip
    assert 1e-7 < costs.latency < 1e-3 and 0 < costs.event_pair < 1e-3
    assert 0 < costs.gpu_per_kernel < 1e-4 and 0 < costs.graph_per_kernel <= 1.1 * costs.gpu_per_kernel


@pytest.mark.gpu
def test_gpu_host_sync_in_measured_timeline():
    ops = [st.Op("k1", "s", 1000.0, sms=4), st.HostSync("wait", on=("k1",)), st.Op("k2", "t", 100.0, sms=4)]
    tl = st.measure_on_gpu(ops)
    assert tl.span("wait").start >= 0.9 * tl.span("k1").end and tl.span("k2").start >= tl.span("k1").end * 0.9
