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
# # Lab 7 — The TPU: systolic arrays, Pallas, collectives and the ICI torus
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab07_tpu/lab07_tpu.ipynb)
#
# Companion of `course/07_tpu.ipynb`.
# Seven exercises, 3 points each (a visible test worth 1, a hidden one worth 2):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | implement | one clock cycle of a weight-stationary systolic array (`pe_step`) |
# | 2 | implement | the compiler's schedule: a whole matmul on the array, cycle by cycle (`systolic_matmul`) |
# | 3 | design | the shape of a matrix unit of a given size that runs a GEMM fastest, with the course's tiling model (`best_array`) |
# | 4 | implement | a fused dense layer in Pallas, `relu(x @ w + b)` in bf16: BlockSpecs, a grid, an f32 accumulator in VMEM and an epilogue (`fused_dense`) |
# | 5 | implement | a sharded matmul as the partitioner writes it: `shard_map` with your own collectives, receiving no more bytes than XLA's (`sharded_matmul`) |
# | 6 | compute | hop counts on a real TPU slice, where only some axes wrap around (`slice_hops`) |
# | 7 | compute | the α–β time of all-gather, reduce-scatter, all-reduce and all-to-all over one axis (`collective_seconds`) |
#
# **How this lab works.**
# Each exercise prints its spec (`.show()`),
# gives you a stub that says roughly how many lines the answer takes, then checks your function:
# the visible test runs fixed cases and tells you what it expected and what it got;
# a hidden test runs randomized cases when your lab is graded.
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** (nbgrader's toolbar button) before you submit.
#
# **Run the first cell first.**
# It gives JAX 8 CPU devices (`XLA_FLAGS`), which only works before JAX is imported:
# if you imported JAX some other way, restart the kernel.

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
import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import gpucourse as gc
from gpucourse import interconnect, systolic
from grader.labs import lab07_tpu as lab

be = gc.setup()
print(f"JAX's host devices (the meshes of exercise 5): {len(jax.devices('cpu'))} × cpu; default backend: "
      f"{jax.devices()[0].platform}")

# %% [markdown] nbgrader={"grade": false, "grade_id": "pe_step_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — One clock cycle of the systolic array
#
# A weight-stationary array is a grid of processing elements (PEs, 처리 요소).
# PE `(k, n)` keeps the weight `W[k, n]`;
# every cycle each PE passes its activation to the right and its partial sum down.
# Nothing is read from memory inside the array: values move from register to register.
# Write the update of *all* PEs for one clock edge,
# with NumPy slicing (no Python loop over PEs needed).

# %% nbgrader={"grade": false, "grade_id": "pe_step_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["pe_step"].show()

# %% nbgrader={"grade": false, "grade_id": "pe_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def pe_step(a, p, W, a_in):
    """(a_new, p_new): the activation and partial-sum registers of every PE after one cycle."""
    # roughly 6 lines
    ### BEGIN SOLUTION
    a_new = np.empty(a.shape)
    a_new[:, 0] = a_in  # column 0 takes the new activations
    a_new[:, 1:] = a[:, :-1]  # everything else takes its left neighbour's
    p_in = np.zeros(p.shape)
    p_in[1:, :] = p[:-1, :]  # row 0 starts from zero, the rest take the PE above's partial sum
    return a_new, p_in + a_new * W
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "pe_step_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["pe_step"].check(pe_step)

# %% nbgrader={"grade": true, "grade_id": "pe_step_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["pe_step"].check(pe_step, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "systolic_matmul_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — The schedule: a whole matmul, cycle by cycle
#
# The array never decides anything:
# what enters which row at which cycle is fixed before the first cycle
# — on a TPU by the compiler (XLA).
# Here you are the compiler.
# `gc.systolic.WeightStationaryArray(W)` is a ready-made array seen from its edges:
# `hw.tick(a_in)` is one cycle, and it returns what the registers of exercise 1 deliver at the
# bottom edge in that cycle.
# Skew the rows of `A` into the left edge, de-skew the results leaving the bottom,
# and stop as soon as the last one is out.
# C is what the array delivers: one visible and one hidden case hand you a faulty array as `hw`
# (one PE's weight stuck at another value), whose right answer is not `A @ W`.

# %% nbgrader={"grade": false, "grade_id": "systolic_matmul_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["systolic_matmul"].show()

# %% nbgrader={"grade": false, "grade_id": "systolic_matmul", "locked": false, "schema_version": 3, "solution": true, "task": false}
def systolic_matmul(A, W, hw=None):
    """(C, hw): C = A @ W computed on hw = gc.systolic.WeightStationaryArray(W) (or on the array hw handed to you),
    one hw.tick per cycle; C is what the array delivers."""
    M, K = A.shape
    N = W.shape[1]
    hw = systolic.WeightStationaryArray(W) if hw is None else hw
    C = np.zeros((M, N))
    # roughly 8 lines
    ### BEGIN SOLUTION
    for t in range(M + K + N - 2):  # the last result leaves at cycle (M-1) + (K-1) + (N-1)
        m_in = t - np.arange(K)  # row k receives A[t - k, k]
        ok = (m_in >= 0) & (m_in < M)
        a_in = np.where(ok, A[np.clip(m_in, 0, M - 1), np.arange(K)], 0.0)
        out = hw.tick(a_in)
        m_out = t - (K - 1) - np.arange(N)  # column n delivers C[t - (K-1) - n, n]
        done = (m_out >= 0) & (m_out < M)
        C[m_out[done], np.arange(N)[done]] = out[done]
    ### END SOLUTION
    return C, hw

# %% nbgrader={"grade": true, "grade_id": "systolic_matmul_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["systolic_matmul"].check(systolic_matmul)

# %% nbgrader={"grade": true, "grade_id": "systolic_matmul_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["systolic_matmul"].check(systolic_matmul, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "best_array_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — The shape of the matrix unit
#
# Real layers are far larger than the array,
# so the compiler cuts `W` into array-sized tiles and streams the activations through each.
# The course notebook (§7.3) builds the model of that
# — double-buffered weights that shift in one row per cycle, so tiles start `max(M,
# rows)` cycles apart, one fill and drain at the end
# — checks it against the array clocked cycle by cycle, and installs it as `gc.systolic.TiledGemm`.
# Now use it as an architect would: a chip has room for a fixed number of PEs.
# Which *shape* runs a given layer fastest?
# A decode step (`M` = 1) and a prefill (`M` in the thousands) do not agree,
# and neither does a matrix-vector product.

# %% nbgrader={"grade": false, "grade_id": "best_array_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["best_array"].show()

# %% nbgrader={"grade": false, "grade_id": "best_array", "locked": false, "schema_version": 3, "solution": true, "task": false}
def best_array(M, K, N, pes):
    """(rows, cols): the power-of-two array of pes PEs that runs (M x K) @ (K x N) in the fewest cycles."""
    # roughly 6 lines
    ### BEGIN SOLUTION
    shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]  # 1 × pes … pes × 1, fewest rows first
    cycles = [systolic.TiledGemm(M, K, N, r, c).cycles for r, c in shapes]
    return shapes[cycles.index(min(cycles))]  # index() finds the first minimum: the fewest rows
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "best_array_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["best_array"].check(best_array)

