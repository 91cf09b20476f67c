"""Published TPU figures: internally consistent, consistent with Google's independent pod figures, and with JAX's own
Pallas TPU table; the slice wraparound rules."""

from __future__ import annotations

import pytest

from gpucourse import interconnect as ic
from gpucourse import tpu


def test_ridge_points_are_peak_over_hbm_bandwidth():
    ridge = {name: c.ridge for name, c in tpu.TPU_CHIPS.items()}
    assert ridge["TPU v5e"] == pytest.approx(240.5, abs=0.1)  # "about 240 FLOPs/byte" (Pallas matmul guide)
    assert ridge["TPU v4"] == pytest.approx(229.2, abs=0.1)
    assert ridge["TPU v5p"] == pytest.approx(166.0, abs=0.1)
    assert ridge["TPU v6e"] == pytest.approx(560.4, abs=0.1)


def test_peaks_follow_from_the_mxus_where_the_clock_is_published():
    assert tpu.mxu_peak(tpu.TPU_V4) == pytest.approx(275e12, rel=0.01)  # 128² × 2 × 4 MXUs × 2 cores × 1.05 GHz
    assert tpu.mxu_peak(tpu.TPU_V5E) == pytest.approx(197e12, rel=0.01)  # 128² × 2 × 4 MXUs × 1.5 GHz
    with pytest.raises(ValueError):
        tpu.mxu_peak(tpu.TPU_V6E)


def test_link_figures_agree_with_the_published_pod_bisection_and_allreduce_bandwidths():
    """Independent published numbers: the bisection of a 16×16 torus cuts 32 links (16 rows, each crossing the cut
    twice); a pod's all-reduce bandwidth is every chip's ports in one direction."""
    for chip in (tpu.TPU_V5E, tpu.TPU_V6E):
        t = ic.Torus(chip.pod, chip.wraparound(chip.pod))
        assert t.bisection_links * chip.ici_link_bytes_per_s == pytest.approx(chip.pod_bisection_bytes_per_s)
        assert chip.chips_per_pod * chip.ici_ports * chip.ici_link_bytes_per_s == \
            pytest.approx(chip.pod_allreduce_bytes_per_s)
    v4 = tpu.TPU_V4
    cut = ic.Torus(v4.pod, v4.wraparound(v4.pod)).bisection_links
    assert cut == 512
    assert cut * v4.ici_link_bytes_per_s == pytest.approx(v4.pod_bisection_bytes_per_s, rel=0.1)  # 25.6 vs 24 TB/s
    assert v4.chips_per_pod * v4.ici_ports * v4.ici_link_bytes_per_s == pytest.approx(
        v4.pod_allreduce_bytes_per_s, rel=0.15)  # 1.23 vs 1.1 PB/s
    assert tpu.TPU_V5P.ici_bytes_per_s == pytest.approx(1200e9) and tpu.TPU_V5E.ici_bytes_per_s == pytest.approx(400e9)


def test_wraparound_rules():
    v4, v5p, v5e, v6e = tpu.TPU_V4, tpu.TPU_V5P, tpu.TPU_V5E, tpu.TPU_V6E
    assert v4.wraparound((4, 4, 4)) == (True, True, True)
    assert v5p.wraparound((4, 4, 8)) == (True, True, True)
    assert v5p.wraparound((2, 2, 4)) == (False, False, False)  # smaller than a cube: no optical switch, no wrap
    assert v4.wraparound((2, 4, 4)) == (False, False, False)
    assert v5e.wraparound((16, 16)) == (True, True)
    assert v5e.wraparound((8, 16)) == (False, True)  # wraps on the full 16-chip axis only
    assert v6e.wraparound((4, 4)) == (False, False)
    with pytest.raises(ValueError):
        v5e.wraparound((4, 4, 4))
    with pytest.raises(ValueError):
        v5e.wraparound((32, 8))


def test_ici_intensity_and_matmul_roofline():
    v5p = tpu.TPU_V5P
    assert v5p.ici_intensity() == pytest.approx(459e12 / 200e9)  # the scaling book's ≈2550 uses 9e10 B/s links
    assert v5p.ici_intensity(3) == pytest.approx(v5p.ici_intensity() / 3)
    assert tpu.matmul_intensity(1, 8192, 8192) == pytest.approx(1.0, rel=1e-3)  # batch 1: one FLOP per byte
    t = tpu.matmul_seconds(tpu.TPU_V5E, 64, 8192, 8192)
    assert t["hbm"] > t["math"] and t["total"] == t["hbm"]
    t = tpu.matmul_seconds(tpu.TPU_V5E, 1024, 8192, 8192)
    assert t["math"] > t["hbm"]


def test_agrees_with_jax_pallas_tpu_table():
    """JAX ships its own per-TensorCore table for Pallas (a private module; skipped if it moves)."""
    info = pytest.importorskip("jax._src.pallas.mosaic.tpu_info")
    versions = {"TPU v4": "TPU_V4", "TPU v5e": "TPU_V5E", "TPU v5p": "TPU_V5P", "TPU v6e": "TPU_V6E"}
    for name, chip in tpu.TPU_CHIPS.items():
        try:
            t = info._get_tpu_info_impl(getattr(info.ChipVersion, versions[name]), 1)
        except (AttributeError, TypeError) as exc:
            pytest.skip(f"JAX's TPU table changed shape: {exc}")
        cores = chip.tensor_cores
        assert t.vmem_capacity_bytes == chip.vmem_bytes_per_core, name
        assert t.mxu_column_size == chip.mxu[1] and t.num_mxus == chip.mxus_per_core, name
        assert t.bf16_ops_per_second * cores == pytest.approx(chip.bf16_flops, rel=0.01), name
        assert t.mem_bw_bytes_per_second * cores == pytest.approx(chip.hbm_bytes_per_s, rel=0.15), name
