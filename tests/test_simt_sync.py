"""Barriers, grid synchronisation, fences and atomics on the executor: CUDA's semantics, and what
compute-sanitizer's synccheck/racecheck would say (barrier divergence, races), with no false reports on valid
kernels. Kernels marked with a numba-cuda test name follow that test (written anew)."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import simt

cuda = simt.cuda


@cuda.jit(device=True)
def block_total(s, tid, n):
    """A device function with barriers inside (CUDA allows it): tree-sum s[0:n] into s[0]."""
    stride = n // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    return s[0]


@cuda.jit
def sum_via_device_function(x, out):
    s = cuda.shared.array(64, np.float64)
    tid = cuda.threadIdx.x
    s[tid] = x[cuda.grid(1)]
    cuda.syncthreads()
    total = block_total(s, tid, 64)
    if tid == 0:
        out[cuda.blockIdx.x] = total


def test_barriers_inside_device_functions():
    x = np.arange(128, dtype=np.float64)
    out = np.zeros(2)
    r = simt.run(sum_via_device_function, 2, 64, x, out)
    np.testing.assert_array_equal(out, [x[:64].sum(), x[64:].sum()])
    assert r.ok, r.problems()


@cuda.jit
def counts(pred, out_count, out_and, out_or):  # test_sync.py: use_syncthreads_count/_and/_or
    i = cuda.grid(1)
    out_count[i] = cuda.syncthreads_count(pred[i])
    out_and[i] = cuda.syncthreads_and(pred[i])
    out_or[i] = cuda.syncthreads_or(pred[i])


@pytest.mark.parametrize("pred", [np.ones(72, np.int32), np.zeros(72, np.int32),
                                  (np.arange(72) % 3 == 0).astype(np.int32)])
def test_syncthreads_count_and_or(pred):
    outs = [np.zeros(72, np.int32) for _ in range(3)]
    simt.run(counts, 1, 72, pred, *outs)
    assert (outs[0] == pred.sum()).all()
    assert (outs[1] == int(pred.all())).all() and (outs[2] == int(pred.any())).all()


@cuda.jit
def divergent_barrier(x, out):
    """The issue's example: syncthreads() inside `if tid < stride:` — threads >= stride run past it."""
    s = cuda.shared.array(64, np.float64)
    tid = cuda.threadIdx.x
    s[tid] = x[tid]
    cuda.syncthreads()
    stride = 32
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
            cuda.syncthreads()
        stride //= 2
    if tid == 0:
        out[0] = s[0]


def test_a_barrier_only_part_of_the_block_reaches_is_reported():
    r = simt.run(divergent_barrier, 1, 64, np.arange(64.0), np.zeros(1))
    assert r.sync_errors and r.sync_errors[0].kind == "barrier divergence"
    msg = str(r.sync_errors[0])
    assert "threads 32–63 of block 0 went past the cuda.syncthreads()" in msg and "line" in msg
    assert not r.ok and "barrier divergence" in r.problems()[0]


@cuda.jit
def two_barriers(out):
    t = cuda.threadIdx.x
    if t % 2 == 0:
        cuda.syncthreads()
    else:
        cuda.syncthreads()
    out[t] = t


def test_threads_at_different_barrier_calls_are_reported():
    r = simt.run(two_barriers, 1, 8, np.zeros(8, np.int64))
    assert any("wait at different barriers" in s.message for s in r.sync_errors)
    msg = next(s.message for s in r.sync_errors if "different barriers" in s.message)
    assert "threads 0, 2, 4, 6 at line" in msg and " at at " not in msg  # each group named once, with its line


@cuda.jit
def early_return(x, out, n):
    s = cuda.shared.array(64, np.float64)
    i = cuda.threadIdx.x
    if i >= n:
        return  # the usual guard: since Volta a barrier waits for the threads that have not exited
    s[i] = x[i]
    cuda.syncthreads()
    out[i] = s[n - 1 - i]


def test_an_early_return_before_a_barrier_is_not_divergence():
    x = np.arange(64.0)
    out = np.zeros(64)
    r = simt.run(early_return, 1, 64, x, out, 50)
    np.testing.assert_array_equal(out[:50], x[:50][::-1])
    assert r.ok, r.problems()


