# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,tags,-all
#     notebook_metadata_filter: kernelspec,jupytext,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] nbgrader={"grade": false, "grade_id": "intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# # Lab 1 — BLAS levels, arithmetic intensity and the roofline
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab01_blas_roofline/lab01_blas_roofline.ipynb)
#
# Companion of `course/01_blas_roofline.ipynb`.
# Nine exercises (ten functions), 3 points per function (a visible test worth 1, a hidden one worth 2):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | diagnose | from a profiler's FLOPs and bytes back to the BLAS Level 1 (`axpy`) and Level 2 (`gemv`) call |
# | 2 | diagnose | from a Level 3 (`gemm`) call's counters to its inner dimension, and whether it accumulated |
# | 3 | predict | the largest batch a dense layer can serve within a latency budget |
# | 4 | predict | the batch size at which a dense layer becomes compute-bound |
# | 5 | design | the longest elementwise chain a traffic budget allows, fused and unfused |
# | 6 | implement | a blocked (tiled) matrix multiply, correct on any shape |
# | 7 | predict | how large an op must be to reach a fraction of *its own* roof despite a fixed per-call cost |
# | 8 | measure | a timing function you can trust (warm-up, wait for the result, median or minimum) |
# | 9 | explain | why a measured point sits where it does — even above its roof |
#
# Exercises 8 and 9 end in **predict → measure → explain on your own machine**:
# you measure its two roofs with your timer, predict ops with the roofline, measure them,
# and explain each point.
#
# **How this lab works.**
# Each exercise prints its spec (`.show()`),
# gives you a stub that says roughly how many lines the answer takes, then checks your function:
# the visible test runs fixed cases and tells you what it expected and what it got;
# a hidden test runs randomized cases when your lab is graded.
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** (nbgrader's toolbar button) before you submit.
#
# Conventions: one multiply-add = 2 FLOPs;
# bytes = compulsory traffic (every input read once, every output written once);
# `dtype` is a NumPy dtype name — `np.dtype(dtype).itemsize` gives its size in bytes.

# %% nbgrader={"grade": false, "grade_id": "colab_setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Colab set-up (does nothing outside Google Colab): install the course (student edition),
# pick the backend.
import os, re, shutil, subprocess, sys
COURSE = "https://github.com/gpu-course/gpu-course/releases/download/student-edition/gpucourse-0.1.0-py3-none-any.whl"  # instructors: `python -m gpucourse.colab retarget OWNER/REPO@BRANCH`
if "google.colab" in sys.modules or os.environ.get("GPUCOURSE_INSTALL"):
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    wheel = os.environ.get("GPUCOURSE_INSTALL") or COURSE
    subprocess.run(pip + ["--no-deps", "--force-reinstall", wheel], check=True)
    answers = [sys.executable, "-c", "import grader.answers"]
    if subprocess.run(answers, capture_output=True).returncode == 0:
        uninstall = [sys.executable, "-m", "pip", "uninstall", "-y", "-q", "gpucourse"]
        subprocess.run(uninstall, check=True)
        raise RuntimeError("this build of the course holds the answers (grader/answers): "
                           "install the student edition")
    gpu = (shutil.which("nvidia-smi")
           and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0)
    smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout if gpu else ""
    # the newest CUDA the driver runs: numba-cuda's flavour follows it
    major = re.search(r"CUDA Version: (\d+)", smi)
    flavour = f"[cu{major.group(1)}]" if major and major.group(1) in ("12", "13") else ""
    deps = [d.replace("numba-cuda", "numba-cuda" + flavour, 1) for d in ['numba-cuda>=0.20']]
    subprocess.run(pip + deps, check=True)
    os.environ["GPUCOURSE_BACKEND"] = "gpu" if gpu else "cpu"
    print("course installed; backend:", os.environ["GPUCOURSE_BACKEND"], "" if gpu else
          "(no GPU: Runtime > Change runtime type > GPU, then run this cell again)")


# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

import gpucourse as gc
from grader.labs import lab01_blas_roofline as lab

be = gc.setup()

# %% [markdown] nbgrader={"grade": false, "grade_id": "axpy_calls_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — BLAS Level 1 and Level 2: from a profiler's counters back to the call
#
# Level 1 is vector–vector work: `y ← a·x + y`.
# Its FLOPs and bytes both grow with `n`, so their ratio does not depend on `n`
# — and a profiler reports exactly those two counters.
# Read them backwards: which calls could have produced them?
# BLAS has axpy for complex numbers too (`caxpy`, `zaxpy`), counted in real operations
# as LAPACK and cuBLAS count them: they can make two calls look the same.
# Mind whose convention a counter follows: XLA's `cost_analysis` counts one FLOP per element of
# every elementwise op, complex ones included (2,000 FLOPs for a complex axpy of 1,000 elements,
# not 8,000), so it is no check for the complex calls here.

# %% nbgrader={"grade": false, "grade_id": "axpy_calls_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["axpy_calls"].show()

# %% nbgrader={"grade": false, "grade_id": "axpy_calls", "locked": false, "schema_version": 3, "solution": true, "task": false}
def axpy_calls(flops, nbytes):
    """Every (n, dtype) whose axpy has exactly these FLOPs and bytes, sorted by n."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    found = []
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        per_element = 8 if np.dtype(dtype).kind == "c" else 2  # complex: (4 mul + 2 add) + 2 add
        n = flops // per_element
        if n >= 1 and per_element * n == flops and 3 * n * np.dtype(dtype).itemsize == nbytes:
            found.append((n, dtype))
    found.sort()
    return found
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "axpy_calls_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["axpy_calls"].check(axpy_calls)

# %% nbgrader={"grade": true, "grade_id": "axpy_calls_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["axpy_calls"].check(axpy_calls, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "gemv_shapes_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Level 2 is matrix–vector work: `y ← A·x`.
# Every element of `A` is used exactly once, so the bytes are nearly all `A`'s.
# From the two counters you get `m·n` and `m + n`: enough for the shape — almost.

# %% nbgrader={"grade": false, "grade_id": "gemv_shapes_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemv_shapes"].show()

# %% nbgrader={"grade": false, "grade_id": "gemv_shapes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gemv_shapes(flops, nbytes, dtype):
    """Every (m, n) whose gemv y <- A @ x (A: m x n) in `dtype` has exactly these counters, sorted."""
    # roughly 10 lines
    ### BEGIN SOLUTION
    import math
    size = np.dtype(dtype).itemsize
    if flops % 2 or nbytes % size:
        return []
    mn = flops // 2
    m_plus_n = nbytes // size - mn
    d = m_plus_n**2 - 4 * mn
    if d < 0 or math.isqrt(d) ** 2 != d or (m_plus_n - math.isqrt(d)) % 2:
        return []
    a, b = (m_plus_n - math.isqrt(d)) // 2, (m_plus_n + math.isqrt(d)) // 2
    return sorted({(a, b), (b, a)}) if a >= 1 else []
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gemv_shapes_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemv_shapes"].check(gemv_shapes)

# %% nbgrader={"grade": true, "grade_id": "gemv_shapes_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["gemv_shapes"].check(gemv_shapes, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "gemm_k_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — BLAS Level 3: gemm
#
# Level 3 is matrix–matrix work, `C ← A·B`:
# O(mnk) FLOPs on O(mk + kn + mn) data — the source article's reason GEMM can be compute-bound.
# BLAS's GEMM is really `C ← α·A·B + β·C`:
# with β = 1 it accumulates into `C`, which then has to be read as well as written.
# A weight gradient summed over micro-batches does just that.
# You know the layer's `m` and `n`; the profiler tells you a call's FLOPs and bytes:
# how long was its inner dimension, and did it accumulate?

# %% nbgrader={"grade": false, "grade_id": "gemm_k_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemm_k"].show()

# %% nbgrader={"grade": false, "grade_id": "gemm_k", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gemm_k(m, n, flops, nbytes, dtype):
    """(k, accumulate) of the gemm C <- A @ B (+ C), A: (m, k), B: (k, n), with these counters, or None."""
    # roughly 7 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    k, rest = divmod(flops, 2 * m * n)
    if rest or k < 1:
        return None
    for accumulate, c_elements in ((False, m * n), (True, 2 * m * n)):  # C written; also read with β = 1
        if (m * k + k * n + c_elements) * size == nbytes:
            return k, accumulate
    return None
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gemm_k_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemm_k"].check(gemm_k)

# %% nbgrader={"grade": true, "grade_id": "gemm_k_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["gemm_k"].check(gemm_k, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "max_batch_within_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — Predict with the roofline: a latency budget
#
# An op needs `flops / peak_flops` seconds of arithmetic and `nbytes / bandwidth` seconds of memory
# traffic.
# The two overlap on a GPU, so the slower one sets the time — and names the roof the op sits under.
# (The course's `gc.roofline.Roofline` and `gc.datapath.roofline_time` make that prediction for you:
# use them if you like.)
# Now turn the prediction around, as a server does:
# a dense layer must answer every call within a latency budget.
# A bigger batch serves more requests per call but takes longer.
# How large may the batch be?
# Its weight matrix is read once per call whatever the batch,
# so at small batches the call is all weight traffic
# — which is why servers quantize the weights alone (int8 weights, float16 activations):
# half the weight bytes.

# %% nbgrader={"grade": false, "grade_id": "max_batch_within_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["max_batch_within"].show()

# %% nbgrader={"grade": false, "grade_id": "max_batch_within", "locked": false, "schema_version": 3, "solution": true, "task": false}
def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    """(largest batch B whose layer call the roofline predicts within budget_s, 'memory' or 'compute'), or None."""
    # roughly 11 lines
    ### BEGIN SOLUTION
    s, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize

    def seconds(b):  # (compute, memory) time of one call with batch b
        return 2 * b * d_in * d_out / peak_flops, (s * (b * d_in + b * d_out) + w * d_in * d_out) / bandwidth

    if max(seconds(1)) > budget_s:
        return None
    b = 1
    while max(seconds(b + 1)) <= budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute >= memory else "memory")
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "max_batch_within_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["max_batch_within"].check(max_batch_within)

# %% nbgrader={"grade": true, "grade_id": "max_batch_within_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["max_batch_within"].check(max_batch_within, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "min_batch_compute_bound_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — When does a dense layer become compute-bound?
#
# A dense layer's weight matrix is read once per batch, however large the batch:
# a bigger batch reuses it more, so intensity grows with `B` — up to a limit.
# Find the first batch size that reaches the ridge point (`peak_flops / bandwidth`).
# A closed form exists; a loop is fine too.
# A tie counts: a batch whose intensity equals the ridge point exactly is compute-bound.
# Decide that with the intensity itself
# — a closed form evaluated in floating point can land one batch too high at such a tie.

# %% nbgrader={"grade": false, "grade_id": "min_batch_compute_bound_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_batch_compute_bound"].show()

# %% nbgrader={"grade": false, "grade_id": "min_batch_compute_bound", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    """Smallest batch B >= 1 for which (B x d_in) @ (d_in x d_out) is compute-bound, or None."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    ridge = peak_flops / bandwidth

    def intensity(b):
        return 2 * b * d_in * d_out / (size * (b * d_in + d_in * d_out + b * d_out))

    limit = 2 * d_in * d_out / (size * (d_in + d_out))  # intensity as B -> infinity
    if limit <= ridge:
        return None
    b = 1
    while intensity(b) < ridge:
        b += 1
    return b
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "min_batch_compute_bound_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_batch_compute_bound"].check(min_batch_compute_bound)

