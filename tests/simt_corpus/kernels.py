"""The corpus: kernels modelled on numba-cuda's tests and documentation examples, and the standard solutions of
GPU-Puzzles' 14 puzzles — each re-written here (not copied) and tagged with the test, example or puzzle it
follows. ``cuda`` is numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1`` (the child process of
tests/test_simt_corpus.py) and the course's executor otherwise.

A :class:`Case` is one launch: the kernel, its configuration, a function making its (seeded) arguments, which
arguments are outputs, and, where the source states it, the expected outputs. ``sim=False`` marks what numba's
simulator cannot run (warp intrinsics, multi-block grid sync, closures over ``cuda``) or runs differently from a
GPU (globals, which numba-cuda freezes at compile time): there the expectation is the ground truth.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import numba
import numpy as np

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from numba import cuda
else:
    from gpucourse.simt import cuda

NUMBA_TESTS = "NVIDIA/numba-cuda numba_cuda/numba/cuda/tests/"
PUZZLES = "srush/GPU-Puzzles GPU_puzzlers.py, "


@dataclass
class Case:
    name: str
    source: str
    kernel: Any
    grid: Any
    block: Any
    args: Callable[[], list]
    outputs: tuple[int, ...]
    expect: Callable[..., list] | None = None  # expect(*fresh_args) -> expected outputs, where the source says
    sharedmem: int = 0
    sim: bool = True  # numba's simulator runs it the way a GPU does

    def launch(self, args: list) -> None:
        """Through numba-cuda's own launch syntax (the executor's or the simulator's ``cuda``)."""
        self.kernel[self.grid, self.block, 0, self.sharedmem](*args)


CASES: list[Case] = []


def case(name: str, source: str, kernel: Any, grid: Any, block: Any, args: Callable[[], list], outputs: tuple,
         expect: Callable[..., list] | None = None, sharedmem: int = 0, sim: bool = True) -> None:
    CASES.append(Case(name, source, kernel, grid, block, args, outputs, expect, sharedmem, sim))


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# == GPU-Puzzles: the standard solutions of the 14 puzzles (sizes and launches as in the notebook) ================

@cuda.jit
def p01_map(out, a):
    local_i = cuda.threadIdx.x
    out[local_i] = a[local_i] + 10


@cuda.jit
def p02_zip(out, a, b):
    local_i = cuda.threadIdx.x
    out[local_i] = a[local_i] + b[local_i]


@cuda.jit
def p03_guard(out, a, size):
    local_i = cuda.threadIdx.x
    if local_i < size:
        out[local_i] = a[local_i] + 10


@cuda.jit
def p04_map2d(out, a, size):
    local_i = cuda.threadIdx.x
    local_j = cuda.threadIdx.y
    if local_i < size and local_j < size:
        out[local_i, local_j] = a[local_i, local_j] + 10


@cuda.jit
def p05_broadcast(out, a, b, size):
    local_i = cuda.threadIdx.x
    local_j = cuda.threadIdx.y
    if local_i < size and local_j < size:
        out[local_i, local_j] = a[local_i, 0] + b[0, local_j]


@cuda.jit
def p06_blocks(out, a, size):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < size:
        out[i] = a[i] + 10


@cuda.jit
def p07_blocks2d(out, a, size):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if i < size and j < size:
        out[i, j] = a[i, j] + 10


P08_TPB = 4