# %% nbgrader={"grade": true, "grade_id": "best_array_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["best_array"].check(best_array, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "fused_dense_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — A fused dense layer in Pallas
#
# TPU kernels are written in Pallas:
# a kernel body that sees one *block* of each operand (in VMEM, the TPU's on-chip memory),
# a `grid` of program instances, and a `BlockSpec` per operand whose index map says which block each
# instance gets — Pallas turns those into the HBM↔VMEM copies,
# double-buffered (two VMEM buffers per operand:
# the next block loads while the kernel works on this one).
# On a TPU the grid is a sequential loop on each TensorCore,
# last axis fastest (on two-core "megacore" chips, v4 and v5p,
# axes marked "parallel" are split between the cores, so a reduction axis must stay "arbitrary"),
# and an output block is written back to HBM as soon as the grid moves to another one
# — never read back: every grid step that writes one output block must come in one unbroken run,
# so the reduction (`k`) axis goes last.
#
# A dense layer is `relu(x @ w + b)`.
# Run as three separate kernels it would make the product round-trip through HBM twice;
# XLA, given the three `jnp` ops in one `jit`,
# fuses the bias and the relu into the matmul
# (on a GPU as a cuBLASLt `BIAS_RELU` epilogue or inside its Triton GEMM,
# §6) — and this exercise writes that fusion by hand:
# the bias and the activation cost nothing but a few vector operations on a block that is already in
# VMEM — an **epilogue**, run once per output block after its last `k` step. Three TPU rules the
# course's float32 kernel (§7.6) could ignore, and this one cannot:
# - **Block shapes.**
#   The last two dimensions of every block must be multiples of 8 and 128
#   (they map onto the vector registers' 8 sublanes × 128 lanes and onto the MXU),
#   unless a block dimension spans the whole array dimension.
#   Every case here is legal: `(16, 128)` blocks, a `(1,
#   bn)` bias block (1 is the whole first dimension of `b`), or an `n = 200` output taken whole.
# - **Accumulate in float32.**
#   The operands are bfloat16 (8 significant bits, 7 of them stored), and so is the result.
#   Adding each `k` block's product into a bf16 output block rounds the running sum to 8 significant
#   bits at every step: 256 + 0.5 stays 256.
#   The usual pattern (the Pallas TPU matmul guide) keeps a float32 accumulator of one output block
#   in VMEM *scratch* (`scratch_shapes=[pltpu.VMEM(shape, dtype)]`:
#   a buffer that lives for the whole grid, not copied to or from HBM,
#   handed to the kernel as one more `Ref` after the output's).
# - **The epilogue runs once.**
#   The bias belongs to the finished sum, and so does the relu:
#   a partial sum may be negative and still end positive.
#   Both happen on the float32 accumulator at the last `k` step, then one cast to bf16.
#
# On this machine the kernel runs with `interpret=True`:
# same program, executed by JAX on the CPU, grid step after grid step in order.
# Right numbers there do not show a TPU-shaped kernel (a grid that revisits output blocks,
# or one program per element, can still add up) — so the checker also traces your function,
# reads your grid, BlockSpecs and scratch,
# checks the output blocks are visited consecutively and that nothing is computed outside the
# kernel, and reports the traffic and the VMEM per grid step they imply.