# %% nbgrader={"grade": true, "grade_id": "min_batch_compute_bound_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["min_batch_compute_bound"].check(min_batch_compute_bound, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "longest_chain_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — What fusion saves
#
# The source article's `jnp.maximum(x * y + z, 0)` is three elementwise ops.
# Run one kernel per op and every intermediate makes a round trip through memory;
# fuse them and it stays in registers.
# Turn that into a design limit: a step may move so many bytes — how long a chain fits,
# run op by op, and fused?

# %% nbgrader={"grade": false, "grade_id": "longest_chain_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["longest_chain"].show()

# %% nbgrader={"grade": false, "grade_id": "longest_chain", "locked": false, "schema_version": 3, "solution": true, "task": false}
def longest_chain(n, dtype, arity, budget_bytes):
    """(unfused_ops, fused_ops): the longest chains whose traffic fits budget_bytes (None: no limit)."""
    # roughly 9 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    unfused = budget_bytes // ((arity + 1) * n * size)  # every op: read its operands, write its result
    first = (arity + 1) * n * size  # the fused chain of one op moves as much as one op alone
    if budget_bytes < first:
        return unfused, 0
    if arity == 1:
        return unfused, None  # a unary op brings no new input: the fused chain never grows
    return unfused, 1 + (budget_bytes - first) // ((arity - 1) * n * size)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "longest_chain_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["longest_chain"].check(longest_chain)

