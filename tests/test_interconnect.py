"""Tori and meshes: hop counts with per-axis wraparound, and the α–β prices of collectives checked against real
arrays moved message by message. The models are lab 7's answer side (grader/answers/ici.py: exercises 6 and 7 ask
students to write them); the grid description, the textbook ring and the HLO reader are gpucourse.interconnect; the
course notebook shows the models' results from gpucourse/data/ici.json, which must be what they compute now."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpucourse import interconnect as ic
from grader.answers import ici


def test_course_data_is_what_the_models_compute():
    assert ic.DATA == ici.DATA
    assert ic.stored() == json.loads(ici.data_text()), "stale: run python -m grader.answers.ici"


def test_nothing_installed_computes_hops_or_prices_collectives():
    """Exercises 6 and 7 are the students' to write: the installed package has no such model (issue 20)."""
    for name in ("hops", "hop_counts", "diameter", "average_hops", "neighbors"):
        assert not hasattr(ic.Torus, name), name
    for name in ("collective_seconds", "axis_seconds", "axis_rounds", "axis_link_bytes", "simulate_collective", "Axis",
                 "allreduce_bytes_per_chip"):
        assert not hasattr(ic, name), name
    from gpucourse import tpu

    assert not hasattr(tpu.TpuChip, "wraparound")


@pytest.mark.parametrize("dims, wrap", [((4, 4, 4), True), ((4, 4, 4), False), ((3, 5), True), ((2, 3, 4), False),
                                        ((2, 2, 2), True), ((7,), True), ((8, 16), (False, True)),
                                        ((4, 3, 5), (True, False, True))])
def test_hop_histogram_matches_brute_force(dims, wrap):
    t = ic.Torus(dims, wrap)
    brute = [ici.hops(t, t.coords(i), t.coords(j)) for i in range(t.size) for j in range(t.size) if i != j]
    assert ici.average_hops(t) == pytest.approx(np.mean(brute))
    assert max(brute) == ici.diameter(t)
    assert sum(ici.hop_counts(t).values()) == t.size * (t.size - 1)
    assert t.links == sum(len(ici.neighbors(t, i)) for i in range(t.size)) // 2  # the closed form counts every link


def test_hops_use_the_wraparound_only_where_it_exists():
    t = ic.Torus((4, 4, 4))
    assert ici.hops(t, (0, 0, 0), (3, 0, 0)) == 1
    assert ici.hops(t, (0, 0, 0), (3, 3, 3)) == 3
    assert ici.hops(ic.Torus((4, 4, 4), wrap=False), (0, 0, 0), (3, 3, 3)) == 9
    assert ici.hops(t, t.coords(0), (2, 2, 2)) == 6 == ici.diameter(t)
    half = ic.Torus((8, 16), wrap=(False, True))  # a v5e 8×16: wraps on its 16 axis only
    assert ici.hops(half, (0, 0), (7, 15)) == 7 + 1
    assert ici.diameter(half) == 7 + 8
    with pytest.raises(ValueError):
        ic.Torus((4, 4), wrap=(True,))


def test_links_and_neighbours():
    t = ic.Torus((4, 4, 4))
    assert all(len(ici.neighbors(t, i)) == 6 for i in range(t.size))
    assert t.links == 3 * 64  # 6 per chip, each shared by two chips
    assert ic.Torus((4, 4, 4), wrap=False).links == 3 * 4 * 4 * 3
    assert ic.Torus((2, 2)).links == 4  # a size-2 ring has one link, not two
    assert ic.Torus((16, 16)).bisection_links == 32 and ic.Torus((16, 16), False).bisection_links == 16


def _expected(kind, bufs, p):
    if kind == "all-gather":
        return [np.concatenate(bufs)] * p
    if kind == "all-reduce":
        return [np.sum(bufs, axis=0)] * p
    if kind == "reduce-scatter":
        return list(np.sum(bufs, axis=0).reshape(p, -1))
    return [np.concatenate([b.reshape(p, -1)[k] for b in bufs]) for k in range(p)]


