"""The instrumented SIMT executor: counts, SIMT efficiency, races, coalescing, the launch tree.

Agreement with numba's CUDA simulator on kernels no one here wrote is tests/test_simt_corpus.py."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import simt

be = gc.get_backend()
gc.quiet_warnings()
cuda = simt.cuda  # the executor's numba-cuda API (the CPU backend's be.cuda)
TILE = 4


@cuda.jit
def add_one(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + 1


@cuda.jit
def add_one_unguarded(a, out):
    i = cuda.grid(1)
    out[i] = a[i] + 1


@cuda.jit
def diverge(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if i % 2 == 0:
            v = v * 2
            v = v + 1
            v = v * v
        else:
            v = v - 3
            v = v * 5
            v = v - v * v
        out[i] = v


@cuda.jit
def ragged_loop(out):
    i = cuda.grid(1)
    acc = 0
    for k in range(i % 4):
        acc += k
    out[i] = acc


@cuda.jit
def tiled(A, B, C, sync):
    sA = cuda.shared.array((TILE, TILE), np.float32)
    sB = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    acc = 0.0
    for t in range((A.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sA[ty, tx] = A[row, k + tx] if row < A.shape[0] and k + tx < A.shape[1] else 0.0
        sB[ty, tx] = B[k + ty, col] if k + ty < B.shape[0] and col < B.shape[1] else 0.0
        if sync:
            cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        if sync:
            cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


@cuda.jit
def copy2d(a, out, transpose_threads):
    x, y = cuda.grid(2)
    r, c = (x, y) if transpose_threads else (y, x)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c]


@cuda.jit
def everyone_writes_zero(out):
    out[0] = cuda.grid(1)


@cuda.jit
def count_atomically(out):
    cuda.atomic.add(out, 0, 1)


def test_map_counts_and_efficiency():
    a = np.arange(70, dtype=np.float32)
    out = np.zeros_like(a)
    r = simt.run(add_one, 3, 32, a, out)
    np.testing.assert_array_equal(out, a + 1)
    assert r.n_threads == 96 and len(r.warps) == 3
    assert r.total("global", "r") == 70 and r.total("global", "w") == 70
    assert r.per_thread("global")["max_reads"] == 1 and r.per_thread("shared")["reads"] == 0
    # 3 steps per warp (index, guard, body); the last warp has 6 of 32 lanes in range
    assert r.issued_steps == 9
    assert r.simt_efficiency == pytest.approx((96 + 96 + 70) / (9 * 32))
    assert r.races == [] and r.race_count == 0
    assert r.sectors_per_request("a") == pytest.approx((4 + 4 + 1) / 3)  # float32: 32 lanes = 128 B = 4 sectors


def test_missing_guard_is_an_error_on_every_backend():
    a = np.arange(40, dtype=np.float32)
    with pytest.raises(simt.KernelError, match="out of bounds"):
        simt.run(add_one_unguarded, 2, 32, a, np.zeros_like(a))


def test_divergent_branches_run_one_after_the_other():
    x = np.arange(64, dtype=np.float64)
    out = np.zeros_like(x)
    r = simt.run(diverge, 2, 32, x, out)
    even = (x * 2 + 1) ** 2
    odd = (x - 3) * 5
    odd = odd - odd * odd
    np.testing.assert_allclose(out, np.where(np.arange(64) % 2 == 0, even, odd))
    assert all(w.steps == 11 for w in r.warps)  # 4 common + 3 if-path + 3 else-path + 1 store
    assert r.simt_efficiency == pytest.approx((5 * 32 + 6 * 16) / (11 * 32))


def test_loop_iterations_reconverge():
    out = np.zeros(32, dtype=np.int64)
    r = simt.run(ragged_loop, 1, 32, out)
    np.testing.assert_array_equal(out, [sum(range(i % 4)) for i in range(32)])
    # trip counts 0..3: header checks 32+24+16+8 lanes, bodies 24+16+8, plus 3 common lines of 32
    (w,) = r.warps
    assert w.steps == 3 + 4 + 3
    assert w.active == 3 * 32 + 80 + 48


def test_tiled_matmul_races_without_syncthreads():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((9, 7)).astype(np.float32)
    B = rng.standard_normal((7, 10)).astype(np.float32)
    C = np.zeros((9, 10), np.float32)
    r = simt.run(tiled, (3, 3), (TILE, TILE), A, B, C, 1)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    assert r.race_count == 0
    assert r.per_thread("shared")["writes"] == 2 * 2  # two tiles of A and B per thread
    counts = []
    for _ in range(2):
        C = np.zeros((9, 10), np.float32)
        bad = simt.run(tiled, (3, 3), (TILE, TILE), A, B, C, 0)
        counts.append(bad.race_count)
        assert bad.races and bad.races[0].space == "shared"
        assert not np.allclose(C, A @ B, atol=1e-3)  # deterministic: always wrong, never by luck right
    assert counts[0] == counts[1] > 0


def test_global_races_and_atomics():
    out = np.zeros(1, dtype=np.int64)
    r = simt.run(everyone_writes_zero, 2, 32, out)
    assert r.race_count == 63 and r.races[0].kind == "write-after-write"
    out = np.zeros(1, dtype=np.int64)
    r = simt.run(count_atomically, 3, 32, out)
    assert out[0] == 96 and r.race_count == 0 and r.atomics == 96


def test_coalescing_seen_in_sectors():
    a = np.arange(32 * 20, dtype=np.float32).reshape(32, 20)
    out = np.zeros_like(a)
    good = simt.run(copy2d, (1, 1), (32, 32), a, out, 0)
    np.testing.assert_array_equal(out, a)
    out[:] = 0
    bad = simt.run(copy2d, (1, 1), (32, 32), a, out, 1)
    np.testing.assert_array_equal(out, a)
    assert good.sectors_per_request("a") < 4 and bad.sectors_per_request("a") >= 20
    m = good.access_map("out", "w", by="warp")
    assert m.shape == a.shape and m[0, 0] == 0 and m[1, 0] == 1


def test_launch_tree_names_every_level():
    a = np.arange(70, dtype=np.float32)
    r = simt.run(add_one, 3, 64, a, np.zeros_like(a))
    tree = simt.launch_tree(r, {0: 0, 1: 1, 2: 2}, kernel="A", stream="Stream 1")
    for part in ("Kernel A", "Grid A", "Block 0 (SM 0)", "Warp 0-0", "Warp 0-1", "Thread 0", "Block 2 (SM 2)"):
        assert part in tree


def test_the_cpu_backend_runs_kernels_on_the_executor():
    if be.is_gpu:
        pytest.skip("on a GPU be.cuda is numba-cuda")
    assert be.cuda is simt.cuda
    a = np.arange(40, dtype=np.float32)
    out = np.zeros_like(a)
    add_one[2, 32](a, out)
    np.testing.assert_array_equal(out, a + 1)
    assert add_one.last_report.total("global", "w") == 40


@pytest.mark.gpu
def test_device_arrays_are_copied_through():
    a = be.to_device(np.arange(50, dtype=np.float32))
    out = be.to_device(np.zeros(50, np.float32))
    r = simt.run(add_one, 2, 32, a, out)
    np.testing.assert_array_equal(be.to_host(out), np.arange(50) + 1)
    assert r.total("global", "w") == 50
