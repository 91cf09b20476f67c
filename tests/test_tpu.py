"""Published TPU figures: internally consistent, consistent with Google's independent pod figures, and with JAX's own
Pallas TPU table; the slice wraparound rules."""

from __future__ import annotations

import pytest

from gpucourse import interconnect as ic
from gpucourse import tpu
from grader.answers import ici  # the wraparound rule: lab 7's exercise 6, answer side


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
        t = ic.Torus(chip.pod, ici.wraparound(chip, chip.pod))
        assert t.bisection_links * chip.ici_link_bytes_per_s == pytest.approx(chip.pod_bisection_bytes_per_s)
        assert chip.chips_per_pod * chip.ici_ports * chip.ici_link_bytes_per_s == \
            pytest.approx(chip.pod_allreduce_bytes_per_s)
    v4 = tpu.TPU_V4
    cut = ic.Torus(v4.pod, ici.wraparound(v4, v4.pod)).bisection_links
    assert cut == 512
    assert cut * v4.ici_link_bytes_per_s == pytest.approx(v4.pod_bisection_bytes_per_s, rel=0.1)  # 25.6 vs 24 TB/s
    assert v4.chips_per_pod * v4.ici_ports * v4.ici_link_bytes_per_s == pytest.approx(
        v4.pod_allreduce_bytes_per_s, rel=0.15)  # 1.23 vs 1.1 PB/s
    assert tpu.TPU_V5P.ici_bytes_per_s == pytest.approx(1200e9) and tpu.TPU_V5E.ici_bytes_per_s == pytest.approx(400e9)


def test_wraparound_rules():
    v4, v5p, v5e, v6e = tpu.TPU_V4, tpu.TPU_V5P, tpu.TPU_V5E, tpu.TPU_V6E
    assert ici.wraparound(v4, (4, 4, 8)) == (True, True, True)
    assert ici.wraparound(v5p, (4, 4, 4)) == (True, True, True)  # Google's v5p page: "All 4x4x4 and larger slices"
    assert ici.wraparound(v5p, (16, 16, 24)) == (True, True, True)  # the largest schedulable slice
    assert ici.wraparound(v5p, (2, 4, 4)) == (False, False, False)  # smaller than a cube: no optical switch, no wrap
    assert ici.wraparound(v4, (2, 2, 4)) == (False, False, False)
    assert ici.wraparound(v5e, (16, 16)) == (True, True)
    assert ici.wraparound(v5e, (8, 16)) == (False, True)  # wraps on the full 16-chip axis only
    assert ici.wraparound(v6e, (4, 4)) == (False, False)
    with pytest.raises(ValueError):
        ici.wraparound(v5e, (4, 4, 4))
    with pytest.raises(ValueError):
        ici.wraparound(v5e, (32, 8))


def test_slices_are_the_listed_ones_and_no_larger_than_a_schedulable_slice():
    v4, v5p, v5e, v6e = tpu.TPU_V4, tpu.TPU_V5P, tpu.TPU_V5E, tpu.TPU_V6E
    assert v5p.chips_per_pod == 8960 and v5p.max_slice == (16, 16, 24)  # "The maximum v5p shape is 16x16x24"
    with pytest.raises(ValueError, match="larger than the largest"):
        ici.wraparound(v5p, v5p.pod, hypothetical=True)  # the 8,960-chip pod is not one slice
    with pytest.raises(ValueError, match="does not list"):
        ici.wraparound(v5p, (2, 4, 8))  # not in Google's v5p table
    assert ici.wraparound(v5p, (2, 4, 8), hypothetical=True) == (False,) * 3  # the rule still answers when asked
    for chip in (v5e, v6e):
        assert chip.listed((8, 16)) and chip.listed((16, 8)) and not chip.listed((4, 16)) and not chip.listed((2, 8))
        with pytest.raises(ValueError, match="does not list"):
            ici.wraparound(chip, (16, 4))
    # v4: Google's rule — all sides ≤ 4 or all multiples of 4
    assert v4.listed((2, 2, 1)) and v4.listed((2, 4, 4)) and v4.listed((8, 8, 12)) and v4.listed((16, 16, 16))
    assert not v4.listed((2, 8, 8)) and not v4.listed((4, 4, 6)) and not v4.listed((16, 16, 20))


