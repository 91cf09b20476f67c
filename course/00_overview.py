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

# %% [markdown]
# # 0 — What happens when you call `c = jnp.dot(a, b)`? (그래서 JAX 모델로부터 GPU 연산 과정은?)
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/00_overview.ipynb)
#
# One line of Python, ten steps between it and the hardware. This notebook walks the seed's ten steps live,
# each in one short cell — on this machine where it can, with the published figure where only a GPU can — and
# points to the section that goes deeper.
#
# **You will learn**
# - the whole path Python → JAX → XLA → HLO → PTX → SASS → GPU, and which of its steps you can see anywhere;
# - that `jax.jit` traces with shapes and dtypes only;
# - where the data lives between ops, and when it comes home.
#
# | step | what happens | deeper in |
# |---|---|---|
# | 1 trace | Python → jaxpr, abstract values | §6 |
# | 2 lower | jaxpr → StableHLO | §6 |
# | 3 optimize | XLA passes: fusion, CSE, buffer assignment | §1, §6 |
# | 4 code generation | PTX → SASS (FFMA / HMMA) | §6 |
# | 5 transfer | host memory → device memory (PCIe, DMA) | §3 |
# | 6 launch | command queue, asynchronous dispatch | §4 |
# | 7 warps | grid → blocks → warps on SMs | §5 |
# | 8 tensor cores | HMMA instructions; TPUs: systolic arrays | §6, §7 |
# | 9 write-back | results stay in device memory (HBM) | §3, §4 |
# | 10 copy home | device → host, only when asked | §3 |

# %%
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


# %%
import jax
import jax.numpy as jnp
import numpy as np

import gpucourse as gc
from gpucourse import toolchain

be = gc.setup()
rng = np.random.default_rng(0)
a = rng.standard_normal((128, 128)).astype(np.float32)  # the seed's f32[128,128] operands
b = rng.standard_normal((128, 128)).astype(np.float32)

# %% [markdown]
# ## Step 1 — Trace (트레이싱): shapes and dtypes, not values
#
# `jax.jit` runs the Python once with tracers that carry only an abstract value. Claim C23.

# %%
# NBVAL_CHECK_OUTPUT
seen = []
dot = jax.jit(lambda a, b: (seen.append((a.shape, str(a.dtype))), jnp.dot(a, b))[1])
dot(a, b)
dot(a + 1, b * 3)  # other values, same shape/dtype: the Python does not run again
print(jax.make_jaxpr(jnp.dot)(a, b).pretty_print(use_color=False))
print("traces:", seen)
assert seen == [((128, 128), "float32")]
# Expected output:
# { lambda ; a:f32[128,128] b:f32[128,128]. let
#     c:f32[128,128] = dot_general[
#       dimension_numbers=(([1], [0]), ([], []))
#       preferred_element_type=float32
#     ] a b
#   in (c,) }
# traces: [((128, 128), 'float32')]

# %% [markdown]
# ## Step 2 — Lower to StableHLO, the hardware-independent IR

# %%
stablehlo = jax.jit(jnp.dot).lower(a, b).as_text()
print("\n".join(line.strip() for line in stablehlo.splitlines() if "dot_general" in line))
assert "stablehlo.dot_general" in stablehlo and "contracting_dims = [1] x [0]" in stablehlo

# %% [markdown]
# ## Step 3 — Optimize: XLA's HLO passes
#
# The seed's HLO excerpt — `dot(lhs, rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}` — comes out of
# the compiler. With a bias and a relu after it, XLA also fuses the elementwise tail (§6):

# %%
compiled = gc.xla.compiled(jnp.dot, a, b)
line = next(l for l in compiled.hlo.splitlines() if " dot(" in l)
print(line.split(", metadata")[0].strip())
assert "lhs_contracting_dims={1}" in line and "rhs_contracting_dims={0}" in line
layer = gc.xla.compiled(lambda a, b, c: jnp.maximum(jnp.dot(a, b) + c, 0), a, b, b)
print("dot + bias + relu → fusions:", layer.fusions, f"({layer.flops:,.0f} FLOPs by XLA's count)")
assert compiled.flops == 2 * 128**3

# %% [markdown]
# ## Step 4 — Code generation: PTX and SASS for a Hopper GPU
#
# For a GPU, XLA emits PTX (via LLVM) and `ptxas` turns it into SASS, the GPU's machine code. With NVIDIA's
# compiler wheels we can do that for an H100 (sm_90) here, GPU or not: a 16×16×16 tile product on the tensor
# cores compiles to the seed's `HMMA.16816.F32`.

# %%
from gpucourse.toolchain import wmma_cu

if toolchain.available():
    sass = toolchain.sass_of(wmma_cu(1))
    print(sass.excerpt(("LDG", "HMMA", "STG")))
    assert sass.variants("HMMA") == {"HMMA.16816.F32": 2}
else:
    print("skipped: " + toolchain.describe())

# %% [markdown]
# (The seed says the *driver* compiles PTX to SASS. It can — PTX is JIT-compiled by the driver when no SASS for
# the GPU is present — but XLA normally runs `ptxas`/nvJitLink itself and hands the driver ready SASS.)
#
# ## Step 5 — Transfer: host memory → device memory
#
# `jax.device_put` copies a NumPy array into the backend's memory (over PCIe with DMA on a GPU; §3).

# %%
a_dev, b_dev = jax.device_put(a, be.jax_device), jax.device_put(b, be.jax_device)
print("a lives on:", a_dev.devices())
assert a_dev.devices() == {be.jax_device}
pcie, hbm = gc.hardware.LINKS["PCIe 5.0 x16"], gc.hardware.H100_SXM.memory_bandwidth
print(f"on an H100: PCIe 5.0 x16 {pcie / 1e9:.0f} GB/s vs HBM3 {hbm / 1e12:.2f} TB/s — {hbm / pcie:.0f}× slower to cross")

