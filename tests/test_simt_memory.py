"""Memory as a kernel sees it on the executor: slices and views, negative indices, bounds, shared (static and
dynamic), local and constant arrays, numba scalar types as dtypes, and uninitialised memory (poisoned, tracked,
reported when used)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from gpucourse import simt

cuda = simt.cuda


@cuda.jit(device=True)
def row_sum(row):
    acc = 0.0
    for k in range(row.shape[0]):
        acc += row[k]
    return acc


@cuda.jit
def sum_rows(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = row_sum(a[i, :])  # a row, passed to a device function (numba-cuda allows slices)


@cuda.jit
def window(a, out):
    i = cuda.grid(1)
    if i == 0:
        part = a[2:5]
        for k in range(part.size):
            out[k] = part[k]
        col = a[1:, 0] if a.ndim == 2 else a[1:]
        out[3] = col[0]


@cuda.jit
def transpose_view(a, out):
    r, c = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a.T[r, c]


def test_slices_rows_and_views():
    a = np.arange(20, dtype=np.float64).reshape(4, 5)
    out = np.zeros(4)
    r = simt.run(sum_rows, 1, 8, a, out)
    np.testing.assert_array_equal(out, a.sum(axis=1))
    assert r.total("global", "r") == 20 and r.ok  # every element read once, through the row views
    v = np.arange(10.0)
    out = np.zeros(4)
    simt.run(window, 1, 1, v, out)
    np.testing.assert_array_equal(out, [2, 3, 4, 1])
    out = np.zeros((5, 4))
    simt.run(transpose_view, (1, 1), (8, 8), a, out)
    np.testing.assert_array_equal(out, a.T)


@cuda.jit
def slice_fill(a, b):
    if cuda.grid(1) == 0:
        a[2:6] = 7.0  # a scalar into a slice: numba-cuda compiles it (tests/simt_corpus/typing_cases.py)
        for i in range(b.size):
            b[i] = a[2 * i]


@cuda.jit
def slice_copy(a, b):
    if cuda.grid(1) == 0:
        b[:] = a[::2]  # an array into a slice: numba-cuda refuses it (r18's compile_ptx corpus)


def test_slice_assignment_element_by_element():
    a, b = np.zeros(10), np.zeros(5)
    r = simt.run(slice_fill, 1, 1, a, b)
    np.testing.assert_array_equal(a, [0, 0, 7, 7, 7, 7, 0, 0, 0, 0])
    np.testing.assert_array_equal(b, [0, 7, 7, 0, 0])
    assert r.total("global", "w") == 4 + 5
    with pytest.raises(simt.NotModelled, match="assigning to a slice"):
        simt.run(slice_copy, 1, 1, a, b)


@cuda.jit
def racy_through_views(a):
    i = cuda.grid(1)
    if i < 2:
        row = a[0, :]  # both threads write a[0, 0] through their own view
        row[0] = i + 1


def test_a_race_through_a_view_is_found_on_the_array():
    r = simt.run(racy_through_views, 1, 2, np.zeros((2, 3)))
    assert r.race_count == 1 and r.races[0].array == "a" and r.races[0].index == (0, 0)


@cuda.jit
def last_element(a, out):
    if cuda.grid(1) == 0:
        out[0] = a[-1]
        out[1] = a[-a.size]


def test_negative_indices_wrap_like_numba_cuda_with_a_warning():
    a = np.arange(5.0)
    out = np.zeros(2)
    r = simt.run(last_element, 1, 1, a, out)
    np.testing.assert_array_equal(out, [4.0, 0.0])
    assert r.ok and len(r.warnings) >= 1 and "wraps around like Python's" in r.warnings[0]


@cuda.jit
def too_far(a, out):
    if cuda.grid(1) == 0:
        out[0] = a[-a.size - 1]


def test_past_the_end_after_wrapping_is_an_error():
    with pytest.raises(simt.KernelError, match=r"out of bounds .*missing guard"):
        simt.run(too_far, 1, 1, np.arange(5.0), np.zeros(1))


@cuda.jit
def float_index(a, out):
    out[0] = a[1.0]


def test_a_float_index_is_refused_with_numba_cudas_reason():
    with pytest.raises(simt.KernelError, match="array indices must be integers"):
        simt.run(float_index, 1, 1, np.arange(3.0), np.zeros(1))


@cuda.jit
def dyn_shared(out):  # test_sync.py dyn_shared_memory: cuda.shared.array(0, ...) is the launch's dynamic memory
    i = cuda.grid(1)
    sm = cuda.shared.array(0, numba.float32)
    sm[i] = i * 2
    cuda.syncthreads()
    out[i] = sm[i]


@cuda.jit
def dyn_alias(out):
    """Every dynamic shared array aliases the same bytes (numba-cuda's docs): write as int32, read as int32."""
    i = cuda.threadIdx.x
    a = cuda.shared.array(0, numba.int32)
    b = cuda.shared.array(0, numba.int32)
    a[i] = i + 100
    cuda.syncthreads()
    out[i] = b[(i + 1) % cuda.blockDim.x]


def test_dynamic_shared_memory():
    out = np.zeros(32, np.float32)
    simt.cuda.jit(dyn_shared.py_func)[1, 32, 0, 128](out)
    np.testing.assert_array_equal(out, np.arange(32) * 2)
    out = np.zeros(16, np.int32)
    r = simt.run(dyn_alias, 1, 16, out, sharedmem=64)
    np.testing.assert_array_equal(out, np.roll(np.arange(16) + 100, -1))
    assert r.dynamic_shared_bytes == 64 and r.ok


def test_dynamic_shared_memory_needs_a_size():
    with pytest.raises(simt.KernelError, match="dynamic shared memory, but the launch gave none"):
        simt.run(dyn_shared, 1, 32, np.zeros(32, np.float32))


@cuda.jit
def too_much_shared(out):
    s = cuda.shared.array(13000, np.float32)  # 52,000 bytes > 48 KiB of static shared memory
    s[0] = 1.0
    out[0] = s[0]


def test_static_shared_memory_is_limited_to_48_kib():
    with pytest.raises(simt.KernelError, match="48 KiB"):
        simt.run(too_much_shared, 1, 1, np.zeros(1, np.float32))


@cuda.jit
def local_and_const(x, out, table):
    tmp = cuda.local.array(4, numba.float64)
    c = cuda.const.array_like(table)
    i = cuda.grid(1)
    for k in range(4):
        tmp[k] = x[i] * c[k]
    acc = 0.0
    for k in range(4):
        acc += tmp[k]
    out[i] = acc


def test_local_arrays_are_private_and_untraced_and_a_const_of_an_argument_is_the_argument():
    x = np.arange(8.0)
    table = np.array([1.0, 2.0, 3.0, 4.0])
    out = np.zeros(8)
    r = simt.run(local_and_const, 1, 8, x, out, table)
    np.testing.assert_array_equal(out, x * 10)
    # x[i] read in each of 4 iterations; table read through const.array_like(table), which numba-cuda compiles
    # to the argument itself (global loads): 4 reads per thread too
    assert r.ok and r.total("global", "r") == 4 * 8 + 4 * 8 and r.local_bytes == 32
    assert r.array_traffic("table")[2] == 4 * 8


CONSTANT_TABLE = np.zeros(2)  # a module constant: numba-cuda puts const.array_like of it in constant memory


@cuda.jit
def write_const(out):
    c = cuda.const.array_like(CONSTANT_TABLE)
    c[0] = 1.0


def test_constant_memory_is_read_only():
    # numba-cuda refuses the store at compile time (setitem on a readonly array); the executor at run time
    with pytest.raises(simt.KernelError, match="constant memory"):
        simt.run(write_const, 1, 1, np.zeros(2))


@pytest.mark.parametrize("dtype", [np.float32, "float32", numba.float32, numba.types.float32, cuda.float32])
def test_every_way_to_name_a_dtype(dtype):
    @cuda.jit
    def k(out):
        s = cuda.shared.array(4, dtype)
        t = cuda.threadIdx.x
        s[t] = t + 0.5
        cuda.syncthreads()
        out[t] = s[3 - t]

    out = np.zeros(4, np.float32)
    r = simt.run(k, 1, 4, out)
    np.testing.assert_array_equal(out, [3.5, 2.5, 1.5, 0.5])
    assert r.ok


@cuda.jit
def reads_unwritten(x, out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    if t < 60:
        s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[t] + 1


@cuda.jit
def padded_tile(x, out):
    """Reads elements nobody wrote but never uses them (the GPU-Puzzles matmul tiles do this): not an error."""
    s = cuda.shared.array(8, np.float32)
    t = cuda.threadIdx.x
    if t < 6:
        s[t] = x[t]
    cuda.syncthreads()
    v = s[t] * 2
    if t < 6:
        out[t] = v


def test_uninitialised_shared_memory_is_poisoned_and_its_use_reported():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    r = simt.run(reads_unwritten, 1, 64, x, out)
    np.testing.assert_array_equal(out[:60], x[:60] + 1)
    assert np.isnan(out[60:]).all()  # NaN, not a silent 0
    assert r.uninitialized_count == 4 and r.uninitialized_reads == 4
    use = r.uninitialized[0]
    assert "s[60]" in str(use) and "stored to global memory out[60]" in str(use) and "line" in str(use)
    out = np.zeros(8, np.float32)
    r = simt.run(padded_tile, 1, 8, np.arange(8, dtype=np.float32), out)
    assert r.ok and r.uninitialized_reads == 2 and r.uninitialized_count == 0


@cuda.jit
def branch_on_garbage(out):
    s = cuda.shared.array(4, np.int32)
    if s[cuda.threadIdx.x] > 0:
        out[0] = 1


def test_branching_on_an_uninitialised_value_is_a_use_and_stops_the_launch():
    with pytest.raises(simt.KernelError, match="condition depends on an uninitialised value") as e:
        simt.run(branch_on_garbage, 1, 1, np.zeros(1, np.int32))
    r = e.value.report
    assert r.uninitialized_count == 1 and "branch" in r.uninitialized[0].how


@cuda.jit
def halve_garbage(x, out):
    s = cuda.shared.array(64, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[t]
    j = (t + 32) % 64  # no cuda.syncthreads(): the other warp's element is not written yet
    v = s[j]
    n = 0
    while v > 1.0:  # a poisoned value: never ends unless the launch stops here
        v = v * 0.5
        n += 1
    out[t] = n


def test_a_loop_on_an_uninitialised_value_stops_at_once_with_the_read_and_the_hint():
    import time

    t0 = time.perf_counter()
    with pytest.raises(simt.KernelError) as e:
        simt.run(halve_garbage, 1, 64, np.full(64, 8.0), np.zeros(64, np.int64), time_limit=10.0)
    msg = str(e.value)
    assert time.perf_counter() - t0 < 5.0, "ran into the time limit"
    assert "while v > 1.0" in msg and "which no thread had written" in msg and "v = s[j]" in msg
    assert "cuda.syncthreads()" in msg and "endless" not in msg


@cuda.jit
def local_garbage(out):
    tmp = cuda.local.array(2, np.float64)
    tmp[0] = 1.0
    out[0] = tmp[0] + tmp[1]


def test_uninitialised_local_memory_too():
    out = np.zeros(1)
    r = simt.run(local_garbage, 1, 1, out)
    assert np.isnan(out[0]) and r.uninitialized_count == 1 and "tmp[1]" in str(r.uninitialized[0])


@cuda.jit
def accumulate(out):
    i = cuda.grid(1)
    out[i] += 1.0


def test_device_array_starts_uninitialised():
    d = cuda.device_array(8, np.float64)
    accumulate[1, 8](d)
    r = accumulate.last_report
    assert r.uninitialized_count == 8 and np.isnan(d.copy_to_host()).all()
    d = cuda.to_device(np.zeros(8))
    accumulate[1, 8](d)
    assert accumulate.last_report.ok and (d.copy_to_host() == 1).all()


@cuda.jit
def truncating(x, out):
    i = cuda.grid(1)
    s = cuda.shared.array(4, np.int32)  # floats into an int array: the fraction is lost
    s[i] = x[i]
    cuda.syncthreads()
    out[i] = s[i]


def test_storing_floats_into_an_int_array_warns_of_truncation():
    x = np.array([0.5, 1.5, 2.0, 3.25])
    out = np.zeros(4)
    r = simt.run(truncating, 1, 4, x, out)
    np.testing.assert_array_equal(out, [0, 1, 2, 3])
    assert any("truncated" in w for w in r.warnings)


TT = 32
TT_PAD = TT + 1  # a padded row, named: numba-cuda refuses the expression `TT + 1` as a shape


def test_bank_conflicts_of_a_shared_transpose():
    a = np.arange(TT * TT, dtype=np.float32).reshape(TT, TT)

    @cuda.jit
    def unpadded(a, out):
        tile = cuda.shared.array((TT, TT), np.float32)
        x, y = cuda.threadIdx.x, cuda.threadIdx.y
        tile[y, x] = a[y, x]
        cuda.syncthreads()
        out[y, x] = tile[x, y]

    @cuda.jit
    def padded(a, out):
        tile = cuda.shared.array((TT, TT_PAD), np.float32)
        x, y = cuda.threadIdx.x, cuda.threadIdx.y
        tile[y, x] = a[y, x]
        cuda.syncthreads()
        out[y, x] = tile[x, y]

    for kernel, ways in ((unpadded, 32.0), (padded, 1.0)):
        out = np.zeros_like(a)
        r = simt.run(kernel, 1, (TT, TT), a, out)
        np.testing.assert_array_equal(out, a.T)
        assert r.bank_conflicts("tile", "w") == 1.0  # the row-wise store: one word per bank
        assert r.bank_conflicts("tile", "r") == ways


@cuda.jit
def dot_behind_the_back(a, b, out):
    if cuda.threadIdx.x == 0:
        out[0] = np.dot(np.asarray(a), np.asarray(b))  # the whole arrays as NumPy arrays: not CUDA


def test_a_device_array_does_not_become_a_numpy_array_inside_a_kernel():
    """Its reads and writes would be neither metered nor checked for races (the second independent attack of issue
    20 answered kernel puzzles this way); numba-cuda compiles no such thing either. Outside a kernel it still does."""
    a = np.arange(4.0)
    # refused where the kernel names np.asarray (numba-cuda compiles no NumPy function in a kernel); the array's own
    # refusal to become a NumPy array (memory.py) stays behind it for any other route
    with pytest.raises(simt.KernelError, match="NumPy array inside a kernel|`np.asarray` \\(a NumPy function\\)"):
        simt.run(dot_behind_the_back, 1, 4, a, a, np.zeros(1))
    out = np.zeros(2)
    simt.run(local_and_const, 1, 2, np.arange(2.0), out, np.array([1.0, 2.0, 3.0, 4.0]))  # const.array_like still works
    np.testing.assert_array_equal(out, np.arange(2.0) * 10)


def test_const_array_like_of_an_argument_is_the_global_array_as_numba_cuda_compiles_it():
    """numba-cuda compiles cuda.const.array_like(argument) to the argument itself: plain loads from global memory
    (its PTX has an ld.f32 through the argument's pointer, no ld.const). The executor does the same, so the reads are
    counted and budgeted (the thirteenth attack read a transpose's input through it with 0 global reads counted)."""
    import numpy as np

    from gpucourse.simt import cuda, run

    @cuda.jit
    def double(a, out):
        c = cuda.const.array_like(a)
        i = cuda.grid(1)
        if i < a.size:
            out[i] = c[i] * 2

    a, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    report = run(double, 1, 8, a, out)
    assert np.array_equal(out, 2 * a)
    assert report.total("global", "r") == 8 and report.array_traffic("a")[2] == 8
    try:
        from numba import cuda as numba_cuda
    except ImportError:  # pragma: no cover - numba-cuda is a dependency
        return

    def kernel(a, out):
        c = numba_cuda.const.array_like(a)
        i = numba_cuda.grid(1)
        out[i] = c[i] * 2

    ptx, _ = numba_cuda.compile_ptx(kernel, "(float32[:], float32[:])", cc=(9, 0))
    loads = [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("ld.")]
    assert "ld.f32" in loads and not any(op.startswith("ld.const") for op in loads), loads
