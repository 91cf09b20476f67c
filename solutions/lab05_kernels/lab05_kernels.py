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
# # Lab 5 — Grids, blocks, warps and the SM
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab05_kernels/lab05_kernels.ipynb)
#
# Companion of `course/05_grids_blocks_warps.ipynb`. Seven exercises, 3 points each (1 visible test, 2 hidden):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | implement | a map kernel with a guard (1-D, n not a multiple of the block) |
# | 2 | implement | a 2-D kernel on a non-square shape, indexed so that warps read coalesced |
# | 3 | implement | a block-level reduction in shared memory whose warps don't diverge |
# | 4 | implement | a tiled matrix multiply in shared memory, race-free |
# | 5 | compute | an occupancy calculator that agrees with NVIDIA's own (`cuda_occupancy.h`) |
# | 6 | diagnose | regroup a data-dependent loop so each warp's lanes do similar work: SIMT efficiency ≥ 80 %, accesses still coalesced |
# | 7 | predict, measure | waves and the tail-effect slowdown of a grid on an H100's 132 SMs, then measured on a pool of slots |
#
# **How kernels are graded.** You write `@cuda.jit` kernels (`cuda` is numba-cuda on a GPU; without one, the
# course's executor with numba-cuda's API). The checker runs your kernel on the course's *instrumented* SIMT executor
# (`gpucourse.simt`), which reports per thread how often it read and wrote global and shared memory, per warp how
# many lanes were active in each step (SIMT efficiency), every data race, every `syncthreads()` only part of a
# block reaches, and every use of shared memory no thread wrote — deterministically, on every machine. On a GPU
# your kernel also runs on the device and must agree. Hidden tests use sizes that are not multiples of the block.
#
# Replace `raise NotImplementedError()` with your code. Use **Validate** before you submit.

# %% nbgrader={"grade": false, "grade_id": "colab_setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Colab set-up (does nothing outside Google Colab): install the course (student edition), pick the backend.
import os, shutil, subprocess, sys
COURSE = "https://github.com/gpu-course/gpu-course/releases/download/student-edition/gpucourse-0.1.0-py3-none-any.whl"  # instructors: `python -m gpucourse.colab retarget OWNER/REPO@BRANCH`
if "google.colab" in sys.modules or os.environ.get("GPUCOURSE_INSTALL"):
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["--no-deps", "--force-reinstall", os.environ.get("GPUCOURSE_INSTALL") or COURSE], check=True)
    if subprocess.run([sys.executable, "-c", "import grader.answers"], capture_output=True).returncode == 0:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", "gpucourse"], check=True)
        raise RuntimeError("this build of the course holds the answers (grader/answers): install the student edition")
    subprocess.run(pip + ['numba-cuda>=0.20'], check=True)
    gpu = shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    os.environ["GPUCOURSE_BACKEND"] = "gpu" if gpu else "cpu"
    print("course installed; backend:", os.environ["GPUCOURSE_BACKEND"],
          "" if gpu else "(no GPU: Runtime > Change runtime type > GPU, then run this cell again)")


# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import math

import numpy as np

import gpucourse as gc
from gpucourse import simt
from grader.labs import lab05_kernels as lab

be = gc.setup()
cuda = be.cuda  # numba.cuda on a GPU; on CPU the course's executor (gpucourse.simt.cuda), numba-cuda's API
BLOCK = lab.REDUCE_BLOCK  # 128 threads per block in exercise 3
TILE = lab.TILE  # 8×8 tiles in exercise 4
REGROUP_BLOCK = lab.REGROUP_BLOCK  # 256 threads per block, one tile of 256 elements, in exercise 6

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex1_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — A map with a guard
#
# One thread per element: thread `i = cuda.grid(1)` (= `blockIdx.x * blockDim.x + threadIdx.x`) handles `x[i]`.
# The grid is rounded *up* to whole blocks, so the last block has threads past the end of the array. Without a
# guard they read and write out of bounds — on a GPU that silently corrupts memory; here it is reported.

# %% nbgrader={"grade": false, "grade_id": "ex1_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["scale_shift"].show()

# %% nbgrader={"grade": false, "grade_id": "ex1_scale_shift", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def scale_shift(x, out, a, b):
    """out[i] = a * x[i] + b, one thread per element."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + b
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex1_scale_shift_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["scale_shift"].check(scale_shift)

# %% nbgrader={"grade": true, "grade_id": "ex1_scale_shift_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["scale_shift"].check(scale_shift, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex2_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — 2-D indexing, coalesced
#
# `cuda.grid(2)` returns `(x, y)`. A warp is 32 *consecutive* threads of a block, counted with `threadIdx.x`
# fastest: with (16, 8) blocks a warp is 16 threads along x by 2 along y. If x walks along a row (the contiguous
# axis of a row-major array), a warp's 16 reads fall into a few 32-byte sectors; if x walks down a column, each
# read lands in a different sector.

# %% nbgrader={"grade": false, "grade_id": "ex2_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["ramp_2d"].show()

# %% nbgrader={"grade": false, "grade_id": "ex2_ramp_2d", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def ramp_2d(a, out):
    """out[r, c] = a[r, c] * (r + 1) - c, one thread per element, coalesced."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    c, r = cuda.grid(2)  # x -> column (contiguous), y -> row
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * (r + 1) - c
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex2_ramp_2d_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["ramp_2d"].check(ramp_2d)

