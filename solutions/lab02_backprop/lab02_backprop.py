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
# # Lab 2 — Backprop as GEMMs: gradients, FLOPs and memory
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab02_backprop/lab02_backprop.ipynb)
#
# Companion of `course/02_backprop_gemms.ipynb`. Five exercises, 3 points each (1 visible test, 2 hidden):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | implement | the backward pass of a 2-layer MLP as GEMMs, matching `jax.vjp` |
# | 2 | compute | the GEMMs and FLOPs of one training step of an MLP |
# | 3 | predict | the largest batch that fits a memory budget with the memory model that matched XLA, fp32 or mixed precision (why OOM starts at a batch size) |
# | 4 | measure | the checkpointing policy that fits a budget, read from XLA's `memory_analysis` |
# | 5 | diagnose | a gradient test that is not fooled: random values expose what square, symmetric, batch-of-one or constant test inputs hide (shapes matter only when the values are not random) |
#
# **How this lab works.** Each exercise prints its spec (`.show()`), gives you a stub that says roughly how many
# lines the answer takes, then checks your function: the visible test runs fixed cases and tells you what it
# expected and what it got; a hidden test runs randomized cases (other shapes) when your lab is graded. Replace
# `raise NotImplementedError()` with your code. Use **Validate** (nbgrader's toolbar button) before you submit.
#
# Conventions (from the course notebook): row convention `Y = X @ W` with `X: (B, d_in)`, `W: (d_in, d_out)`;
# then `dW = Xᵀ·dY` and `dX = dY·Wᵀ`. One multiply-add = 2 FLOPs; `np.dtype(dtype).itemsize` gives bytes per element.

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
import jax
import jax.numpy as jnp
import numpy as np

import gpucourse as gc
from grader.labs import lab02_backprop as lab

be = gc.setup()

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex1_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — The backward pass of a 2-layer MLP, as GEMMs
#
# Every dense layer's backward pass is two GEMMs: one for the weight gradient, one for the gradient that flows
# on to the layer below. Write them by hand for `Y = relu(X @ W1) @ W2` — recompute the forward pass first,
# you need `Z` (for the relu mask) and `H` (for `dW2`). Check your shapes: each gradient has the shape of the
# thing it is the gradient of. Where `Z` is exactly 0 (an all-zero example, a dead unit), relu's derivative is 0:
# the mask is `Z > 0`.

# %% nbgrader={"grade": false, "grade_id": "ex1_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["mlp_backward"].show()

# %% nbgrader={"grade": false, "grade_id": "ex1_mlp_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mlp_backward(X, W1, W2, G):
    """(dW1, dW2, dX) of Y = relu(X @ W1) @ W2, given G = dL/dY."""
    # roughly 6 lines
    ### BEGIN SOLUTION
    Z = X @ W1                      # (B, h)   forward GEMM 1
    H = np.maximum(Z, 0.0)          # (B, h)
    dW2 = H.T @ G                   # (h, d_out)   = Hᵀ·dY
    dH = G @ W2.T                   # (B, h)       = dY·W2ᵀ
    dZ = dH * (Z > 0)               # relu'(Z): an elementwise mask, no GEMM
    return X.T @ dZ, dW2, dZ @ W1.T # dW1 = Xᵀ·dZ (d_in, h); dX = dZ·W1ᵀ (B, d_in)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex1_mlp_backward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["mlp_backward"].check(mlp_backward)

# %% nbgrader={"grade": true, "grade_id": "ex1_mlp_backward_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["mlp_backward"].check(mlp_backward, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex2_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — Count the GEMMs and FLOPs of one training step
#
# The course notebook read XLA's FLOP count for a training step and found it close to 3× the forward pass.
# Count exactly where that factor comes from — and why it is a little *less* than 3.

# %% nbgrader={"grade": false, "grade_id": "ex2_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["step_gemms"].show()

