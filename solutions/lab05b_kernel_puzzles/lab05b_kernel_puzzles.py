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
# # Lab 5b — Kernel puzzles
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab05b_kernel_puzzles/lab05b_kernel_puzzles.ipynb)
#
# Companion of `course/05_grids_blocks_warps.ipynb`, before lab 5's performance exercises.
# Kernel puzzles, from a one-line map to a softmax:
# GPU-Puzzles' set (the tiled matmul is lab 5's exercise 4) plus a coalesced transpose,
# warp shuffles, a ballot, atomics and a softmax.
# 3 points each (a visible test worth 1, a hidden one worth 2).
#
# <!-- exercise table -->
# | # | puzzle |
# |---|---|
# | 1 | Map |
# | 2 | Zip |
# | 3 | Guard |
# | 4 | Map 2-D |
# | 5 | Broadcast |
# | 6 | Blocks |
# | 7 | Blocks 2-D, coalesced |
# | 8 | Shared memory |
# | 9 | Pooling |
# | 10 | Dot product |
# | 11 | 1-D convolution |
# | 12 | Prefix sum |
# | 13 | Row sum |
# | 14 | Transpose through padded shared memory |
# | 15 | Warp reduction with shuffles |
# | 16 | Stream compaction with ballot |
# | 17 | Histogram with atomics |
# | 18 | Softmax rows |
# <!-- end exercise table -->
#
# **Budgets.**
# Each puzzle states a budget (global reads and writes per thread, shared memory per block,
# sectors per request, SIMT efficiency, bank conflicts, atomics),
# and the checker enforces it on the course's instrumented executor (`gpucourse.simt`):
# a right answer over budget fails, with the budget and by how much.
# Races that change a value, a `cuda.syncthreads()` that a thread skips and then runs on past,
# and reads of memory nobody wrote always fail (two threads storing the same value to one address,
# unordered, are counted on the passing line:
# under CUDA's memory model that is still a race, whatever the values).
# Hidden tests use other sizes (one element, exactly one block,
# not a multiple of the block) and adversarial values.
#
# **Pictures.**
# After each puzzle, `diagram` draws what *your* kernel did
# — which thread of which block read and wrote each element — from the executor's log,
# beside which outputs came out right, wrong or never written,
# and the check's first failure on that case in red above it (the same message the check prints).
#
# **GPU.**
# `cuda` is numba-cuda on a GPU; without one, the executor with numba-cuda's API.
# On a GPU every check also runs your kernel on the device and compares.
# The executor refuses some array methods numba-cuda compiles (for example `.reshape`,
# `.transpose()`, `.flat`, `.sum()`, `np.sum`) and says so in its message:
# write the index arithmetic.
# At the end, the PTX and SASS of *your* transpose and warp reduction (no GPU needed):
# what padding the tile changed in the machine code.
#
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** before you submit.

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
import math

import numpy as np

import gpucourse as gc
from grader.labs import lab05b_kernel_puzzles as lab

be = gc.setup()
cuda = be.cuda  # numba.cuda on a GPU; on CPU the course's executor (gpucourse.simt.cuda), numba-cuda's API
# threads per block of the puzzles that name it; the longest convolution kernel
SHARED_BLOCK, DOT_THREADS, CONV_BLOCK, SCAN_BLOCK = lab.SHARED_BLOCK, lab.DOT_THREADS, lab.CONV_BLOCK, lab.SCAN_BLOCK
ROW_SUM_BLOCK, MAXK = lab.ROW_SUM_BLOCK, lab.MAXK
TILE, TILE_ROWS, HIST_BINS = lab.TILE, lab.TILE_ROWS, lab.HIST_BINS  # transpose tile edge, rows per pass; bins
# shared-array shapes must be constants for numba-cuda on a GPU: a name like these, not `SHARED_BLOCK + 2`
POOL_SLOTS, CONV_SLOTS, TILE_PAD = lab.POOL_SLOTS, lab.CONV_SLOTS, lab.TILE_PAD