# %% nbgrader={"grade": true, "grade_id": "longest_chain_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["longest_chain"].check(longest_chain, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "blocked_matmul_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — A blocked matrix multiply
#
# GPUs (and CPU BLAS libraries) compute GEMM tile by tile:
# a tile of `A` and a tile of `B` are loaded once into fast memory (shared memory, registers,
# cache) and reused for a whole tile of `C`.
# Write the loop nest.
# The checker runs your function on instrumented arrays and reports how many elements your tiles
# loaded — compare it with the naive loop's `2·m·n·k`.

# %% nbgrader={"grade": false, "grade_id": "blocked_matmul_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["blocked_matmul"].show()

# %% nbgrader={"grade": false, "grade_id": "blocked_matmul", "locked": false, "schema_version": 3, "solution": true, "task": false}
def blocked_matmul(A, B, tile):
    """C = A @ B computed tile by tile; shapes need not be multiples of `tile`."""
    xp = gc.array_module(A)  # NumPy on CPU, CuPy on a GPU
    # roughly 8 lines
    ### BEGIN SOLUTION
    m, k = A.shape
    n = B.shape[1]
    C = xp.zeros((m, n), dtype=A.dtype)
    for i in range(0, m, tile):
        for j in range(0, n, tile):
            for p in range(0, k, tile):
                # slices past the end are clipped: edge tiles are simply smaller
                C[i:i + tile, j:j + tile] += A[i:i + tile, p:p + tile] @ B[p:p + tile, j:j + tile]
    return C
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "blocked_matmul_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["blocked_matmul"].check(blocked_matmul)

