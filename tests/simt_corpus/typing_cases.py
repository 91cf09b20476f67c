"""Kernels on the edge of what numba-cuda compiles: each with the launch the executor runs and the signature
numba-cuda's compiler types it with. tests/test_simt_types.py asks numba-cuda's real compiler (``compile_ptx`` for
sm_90, in a child process: no GPU needed) and the executor the same question: does this kernel compile/run?
Each kernel was written here after numba-cuda's typing (numba_cuda/numba/cuda/cudadecl.py, intrinsics.py)."""

from __future__ import annotations

import numpy as np

N_CONST = 32  # a global constant: a valid array shape


def count_bool(x, out):
    t = cuda.threadIdx.x  # noqa: F821 - `cuda` is bound by whoever loads this module's kernels
    out[t] = cuda.syncthreads_count(x[t] > 0)  # noqa: F821


def count_int(x, out):
    t = cuda.threadIdx.x  # noqa: F821
    out[t] = cuda.syncthreads_count(x[t])  # noqa: F821


def inc(c):
    cuda.atomic.inc(c, 0, 5)  # noqa: F821


def add(c):
    cuda.atomic.add(c, 0, 1)  # noqa: F821


def shuffle(x, out):
    t = cuda.threadIdx.x  # noqa: F821
    out[t] = cuda.shfl_sync(0xFFFFFFFF, x[t], 0)  # noqa: F821


def shuffle_bool(x, out):
    t = cuda.threadIdx.x  # noqa: F821
    out[t] = cuda.shfl_sync(0xFFFFFFFF, x[t] > 0, 0)  # noqa: F821


def ballot(x, out):
    out[cuda.threadIdx.x] = cuda.ballot_sync(0xFFFFFFFF, x[cuda.threadIdx.x])  # noqa: F821


def shared_from_argument(out, n):
    s = cuda.shared.array(n, np.float32)  # noqa: F821
    s[cuda.threadIdx.x] = 1.0  # noqa: F821
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]  # noqa: F821


def shared_from_block(out):
    s = cuda.shared.array(cuda.blockDim.x, np.float32)  # noqa: F821
    s[cuda.threadIdx.x] = 1.0  # noqa: F821
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]  # noqa: F821


def shared_from_literals(out):
    n = 8
    s = cuda.shared.array((N_CONST, n), np.float32)  # noqa: F821
    s[cuda.threadIdx.x, 0] = 1.0  # noqa: F821
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x, 0]  # noqa: F821


# (kernel, numba-cuda signature as text, executor launch args factory, does numba-cuda compile it)
CASES = [
    (count_bool, "void(int32[:], int32[:])", lambda: (np.ones(32, np.int32), np.zeros(32, np.int32)), False),
    (count_int, "void(int32[:], int32[:])", lambda: (np.ones(32, np.int32), np.zeros(32, np.int32)), True),
    (inc, "void(int32[:])", lambda: (np.zeros(1, np.int32),), False),
    (inc, "void(uint32[:])", lambda: (np.zeros(1, np.uint32),), True),
    (add, "void(int16[:])", lambda: (np.zeros(1, np.int16),), False),
    (add, "void(float16[:])", lambda: (np.zeros(1, np.float16),), False),
    (add, "void(uint64[:])", lambda: (np.zeros(1, np.uint64),), True),
    (shuffle, "void(float32[:], float32[:])", lambda: (np.ones(32, np.float32), np.zeros(32, np.float32)), True),
    (shuffle, "void(uint32[:], uint32[:])", lambda: (np.ones(32, np.uint32), np.zeros(32, np.uint32)), False),
    (shuffle_bool, "void(int32[:], int32[:])", lambda: (np.ones(32, np.int32), np.zeros(32, np.int32)), False),
    (ballot, "void(float32[:], int32[:])", lambda: (np.ones(32, np.float32), np.zeros(32, np.int32)), False),
    (ballot, "void(boolean[:], int32[:])", lambda: (np.ones(32, np.bool_), np.zeros(32, np.int32)), True),
    (shared_from_argument, "void(float32[:], int64)", lambda: (np.zeros(32, np.float32), 32), False),
    (shared_from_block, "void(float32[:])", lambda: (np.zeros(32, np.float32),), False),
    (shared_from_literals, "void(float32[:])", lambda: (np.zeros(32, np.float32),), True),
]


def case_id(i: int) -> str:
    fn, sig, _, _ = CASES[i]
    return f"{fn.__name__}:{sig}"


def main(out_path: str) -> None:
    """In a child process: numba-cuda's real compiler (no GPU) says which cases compile for sm_90."""
    import json

    from numba import cuda as real

    verdicts = {}
    for i, (fn, sig, _, _) in enumerate(CASES):
        fn.__globals__["cuda"] = real
        try:
            real.compile_ptx(fn, sig, cc=(9, 0))
            verdicts[case_id(i)] = True
        except Exception as exc:  # noqa: BLE001 - a TypingError is the answer asked for
            verdicts[case_id(i)] = type(exc).__name__ != "TypingError" and None
    with open(out_path, "w") as f:
        json.dump(verdicts, f)


if __name__ == "__main__":
    import sys

    main(sys.argv[1])