# %% [markdown] nbgrader={"grade": false, "grade_id": "map_add_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 1 — Map
#
# The smallest kernel: every thread is handed its position in the block
# (`cuda.threadIdx.x`) and does one element.
# The budget counts how often each thread touched global memory.

# %% nbgrader={"grade": false, "grade_id": "map_add_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_add"].show()

# %% nbgrader={"grade": false, "grade_id": "map_add", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def map_add(a, out):
    """out[i] = a[i] + 10, one thread per element."""
    # roughly 2 lines
    ### BEGIN SOLUTION
    i = cuda.threadIdx.x
    out[i] = a[i] + np.float32(10)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "map_add_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_add"].check(map_add)

# %% nbgrader={"grade": true, "grade_id": "map_add_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["map_add"].check(map_add, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "map_add_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_add"].diagram(map_add)

# %% [markdown] nbgrader={"grade": false, "grade_id": "zip_add_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 2 — Zip
#
# Two inputs, one output, still one thread per element.

# %% nbgrader={"grade": false, "grade_id": "zip_add_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["zip_add"].show()

# %% nbgrader={"grade": false, "grade_id": "zip_add", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def zip_add(a, b, out):
    """out[i] = a[i] + b[i]."""
    # roughly 2 lines
    ### BEGIN SOLUTION
    i = cuda.threadIdx.x
    out[i] = a[i] + b[i]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "zip_add_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["zip_add"].check(zip_add)

# %% nbgrader={"grade": true, "grade_id": "zip_add_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["zip_add"].check(zip_add, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "zip_add_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["zip_add"].diagram(zip_add)

# %% [markdown] nbgrader={"grade": false, "grade_id": "map_guard_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 3 — Guard
#
# Launches come in whole blocks, so there are usually more threads than elements.
# The extra threads must not touch memory:
# on a GPU an out-of-bounds access may silently corrupt memory,
# or fault at once with an illegal address (or crash later); the executor stops at the line.

# %% nbgrader={"grade": false, "grade_id": "map_guard_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_guard"].show()

# %% nbgrader={"grade": false, "grade_id": "map_guard", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def map_guard(a, out):
    """out[i] = a[i] + 10 with more threads than elements."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    i = cuda.threadIdx.x
    if i < a.size:
        out[i] = a[i] + np.float32(10)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "map_guard_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_guard"].check(map_guard)

# %% nbgrader={"grade": true, "grade_id": "map_guard_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["map_guard"].check(map_guard, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "map_guard_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_guard"].diagram(map_guard)

# %% [markdown] nbgrader={"grade": false, "grade_id": "map_2d_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 4 — Map 2-D
#
# Blocks can be 2-D. `threadIdx.x` varies fastest inside a warp,
# so it belongs on the contiguous axis of a row-major array (the columns).

# %% nbgrader={"grade": false, "grade_id": "map_2d_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_2d"].show()

# %% nbgrader={"grade": false, "grade_id": "map_2d", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def map_2d(a, out):
    """out[r, c] = a[r, c] + 10 with one 2-D block larger than a."""
    # roughly 4 lines
    ### BEGIN SOLUTION
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + np.float32(10)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "map_2d_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_2d"].check(map_2d)

# %% nbgrader={"grade": true, "grade_id": "map_2d_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["map_2d"].check(map_2d, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "map_2d_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_2d"].diagram(map_2d)

# %% [markdown] nbgrader={"grade": false, "grade_id": "broadcast_add_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 5 — Broadcast
#
# Each thread combines one element of a column vector with one of a row vector
# — NumPy's broadcasting, as threads.

# %% nbgrader={"grade": false, "grade_id": "broadcast_add_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["broadcast_add"].show()

# %% nbgrader={"grade": false, "grade_id": "broadcast_add", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def broadcast_add(a, b, out):
    """out[r, c] = a[r] + b[c]."""
    # roughly 4 lines
    ### BEGIN SOLUTION
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    if r < a.size and c < b.size:
        out[r, c] = a[r] + b[c]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "broadcast_add_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["broadcast_add"].check(broadcast_add)

# %% nbgrader={"grade": true, "grade_id": "broadcast_add_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["broadcast_add"].check(broadcast_add, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "broadcast_add_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["broadcast_add"].diagram(broadcast_add)

# %% [markdown] nbgrader={"grade": false, "grade_id": "map_blocks_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 6 — Blocks
#
# Now a block is smaller than the array:
# several blocks, each of which knows its own number (`cuda.blockIdx.x`) and size
# (`cuda.blockDim.x`).

# %% nbgrader={"grade": false, "grade_id": "map_blocks_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_blocks"].show()

# %% nbgrader={"grade": false, "grade_id": "map_blocks", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def map_blocks(a, out):
    """out[i] = a[i] + 10 over several blocks."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < a.size:
        out[i] = a[i] + np.float32(10)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "map_blocks_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_blocks"].check(map_blocks)