# %% nbgrader={"grade": true, "grade_id": "blocked_matmul_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["blocked_matmul"].check(blocked_matmul, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "min_size_for_fraction_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 7 — How large must an op be to reach its roof?
#
# §1.2's 64³ GEMM stays well below the compute roof:
# every call pays fixed costs (dispatch, launch, set-up) that its little work cannot amortise.
# With a fixed cost per call, how large must an op be to reach, say, 90 % of its roof?
# Judge it against the roof *at its own intensity*:
# "a gemv reached 2 % of peak FLOP/s,
# the BLAS must be slow" is a wrong diagnosis — a Level-2 op can never get near the compute roof,
# and its roof is the memory one.
# Count each call as in exercises 1 and 2 (a square gemv reads its n×n matrix and an n-vector,
# writes an n-vector).

# %% nbgrader={"grade": false, "grade_id": "min_size_for_fraction_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_size_for_fraction"].show()

# %% nbgrader={"grade": false, "grade_id": "min_size_for_fraction", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    """Smallest n at which an n-sized 'gemv' or 'gemm' call reaches `fraction` of its roof despite overhead_s."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize

    def roof_time(n):  # the roofline's time of one n-sized call, overhead left out
        flops, elements = (2 * n * n, n * n + 2 * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        return max(flops / peak_flops, elements * size / bandwidth)

    n = 1
    while roof_time(n) / (overhead_s + roof_time(n)) < fraction:
        n += 1
    return n
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "min_size_for_fraction_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_size_for_fraction"].check(min_size_for_fraction)

# %% nbgrader={"grade": true, "grade_id": "min_size_for_fraction_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["min_size_for_fraction"].check(min_size_for_fraction, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "time_call_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 8 — Measure: a timing function you can trust
#
# Every number on a roofline is a time.
# Three mistakes make a timing wrong on any machine:
# timing the first call (it compiles),
# stopping the clock when the call *returns* (JAX and CuPy queue the work and return at once
# — the result does not exist yet, and a warm-up not waited for is still running when the timing
# starts), and averaging runs that other programs slowed down.
# Write the course's timing method yourself, reading the clock you are handed (`clock()`,
# for every reading): on a GPU the clock that sees the device's work is the device's own
# (CUDA events), not the host's, and here the checks pass a clock that only the calls' work moves
# — against those stand-in calls the course's `gc.measure`, which reads `time.perf_counter`,
# measures the wrong thing (on real work it is right).
# On your machine (the last cell) your function gets `clock=time.perf_counter`.
# It is graded on calls whose true duration is known by construction,
# so the grade does not depend on how busy the grading machine is:
# your answer must land in a band around the true time, and your function must read the given clock,
# warm up once and wait for every result.