@pytest.mark.parametrize("kind", ic.COLLECTIVES)
@pytest.mark.parametrize("ring", [True, False])
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 7, 8, 9, 16])
def test_one_axis_closed_forms_match_the_simulation(kind, ring, p):
    """Real arrays, moved hop by hop: the result is right, and the rounds and the busiest directed link's bytes
    are exactly the closed forms of the module's table."""
    rng = np.random.default_rng(p * 10 + ring)
    n = 8 if kind == "all-gather" else 8 * p
    bufs = [rng.standard_normal(n) for _ in range(p)]
    V = 8 * n * (p if kind in ("all-gather", "all-to-all") else 1)  # bytes of the whole array
    trace = ici.simulate_collective(kind, bufs, (p,), ring)
    assert all(np.allclose(got, want) for got, want in zip(trace.result, _expected(kind, bufs, p)))
    assert trace.rounds == ici.axis_rounds(kind, p, ring)
    assert trace.busiest_link_bytes == pytest.approx(ici.axis_link_bytes(kind, V, p, ring))
    axis = ici.Axis(p, ring, 3e9)
    assert trace.seconds(2e-6, 3e9) == pytest.approx(ici.collective_seconds(kind, V, axis, 2e-6))


def test_textbook_figures():
    V = 1e9
    # bidirectional ring: all-gather moves (p−1)/p · V through two links; a line needs one link for the far end
    assert ici.axis_link_bytes("all-gather", V, 8, ring=True) == pytest.approx(7 / 8 * V / 2)
    assert ici.axis_link_bytes("all-gather", V, 8, ring=False) == pytest.approx(7 / 8 * V)
    assert ici.axis_link_bytes("all-reduce", V, 8, True) == 2 * ici.axis_link_bytes("reduce-scatter", V, 8, True)
    # all-to-all on a bidirectional ring is a quarter of an all-gather (the scaling book's "AllGather / 4")
    assert ici.axis_link_bytes("all-to-all", V, 16, True) / ici.axis_link_bytes("all-gather", V, 16, True) \
        == pytest.approx(1 / 4 * 16 / 15)
    assert ici.axis_rounds("all-gather", 16, True) == 8 and ici.axis_rounds("all-gather", 16, False) == 15
    assert ici.axis_rounds("all-reduce", 2, True) == 2 == ici.axis_rounds("all-reduce", 2, False)  # no 2-chip ring
    assert ici.collective_seconds("all-reduce", V, [], 1e-6) == 0.0
    with pytest.raises(ValueError):
        ici.collective_seconds("broadcast", V, ici.Axis(4, True, 1e9), 0.0)


@pytest.mark.parametrize("dims, wrap", [((4, 4), True), ((4, 4), False), ((3, 5), (True, False)),
                                        ((4, 4, 4), True), ((2, 4, 4), False), ((4, 2), True)])