# %% nbgrader={"grade": true, "grade_id": "map_blocks_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["map_blocks"].check(map_blocks, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "map_blocks_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_blocks"].diagram(map_blocks)

# %% [markdown] nbgrader={"grade": false, "grade_id": "map_blocks_2d_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 7 — Blocks 2-D, coalesced
#
# A 2-D grid of 2-D blocks on an array of any shape.
# The budget now includes **coalescing**:
# the 32-byte sectors one warp-wide access touches
# (a warp of 16 × 2 threads reading float32 along rows needs about 4; down columns, 16).

# %% nbgrader={"grade": false, "grade_id": "map_blocks_2d_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_blocks_2d"].show()

# %% nbgrader={"grade": false, "grade_id": "map_blocks_2d", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def map_blocks_2d(a, out):
    """out[r, c] = a[r, c] * 2 - r over a 2-D grid of 2-D blocks, coalesced."""
    # roughly 4 lines
    ### BEGIN SOLUTION
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * np.float32(2) - np.float32(r)  # float32 arithmetic: 2 and r are int64
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "map_blocks_2d_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_blocks_2d"].check(map_blocks_2d)

# %% nbgrader={"grade": true, "grade_id": "map_blocks_2d_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["map_blocks_2d"].check(map_blocks_2d, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "map_blocks_2d_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["map_blocks_2d"].diagram(map_blocks_2d)

# %% [markdown] nbgrader={"grade": false, "grade_id": "shared_first_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 8 — Shared memory
#
# **Shared memory** is per block, on chip,
# and only visible after a `cuda.syncthreads()` — the barrier every thread of the block must reach.
# The budget now includes the shared memory a block allocates.

# %% nbgrader={"grade": false, "grade_id": "shared_first_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["shared_first"].show()

