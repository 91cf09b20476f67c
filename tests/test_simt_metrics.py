"""The executor's memory metrics against the hardware's definitions (review of the executor, findings 1 and 2).

- A *request* is one memory instruction of a warp (Nsight Compute's "requests"; CUDA C++ Programming Guide,
  "Device Memory Accesses"): two loads of one array in one statement are two requests.
- Global memory is served in 32-byte sectors: 32 consecutive float32 = 128 bytes = 4 sectors; shifted by one
  element, 5; a stride of 2 elements, 8.
- Shared memory has 32 banks of 4-byte words; a warp access is served in phases of 128 bytes of lanes (a half-warp
  for 8-byte elements): stride-1 float64 is conflict-free, stride-2 float64 and stride-2 float32 are 2-way.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import simt

cuda = simt.cuda


@cuda.jit
def two_loads(a, out):
    i = cuda.grid(1)
    out[i] = a[i] + a[i + 32]  # two coalesced loads of `a`: 4 sectors each


@cuda.jit
def shifted(a, out):
    i = cuda.grid(1)
    out[i] = a[i + 1]  # 128 bytes starting 4 bytes into a sector: 5 sectors


@cuda.jit
def strided(a, out):
    i = cuda.grid(1)
    out[i] = a[2 * i]  # every other float32: 256 bytes span, 8 sectors


@pytest.mark.parametrize("kernel, sectors", [(two_loads, 4.0), (shifted, 5.0), (strided, 8.0)])
def test_sectors_are_counted_per_memory_instruction(kernel, sectors):
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    r = simt.run(kernel, 1, 32, a, out)
    assert r.sectors_per_request("a") == sectors
    assert r.sectors_per_request("out") == 4.0


def test_a_read_and_a_write_in_one_statement_are_two_requests():
    @cuda.jit
    def bump(a):
        i = cuda.grid(1)
        a[i] = a[i + 32] * 2  # a load and a store: 4 sectors each, not 8 merged
    a = np.arange(64, dtype=np.float32)
    r = simt.run(bump, 1, 32, a)
    assert r.sectors_per_request("a") == 4.0
    assert r.sectors_per_request("a", "r") == 4.0 and r.sectors_per_request("a", "w") == 4.0


@cuda.jit
def tree_step(out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    s[t] = 1.0
    s[t + 32] = 2.0
    cuda.syncthreads()
    s[t] += s[t + 32]  # two conflict-free loads (words t and t + 32) and a store: 1-way each
    cuda.syncthreads()
    out[t] = s[t]


def test_a_reduction_step_is_conflict_free():
    out = np.zeros(32, np.float32)
    r = simt.run(tree_step, 1, 32, out)
    np.testing.assert_array_equal(out, 3.0)
    assert r.bank_conflicts("s") == 1.0
    assert r.bank_conflicts("s", "r") == 1.0


def _shared_stride(dtype, stride):
    @cuda.jit
    def k(out):
        s = cuda.shared.array(64, dtype)
        t = cuda.threadIdx.x
        s[stride * t] = t
        cuda.syncthreads()
        out[t] = s[stride * t]
    out = np.zeros(32, dtype)
    r = simt.run(k, 1, 32, out)
    np.testing.assert_array_equal(out, np.arange(32))
    return r.bank_conflicts("s", "r")


@pytest.mark.parametrize("dtype, stride, ways", [
    (np.float32, 1, 1.0), (np.float32, 2, 2.0),
    (np.float64, 1, 1.0),  # two half-warp phases of 128 bytes, one wavefront each: no conflict
    (np.float64, 2, 2.0),  # each half-warp spans 256 bytes: two words per bank
    (np.int64, 1, 1.0),
])
def test_bank_conflict_ways_per_element_width(dtype, stride, ways):
    assert _shared_stride(dtype, stride) == ways


def test_a_broadcast_float64_is_conflict_free():
    @cuda.jit
    def k(out):
        s = cuda.shared.array(1, np.float64)
        t = cuda.threadIdx.x
        if t == 0:
            s[0] = 2.5
        cuda.syncthreads()
        out[t] = s[0]
    out = np.zeros(32)
    r = simt.run(k, 1, 32, out)
    assert r.bank_conflicts("s", "r") == 1.0


# -- divergent branches: one per warp split, however many lines the branch's body has (kernel review, finding 1) --
TREE = 128


@cuda.jit
def tree_one_line(x, out):
    s = cuda.shared.array(TREE, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    stride = TREE // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[0] = s[0]


@cuda.jit
def tree_three_lines(x, out):
    s = cuda.shared.array(TREE, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    stride = TREE // 2
    while stride > 0:
        if t < stride:
            left = s[t]
            right = s[t + stride]
            s[t] = left + right
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[0] = s[0]


@cuda.jit
def tree_interleaved(x, out):
    s = cuda.shared.array(TREE, np.float64)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    stride = 1
    while stride < TREE:
        if t % (2 * stride) == 0:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        out[0] = s[0]


def test_a_branch_counts_once_however_many_lines_its_body_has():
    """On a GPU `s[t] += s[t + stride]` and `left = …; right = …; s[t] = left + right` are the same instructions under
    one mask: the stride-halving tree splits warp 0 at strides 16, 8, 4, 2, 1 (5 branches) either way, while the
    per-line count of divergent steps triples; the interleaved tree splits every warp at nearly every level."""
    x = np.arange(TREE, dtype=np.float64)
    counts = {}
    for k in (tree_one_line, tree_three_lines, tree_interleaved):
        out = np.zeros(1)
        k[1, TREE](x, out)
        assert out[0] == x.sum()
        counts[k.__name__] = (k.last_report.divergent_branches, k.last_report.divergent_steps)
    assert counts["tree_one_line"][0] == counts["tree_three_lines"][0] == 5
    assert counts["tree_three_lines"][1] == 3 * counts["tree_one_line"][1]
    assert counts["tree_interleaved"][0] >= 4 * counts["tree_one_line"][0]