@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "reduce-scatter"])
@pytest.mark.parametrize("concurrent", [True, False])
def test_several_axes_match_the_simulation(dims, wrap, kind, concurrent):
    rng = np.random.default_rng(len(dims))
    P = int(np.prod(dims))
    k = sum(d > 1 for d in dims) if concurrent else 1
    n = 2 * k * 4 if kind == "all-gather" else P * 2 * k * 4
    bufs = [rng.standard_normal(n) for _ in range(P)]
    V = 8 * n * (P if kind == "all-gather" else 1)
    trace = ici.simulate_collective(kind, bufs, dims, wrap, concurrent=concurrent)
    total = np.sum(bufs, axis=0)
    if kind == "all-reduce":
        assert all(np.allclose(r, total) for r in trace.result)
    elif kind == "all-gather":  # every chip holds every shard (pieces gathered in rotated axis orders)
        assert all(np.allclose(np.sort(r), np.sort(np.concatenate(bufs))) for r in trace.result)
    else:  # every chip holds a different 1/P of the sum
        assert all(r.size == n // P for r in trace.result)
        assert np.allclose(np.sort(np.concatenate(trace.result)), np.sort(total))
    axes = [ici.Axis(d, w, 1e9) for d, w in zip(dims, ic.Torus(dims, wrap).wrap)]
    assert trace.seconds(1e-6, 1e9) == pytest.approx(ici.collective_seconds(kind, V, axes, 1e-6, concurrent))


def test_all_axes_at_once_divide_the_bandwidth_term_by_the_axes():
    V, bw = 1e9, 50e9
    for dims in ((4, 4, 4), (16, 16, 16), (16, 16)):
        axes = [ici.Axis(d, True, bw) for d in dims]
        P = int(np.prod(dims))
        at_once = ici.collective_seconds("all-gather", V, axes, 0.0)
        assert at_once == pytest.approx((P - 1) / P * V / (len(dims) * 2 * bw))
        one_by_one = ici.collective_seconds("all-gather", V, axes, 0.0, concurrent=False)
        assert one_by_one == pytest.approx(len(dims) * at_once)
    with pytest.raises(ValueError):
        ici.collective_seconds("all-to-all", V, [ici.Axis(4, True, bw)] * 2, 0.0)


def test_unidirectional_textbook_ring():
    rng = np.random.default_rng(8)
    bufs = [rng.standard_normal(1000) for _ in range(8)]
    trace = ic.simulate_ring_allreduce(bufs)
    assert all(np.allclose(b, np.sum(bufs, axis=0)) for b in trace.result)
    assert trace.steps == 2 * 7
    assert sum(trace.sent_elements) == pytest.approx(8 * 2 * 7 / 8 * 1000)  # 2(p − 1)/p of the buffer per chip
    line = ici.simulate_collective("all-reduce", bufs, (8,), wrap=False)  # one direction of a ring = a line
    assert trace.sent_elements[0] * 8 == line.busiest_link_bytes and trace.steps == line.rounds


def test_collectives_read_from_hlo_in_every_replica_group_format():
    lines = [
        "ROOT %all-reduce = f32[256,128]{1,0} all-reduce(%f), channel_id=1, replica_groups=mesh['axis_0'=1,"
        "'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}, use_global_device_ids=true, to_apply=%add",
        "%ag = f32[256,128]{1,0} all-gather(%f), channel_id=2, replica_groups=mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] "
        "{'axis_0'}, dimensions={0}",
        "%ar.1 = bf16[64]{0} all-reduce-start(%g), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add",
        "%rs = f32[16,64]{1,0} reduce-scatter(%h), replica_groups=[2,4]<=[8], dimensions={0}, to_apply=%add",
        # async all-gather: a tuple of (operand, result); the result is the last member
        "%ag = (f32[8,16]{1,0}, f32[64,16]{1,0}) all-gather-start(%p), channel_id=3, "
        "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true",
        "%agd = f32[64,16]{1,0} all-gather-done(%ag)",  # the -done half is not a second collective
    ]
    found = ic.hlo_collectives("\n".join(lines))
    assert [(c.kind, c.result_bytes, c.group_size) for c in found] == [
        ("all-reduce", 256 * 128 * 4, 4), ("all-gather", 256 * 128 * 4, 2), ("all-reduce", 128, 4),
        ("reduce-scatter", 16 * 64 * 4, 4), ("all-gather", 64 * 16 * 4, 8)]
    assert found[3].array_bytes() == 4 * 16 * 64 * 4 and found[3].array_bytes(itemsize=2) == 4 * 16 * 64 * 2
    with pytest.raises(ValueError):
        ic.hlo_collectives("%x = f32[4]{0} all-reduce(%y), replica_groups=weird")


def test_draw_torus():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    ic.draw_torus(ax, (3, 3, 3), highlight=[0])
    wrapped = len(ax.lines)
    assert wrapped > 27
    ax2 = fig.add_subplot(projection="3d")
    ic.draw_torus(ax2, ic.Torus((3, 3, 3), wrap=False))
    assert len(ax2.lines) < wrapped  # no dashed wraparound links on a mesh
    plt.close(fig)
