"""Lab 5b's answer side: the reference of every kernel puzzle and its hidden-case generator
(instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side,
grader/labs/lab05b_kernel_puzzles.py, is the rest of the lab (specs, launches, budgets, visible
cases); this module imports it, never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on
first use where this module is installed). The references compute what each kernel's outputs must
hold; the generators draw sizes that are not multiples of the block (one element, exactly one block,
many blocks, square and not) and adversarial values (all equal, negative, huge, −inf).
"""

from __future__ import annotations

import numpy as np

from ..labs.lab05b_kernel_puzzles import (
    BLOCK_1D,
    BLOCK_2D,
    BLOCK_2D_SMALL,
    CONV_BLOCK,
    DOT_THREADS,
    F32,
    HIST_BINS,
    HIST_BLOCK,
    MAXK,
    ROW_SUM_BLOCK,
    SCAN_BLOCK,
    SHARED_BLOCK,
    TILE,
    WARP_BLOCK,
)
from ..problem import Case


def _vec(rng: np.random.Generator, n: int, kind: str | None = None) -> np.ndarray:
    """n float32 values of a kind the hidden cases cycle through: random, all equal, all negative,
    integers."""
    kind = kind or str(rng.choice(["normal", "equal", "negative", "ints"]))
    if kind == "equal":
        return np.full(n, rng.standard_normal(), F32)
    if kind == "negative":
        return -np.abs(rng.standard_normal(n)).astype(F32) - 1
    if kind == "positive":
        return np.abs(rng.standard_normal(n)).astype(F32) + 1
    if kind == "ints":
        return rng.integers(-5, 6, n).astype(F32)
    return rng.standard_normal(n).astype(F32)


def _sizes(rng: np.random.Generator, block: int, many: int = 4) -> list[int]:
    """1 element, exactly one block, one past it, and a random non-multiple spanning several
    blocks."""
    return [1, block, block + 1, int(block * rng.integers(2, many) + rng.integers(1, block))]