# %% nbgrader={"grade": true, "grade_id": "ex2_ramp_2d_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["ramp_2d"].check(ramp_2d, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex3_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — A block-level reduction in shared memory
#
# Shared memory (공유 메모리) is per block and fast; `cuda.syncthreads()` makes every thread of the block wait
# until all have arrived, so what one thread wrote before the barrier is visible to all after it. The classic
# tree halves the number of working threads each level. *Which* threads work matters: `if tid % (2*stride) == 0`
# keeps a few lanes busy in *every* warp (all warps diverge at every level), while `if tid < stride` keeps whole
# warps busy or idle until `stride < 32`.

# %% nbgrader={"grade": false, "grade_id": "ex3_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_sum"].show()

# %% nbgrader={"grade": false, "grade_id": "ex3_block_sum", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def block_sum(x, partial):
    """partial[blockIdx.x] = sum of this block's BLOCK elements of x (0 past the end)."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s = cuda.shared.array(BLOCK, np.float64)
    s[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:  # whole warps work or rest until stride < 32
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = s[0]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex3_block_sum_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_sum"].check(block_sum)

# %% nbgrader={"grade": true, "grade_id": "ex3_block_sum_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["block_sum"].check(block_sum, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex4_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — Tiled matrix multiply in shared memory
#
# The naive kernel reads a whole row of `A` and a whole column of `B` from global memory per output: `2k`
# reads per thread. With tiles, a block loads a TILE×TILE piece of each into shared memory once and every thread
# of the block reuses it: `2·ceil(k/TILE)` global reads per thread. Two barriers per step: after the loads (so
# nobody reads a tile before it is complete) and after the products (so nobody overwrites a tile someone is still
# reading). GPU-Puzzles' checker passes a kernel missing them when the threads happen to run in a lucky order;
# this one reports the race every time.

# %% nbgrader={"grade": false, "grade_id": "ex4_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["tiled_matmul"].show()

# %% nbgrader={"grade": false, "grade_id": "ex4_tiled_matmul", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def tiled_matmul(A, B, C):
    """C = A @ B with TILE x TILE shared-memory tiles; any shapes."""
    # roughly 16 lines
    ### BEGIN SOLUTION
    sA = cuda.shared.array((TILE, TILE), np.float32)
    sB = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k = A.shape
    n = B.shape[1]
    acc = 0.0
    for t in range((k + TILE - 1) // TILE):
        p = t * TILE
        sA[ty, tx] = A[row, p + tx] if row < m and p + tx < k else 0.0
        sB[ty, tx] = B[p + ty, col] if p + ty < k and col < n else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if row < m and col < n:
        C[row, col] = acc
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex4_tiled_matmul_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["tiled_matmul"].check(tiled_matmul)

# %% nbgrader={"grade": true, "grade_id": "ex4_tiled_matmul_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["tiled_matmul"].check(tiled_matmul, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex5_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — An occupancy calculator
#
# An SM keeps a block resident only if it has room for all of it at once: its warps, its registers and its
# shared memory. More resident warps = more warps to switch to while others wait for memory. Compute how many
# blocks fit, the occupancy, and which resource runs out first — exactly as NVIDIA's own calculator
# (`cuda_occupancy.h`, shown in §5.3) does. The rule that catches most people: registers are not one pool of
# 65,536 per SM but four pools of 16,384, one per SM sub-partition (each with its own warp scheduler), and a warp
# lives in one of them.

# %% nbgrader={"grade": false, "grade_id": "ex5_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["occupancy"].show()
print("\nH100 limits:", lab.LIMITS["H100"])

# %% nbgrader={"grade": false, "grade_id": "ex5_occupancy", "locked": false, "schema_version": 3, "solution": true, "task": false}
def occupancy(threads_per_block, registers_per_thread, shared_bytes_per_block, limits, opt_in=False):
    """(blocks per SM, occupancy in [0, 1], limiting resource) for one kernel configuration."""
    # roughly 20 lines
    ### BEGIN SOLUTION
    def round_up(x, unit):
        return math.ceil(x / unit) * unit

    warps = math.ceil(threads_per_block / 32)
    parts = limits["sub_partitions"]
    regs_per_warp = round_up(registers_per_thread * 32, limits["register_alloc_unit"])
    if (regs_per_warp * warps > limits["registers_per_block"]
            or regs_per_warp * round_up(warps, parts) > limits["registers_per_block"]):
        by_registers = 0  # the launch fails the per-block register check
    else:
        warps_per_part = (limits["registers"] // parts) // regs_per_warp
        by_registers = warps_per_part * parts // warps
    smem = round_up(shared_bytes_per_block + limits["shared_reserved_per_block"], limits["shared_alloc_unit"])
    per_block = limits["shared_per_block_optin"] if opt_in else limits["shared_per_block"]
    by_shared = 0 if shared_bytes_per_block > per_block else limits["shared_memory_bytes"] // smem
    allowed = {
        "warps": limits["max_warps"] // warps,
        "registers": by_registers,
        "shared_memory": by_shared,
        "blocks": limits["max_blocks"],
    }
    blocks = min(allowed.values())
    limiter = next(k for k in ("warps", "registers", "shared_memory", "blocks") if allowed[k] == blocks)
    return blocks, blocks * warps / limits["max_warps"], limiter
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex5_occupancy_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["occupancy"].check(occupancy)

# %% nbgrader={"grade": true, "grade_id": "ex5_occupancy_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["occupancy"].check(occupancy, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex6_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — Diagnose and fix a divergent loop
#
# A short `if/else` is often no divergence at all on a real GPU: the compiler if-converts it into both sides plus a
# select (`FSEL`/`SEL`), with no branch. A loop whose trip count depends on the data cannot be if-converted: the
# warp keeps issuing the loop body until its *last* lane is done, finished lanes masked off, and the SASS shows the
# branch and the reconvergence (`BSSY`/`BSYNC`) around it. The kernel below halves each element until it is at
# most 1 and counts the halvings: elements around 2 take one or two trips, elements around 10⁴ take fourteen.
# When a warp mixes both, its short lanes idle through the long ones' trips. Run it through the instrumented
# executor to see its SIMT efficiency and its sectors per request, then write `halvings_regrouped`: same output,
# same launch, each warp's lanes given elements of similar work — without giving up the contiguous global
# accesses (the checker counts the sectors of `x` and `out` too). `lab.tile_order(x)` is the per-tile sort by
# work the host prepared for you; shared memory is the place to regroup.

# %% nbgrader={"grade": false, "grade_id": "ex6_given", "locked": true, "schema_version": 3, "solution": false, "task": false}
@cuda.jit
def halvings_divergent(x, order, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        n = 0
        while v > 1.0:  # trip count ceil(log2 x[i]): data-dependent, so a real branch
            v = v * 0.5
            n += 1
        out[i] = n + v


x_demo = lab.problems["halvings_regrouped"].visible[0].args[0]
order_demo = lab.tile_order(x_demo)
report = simt.run(halvings_divergent, math.ceil(x_demo.size / REGROUP_BLOCK), REGROUP_BLOCK,
                  x_demo, order_demo, np.zeros_like(x_demo))
print(report)
print(f"sectors per request: x {report.sectors_per_request('x'):.2f}, out {report.sectors_per_request('out'):.2f}")
assert report.simt_efficiency < lab.MIN_EFFICIENCY - 0.15, report.simt_efficiency  # far below the budget
lab.problems["halvings_regrouped"].show()

# %% nbgrader={"grade": false, "grade_id": "ex6_halvings_regrouped", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def halvings_regrouped(x, order, out):
    """Same result as halvings_divergent; each warp runs elements of similar trip count; x and out contiguous."""
    # roughly 20 lines
    ### BEGIN SOLUTION
    tile = cuda.shared.array(REGROUP_BLOCK, np.float64)  # this block's elements, then their results
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * REGROUP_BLOCK + t
    if i < x.size:
        tile[t] = x[i]  # coalesced load, as the given kernel
    cuda.syncthreads()
    j = 0
    res = 0.0
    if i < x.size:
        j = order[i]  # thread t works on the tile's t-th shortest loop: neighbouring lanes, similar trip counts
        v = tile[j]
        n = 0
        while v > 1.0:
            v = v * 0.5
            n += 1
        res = n + v
    cuda.syncthreads()  # everyone has read its input before results overwrite the tile
    if i < x.size:
        tile[j] = res
    cuda.syncthreads()
    if i < x.size:
        out[i] = tile[t]  # coalesced store
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex6_halvings_regrouped_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["halvings_regrouped"].check(halvings_regrouped)

# %% nbgrader={"grade": true, "grade_id": "ex6_halvings_regrouped_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["halvings_regrouped"].check(halvings_regrouped, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex7_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 7 — Predict, measure, explain: wave quantization
#
# Occupancy (exercise 5) says how many blocks one SM holds at once; an H100 SXM has 132 SMs, so one *wave* is
# 132 × blocks-per-SM blocks. A grid that needs one block more than a whole number of waves runs a last wave with
# almost every SM idle — and that wave costs as long as a full one (NVIDIA calls this wave quantization, the tail
# effect). **Predict** first: write `wave_prediction` from the spec below.

# %% nbgrader={"grade": false, "grade_id": "ex7_spec", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["wave_prediction"].show()

# %% nbgrader={"grade": false, "grade_id": "ex7_wave_prediction", "locked": false, "schema_version": 3, "solution": true, "task": false}
def wave_prediction(blocks, blocks_per_sm, sms):
    """(waves, slowdown) of a grid of equal blocks on `sms` SMs holding `blocks_per_sm` each."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    per_wave = sms * blocks_per_sm
    waves = math.ceil(blocks / per_wave)
    return waves, waves * per_wave / blocks
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex7_wave_prediction_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["wave_prediction"].check(wave_prediction)

