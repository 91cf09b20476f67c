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
# Companion of `course/02_backprop_gemms.ipynb`.
# Five exercises, 3 points each (a visible test worth 1, a hidden one worth 2):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | implement | the backward pass of a 2-layer MLP as GEMMs, matching `jax.vjp` |
# | 2 | predict | the GEMMs and FLOPs of one training step of an MLP described as data (frozen weights, recomputation), too deep to trace |
# | 3 | predict | the largest batch that fits a memory budget with the memory model that matched XLA, fp32 or mixed precision (why OOM starts at a batch size) |
# | 4 | measure | the checkpointing policy that fits a budget, read from XLA's `memory_analysis` |
# | 5 | diagnose | a gradient test of a black-box forward pass: finite differences, the dot-product test, a tolerance for float32 |
#
# **How this lab works.**
# Each exercise prints its spec (`.show()`),
# gives you a stub that says roughly how many lines the answer takes, then checks your function:
# the visible test runs fixed cases and tells you what it expected and what it got;
# a hidden test runs randomized cases (other shapes) when your lab is graded.
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** (nbgrader's toolbar button) before you submit.
#
# Conventions (from the course notebook): row convention `Y = X @ W` with `X: (B, d_in)`, `W:
# (d_in, d_out)`; then `dW = Xᵀ·dY` and `dX = dY·Wᵀ`.
# One multiply-add = 2 FLOPs; `np.dtype(dtype).itemsize` gives bytes per element.

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
import jax
import jax.numpy as jnp
import numpy as np

import gpucourse as gc
from grader.labs import lab02_backprop as lab

be = gc.setup()

# %% [markdown] nbgrader={"grade": false, "grade_id": "mlp_backward_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — The backward pass of a 2-layer MLP, as GEMMs
#
# Every dense layer's backward pass is two GEMMs:
# one for the weight gradient, one for the gradient that flows on to the layer below.
# Write them by hand for `Y = relu(X @ W1) @ W2` — recompute the forward pass first,
# you need `Z` (for the relu mask) and `H` (for `dW2`).
# Check your shapes: each gradient has the shape of the thing it is the gradient of.
# Where `Z` is exactly 0 (an all-zero example, a dead unit), relu's derivative is 0:
# the mask is `Z > 0`.

# %% nbgrader={"grade": false, "grade_id": "mlp_backward_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["mlp_backward"].show()

# %% nbgrader={"grade": false, "grade_id": "mlp_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
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

# %% nbgrader={"grade": true, "grade_id": "mlp_backward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["mlp_backward"].check(mlp_backward)

# %% nbgrader={"grade": true, "grade_id": "mlp_backward_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["mlp_backward"].check(mlp_backward, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "step_gemms_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — Predict the GEMMs and FLOPs of one training step
#
# The course notebook found the GEMMs of a training step in JAX's program
# (§2.3) and read XLA's FLOP count for it: 3 − 1/L times the forward pass for L equal layers, plus a little elementwise work (§2.4).
# Now predict them for a network given as data, before anything is built:
# which weights train (fine-tuning freezes the bottom layers),
# and whether the activations are recomputed (activation checkpointing, §2.6).
# For each layer ask: does it need dW? does a gradient have to flow *through* it to reach a trained
# weight below (dX)? does the backward pass visit it at all (then, with recomputation,
# its forward GEMM runs again)?
# The hidden networks have thousands of layers: tracing them is too slow, the chain rule is not.

# %% nbgrader={"grade": false, "grade_id": "step_gemms_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["step_gemms"].show()

# %% nbgrader={"grade": false, "grade_id": "step_gemms", "locked": false, "schema_version": 3, "solution": true, "task": false}
def step_gemms(batch, widths, trainable, recompute):
    """(number of GEMMs, forward FLOPs, backward FLOPs) of one training step of an MLP described as data."""
    # roughly 10 lines
    ### BEGIN SOLUTION
    lowest = trainable.index(True)      # below the lowest trained weight, no gradient flows at all
    gemms = fwd = bwd = 0
    for i in range(len(widths) - 1):
        flops = 2 * batch * widths[i] * widths[i + 1]
        gemms += 1                      # the forward GEMM, every layer
        fwd += flops
        needs_dW = trainable[i]
        needs_dX = i > lowest           # a trained weight lies below this layer
        again = recompute and i >= lowest  # the backward passes through it: recompute its forward GEMM first
        n = needs_dW + needs_dX + again
        gemms += n
        bwd += n * flops
    return gemms, fwd, bwd
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "step_gemms_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["step_gemms"].check(step_gemms)

# %% nbgrader={"grade": true, "grade_id": "step_gemms_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["step_gemms"].check(step_gemms, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "largest_batch_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — Why OOM starts at a certain batch size
#
# Parameters, gradients and optimizer state cost the same at any batch size;
# the batch, the activations saved for the backward pass and the gradients in flight grow with every
# example.
# The largest batch that fits is where the growing part meets the budget.
# Write course §2.7's memory model — the one its cell checks against XLA's buffer assignment
# — and invert it (a closed form exists;
# a loop is fine for small answers but the hidden budgets are large).
# What the backward pass keeps per layer is an input:
# JAX's reverse mode keeps 3 arrays per tanh layer where a hand-written backward keeps 1 (§2.5),
# and that factor moves the answer more than anything else.
# In mixed precision the fixed part is *not* smaller (§2.7).

# %% nbgrader={"grade": false, "grade_id": "largest_batch_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["largest_batch"].show()

# %% nbgrader={"grade": false, "grade_id": "largest_batch", "locked": false, "schema_version": 3, "solution": true, "task": false}
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

# %% nbgrader={"grade": true, "grade_id": "largest_batch_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["largest_batch"].check(largest_batch)

# %% nbgrader={"grade": true, "grade_id": "largest_batch_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["largest_batch"].check(largest_batch, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "pick_policy_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — Pick a checkpointing policy that fits
#
# Activation checkpointing (활성화 체크포인트) saves less in the forward pass and recomputes the rest in the
# backward pass.
# Don't guess what it saves: ask the compiler.
# `lab.grad_of(name)` is the jitted gradient of a stack of layers under each policy;
# compile it for the given shapes and read how much scratch memory XLA reserves.
# Prefer the policy that recomputes least.
# A policy fits when its working memory is at most the budget (exactly the budget fits).

# %% nbgrader={"grade": false, "grade_id": "pick_policy_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["pick_policy"].show()

# %% nbgrader={"grade": false, "grade_id": "pick_policy", "locked": false, "schema_version": 3, "solution": true, "task": false}
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

# %% nbgrader={"grade": true, "grade_id": "pick_policy_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["pick_policy"].check(pick_policy)

# %% nbgrader={"grade": true, "grade_id": "pick_policy_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["pick_policy"].check(pick_policy, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "is_correct_backward_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — Diagnose: test a backward pass you cannot differentiate
#
# A hand-written backward pass (a fused kernel's,
# a custom op's) is checked against its forward pass
# — and often the forward is a black box to autodiff: a NumPy function, a library call, a kernel.
# Finite differences see any function:
# for a random direction `u`, the central difference `(f(x + εu) − f(x − εu)) / 2ε` is `J·u` up to
# O(ε²), and the **dot-product test** compares `⟨dy, J·u⟩` with `⟨backward(x, dy), u⟩ = ⟨Jᵀ·dy,
# u⟩` — one forward pair per test, whatever the sizes.
# Two numbers to choose:
# - **ε**: these forwards compute in float32 (rounding ≈ 1e-7 relative).
#   With ε = 1e-8 (float64's habit), x + εu *is* x in float32 and the difference is noise;
#   with ε = 1e-3 the rounding error is ~1e-4 of the result and the O(ε²) error smaller still.
# - **the tolerance**: above that noise, below the error of a near miss (a few per cent):
#   about 1e-3 relative to the size of the terms summed,
#   plus the rounding of the outputs themselves
#   — each difference carries about ε₃₂·|f(x)|/ε of noise (ε₃₂ = 2⁻²³), whatever the change Δf is,
#   so an output that is large but moves little (a log-sum-exp) needs that term.
#   And more than one probe: a single random direction can land where a near miss's error cancels.
#
# And the inputs: random `x`, `dy` and `u`, with `B > 1`.
# Some wrong passes are right for a batch of one, on constant rows, on tiny `x`,
# or for a symmetric `dy` (`dy = y`, the gradient of `½Σy²`, is symmetric for a Gram matrix).
# A candidate that raises or returns the wrong shape is wrong (check the shape yourself:
# `np.vdot` flattens its arguments).

# %% nbgrader={"grade": false, "grade_id": "is_correct_backward_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["is_correct_backward"].show()

# %% nbgrader={"grade": false, "grade_id": "is_correct_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def is_correct_backward(forward, backward):
    """True when backward(x, dy) -> dx is the vector-Jacobian product of the black box forward(x) -> y."""
    # roughly 16 lines
    ### BEGIN SOLUTION
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (6, 4)] * 5:                  # B > 1: no batch of one; 5 probes per shape
        x, u = rng.standard_normal((2, B, n))           # random x, and a random direction u
        dy = rng.standard_normal(np.shape(forward(x)))  # random dy: not ones, not symmetric
        eps = 1e-3                                      # float32: far above its rounding, O(ε²) small
        hi, lo = forward(x + eps * u), forward(x - eps * u)
        jvp = np.vdot(dy, hi - lo) / (2 * eps)          # ⟨dy, J·u⟩ by a central difference
        size = np.vdot(np.abs(dy), np.abs(hi - lo)) / (2 * eps)  # the size of the terms it sums
        noise = 8 * 2.0**-23 * np.vdot(np.abs(dy), np.abs(hi) + np.abs(lo)) / (2 * eps)  # float32 rounding of y
        try:
            dx = backward(x, dy)
            if np.shape(dx) != x.shape:
                return False
            if not abs(np.vdot(dx, u) - jvp) <= 1e-3 * size + noise:  # ⟨Jᵀ·dy, u⟩ within float32's noise
                return False
        except Exception:
            return False
    return True
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "is_correct_backward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["is_correct_backward"].check(is_correct_backward)

# %% nbgrader={"grade": true, "grade_id": "is_correct_backward_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["is_correct_backward"].check(is_correct_backward, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test should print a ✓ line.
# The hidden tests use other shapes:
# an answer that only handles the examples will lose those points.