# %% nbgrader={"grade": false, "grade_id": "fused_dense_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_dense"].show()

# %% nbgrader={"grade": false, "grade_id": "fused_dense", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fused_dense(x, w, b, bm, bn, bk):
    """relu(x @ w + b) in bf16 as one pl.pallas_call: (bm, bk), (bk, bn), (1, bn) and (bm, bn) blocks, an f32 VMEM
    accumulator, and the bias and relu in an epilogue at the last k step."""
    m, k = x.shape
    n = w.shape[1]
    # roughly 22 lines
    ### BEGIN SOLUTION
    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        kk = pl.program_id(2)

        @pl.when(kk == 0)  # first k block: start the accumulator from zero
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

        @pl.when(kk == pl.num_programs(2) - 1)  # the epilogue: bias and relu on the f32 sum, one rounding to bf16
        def _():
            z = acc_ref[...] + b_ref[...].astype(jnp.float32)  # (bm, bn) + (1, bn): the bias row broadcast
            o_ref[...] = jnp.maximum(z, 0.0).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w, b)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fused_dense_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_dense"].check(fused_dense)

# %% nbgrader={"grade": true, "grade_id": "fused_dense_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["fused_dense"].check(fused_dense, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "sharded_matmul_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — Write the partitioner's program yourself
#
# On a pod, one `jnp.dot` on sharded arrays becomes a local matmul on every chip *plus* the
# collectives XLA's SPMD partitioner inserts (course notebook §7.9 prints which ones,
# for four shardings).
# Here you are the partitioner: with `jax.shard_map` you write what ONE device does with the blocks
# it holds — which block of `C` it can compute, whether that block is a partial sum,
# which piece of the output it must end up with
# — and every byte it exchanges with the others (`jax.lax.psum`, `all_gather`, `psum_scatter`;
# `axis_index` says which piece a device owns).
# The checker reads the collectives of your compiled program and holds it to XLA's:
# each device may receive no more bytes than in what `jit` compiles for the same shardings.
# You may compile XLA's version in a scratch cell and read its collectives
# (`gc.interconnect.hlo_collectives`) to see your target;
# writing the program that meets it is the exercise.

# %% nbgrader={"grade": false, "grade_id": "sharded_matmul_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["sharded_matmul"].show()