# %% nbgrader={"grade": false, "grade_id": "shared_first", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def shared_first(a, out):
    """out[i] = a[i] + a[first element of i's block], through shared memory."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SHARED_BLOCK + t
    s = cuda.shared.array(SHARED_BLOCK, np.float32)
    if i < a.size:
        s[t] = a[i]
    cuda.syncthreads()
    if i < a.size:
        out[i] = s[t] + s[0]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "shared_first_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["shared_first"].check(shared_first)

# %% nbgrader={"grade": true, "grade_id": "shared_first_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["shared_first"].check(shared_first, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "shared_first_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["shared_first"].diagram(shared_first)

# %% [markdown] nbgrader={"grade": false, "grade_id": "pool3_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 9 — Pooling
#
# A sliding window: neighbouring outputs share inputs.
# Reading them all from global memory costs 3 reads per thread;
# stage them once in shared memory (with the two elements before the block: the *halo*).

# %% nbgrader={"grade": false, "grade_id": "pool3_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["pool3"].show()

# %% nbgrader={"grade": false, "grade_id": "pool3", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def pool3(a, out):
    """out[i] = a[i-2] + a[i-1] + a[i], staged in shared memory with a 2-element halo."""
    # roughly 10 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SHARED_BLOCK + t
    s = cuda.shared.array(POOL_SLOTS, np.float32)  # s[t + 2] holds a[i]
    if t < 2:
        j = i - 2
        s[t] = a[j] if 0 <= j < a.size else np.float32(0)
    s[t + 2] = a[i] if i < a.size else np.float32(0)
    cuda.syncthreads()
    if i < a.size:
        out[i] = s[t] + s[t + 1] + s[t + 2]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "pool3_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["pool3"].check(pool3)

# %% nbgrader={"grade": true, "grade_id": "pool3_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["pool3"].check(pool3, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "pool3_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["pool3"].diagram(pool3)

# %% [markdown] nbgrader={"grade": false, "grade_id": "dot_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 10 — Dot product
#
# A reduction: many threads, one result.
# Only one thread may write it, and every thread must reach every barrier:
# a `syncthreads()` inside an `if` that some threads skip, while they go on running,
# is *barrier divergence* — undefined behaviour on a GPU, reported here.
# (Threads that skip it and then *exit* do release it: the PTX ISA's `exit` says
# "if the exiting threads are holding up the barrier, the barrier is released",
# and `barrier` waits only for non-exited threads; the executor follows that.
# But threads that skip it and go on running are what the ISA forbids:
# an aligned barrier (`bar.sync`, what `syncthreads()` compiles to) in conditional code is
# undefined unless every thread evaluates the condition alike,
# and the CUDA guide asks for a condition the whole block agrees on.)

# %% nbgrader={"grade": false, "grade_id": "dot_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["dot"].show()

# %% nbgrader={"grade": false, "grade_id": "dot", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def dot(a, b, out):
    """out[0] = sum(a * b), one block."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    s = cuda.shared.array(DOT_THREADS, np.float32)
    s[t] = a[t] * b[t] if t < a.size else np.float32(0)
    cuda.syncthreads()
    stride = DOT_THREADS // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[0] = s[0]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "dot_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["dot"].check(dot)

# %% nbgrader={"grade": true, "grade_id": "dot_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["dot"].check(dot, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "dot_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["dot"].diagram(dot)

# %% [markdown] nbgrader={"grade": false, "grade_id": "conv1d_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 11 — 1-D convolution
#
# A convolution with a short kernel `k`: like pooling, with weights and a halo on the right.
# Both `a` and `k` come from shared memory.

# %% nbgrader={"grade": false, "grade_id": "conv1d_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["conv1d"].show()

# %% nbgrader={"grade": false, "grade_id": "conv1d", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def conv1d(a, k, out):
    """out[i] = sum_j a[i + j] * k[j], from shared memory."""
    # roughly 16 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * CONV_BLOCK + t
    sa = cuda.shared.array(CONV_SLOTS, np.float32)
    sk = cuda.shared.array(MAXK, np.float32)
    sa[t] = a[i] if i < a.size else np.float32(0)
    if t < MAXK - 1:
        j = i + CONV_BLOCK
        sa[t + CONV_BLOCK] = a[j] if j < a.size else np.float32(0)
    if t < MAXK:
        sk[t] = k[t] if t < k.size else np.float32(0)
    cuda.syncthreads()
    if i < a.size:
        acc = np.float32(0)  # float32 like the data: a bare 0.0 would be a float64 accumulator
        for j in range(k.size):
            acc += sa[t + j] * sk[j]
        out[i] = acc
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "conv1d_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["conv1d"].check(conv1d)

# %% nbgrader={"grade": true, "grade_id": "conv1d_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["conv1d"].check(conv1d, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "conv1d_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["conv1d"].diagram(conv1d)

# %% [markdown] nbgrader={"grade": false, "grade_id": "block_scan_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 12 — Prefix sum
#
# A prefix sum inside each block (Hillis–Steele).
# The trap: a thread overwrites a value its neighbour has not read yet.
# The executor reports that race deterministically.

