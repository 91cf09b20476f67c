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
# # Lab 8 — Attention, fused
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab08_attention/lab08_attention.ipynb)
#
# Companion of `course/08_attention.ipynb`, the capstone.
# The course measured naive attention: the s × s scores written to memory and read back.
# Here you build what replaces it — FlashAttention's online softmax and a fused kernel that never
# writes the s × s matrix — then price it: its traffic, decoding, and training memory.
# 3 points each (a visible test worth 1, a hidden one worth 2):
#
# <!-- exercise table -->
# | # | exercise |
# |---|---|
# | 1 | Online softmax, with the output |
# | 2 | The fused attention kernel |
# | 3 | The same in Pallas |
# | 4 | What the fused kernel moves |
# | 5 | When does decoding become compute-bound? |
# | 6 | What training keeps for attention's backward |
# <!-- end exercise table -->
#
# **How this lab works.**
# Each exercise prints its spec (`.show()`),
# gives you a stub that says roughly how many lines the answer takes, then checks your function:
# the visible test runs fixed cases and tells you what it expected and what it got;
# a hidden test runs randomized cases when your lab is graded.
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** (nbgrader's toolbar button) before you submit.
#
# **The kernel (exercise 2)** runs on the course's instrumented executor without a GPU
# (`gpucourse.simt`, numba-cuda's API) and on the GPU as well when there is one;
# the check enforces its budget (global writes, shared memory, global reads per thread, no float64,
# no races) and `diagram` draws what your kernel did —
# including bank conflicts (purple) on the K and V tiles if their rows are HEAD_DIM floats wide
# (lab 5b's transpose: pad a row by one float).

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

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import gpucourse as gc
from grader.labs import lab08_attention as lab

be = gc.setup()
cuda = be.cuda  # numba.cuda on a GPU; on CPU the course's executor (gpucourse.simt.cuda), numba-cuda's API
# query rows per block = keys per K/V tile; the largest head dimension (the shared and local arrays' size:
# shapes must be constants for numba-cuda on a GPU, a name like these)
TILE, HEAD_DIM = lab.TILE, lab.HEAD_DIM
HEAD_PAD = HEAD_DIM + 1  # a padded tile row: thread t's store k_tile[t, c] lands in bank (17 t + c) % 32

# %% [markdown] nbgrader={"grade": false, "grade_id": "online_softmax_step_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — Online softmax, with the output
#
# The course streamed the softmax's *normaliser*: a running max `m` and a running sum `l`,
# rescaled by `exp(m_old - m_new)` whenever the max grows.
# FlashAttention carries one more thing through the stream: the output itself.
# In FlashAttention-2's form (Dao 2023, §3.1.1) it is a running, unnormalised
# `acc = Σ exp(score - m) · v`, rescaled by the same factor and divided by `l` once at the end.
# Write the update for a whole block of keys and every query row at once.
# Mind the rows that have seen only masked scores so far (`m = -inf`):
# `exp(-inf - (-inf))` is NaN in IEEE arithmetic.

# %% nbgrader={"grade": false, "grade_id": "online_softmax_step_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["online_softmax_step"].show()

# %% nbgrader={"grade": false, "grade_id": "online_softmax_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def online_softmax_step(m, l, acc, s, v):
    """(m_new, l_new, acc_new): the running state after one more block of keys."""
    # roughly 7 lines
    ### BEGIN SOLUTION
    m_new = np.maximum(m, s.max(axis=1))  # (rows,)
    # the max the terms are taken relative to: 0 for a row that has seen nothing yet
    # (exp(-inf - 0) = 0 then, where exp(-inf - (-inf)) would be NaN)
    ref = np.where(np.isfinite(m_new), m_new, 0.0)
    alpha = np.exp(m - ref)  # (rows,): rescales what was summed relative to the old max
    p = np.exp(s - ref[:, None])  # (rows, bk)
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ v
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "online_softmax_step_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["online_softmax_step"].check(online_softmax_step)

# %% nbgrader={"grade": true, "grade_id": "online_softmax_step_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["online_softmax_step"].check(online_softmax_step, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "fused_attention_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — The fused attention kernel
#
# One block per query tile and head, one thread per query row.
# The block's threads load a tile of K and of V into shared memory together,
# then each thread folds the tile's keys into its own running max, sum and output
# — exercise 1's update, one key at a time, in the thread's own storage —
# and nothing of the s × s scores ever reaches global memory.
# (That storage is a `cuda.local.array`: registers where the compiler can resolve every index at
# compile time, otherwise *local memory* — per-thread device memory that the L1 cache holds.
# Indexed by `for c in range(d)`, a run-time bound, the running output lands in local memory:
# numba-cuda's PTX for the solution has a 128-byte `.local` depot, and ptxas keeps its `LDL`/`STL`.
# The scalars — the running max and sum, each score — stay in registers.)
# Hidden cases: sequence lengths that are not a multiple of the tile, causal masking, padding
# (`kv_len`) that leaves a head with no key at all, and logits large enough to overflow `exp`
# without the max.

# %% nbgrader={"grade": false, "grade_id": "fused_attention_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_attention"].show()

# %% nbgrader={"grade": false, "grade_id": "fused_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    """out[h, i] = softmax(q[h, i] · k[h]ᵀ / √d, masked) @ v[h]; lse[h, i] its log-sum-exp."""
    # roughly 40 lines
    ### BEGIN SOLUTION
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * TILE + t  # this thread's query row
    s, d = q.shape[1], q.shape[2]
    k_tile = cuda.shared.array((TILE, HEAD_PAD), np.float32)  # one K tile, shared by the block
    v_tile = cuda.shared.array((TILE, HEAD_PAD), np.float32)
    qi = cuda.local.array(HEAD_DIM, np.float32)  # thread-private (local memory here): the scaled query row
    acc = cuda.local.array(HEAD_DIM, np.float32)  # thread-private (local memory here): the running output
    scale = np.float32(1) / math.sqrt(np.float32(d))  # float32 throughout: 1/√d in one float32 sqrt
    for c in range(d):
        acc[c] = np.float32(0)
        if i < s:
            qi[c] = q[h, i, c] * scale
    m = np.float32(-math.inf)  # running max
    l = np.float32(0)  # running sum of exp(score - m)
    last = min(s, kv_len[h])  # keys past kv_len are padding
    if causal:  # no key after the block's last row: skip the tiles above the diagonal
        last = min(last, (cuda.blockIdx.x + 1) * TILE)
    for j0 in range(0, last, TILE):  # the same trip count for every thread of the block
        if j0 + t < last:
            for c in range(d):
                k_tile[t, c] = k[h, j0 + t, c]
                v_tile[t, c] = v[h, j0 + t, c]
        cuda.syncthreads()  # the tile is loaded
        for jj in range(min(TILE, last - j0)):
            j = j0 + jj
            if i < s and not (causal and j > i):
                score = np.float32(0)
                for c in range(d):
                    score += qi[c] * k_tile[jj, c]
                m_new = max(m, score)
                alpha = math.exp(m - m_new)
                p = math.exp(score - m_new)
                l = l * alpha + p
                for c in range(d):
                    acc[c] = acc[c] * alpha + p * v_tile[jj, c]
                m = m_new
        cuda.syncthreads()  # everyone is done with the tile before it is overwritten
    if i < s:
        for c in range(d):
            out[h, i, c] = acc[c] / l if l > 0 else np.float32(0)
        lse[h, i] = m + math.log(l)  # no key: -inf + log(0) = -inf
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fused_attention_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_attention"].check(fused_attention)

# %% nbgrader={"grade": true, "grade_id": "fused_attention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["fused_attention"].check(fused_attention, hidden=True)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "fused_attention_diagram", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_attention"].diagram(fused_attention)

# %% [markdown] nbgrader={"grade": false, "grade_id": "pallas_attention_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — The same in Pallas
#
# The kernel you just wrote, as JAX writes kernels: Pallas, whose BlockSpecs say which block of each
# array a grid step sees, and whose scratch buffers live across grid steps.
# Here the key blocks are a grid axis, so the running max, sum and output of a query block must
# survive from one grid step to the next — in VMEM scratch, as on a TPU (lab 7's `fused_dense` kept
# its float32 accumulator the same way; §7.6's matmul added into its float32 output block instead).
# It runs in interpret mode on this CPU; course §8.4 compiled JAX's own Pallas attention for an H100
# and showed the `wgmma` instructions its online-softmax body becomes
# (a kernel of another shape: on a GPU the program instances run in parallel, so `mha` walks its keys in a
# loop inside one instance instead of across grid steps, as this TPU-style grid does).

# %% nbgrader={"grade": false, "grade_id": "pallas_attention_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["pallas_attention"].show()

# %% nbgrader={"grade": false, "grade_id": "pallas_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def pallas_attention(q, k, v, bq, bk):
    """softmax(q kᵀ / √d) v as one pallas_call over (head, query block, key block), an online softmax in VMEM."""
    heads, s, d = q.shape
    # roughly 32 lines
    ### BEGIN SOLUTION
    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        j = pl.program_id(2)  # the key block: the grid's last axis, so one query block's steps run in a row

        @pl.when(j == 0)  # a new query block: empty running state
        def _():
            m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
            l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        q_scaled = q_ref[...] * (1 / math.sqrt(d))  # (bq, d)
        # (bq, bk): the scores of this query block against this key block
        scores = jnp.dot(q_scaled, k_ref[...].T, preferred_element_type=jnp.float32)
        m_new = jnp.maximum(m_ref[...], scores.max(axis=1, keepdims=True))  # (bq, 1)
        alpha = jnp.exp(m_ref[...] - m_new)  # rescales what was summed relative to the old max
        p = jnp.exp(scores - m_new)  # (bq, bk)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        pv = jnp.dot(p, v_ref[...], preferred_element_type=jnp.float32)  # (bq, d)
        acc_ref[...] = alpha * acc_ref[...] + pv
        m_ref[...] = m_new

        @pl.when(j == pl.num_programs(2) - 1)  # the last key block: normalise once, write the block
        def _():
            o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(heads, s // bq, s // bk),
        # None: the head axis is squeezed out of the block (the kernel sees (bq, d) and (bk, d) Refs)
        in_specs=[pl.BlockSpec((None, bq, d), lambda h, i, j: (h, i, 0)),
                  pl.BlockSpec((None, bk, d), lambda h, i, j: (h, j, 0)),
                  pl.BlockSpec((None, bk, d), lambda h, i, j: (h, j, 0))],
        out_specs=pl.BlockSpec((None, bq, d), lambda h, i, j: (h, i, 0)),
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        interpret=True,
    )(q, k, v)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "pallas_attention_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["pallas_attention"].check(pallas_attention)

# %% nbgrader={"grade": true, "grade_id": "pallas_attention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["pallas_attention"].check(pallas_attention, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "fused_bytes_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — What the fused kernel moves
#
# The executor counted your kernel's traffic on small shapes (the passing line of exercise 2).
# At the shapes that matter — thousands of tokens, tiles of 64 or 128 — nothing can count it for you:
# write the model.
# The course gave the ideal (Q, K, V read once, O written once);
# a real fused kernel re-reads K and V once per query tile,
# and a causal one stops at the diagonal, one key tile at a time.

# %% nbgrader={"grade": false, "grade_id": "fused_bytes_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_bytes"].show()

# %% nbgrader={"grade": false, "grade_id": "fused_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fused_bytes(batch, heads, s, d, block_q, block_k, causal, itemsize):
    """Bytes a fused attention forward reads and writes in device memory."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    total = 0  # bytes of one head
    for start in range(0, s, block_q):  # one block per query tile
        rows = min(block_q, s - start)  # the last tile may be partial
        # causal: key tiles up to the one holding the block's last row (a partial tile at the end)
        keys = min(s, (start + rows - 1) // block_k * block_k + block_k) if causal else s
        # q rows in, out rows back; K and V tiles in; one float32 log-sum-exp per row back
        total += 2 * rows * d * itemsize + 2 * keys * d * itemsize + 4 * rows
    return batch * heads * total
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fused_bytes_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["fused_bytes"].check(fused_bytes)

# %% nbgrader={"grade": true, "grade_id": "fused_bytes_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["fused_bytes"].check(fused_bytes, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "decode_crossover_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — When does decoding become compute-bound?
#
# One decode step makes one token per sequence.
# The weights are read once per step, whatever the batch, so batching raises the FLOPs per byte
# — but every sequence brings its own KV cache, read in full every step.
# Find the batch where a whole decoder layer crosses the accelerator's ridge point,
# and notice when it never does.

# %% nbgrader={"grade": false, "grade_id": "decode_crossover_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["decode_crossover"].show()

# %% nbgrader={"grade": false, "grade_id": "decode_crossover", "locked": false, "schema_version": 3, "solution": true, "task": false}
def decode_crossover(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    """The smallest batch whose decode step is compute-bound, or None."""
    # roughly 9 lines
    ### BEGIN SOLUTION
    hd = d_model // heads
    params = 2 * d_model**2 + 2 * d_model * kv_heads * hd + 2 * d_model * d_ff
    flops = 2 * params + 4 * heads * hd * context  # per sequence (one new token)
    kv = 2 * context * kv_heads * hd * itemsize  # per sequence: its cached K and V
    ridge = peak_flops / bandwidth  # FLOPs per byte
    # compute-bound when batch · flops >= ridge · (params · itemsize + batch · kv)
    if flops <= ridge * kv:  # the intensity levels off at flops / kv, below the ridge
        return None
    return math.ceil(ridge * params * itemsize / (flops - ridge * kv))
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "decode_crossover_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["decode_crossover"].check(decode_crossover)

# %% nbgrader={"grade": true, "grade_id": "decode_crossover_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["decode_crossover"].check(decode_crossover, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "longest_context_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — What training keeps for attention's backward
#
# Training keeps what the backward pass needs.
# Naive attention keeps the probabilities P, s × s per head;
# a fused kernel keeps one log-sum-exp per row and recomputes P, tile by tile, in the backward.
# How long a context fits in a memory budget, each way?

# %% nbgrader={"grade": false, "grade_id": "longest_context_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["longest_context"].show()

# %% nbgrader={"grade": false, "grade_id": "longest_context", "locked": false, "schema_version": 3, "solution": true, "task": false}
def longest_context(budget, batch, heads, d, layers, itemsize, fused):
    """The longest sequence whose saved attention activations fit in budget bytes."""
    # roughly 5 lines
    ### BEGIN SOLUTION
    copies = layers * batch * heads  # of one (sequence, head)'s saved tensors
    if fused:  # s · (4·d·itemsize + 4) bytes: linear in s
        return budget // (copies * (4 * d * itemsize + 4))
    # s² + 4·d·s <= C with C = budget // (copies · itemsize), i.e. (s + 2d)² <= 4d² + C:
    # math.isqrt is exact where a float square root of a 20-digit number is not
    return math.isqrt(4 * d * d + budget // (copies * itemsize)) - 2 * d
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "longest_context_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["longest_context"].check(longest_context)

# %% nbgrader={"grade": true, "grade_id": "longest_context_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["longest_context"].check(longest_context, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test should print a ✓ line.
# The hidden tests use other shapes, masks, tiles, layers and budgets:
# an answer that only handles the examples will lose those points.
