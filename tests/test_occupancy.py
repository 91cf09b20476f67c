"""Occupancy from published per-SM limits (values checked against NVIDIA's CUDA Occupancy Calculator rules)."""

from __future__ import annotations

import pytest

from gpucourse import hardware, occupancy


def test_h100_limits_come_from_the_datasheet_figures():
    lim = occupancy.sm_limits(hardware.H100_SXM)
    assert lim["registers"] == 65536  # 256 KB / 4 B
    assert lim["shared_memory_bytes"] == 228 * 1024 and lim["max_warps"] == 64 and lim["max_blocks"] == 32


@pytest.mark.parametrize("threads, regs, smem, blocks, limiter", [
    (256, 32, 0, 8, "warps"),  # 8 warps/block, 64 warps/SM; registers tie at 8 (warps wins the tie)
    (256, 64, 0, 4, "registers"),  # 64 regs × 256 threads = 16,384 per block: 4 blocks
    (128, 32, 48 * 1024, 4, "shared_memory"),  # 49 KiB with the reserved KiB: 228 // 49 = 4
    (32, 16, 0, 32, "blocks"),  # tiny blocks: the 32-blocks-per-SM cap
    (96, 40, 0, 17, "registers"),  # 40 regs → 1,280 per warp (unit 256), 3,840 per block: 65,536 // 3,840
    (1024, 255, 0, 0, "registers"),  # 255 regs × 1024 threads do not fit at all: launch would fail
])
def test_occupancy_cases(threads, regs, smem, blocks, limiter):
    occ = occupancy.occupancy(threads, regs, smem)
    assert occ.blocks_per_sm == blocks and occ.limiter == limiter
    assert occ.warps_per_sm == blocks * -(-threads // 32)
    assert occ.occupancy == pytest.approx(occ.warps_per_sm / 64)


def test_a100_has_less_shared_memory():
    h100 = occupancy.occupancy(256, 32, 64 * 1024, occupancy.sm_limits(hardware.H100_SXM))
    a100 = occupancy.occupancy(256, 32, 64 * 1024, occupancy.sm_limits(hardware.A100_SXM))
    assert (h100.blocks_per_sm, a100.blocks_per_sm) == (3, 2)


def test_invalid_configurations_raise():
    with pytest.raises(ValueError):
        occupancy.occupancy(2048, 32, 0)
    with pytest.raises(ValueError):
        occupancy.occupancy(128, 300, 0)


def test_littles_law():
    # 3.35 TB/s × 600 ns = 2.01 MB in flight; over 132 SMs and 128-byte warp requests: ~119 warps per SM
    assert occupancy.bytes_in_flight(3.35e12, 600e-9) == pytest.approx(2.01e6)
    assert occupancy.warps_to_hide_latency(3.35e12, 600e-9, 132, 128) == pytest.approx(118.97, rel=1e-3)