def test_v4_shapes_where_google_and_the_scaling_book_disagree_are_marked():
    """Google's v4 page names tori only for 2A=B=C or 2A=2B=C (each a multiple of 4); the scaling book for every
    multiple of a full cube. The shapes between the two are marked, and the lab grades none of them."""
    v4 = tpu.TPU_V4
    assert v4.topology == "3D mesh"  # Google's v4 "Interconnect topology" row
    agreed = [(4, 4, 8), (4, 8, 8), (8, 8, 16), (12, 12, 24), (2, 2, 4), (2, 4, 4)]
    disputed = [(4, 4, 4), (8, 8, 8), (8, 8, 12), (16, 16, 16), (4, 4, 12)]
    assert not any(v4.torus_disputed(d) for d in agreed) and all(v4.torus_disputed(d) for d in disputed)
    assert not tpu.TPU_V5P.torus_disputed((4, 4, 4))  # Google's v5p page says so itself
    from grader.labs import lab07_tpu as lab

    hops = lab.problems["slice_hops"]
    graded = [c.args for c in hops.hidden_cases()] + [c.args for c in hops.visible]
    assert not any(tpu.TPU_CHIPS[chip].torus_disputed(dims) for _, _, dims, chip in graded)


def test_check_slice_refuses_what_the_rule_refuses():
    v5p, v5e = tpu.TPU_V5P, tpu.TPU_V5E
    assert v5p.check_slice([4, 4, 8]) == (4, 4, 8) and v5p.check_slice((2, 4, 8), hypothetical=True) == (2, 4, 8)
    for chip, dims, why in ((v5p, v5p.pod, "larger than the largest"), (v5e, (16, 4), "does not list"),
                            (v5e, (4, 4, 4), "axes")):
        with pytest.raises(ValueError, match=why):
            chip.check_slice(dims)


def test_cmem_and_the_mxu_clock_each_peak_implies():
    assert tpu.TPU_V4.cmem_bytes == 134_000_000
    assert all(c.cmem_bytes == 0 for c in tpu.TPU_CHIPS.values() if c.name != "TPU v4")
    assert tpu.TPU_V4.implied_clock_hz() == pytest.approx(1.05e9, rel=0.01)  # Jouppi et al. 2023: 1050 MHz
    assert tpu.TPU_V5E.implied_clock_hz() == pytest.approx(1.5e9, rel=0.01)  # the scaling book: 1.5 GHz
    # Google's two 256×256 MXUs per v6e TensorCore and 918 TFLOP/s imply 3.5 GHz: marked unverified
    assert tpu.TPU_V6E.implied_clock_hz() == pytest.approx(3.5e9, rel=0.01)
    assert tpu.TPU_V6E.unverified == ("mxus_per_core",) and not tpu.TPU_V4.unverified


def test_per_link_figures_of_every_chip():
    """Google's bidirectional ICI bandwidth per chip / ports / 2 directions (v4: Jouppi et al., 50 GB/s a link)."""
    per_chip = {"TPU v4": 600e9, "TPU v5e": 400e9, "TPU v5p": 1200e9, "TPU v6e": 800e9}
    per_link = {"TPU v4": 50e9, "TPU v5e": 50e9, "TPU v5p": 100e9, "TPU v6e": 100e9}
    for name, chip in tpu.TPU_CHIPS.items():
        assert chip.ici_bytes_per_s == pytest.approx(per_chip[name])
        assert chip.ici_link_bytes_per_s == pytest.approx(per_link[name])


def test_ici_intensity():
    v5p = tpu.TPU_V5P
    assert v5p.ici_intensity() == pytest.approx(459e12 / 200e9)  # the scaling book's ≈2550 uses 9e10 B/s links
    assert v5p.ici_intensity(3) == pytest.approx(v5p.ici_intensity() / 3)


def test_the_package_holds_no_matmul_cost_model():
    """A matmul's FLOPs, bytes and roofline time are lab 1's exercises (gemv_shapes, gemm_k, max_batch_within,
    min_batch_compute_bound, min_size_for_fraction): the seventh independent attack answered all five with
    tpu.matmul_seconds / matmul_intensity, so the package no longer ships them (course §7 computes its one layer's
    closed form in the cell that plots it)."""
    assert not hasattr(tpu, "matmul_seconds") and not hasattr(tpu, "matmul_intensity")


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
        assert t.cmem_capacity_bytes * cores == pytest.approx(chip.cmem_bytes, abs=cores), name
        assert t.mxu_column_size == chip.mxu[1] and t.num_mxus == chip.mxus_per_core, name
        assert t.bf16_ops_per_second * cores == pytest.approx(chip.bf16_flops, rel=0.01), name
        assert t.mem_bw_bytes_per_second * cores == pytest.approx(chip.hbm_bytes_per_s, rel=0.15), name
