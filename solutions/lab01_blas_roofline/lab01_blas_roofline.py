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
# Companion of `course/01_blas_roofline.ipynb`. Seven exercises (eight functions), 3 points per function
# (1 visible test, 2 hidden):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | compute | FLOPs and bytes of BLAS Level 1 (`axpy`) and Level 2 (`gemv`) |
# | 2 | compute | FLOPs and bytes of BLAS Level 3 (`gemm`) |
# | 3 | predict | the roofline's verdict and time for an op |
# | 4 | predict | the batch size at which a dense layer becomes compute-bound |
# | 5 | compute | the bytes an elementwise chain moves, fused and unfused |
# | 6 | implement | a blocked (tiled) matrix multiply, correct on any shape |
# | 7 | diagnose | how far below *its own* roof a measured op sits |
#
# **How this lab works.** Each exercise prints its spec (`.show()`), gives you a stub that says roughly how many
# lines the answer takes, then checks your function: the visible test runs fixed cases and tells you what it
# expected and what it got; a hidden test runs randomized cases when your lab is graded. Replace
# `raise NotImplementedError()` with your code. Use **Validate** (nbgrader's toolbar button) before you submit.
#
# Conventions: one multiply-add = 2 FLOPs; bytes = compulsory traffic (every input read once, every output
# written once); `dtype` is a NumPy dtype name — `np.dtype(dtype).itemsize` gives its size in bytes.

# %% nbgrader={"grade": false, "grade_id": "colab_setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Colab set-up (does nothing outside Google Colab): install the course and pick the backend.
import os, shutil, subprocess, sys
COURSE = "git+https://github.com/gpu-course/gpu-course@main"  # instructors: `python -m gpucourse.colab retarget OWNER/REPO@BRANCH`
if "google.colab" in sys.modules or os.environ.get("GPUCOURSE_INSTALL"):
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["--no-deps", os.environ.get("GPUCOURSE_INSTALL") or "gpucourse @ " + COURSE], check=True)
    subprocess.run(pip + ['numba-cuda>=0.20'], check=True)
    gpu = shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    os.environ["GPUCOURSE_BACKEND"] = "gpu" if gpu else "cpu"
    print("course installed; backend:", os.environ["GPUCOURSE_BACKEND"],
          "" if gpu else "(no GPU: Runtime > Change runtime type > GPU, then run this cell again)")


# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

import gpucourse as gc
from grader.labs import lab01_blas_roofline as lab

be = gc.setup()

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex1_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — BLAS Level 1 and Level 2: axpy and gemv
#
# Level 1 is vector–vector work: `y ← a·x + y`. Count its FLOPs and its bytes — then notice the
# ratio does not depend on `n`.

# %% nbgrader={"grade": false, "grade_id": "ex1_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["axpy_cost"].show()

# %% nbgrader={"grade": false, "grade_id": "ex1_axpy_cost", "locked": false, "schema_version": 3, "solution": true, "task": false}
def axpy_cost(n, dtype):
    """(flops, bytes) of y <- a*x + y on n-element vectors of `dtype`."""
    # roughly 2 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    return 2 * n, 3 * n * size
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex1_axpy_cost_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["axpy_cost"].check(axpy_cost)

# %% nbgrader={"grade": true, "grade_id": "ex1_axpy_cost_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["axpy_cost"].check(axpy_cost, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex1b_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Level 2 is matrix–vector work: `y ← A·x`. Every element of `A` is used exactly once.

# %% nbgrader={"grade": false, "grade_id": "ex1b_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemv_cost"].show()

# %% nbgrader={"grade": false, "grade_id": "ex1b_gemv_cost", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gemv_cost(m, n, dtype):
    """(flops, bytes) of y <- A @ x with A of shape (m, n)."""
    # roughly 2 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    return 2 * m * n, (m * n + n + m) * size
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex1b_gemv_cost_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemv_cost"].check(gemv_cost)

# %% nbgrader={"grade": true, "grade_id": "ex1b_gemv_cost_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["gemv_cost"].check(gemv_cost, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex2_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — BLAS Level 3: gemm
#
# Level 3 is matrix–matrix work, `C ← A·B`: O(mnk) FLOPs on O(mk + kn + mn) data — the seed's reason GEMM
# can be compute-bound.

# %% nbgrader={"grade": false, "grade_id": "ex2_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemm_cost"].show()