# %% nbgrader={"grade": false, "grade_id": "time_call_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["time_call"].show()

# %% nbgrader={"grade": false, "grade_id": "time_call", "locked": false, "schema_version": 3, "solution": true, "task": false}
import time


def time_call(fn, *args, clock, repeat=5):
    """Seconds one call of fn(*args) takes, read on `clock`: one waited-for warm-up call, then the median (or the
    minimum) of `repeat` waited-for batches of calls, each batch long enough to span many of the clock's ticks."""
    # roughly 15 lines
    ### BEGIN SOLUTION
    gc.block(fn(*args))  # warm-up: compilation, caches; not timed

    def batch(k):  # seconds for k calls queued back to back, waited for through the last (in-order queue)
        start = clock()
        for _ in range(k):
            out = fn(*args)
        gc.block(out)  # the work may be queued (JAX, CuPy): wait until the last result exists
        return clock() - start

    # double the batch until one spans at least 0.2 s on clock (what timeit's autorange does, roughly)
    k = 1
    while batch(k) < 0.2:
        k *= 2
    return float(np.median([batch(k) / k for _ in range(repeat)]))
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "time_call_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["time_call"].check(time_call)

# %% nbgrader={"grade": true, "grade_id": "time_call_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["time_call"].check(time_call, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "explain_point_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 9 — Explain: a point above its roof
#
# A measured point can land *above* the roofline.
# Above the compute roof nothing explains it:
# no chip computes faster than its peak, so the measurement is wrong.
# Above the memory roof one thing can:
# the roof is DRAM's bandwidth, and an op whose data all fit in the cache is fed faster than DRAM
# can.
# If the data do not fit, the point can still be fed partly from the cache — but only partly:
# the spec says how much a cache can explain.
# Beyond that the point is impossible too
# — usually a clock stopped before the work finished (exercise 8), or bytes counted wrong.
# Sort a measurement into the four cases.
# On the boundaries: a point exactly *on* a roof is on or under the roofline (not above it),
# a working set exactly the size of the cache fits,
# and an intensity exactly at the ridge point is compute-bound.

# %% nbgrader={"grade": false, "grade_id": "explain_point_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["explain_point"].show()

# %% nbgrader={"grade": false, "grade_id": "explain_point", "locked": false, "schema_version": 3, "solution": true, "task": false}
def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    """'memory-bound', 'compute-bound', 'cache' or 'impossible' for one measured op (see the spec above)."""
    # roughly 9 lines
    ### BEGIN SOLUTION
    intensity = flops / nbytes
    achieved = flops / seconds
    if achieved > peak_flops:
        return "impossible"
    dram_roof = intensity * bandwidth
    if achieved > dram_roof:
        # at most cache_bytes of the working set can still be cached: DRAM delivers the rest
        if working_set <= cache_bytes or achieved * (1 - cache_bytes / working_set) <= dram_roof:
            return "cache"
        return "impossible"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "explain_point_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["explain_point"].check(explain_point)

# %% nbgrader={"grade": true, "grade_id": "explain_point_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["explain_point"].check(explain_point, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "yours_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Your machine: predict → measure → explain (not graded)
#
# Put it together on the machine in front of you:
# one CPU core (as §1 does), or the GPU on a GPU backend.
# With **your** `time_call`: measure the memory roof
# (the fastest of §1's read streams over an array larger than the cache:
# `gc.roofline.read_candidates()`) and the compute roof (the fastest of §1's GEMMs:
# `gc.roofline.compute_candidates()`);
# then for each op, **predict** its time with the roofline, **measure** it,
# and **explain** the point with your `explain_point`.
# The last op is a JAX call timed one call at a time without waiting for its result
# (in a long batch, JAX's queue fills up and the host ends up waiting for the work anyway,
# which hides the mistake): watch what the explanation says about it.
# As in §1, a roof is the *best* of several timings,
# and a point counts as above a roof only when it beats it by more than 20 % (noise).
# Numbers are this machine's, so nothing here is graded
# (the cell skips itself while nbgrader grades or validates).
# Each roof and op is timed a fixed number of times and summarised once:
# if a ratio looks odd, say so rather than re-running until it looks right
# (other programs only slow runs down,
# so a waited-for op far above both roofs points at the timer or the count).