# %% nbgrader={"grade": false, "grade_id": "sharded_matmul", "locked": false, "schema_version": 3, "solution": true, "task": false}
from jax.sharding import PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    """jax.shard_map program computing C = A @ B from A sharded by a_spec and B by b_spec, C sharded by out_spec,
    on lab.host_mesh(mesh_shape)."""
    # roughly 16 lines
    ### BEGIN SOLUTION
    mesh = lab.host_mesh(mesh_shape)
    size = dict(zip(("x", "y"), mesh_shape))  # devices per mesh axis
    (a_rows, a_k), (_, b_cols), (out_rows, out_cols) = a_spec, b_spec, out_spec

    def mine(block, axis, dim):  # this device's piece of `block` along dim, its index on mesh axis `axis`
        width = block.shape[dim] // size[axis]
        return jax.lax.dynamic_slice_in_dim(block, jax.lax.axis_index(axis) * width, width, axis=dim)

    def body(a, b):  # a: (m/.., k/..), b: (k/.., n/..): what this device holds
        if out_rows is not None and a_rows is None:
            a = mine(a, out_rows, 0)  # the output splits rows A holds whole: slice before multiplying
        if out_cols is not None and b_cols is None:
            b = mine(b, out_cols, 1)
        c = a @ b  # this device's block of C (a partial sum if k is split)
        if a_k is not None:
            c = jax.lax.psum(c, a_k)  # partial sums over k's pieces: sum them (before any gather: smaller)
        if a_rows is not None and out_rows is None:
            c = jax.lax.all_gather(c, a_rows, axis=0, tiled=True, to="invarying")  # rows joined: the same C
        if b_cols is not None and out_cols is None:  # rows on every device of the axis (to="invarying")
            c = jax.lax.all_gather(c, b_cols, axis=1, tiled=True, to="invarying")
        return c

    return jax.shard_map(body, mesh=mesh, in_specs=(P(*a_spec), P(*b_spec)), out_specs=P(*out_spec))
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "sharded_matmul_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["sharded_matmul"].check(sharded_matmul)

# %% nbgrader={"grade": true, "grade_id": "sharded_matmul_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["sharded_matmul"].check(sharded_matmul, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "slice_hops_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — Hops on a real slice
#
# ICI links join each chip to its neighbours directly;
# a message to a far chip is forwarded chip by chip. A wraparound link (a torus,
# 3D 토러스) halves the worst case along its axis — but a TPU slice has wraparounds only on some axes,
# and small slices have none (course notebook §7.7, with Google's and the scaling book's words).
# The cases are slices Google lists, plus a few hypothetical ones the spec names.

# %% nbgrader={"grade": false, "grade_id": "slice_hops_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["slice_hops"].show()

# %% nbgrader={"grade": false, "grade_id": "slice_hops", "locked": false, "schema_version": 3, "solution": true, "task": false}
def slice_hops(a, b, dims, chip):
    """Fewest links from chip a to chip b on a slice of shape dims of a `chip` pod (coordinates as tuples)."""
    # roughly 7 lines
    ### BEGIN SOLUTION
    if chip in ("TPU v4", "TPU v5p"):
        wraps = [all(d % 4 == 0 for d in dims)] * len(dims)  # whole 4×4×4 cubes wrap on every axis
    else:
        wraps = [d == 16 for d in dims]  # v5e, v6e: only a full 16-chip axis wraps
    total = 0
    for x, y, d, w in zip(a, b, dims, wraps):
        total += min(abs(x - y), d - abs(x - y)) if w else abs(x - y)
    return total
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "slice_hops_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["slice_hops"].check(slice_hops)

# %% nbgrader={"grade": true, "grade_id": "slice_hops_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["slice_hops"].check(slice_hops, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "collective_seconds_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 7 — What a collective costs
#
# Sharded programs spend their communication in four collectives (course notebook §7.8).
# Price one of them over one mesh axis in the α–β model:
# a latency per round, plus the bytes on the busiest link over its bandwidth.
# Links work in both directions at once,
# and a ring (an axis with wraparound) lets data take the short way round.

# %% nbgrader={"grade": false, "grade_id": "collective_seconds_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["collective_seconds"].show()

# %% nbgrader={"grade": false, "grade_id": "collective_seconds", "locked": false, "schema_version": 3, "solution": true, "task": false}
def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
    """α–β seconds of one collective of an nbytes array over one axis of p chips (a ring if wrap and p >= 3)."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    if p <= 1:
        return 0.0
    ring = wrap and p >= 3
    rounds = p // 2 if ring else p - 1
    if kind == "all-to-all":
        chunk_hops = (p * p / 8 if p % 2 == 0 else (p * p - 1) / 8) if ring else (p // 2) * ((p + 1) // 2)
        busiest = chunk_hops * nbytes / p**2
    else:
        busiest = (p - 1) / p * nbytes / (2 if ring else 1)  # all-gather or reduce-scatter
        if kind == "all-reduce":
            rounds, busiest = 2 * rounds, 2 * busiest
    return rounds * latency + busiest / link_bandwidth
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "collective_seconds_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["collective_seconds"].check(collective_seconds)

# %% nbgrader={"grade": true, "grade_id": "collective_seconds_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["collective_seconds"].check(collective_seconds, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test should print a ✓ line.
# The hidden tests use other shapes, shardings, slices, collectives and bandwidths:
# an answer that only handles the examples will lose those points.