# %% nbgrader={"grade": false, "grade_id": "block_scan_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_scan"].show()

# %% nbgrader={"grade": false, "grade_id": "block_scan", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def block_scan(a, out):
    """Inclusive prefix sum of each block's elements."""
    # roughly 14 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SCAN_BLOCK + t
    s = cuda.shared.array(SCAN_BLOCK, np.float32)
    s[t] = a[i] if i < a.size else np.float32(0)
    cuda.syncthreads()
    d = 1
    while d < SCAN_BLOCK:
        v = s[t - d] if t >= d else np.float32(0)
        cuda.syncthreads()  # everyone has read before anyone writes
        s[t] += v
        cuda.syncthreads()
        d *= 2
    if i < a.size:
        out[i] = s[t]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "block_scan_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_scan"].check(block_scan)

# %% nbgrader={"grade": true, "grade_id": "block_scan_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["block_scan"].check(block_scan, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "block_scan_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_scan"].diagram(block_scan)

# %% [markdown] nbgrader={"grade": false, "grade_id": "row_sum_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 13 — Row sum
#
# One block per row, a tree reduction in shared memory (GPU-Puzzles calls it the axis sum).
# *Which* threads work at each level decides how many warps split:
# the budget includes SIMT efficiency (active lanes / 32 per issued warp step).

# %% nbgrader={"grade": false, "grade_id": "row_sum_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["row_sum"].show()

# %% nbgrader={"grade": false, "grade_id": "row_sum", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def row_sum(a, out):
    """out[r] = sum of row r, one block per row, whole warps working."""
    # roughly 13 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = cuda.shared.array(ROW_SUM_BLOCK, np.float32)
    s[t] = a[r, t] if t < a.shape[1] else np.float32(0)
    cuda.syncthreads()
    stride = ROW_SUM_BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[r] = s[0]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "row_sum_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["row_sum"].check(row_sum)

# %% nbgrader={"grade": true, "grade_id": "row_sum_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["row_sum"].check(row_sum, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "row_sum_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["row_sum"].diagram(row_sum)

# %% [markdown] nbgrader={"grade": false, "grade_id": "transpose_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 14 — Transpose through padded shared memory
#
# The first kernel where both memory sides matter:
# reading `a` by rows is coalesced,
# writing `out` by rows of `out` is too — but only if the data goes through shared memory,
# and a tile read by columns hits one bank 32 times (a *bank conflict*) unless it is padded.

# %% nbgrader={"grade": false, "grade_id": "transpose_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["transpose"].show()

# %% nbgrader={"grade": false, "grade_id": "transpose", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def transpose(a, out):
    """out = a.T through a padded shared tile; both sides coalesced."""
    # roughly 11 lines
    ### BEGIN SOLUTION
    tile = cuda.shared.array((TILE, TILE_PAD), np.float32)  # +1: a tile column spreads over 32 banks
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    rows, cols = a.shape
    for j in range(ty, TILE, TILE_ROWS):
        if by + j < rows and bx + tx < cols:
            tile[j, tx] = a[by + j, bx + tx]
    cuda.syncthreads()
    for j in range(ty, TILE, TILE_ROWS):
        if bx + j < cols and by + tx < rows:
            out[bx + j, by + tx] = tile[tx, j]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "transpose_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["transpose"].check(transpose)

# %% nbgrader={"grade": true, "grade_id": "transpose_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["transpose"].check(transpose, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "transpose_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["transpose"].diagram(transpose)

# %% [markdown] nbgrader={"grade": false, "grade_id": "warp_sum_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 15 — Warp reduction with shuffles
#
# Inside a warp, lanes can read each other's registers:
# `cuda.shfl_down_sync(mask, v, offset)` returns lane `laneid + offset`'s `v`;
# a lane whose `laneid + offset` is 32 or more gets its own `v` back
# (the source lane does not wrap around: the top `offset` lanes keep their value).
# No shared memory, no barrier.
# Every lane named in the mask must execute the shuffle.

