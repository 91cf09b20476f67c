"""Lab 5's answer side: the reference of every exercise and its hidden-case generator (instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab05_kernels.py, is the rest of the lab (specs, launches,
requirements, visible cases, the helpers the notebook uses: ``halvings``, ``tile_order``, ``LIMITS``); this module
imports it, never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is
installed). The kernels' requirements read only what :class:`gpucourse.simt.ReportData` carries, so every kernel
of this lab is observed where it runs and judged in the grader (``KernelProblem.judge``).
"""

from __future__ import annotations

import numpy as np

from gpucourse import occupancy as occ

from ..labs.lab05_kernels import (BLOCK_2D, H100_SMS, LIMITS, REDUCE_BLOCK, REGROUP_BLOCK, TILE_K, TILE_M, TILE_N,
                                  _blocks, _classes, _regroup_case, halvings)
from ..problem import Case


def scale_shift_reference(x: np.ndarray, a: float, b: float, block: int) -> np.ndarray:
    return a * x + b


def _map_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(4):
        block = int(rng.choice([32, 64, 128]))
        n = int(block * rng.integers(1, 5) + rng.integers(1, block))  # never a multiple of the block
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
    nb = _blocks(x.size, REDUCE_BLOCK)
    padded = np.zeros(nb * REDUCE_BLOCK, dtype=np.float64)
    padded[:x.size] = x
    return padded.reshape(nb, REDUCE_BLOCK).sum(axis=1)


def _sum_cases(rng: np.random.Generator) -> list[Case]:
    return [Case((rng.standard_normal(int(REDUCE_BLOCK * rng.integers(1, 4) + rng.integers(1, REDUCE_BLOCK))),))
            for _ in range(2)]


def matmul_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return A.astype(np.float64) @ B.astype(np.float64)


def _mm_case(rng: np.random.Generator, m: int, k: int, n: int) -> Case:
    return Case((rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)))


