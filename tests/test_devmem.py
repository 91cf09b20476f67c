"""The device-memory tracker: budgets, OOM, peaks, copy counters, frees, and the CuPy-like surface."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import devmem


def mem(budget=4000):
    return devmem.DeviceMemory(budget, name="test GPU", xp=np)


def test_to_device_counts_bytes_and_copies_and_returns_equal_data():
    m = mem()
    x = np.arange(100, dtype=np.float32)
    d = m.to_device(x)
    assert (m.in_use, m.peak, m.h2d_bytes, m.h2d_copies) == (400, 400, 400, 1)
    x[0] = 99  # the device holds a copy, not a view of host memory
    y = m.to_host(d)
    assert y[0] == 0 and np.array_equal(y[1:], np.arange(1, 100)) and (m.d2h_bytes, m.d2h_copies) == (400, 1)


def test_oom_is_raised_before_anything_is_copied_and_the_message_says_how_much():
    m = mem(1000)
    with pytest.raises(devmem.OutOfMemoryError, match=r"Tried to allocate .*1,600 bytes.*0 bytes already allocated"):
        m.to_device(np.zeros(400, np.float32))
    assert (m.in_use, m.h2d_copies, m.h2d_bytes) == (0, 0, 0)
    assert issubclass(devmem.OutOfMemoryError, MemoryError)


def test_results_and_temporaries_are_allocations_and_free_when_unreferenced():
    m = mem(1200)
    d = m.to_device(np.arange(100, dtype=np.float32))
    r = np.sqrt(d * d + 1.0)  # d*d and d*d+1 alive at once with d: 3 × 400 bytes
    assert m.peak == 1200 and m.in_use == 800  # temporaries released, d and r remain
    assert isinstance(r, devmem.DeviceArray) and r.dtype == np.float32
    del d
    assert m.in_use == 400
    del r
    assert m.in_use == 0 and m.allocations == 4


def test_rebinding_allocates_before_the_old_array_is_freed():
    m = mem(1000)
    x = np.zeros(100, np.float32)
    d = m.to_device(x)
    d = m.to_device(x)  # noqa: F841 (the point: two are alive for a moment)
    assert m.peak == 800 and m.in_use == 400
    with pytest.raises(devmem.OutOfMemoryError):
        d = m.to_device(np.zeros(200, np.float32))  # 400 live + 800 > 1000


def test_slices_and_reshape_are_views_and_keep_the_parent_alive():
    m = mem()
    d = m.to_device(np.arange(12, dtype=np.float64))
    v = d[2:6].reshape(2, 2)
    assert m.in_use == 96 and m.allocations == 1
    del d
    assert m.in_use == 96  # the view still holds the allocation
    assert np.array_equal(m.to_host(v), np.arange(2, 6.0).reshape(2, 2))
    del v
    assert m.in_use == 0


def test_in_place_ops_do_not_allocate_and_reductions_return_host_scalars():
    m = mem()
    d = m.to_device(np.ones(10, np.float32))
    d *= 3.0
    np.add(d, 1.0, out=d)
    assert m.allocations == 1
    assert d.sum() == 40.0 and isinstance(d.sum(), float) and np.sum(d) == 40.0
    assert d.max() == 4.0 and m.in_use == 40


def test_implicit_conversion_to_numpy_is_refused_like_cupy():
    d = mem().to_device(np.ones(3))
    with pytest.raises(TypeError, match="to_host"):
        np.asarray(d)
    with pytest.raises(TypeError):
        d[:] = np.zeros(3)  # host data must be copied explicitly


def test_reset_forgets_stale_arrays_without_corrupting_the_count():
    m = mem(1000)
    old = m.to_device(np.zeros(200, np.float32))
    m.reset()
    assert (m.in_use, m.peak, m.h2d_copies) == (0, 0, 0)
    new = m.to_device(np.zeros(100, np.float32))
    del old  # freed after the reset: must not be subtracted from the new generation
    assert m.in_use == 400
    del new
    assert m.in_use == 0


def test_empty_checks_the_budget_before_touching_memory():
    m = mem(10**6)
    with pytest.raises(devmem.OutOfMemoryError):
        m.empty((10**9,), np.float32)  # would need 4 GB on the host if it were allocated first
    e = m.empty((10, 10), np.float64)
    assert e.shape == (10, 10) and m.in_use == 800


@pytest.mark.gpu
def test_on_a_gpu_the_storage_is_cupy_and_copies_are_real():
    import gpucourse as gc

    m = devmem.DeviceMemory(2**20)
    d = m.to_device(np.arange(1000, dtype=np.float32))
    assert type(d.data).__module__.startswith("cupy")
    r = np.sqrt(d)
    assert np.allclose(m.to_host(r), np.sqrt(np.arange(1000, dtype=np.float32)))
    assert gc.get_backend().is_gpu


def test_a_reduction_brings_its_scalar_back_as_a_counted_copy():
    """A fresh ML-systems read: `d.sum()` hands a host scalar back — on a GPU a device→host copy (and a wait for the
    work that made it), which the tracker must count like any other."""
    m = devmem.DeviceMemory(budget=2**20, xp=np)
    d = m.to_device(np.arange(100, dtype=np.float32))
    assert (m.d2h_copies, m.d2h_bytes) == (0, 0)
    assert d.sum() == 4950.0 and (m.d2h_copies, m.d2h_bytes) == (1, 4)
    assert float((d * d).sum(dtype=np.float64)) == 328350.0 and (m.d2h_copies, m.d2h_bytes) == (2, 12)
    assert np.max(d) == 99 and m.d2h_copies == 3
