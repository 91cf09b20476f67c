"""Lab 7's answer side: the reference of every exercise and its hidden-case generator (instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab07_tpu.py, is the rest of the lab; this module imports it,
never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpucourse import interconnect, systolic, tpu

from ..labs.lab07_tpu import HYPOTHETICAL, _step_case, compiled_collectives, sharding_class, sharding_family
from ..problem import Case

def _array_shapes(rng: np.random.Generator, low: int = 2, high: int = 9) -> list[tuple[int, int]]:
    """(K, N) of every class, drawn each time: one PE, one row, one column, square, wider than tall, taller than
    wide (a swapped axis or a row/column mix-up shows only on a non-square array)."""
    s, k, n = (int(v) for v in rng.integers(low, high, size=3))
    wide, tall = sorted(rng.choice(np.arange(low, high), size=2, replace=False).tolist())
    return [(1, 1), (1, n), (k, 1), (s, s), (int(wide), int(tall)), (int(tall), int(wide))]


def _step_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for K, N in _array_shapes(rng):
        a, p, W = (rng.integers(-5, 6, size=(K, N)).astype(float) for _ in range(3))
        cases.append(_step_case((a, p, W, rng.integers(-5, 6, size=K).astype(float))))
    return cases

def _systolic_reference(A: np.ndarray, W: np.ndarray) -> np.ndarray:
    return np.asarray(A, dtype=np.float64) @ np.asarray(W, dtype=np.float64)

def _systolic_cases(rng: np.random.Generator) -> list[Case]:
    """Arrays of every class (one PE, one row, one column, square, wide, tall), each with a stream of M rows
    shorter than (by 2 or more), as long as and longer than the array is tall, and of one row; A and W without zeros (a zero
    would hide what enters outside the schedule)."""
    cases = []
    one, row, column, square, wide, tall = _array_shapes(rng)
    # M: longer than, as long as, shorter than K; the tall array's stream ends 2+ rows before the array's height, so
    # at the first cycles some rows would read A[m] with m < −M (an unmasked index raises there)
    streams = [(one, int(rng.integers(2, 10))), (row, int(rng.integers(2, 10))), (column, column[0] + 2),
               (square, square[0]), (wide, 1), (tall, tall[0] - 2)]
    for (K, N), M in streams:
        W = rng.choice([-1.0, 1.0], size=(K, N)) * rng.uniform(0.5, 2.0, size=(K, N))
        A = rng.choice([-1.0, 1.0], size=(M, K)) * rng.integers(1, 5, size=(M, K))
        cases.append(Case((A, W)))
    return cases

def tiled_gemm(M: int, K: int, N: int, rows: int, cols: int) -> tuple[int, float]:
    t = systolic.TiledGemm(M, K, N, rows, cols)
    return t.cycles, t.utilization

def _tiled_cases(rng: np.random.Generator) -> list[Case]:
    """Every regime: M below, equal to, just above and far above the array's rows; one tile and many; K and N
    multiples of the tile and not; square and non-square arrays."""
    cases = []
    for rows, cols in ((128, 128), (256, 256), (64, 32), (128, 128)):
        for M in (1, rows - 1, rows, rows + 1, int(2 ** rng.uniform(1, 14))):
            K = int(rng.choice([rows, 3 * rows, int(rng.integers(1, 5000))]))
            N = int(rng.choice([cols, 2 * cols, int(rng.integers(1, 5000))]))
            cases.append(Case((M, K, N, rows, cols)))
    cases.append(Case((37, 100, 50, 128, 128)))  # one padded tile: fill, stream, drain
    return cases

def _pallas_reference(x: Any, y: Any, bm: int, bn: int, bk: int) -> np.ndarray:
    return np.asarray(x, dtype=np.float64) @ np.asarray(y, dtype=np.float64)


def _rand32(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _pallas_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for bm, bn, bk in ((16, 8, 8), (8, 16, 4)):
        while True:  # x and y non-square, deliberately: m, k or k, n read the wrong way round shows only there
            m, n, k = bm * int(rng.integers(1, 4)), bn * int(rng.integers(1, 4)), bk * int(rng.integers(2, 5))
            if m != k and k != n:
                break
        cases.append(Case((_rand32(rng, (m, k)), _rand32(rng, (k, n)), bm, bn, bk)))
    return cases

def _collectives_reference(a_spec: tuple, b_spec: tuple, out_spec: tuple) -> list[str]:
    return compiled_collectives(a_spec, b_spec, out_spec)

def _collectives_cases(rng: np.random.Generator) -> list[Case]:
    """One configuration of every sharding class (11 of them; some hold 2 of the 45 configurations, so a random
    draw of 8 would miss them), then three more at random."""
    family = sharding_family()
    by_class: dict[tuple, list[int]] = {}
    for i, case in enumerate(family):
        by_class.setdefault(sharding_class(case), []).append(i)
    picks = [int(rng.choice(members)) for _, members in sorted(by_class.items())]
    rest = [i for i in range(len(family)) if i not in picks]
    picks += [int(i) for i in rng.choice(rest, size=3, replace=False)]
    return [Case(family[int(i)]) for i in rng.permutation(picks)]

def _hops_reference(a: tuple, b: tuple, dims: tuple, chip: str) -> int:
    hypothetical = (chip, tuple(dims)) in HYPOTHETICAL
    return interconnect.Torus(dims, tpu.TPU_CHIPS[chip].wraparound(dims, hypothetical=hypothetical)).hops(a, b)


def _slice_cases(rng: np.random.Generator) -> list[Case]:
    """Google's listed slices (v4: its topology rule; none of the v4 shapes its v4 page and the scaling book judge
    differently), whole-cube and smaller v4/v5p slices, full-axis and shorter v5e/v6e axes; on every shape a pair at
    the ends of the axes (where the wraparound is shorter) and a pair anywhere; on each chip's first shape a pair
    half an axis apart (a tie: both ways round are equally long), a chip to itself, and the two ends of an axis (one
    hop over the wraparound); and the hypothetical non-cube
    v5p slices end to end."""
    shapes = {"TPU v4": [(4, 4, 8), (4, 8, 8), (8, 8, 16), (2, 2, 4), (2, 4, 4), (2, 2, 1)],
              "TPU v5p": [(4, 4, 4), (4, 8, 8), (16, 16, 24), (2, 2, 2), (2, 4, 4)],
              "TPU v5e": [(16, 16), (8, 16), (4, 8), (4, 4), (2, 4)],
              "TPU v6e": [(16, 16), (16, 8), (4, 8)]}
    cases = []
    for chip, dims_list in shapes.items():
        for i, dims in enumerate(dims_list):
            anywhere = tuple(int(rng.integers(d)) for d in dims)
            pairs = [(tuple(0 for _ in dims), tuple(d - 1 for d in dims)),  # corner to corner
                     (anywhere, tuple(int(rng.integers(d)) for d in dims))]
            if i == 0:
                axis = int(rng.integers(len(dims)))
                half = tuple((x + d // 2) % d if j == axis else x for j, (x, d) in enumerate(zip(anywhere, dims)))
                first = tuple(0 if j == axis else x for j, x in enumerate(anywhere))
                last = tuple(dims[axis] - 1 if j == axis else x for j, x in enumerate(anywhere))
                pairs += [(anywhere, half), (anywhere, anywhere), (last, first)]  # last → first: one wraparound hop
            cases += [Case((a, b, dims, chip)) for a, b in pairs]
    for chip, dims in sorted(HYPOTHETICAL):  # corner to corner: every axis's wraparound would matter
        cases.append(Case((tuple(0 for _ in dims), tuple(d - 1 for d in dims), dims, chip)))
    return cases

def _collective_reference(kind: str, nbytes: float, p: int, wrap: bool, link_bandwidth: float,
                          latency: float) -> float:
    return interconnect.collective_seconds(kind, nbytes, interconnect.Axis(p, wrap, link_bandwidth), latency)


def _collective_cases(rng: np.random.Generator) -> list[Case]:
    """Every collective on rings and lines; even and odd p (the opposite chip's block splits only for even p);
    p = 1 and 2 (no ring possible); latency zero and not."""
    cases = []
    for kind in interconnect.COLLECTIVES:
        for p, wrap in ((16, True), (7, True), (6, True), (5, False), (8, False), (2, True), (1, False)):
            bw = float(rng.choice([45e9, 50e9, 90e9, 100e9]))
            lat = float(rng.choice([0.0, 1e-6, 2.5e-6]))
            cases.append(Case((kind, float(2 ** rng.uniform(12, 32)), p, wrap, bw, lat)))
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "pe_step": (systolic.pe_step, _step_cases),
    "systolic_matmul": (_systolic_reference, _systolic_cases),
    "tiled_gemm": (tiled_gemm, _tiled_cases),
    "pallas_matmul": (_pallas_reference, _pallas_cases),
    "predict_collectives": (_collectives_reference, _collectives_cases),
    "slice_hops": (_hops_reference, _slice_cases),
    "collective_seconds": (_collective_reference, _collective_cases),
}