# %% nbgrader={"grade": false, "grade_id": "ex2_step_gemms", "locked": false, "schema_version": 3, "solution": true, "task": false}
def step_gemms(batch, widths):
    """(number of GEMMs, forward FLOPs, backward FLOPs) of one training step of an MLP."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        flops = 2 * batch * d_in * d_out
        fwd += flops
        gemms += 2          # forward Y = X·W and dW = Xᵀ·dY
        bwd += flops
        if i > 0:           # dX = dY·Wᵀ, except for the first layer: its input is data, not a parameter
            gemms += 1
            bwd += flops
    return gemms, fwd, bwd
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex2_step_gemms_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["step_gemms"].check(step_gemms)

# %% nbgrader={"grade": true, "grade_id": "ex2_step_gemms_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["step_gemms"].check(step_gemms, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex3_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — Why OOM starts at a certain batch size
#
# Parameters, gradients and optimizer state cost the same at any batch size; the batch, the activations saved
# for the backward pass and the gradients in flight grow with every example. The largest batch that fits is where
# the growing part meets the budget. Write course §2.7's memory model — the one its cell checks against XLA's
# buffer assignment — and invert it (a closed form exists; a loop is fine for small answers but the hidden budgets
# are large). What the backward pass keeps per layer is an input: JAX's reverse mode keeps 3 arrays per tanh layer
# where a hand-written backward keeps 1 (§2.5), and that factor moves the answer more than anything else. In mixed
# precision the fixed part is *not* smaller (§2.7).

# %% nbgrader={"grade": false, "grade_id": "ex3_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["largest_batch"].show()

# %% nbgrader={"grade": false, "grade_id": "ex3_largest_batch", "locked": false, "schema_version": 3, "solution": true, "task": false}
def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    """Largest batch size whose training memory (course §2.7's model) fits budget_bytes (0 if none does)."""
    slots = {"sgd": 0, "momentum": 1, "adam": 2}
    # roughly 10 lines
    ### BEGIN SOLUTION
    if dtype == "mixed-bf16":  # bf16 params + grads, fp32 master copy, fp32 optimizer state, bf16 values
        per_param, value = 2 + 2 + 4 + 4 * slots[optimizer], 2
    else:
        value = np.dtype(dtype).itemsize
        per_param = (2 + slots[optimizer]) * value
    fixed = layers * (width * width + width) * per_param      # weights and biases
    rows = 2 + (saved_per_layer * layers + 1) + 2              # input + target, saved (+ the loss's), 2 in flight
    per_example = rows * width * value
    return max(0, (budget_bytes - fixed) // per_example)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex3_largest_batch_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["largest_batch"].check(largest_batch)

# %% nbgrader={"grade": true, "grade_id": "ex3_largest_batch_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["largest_batch"].check(largest_batch, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex4_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — Pick a checkpointing policy that fits
#
# Activation checkpointing (활성화 체크포인트) saves less in the forward pass and recomputes the rest in the
# backward pass. Don't guess what it saves: ask the compiler. `lab.grad_of(name)` is the jitted gradient of a
# stack of layers under each policy; compile it for the given shapes and read how much scratch memory XLA
# reserves. Prefer the policy that recomputes least. A policy fits when its working memory is at most the budget
# (exactly the budget fits).

# %% nbgrader={"grade": false, "grade_id": "ex4_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["pick_policy"].show()

# %% nbgrader={"grade": false, "grade_id": "ex4_pick_policy", "locked": false, "schema_version": 3, "solution": true, "task": false}
def pick_policy(layers, batch, width, budget_bytes):
    """'everything', 'dots' or 'nothing' (least recompute that fits the budget), or None."""
    Ws = jax.ShapeDtypeStruct((layers, width, width), jnp.float32)
    X = jax.ShapeDtypeStruct((batch, width), jnp.float32)
    # roughly 5 lines
    ### BEGIN SOLUTION
    for name in ("everything", "dots", "nothing"):   # least recompute first
        compiled = lab.grad_of(name).lower(Ws, X).compile()
        if compiled.memory_analysis().temp_size_in_bytes <= budget_bytes:
            return name
    return None
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex4_pick_policy_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["pick_policy"].check(pick_policy)

# %% nbgrader={"grade": true, "grade_id": "ex4_pick_policy_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["pick_policy"].check(pick_policy, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "ex5_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — Diagnose: a gradient test that is not fooled
#
# A backward pass with a missing transpose often *runs*: on square shapes every product is defined, and on
# symmetric or all-ones test inputs it even returns the right numbers. Other wrong passes — batch rows paired with
# the wrong example's gradient, sums over the batch taken in the wrong order — return the right numbers on *any*
# constant input (all ones, say), whatever the shapes. Write the test that catches them all. Random values catch
# every wrong pass in the pool, even on square shapes with a batch larger than one; shapes that all differ matter
# when the values are not random (a missing transpose then fails on its shape). So compare a candidate with the
# truth (`jax.vjp`, or the formulas) on random values, with `B`, `d_in` and `d_out` all different. A candidate
# that raises or returns the wrong shape is wrong.

# %% nbgrader={"grade": false, "grade_id": "ex5_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["is_correct_backward"].show()

# %% nbgrader={"grade": false, "grade_id": "ex5_is_correct_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def is_correct_backward(backward):
    """True when backward(X, W, dY) -> (dW, dX) is the linear layer's backward pass."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    rng = np.random.default_rng(0)
    for B, d_in, d_out in [(5, 3, 4), (1, 2, 7), (6, 6, 6)]:  # non-square, a batch of one, square
        X = rng.standard_normal((B, d_in))
        W = rng.standard_normal((d_in, d_out))
        dY = rng.standard_normal((B, d_out))
        _, vjp = jax.vjp(lambda X, W: X @ W, jnp.asarray(X), jnp.asarray(W))
        dX_true, dW_true = (np.asarray(a) for a in vjp(jnp.asarray(dY)))
        try:
            dW, dX = backward(X, W, dY)
            if np.shape(dW) != dW_true.shape or np.shape(dX) != dX_true.shape:
                return False
            if not (np.allclose(dW, dW_true, rtol=1e-4, atol=1e-5) and np.allclose(dX, dX_true, rtol=1e-4, atol=1e-5)):
                return False
        except Exception:
            return False
    return True
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "ex5_is_correct_backward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["is_correct_backward"].check(is_correct_backward)

# %% nbgrader={"grade": true, "grade_id": "ex5_is_correct_backward_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["is_correct_backward"].check(is_correct_backward, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**. Every visible test should print a ✓ line. The hidden
# tests use other shapes: an answer that only handles the examples will lose those points.
