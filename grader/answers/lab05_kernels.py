"""Lab 5's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side, grader/labs/lab05_kernels.py,
is the rest of the lab (specs, launches, requirements, visible cases, the helpers the notebook uses:
``halvings``, ``tile_order``, ``LIMITS``); this module imports it, never the reverse
(``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed). The
kernels' requirements read only what :class:`gpucourse.simt.ReportData` carries, so every kernel of
this lab is observed where it runs and judged in the grader (``KernelProblem.judge``).
"""

from __future__ import annotations

import numpy as np

from gpucourse import occupancy as occ

from ..labs.lab05_kernels import (
    BLOCK_2D,
    H100_SMS,
    LIMITS,
    REDUCE_BLOCK,
    REGROUP_BLOCK,
    TILE_K,
    TILE_M,
    TILE_N,
    _blocks,
    _classes,
    _regroup_case,
    halvings,
)
from ..problem import Case


def scale_shift_reference(x: np.ndarray, a: float, b: float, block: int) -> np.ndarray:
    return a * x + b


def _map_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(4):
        block = int(rng.choice([32, 64, 128]))
        # never a multiple of the block
        n = int(block * rng.integers(1, 5) + rng.integers(1, block))
        cases.append(Case((rng.standard_normal(n).astype(np.float32), float(rng.uniform(-3, 3)),
                           float(rng.uniform(-3, 3)), block)))
    return cases


def ramp_reference(a: np.ndarray) -> np.ndarray:
    rows, cols = a.shape
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return (a * (r + 1) - c).astype(a.dtype)


def _ramp_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(3):
        rows = int(BLOCK_2D[1] * rng.integers(1, 4) + rng.integers(1, BLOCK_2D[1]))
        cols = int(BLOCK_2D[0] * rng.integers(1, 3) + rng.integers(1, BLOCK_2D[0]))
        if rng.integers(2):
            rows, cols = min(rows, 30), cols
        cases.append(Case((rng.standard_normal((rows, cols)).astype(np.float32),)))
    return cases


def block_sum_reference(x: np.ndarray) -> np.ndarray:
    # nb: the blocks of the launch
    nb = _blocks(x.size, REDUCE_BLOCK)
    padded = np.zeros(nb * REDUCE_BLOCK, dtype=np.float64)
    padded[:x.size] = x
    return padded.reshape(nb, REDUCE_BLOCK).sum(axis=1)


def _sum_cases(rng: np.random.Generator) -> list[Case]:
    return [
        Case(
            (
                rng.standard_normal(
                    int(REDUCE_BLOCK * rng.integers(1, 4) + rng.integers(1, REDUCE_BLOCK))
                ),
            )
        )
        for _ in range(2)
    ]


def matmul_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return A.astype(np.float64) @ B.astype(np.float64)


def _mm_case(rng: np.random.Generator, m: int, k: int, n: int) -> Case:
    return Case(
        (
            rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32),
        )
    )


