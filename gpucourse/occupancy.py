"""Occupancy: how many blocks (and warps) of a kernel fit on one SM at once, from published per-SM limits.

An SM holds a block only if it has room for *all* of it: its warps, its registers and its shared memory.
The smallest of four limits wins:

- warps:      max_warps_per_SM // warps_per_block
- registers:  register_file // registers one block occupies (allocated per warp, in units of 256 registers)
- shared:     shared_memory_per_SM // shared memory one block occupies (+1 KiB reserved by CUDA per block,
              rounded up to 128-byte units)
- blocks:     max_blocks_per_SM

Occupancy = resident warps / max warps per SM. Sources: the per-SM figures of ``gpucourse.hardware`` (NVIDIA
datasheets and whitepapers), and the allocation rules of NVIDIA's CUDA Occupancy Calculator and the CUDA C++
Programming Guide, "Compute Capabilities" table (register allocation unit 256 per warp, at most 255 registers
per thread, 1 KiB of shared memory reserved per block on compute capability 8.x and 9.x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import hardware
from .simt import WARP_SIZE

REGISTER_BYTES = 4  # one 32-bit register
LIMITERS = ("warps", "registers", "shared_memory", "blocks")  # tie-break order


def sm_limits(gpu: hardware.Accelerator = hardware.H100_SXM) -> dict[str, int]:
    """The per-SM limits occupancy needs, in registers, bytes, warps and blocks."""
    p = gpu.per_sm
    return {
        "registers": int(p["register_file_bytes"] // REGISTER_BYTES),  # 65,536 32-bit registers on H100/A100
        "shared_memory_bytes": int(p["shared_memory_bytes"]),
        "max_warps": int(p["max_warps"]),
        "max_blocks": int(p["max_blocks"]),
        "max_threads_per_block": 1024,
        "max_registers_per_thread": 255,
        "register_alloc_unit": 256,  # registers are granted per warp in chunks of 256
        "shared_reserved_per_block": 1024,  # bytes the CUDA runtime keeps per block (cc 8.0+)
        "shared_alloc_unit": 128,  # bytes
    }


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # resident warps / max warps
    limiter: str  # one of LIMITERS
    by: dict[str, int]  # blocks allowed by each limit

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {v}" for k, v in self.by.items())
        return (f"{self.blocks_per_sm} blocks/SM = {self.warps_per_sm} warps = {self.occupancy:.0%} occupancy, "
                f"limited by {self.limiter} (blocks allowed by: {parts})")


def occupancy(threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int,
              limits: dict[str, int] | None = None) -> Occupancy:
    """Blocks per SM, warps per SM, occupancy and the limiting resource for one kernel configuration."""
    lim = limits or sm_limits()
    if not 1 <= threads_per_block <= lim["max_threads_per_block"]:
        raise ValueError(f"threads per block must be 1..{lim['max_threads_per_block']}, got {threads_per_block}")
    if registers_per_thread > lim["max_registers_per_thread"]:
        raise ValueError(f"at most {lim['max_registers_per_thread']} registers per thread, got {registers_per_thread}")
    warps = math.ceil(threads_per_block / WARP_SIZE)
    unit = lim["register_alloc_unit"]
    regs_per_warp = math.ceil(registers_per_thread * WARP_SIZE / unit) * unit
    smem = math.ceil((shared_bytes_per_block + lim["shared_reserved_per_block"]) / lim["shared_alloc_unit"]) \
        * lim["shared_alloc_unit"]
    by = {
        "warps": lim["max_warps"] // warps,
        "registers": lim["registers"] // (regs_per_warp * warps) if regs_per_warp else lim["max_blocks"],
        "shared_memory": lim["shared_memory_bytes"] // smem,
        "blocks": lim["max_blocks"],
    }
    blocks = min(by.values())
    limiter = next(k for k in LIMITERS if by[k] == blocks)
    return Occupancy(blocks, blocks * warps, blocks * warps / lim["max_warps"], limiter, by)


def bytes_in_flight(bandwidth: float, latency_s: float) -> float:
    """Little's law: to sustain ``bandwidth`` [B/s] against ``latency_s`` [s], this many bytes must be in flight."""
    return bandwidth * latency_s


def warps_to_hide_latency(bandwidth: float, latency_s: float, sm_count: int, bytes_per_warp_request: int) -> float:
    """Warps per SM that must each have one memory request outstanding to keep the memory system busy."""
    return bytes_in_flight(bandwidth, latency_s) / sm_count / bytes_per_warp_request
