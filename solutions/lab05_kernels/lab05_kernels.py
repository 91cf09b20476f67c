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
# Companion of `course/05_grids_blocks_warps.ipynb`.
# Seven exercises, 3 points each (a visible test worth 1, a hidden one worth 2):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | implement | a map kernel with a guard (1-D, n not a multiple of the block) |
# | 2 | implement | a 2-D kernel on a non-square shape, indexed so that warps read coalesced |
# | 3 | implement | a block-level reduction in shared memory whose warps don't diverge |
# | 4 | implement | a register-blocked matmul: rectangular shared-memory tiles, two outputs per thread, race-free |
# | 5 | use a model | the register budget of an occupancy target: the inverse of the course's occupancy model |
# | 6 | diagnose | regroup a data-dependent loop so each warp's lanes do similar work: SIMT efficiency ≥ 80 %, accesses still coalesced |
# | 7 | predict, measure | waves and the tail-effect slowdown of a grid on an H100's 132 SMs, then measured on a pool of slots |
#
# **How kernels are graded.**
# You write `@cuda.jit` kernels (`cuda` is numba-cuda on a GPU;
# without one, the course's executor with numba-cuda's API).
# The checker runs your kernel on the course's *instrumented* SIMT executor (`gpucourse.simt`),
# which reports per thread how often it read and wrote global and shared memory,
# per warp how many lanes were active in each step (SIMT efficiency), every data race,
# every `syncthreads()` only part of a block reaches,
# and every use of shared memory no thread wrote — deterministically, on every machine.
# On a GPU your kernel also runs on the device and must agree.
# Hidden tests use sizes that are not multiples of the block.
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
from gpucourse import simt
from grader.labs import lab05_kernels as lab

be = gc.setup()
cuda = be.cuda  # numba.cuda on a GPU; on CPU the course's executor (gpucourse.simt.cuda), numba-cuda's API
BLOCK = lab.REDUCE_BLOCK  # 128 threads per block in exercise 3
TM, TN, TK = lab.TILE_M, lab.TILE_N, lab.TILE_K  # exercise 4: 16×16 tiles of C, k in steps of 8
REGROUP_BLOCK = lab.REGROUP_BLOCK  # 256 threads per block, one tile of 256 elements, in exercise 6

# %% [markdown] nbgrader={"grade": false, "grade_id": "scale_shift_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — A map with a guard
#
# One thread per element: thread `i = cuda.grid(1)`
# (= `blockIdx.x * blockDim.x + threadIdx.x`) handles `x[i]`.
# The grid is rounded *up* to whole blocks, so the last block has threads past the end of the array.
# Without a guard they read and write out of bounds — on a GPU that silently corrupts memory,
# or faults with an illegal address (or crashes later); here it is reported.

# %% nbgrader={"grade": false, "grade_id": "scale_shift_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["scale_shift"].show()

# %% nbgrader={"grade": false, "grade_id": "scale_shift", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def scale_shift(x, out, a, b):
    """out[i] = a * x[i] + b, one thread per element."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    if i < x.size:
        out[i] = np.float32(a) * x[i] + np.float32(b)  # a, b: Python floats, float64 in a kernel
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "scale_shift_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["scale_shift"].check(scale_shift)

# %% nbgrader={"grade": true, "grade_id": "scale_shift_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["scale_shift"].check(scale_shift, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ramp_2d_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — 2-D indexing, coalesced
#
# `cuda.grid(2)` returns `(x, y)`.
# A warp is 32 *consecutive* threads of a block, counted with `threadIdx.x` fastest:
# with (16, 8) blocks a warp is 16 threads along x by 2 along y.
# If x walks along a row (the contiguous axis of a row-major array),
# the warp reads 16 neighbouring float32s (64 bytes) of each of its 2 rows:
# 4 32-byte sectors per request when the rows start on 32-byte boundaries,
# up to 6 when they do not (a row of 21 float32s is 84 bytes: the visible case's rows are not
# aligned; the checker's budget allows for it).
# If x walks down a column, its 16 x-lanes read 16 different rows,
# a sector each (its 2 y-lanes read neighbouring columns of one row: the same sector):
# 16 sectors per request, 4× as many.

# %% nbgrader={"grade": false, "grade_id": "ramp_2d_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["ramp_2d"].show()

# %% nbgrader={"grade": false, "grade_id": "ramp_2d", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def ramp_2d(a, out):
    """out[r, c] = a[r, c] * (r + 1) - c, one thread per element, coalesced."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    c, r = cuda.grid(2)  # x -> column (contiguous), y -> row
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * np.float32(r + 1) - np.float32(c)  # float32 arithmetic: r, c are int64
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ramp_2d_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["ramp_2d"].check(ramp_2d)