# %% nbgrader={"grade": false, "grade_id": "warp_sum_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["warp_sum"].show()

# %% nbgrader={"grade": false, "grade_id": "warp_sum", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def warp_sum(a, out):
    """out[w] = sum of warp w's 32 elements, with shuffles."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    v = a[i] if i < a.size else np.float32(0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if i % 32 == 0 and i < a.size:
        out[i // 32] = v
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "warp_sum_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["warp_sum"].check(warp_sum)

# %% nbgrader={"grade": true, "grade_id": "warp_sum_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["warp_sum"].check(warp_sum, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "warp_sum_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["warp_sum"].diagram(warp_sum)

# %% [markdown] nbgrader={"grade": false, "grade_id": "compact_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 16 — Stream compaction with ballot
#
# `cuda.ballot_sync(mask, p)` gives every lane the 32-bit mask of lanes whose predicate is true.
# With `cuda.popc` (count of set bits) each lane finds its place in the packed output:
# stream compaction, the core of filtering and sparse kernels.

# %% nbgrader={"grade": false, "grade_id": "compact_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["compact"].show()

# %% nbgrader={"grade": false, "grade_id": "compact", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def compact(a, out, count):
    """Each warp's positive elements, packed in order, with ballot_sync."""
    # roughly 9 lines
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    lane = i % 32
    v = a[i] if i < a.size else np.float32(0)
    keep = v > 0
    mask = cuda.ballot_sync(0xFFFFFFFF, keep)
    if keep:
        out[i - lane + cuda.popc(mask & ((1 << lane) - 1))] = v
    if lane == 0 and i < a.size:
        count[i // 32] = cuda.popc(mask)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "compact_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["compact"].check(compact)

# %% nbgrader={"grade": true, "grade_id": "compact_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["compact"].check(compact, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "compact_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["compact"].diagram(compact)

# %% [markdown] nbgrader={"grade": false, "grade_id": "histogram_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 17 — Histogram with atomics
#
# Many threads updating the same few counters: `+=` is a read-modify-write race;
# `cuda.atomic.add` is correct but serialises on hot counters (*contention*).
# A per-block copy in shared memory cuts the global atomics to one per bin per block
# — the hidden tests include an input where every value is in one bin.

# %% nbgrader={"grade": false, "grade_id": "histogram_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["histogram"].show()

# %% nbgrader={"grade": false, "grade_id": "histogram", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def histogram(x, counts):
    """counts[b] = number of x == b, privatised in shared memory."""
    # roughly 11 lines
    ### BEGIN SOLUTION
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    h = cuda.shared.array(HIST_BINS, np.int32)
    if t < HIST_BINS:
        h[t] = 0
    cuda.syncthreads()
    if i < x.size:
        cuda.atomic.add(h, x[i], 1)
    cuda.syncthreads()
    if t < HIST_BINS and h[t] > 0:
        cuda.atomic.add(counts, t, h[t])
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "histogram_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["histogram"].check(histogram)

# %% nbgrader={"grade": true, "grade_id": "histogram_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["histogram"].check(histogram, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "histogram_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["histogram"].diagram(histogram)

# %% [markdown] nbgrader={"grade": false, "grade_id": "softmax_rows_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Puzzle 18 — Softmax rows
#
# The shape of real ML kernels (attention's softmax):
# a max, a sum and a normalisation over a row,
# here one warp per row with butterfly shuffles (`cuda.shfl_xor_sync`:
# after 5 steps every lane holds the result).
# Hidden rows hold values near 1000 and −inf.

# %% nbgrader={"grade": false, "grade_id": "softmax_rows_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["softmax_rows"].show()

# %% nbgrader={"grade": false, "grade_id": "softmax_rows", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def softmax_rows(a, out):
    """Softmax of each row, one warp per row, max subtracted."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    r = cuda.blockIdx.x
    c = cuda.threadIdx.x
    v = a[r, c] if c < a.shape[1] else np.float32(-math.inf)
    m = v
    for off in (16, 8, 4, 2, 1):
        m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, off))
    e = math.exp(v - m)
    s = e
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_xor_sync(0xFFFFFFFF, s, off)
    if c < a.shape[1]:
        out[r, c] = e / s
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "softmax_rows_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["softmax_rows"].check(softmax_rows)

# %% nbgrader={"grade": true, "grade_id": "softmax_rows_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["softmax_rows"].check(softmax_rows, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "softmax_rows_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["softmax_rows"].diagram(softmax_rows)

# %% [markdown] nbgrader={"grade": false, "grade_id": "machine_code_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## What the compiler made of your kernels (not graded)
#
# Your `transpose` and `warp_sum` are real numba-cuda kernels:
# the cell below compiles **your** code the way a GPU run would
# — numba-cuda's `compile_ptx` (NVVM) to PTX,
# then NVIDIA's `ptxas` to an sm_90 (Hopper) cubin and `nvdisasm` to SASS,
# the machine code the GPU executes — with no GPU needed (`gpucourse.toolchain`;
# the three kernels share one child process).
# It skips itself while nbgrader grades, and when NVIDIA's compiler wheels are missing.
#
# - **Transpose, padding.**
#   Your kernel is compiled twice: as written (`TILE_PAD = TILE + 1`) and with `TILE_PAD = TILE`,
#   the tile that bank-conflicts.
#   Removing the conflict changes the shared-memory address arithmetic, not the accesses:
#   the `IMAD` before each `STS` (store to shared) multiplies the tile row by the row stride,
#   printed `0x21` (33 floats) against `0x20` (32);
#   on the `LDS` (load from shared) side only the padded kernel lists an `IMAD` by `0x21`
#   — unpadded, `tx * 32` needs no multiply (a shift will do).
#   On the store side of `out` (`out[bx + j, by + tx] = tile[tx,
#   j]`) a warp reads column `j` of the tile, lane `tx` its row `tx`:
#   word `tx * stride + j`, in bank `(tx * stride + j) mod 32`.
#   With stride 33 that bank differs for each of the 32 lanes;
#   with stride 32 it is the same bank for all 32.
#   The counts of `LDS` and `STS` printed are equal in both:
#   a bank conflict is not an extra instruction
#   — the hardware splits the warp's one `LDS` into conflict-free requests (wavefronts),
#   one per distinct address in the busiest bank: 1 padded;
#   unpadded, one per lane the guard lets through — 32 for a full 32-row tile,
#   20 on the visible case (20 rows).
#   That is the number that differs: `bank conflicts 1.0-way` on your check's passing line,
#   a conflict failure naming the ways (20.0-way on the visible case) for the unpadded tile.
# - **Warp reduction.**
#   Each `cuda.shfl_down_sync(0xFFFFFFFF, v,
#   offset)` is one PTX `shfl.sync.down.b32` and one SASS `SHFL.DOWN`
#   (PTX keeps the offset in a register;
#   SASS shows it as an immediate, `0x10` … `0x1`, and `0x1f` is the lane clamp):
#   your loop was unrolled into five straight-line shuffles — no shared memory, no barrier.

# %% nbgrader={"grade": false, "grade_id": "machine_code", "locked": true, "schema_version": 3, "solution": false, "task": false}
import os
import re

if os.environ.get("NBGRADER_EXECUTION"):  # nbgrader sets it while it autogrades or validates: not graded, skip
    print("skipped while nbgrader grades: this cell is not graded (it compiles for seconds)")
elif not gc.toolchain.available():
    print(f"skipped: NVIDIA's compiler wheels are missing ({gc.toolchain.describe()})")
elif lab.not_written(transpose=transpose, warp_sum=warp_sum):
    print(f"write {' and '.join(lab.not_written(transpose=transpose, warp_sum=warp_sum))} first: this cell compiles "
          "your transpose and warp_sum")
else:
    code = lab.machine_code(transpose, warp_sum)
    strides = {}
    for name in ("transpose, TILE_PAD = TILE + 1", "transpose, TILE_PAD = TILE"):
        ptx, sass = code[name]
        strides[name] = set(re.findall(lab.TILE_STRIDE, sass.text))
        print(f"--- {name}: SASS (sm_90), shared-memory address arithmetic and accesses")
        print("\n".join(line for line in sass.text.splitlines() if re.search(lab.TILE_STRIDE + "|LDS|STS|BAR", line)))
        assert sass.count("STS") >= 1 and sass.count("LDS") >= 1 and sass.count("BAR") >= 1, \
            f"{name}: expected shared stores, loads and a barrier in the SASS, got {dict(sass.opcodes())}"
    print("tile row stride:", {k: sorted(v) for k, v in strides.items()})
    if strides["transpose, TILE_PAD = TILE + 1"] == {"0x21"} and strides["transpose, TILE_PAD = TILE"] == {"0x20"}:
        padded, plain = code["transpose, TILE_PAD = TILE + 1"][1], code["transpose, TILE_PAD = TILE"][1]
        n_padded = len(re.findall(lab.TILE_STRIDE, padded.text))
        n_plain = len(re.findall(lab.TILE_STRIDE, plain.text))
        print(f"IMADs by the row stride: {n_padded} padded (stores and loads), {n_plain} unpadded (stores only)")
        assert n_padded > n_plain >= 1  # unpadded, the loads' tx * 32 is formed without a multiply
        print("LDS, STS per kernel:",
              {k: (v[1].count("LDS"), v[1].count("STS")) for k, v in code.items() if "transpose" in k})
        assert (padded.count("LDS"), padded.count("STS")) == (plain.count("LDS"), plain.count("STS"))  # same work
    else:  # a right transpose without a (TILE, TILE_PAD) tile — an XOR swizzle, say — has no row stride to compare
        print("your tile's rows are not TILE_PAD apart (an XOR swizzle?): the padded/unpadded comparison needs a "
              "tile of shape (TILE, TILE_PAD); your kernel's SASS is printed above as it is")

    ptx, sass = code["warp_sum"]
    shfl_ptx = [line.strip() for line in ptx.splitlines() if "shfl.sync" in line]
    print("--- warp_sum: PTX (numba-cuda compile_ptx)", *shfl_ptx, sep="\n")
    print("--- warp_sum: SASS (sm_90)", sass.excerpt(("SHFL",)), sep="\n")
    offsets = re.findall(r"SHFL\.DOWN PT, R\d+, R\d+, (0x[0-9a-f]+), 0x1f", sass.text)
    if len(shfl_ptx) != 5 and all(".b32" in line for line in shfl_ptx):
        print(f"your warp_sum shuffles {len(shfl_ptx)} times, not 5: a 64-bit value (a float64) is shuffled as two"
              " 32-bit halves — keep the sum a np.float32")
    elif all("shfl.sync.down.b32" in line for line in shfl_ptx):  # the stub's shfl_down_sync tree
        assert sorted(int(o, 16) for o in offsets) == [1, 2, 4, 8, 16] and sass.count("SHFL") == 5, \
            f"expected 5 SHFL.DOWN with offsets 16, 8, 4, 2, 1, got {offsets}"
    else:  # shfl_xor_sync (a butterfly) is right too: its SASS says SHFL.BFLY
        print("your warp_sum shuffles another way (shfl_xor_sync: SHFL.BFLY), also right")
    assert sass.count("LDS") == sass.count("STS") == sass.count("BAR") == 0  # registers only

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test prints a ✓ line with what the instrumented executor measured;
# then lab 5 (`labs/lab05_kernels/`) asks for performance:
# coalescing, a reduction whose warps don't diverge, a tiled matmul, occupancy.
