"""A tiny lab for tests/test_hidden_strength.py: each problem has a known weakness the strength tools must find.

- ``bigger``: the visible test has the tie (a == b answers 'a'), the hidden cases never do — so ``>=`` → ``>``
  survives the hidden cases while the visible ones kill it (hidden weaker than visible), and the hidden cases lack
  the visible family "result='a' on a tie".
- ``clamp``: the branch for n < 0 is never taken by the hidden cases (a coverage gap), so its mutants survive.
- ``count_up``: ``i += 1`` → ``i -= 1`` never ends (a time-out).
- ``as_pair``: the reference returns a number, the answer a tuple — not answer-shaped: no reference mode.
- ``grid_sum``: ``a[r, c]`` read through a helper; the hidden arrays are square and symmetric, so swapping the axes
  goes unseen there (the visible array is not square: it kills that mutant).
"""

from __future__ import annotations

import numpy as np

from grader.checks import expect_array_close, expect_choice, expect_int, expect_tuple
from grader.problem import Case, Problem


def bigger(a: int, b: int) -> str:
    return "a" if a >= b else "b"  # a tie answers 'a'


def _clip(n: int, low: int) -> int:
    if n < low:
        return low
    return n


def clamp(n: int) -> int:
    return _clip(n, 0) * 2


def count_up(n: int) -> int:
    i = 0
    while i < n:
        i += 1
    return i


def as_pair(n: int) -> int:
    return n + 1


def _at(a: np.ndarray, r: int, c: int) -> float:
    return float(a[r, c])


def grid_sum(a: np.ndarray) -> np.ndarray:
    rows, cols = a.shape
    return np.array([sum(_at(a, r, c) * (c + 1) for c in range(cols)) for r in range(rows)])


def _symmetric(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return m + m.T


BIGGER = Problem(
    name="bigger", spec="bigger(a, b) -> 'a' or 'b', the bigger one; 'a' on a tie.", reference=bigger,
    visible=[Case((2, 2)), Case((1, 5))],
    hidden=lambda rng: [Case((int(rng.integers(10, 20)), int(rng.integers(0, 10)))), Case((0, 7))],
    compare=lambda what, got, expected, case: expect_choice(what, got, expected, ("a", "b")),
)

CLAMP = Problem(
    name="clamp", spec="clamp(n) -> 2·max(n, 0)", reference=clamp,
    visible=[Case((3,)), Case((-2,))], hidden=lambda rng: [Case((int(rng.integers(1, 100)),)) for _ in range(3)],
    compare=lambda what, got, expected, case: expect_int(what, got, expected),
)

COUNT_UP = Problem(
    name="count_up", spec="count_up(n) -> n, counted", reference=count_up,
    visible=[Case((3,))], hidden=lambda rng: [Case((5,)), Case((0,))],
    compare=lambda what, got, expected, case: expect_int(what, got, expected),
)


def _compare_pair(what, got, expected, case):
    expect_tuple(what, got, "value, n")
    expect_int(what, got[0], expected)


AS_PAIR = Problem(
    name="as_pair", spec="as_pair(n) -> (n + 1, n)", reference=as_pair,
    visible=[Case((1,))], hidden=lambda rng: [Case((2,))], compare=_compare_pair,
)

GRID_SUM = Problem(
    name="grid_sum", spec="grid_sum(a) -> per row, Σ_c a[r, c]·(c + 1)", reference=grid_sum,
    visible=[Case((np.arange(6.0).reshape(2, 3),))],
    hidden=lambda rng: [Case((_symmetric(rng, 3),))],  # square and symmetric only: swapped axes go unseen
    compare=lambda what, got, expected, case: expect_array_close(what, got, expected),
)

problems = {p.name: p for p in (BIGGER, CLAMP, COUNT_UP, AS_PAIR, GRID_SUM)}
