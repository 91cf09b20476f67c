"""Lab 1 exercise 6 (blocked_matmul): the checker follows tiles of A and B into their products and counts what the
products read (the eighth and ninth GPU reads): the naive loop with 1×1 "tiles" fails on its loads, right tilings
that stage a tile (.copy()) or use the .dot method pass, and what the checker cannot follow is named."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from grader.checks import CheckFailure
from grader.labs import lab01_blas_roofline as lab

PROBLEM = lab.problems["blocked_matmul"]


def tiled(stage=lambda t: t, product=lambda a, b: a @ b):
    def blocked_matmul(A, B, tile):
        xp = gc.array_module(A)
        m, k = A.shape
        n = B.shape[1]
        C = xp.zeros((m, n), dtype=A.dtype)
        for i in range(0, m, tile):
            for j in range(0, n, tile):
                for p in range(0, k, tile):
                    a, b = stage(A[i:i + tile, p:p + tile]), stage(B[p:p + tile, j:j + tile])
                    C[i:i + tile, j:j + tile] += product(a, b)
        return C
    return blocked_matmul


@pytest.mark.parametrize("fn", [tiled(), tiled(stage=lambda t: t.copy()), tiled(stage=np.copy),
                                tiled(product=lambda a, b: a.dot(b)), tiled(product=np.dot)],
                         ids=["slices", "copy-method", "np.copy", "dot-method", "np.dot"])
def test_right_tilings_pass_visible_and_hidden(fn):
    PROBLEM.check(fn)
    PROBLEM.after(fn, True)


def test_a_contiguous_copy_is_named_as_not_followed():
    with pytest.raises(CheckFailure, match="not np.ascontiguousarray or np.array copies"):
        PROBLEM.after(tiled(stage=np.ascontiguousarray), False)


def test_the_naive_loop_fails_on_the_elements_it_reads():
    def naive(A, B, tile):
        C = np.zeros((A.shape[0], B.shape[1]), dtype=A.dtype)
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                for p in range(A.shape[1]):
                    C[i:i + 1, j:j + 1] += A[i:i + 1, p:p + 1] @ B[p:p + 1, j:j + 1]
        return C
    with pytest.raises(CheckFailure, match=r"read 1,820 elements .* tiling reads 553"):
        PROBLEM.after(naive, False)


def test_a_float64_result_names_the_dtype():
    with pytest.raises(CheckFailure, match="expected dtype float32, got float64"):
        PROBLEM.check(lambda A, B, tile: tiled()(A, B, tile).astype(np.float64))
