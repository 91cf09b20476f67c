"""Fresh-review findings on labs 4, 5 and 5b: each wrong answer fails with a message naming its cause."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucourse import streams
from gpucourse.simt import cuda
from grader.checks import CheckFailure
from grader.labs import lab04_streams as lab4
from grader.labs import lab05_kernels as lab5
from grader.labs import lab05b_kernel_puzzles as lab5b

TM, TN, TK = lab5.TILE_M, lab5.TILE_N, lab5.TILE_K
BLOCK, REGROUP_BLOCK = lab5.REDUCE_BLOCK, lab5.REGROUP_BLOCK


def _fails(problem, fn, hidden=False) -> str:
    with pytest.raises(CheckFailure) as e:
        problem.check(fn, hidden=hidden)
    return str(e.value)


def tiled_matmul_literal_before_if(A, B, C):
    """The solution with its loads as `x = 0.0; if inside: x = A[...]`: numba-cuda's phi makes x float64."""
    sA = cuda.shared.array((TM, TK), np.float32)
    sB = cuda.shared.array((TK, TN), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TM
    r0, r1 = row0 + ty, row0 + TM // 2 + ty
    col = cuda.blockIdx.x * TN + tx
    m, k = A.shape
    n = B.shape[1]
    t = ty * TN + tx
    ar, ac = t // TK, t % TK
    acc0 = np.float32(0.0)
    acc1 = np.float32(0.0)
    for p in range(0, k, TK):
        x = 0.0
        if row0 + ar < m and p + ac < k:
            x = A[row0 + ar, p + ac]
        y = 0.0
        if p + ty < k and col < n:
            y = B[p + ty, col]
        sA[ar, ac] = x
        sB[ty, tx] = y
        cuda.syncthreads()
        for j in range(TK):
            b = sB[j, tx]
            acc0 += sA[ty, j] * b
            acc1 += sA[TM // 2 + ty, j] * b
        cuda.syncthreads()
    if col < n:
        if r0 < m:
            C[r0, col] = acc0
        if r1 < m:
            C[r1, col] = acc1


@pytest.mark.parametrize("hidden", [False, True])
def test_tiled_matmul_with_a_float_literal_joined_to_its_loads_passes_float32_only(hidden):
    """`x = 0.0; if inside: x = A[...]; sA[...] = x`: numba-cuda types x as float64, but the value is only converted
    and stored back into float32 shared memory: two F2F conversions, no FP64 arithmetic in the SASS
    (test_joined_loads_compile_to_conversions_not_fp64_arithmetic). The budget is on float64 arithmetic (issue 22),
    so it passes (it failed in round 7, with a message calling it an FP64 instruction per operation: §5 read,
    round 8)."""
    p = lab5.problems["tiled_matmul"]
    p.check(tiled_matmul_literal_before_if, hidden=hidden)
    assert not p.run_case(tiled_matmul_literal_before_if, p.visible[0]).float64_ops


def _solution_tiled_matmul(a_load_else: str, prelude: str = ""):
    """The solution's tiled_matmul (its exact load shape, a conditional stored straight into sA) with the A load's
    `else np.float32(0.0)` replaced by ``a_load_else``; ``prelude``: a line before the loop."""
    from grader import course
    from grader.kernels import load_kernel
    from tests import grading

    nb = grading.load_notebook(course.ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.ipynb")
    source = grading.solution_cells(nb)["tiled_matmul"]
    load = "sA[ar, ac] = A[row0 + ar, p + ac] if row0 + ar < m and p + ac < k else np.float32(0.0)"
    assert load in source
    source = source.replace(load, load.replace("np.float32(0.0)", a_load_else))
    if prelude:
        source = source.replace("    for p in range(0, k, TK):", f"    {prelude}\n    for p in range(0, k, TK):")
    return load_kernel(source, "tiled_matmul", {"np": np, "TM": TM, "TN": TN, "TK": TK}, cuda)


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("a_load_else,prelude", [("0.0", ""), ("-0.0", ""), ("float(0)", ""),
                                                 ("zero", "zero = 0.0")])
def test_tiled_matmul_with_a_float64_other_side_stored_into_shared_passes_float32_only(hidden, a_load_else, prelude):
    """`sA[...] = A[...] if inside else 0.0` (and -0.0, float(0), a local holding 0.0): numba-cuda unifies the two
    sides to float64 (cvt.f64.f32 on the load, cvt.rn.f32.f64 at the store) — a conversion, not arithmetic: the SASS
    has one F2F each way and no DADD/DMUL/DFMA (test_joined_loads_compile_to_conversions_not_fp64_arithmetic). Round
    7 failed these as float64 operations; the budget is on float64 arithmetic, so they pass."""
    p = lab5.problems["tiled_matmul"]
    kernel = _solution_tiled_matmul(a_load_else, prelude)
    p.check(kernel, hidden=hidden)
    assert not p.run_case(kernel, p.visible[0]).float64_ops


@pytest.mark.slow
def test_joined_loads_compile_to_conversions_not_fp64_arithmetic():
    """Ground truth for the two tests above: numba-cuda → NVVM → ptxas for sm_90, the SASS counted. The joined
    loads leave F2F conversions and no FP64 arithmetic; the solution has neither."""
    from gpucourse import toolchain

    if not toolchain.available():
        pytest.skip(f"NVIDIA's compiler wheels are missing: {toolchain.describe()}")
    consts, arr = {"TM": TM, "TN": TN, "TK": TK}, "float32[:, ::1]"
    variants = [_solution_tiled_matmul("np.float32(0.0)"), _solution_tiled_matmul("0.0"),
                _solution_tiled_matmul("zero", "zero = 0.0"), tiled_matmul_literal_before_if]
    ptxs = toolchain.numba_ptx_many([(k, f"void({arr}, {arr}, {arr})", consts) for k in variants])
    for i, ptx in enumerate(ptxs):
        sass = toolchain.sass_of_ptx(ptx, "sm_90")
        ops = sass.opcodes()
        assert ops["DADD"] + ops["DMUL"] + ops["DFMA"] == 0 and ops["FFMA"] > 0, (i, dict(ops))
        assert bool(sass.variants("F2F")) == (i > 0), (i, sass.variants("F2F"))


def test_tiled_matmul_with_a_float32_other_side_passes():
    lab5.problems["tiled_matmul"].check(_solution_tiled_matmul("zero", "zero = np.float32(0.0)"))


@pytest.mark.parametrize("hidden", [False, True])
def test_tiled_matmul_without_the_end_of_loop_barrier_is_a_write_after_read_across_iterations(hidden):
    """The solution without its end-of-loop syncthreads was called a read-after-write race "with no
    cuda.syncthreads() between" two lines that have one between them; the conflict is the next iteration's write
    against this iteration's read. The hint asks for a barrier at the end of the loop body, not a syncwarp; the
    genuine read-after-write (no barrier after the loads) keeps its message."""
    from grader import course
    from grader.kernels import load_kernel
    from tests import grading

    nb = grading.load_notebook(course.ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.ipynb")
    source = grading.solution_cells(nb)["tiled_matmul"]
    ns = {"np": np, "TM": TM, "TN": TN, "TK": TK}
    end = "        cuda.syncthreads()  # nobody overwrites a slab someone is still reading\n"
    assert end in source
    msg = _fails(lab5.problems["tiled_matmul"], load_kernel(source.replace(end, ""), "tiled_matmul", ns, cuda),
                 hidden)
    assert "write-after-read race on shared" in msg and "in its next loop iteration" in msg, msg
    assert "at the end of the loop body" in msg and "syncwarp" not in msg and "with no cuda.syncthreads()" not in msg
    first = "        cuda.syncthreads()  # both slabs complete before anyone reads them\n"
    msg = _fails(lab5.problems["tiled_matmul"], load_kernel(source.replace(first, ""), "tiled_matmul", ns, cuda),
                 hidden)
    assert "read-after-write race" in msg and "next loop iteration" not in msg, msg


def halvings_no_first_barrier(x, order, out):
    tile = cuda.shared.array(REGROUP_BLOCK, np.float64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * REGROUP_BLOCK + t
    if i < x.size:
        tile[t] = x[i]
    if i < x.size:
        j = order[i]
        v = tile[j]
        n = 0
        while v > 1.0:
            v = v * 0.5
            n += 1
        tile[j] = n + v
    cuda.syncthreads()
    if i < x.size:
        out[i] = tile[t]


def test_halvings_without_the_first_barrier_stops_at_the_uninitialised_read_not_the_time_limit():
    msg = _fails(lab5.problems["halvings_regrouped"], halvings_no_first_barrier)
    assert "while v > 1.0" in msg and "which no thread had written" in msg and "v = tile[j]" in msg
    assert "cuda.syncthreads()" in msg and "more than 10 s" not in msg


def block_sum_float32(x, partial):
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s = cuda.shared.array(BLOCK, np.float32)
    s[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = s[0]


@pytest.mark.parametrize("hidden", [False, True])
def test_a_float32_accumulator_gets_a_dtype_hint(hidden):
    """The visible case once held whole numbers (float32 sums exact): a float32 shared array passed it."""
    msg = _fails(lab5.problems["block_sum"], block_sum_float32, hidden=hidden)
    assert "rounding, not a wrong formula" in msg and "`s`" in msg and "np.float64" in msg


def softmax_shfl_down(a, out):
    r = cuda.blockIdx.x
    c = cuda.threadIdx.x
    v = a[r, c] if c < a.shape[1] else np.float32(-math.inf)
    m = v
    for off in (16, 8, 4, 2, 1):
        m = max(m, cuda.shfl_down_sync(0xFFFFFFFF, m, off))
    e = math.exp(v - m)
    s = e
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_down_sync(0xFFFFFFFF, s, off)
    if c < a.shape[1]:
        out[r, c] = e / s


def test_softmax_with_shfl_down_names_the_lane_without_the_max_not_the_subtraction():
    msg = _fails(lab5b.problems["softmax_rows"], softmax_shfl_down)
    assert "shfl_down_sync" in msg and "only lane 0" in msg and "not an overflow" in msg
    assert "subtract the row's max first" not in msg


def map_blocks_strided(a, out):
    i = cuda.blockIdx.x + cuda.threadIdx.x * cuda.gridDim.x  # every element, lanes gridDim.x apart
    if i < a.size:
        out[i] = a[i] + 10


@pytest.mark.parametrize("hidden", [False, True])
def test_map_blocks_numbered_across_the_grid_fails_the_sector_budget(hidden):
    msg = _fails(lab5b.problems["map_blocks"], map_blocks_strided, hidden)
    assert "sectors" in msg and "i = blockIdx.x * blockDim.x + threadIdx.x" in msg
    assert "sectors per warp-wide request on global memory ≤ 4" in lab5b.problems["map_blocks"].spec


def map_2d_swapped(a, out):
    r, c = cuda.threadIdx.x, cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + 10


def test_map_2d_with_x_on_the_row_fails_the_visible_case():
    assert lab5b.problems["map_2d"].visible[0].args[0].shape[1] > lab5b.BLOCK_2D_SMALL[1]
    msg = _fails(lab5b.problems["map_2d"], map_2d_swapped)
    assert "still hold their initial value" in msg


def fewest_chunks_one_stream(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
    def pipeline(n):
        base, extra = divmod(nbytes, n)
        ops = []
        for i in range(n):
            size = base + (1 if i < extra else 0)
            ops.append(streams.Op(f"h2d{i}", "s0", size / h2d_Bps * 1e6, "h2d", nbytes=size))
            ops.append(streams.Op(f"k{i}", "s0", size / compute_Bps * 1e6, "compute", sms=132))
            ops.append(streams.Op(f"d2h{i}", "s0", size / d2h_Bps * 1e6, "d2h", nbytes=size))
        return ops

    for n in range(1, 33):
        ops = pipeline(n)
        if streams.simulate(ops, launch_us=launch_us).makespan <= target_us:
            return n, ops
    return None, []


def test_fewest_chunks_ignoring_n_streams_is_told_about_streams():
    msg = _fails(lab4.problems["fewest_chunks"], fewest_chunks_one_stream)
    assert "got None" in msg and "stream i % n_streams" in msg and "on one stream they take" in msg


def scale_shift_cast(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = np.float64(x[i]) * a + b


def block_scan_f64_shared(a, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 16 + t
    s = cuda.shared.array(16, np.float64)
    s[t] = a[i] if i < a.size else np.float32(0)
    cuda.syncthreads()
    d = 1
    while d < 16:
        v = s[t - d] if t >= d else np.float64(0)
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        d *= 2
    if i < a.size:
        out[i] = s[t]


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("lab_module, name, kernel, line", [
    (lab5, "scale_shift", scale_shift_cast, "out[i] = np.float64(x[i]) * a + b"),
    (lab5b, "block_scan", block_scan_f64_shared, "s[t] += v"),
])
def test_explicit_float64_casts_and_float64_arrays_of_float32_values_fail_float32_only(lab_module, name, kernel, line,
                                                                                      hidden):
    """§5 read, round 9: `np.float64(x_f32)` and a float32 kept in a float64 shared array scored full marks in
    float32-only exercises (SASS: DFMA, DADD; test_the_float64_report_against_the_sass_fp64_instructions). Both are
    now float64 made from float32, noted where they compute."""
    msg = _fails(lab_module.problems[name], kernel, hidden)
    assert "float64 operation" in msg and f"(`{line}`)" in msg, msg


@cuda.jit(device=True)
def _halve(v):
    n = 0
    while v > 1.0:
        v = v * 0.5
        n += 1
    return n + v


def halvings_given_in_a_device_function(x, order, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = _halve(x[i])
    while False:  # a dead loop, for a check that reads only the kernel's own source
        pass


REGROUP_BLOCK = lab5.REGROUP_BLOCK


def halvings_regrouped_in_a_device_function(x, order, out):
    tile = cuda.shared.array(REGROUP_BLOCK, np.float64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * REGROUP_BLOCK + t
    if i < x.size:
        tile[t] = x[i]
    cuda.syncthreads()
    if i < x.size:
        j = order[i]
        tile[j] = _halve(tile[j])
    cuda.syncthreads()
    if i < x.size:
        out[i] = tile[t]


def test_a_loop_in_a_device_function_diverges_the_warp_as_inlined():
    """§5 read, round 9: a device function's while loop counted as one step of the calling statement, so the given
    divergent kernel with its loop moved into one scored 3/3 (99.6 % SIMT efficiency), and a right regrouped kernel
    with its loop there scored 0 (no while in the kernel's source). Each device-loop iteration is now a step of the
    calling statement (a GPU inlines device functions), and the loop check follows calls into device functions."""
    p = lab5.problems["halvings_regrouped"]
    msg = _fails(p, halvings_given_in_a_device_function, hidden=False)
    assert "SIMT efficiency" in msg and "below the budget" in msg, msg
    p.check(halvings_regrouped_in_a_device_function)
    p.check(halvings_regrouped_in_a_device_function, hidden=True)


def halvings_closed_form_with_a_dead_loop(x, order, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        n = math.ceil(math.log2(v)) if v > 1.0 else 0
        out[i] = n + v / 2.0**n
    while False:  # not the loop the exercise keeps
        pass


@pytest.mark.parametrize("hidden", [False, True])
def test_a_closed_form_with_a_dead_while_loop_is_not_the_kept_loop(hidden):
    """§5 read, round 10: the closed form plus `while False: pass` scored 3/3 (any while node satisfied the check);
    the loop kept must be data-dependent: its condition reads a value its body assigns."""
    msg = _fails(lab5.problems["halvings_regrouped"], halvings_closed_form_with_a_dead_loop, hidden)
    assert "no data-dependent while loop" in msg, msg


@cuda.jit(device=True)
def _interleaved_level(s, t, stride):
    if t % (2 * stride) == 0:
        s[t] += s[t + stride]


ROW_SUM_BLOCK = lab5b.ROW_SUM_BLOCK


def row_sum_interleaved_in_a_device_function(a, out):
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = cuda.shared.array(ROW_SUM_BLOCK, np.float32)
    s[t] = a[r, t] if t < a.shape[1] else np.float32(0)
    cuda.syncthreads()
    stride = 1
    while stride < ROW_SUM_BLOCK:
        _interleaved_level(s, t, stride)
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        out[r] = s[0]


@pytest.mark.parametrize("hidden", [False, True])
def test_an_if_inside_a_device_function_diverges_the_warp_as_inlined(hidden):
    """§5 read, round 11: the interleaved reduction's `if t % (2 * stride) == 0` moved into a device function was not
    traced (0 divergent branches, 3/3); each statement a device function runs is now a step of the calling statement,
    so the split counts as it does inline (11 branches per block against a budget of 8)."""
    msg = _fails(lab5b.problems["row_sum"], row_sum_interleaved_in_a_device_function, hidden)
    assert "divergent branches per block" in msg and "the budget is 8" in msg, msg


def compact_every_lane_counts(a, out, count):
    i = cuda.grid(1)
    lane = i % 32
    v = a[i] if i < a.size else np.float32(0)
    keep = v > 0
    mask = cuda.ballot_sync(0xFFFFFFFF, keep)
    if keep:
        out[i - lane + cuda.popc(mask & ((1 << lane) - 1))] = v
    if i - lane < a.size:
        count[i // 32] = cuda.popc(mask)  # every lane of the warp: the same value, 32 stores


@pytest.mark.parametrize("hidden", [False, True])
def test_compact_every_lane_storing_the_count_is_over_the_write_budget(hidden):
    """§5 read, round 11: warp_sum refused 32 lanes storing one value while compact accepted it; both now ask for
    one write per warp."""
    msg = _fails(lab5b.problems["compact"], compact_every_lane_counts, hidden)
    assert "one write per warp: lane 0 stores the warp's count" in msg, msg
