"""KernelProblem (grader/kernels.py) names the real problem first: a race before "N of M elements are wrong",
barrier divergence and uninitialised memory as such, a dtype mismatch when it explains wrong values, the
thread and the cell's line when the kernel cannot finish — and a check stays fast."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpucourse import simt
from grader.checks import CheckFailure
from grader.kernels import load_kernel
from grader.answers import lab05_kernels as answers5
from grader.labs import lab05_kernels as lab5
from tests import grading

cuda = simt.cuda
NS = {"np": np, "BLOCK": lab5.REDUCE_BLOCK, "TM": lab5.TILE_M, "TN": lab5.TILE_N, "TK": lab5.TILE_K}


def kernel(source: str, name: str):
    return load_kernel(source, name, NS, cuda)


MATMUL_NO_FIRST_SYNC = grading.wrong_answers("lab05_kernels")["tiled_matmul"]  # no barrier after the loads


def test_a_missing_syncthreads_reports_the_race_with_lines_and_a_hint():
    k = kernel(MATMUL_NO_FIRST_SYNC, "tiled_matmul")
    with pytest.raises(CheckFailure) as info:
        lab5.problems["tiled_matmul"].check(k)
    msg = str(info.value)
    assert "data races" in msg and "elements are wrong" not in msg
    assert "race on shared sA[" in msg or "race on shared sB[" in msg
    assert "at line 16 of the cell" in msg or "at line 17 of the cell" in msg  # the slab load, as the cell numbers it
    assert "Hint: a cuda.syncthreads() between the write and the read" in msg


BLOCK_SUM_DIVERGENT = '''@cuda.jit
def block_sum(x, partial):
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s = cuda.shared.array(BLOCK, np.float64)
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
'''


def test_a_barrier_in_divergent_code_is_reported_as_such():
    with pytest.raises(CheckFailure, match=r"barrier divergence: threads 64–127 of block 0 went past the "
                                           r"cuda.syncthreads\(\) at line 12 of the cell"):
        lab5.problems["block_sum"].check(kernel(BLOCK_SUM_DIVERGENT, "block_sum"))


BLOCK_SUM_UNGUARDED_LOAD = '''@cuda.jit
def block_sum(x, partial):
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s = cuda.shared.array(BLOCK, np.float64)
    if i < x.size:
        s[tid] = x[i]
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = s[0]
'''


def test_shared_memory_nobody_wrote_is_reported_not_read_as_zero():
    with pytest.raises(CheckFailure, match=r"uses? of uninitialised memory.*s\[\d+\], which no thread had written"):
        lab5.problems["block_sum"].check(kernel(BLOCK_SUM_UNGUARDED_LOAD, "block_sum"))


BLOCK_SUM_INT_SHARED = BLOCK_SUM_UNGUARDED_LOAD.replace("np.float64", "np.int32").replace(
    "    if i < x.size:\n        s[tid] = x[i]", "    s[tid] = x[i] if i < x.size else 0.0")


def test_wrong_values_from_a_dtype_mismatch_say_so():
    with pytest.raises(CheckFailure, match=r"elements are wrong.*Note: s holds int32 but the kernel stored the "
                                           r"float .*truncated"):
        lab5.problems["block_sum"].check(kernel(BLOCK_SUM_INT_SHARED, "block_sum"), hidden=True)  # random floats


ENDLESS = '''@cuda.jit
def scale_shift(x, out, a, b):
    i = cuda.grid(1)
    while i < x.size:
        out[i] = a * x[i] + b
'''


def test_an_endless_kernel_fails_fast_with_thread_and_line():
    t0 = time.perf_counter()
    with pytest.raises(CheckFailure, match=r"failed: thread \d+ of block 0 at line 4 of the cell \(`while i < x.size:`\) "
                                           r"loops forever"):
        lab5.problems["scale_shift"].check(kernel(ENDLESS, "scale_shift"))
    assert time.perf_counter() - t0 < 5


def test_solution_checks_stay_within_the_budget():
    from grader.benchmark_simt import CHECK_BUDGET_S, solution_kernels

    problems = {p.name: p for p in lab5.problems.values()}
    for name, k in solution_kernels().items():
        if name not in problems:
            continue
        t0 = time.process_time()
        problems[name].check(k)
        problems[name].check(k, hidden=True)
        assert time.process_time() - t0 < 2 * CHECK_BUDGET_S, name  # CPU seconds: robust to a busy machine


def test_a_kernel_whose_device_function_holds_an_answer_is_refused():
    ns = {**NS, "answer": answers5.scale_shift_reference}
    src = ("@cuda.jit(device=True)\n"
           "def helper(v):\n"
           "    return answer(v, 2.0, 1.0, 32)\n"
           "\n"
           "@cuda.jit\n"
           "def scale_shift(x, out, a, b):\n"
           "    i = cuda.grid(1)\n"
           "    if i < x.size:\n"
           "        out[i] = helper(x[i])\n")
    with pytest.raises(CheckFailure, match="keeps a reference to .*the reference answer of scale_shift"):
        lab5.problems["scale_shift"].check(load_kernel(src, "scale_shift", ns, cuda))


# -- what a wrong answer's message says about the wrong elements (the eighth GPU read) ----------------------------

RAMP_X_ALONG_ROWS = '''@cuda.jit
def ramp_2d(a, out):
    r, c = cuda.grid(2)  # x along the rows: with the fixed launch, columns past the first 16 get no thread
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * np.float32(r + 1) - np.float32(c)
'''

SCALE_SHIFT_FP64 = '''@cuda.jit
def scale_shift(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + b  # a, b: Python floats, so float64 arithmetic on each element
'''


def test_elements_no_thread_wrote_are_named_as_such():
    with pytest.raises(CheckFailure) as info:
        lab5.problems["ramp_2d"].check(kernel(RAMP_X_ALONG_ROWS, "ramp_2d"))
    msg = str(info.value)
    assert "elements are wrong" in msg and "still hold their initial value: no thread stored there" in msg, msg
    assert "cuda.grid" in msg and "grid (2, 2), block (16, 8)" in msg


def test_wrong_values_that_were_written_are_not_called_unwritten():
    wrong = RAMP_X_ALONG_ROWS.replace("r, c = cuda.grid(2)", "c, r = cuda.grid(2)").replace("np.float32(r + 1)",
                                                                                          "np.float32(r + 2)")
    with pytest.raises(CheckFailure) as info:
        lab5.problems["ramp_2d"].check(kernel(wrong, "ramp_2d"))
    assert "elements are wrong" in str(info.value) and "initial value" not in str(info.value)


def _tiled_matmul_source(accumulator: str) -> str:
    """The solution's tiled_matmul with its accumulators initialised to ``accumulator``."""
    from grader import course

    nb = grading.load_notebook(course.ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.ipynb")
    source = grading.solution_cells(nb)["tiled_matmul"]
    assert "acc0 = np.float32(0.0)" in source
    return source.replace("acc0 = np.float32(0.0)", f"acc0 = {accumulator}").replace(
        "acc1 = np.float32(0.0)", f"acc1 = {accumulator}")


def test_float64_accumulators_fail_where_float32_is_the_lesson():
    """Issue 22's float64 budget, where it is certain and the exercise's lesson (lab 5's register-blocked matmul):
    `acc = 0.0` is a loop-carried float64 (DADD per product in the SASS, tests/test_simt_typing.py); the check names
    the line, in the visible check, the hidden check and from the observation as plain data (the re-check)."""
    from grader.pipeline.wire import decode, encode

    problem = lab5.problems["tiled_matmul"]
    k = kernel(_tiled_matmul_source("0.0"), "tiled_matmul")
    for hidden in (False, True):
        with pytest.raises(CheckFailure) as info:
            problem.check(k, hidden=hidden)
        assert "float64 operations on float32 values" in str(info.value) and "acc0 += sA[ty, j] * b" in str(
            info.value), str(info.value)
    case = problem.visible[0]
    with pytest.raises(CheckFailure, match="float64 accumulator"):
        problem.judge(decode(encode(problem.observe(k, case))), problem.reference(*case.args), case)
    problem.check(kernel(_tiled_matmul_source("np.float32(0.0)"), "tiled_matmul"))


RAMP_FP64 = RAMP_X_ALONG_ROWS.replace("r, c = cuda.grid(2)", "c, r = cuda.grid(2)").replace(
    "a[r, c] * np.float32(r + 1) - np.float32(c)", "a[r, c] * (r + 1) - c")
MAP_BLOCKS_2D_FP64 = '''@cuda.jit
def map_blocks_2d(a, out):
    c, r = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * 2 - r
'''


@pytest.mark.parametrize("hidden", [False, True])
def test_float64_arithmetic_fails_where_the_spec_teaches_float32(hidden):
    """scale_shift's spec teaches np.float32(a), and ramp_2d's and map_blocks_2d's solutions cast their int64 indices:
    `a * x[i] + b` with Python floats and `a[r, c] * (r + 1) - c` are float64 arithmetic (cvt.f64.f32 … cvt.rn.f32.f64
    in numba-cuda's PTX, FP64 in the SASS), which once passed visible and hidden. Now they fail naming the line; the
    float32 versions pass."""
    from grader.labs import lab05b_kernel_puzzles as lab5b

    cases = [(lab5.problems["scale_shift"], SCALE_SHIFT_FP64, "out[i] = a * x[i] + b", "a * x[i] + b",
              "np.float32(a) * x[i] + np.float32(b)"),
             (lab5.problems["ramp_2d"], RAMP_FP64, "out[r, c] = a[r, c] * (r + 1) - c", "a[r, c] * (r + 1) - c",
              "a[r, c] * np.float32(r + 1) - np.float32(c)"),
             (lab5b.problems["map_blocks_2d"], MAP_BLOCKS_2D_FP64, "out[r, c] = a[r, c] * 2 - r", "a[r, c] * 2 - r",
              "a[r, c] * np.float32(2) - np.float32(r)")]
    for problem, source, line, fp64, fp32 in cases:
        with pytest.raises(CheckFailure) as info:
            problem.check(kernel(source, problem.name), hidden=hidden)
        msg = str(info.value)
        assert "float64 operation" in msg and line in msg and "np.float32(" in msg, msg
        problem.check(kernel(source.replace(fp64, fp32), problem.name), hidden=hidden)


def test_float64_arithmetic_elsewhere_passes_with_a_note_naming_the_line(capsys):
    """Where NVVM folds the float64 away (one operation on a float32 and an exact constant, rounded straight back:
    `a[i] + 10`, tests/test_simt_typing.py), it is a note on the passing line (not graded); the float32 version has
    none."""
    from grader.labs import lab05b_kernel_puzzles as lab5b

    src = '''@cuda.jit
def map_blocks(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + 10
'''
    lab5b.problems["map_blocks"].check(kernel(src, "map_blocks"))
    out = capsys.readouterr().out
    assert "✓ map_blocks" in out and "note (not graded):" in out and "at line 5" in out, out
    lab5b.problems["map_blocks"].check(kernel(src.replace("a[i] + 10", "a[i] + np.float32(10)"), "map_blocks"))
    assert "note (not graded)" not in capsys.readouterr().out


def test_a_pass_line_says_when_the_block_size_alone_caps_simt_efficiency(capsys):
    """Issue 22: a block of 4 threads fills 12.5 % of its warp's lanes; the passing line says that this, not the
    kernel, is why its SIMT efficiency is low — and lab 5b's machine-code cell names unwritten kernels."""
    from grader.labs import lab05b_kernel_puzzles as lab5b

    k = load_kernel('''@cuda.jit
def map_add(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + np.float32(10)
''', "map_add", NS, cuda)
    lab5b.problems["map_add"].check(k)
    out = capsys.readouterr().out
    assert "SIMT efficiency 12.5% (blocks of 4 threads fill 12.5% of their warps' lanes" in out, out
    stub = load_kernel('''@cuda.jit
def transpose(a, out):
    raise NotImplementedError()
''', "transpose", NS, cuda)
    assert lab5b.not_written(transpose=stub, warp_sum=k) == ["transpose"]