@cuda.jit
def grid_stencil(a, b, steps):
    """A grid-wide Jacobi step with grid.sync() between steps (after numba-cuda's Laplace doc example)."""
    i = cuda.grid(1)
    if i >= a.size:
        return
    g = cuda.cg.this_grid()
    for step in range(steps):
        src, dst = (a, b) if step % 2 == 0 else (b, a)
        left = src[i - 1] if i > 0 else 0.0
        right = src[i + 1] if i < src.size - 1 else 0.0
        dst[i] = 0.5 * src[i] + 0.25 * (left + right)
        g.sync()


def _stencil_reference(a: np.ndarray, steps: int) -> np.ndarray:
    v = a.copy()
    for _ in range(steps):
        p = np.pad(v, 1)
        v = 0.5 * v + 0.25 * (p[:-2] + p[2:])
    return v


def test_grid_sync_orders_blocks_and_is_no_race():
    a = np.zeros(70)
    a[35] = 100.0
    b = np.zeros_like(a)
    r = simt.run(grid_stencil, 3, 32, a, b, 4)
    np.testing.assert_allclose(a, _stencil_reference(a * 0 + np.eye(1, 70, 35).ravel() * 100, 4))
    assert r.ok, r.problems()


@cuda.jit
def grid_no_sync(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i]
        a[i] = b[(i + 40) % a.size]  # another block's element, written in the same grid phase


def test_without_grid_sync_blocks_race():
    r = simt.run(grid_no_sync, 3, 32, np.arange(70.0), np.zeros(70))
    cross = [race for race in r.races if not race.same_block]
    assert r.race_count > 0 and cross and "different blocks" in str(cross[0])


@cuda.jit
def last_block_sum(x, partial, count, out):
    """threadfence + atomic.inc: the last block to finish sums every block's partial (the CUDA samples'
    threadFenceReduction pattern). The fence orders each block's write before its ticket."""
    i = cuda.grid(1)
    s = cuda.shared.array(32, np.float64)
    is_last = cuda.shared.array(1, np.int32)
    tid = cuda.threadIdx.x
    s[tid] = x[i]
    cuda.syncthreads()
    if tid == 0:
        acc = 0.0
        for k in range(32):
            acc += s[k]
        partial[cuda.blockIdx.x] = acc
        cuda.threadfence()
        ticket = cuda.atomic.inc(count, 0, cuda.gridDim.x)
        is_last[0] = ticket == cuda.gridDim.x - 1
    cuda.syncthreads()
    if is_last[0] and tid == 0:
        total = 0.0
        for b in range(cuda.gridDim.x):
            total += partial[b]
        out[0] = total


def test_fence_and_atomic_hand_off_is_not_a_race():
    x = np.arange(128, dtype=np.float64)
    partial, count, out = np.zeros(4), np.zeros(1, np.uint32), np.zeros(1)
    r = simt.run(last_block_sum, 4, 32, x, partial, count, out)
    assert out[0] == x.sum() and r.ok, r.problems()