# %% [markdown]
# ## Step 6 — Launch: the call returns before the work is done
#
# The CPU enqueues the kernel and returns; the device runs it asynchronously (§4). Even on CPU, JAX dispatches
# asynchronously: the call returns long before a large product is finished.

# %%
big = jax.device_put(rng.standard_normal((1536, 1536)).astype(np.float32), be.jax_device)
jdot = jax.jit(jnp.dot)
jdot(big, big).block_until_ready()  # compile and warm up
enqueue = gc.measure(jdot, big, big, sync=False, repeat=5)
complete = gc.measure(jdot, big, big, repeat=5)
print(f"returned after {enqueue}; finished after {complete}")
assert enqueue.median < complete.median

# %% [markdown]
# ## Step 7 — Warps: the grid is cut into blocks, blocks into warps of 32 threads
#
# On a GPU the kernel's grid is split into blocks spread over the SMs, each block into warps (§5). The
# course's kernel runner shows the indexing with numba-cuda (the CUDA simulator on CPU):

# %%
cuda = be.cuda


@cuda.jit
def who_am_i(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0], out[i, 1], out[i, 2] = cuda.blockIdx.x, cuda.threadIdx.x, cuda.threadIdx.x // 32


ids = np.zeros((80, 3), np.int32)
d_ids = cuda.to_device(ids)
who_am_i[2, 64](d_ids)  # 2 blocks of 64 threads = 4 warps; 80 elements, so the last 48 threads idle
ids = d_ids.copy_to_host()
print("block, thread, warp of elements 0, 31, 32, 63, 64, 79:", [tuple(ids[i]) for i in (0, 31, 32, 63, 64, 79)])
assert tuple(ids[79]) == (1, 15, 0) and tuple(ids[32]) == (0, 32, 1)
h100 = gc.hardware.H100_SXM
print(f"an H100 has {h100.sm_count} SMs, each holding up to {h100.per_sm['max_warps']} resident warps")

# %% [markdown]
# ## Step 8 — Tensor cores execute the HMMA instructions
#
# Each `HMMA.16816` is one warp-wide 16×8×16 multiply-accumulate (2,048 FMAs). The seed's "4×4×4 per cycle" is
# the 2017 Volta figure; §6 checks it against the Hopper datasheet (verdict there: outdated). On a TPU the
# same dot runs on a systolic array instead (§7).

# %%
if gc.require_gpu("a cuBLAS bf16 GEMM timed with CUDA events and its achieved fraction of the tensor-core peak"):
    cp = be.xp
    n = 8192
    x16 = cp.ones((n, n), cp.float16)
    t = gc.measure(lambda: x16 @ x16, clock="cuda", repeat=5)
    print(f"{2 * n**3 / t.median / 1e12:.0f} TFLOP/s fp16 on this GPU")
peak = h100.peak_flops["bf16-tensor"]
print(f"H100 dense bf16 peak: {peak / 1e12:.0f} TFLOP/s = {peak / 2 / 2048 / 1e12:.3f} × 10^12 HMMA.16816 per second")

# %% [markdown]
# ## Step 9 — Write-back: the result stays in device memory
#
# `c` lands in HBM and stays there; the next op reads it from there (claim C24). A chain of ops never leaves
# the device until something asks for the values.

# %%
c = jdot(a_dev, b_dev)
d = jnp.tanh(c) @ b_dev  # consumes c where it lives
print("c is a", type(c).__name__, "on", c.devices(), "— no host copy made yet")
assert c.devices() == {be.jax_device} and d.devices() == {be.jax_device}

# %% [markdown]
# ## Step 10 — Copy home, only when asked
#
# `np.asarray(c)` (or printing, or `float(c[0, 0])`) is what triggers the device → host copy (§3), and it waits
# for the queued work first.

# %%
c_host = np.asarray(c)
assert isinstance(c_host, np.ndarray) and np.allclose(c_host, a @ b, rtol=1e-3, atol=1e-3)
print("copied home:", type(c_host).__name__, c_host.shape, "- matches NumPy's a @ b")

# %% [markdown]
# ## Claims check
#
# | ID | claim (seed 000) | what this machine shows / primary source | verdict |
# |---|---|---|---|
# | C23 | `jax.jit` traces with shapes and dtypes only, not values | step 1: a second call with other values does not re-run the Python; the trace recorded `((128, 128), 'float32')` only; §6.1: branching on a traced value fails | **confirmed** (qualified only by `static_argnums`, which makes chosen arguments part of the cache key by value) |
# | C24 | results stay in GPU memory between ops and return to the CPU only when needed | steps 9–10: `c` and the next result stay on the backend's device; the host copy happens at `np.asarray(c)` | **confirmed** — on a GPU the arrays live in HBM; JAX copies home only on request (printing, NumPy conversion, `device_get`) |
# | C25 | Blackwell handles FP8 in hardware through the Transformer Engine | primary source: NVIDIA Blackwell architecture technical brief (2024) — 2nd-generation Transformer Engine, FP8 and new FP4/FP6 tensor-core formats with micro-tensor scaling; FP8 tensor cores already existed on Hopper (H100 datasheet: 1,979 dense FP8 TFLOP/s, `gc.hardware`) | **qualified**: FP8 tensor-core math is hardware since Hopper (2022), not new in Blackwell; the Transformer Engine is NVIDIA's name for that hardware plus the library (`transformer_engine`) that picks per-tensor scales — Blackwell's novelty is FP4/FP6 and finer-grained scaling |
#
# **Next:** §1, BLAS levels and arithmetic intensity — `course/01_blas_roofline.ipynb`.