# %% nbgrader={"grade": true, "grade_id": "ex7_wave_prediction_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["wave_prediction"].check(wave_prediction, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex7_measure_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# **Measure.** This machine may have no GPU, but the quantization belongs to any pool of slots that each run one
# block at a time and take the next when free — the block scheduler's rule. `waves.measured_waves` runs `n` equal
# blocks (each a 50 ms sleep, so a busy CPU does not distort it) on 4 worker threads, a toy GPU of 4 SMs × 1
# block, and prints the time in units of one block, best of 3, next to your prediction.

# %% nbgrader={"grade": false, "grade_id": "ex7_measure", "locked": true, "schema_version": 3, "solution": false, "task": false}
from gpucourse import waves

SLOTS = 4  # a toy GPU: 4 SMs, 1 block resident on each
for n in (3, 4, 5, 8, 9):
    measured = waves.measured_waves(n, SLOTS)
    try:
        predicted = wave_prediction(n, 1, SLOTS)
    except Exception as exc:  # an unfinished exercise: say so instead of failing
        predicted = f"not done yet ({exc.__class__.__name__})"
    print(f"{n} blocks on {SLOTS} slots: measured {measured:.2f} waves; your prediction (waves, slowdown): {predicted}")
    assert abs(measured - math.ceil(n / SLOTS)) < 0.5, (n, measured)  # whole waves, ±0.5

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex7_explain", "locked": true, "schema_version": 3, "solution": false, "task": false}
# **Explain.** 5 blocks take as long as 8 (the printed waves above): the fifth block runs alone while three slots
# idle. On an H100 the same happens at 132 × blocks-per-SM: a GEMM or a grid sized one block over a wave pays
# almost 2× in its last wave (your slowdown for 133 blocks at 1 block per SM). The cure is to size the grid (or the
# tile, or a persistent kernel's loop) to a whole number of waves — or so many waves that the tail is small.