@cuda.jit
def p08_shared(out, a, size):
    shared = cuda.shared.array(P08_TPB, numba.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
        cuda.syncthreads()
    if i < size:
        out[i] = shared[local_i] + 10


TPB = 8


@cuda.jit
def p09_pool(out, a, size):
    shared = cuda.shared.array(TPB, numba.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i]
    cuda.syncthreads()
    if i < size:
        total = shared[local_i]
        if local_i >= 1:
            total += shared[local_i - 1]
        if local_i >= 2:
            total += shared[local_i - 2]
        out[i] = total


@cuda.jit
def p10_dot(out, a, b, size):
    shared = cuda.shared.array(TPB, numba.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    if i < size:
        shared[local_i] = a[i] * b[i]
    cuda.syncthreads()
    if local_i == 0:
        total = 0.0
        for k in range(size):
            total += shared[k]
        out[0] = total


MAX_CONV = 4
TPB_MAX_CONV = TPB + MAX_CONV


@cuda.jit
def p11_conv(out, a, b, a_size, b_size):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    shared_a = cuda.shared.array(TPB_MAX_CONV, numba.float32)
    shared_b = cuda.shared.array(MAX_CONV, numba.float32)
    if i < a_size:
        shared_a[local_i] = a[i]
    if local_i < b_size:
        shared_b[local_i] = b[local_i]
    else:
        tail = local_i - b_size  # the next block's first b_size - 1 elements, loaded by the spare threads
        if i - b_size + TPB < a_size and tail < b_size:
            shared_a[TPB + tail] = a[i - b_size + TPB]
    cuda.syncthreads()
    acc = 0.0
    for k in range(b_size):
        if i + k < a_size:
            acc += shared_a[local_i + k] * shared_b[k]
    if i < a_size:
        out[i] = acc


@cuda.jit
def p12_block_sum(out, a, size):
    cache = cuda.shared.array(TPB, numba.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
        cuda.syncthreads()
        step *= 2
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@cuda.jit
def p13_axis_sum(out, a, size):
    cache = cuda.shared.array(TPB, numba.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    batch = cuda.blockIdx.y
    cache[local_i] = a[batch, i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
        cuda.syncthreads()
        step *= 2
    if local_i == 0:
        out[batch, 0] = cache[0]


MM_TPB = 3


@cuda.jit
def p14_matmul(out, a, b, size):
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), numba.float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), numba.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    local_i = cuda.threadIdx.x
    local_j = cuda.threadIdx.y
    acc = 0.0
    for k in range(0, size, MM_TPB):
        if i < size and k + local_j < size:
            a_shared[local_i, local_j] = a[i, k + local_j]
        if j < size and k + local_i < size:
            b_shared[local_i, local_j] = b[k + local_i, j]
        cuda.syncthreads()
        for local_k in range(min(MM_TPB, size - k)):
            acc += a_shared[local_i, local_k] * b_shared[local_k, local_j]  # padded rows read, never stored
        cuda.syncthreads()
    if i < size and j < size:
        out[i, j] = acc


def _f64(n: int) -> np.ndarray:
    return np.zeros(n)


def _pool(a):
    return [np.array([a[max(i - 2, 0):i + 1].sum() for i in range(a.size)])]


def _conv(a, b):
    return [np.array([sum(a[i + j] * b[j] for j in range(b.size) if i + j < a.size) for i in range(a.size)])]


def _block_sums(a):
    return [np.array([a[i:i + TPB].sum() for i in range(0, a.size, TPB)])]


case("puzzle 1 map", PUZZLES + "Puzzle 1", p01_map, 1, 4, lambda: [_f64(4), np.arange(4)], (0,),
     lambda out, a: [a + 10])
case("puzzle 2 zip", PUZZLES + "Puzzle 2", p02_zip, 1, 4, lambda: [_f64(4), np.arange(4), np.arange(4)], (0,),
     lambda out, a, b: [a + b])
case("puzzle 3 guard", PUZZLES + "Puzzle 3", p03_guard, 1, 8, lambda: [_f64(4), np.arange(4), 4], (0,),
     lambda out, a, n: [a + 10])
case("puzzle 4 map 2D", PUZZLES + "Puzzle 4", p04_map2d, 1, (3, 3),
     lambda: [np.zeros((2, 2)), np.arange(4).reshape(2, 2), 2], (0,), lambda out, a, n: [a + 10])
case("puzzle 5 broadcast", PUZZLES + "Puzzle 5", p05_broadcast, 1, (3, 3),
     lambda: [np.zeros((2, 2)), np.arange(2).reshape(2, 1), np.arange(2).reshape(1, 2), 2], (0,),
     lambda out, a, b, n: [a + b])
case("puzzle 6 blocks", PUZZLES + "Puzzle 6", p06_blocks, 3, 4, lambda: [_f64(9), np.arange(9), 9], (0,),
     lambda out, a, n: [a + 10])
case("puzzle 7 blocks 2D", PUZZLES + "Puzzle 7", p07_blocks2d, (2, 2), (3, 3),
     lambda: [np.zeros((5, 5)), np.ones((5, 5)), 5], (0,), lambda out, a, n: [a + 10])
case("puzzle 8 shared", PUZZLES + "Puzzle 8", p08_shared, 2, P08_TPB, lambda: [_f64(8), np.ones(8), 8], (0,),
     lambda out, a, n: [a + 10])
case("puzzle 9 pooling", PUZZLES + "Puzzle 9", p09_pool, 1, TPB, lambda: [_f64(8), np.arange(8), 8], (0,),
     lambda out, a, n: _pool(a))
case("puzzle 10 dot product", PUZZLES + "Puzzle 10", p10_dot, 1, 8, lambda: [_f64(1), np.arange(8), np.arange(8), 8],
     (0,), lambda out, a, b, n: [np.array([a @ b])])
case("puzzle 11 1D convolution (simple)", PUZZLES + "Puzzle 11, test 1", p11_conv, 1, TPB,
     lambda: [_f64(6), np.arange(6), np.arange(3), 6, 3], (0,), lambda out, a, b, n, m: _conv(a, b))
case("puzzle 11 1D convolution (full)", PUZZLES + "Puzzle 11, test 2", p11_conv, 2, TPB,
     lambda: [_f64(15), np.arange(15), np.arange(4), 15, 4], (0,), lambda out, a, b, n, m: _conv(a, b))
case("puzzle 12 prefix sum (simple)", PUZZLES + "Puzzle 12, test 1", p12_block_sum, 1, TPB,
     lambda: [_f64(1), np.arange(8), 8], (0,), lambda out, a, n: _block_sums(a))
case("puzzle 12 prefix sum (full)", PUZZLES + "Puzzle 12, test 2", p12_block_sum, 2, TPB,
     lambda: [_f64(2), np.arange(15), 15], (0,), lambda out, a, n: _block_sums(a))
case("puzzle 13 axis sum", PUZZLES + "Puzzle 13", p13_axis_sum, (1, 4), (TPB, 1),
     lambda: [np.zeros((4, 1)), np.arange(24).reshape(4, 6), 6], (0,),
     lambda out, a, n: [a.sum(axis=1, keepdims=True)])
case("puzzle 14 matmul (simple)", PUZZLES + "Puzzle 14, test 1", p14_matmul, (1, 1), (MM_TPB, MM_TPB),
     lambda: [np.zeros((2, 2)), np.arange(4).reshape(2, 2), np.arange(4).reshape(2, 2).T.copy(), 2], (0,),
     lambda out, a, b, n: [a @ b])
case("puzzle 14 matmul (full)", PUZZLES + "Puzzle 14, test 2", p14_matmul, (3, 3), (MM_TPB, MM_TPB),
     lambda: [np.zeros((8, 8)), np.arange(64).reshape(8, 8), np.arange(64).reshape(8, 8).T.copy(), 8], (0,),
     lambda out, a, b, n: [a @ b])


# == numba-cuda: tests/cudapy ========================================================================================

@cuda.jit
def sync_useless(ary):  # test_sync.py useless_syncthreads
    i = cuda.grid(1)
    cuda.syncthreads()
    ary[i] = i


SMEM_N = 100


@cuda.jit
def sync_simple_smem(ary):  # test_sync.py simple_smem: thread 0 fills shared memory for everyone
    sm = cuda.shared.array(SMEM_N, numba.int32)
    i = cuda.grid(1)
    if i == 0:
        for j in range(SMEM_N):
            sm[j] = j
    cuda.syncthreads()
    ary[i] = sm[i]


@cuda.jit
def sync_smem2d(ary):  # test_sync.py coop_smem2d
    i, j = cuda.grid(2)
    sm = cuda.shared.array((10, 20), numba.float32)
    sm[i, j] = (i + 1) / (j + 1)
    cuda.syncthreads()
    ary[i, j] = sm[i, j]


@cuda.jit
def sync_dynshared(ary):  # test_sync.py dyn_shared_memory
    i = cuda.grid(1)
    sm = cuda.shared.array(0, numba.float32)
    sm[i] = i * 2
    cuda.syncthreads()
    ary[i] = sm[i]


@cuda.jit
def sync_count_and_or(pred, out_count, out_and, out_or):  # test_sync.py use_syncthreads_count/_and/_or
    i = cuda.grid(1)
    out_count[i] = cuda.syncthreads_count(pred[i])
    out_and[i] = cuda.syncthreads_and(pred[i])
    out_or[i] = cuda.syncthreads_or(pred[i])


@cuda.jit
def sync_threadfence(ary):  # test_sync.py use_threadfence
    ary[0] += 123
    cuda.threadfence()
    ary[0] += 321


@cuda.jit
def sync_coop_syncwarp(res):  # test_sync.py coop_syncwarp (the simulator has no syncwarp)
    sm = cuda.shared.array(32, numba.int32)
    i = cuda.grid(1)
    sm[i] = i
    cuda.syncwarp()
    if i < 16:
        sm[i] = sm[i] + sm[i + 16]
        cuda.syncwarp(0xFFFF)
    if i < 8:
        sm[i] = sm[i] + sm[i + 8]
        cuda.syncwarp(0xFF)
    if i < 4:
        sm[i] = sm[i] + sm[i + 4]
        cuda.syncwarp(0xF)
    if i < 2:
        sm[i] = sm[i] + sm[i + 2]
        cuda.syncwarp(0x3)
    if i == 0:
        res[0] = sm[0] + sm[1]


case("syncthreads in straight-line code", NUMBA_TESTS + "cudapy/test_sync.py::useless_syncthreads", sync_useless, 1,
     10, lambda: [np.zeros(10, np.int32)], (0,), lambda a: [np.arange(10)])
case("thread 0 fills shared memory", NUMBA_TESTS + "cudapy/test_sync.py::simple_smem", sync_simple_smem, 1, SMEM_N,
     lambda: [np.zeros(SMEM_N, np.int32)], (0,), lambda a: [np.arange(SMEM_N)])
case("2-D shared memory", NUMBA_TESTS + "cudapy/test_sync.py::coop_smem2d", sync_smem2d, 1, (10, 20),
     lambda: [np.zeros((10, 20), np.float32)], (0,),
     lambda a: [np.fromfunction(lambda i, j: (i + 1) / (j + 1), (10, 20)).astype(np.float32)])
case("dynamic shared memory", NUMBA_TESTS + "cudapy/test_sync.py::dyn_shared_memory", sync_dynshared, 1, 50,
     lambda: [np.zeros(50, np.float32)], (0,), lambda a: [np.arange(50) * 2.0], sharedmem=50 * 4)
case("syncthreads_count/_and/_or", NUMBA_TESTS + "cudapy/test_sync.py::use_syncthreads_count", sync_count_and_or, 1,
     72, lambda: [(_rng(4).random(72) < 0.3).astype(np.int32)] + [np.zeros(72, np.int32) for _ in range(3)],
     (1, 2, 3), lambda p, *_: [np.full(72, p.sum()), np.full(72, int(p.all())), np.full(72, int(p.any()))])
case("threadfence", NUMBA_TESTS + "cudapy/test_sync.py::use_threadfence", sync_threadfence, 1, 1,
     lambda: [np.zeros(1, np.int32)], (0,), lambda a: [np.array([444])])
case("syncwarp-ordered tree", NUMBA_TESTS + "cudapy/test_sync.py::coop_syncwarp", sync_coop_syncwarp, 1, 32,
     lambda: [np.zeros(1, np.int32)], (0,), lambda r: [np.array([sum(range(32))])], sim=False)


@cuda.jit
def atomic_shared_histogram(ary):  # test_atomics.py atomic_add: bins in shared memory
    tid = cuda.threadIdx.x
    sm = cuda.shared.array(32, numba.uint32)
    sm[tid] = 0
    cuda.syncthreads()
    bin = ary[tid] % 32
    cuda.atomic.add(sm, bin, 1)
    cuda.syncthreads()
    ary[tid] = sm[tid]


@cuda.jit
def atomic_max_2d(res, vals):  # test_atomics.py atomic_max (check_atomic_max: 32 blocks of 32)
    tid = cuda.threadIdx.x
    bid = cuda.blockIdx.x
    cuda.atomic.max(res, 0, vals[bid, tid])


@cuda.jit
def atomic_min_2d(res, vals):  # test_atomics.py atomic_min
    tid = cuda.threadIdx.x
    bid = cuda.blockIdx.x
    cuda.atomic.min(res, 0, vals[bid, tid])


@cuda.jit
def atomic_inc_shared_2d(ary, limit):  # test_atomics.py atomic_inc2_32 (atomic_binary_2dim_shared)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    sm = cuda.shared.array((4, 8), numba.uint32)
    sm[tx, ty] = ary[tx, ty]
    cuda.syncthreads()
    cuda.atomic.inc(sm, (tx, ty), limit)
    cuda.syncthreads()
    ary[tx, ty] = sm[tx, ty]


@cuda.jit
def atomic_dec_shared_2d(ary, limit):  # test_atomics.py atomic_dec2_32
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    sm = cuda.shared.array((4, 8), numba.uint32)
    sm[tx, ty] = ary[tx, ty]
    cuda.syncthreads()
    cuda.atomic.dec(sm, (tx, ty), limit)
    cuda.syncthreads()
    ary[tx, ty] = sm[tx, ty]


@cuda.jit
def atomic_cas_1dim(res, old, ary, fill_val):  # test_atomics.py atomic_cas_1dim
    gid = cuda.grid(1)
    if gid < res.size:
        old[gid] = cuda.atomic.cas(res, gid, fill_val, ary[gid])


@cuda.jit
def atomic_bits_global_2d(ary, op2, which):  # test_atomics.py atomic_and/or/xor_global_2
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    if which == 0:
        cuda.atomic.and_(ary, (tx, ty), op2)
    elif which == 1:
        cuda.atomic.or_(ary, (tx, ty), op2)
    else:
        cuda.atomic.xor(ary, (tx, ty), op2)


@cuda.jit
def atomic_sub_float(ary):  # test_atomics.py atomic_sub_float: shared bins of float32
    tid = cuda.threadIdx.x
    sm = cuda.shared.array(32, numba.float32)
    sm[tid] = 0
    cuda.syncthreads()
    bin = int(ary[tid] % 32)
    cuda.atomic.sub(sm, bin, 1.0)
    cuda.syncthreads()
    ary[tid] = sm[tid]


@cuda.jit
def atomic_exch_global(idx, ary, op2):  # test_atomics.py atomic_exch_global
    tid = cuda.threadIdx.x
    cuda.atomic.exch(ary, idx[tid], op2)


def _hist(a):
    return [np.bincount(a % 32, minlength=32).astype(np.uint32)]


def _inc(a, limit):
    return [np.where(a >= limit, 0, a + 1)]


def _dec(a, limit):
    return [np.where(a == 0, limit, np.where(a > limit, limit, a - 1))]


def _cas_args():
    res = np.array([7, 9] * 16, dtype=np.int32)
    _rng(5).shuffle(res)
    return [res, np.zeros(32, np.int32), _rng(6).integers(1, 10, 32).astype(np.int32), 7]


case("atomic add into shared bins", NUMBA_TESTS + "cudapy/test_atomics.py::atomic_add", atomic_shared_histogram, 1, 32,
     lambda: [_rng(1).integers(0, 32, 32).astype(np.uint32)], (0,), _hist)
case("atomic max over 32 blocks", NUMBA_TESTS + "cudapy/test_atomics.py::check_atomic_max", atomic_max_2d, 32, 32,
     lambda: [np.zeros(1, np.int32), _rng(2).integers(-65535, 65535, (32, 32)).astype(np.int32)], (0,),
     lambda r, v: [np.array([max(0, v.max())])])
case("atomic min over 32 blocks", NUMBA_TESTS + "cudapy/test_atomics.py::check_atomic_min", atomic_min_2d, 32, 32,
     lambda: [np.array([65535.0]), _rng(3).integers(-65535, 65535, (32, 32)).astype(np.float64)], (0,),
     lambda r, v: [np.array([min(65535.0, v.min())])])
case("atomic inc wraps (shared, 2-D)", NUMBA_TESTS + "cudapy/test_atomics.py::test_atomic_inc2_32",
     atomic_inc_shared_2d, 1, (4, 8), lambda: [_rng(7).integers(0, 32, (4, 8)).astype(np.uint32), np.uint32(17)], (0,),
     _inc)
case("atomic dec wraps (shared, 2-D)", NUMBA_TESTS + "cudapy/test_atomics.py::test_atomic_dec2_32",
     atomic_dec_shared_2d, 1, (4, 8), lambda: [_rng(8).integers(0, 32, (4, 8)).astype(np.uint32), np.uint32(17)], (0,),
     _dec)
case("atomic compare-and-swap", NUMBA_TESTS + "cudapy/test_atomics.py::atomic_cas_1dim", atomic_cas_1dim, 1, 32,
     _cas_args, (0, 1), lambda res, old, ary, fill: [np.where(res == fill, ary, res), res])
for _which, _op in enumerate(("and", "or", "xor")):
    case(f"atomic {_op} (global, 2-D)", NUMBA_TESTS + f"cudapy/test_atomics.py::atomic_{_op}_global_2",
         atomic_bits_global_2d, 1, (4, 8),
         (lambda w=_which: [_rng(9 + w).integers(0, 32, (4, 8)).astype(np.uint32), np.uint32(23), w]), (0,),
         (lambda a, op2, w, f=(np.bitwise_and, np.bitwise_or, np.bitwise_xor)[_which]: [f(a, op2)]))
case("atomic sub (float32 bins)", NUMBA_TESTS + "cudapy/test_atomics.py::atomic_sub_float", atomic_sub_float, 1, 32,
     lambda: [_rng(12).integers(0, 32, 32).astype(np.float32)], (0,),
     lambda a: [-np.bincount(a.astype(int) % 32, minlength=32).astype(np.float32)])
case("atomic exch", NUMBA_TESTS + "cudapy/test_atomics.py::atomic_exch_global", atomic_exch_global, 1, 32,
     lambda: [np.arange(32, dtype=np.uint32), _rng(13).integers(0, 32, 32).astype(np.uint32), np.uint32(77)], (1,),
     lambda idx, ary, v: [np.full(32, 77)])


@cuda.jit
def local_copy(A, B):  # test_localmem.py culocal
    C = cuda.local.array(1000, dtype=numba.int32)
    for i in range(C.shape[0]):
        C[i] = A[i]
    for i in range(C.shape[0]):
        B[i] = C[i]


CONST1D = np.arange(10, dtype=np.float64) / 2.0


@cuda.jit
def const_1d(A):  # test_constmem.py cuconst
    C = cuda.const.array_like(CONST1D)
    i = cuda.grid(1)
    A[i] = C[i] + 1.0


@cuda.jit(device=True)
def add2f(a, b):  # test_device_func.py test_indirect_add2f
    return a + b


@cuda.jit(device=True)
def indirect(a, b):
    return add2f(a, b)


@cuda.jit
def device_indirect(ary):
    i = cuda.grid(1)
    if i < ary.size:
        ary[i] = indirect(ary[i], ary[i])


@cuda.jit(device=True)
def copy_row(inp, out):  # test_slicing.py foo: a device function taking slices
    for i in range(out.shape[0]):
        out[i] = inp[i]


@cuda.jit
def slice_rows(inp, out):  # test_slicing.py copy
    i = cuda.grid(1)
    copy_row(inp[i, :], out[i, :])


@cuda.jit
def dynshared_slices(x):  # test_sm.py test_dynshared_slice_overlap
    dynsmem = cuda.shared.array(0, dtype=numba.int32)
    sm1 = dynsmem[0:2]
    sm2 = dynsmem[1:4]
    dynsmem[0] = 1
    dynsmem[1] = 2
    dynsmem[2] = 3
    dynsmem[3] = 4
    x[0] = sm1[0]
    x[1] = sm1[1]
    x[2] = sm2[0]
    x[3] = sm2[1]
    x[4] = sm2[2]


@numba.njit
def business_logic(x, y, z):  # doc_examples/test_cpu_gpu_compat.py: a CPU-jitted function, called in a kernel
    return 4 * z * (2 * x - (4 * y) / 2 * math.pi)


@cuda.jit
def cpu_gpu_compat(res, xarr, yarr, zarr):
    tid = cuda.grid(1)
    if tid < len(xarr):
        res[tid] = business_logic(xarr[tid], yarr[tid], zarr[tid])


@cuda.jit
def sequential_rows(M):  # test_cooperative_groups.py / doc_examples/test_cg.py
    col = cuda.grid(1)
    g = cuda.cg.this_grid()
    rows = M.shape[0]
    cols = M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        M[row, col] = M[row - 1, opposite] + 1
        g.sync()


case("local array copy", NUMBA_TESTS + "cudapy/test_localmem.py::culocal", local_copy, 1, 1,
     lambda: [np.arange(1000, dtype=np.int32), np.zeros(1000, np.int32)], (1,), lambda a, b: [a])
case("constant memory", NUMBA_TESTS + "cudapy/test_constmem.py::cuconst", const_1d, 1, 10,
     lambda: [np.zeros(10)], (0,), lambda a: [CONST1D + 1.0])
case("device function calling a device function", NUMBA_TESTS + "cudapy/test_device_func.py::test_indirect_add2f",
     device_indirect, 1, 16, lambda: [np.arange(10, dtype=np.float32)], (0,), lambda a: [a * 2])
case("rows passed to a device function", NUMBA_TESTS + "cudapy/test_slicing.py::test_slice_as_arg", slice_rows, 1,
     10, lambda: [np.arange(100, dtype=np.int32).reshape(10, 10), np.zeros((10, 10), np.int32)], (1,),
     lambda inp, out: [inp])
case("overlapping slices of dynamic shared memory", NUMBA_TESTS + "cudapy/test_sm.py::test_dynshared_slice_overlap",
     dynshared_slices, 1, 1, lambda: [np.zeros(5, np.int32)], (0,), lambda x: [np.array([1, 2, 2, 3, 4])],
     sharedmem=5 * 4)
case("a CPU-jitted function in a kernel", NUMBA_TESTS + "doc_examples/test_cpu_gpu_compat.py", cpu_gpu_compat, 1, 16,
     lambda: [np.zeros(10)] + [_rng(14 + k).random(10) for k in range(3)], (0,),
     lambda r, x, y, z: [business_logic.py_func(x, y, z)])
case("grid sync, one block", NUMBA_TESTS + "cudapy/test_cooperative_groups.py::sequential_rows", sequential_rows, 1,
     32, lambda: [np.zeros((12, 32), np.int32)], (0,), lambda m: [np.tile(np.arange(12), (32, 1)).T])
case("grid sync across blocks", NUMBA_TESTS + "doc_examples/test_cg.py::test_ex_grid_sync", sequential_rows, 3, 32,
     lambda: [np.zeros((12, 96), np.int32)], (0,), lambda m: [np.tile(np.arange(12), (96, 1)).T],
     sim=False)  # numba's simulator syncs a grid of one block only


# == numba-cuda: documentation examples (tests/doc_examples) ========================================================

@cuda.jit
def vecadd(a, b, c):  # doc_examples/test_vecadd.py
    tid = cuda.grid(1)
    size = len(c)
    if tid < size:
        c[tid] = a[tid] + b[tid]


@cuda.jit
def matmul_naive(A, B, C):  # doc_examples/test_matmul.py matmul
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        C[i, j] = tmp


DOC_TPB = 16


@cuda.jit
def matmul_fast(A, B, C):  # doc_examples/test_matmul.py fast_matmul (shared-memory tiles, zero-padded)
    sA = cuda.shared.array(shape=(DOC_TPB, DOC_TPB), dtype=numba.float32)
    sB = cuda.shared.array(shape=(DOC_TPB, DOC_TPB), dtype=numba.float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = numba.float32(0.0)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * DOC_TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * DOC_TPB]
        if x < B.shape[1] and (ty + i * DOC_TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * DOC_TPB, x]
        cuda.syncthreads()
        for j in range(DOC_TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


REDUCE_N = 256


@cuda.jit
def array_sum(data):  # doc_examples/test_reduction.py (the interleaved tree, syncthreads in a uniform branch)
    tid = cuda.threadIdx.x
    size = len(data)
    if tid < size:
        i = cuda.grid(1)
        shr = cuda.shared.array(REDUCE_N, numba.int32)
        shr[tid] = data[i]
        cuda.syncthreads()
        s = 1
        while s < cuda.blockDim.x:
            if tid % (2 * s) == 0:
                shr[tid] += shr[tid + s]
            s *= 2
            cuda.syncthreads()
        if tid == 0:
            data[tid] = shr[tid]


@cuda.jit
def solve_heat_equation(buf_0, buf_1, timesteps, k):  # doc_examples/test_laplace.py (early return, grid sync)
    i = cuda.grid(1)
    if i >= len(buf_0):
        return
    grid = cuda.cg.this_grid()
    for step in range(timesteps):
        if (step % 2) == 0:
            data = buf_0
            next_data = buf_1
        else:
            data = buf_1
            next_data = buf_0
        curr_temp = data[i]
        if i == 0:
            next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
        elif i == len(data) - 1:
            next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
        else:
            next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp) + data[i + 1])
        next_data[i] = next_temp
        grid.sync()


def _heat(buf_0, buf_1, steps, k):
    a = buf_0.astype(np.float64).copy()
    b = np.zeros_like(a)
    for step in range(steps):
        src, dst = (a, b) if step % 2 == 0 else (b, a)
        p = np.pad(src, 1)
        dst[:] = src + k * (p[:-2] - 2 * src + p[2:])
    return [a, b]


PRICES = np.array([10.0, 25.0, 5.0, 15.0, 30.0])
TAX_RATE = 0.08


@cuda.jit
def compute_totals(quantities, totals):  # doc_examples/test_globals.py: globals are frozen at compile time
    i = cuda.grid(1)
    if i < totals.size:
        totals[i] = quantities[i] * PRICES[i] * (1 + TAX_RATE)


class _GlobalsTwice:
    """Launch, change the globals, launch again: numba-cuda still sees the values of the first compilation."""

    def __getitem__(self, config):
        def go(quantities, totals):
            global TAX_RATE
            compute_totals[config[0], config[1]](quantities, totals)
            saved = TAX_RATE, PRICES.copy()
            TAX_RATE = 0.10
            PRICES[:] = [20.0, 50.0, 10.0, 30.0, 60.0]
            try:
                compute_totals[config[0], config[1]](quantities, totals)
            finally:
                TAX_RATE = saved[0]
                PRICES[:] = saved[1]
        return go


def _heat_args():
    data = np.zeros(101)
    data[50] = 10000.0
    return [data, np.zeros(101), 20, 0.25]


case("vector add", NUMBA_TESTS + "doc_examples/test_vecadd.py", vecadd, 2, 64,
     lambda: [_rng(15).random(100), _rng(16).random(100), np.zeros(100)], (2,), lambda a, b, c: [a + b])
case("naive matmul", NUMBA_TESTS + "doc_examples/test_matmul.py::matmul", matmul_naive, (1, 1), (16, 16),
     lambda: [np.arange(16.0).reshape(4, 4), np.ones((4, 4)), np.zeros((4, 4))], (2,), lambda a, b, c: [a @ b])
case("shared-memory matmul", NUMBA_TESTS + "doc_examples/test_matmul.py::fast_matmul", matmul_fast, (2, 2),
     (DOC_TPB, DOC_TPB), lambda: [_rng(17).random((23, 23)), _rng(18).random((23, 23)), np.zeros((23, 23))], (2,),
     lambda a, b, c: [a @ b])
case("shared-memory reduction", NUMBA_TESTS + "doc_examples/test_reduction.py::array_sum", array_sum, 1, REDUCE_N,
     lambda: [np.arange(REDUCE_N)], (0,), lambda d: [np.r_[d.sum(), d[1:]]])
case("heat equation with grid sync", NUMBA_TESTS + "doc_examples/test_laplace.py", solve_heat_equation, 1, 128,
     _heat_args, (0, 1), lambda a, b, n, k: _heat(a, b, n, k))
case("heat equation across blocks", NUMBA_TESTS + "doc_examples/test_laplace.py (solve_heat_equation.forall)",
     solve_heat_equation, 4, 32, _heat_args, (0, 1), lambda a, b, n, k: _heat(a, b, n, k), sim=False)
case("globals frozen at compile time", NUMBA_TESTS + "doc_examples/test_globals.py::test_ex_globals_constant_capture",
     _GlobalsTwice(), 1, 32, lambda: [np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.zeros(5)], (1,),
     lambda q, t: [np.array([10.8, 54.0, 16.2, 64.8, 162.0])], sim=False)  # the simulator reads globals live


# == warp intrinsics: numba-cuda's tests/cudapy/test_warp_ops.py (no simulator support) ===========================

@cuda.jit
def warp_shfl_down(ary, delta):  # use_shfl_sync_down
    i = cuda.grid(1)
    ary[i] = cuda.shfl_down_sync(0xFFFFFFFF, i, delta)


@cuda.jit
def warp_vote_all(ary_in, ary_out):  # use_vote_sync_all
    i = cuda.grid(1)
    ary_out[i] = cuda.all_sync(0xFFFFFFFF, ary_in[i])


@cuda.jit
def warp_ballot(ary):  # use_vote_sync_ballot
    i = cuda.threadIdx.x
    ary[i] = cuda.ballot_sync(0xFFFFFFFF, True)


case("shfl_down_sync", NUMBA_TESTS + "cudapy/test_warp_ops.py::test_shfl_sync_down", warp_shfl_down, 1, 32,
     lambda: [np.zeros(32, np.int32), 4], (0,), lambda a, d: [np.r_[np.arange(4, 32), np.arange(28, 32)]], sim=False)
case("all_sync", NUMBA_TESTS + "cudapy/test_warp_ops.py::test_vote_sync_all", warp_vote_all, 1, 32,
     lambda: [np.r_[np.ones(31, np.int32), 0].astype(np.int32), np.zeros(32, np.int32)], (1,),
     lambda i, o: [np.zeros(32)], sim=False)
case("ballot_sync", NUMBA_TESTS + "cudapy/test_warp_ops.py::test_vote_sync_ballot", warp_ballot, 1, 32,
     lambda: [np.zeros(32, np.uint32)], (0,), lambda a: [np.full(32, 0xFFFFFFFF)], sim=False)
