"""Occupancy as NVIDIA computes it (the rules of cuda_occupancy.h; tests/test_occupancy_header.py compares with the
header itself on tens of thousands of configurations). These are the worked examples, each with its arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import hardware, occupancy


def test_h100_limits_come_from_the_device_properties():
    lim = occupancy.sm_limits(hardware.H100_SXM)
    assert lim["registers"] == 65536 and lim["sub_partitions"] == 4  # 256 KB / 4 B, in 4 pools of 16,384
    assert lim["shared_memory_bytes"] == 228 * 1024 and lim["max_warps"] == 64 and lim["max_blocks"] == 32
    assert lim["shared_per_block"] == 48 * 1024 and lim["shared_per_block_optin"] == 227 * 1024
    assert lim["shared_carveouts"][-1] == lim["shared_memory_bytes"]


@pytest.mark.parametrize("threads, regs, smem, blocks, limiter", [
    (256, 32, 0, 8, "warps"),  # 8 warps/block, 64 warps/SM; registers tie at 8 (warps wins the tie)
    (256, 64, 0, 4, "registers"),  # 2,048 registers per warp: 8 warps per sub-partition, 32 per SM = 4 blocks
    (128, 32, 48 * 1024, 4, "shared_memory"),  # 49 KiB with the reserved KiB: 228 // 49 = 4
    (32, 16, 0, 32, "blocks"),  # tiny blocks: the 32-blocks-per-SM cap
    (96, 40, 0, 16, "registers"),  # 1,280 per warp: 16,384 // 1,280 = 12 warps per sub-partition, 48 // 3 = 16
    (32, 81, 0, 20, "registers"),  # 2,816 per warp: 5 per sub-partition = 20 warps; a per-SM division says 23
    (257, 200, 0, 0, "registers"),  # 9 warps rounded up to 12 × 6,400 = 76,800 > 65,536: the launch fails
    (1024, 255, 0, 0, "registers"),  # 32 × 8,192 registers do not fit in one block at all
    (128, 32, 48 * 1024 + 1, 0, "shared_memory"),  # one byte over 48 KiB without the opt-in: the launch fails
])
def test_occupancy_cases(threads, regs, smem, blocks, limiter):
    occ = occupancy.occupancy(threads, regs, smem)
    assert occ.blocks_per_sm == blocks and occ.limiter == limiter
    assert occ.warps_per_sm == blocks * -(-threads // 32)
    assert occ.occupancy == pytest.approx(occ.warps_per_sm / 64)
    assert bool(occ.why_zero) == (blocks == 0)


def test_opt_in_and_carveout():
    assert occupancy.occupancy(128, 32, 60 * 1024, opt_in=True).blocks_per_sm == 3  # 228 // 61
    assert occupancy.occupancy(128, 32, 227 * 1024, opt_in=True).blocks_per_sm == 1
    assert occupancy.occupancy(128, 32, 227 * 1024 + 1, opt_in=True).blocks_per_sm == 0
    # a 0 % carve-out preference: a block (its 1 KiB reserve) needs the 8 KiB carve-out, which holds 8 of them
    assert occupancy.occupancy(128, 32, 0, carveout=0).by["shared_memory"] == 8
    # 10 % of 228 KiB = 22.8 KiB rounds up to the 32 KiB carve-out: one 21 KiB block
    assert occupancy.occupancy(128, 32, 20 * 1024, carveout=10).blocks_per_sm == 1


def test_a100_has_less_shared_memory():
    h100 = occupancy.occupancy(256, 32, 64 * 1024, occupancy.sm_limits(hardware.H100_SXM), opt_in=True)
    a100 = occupancy.occupancy(256, 32, 64 * 1024, occupancy.sm_limits(hardware.A100_SXM), opt_in=True)
    assert (h100.blocks_per_sm, a100.blocks_per_sm) == (3, 2)


def test_zero_registers_set_no_limit():
    occ = occupancy.occupancy(64, 0, 0)
    assert occ.by["registers"] is None and occ.blocks_per_sm == 32


def test_invalid_configurations_raise():
    with pytest.raises(ValueError, match="threads per block"):
        occupancy.occupancy(2048, 32, 0)
    with pytest.raises(ValueError, match="registers per thread"):
        occupancy.occupancy(128, 300, 0)
    with pytest.raises(ValueError, match="shared memory"):
        occupancy.occupancy(128, 32, -1)
    with pytest.raises(ValueError, match="carveout"):
        occupancy.occupancy(128, 32, 0, carveout=101)


def test_littles_law():
    # 3.35 TB/s × 600 ns = 2.01 MB in flight; over 132 SMs and 128-byte warp requests: ~119 warps per SM
    assert occupancy.bytes_in_flight(3.35e12, 600e-9) == pytest.approx(2.01e6)
    assert occupancy.warps_to_hide_latency(3.35e12, 600e-9, 132, 128) == pytest.approx(118.97, rel=1e-3)


def test_datasheet_peak_implies_the_boost_clock():
    assert hardware.clock_from_peak(hardware.H100_SXM) == pytest.approx(hardware.H100_SXM.boost_clock_hz, rel=0.01)
    assert hardware.clock_from_peak(hardware.A100_SXM) == pytest.approx(hardware.A100_SXM.boost_clock_hz, rel=0.01)


@pytest.mark.parametrize("seed", range(20))
def test_lab5_hidden_cases_make_the_rules_decide(seed):
    """On every student's seed, lab 5's answers (the most registers per thread that keep a target of resident
    blocks) change if the model forgets the sub-partitions, the 256-register granule, the 1 KiB per-block reserve
    or the 48 KiB limit without the opt-in: a student who inverts a half-right rule fails some hidden case."""
    from grader.labs import lab05_kernels as lab5

    problem = lab5.problems["max_registers"]
    assert problem.has_answers()  # the reference and generator: grader/answers/lab05_kernels.py
    cases = problem.hidden(np.random.default_rng(seed))

    def answers(**override):
        return [problem.reference(c.args[0], c.args[1], c.args[2], {**c.args[3], **override}, **c.kwargs)
                for c in cases]

    right = answers()
    assert answers(sub_partitions=1) != right, "no case where the sub-partitions decide"
    assert answers(register_alloc_unit=32) != right, "no case where the 256-register granule decides"
    assert answers(shared_reserved_per_block=0) != right, "no case where the 1 KiB reserve decides"
    assert answers(shared_per_block=10**9) != right, "no case where the 48 KiB default limit decides"


def test_no_shared_memory_and_no_reserve_sets_no_limit():
    """A device without the per-block reserve (cc < 8) and a kernel without shared memory: the header's INT_MAX (no
    limit), not a division by zero."""
    lim = {**occupancy.sm_limits(hardware.H100_SXM), "shared_reserved_per_block": 0}
    o = occupancy.occupancy(256, 32, 0, lim)
    assert o.by["shared_memory"] is None and o.blocks_per_sm == 8 and o.shared_bytes_per_block == 0