@cuda.jit
def last_block_sum_unfenced(x, partial, count, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        partial[cuda.blockIdx.x] = x[i]
        ticket = cuda.atomic.inc(count, 0, cuda.gridDim.x)
        if ticket == cuda.gridDim.x - 1:
            total = 0.0
            for b in range(cuda.gridDim.x):
                total += partial[b]
            out[0] = total


def test_the_same_hand_off_without_the_fence_is_a_race():
    r = simt.run(last_block_sum_unfenced, 4, 32, np.arange(128.0), np.zeros(4), np.zeros(1, np.uint32), np.zeros(1))
    assert r.race_count > 0 and r.races[0].array == "partial"


# -- atomics: numba-cuda's reference semantics (kernel.rst "Synchronization and Atomic Operations") --------------

@cuda.jit
def atomics_1d(ary, vals, op):
    i = cuda.grid(1)
    v = vals[i]
    if op == 0:
        cuda.atomic.add(ary, 0, v)
    elif op == 1:
        cuda.atomic.sub(ary, 0, v)
    elif op == 2:
        cuda.atomic.max(ary, 0, v)
    elif op == 3:
        cuda.atomic.min(ary, 0, v)
    elif op == 4:
        cuda.atomic.and_(ary, 0, v)
    elif op == 5:
        cuda.atomic.or_(ary, 0, v)
    elif op == 6:
        cuda.atomic.xor(ary, 0, v)


@pytest.mark.parametrize("op, fold, start", [
    (0, lambda a, v: a + v.sum(), 5), (1, lambda a, v: a - v.sum(), 5), (2, lambda a, v: max(a, v.max()), 5),
    (3, lambda a, v: min(a, v.min()), 5), (4, lambda a, v: a & np.bitwise_and.reduce(v), 0xFFFF),
    (5, lambda a, v: a | np.bitwise_or.reduce(v), 0), (6, lambda a, v: a ^ np.bitwise_xor.reduce(v), 0)])
def test_every_integer_atomic(op, fold, start):
    vals = np.random.default_rng(op).integers(0, 1000, 64).astype(np.int32)
    ary = np.array([start], np.int32)
    r = simt.run(atomics_1d, 2, 32, ary, vals, op)
    assert ary[0] == fold(np.int32(start), vals) and r.atomics == 64 and r.race_count == 0


@cuda.jit
def atomic_wraps(ary):
    cuda.atomic.add(ary, 0, 1)


def test_integer_atomics_wrap_like_the_hardware():
    ary = np.array([2**31 - 1], np.int32)
    simt.run(atomic_wraps, 1, 2, ary)
    assert ary[0] == -(2**31) + 1


@cuda.jit
def inc_dec(ary, limit, op):  # test_atomics.py: atomic_inc32 / atomic_dec32, one element per thread
    i = cuda.grid(1)
    if op == 0:
        cuda.atomic.inc(ary, i, limit)
    else:
        cuda.atomic.dec(ary, i, limit)


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_inc_and_dec_wrap_at_the_limit(dtype):
    orig = np.random.default_rng(1).integers(0, 32, 32).astype(dtype)
    limit = dtype(17)
    ary = orig.copy()
    simt.run(inc_dec, 1, 32, ary, limit, 0)
    np.testing.assert_array_equal(ary, np.where(orig >= limit, 0, orig + 1))  # check_inc
    ary = orig.copy()
    simt.run(inc_dec, 1, 32, ary, limit, 1)
    np.testing.assert_array_equal(ary, np.where(orig == 0, limit, np.where(orig > limit, limit, orig - 1)))


@cuda.jit
def cas_exch(ary, old, new, out_cas, out_exch, ex):
    i = cuda.grid(1)
    out_cas[i] = cuda.atomic.cas(ary, i, old[i], new[i])
    out_exch[i] = cuda.atomic.exch(ex, i, new[i])


def test_cas_and_exch_return_the_old_value():
    ary = np.array([1, 2, 3, 4], np.int32)
    old = np.array([1, 0, 3, 0], np.int32)
    new = np.array([9, 9, 9, 9], np.int32)
    out_cas, out_exch, ex = np.zeros(4, np.int32), np.zeros(4, np.int32), np.arange(4, dtype=np.int32)
    simt.run(cas_exch, 1, 4, ary, old, new, out_cas, out_exch, ex)
    np.testing.assert_array_equal(ary, [9, 2, 9, 4])  # swapped only where ary[i] == old[i]
    np.testing.assert_array_equal(out_cas, [1, 2, 3, 4])
    np.testing.assert_array_equal(out_exch, [0, 1, 2, 3])
    np.testing.assert_array_equal(ex, 9)


@cuda.jit
def minmax_nan(res, vals, op):
    i = cuda.grid(1)
    if op == 0:
        cuda.atomic.max(res, 0, vals[i])
    elif op == 1:
        cuda.atomic.min(res, 0, vals[i])
    elif op == 2:
        cuda.atomic.nanmax(res, 0, vals[i])
    else:
        cuda.atomic.nanmin(res, 0, vals[i])


def test_max_min_keep_the_stored_value_when_either_is_nan():
    # test_atomics.py _test_atomic_minmax_nan_location / _nan_val: NaN on either side leaves ary[idx]
    for op in (0, 1):
        res = np.array([np.nan])
        simt.run(minmax_nan, 1, 1, res, np.array([3.0]), op)
        assert np.isnan(res[0])
        res = np.array([5.0])
        simt.run(minmax_nan, 1, 1, res, np.array([np.nan]), op)
        assert res[0] == 5.0
    # nanmax/nanmin treat NaN as missing
    res = np.array([np.nan])
    simt.run(minmax_nan, 1, 1, res, np.array([3.0]), 2)
    assert res[0] == 3.0
    res = np.array([5.0])
    simt.run(minmax_nan, 1, 1, res, np.array([np.nan]), 3)
    assert res[0] == 5.0


@cuda.jit
def histogram(x, bins):
    """Shared-memory histogram with atomics, then one atomic add per bin to global (no races)."""
    h = cuda.shared.array(8, np.int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(h, x[i] % 8, 1)
    cuda.syncthreads()
    if t < 8:
        cuda.atomic.add(bins, t, h[t])


@cuda.jit
def histogram_unsynced(x, bins):
    h = cuda.shared.array(8, np.int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    cuda.atomic.add(h, x[cuda.grid(1)] % 8, 1)
    if t < 8:
        bins[t] += h[t]  # reads the shared bins while other threads still add to them


def test_atomics_do_not_race_but_reading_them_unsynchronised_does():
    x = np.random.default_rng(3).integers(0, 100, 100).astype(np.int32)
    bins = np.zeros(8, np.int32)
    r = simt.run(histogram, 4, 32, x, bins)
    np.testing.assert_array_equal(bins, np.bincount(x % 8, minlength=8))
    assert r.ok, r.problems()
    r = simt.run(histogram_unsynced, 1, 64, x[:64].copy(), np.zeros(8, np.int32))
    assert any(race.kind in ("read-after-atomic", "atomic-after-read") for race in r.races)


@cuda.jit
def fences(ary):  # test_sync.py use_threadfence*: a fence is no barrier, single-thread results unchanged
    ary[0] += 123
    cuda.threadfence()
    ary[0] += 321
    cuda.threadfence_block()
    ary[1] += 1
    cuda.threadfence_system()


def test_threadfences():
    ary = np.zeros(2, np.int32)
    simt.run(fences, 1, 1, ary)
    np.testing.assert_array_equal(ary, [444, 1])


@cuda.jit
def flag_any(x, flag):
    """Many threads store 1 into one flag: a race only in name (racecheck calls it a warning)."""
    i = cuda.grid(1)
    if x[i] > 0:
        flag[0] = 1


def test_writes_of_the_value_already_there_are_benign():
    x = np.ones(64, np.int32)
    flag = np.zeros(1, np.int32)
    r = simt.run(flag_any, 2, 32, x, flag)
    assert flag[0] == 1 and r.race_count == 0 and r.benign_races == 63


@cuda.jit
def dot_tree_without_its_barrier(a, out, n):
    """The dot-product tree with the barrier inside the loop dropped (GPU-Puzzles' classic mistake)."""
    t = cuda.threadIdx.x
    s = cuda.shared.array(64, np.float32)
    s[t] = a[t] if t < n else np.float32(0)
    cuda.syncthreads()
    stride = 32
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        stride //= 2
    if t == 0:
        out[0] = s[0]


def test_a_write_of_the_same_value_does_not_hide_a_later_race():
    """Read r19 F4: past n the tree's first writes add 0 (the value already there); they must not erase the reads
    they follow, or the value-changing write after them is never compared with thread 0's early read."""
    a = np.arange(20, dtype=np.float32)
    out = np.zeros(1, np.float32)
    r = simt.run(dot_tree_without_its_barrier, 1, 64, a, out, 20)
    assert r.race_count > 0 and any(x.kind == "write-after-read" for x in r.races), (r.race_count, r.benign_races)