# %% nbgrader={"grade": false, "grade_id": "ex2_gemm_cost", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gemm_cost(m, n, k, dtype):
    """(flops, bytes) of C <- A @ B with A: (m, k), B: (k, n)."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    return 2 * m * n * k, (m * k + k * n + m * n) * size
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex2_gemm_cost_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["gemm_cost"].check(gemm_cost)

# %% nbgrader={"grade": true, "grade_id": "ex2_gemm_cost_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["gemm_cost"].check(gemm_cost, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex3_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — Predict with the roofline
#
# An op needs `flops / peak_flops` seconds of arithmetic and `nbytes / bandwidth` seconds of memory traffic.
# The two overlap on a GPU, so the slower one sets the time — and names the roof the op sits under.

# %% nbgrader={"grade": false, "grade_id": "ex3_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["predict_time"].show()

# %% nbgrader={"grade": false, "grade_id": "ex3_predict_time", "locked": false, "schema_version": 3, "solution": true, "task": false}
def predict_time(flops, nbytes, peak_flops, bandwidth):
    """('memory' or 'compute', best time in seconds) for an op on a machine with these roofs."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    compute, memory = flops / peak_flops, nbytes / bandwidth
    bound = "compute" if compute >= memory else "memory"
    return bound, max(compute, memory)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex3_predict_time_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["predict_time"].check(predict_time)

# %% nbgrader={"grade": true, "grade_id": "ex3_predict_time_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["predict_time"].check(predict_time, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex4_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — When does a dense layer become compute-bound?
#
# A dense layer's weight matrix is read once per batch, however large the batch: a bigger batch reuses
# it more, so intensity grows with `B` — up to a limit. Find the first batch size that reaches the ridge point
# (`peak_flops / bandwidth`). A closed form exists; a loop is fine too.

# %% nbgrader={"grade": false, "grade_id": "ex4_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_batch_compute_bound"].show()

# %% nbgrader={"grade": false, "grade_id": "ex4_min_batch_compute_bound", "locked": false, "schema_version": 3, "solution": true, "task": false}
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

# %% nbgrader={"grade": true, "grade_id": "ex4_min_batch_compute_bound_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_batch_compute_bound"].check(min_batch_compute_bound)

# %% nbgrader={"grade": true, "grade_id": "ex4_min_batch_compute_bound_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["min_batch_compute_bound"].check(min_batch_compute_bound, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex5_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — What fusion saves
#
# The seed's `jnp.maximum(x * y + z, 0)` is three elementwise ops. Run one kernel per op and every
# intermediate makes a round trip through memory; fuse them and it stays in registers. Count both.

# %% nbgrader={"grade": false, "grade_id": "ex5_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["chain_bytes"].show()

# %% nbgrader={"grade": false, "grade_id": "ex5_chain_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def chain_bytes(n, dtype, arities, fused):
    """Bytes moved by a chain of elementwise ops on n-element arrays (see the spec above)."""
    # roughly 5 lines
    ### BEGIN SOLUTION
    size = np.dtype(dtype).itemsize
    if not fused:
        return sum((a + 1) * n * size for a in arities)
    inputs = arities[0] + sum(a - 1 for a in arities[1:])
    return (inputs + 1) * n * size
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex5_chain_bytes_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["chain_bytes"].check(chain_bytes)

# %% nbgrader={"grade": true, "grade_id": "ex5_chain_bytes_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["chain_bytes"].check(chain_bytes, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex6_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — A blocked matrix multiply
#
# GPUs (and CPU BLAS libraries) compute GEMM tile by tile: a tile of `A` and a tile of `B` are loaded
# once into fast memory (shared memory, registers, cache) and reused for a whole tile of `C`. Write the loop
# nest. The checker runs your function on instrumented arrays and reports how many elements your tiles loaded
# — compare it with the naive loop's `2·m·n·k`.

# %% nbgrader={"grade": false, "grade_id": "ex6_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["blocked_matmul"].show()

# %% nbgrader={"grade": false, "grade_id": "ex6_blocked_matmul", "locked": false, "schema_version": 3, "solution": true, "task": false}
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

# %% nbgrader={"grade": true, "grade_id": "ex6_blocked_matmul_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["blocked_matmul"].check(blocked_matmul)

# %% nbgrader={"grade": true, "grade_id": "ex6_blocked_matmul_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["blocked_matmul"].check(blocked_matmul, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex7_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 7 — Diagnose: how far below its roof?
#
# "gemv reached 2 % of peak FLOP/s, the BLAS must be slow" is a wrong diagnosis: a Level-2 op can never get
# near the compute roof. Judge a measurement against the roof *at its own intensity*.

# %% nbgrader={"grade": false, "grade_id": "ex7_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["roof_fraction"].show()

# %% nbgrader={"grade": false, "grade_id": "ex7_roof_fraction", "locked": false, "schema_version": 3, "solution": true, "task": false}
def roof_fraction(flops, nbytes, seconds, peak_flops, bandwidth):
    """('memory' or 'compute', achieved FLOP/s as a fraction of the roofline at this op's intensity)."""
    # roughly 4 lines
    ### BEGIN SOLUTION
    intensity = flops / nbytes
    attainable = min(peak_flops, intensity * bandwidth)
    bound = "memory" if intensity < peak_flops / bandwidth else "compute"
    return bound, (flops / seconds) / attainable
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex7_roof_fraction_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["roof_fraction"].check(roof_fraction)

# %% nbgrader={"grade": true, "grade_id": "ex7_roof_fraction_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["roof_fraction"].check(roof_fraction, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**. Every visible test should print a ✓ line. The hidden
# tests use other shapes and dtypes: an answer that only handles the examples will lose those points.