def _mm_cases(rng: np.random.Generator) -> list[Case]:
    def odd(tile: int, low: int = 1, high: int | None = None) -> int:
        return int(tile * rng.integers(1, 3) + rng.integers(low, (high or tile - 1) + 1))
    return [
        # k % TILE_K == 1: the last step holds one column of A; the last row tile has no second half (rows ty + 8)
        _mm_case(rng, odd(TILE_M, 1, TILE_M // 2), TILE_K * int(rng.integers(1, 4)) + 1, odd(TILE_N)),
        # the last row tile's second half is partly inside C; k % TILE_K in 2 … 7
        _mm_case(rng, odd(TILE_M, TILE_M // 2 + 1), odd(TILE_K, 2), odd(TILE_N)),
        # smaller than one tile in every direction: a single, partial k step
        _mm_case(rng, int(rng.integers(1, TILE_M // 2)), int(rng.integers(1, TILE_K)), int(rng.integers(2, TILE_N))),
    ]


def occupancy_reference(threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int,
                        limits: dict, opt_in: bool = False) -> tuple[int, float, str]:
    o = occ.occupancy(threads_per_block, registers_per_thread, shared_bytes_per_block, limits, opt_in=opt_in)
    return o.blocks_per_sm, o.occupancy, o.limiter


def _subpartition_regs(rng: np.random.Generator, warps: int, limits: dict) -> int:
    """Registers per thread for which the per-sub-partition count differs from a per-SM division."""
    good = []
    for regs in range(1, 256):
        per_warp = -(-regs * 32 // 256) * 256
        o = occ.occupancy(32 * warps, regs, 0, limits)
        if o.blocks_per_sm and o.by["registers"] != limits["registers"] // (per_warp * warps):
            good.append(regs)
    return int(rng.choice(good))


def _occupancy_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    # the sub-partition rule, deliberately: 1, 2, 3, 5, 6 and 7 warps, where a per-SM division over-counts
    for warps in (1, 2, 3, 5, 6, 7):
        gpu = str(rng.choice(list(LIMITS)))
        regs = _subpartition_regs(rng, warps, LIMITS[gpu])
        threads = 32 * warps - int(rng.integers(0, 20))  # a ragged last warp counts as a whole warp
        cases.append(Case((threads, regs, 0, LIMITS[gpu])))
    # launches that fail the per-block register check only because the warps round up to 4 sub-partitions
    cases.append(Case((257, 200, 0, LIMITS["H100"])))
    # 13 warps round up to 16: 16 × (4,352 … 4,864) > 65,536, though 13 × 4,864 = 63,232 would fit
    cases.append(Case((int(rng.integers(385, 417)), int(rng.integers(129, 153)), 0, LIMITS["A100"])))
    # shared memory: the 48 KiB default limit (exactly 48 KiB fits, one byte more needs the opt-in) and the opt-in
    cases.append(Case((128, 32, 48 * 1024, LIMITS["H100"])))
    cases.append(Case((128, 32, 48 * 1024 + 1, LIMITS["H100"])))
    cases.append(Case((256, 40, int(rng.integers(49, 100)) * 1024 + int(rng.integers(0, 1024)), LIMITS["A100"]),
                      {"opt_in": True}))
    cases.append(Case((96, 24, 227 * 1024, LIMITS["H100"]), {"opt_in": True}))  # the largest block H100 allows
    cases.append(Case((64, 24, 164 * 1024, LIMITS["A100"]), {"opt_in": True}))  # over A100's 163 KiB
    # the 1 KiB the driver reserves per block decides: 32,330…33,280 B + 1 KiB > 228 KiB / 7, so 6 blocks (7 without)
    cases.append(Case((128, 32, int(rng.integers(32_330, 33_281)), LIMITS["H100"])))
    # the 128-byte allocation unit decides: smem + 1 KiB in (46,592, 46,694] rounds up past 228 KiB / 5: 4 blocks, not
    # 5; on A100 (opt-in), smem + 1 KiB in (55,936, 55,978] rounds past 164 KiB / 3: 2 blocks, not 3
    cases.append(Case((64, 32, int(rng.integers(45_569, 45_671)), LIMITS["H100"])))
    cases.append(Case((64, 32, int(rng.integers(54_913, 54_955)), LIMITS["A100"]), {"opt_in": True}))
    # a tie (warps and registers both allow 8 blocks) and the 32-blocks cap
    cases.append(Case((256, 32, 0, LIMITS["A100"])))
    cases.append(Case((int(rng.integers(1, 33)), int(rng.integers(1, 33)), 0, LIMITS["H100"])))
    # anything else
    for _ in range(4):
        gpu = str(rng.choice(list(LIMITS)))
        threads = int(rng.integers(1, 1025))
        regs = int(rng.integers(1, 256))
        smem = int(rng.choice([0, int(rng.integers(1, 48 * 1024)), int(rng.integers(1, 2000)) * 8]))
        cases.append(Case((threads, regs, smem, LIMITS[gpu])))
    return cases


def halvings_reference(x: np.ndarray, order: np.ndarray) -> np.ndarray:
    # dtype positional: halvings' own line (the exercise side, which the edition ships) is not repeated here
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
    x[exact] = 2.0 ** rng.integers(-2, 15, int(exact.sum()))  # exact powers of two: the loop ends at v == 1.0 (and
    cases.append(_regroup_case(x))  # v <= 1 from the start: no trip); `while v >= 1.0` is one trip off on each
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
        cases.append(Case((cap * int(rng.integers(1, 6)), per_sm, H100_SMS)))  # an exact multiple: no tail
        cases.append(Case((cap * int(rng.integers(1, 6)) + 1, per_sm, H100_SMS)))  # one block over a wave
    cases.append(Case((int(rng.integers(1, H100_SMS)), 1, H100_SMS)))  # fewer blocks than SMs
    cases.append(Case((int(rng.integers(1, H100_SMS)), int(rng.integers(2, 9)), H100_SMS)))
    cases.append(Case((int(rng.integers(1, 5000)), int(rng.integers(1, 33)), int(rng.choice([108, 132])))))
    return cases


ANSWERS = {
    "scale_shift": (scale_shift_reference, _map_cases),
    "ramp_2d": (ramp_reference, _ramp_cases),
    "block_sum": (block_sum_reference, _sum_cases),
    "tiled_matmul": (matmul_reference, _mm_cases),
    "occupancy": (occupancy_reference, _occupancy_cases),
    "halvings_regrouped": (halvings_reference, _regroup_cases),
    "wave_prediction": (wave_reference, _wave_cases),
}