def _shared_ref(a: np.ndarray) -> np.ndarray:
    """out[i] = a[i] + a[the block's first element]."""
    first = a[(np.arange(a.size) // SHARED_BLOCK) * SHARED_BLOCK]
    return a + first


def _pool_ref(a: np.ndarray) -> np.ndarray:
    # the output's dtype is the launch's (float32), not the reference's
    p = np.concatenate([np.zeros(2), a])
    return p[:-2] + p[1:-1] + p[2:]


def _conv_ref(a: np.ndarray, k: np.ndarray) -> np.ndarray:
    n = a.size
    out = np.zeros(n)
    for j in range(k.size):
        out[:n - j] += a[j:] * k[j]
    return out


def _scan_ref(a: np.ndarray) -> np.ndarray:
    out = np.zeros(a.size)
    for s in range(0, a.size, SCAN_BLOCK):
        out[s:s + SCAN_BLOCK] = np.cumsum(a[s:s + SCAN_BLOCK])
    return out


def _warp_ref(a: np.ndarray) -> np.ndarray:
    w = -(-a.size // 32)  # warps
    p = np.zeros(w * 32)
    p[:a.size] = a
    return p.reshape(w, 32).sum(axis=1).astype(F32)


def _compact_ref(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = -(-a.size // 32)  # warps
    out = np.zeros(w * 32)
    count = np.zeros(w)
    for i in range(w):
        keep = [v for v in a[32 * i:32 * i + 32] if v > 0]
        out[32 * i:32 * i + len(keep)] = keep
        count[i] = len(keep)
    return out, count


def _softmax_ref(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_cases(rng: np.random.Generator) -> list[Case]:
    # exp(1000) overflows: subtract the max
    big = (rng.standard_normal((3, 20)) * 3 + 1000).astype(F32)
    big[1] -= 1000  # a row far below the others: the max is per row, not of the whole array
    neg = rng.standard_normal((2, 7)).astype(F32)
    neg[:, 1] = -np.inf  # exp(-inf) = 0: a masked position
    # every exp(v) underflows to 0: padding lanes must hold -inf, not 0 (a max of 0 would make every
    # exp(v - 0) vanish and the sum 0)
    low = (rng.standard_normal((2, int(rng.integers(3, 32)))) - 1000).astype(F32)
    return [
        Case((rng.standard_normal((1, 1)).astype(F32),)),
        Case((big,)),
        Case((neg,)),
        Case((low,)),
        Case((np.full((3, 32), -2.5, F32),)),
        Case((rng.standard_normal((int(rng.integers(2, 5)), 32)).astype(F32),)),
    ]


# name -> (reference, hidden-case generator)
ANSWERS = {
    "map_add": (
        lambda a: a + F32(10),
        lambda rng: [Case((_vec(rng, n),)) for n in (1, 32, int(rng.integers(2, 64)))],
    ),
    "zip_add": (
        lambda a, b: a + b,
        lambda rng: [Case((_vec(rng, n), _vec(rng, n))) for n in (1, 33, int(rng.integers(2, 64)))],
    ),
    "map_guard": (
        lambda a: a + F32(10),
        lambda rng: [Case((_vec(rng, n),)) for n in (1, 63, 64, int(rng.integers(2, 63)))],
    ),
    "map_2d": (
        lambda a: a + F32(10),
        lambda rng: [
            Case((_vec(rng, r * c).reshape(r, c),))
            for r, c in (
                (1, 1),
                (BLOCK_2D_SMALL[1], BLOCK_2D_SMALL[0]),
                (BLOCK_2D_SMALL[1], 3),
                (int(rng.integers(1, BLOCK_2D_SMALL[1])), int(rng.integers(1, BLOCK_2D_SMALL[0]))),
            )
        ],
    ),
    "broadcast_add": (
        lambda a, b: a[:, None] + b[None, :],
        lambda rng: [
            Case((_vec(rng, r), _vec(rng, c)))
            for r, c in (
                (1, 1),
                (BLOCK_2D_SMALL[1], BLOCK_2D_SMALL[0]),
                (int(rng.integers(1, BLOCK_2D_SMALL[1])), int(rng.integers(2, BLOCK_2D_SMALL[0]))),
            )
        ],
    ),
    "map_blocks": (
        lambda a: a + F32(10),
        lambda rng: [Case((_vec(rng, n),)) for n in _sizes(rng, BLOCK_1D)],
    ),
    "map_blocks_2d": (
        lambda a: a * F32(2) - np.arange(a.shape[0], dtype=F32)[:, None],
        lambda rng: [
            Case((_vec(rng, r * c).reshape(r, c),))
            for r, c in (
                (1, 1),
                (BLOCK_2D[1], BLOCK_2D[0]),
                (23, 23),
                (int(rng.integers(5, 12)), int(rng.integers(33, 60))),
            )
        ],
    ),
    "shared_first": (
        _shared_ref,
        lambda rng: [Case((_vec(rng, n),)) for n in _sizes(rng, SHARED_BLOCK)],
    ),
    "pool3": (_pool_ref, lambda rng: [Case((_vec(rng, n),)) for n in _sizes(rng, SHARED_BLOCK)]),
    "dot": (
        lambda a, b: np.array([np.dot(a.astype(np.float64), b)], F32),
        lambda rng: [
            Case((_vec(rng, n), _vec(rng, n)))
            for n in (1, DOT_THREADS, int(rng.integers(33, DOT_THREADS)))
        ],
    ),
    "conv1d": (
        _conv_ref,
        lambda rng: [
            Case((_vec(rng, n), _vec(rng, int(rng.integers(1, MAXK + 1)), "normal")))
            for n in _sizes(rng, CONV_BLOCK)
        ]
        + [
            Case((_vec(rng, 5), _vec(rng, MAXK, "normal"))),
            Case((_vec(rng, CONV_BLOCK + MAXK + 3), _vec(rng, MAXK, "normal"))),
        ],
    ),
    "block_scan": (
        _scan_ref,
        lambda rng: [Case((_vec(rng, n, "ints"),)) for n in _sizes(rng, SCAN_BLOCK)],
    ),
    "row_sum": (
        lambda a: a.astype(np.float64).sum(axis=1).astype(F32),
        lambda rng: [
            Case((_vec(rng, r * c).reshape(r, c),))
            for r, c in ((1, 1), (2, ROW_SUM_BLOCK), (3, int(rng.integers(2, ROW_SUM_BLOCK))))
        ],
    ),
    "transpose": (
        lambda a: np.ascontiguousarray(a.T),
        lambda rng: [
            Case((_vec(rng, r * c).reshape(r, c),))
            for r, c in (
                (1, 1),
                (TILE, TILE),
                (int(rng.integers(33, 45)), int(rng.integers(5, 31))),
            )
        ],
    ),
    "warp_sum": (
        _warp_ref,
        lambda rng: [
            Case((_vec(rng, n),))
            for n in (1, 32, 33, WARP_BLOCK, int(rng.integers(WARP_BLOCK + 1, 4 * WARP_BLOCK)))
        ],
    ),
    "compact": (
        _compact_ref,
        lambda rng: [Case((np.array([1.5], F32),))]
        + [
            Case((_vec(rng, n, k),))
            for n, k in (
                (32, "ints"),
                (33, "negative"),
                (WARP_BLOCK, "normal"),
                (3 * 32 + 5, "positive"),
                (int(rng.integers(WARP_BLOCK + 1, 3 * WARP_BLOCK)), "ints"),
            )
        ],
    ),
    "histogram": (
        lambda x: np.bincount(x, minlength=HIST_BINS).astype(np.int32),
        lambda rng: [
            Case((rng.integers(0, HIST_BINS, n).astype(np.int32),))
            for n in (1, HIST_BLOCK, int(rng.integers(HIST_BLOCK + 1, 4 * HIST_BLOCK)))
        ]
        # one hot bin
        + [
            Case(
                (
                    np.full(
                        int(rng.integers(HIST_BLOCK, 3 * HIST_BLOCK)),
                        int(rng.integers(HIST_BINS)),
                        np.int32,
                    ),
                )
            )
        ],
    ),
    "softmax_rows": (_softmax_ref, _softmax_cases),
}