# %% nbgrader={"grade": true, "grade_id": "ramp_2d_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["ramp_2d"].check(ramp_2d, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "block_sum_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — A block-level reduction in shared memory
#
# Shared memory (공유 메모리) is per block and fast;
# `cuda.syncthreads()` makes every thread of the block wait until all have arrived,
# so what one thread wrote before the barrier is visible to all after it.
# The classic tree halves the number of working threads each level.
# *Which* threads work matters.
# `if tid % (2*stride) == 0` (interleaved) keeps a few lanes busy in *every* warp while `stride <
# 32`: all four warps split at each of those five levels;
# at stride 32 one lane each of warps 0 and 2 works,
# at stride 64 one lane of warp 0 (those warps split,
# the others idle whole) — 20 + 2 + 1 = 23 warp splits per block of 128.
# `if tid < stride` (sequential) keeps whole warps busy or idle while `stride >= 32`
# (no warp splits), and only below 32 does the one remaining warp split: 5 per block.

# %% nbgrader={"grade": false, "grade_id": "block_sum_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_sum"].show()

# %% nbgrader={"grade": false, "grade_id": "block_sum", "locked": false, "schema_version": 3, "solution": true, "task": false}
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

# %% nbgrader={"grade": true, "grade_id": "block_sum_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["block_sum"].check(block_sum)

# %% nbgrader={"grade": true, "grade_id": "block_sum_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["block_sum"].check(block_sum, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "tiled_matmul_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — A register-blocked matmul with rectangular tiles
#
# §5.7's tiled kernel cut global reads from `2k` to `2·ceil(k/TILE)` per thread,
# but each product still costs two shared-memory reads (`sA[ty, j]` and `sB[j, tx]`):
# two words loaded from shared memory per multiply-add,
# and in its machine code more shared-memory load instructions than multiply-adds
# (the last cell prints the counts).
# Real GEMM kernels take the next step, **register blocking**:
# each thread computes several outputs and reuses each value it loaded from shared memory for all of
# them.
# Here a thread computes *two* outputs of one column, rows `ty` and `ty + 8`:
# per `j` it reads `sA[ty, j]`, `sA[ty + 8, j]` and `sB[j,
# tx]` once — 3 shared reads for 2 products instead of 4
# — and the block needs half the threads (16 × 8 for a 16 × 16 tile of `C`).
# The k axis is cut into slabs of `TK = 8`, so the A tile is 16 × 8 and the B tile 8 × 16:
# neither has the block's shape.
# The B slab maps onto the threads as is;
# for the A slab, number the threads `t = ty * 16 + tx` and let thread `t` load element `(t // 8,
# t % 8)`, so a warp's 32 loads are 4 runs of 8 neighbouring floats (coalesced;
# `sA[tx, ty]` would read down 16 rows).
# Keep both `cuda.syncthreads()`, guard every load (np.float32(0) outside A and B) and both stores — `m`,
# `k` and `n` are not multiples of the tiles,
# and the second row `ty + 8` can fall outside `C` when the first does not.
# Start the two accumulators at `np.float32(0.0)`:
# the last cell shows what `0.0` (a float64 in numba) costs in the machine code.

# %% nbgrader={"grade": false, "grade_id": "tiled_matmul_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["tiled_matmul"].show()