# %% [markdown] nbgrader={"grade": false, "grade_id": "pictures_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## What your kernels did
#
# Which block wrote each element (exercise 1 and 2), which warp wrote each output of the regrouped kernel (exercise 6:
# warps still write contiguous runs — the regrouping happened in shared memory), and which block computed each element
# of `C` (exercise 4).

# %% nbgrader={"grade": false, "grade_id": "pictures", "locked": true, "schema_version": 3, "solution": false, "task": false}
import matplotlib.pyplot as plt

rng = np.random.default_rng(0)
runs = [
    ("scale_shift", lambda: (scale_shift, 3, 32, [np.ones(70, np.float32), np.zeros(70, np.float32), 2.0, 1.0]), "out", "block"),
    ("ramp_2d", lambda: (ramp_2d, (2, 2), (16, 8), [np.ones((13, 21), np.float32), np.zeros((13, 21), np.float32)]), "out", "block"),
    ("tiled_matmul", lambda: (tiled_matmul, (2, 2), (TILE, TILE), [np.ones((13, 10), np.float32), np.ones((10, 11), np.float32), np.zeros((13, 11), np.float32)]), "C", "block"),
    ("halvings_regrouped", lambda: (halvings_regrouped, 2, REGROUP_BLOCK, [x_demo[:300], lab.tile_order(x_demo[:300]), np.zeros(300)]), "out", "warp"),
]
fig, axs = plt.subplots(2, 2, figsize=(12, 7))
for ax, (name, make, array, by) in zip(axs.flat, runs):
    try:
        kernel, grid, block, args = make()
        simt.plot_access(simt.run(kernel, grid, block, *args), array, "w", by, ax=ax)
    except Exception as exc:  # an unfinished exercise: say so instead of failing
        ax.set_title(f"{name}: not done yet ({exc.__class__.__name__})")
plt.tight_layout()
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**. Every visible test prints a ✓ line with what the
# instrumented executor measured. The hidden tests use other sizes, none a multiple of the block.