# %% nbgrader={"grade": false, "grade_id": "yours", "locked": true, "schema_version": 3, "solution": false, "task": false}
import os
import time

import jax

if os.environ.get("NBGRADER_EXECUTION"):  # nbgrader sets it while it autogrades or validates: nothing to grade here
    print("(skipped while nbgrader grades or validates: run the notebook yourself to see your machine)")
else:
    reads, gemms = gc.roofline.read_candidates(), gc.roofline.compute_candidates()
    n = int((gc.roofline.stream_bytes() / 4) ** 0.5) // 256 * 256  # a gemv whose matrix is at least twice the cache
    A_host = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    A, x = be.xp.asarray(A_host), be.xp.ones(n, be.xp.float32)  # on the device the roofs were measured on
    A_jax, x_jax = jax.numpy.asarray(A_host), jax.numpy.ones(n, jax.numpy.float32)
    gemv_jax = jax.jit(lambda A, x: A @ x)
    flops, nbytes = 2.0 * n * n, 4.0 * (n * n + 2 * n)
    # 32 calls back to back in one timed run, as in §1: one ~25 µs call is too short to time on a busy machine, and
    # the calls after the first find the 1 MiB matrix in the cache
    ops = [gc.roofline.gemv_op(512, label="gemv n=512 ×32 (fits in cache)", calls=32),
           gc.roofline.Op(f"gemv n={n} ({'CuPy' if be.is_gpu else 'NumPy'})", lambda: A @ x, flops, nbytes, nbytes),
           gc.roofline.gemm_op(256),
           gc.roofline.Op(f"gemv n={n} (JAX), clock stopped at return", lambda: (gemv_jax(A_jax, x_jax), None)[1],
                          flops, nbytes, nbytes)]
    cache, where = gc.roofline.cache_bytes()
    MARGIN = 1.2
    with gc.roofline.blas_threads(1):  # one core, as in §1 (JAX's own threads are not limited)
        # a roof is a maximum: the best of 3 of your timings of each candidate (other programs only slow runs down)
        # your time_call on this machine's clock: time.perf_counter (the host's wall clock)
        def timed(op):
            return time_call(op.fn, clock=time.perf_counter, repeat=3)

        def one_call_unwaited(op):
            # the mistake shows one call at a time: in a long batch, JAX's queue fills up and the host waits for
            # the work anyway, which hides a missing wait (one more reason to wait explicitly)
            gc.block(gemv_jax(A_jax, x_jax))  # warm-up (compiles), waited for
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                op.fn()
                runs.append(time.perf_counter() - t0)
            gc.block(gemv_jax(A_jax, x_jax))  # drain the queue before the next measurement
            return min(runs)

        bandwidth = max(op.bytes / timed(op) for op in reads for _ in range(3))  # bytes/s
        peak = max(op.flops / timed(op) for op in gemms for _ in range(3))  # FLOP/s
        print(f"{be.gpu.name if be.is_gpu else 'one core'}: memory roof {bandwidth / 1e9:.1f} GB/s, compute roof {peak / 1e9:.1f} GFLOP/s (float32); "
              f"cache {cache / 2**20:.0f} MiB ({where})")
        print(f"{'op':44} {'predicted':>10} {'measured':>10} {'ratio':>6}  explanation")
        for op in ops:
            predicted = max(op.flops / peak, op.bytes / bandwidth)  # the roofline's time
            measured = one_call_unwaited(op) if "clock stopped" in op.label else timed(op)
            # explained against roofs raised by §1's 20 % noise margin: two kernels doing the same work differ by that
            why = explain_point(op.flops, op.bytes, measured, MARGIN * peak, MARGIN * bandwidth, op.working_set, cache)
            print(f"{op.label:44} {predicted * 1e3:8.3f}ms {measured * 1e3:8.3f}ms {measured / predicted:6.2f}  {why}")
            impossible = why == "impossible" and "clock stopped" not in op.label
            if impossible:
                print("    ^ a waited-for op above its roof: the roofs' 3 timings were all slowed down, or your timer "
                      "or the op's count is off")

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test should print a ✓ line.
# The hidden tests use other shapes and dtypes:
# an answer that only handles the examples will lose those points.