# %% nbgrader={"grade": false, "grade_id": "tiled_matmul", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def tiled_matmul(A, B, C):
    """C = A @ B: (TM, TK) and (TK, TN) float32 tiles in shared memory, two outputs per thread; any shapes."""
    # roughly 25 lines
    ### BEGIN SOLUTION
    sA = cuda.shared.array((TM, TK), np.float32)
    sB = cuda.shared.array((TK, TN), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TM  # first row of this block's tile of C
    r0, r1 = row0 + ty, row0 + TM // 2 + ty  # this thread's two rows of C
    col = cuda.blockIdx.x * TN + tx
    m, k = A.shape
    n = B.shape[1]
    t = ty * TN + tx
    ar, ac = t // TK, t % TK  # this thread's element of the A slab: 8 neighbouring threads read one row of A
    acc0 = np.float32(0.0)  # float32 registers: one FFMA per product (0.0 would make them float64)
    acc1 = np.float32(0.0)
    for p in range(0, k, TK):
        sA[ar, ac] = A[row0 + ar, p + ac] if row0 + ar < m and p + ac < k else np.float32(0.0)
        sB[ty, tx] = B[p + ty, col] if p + ty < k and col < n else np.float32(0.0)
        cuda.syncthreads()  # both slabs complete before anyone reads them
        for j in range(TK):
            b = sB[j, tx]  # one shared read, used for both outputs
            acc0 += sA[ty, j] * b
            acc1 += sA[TM // 2 + ty, j] * b
        cuda.syncthreads()  # nobody overwrites a slab someone is still reading
    if col < n:
        if r0 < m:
            C[r0, col] = acc0
        if r1 < m:
            C[r1, col] = acc1
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "tiled_matmul_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["tiled_matmul"].check(tiled_matmul)

# %% nbgrader={"grade": true, "grade_id": "tiled_matmul_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["tiled_matmul"].check(tiled_matmul, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "max_registers_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — How many registers may a thread use?
#
# An SM keeps a block resident only if it has room for all of it at once:
# its warps, its registers and its shared memory.
# §5.3's model, `gc.occupancy.occupancy` (NVIDIA's `cuda_occupancy.h`, rule by rule),
# answers the forward question: *with r registers per thread, how many blocks fit?*
# A kernel author usually faces the inverse one:
# *the kernel must keep 3 blocks per SM resident to hide its memory latency
# — how many registers may the compiler give each thread?*
# That is what `__launch_bounds__(threads, min_blocks)` asks nvcc for,
# and what a register cap (`-maxrregcount`) sets.
# Answer it with the model: find the largest register count that still keeps the target,
# and say what limits the resident blocks there — or that no register count can reach it.
# Remember how registers are granted (per warp, in units of 256, from one of four sub-partitions),
# and check your function on the register count one past your answer.

# %% nbgrader={"grade": false, "grade_id": "max_registers_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["max_registers"].show()
print("\nH100 limits:", lab.LIMITS["H100"])
for regs in (64, 72):  # the forward question, for one register count at a time
    print(f"256 threads × {regs} registers:", gc.occupancy.occupancy(256, regs, 0, lab.LIMITS["H100"]))

# %% nbgrader={"grade": false, "grade_id": "max_registers", "locked": false, "schema_version": 3, "solution": true, "task": false}
def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    """(the most registers per thread that keep target_blocks blocks resident per SM or None, the limiter there)."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    def model(registers):
        return gc.occupancy.occupancy(threads_per_block, registers, shared_bytes_per_block, limits, opt_in=opt_in)

    fits = [r for r in range(1, limits["max_registers_per_thread"] + 1) if model(r).blocks_per_sm >= target_blocks]
    best = max(fits) if fits else None
    return best, model(best or 1).limiter
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "max_registers_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["max_registers"].check(max_registers)

# %% nbgrader={"grade": true, "grade_id": "max_registers_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["max_registers"].check(max_registers, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "halvings_regrouped_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — Diagnose and fix a divergent loop
#
# A short `if/else` often leaves no branch on a real GPU:
# the compiler if-converts it into both sides plus a select (`FSEL`/`SEL`).
# Every lane then computes both sides, so it still costs the sum of the two paths (§5.5)
# — but no branch, no reconvergence, nothing to serialize beyond that.
# A loop whose trip count depends on the data cannot be if-converted:
# the warp keeps issuing the loop body until its *last* lane is done, finished lanes masked off,
# and the SASS shows the branch and the reconvergence (`BSSY`/`BSYNC`) around it.
# The kernel below halves each element until it is at most 1 and counts the halvings:
# elements around 2 take one or two trips, elements around 10⁴ take fourteen.
# When a warp mixes both, its short lanes idle through the long ones' trips.
# Run it through the instrumented executor to see its SIMT efficiency and its sectors per request,
# then write `halvings_regrouped`: same output, same launch,
# each warp's lanes given elements of similar work
# — without giving up the contiguous global accesses
# (the checker counts the sectors of `x` and `out` too).
# `lab.tile_order(x)` is the per-tile sort by work the host prepared for you,
# longest loop first (so the partly empty last warp of a tile gets the shortest loops);
# shared memory is the place to regroup.

# %% nbgrader={"grade": false, "grade_id": "halvings_regrouped_given", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% nbgrader={"grade": false, "grade_id": "halvings_regrouped_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["halvings_regrouped"].show()

# %% nbgrader={"grade": false, "grade_id": "halvings_regrouped", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def halvings_regrouped(x, order, out):
    """Same result as halvings_divergent; each warp runs elements of similar trip count; x and out contiguous."""
    # roughly 16 lines
    ### BEGIN SOLUTION
    tile = cuda.shared.array(REGROUP_BLOCK, np.float64)  # this block's elements, then their results
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * REGROUP_BLOCK + t
    if i < x.size:
        tile[t] = x[i]  # coalesced load, as the given kernel
    cuda.syncthreads()
    if i < x.size:
        j = order[i]  # thread t works on the tile's t-th longest loop: neighbouring lanes, similar trip counts
        v = tile[j]
        n = 0
        while v > 1.0:
            v = v * 0.5
            n += 1
        tile[j] = n + v  # only this thread reads or writes slot j in this phase: no barrier needed before it
    cuda.syncthreads()
    if i < x.size:
        out[i] = tile[t]  # coalesced store
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "halvings_regrouped_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["halvings_regrouped"].check(halvings_regrouped)

# %% nbgrader={"grade": true, "grade_id": "halvings_regrouped_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["halvings_regrouped"].check(halvings_regrouped, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "wave_prediction_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 7 — Predict, measure, explain: wave quantization
#
# Occupancy (§5.3's model, exercise 5) says how many blocks one SM holds at once;
# an H100 SXM has 132 SMs, so one *wave* is 132 × blocks-per-SM blocks.
# A grid that needs one block more than a whole number of waves runs a last wave with almost every
# SM idle — and that wave costs as long as a full one (NVIDIA calls this wave quantization,
# the tail effect).
# **Predict** first: write `wave_prediction` from the spec below.

# %% nbgrader={"grade": false, "grade_id": "wave_prediction_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["wave_prediction"].show()

# %% nbgrader={"grade": false, "grade_id": "wave_prediction", "locked": false, "schema_version": 3, "solution": true, "task": false}
def wave_prediction(blocks, blocks_per_sm, sms):
    """(waves, slowdown) of a grid of equal blocks on `sms` SMs holding `blocks_per_sm` each."""
    # roughly 3 lines
    ### BEGIN SOLUTION
    per_wave = sms * blocks_per_sm
    waves = math.ceil(blocks / per_wave)
    return waves, waves * per_wave / blocks
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "wave_prediction_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["wave_prediction"].check(wave_prediction)

# %% nbgrader={"grade": true, "grade_id": "wave_prediction_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["wave_prediction"].check(wave_prediction, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "wave_prediction_measure_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# **Measure.**
# This machine may have no GPU, but the quantization belongs to any pool of slots that each run one
# block at a time and take the next when free — the block scheduler's rule.
# `waves.measured_waves` runs `n` equal blocks (each a 50 ms sleep,
# so a busy CPU does not distort it) on 4 worker threads, a toy GPU of 4 SMs × 1 block,
# and prints the time in units of one block, best of 3, next to your prediction.

# %% nbgrader={"grade": false, "grade_id": "wave_prediction_measure", "locked": true, "schema_version": 3, "solution": false, "task": false}
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
H100 = 132  # SMs of an H100 SXM: your model's predictions for two grids the text below discusses
for n in (133, 10):
    try:
        predicted = wave_prediction(n, 1, H100)
    except Exception as exc:
        predicted = f"not done yet ({exc.__class__.__name__})"
    print(f"{n} blocks on an H100 at 1 per SM: your prediction (waves, slowdown): {predicted}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "wave_prediction_explain", "locked": true, "schema_version": 3, "solution": false, "task": false}
# **Explain.**
# 5 blocks take as long as 8 (the printed waves above):
# the fifth block runs alone while three slots idle.
# Under the model of the spec (equal blocks, resident blocks not slowing each other),
# an H100 does the same at 132 × blocks-per-SM:
# a grid of 133 blocks at 1 block per SM needs a second wave for one block,
# and your printed slowdown for it is close to 2 — a prediction of the model,
# which real blocks of unequal length only approximate.
# A grid smaller than one wave is different:
# 10 blocks take one block time whatever happens,
# and their large printed slowdown says how many of the slots idle — only more,
# smaller blocks would use them.
# The cure for the tail is to size the grid (or the tile,
# or a persistent kernel's loop) to a whole number of waves
# — or so many waves that the tail is small.

# %% [markdown] nbgrader={"grade": false, "grade_id": "pictures_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## What your kernels did
#
# Which block wrote each element (exercise 1 and 2),
# which warp wrote each output of the regrouped kernel (exercise 6:
# warps still write contiguous runs — the regrouping happened in shared memory),
# and which block computed each element of `C` (exercise 4).

# %% nbgrader={"grade": false, "grade_id": "pictures", "locked": true, "schema_version": 3, "solution": false, "task": false}
import matplotlib.pyplot as plt

rng = np.random.default_rng(0)
runs = [
    ("scale_shift", lambda: (scale_shift, 3, 32, [np.ones(70, np.float32), np.zeros(70, np.float32), 2.0, 1.0]), "out", "block"),
    ("ramp_2d", lambda: (ramp_2d, (2, 2), (16, 8), [np.ones((13, 21), np.float32), np.zeros((13, 21), np.float32)]), "out", "block"),
    ("tiled_matmul", lambda: (tiled_matmul, (2, 2), lab.MM_BLOCK, [np.ones((20, 13), np.float32), np.ones((13, 18), np.float32), np.zeros((20, 18), np.float32)]), "C", "block"),
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

# %% [markdown] nbgrader={"grade": false, "grade_id": "machine_code_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## What the compiler made of your kernels (not graded)
#
# The cell below compiles **your** `tiled_matmul` and `halvings_regrouped` the way a GPU run would
# — numba-cuda's `compile_ptx` (NVVM) to PTX, NVIDIA's `ptxas` to an sm_90 (Hopper) cubin,
# `nvdisasm` to SASS — next to §5.7's one-output kernel (as §5.7 writes it, and with `acc = 0.0`),
# the given `halvings_divergent` and a short if/else, with no GPU needed (`gpucourse.toolchain`,
# one child process, ~15 s).
# It skips itself while nbgrader grades, and when NVIDIA's compiler wheels are missing.
#
# - **Register blocking in the machine code.**
#   The `j` loop has a constant trip count (`TK`), so it is unrolled;
#   the `k` loop's trip count is known only at run time,
#   so it is not fully unrolled — but the compiler may still copy its body a few times
#   (§5.7's float32 kernel below prints a multiple of 8 products, several k steps),
#   so compare *per product*.
#   Your kernel issues `2·TK` multiply-adds per step for `3·TK` words read from shared memory
#   (the executor's 3 shared reads per k); §5.7's issues `TILE` multiply-adds for `2·TILE` words.
#   The compiler also *vectorizes*: a row of `sA` is contiguous, so `sA[ty,
#   0..7]` becomes two 128-bit `LDS.128` loads (four floats each), while `sB[j,
#   tx]` walks down a column, one 32-bit `LDS` per element.
#   Fewer shared-memory *words* per FMA is the point of register blocking (1.5 here against §5.7's 2);
#   how many *instructions* carry them depends on that vectorizing too
#   (an `sA` stored transposed reads its column one word at a time: more `LDS`, the same words).
# - **The accumulator's type.**
#   §5.7 starts its accumulator at `np.float32(0.0)`: one `FFMA` per product.
#   Written `acc = 0.0` (the third kernel below), numba types the accumulator float64:
#   each product is a float32 `FMUL`,
#   a conversion `F2F.F64.F32` and a float64 `DADD` (FP64 runs at half the FP32 rate on an H100 SXM,
#   and a fraction of it on consumer GPUs).
#   The same typing rule costs two more conversions per k step in that kernel
#   (its 10 `F2F.F64.F32` = 8 products + 2), and in yours if its loads end `else 0.0`:
#   `A[...] if ... else 0.0` mixes a float32 with a float64 literal,
#   so the loaded value is widened to float64 and narrowed back (`F2F.F32.F64`) before its `STS`;
#   `else np.float32(0.0)` removes them.
#   Outside the `j` loop they would be 4 instructions per 16 FMAs — small, but the same trap.
# - **A divergent branch the compiler removes, and one it cannot.**
#   The short if/else on `i % 2` has no branch left:
#   both sides are computed (`DFMA`, `DMUL`) and two `FSEL`
#   (one per 32-bit half of the float64) pick per lane;
#   its two `SEL` belong to Python's `%` (the sign fix for a negative `i`), not to the if/else.
#   The one `BRA` it prints is the self-loop after `EXIT` that ends every SASS function,
#   never reached.
#   The data-dependent loop of `halvings_divergent` keeps a conditional back edge
#   (`@P0 BRA`) inside a `BSSY`/`BSYNC` pair, where the warp's lanes reconverge (sm_70+).
#   Your regrouped kernel still has that loop and that branch:
#   regrouping removed the divergence at run time — which lanes share a warp — not an instruction.
#   The executor's SIMT efficiency in your check line is the number that changed.

# %% nbgrader={"grade": false, "grade_id": "machine_code", "locked": true, "schema_version": 3, "solution": false, "task": false}
import os
import re

if os.environ.get("NBGRADER_EXECUTION"):  # nbgrader sets it while it autogrades or validates: not graded, skip
    print("skipped while nbgrader grades: this cell is not graded (it compiles for seconds)")
elif not gc.toolchain.available():
    print(f"skipped: NVIDIA's compiler wheels are missing ({gc.toolchain.describe()})")
elif lab.not_written(tiled_matmul=tiled_matmul, halvings_regrouped=halvings_regrouped):
    print(f"write {' and '.join(lab.not_written(tiled_matmul=tiled_matmul, halvings_regrouped=halvings_regrouped))} "
          "first: this cell compiles your tiled_matmul and halvings_regrouped")
else:
    code = lab.machine_code(tiled_matmul, halvings_divergent, halvings_regrouped)
    loops = {name: lab.inner_loop(code[name])
             for name in ("tiled_matmul (yours)", "§5.7 one output per thread", "§5.7 with acc = 0.0")}
    for name, c in loops.items():
        products = c["FFMA"] + c["FMUL"]  # one FFMA, or one FMUL (then a DADD), per product
        words = c["LDS (32-bit)"] + 2 * c["LDS.64"] + 4 * c["LDS.128"]
        lds = c["LDS (32-bit)"] + c["LDS.64"] + c["LDS.128"]
        per_product = (f"{lds / products:.2f} LDS and {words / products:.2f} words per product" if products else
                       "no FFMA or FMUL at all: the products are float64 (DFMA, DMUL) — an np.float64 somewhere")
        print(f"--- {name}, whole kernel: {c}\n    {products} products, {lds} shared-load instructions moving "
              f"{words} words: {per_product}")
        c.update(products=products, words=words, lds=lds)
    mine, square, wide = loops.values()
    print(code["tiled_matmul (yours)"].excerpt(("LDS", "FFMA", "FMUL", "DADD", "BAR"), limit=48))
    # §5.7 (float32): FFMA only, no float64 path; 2 words per product, in copies of the 8-product k step
    assert square["FFMA"] == square["products"] > 0 and square["products"] % 8 == 0 and square["DADD"] == 0
    assert square["F2F.F64.F32"] == 0 and square["words"] == 2 * square["products"]
    assert square["lds"] > square["products"]  # §5.7: more shared-load instructions than multiply-adds
    # the same kernel with acc = 0.0: one k step of 8 FMUL + 8 DADD, one conversion per product and the loads' two
    assert wide["products"] == 8 and wide["words"] == 16 and wide["FMUL"] == wide["DADD"] == 8 and wide["FFMA"] == 0
    assert wide["F2F.F64.F32"] == wide["DADD"] + 2
    if mine["products"] == 2 * TK and mine["words"] == 3 * TK:  # the j loop unrolled: one k step, as the spec's
        assert mine["words"] / mine["products"] < square["words"] / square["products"]  # fewer words per FMA
        print(f"shared-load instructions per product: yours {mine['lds'] / mine['products']:.2f}, §5.7's "
              f"{square['lds'] / square['products']:.2f} (fewer when the compiler vectorizes your reads)")
    else:  # a correct kernel can compile otherwise (e.g. range(min(TK, k - p)): a run-time trip count, not unrolled)
        print(f"your loop is not the {2 * TK} products on {3 * TK} words of one unrolled k step (got {mine['products']} "
              f"and {mine['words']}): a j loop whose trip count is known only at run time is not fully unrolled, so "
              "these counts are of its compiled body; range(TK) over the zero-padded slab unrolls")
    if mine["DADD"] or mine["DFMA"]:
        print(f"your accumulators are float64: {mine['DADD']} DADD, {mine['DFMA']} DFMA and {mine['F2F.F64.F32']} "
              "conversions per step; start them at np.float32(0.0) for one FFMA per product")
    elif mine["F2F.F64.F32"]:
        print(f"your {mine['F2F.F64.F32']} F2F.F64.F32 per step are your loads' `else 0.0` (a float64 literal): "
              "each loaded float is widened and narrowed back before its STS; `else np.float32(0.0)` removes them")

    flow = {name: {op: code[name].count(op) for op in ("BRA", "BSSY", "BSYNC", "FSEL", "SEL")}
            for name in ("parity if/else", "halvings_divergent (given)", "halvings_regrouped (yours)")}
    for name, counts in flow.items():
        print(f"--- {name}: {counts}")
        print(code[name].excerpt(("BRA", "BSSY", "BSYNC", "FSEL", "SEL", "DSETP", "DMUL", "DFMA", "EXIT")))
    parity, given, yours = flow.values()
    assert parity["BRA"] == 1 and parity["BSSY"] == parity["BSYNC"] == 0 and parity["FSEL"] >= 2
    assert re.search(r"^(\.L_x_\d+):\n\s*/\*[0-9a-f]+\*/\s+BRA `\(\1\)", code["parity if/else"].text, re.M), \
        "the parity kernel's one BRA should be the self-loop after EXIT"
    assert given["BRA"] >= 2 and given["BSSY"] >= 1 and given["BSYNC"] >= 1  # the loop's back edge, reconvergence
    assert re.search(r"@!?P\d BRA", code["halvings_divergent (given)"].text)  # a conditional branch
    assert yours["BRA"] >= 2 and yours["BSSY"] >= 1, "your kernel should keep the given kernel's while loop"

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test prints a ✓ line with what the instrumented executor measured.
# The hidden tests use other sizes, none a multiple of the block.
