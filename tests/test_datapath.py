"""Transfer/compute models, published figures and measurements of the data path."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import datapath
from gpucourse.roofline import Roofline

CPU = Roofline("cpu", 1e12, 100e9)
GPU = Roofline("gpu", 100e12, 3e12)
LINK = datapath.Link("pcie", 50e9, latency=10e-6)


def test_published_figures_are_ordered_and_sourced():
    bw = {k: v for k, (v, _) in datapath.BANDWIDTHS.items()}
    assert all(src for _, src in datapath.BANDWIDTHS.values())
    assert bw["NVMe SSD, PCIe 4.0 x4"] < bw["PCIe 4.0 x16"] < bw["PCIe 5.0 x16"] < bw["HBM3 (H100 SXM)"]
    assert bw["PCIe 5.0 x16"] == 2 * bw["PCIe 4.0 x16"] == pytest.approx(63.0e9, rel=1e-3)  # after 128b/130b
    assert bw["HBM3e (H200 SXM)"] == gc.hardware.H200_SXM.memory_bandwidth
    cpu, h100, tpu = datapath.PROCESSORS.values()
    assert (cpu["fp32_lanes"], h100["fp32_lanes"], tpu["fp32_lanes"]) == (1024, 16_896, 4096)  # ALUs, alike (Zen 5: 2 FMA + 2 FADD pipes)
    assert h100["bf16_matrix_flops"] / tpu["bf16_matrix_flops"] == pytest.approx(3.6, abs=0.01)
    # TPU v4's 275 TFLOP/s is its MXUs' MACs at 1050 MHz: 2 cores × 4 MXUs × 128 × 128 × 2 FLOP
    assert 2 * 4 * 128 * 128 * 2 * datapath.TPU_V4_CLOCK_HZ == pytest.approx(tpu["bf16_matrix_flops"], rel=0.01)
    assert cpu["bf16_matrix_flops"] is None


@pytest.mark.parametrize("gen, raw, encoded", [(3, 16e9, 15.75e9), (4, 32e9, 31.51e9), (5, 64e9, 63.02e9),
                                               (6, 128e9, 118.0e9)])
def test_pcie_raw_and_encoded_rates(gen, raw, encoded):
    r = datapath.pcie_bandwidth(gen, 16)
    assert r.raw == raw and r.encoded == pytest.approx(encoded, rel=1e-3)
    assert ("128b/130b" in r.encoding) == (3 <= gen <= 5)
    assert datapath.pcie_bandwidth(gen, 4).encoded == pytest.approx(r.encoded / 4)
    with pytest.raises(ValueError):
        datapath.pcie_bandwidth(7)
    with pytest.raises(ValueError):
        datapath.pcie_bandwidth(4, 3)


def test_transfer_and_roofline_times():
    assert datapath.transfer_time(0, LINK) == 10e-6
    assert datapath.transfer_time(50e9, LINK) == pytest.approx(1 + 10e-6)
    assert datapath.roofline_time(1e12, 1e9, CPU) == 1.0  # compute-bound
    assert datapath.roofline_time(1e9, 100e9, CPU) == 1.0  # memory-bound


def test_offload_times_add_both_copies():
    w = datapath.Workload("w", flops=1e12, bytes_in=1e9, bytes_out=5e8)
    t = datapath.offload_times(w, CPU, GPU, LINK)
    assert t["cpu"] == 1.0
    assert t["to_gpu"] == pytest.approx(10e-6 + 0.02) and t["to_cpu"] == pytest.approx(10e-6 + 0.01)
    assert t["process"] == pytest.approx(0.01)
    assert datapath.gpu_total(t) == pytest.approx(0.04002)


def test_break_even_matches_a_brute_force_search_and_is_none_for_memory_bound_work():
    matmul = datapath.WORKLOADS["matmul"]
    n = datapath.break_even("matmul", CPU, GPU, LINK, n_max=4096)
    pays = [datapath.gpu_total(t) < t["cpu"] for t in (datapath.offload_times(matmul(k), CPU, GPU, LINK)
                                                         for k in range(1, 400))]
    assert n == pays.index(True) + 1 and all(pays[n - 1:])

    assert datapath.break_even("vector add", CPU, GPU, LINK) is None  # CPU memory (100 GB/s) beats the link (50 GB/s)
    slow_cpu = Roofline("slow", 1e12, 10e9)
    assert datapath.break_even("vector add", slow_cpu, GPU, LINK) is not None


def test_break_even_searches_its_own_workloads_on_real_machines_only():
    """The tenth independent attack made break_even a root finder for other exercises' models (any workload
    function, machines with infinite rates): it takes one of its own workloads by name, and finite machines."""
    with pytest.raises(ValueError, match="workload must be one of"):
        datapath.break_even(lambda n: datapath.Workload("x", n, n, n), CPU, GPU, LINK)
    with pytest.raises(ValueError, match="finite positive rate"):
        datapath.break_even("matmul", Roofline("inf", float("inf"), 1e9), GPU, LINK)
    with pytest.raises(ValueError, match="latency must be finite"):
        datapath.break_even("matmul", CPU, GPU, datapath.Link("l", 1e9, latency=float("inf")))


def test_kv_cache_of_llama3_8b():
    assert datapath.kv_cache_bytes(32, 8, 128, 1) == 128 * 1024
    assert datapath.kv_cache_bytes(32, 8, 128, 131_072) == 16 * 2**30


def test_host_copy_counts_read_and_write():
    nbytes = 8 * 2**20
    rate, t = datapath.measure_host_copy(nbytes=nbytes, repeat=3)
    assert rate == pytest.approx(2 * nbytes / t.best) and rate > 1e8
    add, t_add = datapath.measure_host_add(nbytes=nbytes, repeat=3)
    assert add == pytest.approx(3 * nbytes / t_add.best)


def test_host_peak_flops_is_a_best_of_several_gemm():
    peak, t = datapath.measure_host_peak_flops(n=256, repeat=3)
    assert peak == pytest.approx(2 * 256**3 / t.best) and len(t.times) == 3


def test_timeline_draws_one_bar_per_step():
    import matplotlib

    matplotlib.use("Agg")
    ax = gc.plotting.axes("time [ms]", "program [-]")
    datapath.draw_timeline(ax, {"a": [("x", 1e-3), ("y", 2e-3)], "b": [("x", 0.5e-3)]})
    assert len(ax.patches) == 3
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == pytest.approx([0.5, 1.0, 2.0])


def test_gpu_only_measurements_refuse_on_cpu():
    if gc.gpu_available():
        pytest.skip("GPU present")
    with pytest.raises(RuntimeError, match="GPU backend"):
        datapath.measure_h2d(1024, pinned=True)


@pytest.mark.gpu
def test_pinned_beats_pageable_on_a_gpu():
    pageable, _ = datapath.measure_h2d(64 * 2**20, pinned=False)
    pinned, _ = datapath.measure_h2d(64 * 2**20, pinned=True)
    d2h, _ = datapath.measure_d2h(64 * 2**20, pinned=True)
    assert pinned > pageable and d2h > 1e9
    assert pinned < 2 * datapath.BANDWIDTHS["PCIe 5.0 x16"][0]  # no faster than the link allows


@pytest.mark.gpu
def test_pinned_buffer_is_numpy_and_writable():
    buf = datapath.pinned_empty(4096)
    buf[:] = 7
    assert isinstance(buf, np.ndarray) and buf.sum() == 7 * 4096


def test_hardware_links_are_pcie_rates_after_encoding():
    """gc.hardware.LINKS quotes what DMA can move (after 128b/130b), the same as datapath's derivation: 63.0 and 31.5
    GB/s per direction for Gen 5 / Gen 4 ×16, not the raw 64 / 32 (review finding 13)."""
    from gpucourse import hardware

    for gen in (4, 5):
        assert hardware.LINKS[f"PCIe {gen}.0 x16"] == pytest.approx(datapath.pcie_bandwidth(gen, 16).encoded, rel=1e-12)
        assert hardware.LINKS[f"PCIe {gen}.0 x16"] == pytest.approx(datapath.BANDWIDTHS[f"PCIe {gen}.0 x16"][0])
    assert round(hardware.LINKS["PCIe 5.0 x16"] / 1e9, 1) == 63.0 and round(hardware.LINKS["PCIe 4.0 x16"] / 1e9, 1) == 31.5


def test_grace_hopper_figures_are_the_shipping_gh200():
    """GH200 as shipped (NVIDIA GH200 datasheet): 96 GB HBM3 at 4 TB/s, 144 GB HBM3e at 4.9 TB/s, 480 GB LPDDR5X at
    512 GB/s, NVLink-C2C 450 GB/s each way — not the 2022 pre-launch 3 TB/s / 546 GB/s (review finding 3)."""
    gh = datapath.GRACE_HOPPER
    assert gh["HBM3 (Hopper GPU, 96 GB)"] == 4.0e12 and gh["HBM3e (Hopper GPU, 144 GB version)"] == 4.9e12
    assert gh["LPDDR5X (Grace CPU, up to 480 GB)"] == 512e9 and gh["NVLink-C2C (CPU ↔ GPU, each direction)"] == 450e9


def test_pageable_data_is_staged_at_the_hosts_memcpy_rate():
    """NumPy arrays are pageable: the driver stages them at memcpy speed first (C09), so on a host whose memory is
    slower than PCIe a vector add still never pays for its trip (review finding 11)."""
    pcie5 = datapath.Link("PCIe 5.0 x16", datapath.BANDWIDTHS["PCIe 5.0 x16"][0], latency=10e-6)
    slow_host = 13e9  # bytes read + written per second, a small VM's memcpy
    staged = datapath.pageable_link(pcie5, slow_host)
    assert staged.bandwidth == slow_host / 2 and staged.latency == pcie5.latency
    assert datapath.pageable_link(pcie5, 400e9).bandwidth == pcie5.bandwidth  # a fast host: the link limits
    cpu = gc.roofline.Roofline("slow host", 1e11, slow_host)
    h100 = gc.roofline.Roofline("H100", 67e12, 3.35e12)

    assert datapath.break_even("vector add", cpu, h100, pcie5) is not None  # pinned data at the DMA peak: pays
    assert datapath.break_even("vector add", cpu, h100, staged) is None  # pageable: never