def _mm_cases(rng: np.random.Generator) -> list[Case]:
    def odd(tile: int, low: int = 1, high: int | None = None) -> int:
        return int(tile * rng.integers(1, 3) + rng.integers(low, (high or tile - 1) + 1))
    return [
        # k % TILE_K == 1: the last step holds one column of A; the last row tile has no second half
        # (rows ty + 8)
        _mm_case(
            rng, odd(TILE_M, 1, TILE_M // 2), TILE_K * int(rng.integers(1, 4)) + 1, odd(TILE_N)
        ),
        # the last row tile's second half is partly inside C; k % TILE_K in 2 … 7
        _mm_case(rng, odd(TILE_M, TILE_M // 2 + 1), odd(TILE_K, 2), odd(TILE_N)),
        # smaller than one tile in every direction: a single, partial k step
        _mm_case(
            rng,
            int(rng.integers(1, TILE_M // 2)),
            int(rng.integers(1, TILE_K)),
            int(rng.integers(2, TILE_N)),
        ),
    ]


def max_registers_reference(
    threads_per_block: int,
    shared_bytes_per_block: int,
    target_blocks: int,
    limits: dict,
    opt_in: bool = False,
) -> tuple[int | None, str]:
    # the most first: the first that fits wins
    for registers in range(limits["max_registers_per_thread"], 0, -1):
        o = occ.occupancy(
            threads_per_block, registers, shared_bytes_per_block, limits, opt_in=opt_in
        )
        if o.blocks_per_sm >= target_blocks:
            return registers, o.limiter
    # at 1 register per thread: what keeps the target out of reach whatever the registers
    return None, o.limiter


def per_sm_division(threads_per_block: int, target_blocks: int, limits: dict) -> int:
    """The wrong inverse of the register rule: all of the SM's registers as one pool (no
    sub-partitions), the register cap of the largest 256-register granule per warp that fits
    ``target_blocks`` blocks."""
    warps = -(-threads_per_block // 32)
    unit = limits["register_alloc_unit"]
    per_warp = limits["registers"] // (target_blocks * warps) // unit * unit
    return min(limits["max_registers_per_thread"], per_warp // 32)


def _ragged(rng: np.random.Generator, warps: int) -> int:
    """A block of ``warps`` warps whose last warp is usually not full (it still counts as a whole
    warp)."""
    return 32 * warps - int(rng.integers(0, 32 if warps > 1 else 20))


def _max_registers_cases(rng: np.random.Generator) -> list[Case]:
    H, A = LIMITS["H100"], LIMITS["A100"]
    KiB = 1024
    cases = []
    # the sub-partition rule decides: a per-SM division of the 65,536 registers allows a larger
    # granule
    for _ in range(3):
        limits = LIMITS[str(rng.choice(list(LIMITS)))]
        pairs = [
            (w, t)
            for w in range(1, 9)
            for t in range(1, 64 // w + 1)
            if max_registers_reference(32 * w, 0, t, limits)[0]
            not in (None, per_sm_division(32 * w, t, limits))
        ]
        warps, target = pairs[int(rng.integers(len(pairs)))]
        cases.append(Case((_ragged(rng, warps), 0, target, limits)))
    # every count up to the top fits: 255, which is not a multiple of 8 (a granule-stepping search
    # misses it)
    cases.append(Case((int(rng.integers(1, 257)), 0, 1, LIMITS[str(rng.choice(list(LIMITS)))])))
    # ... and shared memory (opted in) limits the one resident block there, not the registers
    cases.append(
        Case((int(rng.integers(33, 65)), int(rng.integers(115, 227)) * KiB, 1, H), {"opt_in": True})
    )
    cases.append(
        Case((int(rng.integers(33, 65)), int(rng.integers(83, 163)) * KiB, 1, A), {"opt_in": True})
    )
    # opted-in shared memory leaves room for the target; registers decide. The same kernel without
    # the opt-in cannot launch (None, shared_memory); on sm_80, with 64 KiB less shared memory per
    # SM, 100 KiB blocks fit only once
    smem = int(rng.integers(50, 70)) * KiB + int(rng.integers(0, KiB))
    cases.append(Case((256, smem, 3, H), {"opt_in": True}))
    cases.append(Case((256, smem, 3, H)))
    cases.append(Case((128, 100 * KiB, 2, H), {"opt_in": True}))
    cases.append(Case((128, 100 * KiB, 2, A), {"opt_in": True}))
    # exactly 48 KiB needs no opt-in: 228 KiB // 49 KiB = 4 blocks reach a target of 4, not 5
    cases.append(Case((128, 48 * KiB, 4, H)))
    cases.append(Case((128, 48 * KiB, 5, H)))
    # the 1 KiB reserved per block decides: without it 228 KiB holds 4 blocks of (56, 57] KiB, with
    # it 3
    cases.append(Case((128, int(rng.integers(56 * KiB + 1, 57 * KiB + 1)), 4, H), {"opt_in": True}))
    # a tie at the answer: warps and registers both allow the target, and warps come first
    warps = int(rng.choice([2, 4, 8, 16, 32]))
    cases.append(Case((_ragged(rng, warps), 0, 64 // warps, LIMITS[str(rng.choice(list(LIMITS)))])))
    # targets no register count reaches: too many warps, more than 32 blocks
    warps = int(rng.integers(17, 33))
    cases.append(Case((_ragged(rng, warps), 0, 64 // warps + 1, H)))
    cases.append(Case((int(rng.integers(1, 33)), 0, int(rng.integers(33, 65)), A)))
    # anything else
    for _ in range(3):
        limits = LIMITS[str(rng.choice(list(LIMITS)))]
        threads = int(rng.integers(1, 1025))
        smem = int(
            rng.choice([0, int(rng.integers(1, 48 * KiB)), int(rng.integers(48 * KiB, 120 * KiB))])
        )
        target = int(rng.integers(1, 64 // -(-threads // 32) + 2))
        cases.append(Case((threads, smem, target, limits), {"opt_in": smem > 48 * KiB}))
    return cases


def halvings_reference(x: np.ndarray, order: np.ndarray) -> np.ndarray:
    # dtype positional: halvings' own line (the exercise side, which the edition ships) is not
    # repeated here
    v = np.asarray(x, np.float64).copy()
    n = halvings(v)
    return n + v / 2.0 ** n


def _regroup_cases(rng: np.random.Generator) -> list[Case]:
    def n_odd() -> int:
        return int(REGROUP_BLOCK * rng.integers(1, 3) + rng.integers(1, REGROUP_BLOCK // 32) * 32
                   + rng.integers(1, 32))  # never a multiple of 32
    cases = [_regroup_case(_classes(rng, rng.random(n := n_odd()) < 0.5)) for _ in range(2)]
    n = n_odd()
    cases.append(_regroup_case(_classes(rng, np.arange(n) % 2 == 1)))  # alternating classes
    cases.append(_regroup_case(_classes(rng, np.ones(n_odd(), dtype=bool))))  # every element long
    cases.append(_regroup_case(_classes(rng, np.zeros(n_odd(), dtype=bool))))  # every element short
    x = _classes(rng, rng.random(n := n_odd()) < 0.5)
    exact = rng.random(n) < 0.25
    # exact powers of two: the loop ends at v == 1.0 (and
    x[exact] = 2.0 ** rng.integers(-2, 15, int(exact.sum()))
    # v <= 1 from the start: no trip); `while v >= 1.0` is one trip off on each
    cases.append(_regroup_case(x))
    return cases


def wave_reference(blocks: int, blocks_per_sm: int, sms: int) -> tuple[int, float]:
    capacity = sms * blocks_per_sm  # blocks resident at once: one wave
    waves = -(-blocks // capacity)
    return waves, waves * capacity / blocks  # time in waves / the work measured in waves


def _wave_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(2):
        per_sm = int(rng.integers(1, 9))
        cap = H100_SMS * per_sm
        # an exact multiple: no tail
        cases.append(Case((cap * int(rng.integers(1, 6)), per_sm, H100_SMS)))
        # one block over a wave
        cases.append(Case((cap * int(rng.integers(1, 6)) + 1, per_sm, H100_SMS)))
    cases.append(Case((int(rng.integers(1, H100_SMS)), 1, H100_SMS)))  # fewer blocks than SMs
    cases.append(Case((int(rng.integers(1, H100_SMS)), int(rng.integers(2, 9)), H100_SMS)))
    cases.append(
        Case((int(rng.integers(1, 5000)), int(rng.integers(1, 33)), int(rng.choice([108, 132]))))
    )
    # a grid of millions of blocks, as a large elementwise kernel launches: a prediction, not a run
    # of the grid
    cases.append(Case((int(rng.integers(10**6, 10**7)), int(rng.integers(1, 33)), H100_SMS)))
    return cases


ANSWERS = {
    "scale_shift": (scale_shift_reference, _map_cases),
    "ramp_2d": (ramp_reference, _ramp_cases),
    "block_sum": (block_sum_reference, _sum_cases),
    "tiled_matmul": (matmul_reference, _mm_cases),
    "max_registers": (max_registers_reference, _max_registers_cases),
    "halvings_regrouped": (halvings_reference, _regroup_cases),
    "wave_prediction": (wave_reference, _wave_cases),
}
