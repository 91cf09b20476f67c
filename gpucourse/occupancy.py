"""Occupancy: how many blocks (and warps) of a kernel fit on one SM at once — computed the way
NVIDIA does.

The rules below are those of NVIDIA's own occupancy calculator, the header-only ``cuda_occupancy.h``
that ships with CUDA (and in NVIDIA's pip wheels, ``nvidia/cu13/include/``); each step names the
header function it follows. ``tests/test_occupancy_header.py`` compiles that header with g++ and
requires this module to agree with it on thousands of configurations for compute capability 8.0
(A100) and 9.0 (H100/H200). An SM holds a block only if it has room for *all* of it; the smallest of
four limits wins:

- **warps** (``cudaOccMaxBlocksPerSMWarpsLimit``): ``max_warps // ceil(threads / 32)``.
- **registers** (``cudaOccMaxBlocksPerSMRegsLimit``): registers are granted per *warp*, ``regs ×
  32`` rounded up to the allocation unit of 256 (``cudaOccRegAllocationGranularity``) — the same as
  rounding the per-thread count up to a multiple of 8. They are allocated **per SM sub-partition**
  (``cudaOccSubPartitionsPerMultiprocessor``: 4 on cc 8.x/9.x, each with its own warp scheduler and
  a quarter of the register file, 16,384 registers): a sub-partition holds ``16384 //
  regs_per_warp`` warps, the SM 4 times that, and the blocks are those warps divided by the block's
  warps. A per-SM division (``65536 // regs_per_block``) over-counts whenever the remainders of the
  4 sub-partitions would add up to another block: 32 threads × 81 registers gives 23 blocks per SM,
  CUDA 20. Before that, the launch must pass the per-block check, which (the header says "for
  historical reasons") rounds the block's warps up to a multiple of the 4 sub-partitions: 257
  threads × 200 registers is 9 warps → 12 × 6,400 = 76,800 > 65,536 registers per block, so **0**
  blocks: the launch fails.
- **shared memory** (``cudaOccMaxBlocksPerSMSmemLimit``): a block takes its shared memory plus 1 KiB
  the driver reserves per block on cc ≥ 8 (``reservedSharedMemPerBlock``), rounded up to 128 bytes
  (``cudaOccSMemAllocationGranularity``). One block may use at most 48 KiB (``sharedMemPerBlock``)
  unless the kernel opts in (``cudaFuncSetAttribute(...,
  cudaFuncAttributeMaxDynamicSharedMemorySize, n)``), then up to ``sharedMemPerBlockOptin`` (227 KiB
  on H100, 163 KiB on A100) (``cudaOccSMemPerBlock``). Per SM, the L1/shared carve-out
  (``cudaFuncAttributePreferredSharedMemoryCarveout``, a percentage) is rounded up to a size the SM
  supports (``cudaOccAlignUpShmemSizeVoltaPlus``: 0, 8, 16, 32, 64, 100, 132, 164, 196, 228 KiB on
  cc 9.0); by default the driver may use all of it, and a carve-out too small for one block is
  raised to the smallest size that holds one (``cudaOccSMemPreferenceVoltaPlus``).
- **blocks** (``cudaOccMaxBlocksPerMultiprocessor``): 32 per SM on cc 8.0 and 9.x.

Occupancy = resident warps / max warps per SM. The header also limits blocks by named barriers on cc
≥ 9 (2 × 32 available, one used per block: never the limiter) and by "virtual resources" on cc ≥ 10;
neither applies here. The header accepts 256 registers per thread on cc ≥ 7; the compiler never
allocates more than 255 (CUDA C++ Programming Guide), which is this module's limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from . import hardware

WARP_SIZE = 32
REGISTER_BYTES = 4  # one 32-bit register
LIMITERS = ("warps", "registers", "shared_memory", "blocks")  # tie-break order for `limiter`


def sm_limits(gpu: hardware.Accelerator = hardware.H100_SXM) -> dict:
    """The per-SM limits occupancy needs, in registers, bytes, warps and blocks (plain data: the lab
    passes it to students)."""
    p = gpu.per_sm
    return {
        # 65,536 32-bit registers per SM
        "registers": int(p["register_file_bytes"] // REGISTER_BYTES),
        "sub_partitions": int(p["sub_partitions"]),  # registers are split evenly among them
        "registers_per_block": int(p["registers_per_block"]),
        # the largest carve-out (bytes per SM)
        "shared_memory_bytes": int(p["shared_memory_bytes"]),
        "shared_per_block": int(p["shared_memory_per_block"]),  # default per-block limit (48 KiB)
        # with the opt-in attribute
        "shared_per_block_optin": int(p["shared_memory_per_block_optin"]),
        "shared_carveouts": tuple(int(c) for c in p["shared_carveouts"]),  # bytes per SM, ascending
        "max_warps": int(p["max_warps"]),
        "max_blocks": int(p["max_blocks"]),
        "max_threads_per_block": int(p["max_threads_per_block"]),
        "max_registers_per_thread": int(p["max_registers_per_thread"]),
        "register_alloc_unit": 256,  # registers are granted per warp in chunks of 256
        # bytes the driver keeps per block
        "shared_reserved_per_block": int(p["shared_reserved_per_block"]),
        "shared_alloc_unit": 128,  # bytes (cc >= 8)
    }


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # resident warps / max warps
    limiter: str  # the first of LIMITERS that gives the fewest blocks
    by: dict[str, int | None]  # blocks allowed by each limit (None: this resource sets no limit)
    # every limit that gives the fewest blocks (the header's limitingFactors)
    limiters: tuple[str, ...] = ()
    registers_per_block: int = 0  # registers allocated to one block (allocatedRegistersPerBlock)
    # shared memory allocated to one block, reserve included (allocatedSharedMemPerBlock)
    shared_bytes_per_block: int = 0
    shared_per_sm: int = 0  # the carve-out the SM runs with, bytes
    why_zero: str = ""  # for 0 blocks: which check the launch fails
    notes: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {'-' if v is None else v}" for k, v in self.by.items())
        text = (
            f"{self.blocks_per_sm} blocks/SM = {self.warps_per_sm} warps = {self.occupancy:.0%}"
            f" occupancy, limited by {self.limiter} (blocks allowed by: {parts})"
        )
        return text + (f"; launch fails: {self.why_zero}" if self.why_zero else "")


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _align_carveout(nbytes: int, carveouts: tuple[int, ...]) -> int | None:
    """cudaOccAlignUpShmemSizeVoltaPlus: the smallest supported carve-out >= nbytes (None: larger
    than all)."""
    return next((c for c in carveouts if c >= nbytes), None)


def register_limit(
    threads_per_block: int, registers_per_thread: int, lim: dict
) -> tuple[int | None, int, str]:
    """(blocks allowed by registers or None for no limit, registers allocated per block, why 0) —
    cudaOccMaxBlocksPerSMRegsLimit."""
    warps = -(-threads_per_block // WARP_SIZE)
    per_warp = _round_up(registers_per_thread * WARP_SIZE, lim["register_alloc_unit"])
    per_block = per_warp * warps
    parts = lim["sub_partitions"]
    # the hardware check: warps rounded up to the sub-partitions
    assumed = per_warp * _round_up(warps, parts)
    if per_block > lim["registers_per_block"]:
        return 0, per_block, (f"{warps} warps × {per_warp:,} registers = {per_block:,} > "
                              f"{lim['registers_per_block']:,} registers per block")
    if assumed > lim["registers_per_block"]:
        return (
            0,
            per_block,
            (
                f"the per-block check rounds {warps} warps up to {_round_up(warps, parts)} (a"
                f" multiple of {parts} sub-partitions): {_round_up(warps, parts)} × {per_warp:,} ="
                f" {assumed:,} > {lim['registers_per_block']:,} registers per block"
            ),
        )
    if per_warp == 0:
        return None, 0, ""  # a kernel that uses no registers (the header's INT_MAX)
    warps_per_part = (lim["registers"] // parts) // per_warp  # each sub-partition holds whole warps
    return warps_per_part * parts // warps, per_block, ""


def shared_limit(shared_bytes_per_block: int, lim: dict, opt_in: bool = False,
                 carveout: int | None = None) -> tuple[int | None, int, int, str]:
    """(blocks allowed by shared memory or None for no limit, bytes allocated per block, carve-out
    per SM, why 0) — cudaOccMaxBlocksPerSMSmemLimit with all of the block's shared memory dynamic
    and, with ``opt_in``, the kernel's maximum dynamic shared memory set to exactly what it uses.
    ``carveout``: percent of the largest carve-out the kernel prefers (None: the driver's default,
    all of it)."""
    reserve = lim["shared_reserved_per_block"]
    allocated = _round_up(shared_bytes_per_block + reserve, lim["shared_alloc_unit"])
    # cudaOccSMemPerBlock: the opt-in limit applies only when the kernel's maximum exceeds the
    # default limit
    per_block = (
        lim["shared_per_block_optin"]
        if opt_in and shared_bytes_per_block + reserve > lim["shared_per_block"]
        else lim["shared_per_block"]
    )
    if allocated > per_block + reserve:
        need = "" if opt_in else " without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)"
        return (
            0,
            allocated,
            0,
            (
                f"{shared_bytes_per_block:,} bytes of shared memory per block > the "
                f"{per_block:,}-byte limit{need}"
            ),
        )
    carveouts = lim["shared_carveouts"]
    preferred = (
        lim["shared_memory_bytes"]
        if carveout is None
        else carveout * lim["shared_memory_bytes"] // 100
    )
    per_sm = _align_carveout(preferred, carveouts)
    # too small for one block: the driver takes the next size that fits
    if per_sm is None or per_sm < allocated:
        per_sm = _align_carveout(allocated, carveouts)
    if allocated == 0:  # no shared memory and no reserve (cc < 8): the header's INT_MAX, no limit
        return None, 0, per_sm, ""
    return per_sm // allocated, allocated, per_sm, ""


def occupancy(
    threads_per_block: int,
    registers_per_thread: int,
    shared_bytes_per_block: int,
    limits: dict | None = None,
    *,
    opt_in: bool = False,
    carveout: int | None = None,
) -> Occupancy:
    """Blocks per SM, warps per SM, occupancy and the limiting resource for one kernel
    configuration, as ``cudaOccMaxActiveBlocksPerMultiprocessor`` computes them (``limits``:
    :func:`sm_limits`, H100 by default).

    ``shared_bytes_per_block``: static + dynamic shared memory of one block. ``opt_in``: the kernel
    raised its dynamic shared memory limit above 48 KiB. ``carveout``: preferred shared-memory
    carve-out in percent (0–100) or None for the default. Returns 0 blocks (with ``why_zero``) for a
    launch that cannot run.

    Args:
        threads_per_block: threads of one block.
        registers_per_thread: registers the compiler gave each thread.
        shared_bytes_per_block: static + dynamic shared memory of one block, in bytes.
        limits: the SM's limits (:func:`sm_limits`); None: an H100's.
        opt_in: the kernel opts in to more than 48 KiB of shared memory per block.
        carveout: the shared-memory carve-out in percent (None: the driver's default).
    Returns:
        an :class:`Occupancy`: blocks and warps per SM, the occupancy (0–1) and the limiting
        resource.
    """
    lim = limits or sm_limits()
    if not 1 <= threads_per_block <= lim["max_threads_per_block"]:
        raise ValueError(
            f"threads per block must be 1..{lim['max_threads_per_block']}, got {threads_per_block}"
        )
    if not 0 <= registers_per_thread <= lim["max_registers_per_thread"]:
        raise ValueError(
            f"registers per thread must be 0..{lim['max_registers_per_thread']}, got"
            f" {registers_per_thread}"
        )
    if shared_bytes_per_block < 0:
        raise ValueError(
            f"shared memory per block must be >= 0 bytes, got {shared_bytes_per_block}"
        )
    if carveout is not None and not 0 <= carveout <= 100:
        raise ValueError(
            f"carveout is a percentage 0..100 (or None for the default), got {carveout}"
        )
    warps = -(-threads_per_block // WARP_SIZE)
    by_regs, regs_alloc, why_regs = register_limit(threads_per_block, registers_per_thread, lim)
    by_smem, smem_alloc, per_sm, why_smem = shared_limit(
        shared_bytes_per_block, lim, opt_in, carveout
    )
    by: dict[str, int | None] = {
        "warps": lim["max_warps"] // warps,
        "registers": by_regs,
        "shared_memory": by_smem,
        "blocks": lim["max_blocks"],
    }
    blocks = min(v for v in by.values() if v is not None)
    limiters = tuple(k for k in LIMITERS if by[k] == blocks)
    why = "; ".join(w for w in (why_regs, why_smem) if w)
    return Occupancy(
        blocks,
        blocks * warps,
        blocks * warps / lim["max_warps"],
        limiters[0],
        by,
        limiters,
        regs_alloc,
        smem_alloc,
        per_sm,
        why,
    )


def bytes_in_flight(bandwidth: float, latency_s: float) -> float:
    """Little's law: to sustain ``bandwidth`` [B/s] against ``latency_s`` [s], this many bytes must
    be in flight."""
    return bandwidth * latency_s


def warps_to_hide_latency(
    bandwidth: float, latency_s: float, sm_count: int, bytes_per_warp_request: int
) -> float:
    """Warps per SM that must each have one memory request outstanding to keep the memory system
    busy."""
    return bytes_in_flight(bandwidth, latency_s) / sm_count / bytes_per_warp_request


# -- latency hiding: the SM's warp schedulers ------------------------------------------------------
# An SM of compute capability 7.0-9.x has 4 sub-partitions, each with its own warp scheduler that
# issues at most one warp instruction per cycle, and only from the warps assigned to it (a warp
# lives in one sub-partition, with its registers). A warp that waits on memory leaves its own
# scheduler's slots to that scheduler's other warps: the SM needs warps on all 4 schedulers, not
# just "enough warps".

@lru_cache(maxsize=None)
def scheduler_busy(warps: int, compute: int, latency: int, periods: int = 60) -> float:
    """Fraction of cycles ONE warp scheduler issues, simulated: each of its ``warps`` issues
    ``compute`` independent instructions, one per cycle (the last one a load), then waits
    ``latency`` cycles for the load. The scheduler is greedy-then-oldest (GTO, the policy GPU
    schedulers approximate): it keeps issuing from the warp it issued from last until that warp
    stalls, then picks the ready warp that has waited longest; with no ready warp, the cycle is
    lost. (Plain round robin would make every warp reach its load in the same cycle and wait
    together.) The count starts after a warm-up of 5 periods (all warps start together)."""
    if warps < 0 or compute < 1 or latency < 0:
        raise ValueError("need warps >= 0, compute >= 1, latency >= 0")
    if warps == 0:
        return 0.0
    period = compute + latency
    start, end = 5 * period, periods * period
    ready_at = [0] * warps  # cycle each warp can issue again
    t = busy = 0
    while t < end:
        # the warp that has waited longest (or will be ready first)
        w = min(range(warps), key=lambda i: ready_at[i])
        t = max(t, ready_at[w])  # idle cycles until it is ready
        # its burst: cycles [first, last), the load issued in the last one
        first, last = t, t + compute
        busy += max(0, min(last, end) - max(first, start))
        ready_at[w] = last + latency
        t = last
    return busy / (end - start)


def sm_busy(warps: int, compute: int, latency: int, schedulers: int = 4) -> float:
    """Fraction of the SM's issue slots used by ``warps`` resident warps, spread round robin over
    ``schedulers`` (warp w on scheduler w % schedulers), each scheduler simulated by
    :func:`scheduler_busy`."""
    per = [warps // schedulers + (s < warps % schedulers) for s in range(schedulers)]
    return sum(scheduler_busy(k, compute, latency) for k in per) / schedulers


def sm_busy_model(warps: int, compute: int, latency: int, schedulers: int = 4) -> float:
    """The closed form: each scheduler with k warps is busy min(1, k·c/(c+L)); the SM is their mean.
    One warp keeps the SM busy c / (schedulers·(c+L)), and it takes schedulers × ceil((c+L)/c) warps
    to fill every slot."""
    per = [warps // schedulers + (s < warps % schedulers) for s in range(schedulers)]
    return sum(min(1.0, k * compute / (compute + latency)) for k in per) / schedulers
