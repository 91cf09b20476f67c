"""BLAS levels made countable: the source article's triple loop with counters on every memory
access.

Level 1 (vector-vector, e.g. axpy ``y = a·x + y``), Level 2 (matrix-vector, gemv ``y = A·x``) and
Level 3 (matrix-matrix, gemm ``C = A·B``). The loop below is the source article's pseudo-code, run
for real on small shapes, so that the course can *count* what it only asserts: O(MNK) multiply-adds
against O(MN + MK + KN) distinct data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LoopCounts:
    flops: int  # multiplies + adds
    loads: int  # element reads issued by the loop (with repeats)
    stores: int  # element writes
    distinct_elements: int  # different elements of A, B and C touched at least once

    @property
    def reuse(self) -> float:
        """Accesses (loads + stores) per distinct element: how often an element is touched, so how
        often a cache or a tile could serve it instead of memory."""
        return (self.loads + self.stores) / self.distinct_elements


def triple_loop_matmul(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, LoopCounts]:
    """C = A @ B with the source article's i-j-k loop, counting every element access. Keep shapes
    small (pure Python)."""
    M, K = A.shape
    K_of_B, N = B.shape
    if K != K_of_B:
        raise ValueError(f"inner dimensions differ: A is {A.shape}, B is {B.shape}")
    C = np.zeros((M, N), dtype=np.result_type(A, B))
    loads = stores = flops = 0
    touched: set[tuple[str, int, int]] = set()
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]  # O(MNK): one multiply and one add
                loads += 2
                flops += 2
                touched.add(("A", i, k))
                touched.add(("B", k, j))
            C[i, j] = acc  # O(MN)
            stores += 1
            touched.add(("C", i, j))
    return C, LoopCounts(flops, loads, stores, len(touched))
