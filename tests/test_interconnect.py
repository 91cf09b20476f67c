"""The ICI torus model: hop counts, links, and ring/torus all-reduce costs checked against a simulation."""

from __future__ import annotations


import numpy as np
import pytest

from gpucourse import interconnect as ic


@pytest.mark.parametrize("dims, wrap", [((4, 4, 4), True), ((4, 4, 4), False), ((3, 5), True), ((2, 3, 4), False),
                                        ((2, 2, 2), True), ((7,), True)])
def test_hop_histogram_matches_brute_force(dims, wrap):
    t = ic.Torus(dims, wrap)
    brute = [t.hops(i, j) for i in range(t.size) for j in range(t.size) if i != j]
    assert t.average_hops == pytest.approx(np.mean(brute))
    assert max(brute) == t.diameter
    assert sum(t.hop_counts().values()) == t.size * (t.size - 1)


def test_hops_use_the_wrap_around():
    t = ic.Torus((4, 4, 4))
    assert t.hops((0, 0, 0), (3, 0, 0)) == 1
    assert t.hops((0, 0, 0), (3, 3, 3)) == 3
    assert ic.Torus((4, 4, 4), wrap=False).hops((0, 0, 0), (3, 3, 3)) == 9
    assert t.hops(0, t.index((2, 2, 2))) == 6 == t.diameter


def test_links_and_neighbours():
    t = ic.Torus((4, 4, 4))
    assert all(len(t.neighbors(i)) == 6 for i in range(t.size))
    assert t.links == 3 * 64  # 6 per chip, each shared by two chips
    assert ic.Torus((4, 4, 4), wrap=False).links == 3 * 4 * 4 * 3
    assert ic.Torus((2, 2)).links == 4  # a size-2 ring has one link, not two


@pytest.mark.parametrize("p, n", [(2, 10), (3, 7), (8, 1000), (5, 5)])
def test_ring_simulation_sums_and_sends_two_buffers(p, n):
    rng = np.random.default_rng(p)
    bufs = [rng.standard_normal(n) for _ in range(p)]
    trace = ic.simulate_ring_allreduce(bufs)
    assert all(np.allclose(b, np.sum(bufs, axis=0)) for b in trace.result)
    assert trace.steps == 2 * (p - 1)
    assert sum(trace.sent_elements) == pytest.approx(p * ic.allreduce_bytes_per_chip(n, p))


def test_ring_and_torus_models():
    assert ic.ring_allreduce_seconds(1e9, 1, 1e9) == 0.0
    assert ic.ring_allreduce_seconds(8e9, 8, 1e9) == pytest.approx(2 * 7 / 8 * 8)
    assert ic.ring_allreduce_seconds(8e9, 8, 1e9, bidirectional=True) == pytest.approx(7.0)
    assert ic.ring_allreduce_seconds(8e9, 8, 1e9, latency=1e-3) == pytest.approx(14 + 14e-3)
    # one dimension: the torus is a ring
    assert ic.torus_allreduce_seconds(1e9, (16,), 5e10) == pytest.approx(ic.ring_allreduce_seconds(1e9, 16, 5e10, bidirectional=True))
    # 4x4x4, 1 GB, 50 GB/s per direction, bidirectional: sum over dims of 2*3/4 * share/(2*bw)
    expected = sum(2 * 3 / 4 * (1e9 / 4**i) / (2 * 50e9) for i in range(3))
    assert ic.torus_allreduce_seconds(1e9, (4, 4, 4), 50e9) == pytest.approx(expected)
    assert ic.torus_allreduce_seconds(1e9, (4, 2), (10e9, 20e9)) == pytest.approx(
        2 * 3 / 4 * 1e9 / 20e9 + 2 * 1 / 2 * 2.5e8 / 40e9)
    with pytest.raises(ValueError):
        ic.torus_allreduce_seconds(1e9, (4, 4), (1e9,))


def test_torus_beats_a_flat_ring_on_latency_bound_buffers():
    dims = (16, 16, 16)
    t = ic.torus_allreduce_seconds(1e6, dims, 50e9, latency=1e-6)
    r = ic.ring_allreduce_seconds(1e6, 4096, 50e9, latency=1e-6, bidirectional=True)
    assert r > 50 * t


def test_published_pod_figures_are_consistent():
    v4 = ic.TPU_PODS["TPU v4"]
    assert v4["topology"] == "3D torus" and v4["max_chips"] == 16**3
    assert v4["ici_bytes_per_s"] == pytest.approx(300e9)
    for name, pod in ic.TPU_PODS.items():
        assert pod["links_per_chip"] == (6 if pod["topology"] == "3D torus" else 4), name


def test_draw_torus():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    ic.draw_torus(ax, (3, 3, 3), highlight=[0])
    assert len(ax.lines) > 27
    plt.close(fig)
