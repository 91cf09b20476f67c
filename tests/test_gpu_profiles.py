"""Issue 25: every GPU-mode assert whose bound depends on the card, evaluated on the GPUs students and instructors
have (gpucourse.hardware.GPU_PROFILES: T4, L4, A100 40/80 GB, H100, H200, from their datasheets). A condition that
cannot hold on one of them fails here, on a CPU, before a student's GPU finds it."""

from __future__ import annotations

import re

import pytest

from gpucourse import hardware, streams
from grader.course import ROOT

PROFILES = {g.name: g for g in hardware.GPU_PROFILES}


def source(notebook: str) -> str:
    return (ROOT / "course" / notebook).read_text()


def test_the_profiles_cover_the_cards_the_course_promises():
    ccs = {g.compute_capability for g in PROFILES.values()}
    assert {(7, 5), (8, 0), (8, 9), (9, 0)} <= ccs
    for g in PROFILES.values():  # each peak is the one its SM count, lanes and clock give (datasheet arithmetic)
        assert g.peak_flops["fp32"] == pytest.approx(g.sm_count * g.per_sm["fp32_lanes"] * 2 * g.boost_clock_hz,
                                                     rel=0.01), g.name


@pytest.mark.parametrize("name", PROFILES)
def test_section_4_2_work_outlasts_the_dispatch_on_every_card(name):
    """§4.2 asserts t_done > 10 × t_return and right > 10 × wrong: the work must take ≫ one dispatch (≈10-30 µs)."""
    g = PROFILES[name]
    peak = hardware.f32_gemm_peak(g)
    for n in (streams.async_demo_size(peak), streams.async_demo_size(None)):  # figures known / a card without them
        seconds = 4 * n**3 / peak  # at the card's peak: the least time the two n³ matmuls can take
        assert seconds >= 20 * streams.DISPATCH_S, (n, seconds)
        assert 3 * n * n * 4 <= g.memory_bytes / 10, n  # x, a @ a and the result: a small part of the card
        assert seconds < 1.0, (n, seconds)  # the cell's 15 calls stay quick on the slowest card
    assert "streams.async_demo_size(" in source("04_queues_streams.py")


@pytest.mark.parametrize("name", PROFILES)
def test_section_4_measured_streams_fit_side_by_side(name):
    """§4's measured overlap: three spin kernels, each holding `sms` SMs, must fit on the card at once."""
    g = PROFILES[name]
    sms = streams.side_by_side_sms(g.sm_count)
    assert 1 <= sms and 3 * sms <= g.sm_count
    assert source("04_queues_streams.py").count("streams.side_by_side_sms(be.gpu.sm_count)") == 2


@pytest.mark.parametrize("name", PROFILES)
def test_section_5_4_chains_miss_and_fit_the_l2_on_every_card(name):
    """§5.4 asserts every timed load is a new link, and that under 1 % of consecutive links share a 2 MiB page."""
    g = PROFILES[name]
    text = source("05_grids_blocks_warps.py")
    steps = int(re.search(r"steps, warmup, repeat = ([\d_]+), (\d+), (\d+)", text).group(1).replace("_", ""))
    warmup, repeat = map(int, re.search(r"steps, warmup, repeat = [\d_]+, (\d+), (\d+)", text).groups())
    small, big = hardware.chase_lines(g.l2_bytes, (warmup + repeat) * steps)
    assert (warmup + repeat) * steps <= big
    assert small * 128 <= g.l2_bytes / 4 and big * 128 >= 8 * g.l2_bytes
    pages = big * 128 / (2 * 2**20)
    assert 1 / pages < 0.005  # random order: about 1/pages of consecutive links share a page; the cell wants < 1 %
    assert big * 128 * 2 + 2 * g.l2_bytes <= g.memory_bytes / 4  # the chain, its host copy's upload, the flush
    assert "gc.hardware.chase_lines(l2, (warmup + repeat) * steps)" in text


@pytest.mark.parametrize("name", PROFILES)
def test_section_1_memory_bound_ops_sit_left_of_any_measured_ridge(name):
    """§1.2 asserts on a GPU only that axpy (1/6 FLOP/B) and the big gemv (0.5) are left of the measured ridge: it
    holds even if the measured compute roof were 30 % of the FP32 peak and the read roof the whole datasheet."""
    g = PROFILES[name]
    ridge = 0.3 * g.peak_flops["fp32"] / g.memory_bandwidth
    assert 0.5 < ridge
    text = source("01_blas_roofline.py")
    assert "if not be.is_gpu:  # a GPU's ridge can lie either side" in text  # the GEMM-vs-ridge asserts are the CPU's alone


def test_section_7_triton_cell_runs_only_from_compute_capability_8():
    """XLA's Triton gate (compute capability 8.0, `CheckAtLeastAmpere`): a T4 takes the cell's skip branch."""
    text = source("07_tpu.py")
    assert "be.gpu.compute_capability >= (8, 0)" in text
    skipped = [g.name for g in PROFILES.values() if g.compute_capability < (8, 0)]
    assert skipped == ["Tesla T4"]


def test_every_profile_has_the_half_precision_tensor_peak_the_gpu_cells_divide_by():
    """The thirteenth GPU read: §0's and §1's fp16 cells divided by peak_flops['bf16-tensor'], which the T4 (no
    bf16) lacks — a KeyError on Colab's GPU. They go through hardware.half_tensor_peak, defined for every profile,
    and no course cell indexes a looked-up card's tensor peaks directly."""
    import re
    from pathlib import Path

    import gpucourse as gc

    for g in gc.hardware.GPU_PROFILES:
        assert gc.hardware.half_tensor_peak(g) > g.peak_flops["fp32"], g.name
    course = Path(gc.__file__).resolve().parents[1] / "course"
    for path in sorted(course.glob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.search(r"\b(spec|sheet|card|gpu_spec)\.peak_flops\[", line)
            assert not m, f"{path.name}:{n}: a looked-up card's peak_flops indexed directly: {line.strip()}"
