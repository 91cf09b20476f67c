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
# # 1 — BLAS levels and arithmetic intensity (연산 밀도)
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/01_blas_roofline.ipynb)
#
# Almost everything a neural network computes is a matrix multiply (GEMM) or an elementwise op. This section
# measures why that split matters on real hardware — yours.
#
# **You will learn**
# - the three BLAS levels, counted (not just asserted) on the seed's own triple loop;
# - to compute FLOPs, bytes and arithmetic intensity for any shape and dtype;
# - to measure this machine's two roofs — memory bandwidth and peak FLOP/s — and place real ops under them;
# - why compilers turn work into GEMMs and fuse elementwise chains, measured.
#
# The lab for this section is `labs/lab01_blas_roofline/`.

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
import matplotlib.pyplot as plt
import numpy as np

import gpucourse as gc

be = gc.setup()
xp = be.xp  # NumPy on CPU, CuPy on a GPU: every measurement below runs on the backend's device

# %% [markdown]
# ## 1.1 Three levels of BLAS
#
# BLAS (Basic Linear Algebra Subprograms) sorts linear algebra by what it multiplies. The seed writes GEMM as
# $C = \alpha AB + \beta C$ with $A$ of shape $(M, K)$ and $B$ of shape $(K, N)$.
#
# | level | example | FLOPs | data touched | intensity (FLOP/element) |
# |---|---|---|---|---|
# | 1 — vector·vector | axpy `y ← a·x + y` | $2N$ | $3N$ | constant: 2/3 |
# | 2 — matrix·vector | gemv `y ← A·x` | $2MN$ | $MN + M + N$ | constant: ≈ 2 |
# | 3 — matrix·matrix | gemm `C ← A·B` | $2MNK$ | $MK + KN + MN$ | grows: ≈ $\frac{2}{3}N$ for square |
#
# One correction to the seed: it labels Level 2 with $O(MN + MK + KN)$ — that is the *data* of Level 3.
# Level 2 does $O(MN)$ work on $O(MN)$ data, which is exactly why it can never be compute-bound.
#
# The seed's pseudo-code makes the Level 3 claim concrete. `gc.blas.triple_loop_matmul` runs that loop for
# real, with a counter on every access:

# %%
# NBVAL_CHECK_OUTPUT
M, K, N = 6, 5, 4
rng = np.random.default_rng(0)
A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
C, counts = gc.blas.triple_loop_matmul(A, B)

assert np.allclose(C, A @ B)
assert counts.flops == 2 * M * N * K  # O(MNK) compute
assert counts.distinct_elements == M * K + K * N + M * N  # O(MN + MK + KN) data
print(f"FLOPs: {counts.flops}  = 2·M·N·K")
print(f"loads issued by the loop: {counts.loads}  = 2·M·N·K (every multiply reads A and B again)")
print(f"distinct elements touched: {counts.distinct_elements}  = MK + KN + MN")
print(f"each element is reused {counts.reuse:.1f}× on average")
# Expected output:
# FLOPs: 240  = 2·M·N·K
# loads issued by the loop: 240  = 2·M·N·K (every multiply reads A and B again)
# distinct elements touched: 74  = MK + KN + MN
# each element is reused 3.6× on average

# %% [markdown]
# Both of the seed's formulas hold — and the loop shows the condition it leaves out: the loop *issues*
# $2MNK$ loads; only when something keeps $A$ and $B$ close (caches, shared memory, registers: **tiling**, the
# lab's exercise 6) does memory see just the $MK + KN + MN$ distinct elements. Intensity is a property of the
# algorithm *and* of how well the hardware reuses data.
#
# Counting bytes instead of elements needs the dtype: intensity in FLOP/byte halves every time the element
# size doubles.

# %%
# NBVAL_CHECK_OUTPUT
def cost(op, n, dtype):
    """(FLOPs, bytes) of an n-sized op: compulsory traffic, each input read once, each output written once."""
    s = np.dtype(dtype).itemsize
    return {
        "axpy": (2 * n, 3 * n * s),
        "gemv": (2 * n * n, (n * n + 2 * n) * s),
        "gemm": (2 * n**3, 3 * n * n * s),
    }[op]


n = 4096
print(f"arithmetic intensity [FLOP/byte] at n = {n}")
print(f"{'op':6}" + "".join(f"{d:>10}" for d in ("float64", "float32", "float16", "int8")))
for op in ("axpy", "gemv", "gemm"):
    row = [cost(op, n, d)[0] / cost(op, n, d)[1] for d in ("float64", "float32", "float16", "int8")]
    print(f"{op:6}" + "".join(f"{v:>10.3g}" for v in row))
# Expected output:
# arithmetic intensity [FLOP/byte] at n = 4096
# op       float64   float32   float16      int8
# axpy      0.0833     0.167     0.333     0.667
# gemv        0.25       0.5         1         2
# gemm         341       683  1.37e+03  2.73e+03

# %% [markdown]
# ## 1.2 This machine's roofline, measured
#
# A machine has two roofs: how many FLOPs per second its arithmetic units can do, and how many bytes per second
# its memory can deliver. The **roofline** says an op of intensity $I$ can run at most at
# $\min(\text{peak FLOP/s},\ I \times \text{bandwidth})$. The two meet at the **ridge point**.
#
# Both roofs are measured here with the course's one timing helper (`gc.measure`: warm-up, synchronisation,
# median of repeats): bandwidth with a STREAM-style `c = a + b` on arrays far larger than the caches, peak
# FLOP/s with the backend's BLAS (OpenBLAS on CPU, cuBLAS on a GPU) on a 1024×1024 float32 GEMM.

# %%
bandwidth, t_bw = gc.roofline.measure_bandwidth(nbytes=64 * 2**20)
peak, t_peak = gc.roofline.measure_peak_flops(n=1024)
roof = gc.roofline.Roofline(f"this machine ({be.name}, measured)", peak, bandwidth)
print(f"memory bandwidth: {bandwidth / 1e9:7.1f} GB/s     (c = a + b on 64 MiB arrays, {t_bw})")
print(f"peak float32:     {peak / 1e9:7.1f} GFLOP/s (1024³ GEMM, {t_peak})")
print(f"ridge point:      {roof.ridge:7.1f} FLOP/byte: below it memory-bound, above it compute-bound")
assert bandwidth > 0 and peak > 0 and roof.ridge > 0.25

# %% [markdown]
# Now the three levels, float32, over a range of sizes. Each point is a median of repeated, synchronised runs.

# %%
f32 = np.float32


def run_axpy(n):
    x, y = xp.ones(n, f32), xp.ones(n, f32)
    return lambda: xp.add(f32(2.0) * x, y, out=y)  # NumPy's axpy: a scaled copy, then an add (see below)


def run_gemv(n):
    A, x = xp.ones((n, n), f32), xp.ones(n, f32)
    return lambda: A @ x


def run_gemm(n):
    A, B = xp.ones((n, n), f32), xp.ones((n, n), f32)
    return lambda: A @ B


sizes = {"axpy": [2**14, 2**18, 2**22], "gemv": [256, 1024, 4096], "gemm": [64, 256, 512, 1024]}
runners = {"axpy": run_axpy, "gemv": run_gemv, "gemm": run_gemm}
points = {}
for op, ns in sizes.items():
    for n in ns:
        flops, nbytes = cost(op, n, "float32")
        t = gc.measure(runners[op](n), repeat=7, max_seconds=1.5)
        points[op, n] = gc.roofline.OpPoint(f"{op} n={n}", flops, nbytes, t)
        p = points[op, n]
        print(f"{op} n={n:>8}: {t}  ->  {p.achieved_flops / 1e9:8.2f} GFLOP/s, {p.achieved_bandwidth / 1e9:7.1f} GB/s, "
              f"I = {p.intensity:6.2f} FLOP/B")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.4))
for op, ns in sizes.items():
    gc.plotting.axes("problem size n [elements per side]", "achieved [GFLOP/s]", "Throughput by BLAS level", ax=ax1)
    ax1.plot(ns, [points[op, n].achieved_flops / 1e9 for n in ns], marker="o", label=op)
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.legend()
largest = [points["axpy", 2**22], points["gemv", 4096], points["gemm", 1024], points["gemm", 64]]
gc.roofline.plot(ax2, [roof], largest)
ax2.set_title("Measured roofline of this machine")
plt.tight_layout()
plt.show()

# %% [markdown]
# Read the right-hand plot: axpy and gemv sit far left of the ridge, pinned to the slanted memory roof however
# large they get; a big GEMM sits right of it, near the flat compute roof. A *small* GEMM (n = 64) has a good
# intensity on paper but falls short of its roof: too little work per call to hide fixed costs — the first
# sign of the launch-overhead story of section 4.
#
# (A NumPy detail: `2*x + y` runs as two passes, so NumPy's axpy moves 5n elements, not the 3n of a fused BLAS
# `saxpy` — it sits *below* its memory roof for a reason that fusion, §1.4, removes.)

# %%
axpy, gemv, gemm = points["axpy", 2**22], points["gemv", 4096], points["gemm", 1024]
assert axpy.intensity < roof.ridge and gemv.intensity < roof.ridge, "Level 1 and 2 are memory-bound here"
assert gemm.intensity > roof.ridge, "a 1024³ float32 GEMM is right of the ridge point"
assert gemm.achieved_flops > 4 * gemv.achieved_flops, "Level 3 outruns Level 2 by far in FLOP/s"
print(f"gemm reaches {gemm.achieved_flops / gemv.achieved_flops:.0f}× the FLOP/s of gemv on this machine; "
      f"gemv runs at {gemv.achieved_bandwidth / bandwidth:.0%} of the measured memory roof")

# %% [markdown]
# ### The same ops on an H100 and an H200 (published figures)
#
# Datasheet roofs (`gc.hardware`, dense tensor-core throughput): the ridge of a data-centre GPU is far to the
# right of a CPU's, so *more* ops are memory-bound there. On a GPU backend the measured roofline above is the
# GPU's own: the same cells ran on CuPy and cuBLAS.

# %%
h100, h200 = gc.hardware.H100_SXM, gc.hardware.H200_SXM
gpu_roofs = [
    gc.roofline.Roofline("H100 SXM bf16 (datasheet)", h100.peak_flops["bf16-tensor"], h100.memory_bandwidth),
    gc.roofline.Roofline("H200 SXM bf16 (datasheet)", h200.peak_flops["bf16-tensor"], h200.memory_bandwidth),
    gc.roofline.Roofline("H100 SXM fp32 (datasheet)", h100.peak_flops["fp32"], h100.memory_bandwidth),
]
for r in gpu_roofs:
    print(f"{r.name:28} ridge at {r.ridge:6.1f} FLOP/byte")
ax = gc.plotting.axes("arithmetic intensity [FLOP/byte]", "attainable [GFLOP/s]")
gc.roofline.plot(ax, [roof] + gpu_roofs, imax=4096)
ax.set_title("Rooflines: this machine vs published GPU figures")
plt.show()
# a bf16 GEMM is compute-bound on an H100 only when its intensity passes ~295 FLOP/B, i.e. square n >= ~890
n_ridge = next(n for n in range(16, 10_000) if cost("gemm", n, "float16")[0] / cost("gemm", n, "float16")[1] >= gpu_roofs[0].ridge)
print(f"smallest square bf16 GEMM that is compute-bound on an H100: n = {n_ridge}")
assert 850 < n_ridge < 950

# %% [markdown]
# ## 1.3 Why compilers turn work into GEMMs
#
# Applying one weight matrix to 64 vectors can be 64 gemv calls — or one GEMM. Same FLOPs, but the GEMM reads
# `W` once instead of 64 times: intensity goes from ≈ 2 to ≈ 2·64·n/(n + 2·64) FLOP/element.

# %%
n, batch = 1024, 64
W = xp.asarray(rng.standard_normal((n, n)).astype(f32))
X = xp.asarray(rng.standard_normal((n, batch)).astype(f32))
columns = [X[:, i].copy() for i in range(batch)]
t_gemvs = gc.measure(lambda: [W @ x for x in columns], repeat=5)
t_gemm = gc.measure(lambda: W @ X, repeat=5)
assert np.allclose(be.to_host(xp.stack([W @ x for x in columns], axis=1)), be.to_host(W @ X), rtol=1e-3, atol=1e-3)
print(f"{batch} gemv calls: {t_gemvs}\none gemm call:  {t_gemm}\nspeed-up: {t_gemvs.median / t_gemm.median:.1f}×")
ratio = gc.confirm_faster(lambda: W @ X, lambda: [W @ x for x in columns], claim="one GEMM beats 64 gemv calls")

# %% [markdown]
# ## 1.4 Why compilers fuse elementwise chains
#
# The seed's example, `relu(x * y + z)`: three Level-1 ops, each memory-bound. Run one at a time (NumPy, or
# JAX op by op) and every intermediate result makes a round trip through memory: 8 arrays' worth of traffic.
# Under `jax.jit`, XLA fuses the chain into one kernel that reads `x, y, z` once and writes the result once:
# 4 arrays' worth. XLA's own cost model says so, and the clock agrees.

# %%
def seed_fn(x, y, z):
    return jnp.maximum(x * y + z, 0.0)


n = 2**22
xs = [jnp.asarray(rng.standard_normal(n).astype(f32), device=be.jax_device) for _ in range(3)]
fused = gc.xla.compiled(seed_fn, *xs)
print(fused.excerpt())
print(f"\nfusions in the compiled HLO: {fused.fusions}")
print(f"XLA's bytes accessed: {fused.bytes_accessed / (n * 4):.0f} arrays of n float32  (unfused: 8)")
assert len(fused.fusions) == 1 and fused.bytes_accessed == 4 * n * 4

# %%
x_np, y_np, z_np = (np.asarray(a) for a in xs)
timings = {
    "NumPy, op by op": gc.measure(lambda: np.maximum(x_np * y_np + z_np, 0.0), repeat=7),
    "JAX, op by op": gc.measure(lambda: jnp.maximum(xs[0] * xs[1] + xs[2], 0.0), repeat=7),
    "JAX, jit (fused)": gc.measure(jax.jit(seed_fn), *xs, repeat=7),
}
for name, t in timings.items():
    print(f"{name:18} {t}")
ax = gc.plotting.axes("implementation [-]", "time per call [ms]", f"relu(x·y + z) on {n:,} float32")
ax.bar(list(timings), [t.median * 1e3 for t in timings.values()],
       yerr=[[(t.median - t.q25) * 1e3 for t in timings.values()], [(t.q75 - t.median) * 1e3 for t in timings.values()]],
       color=gc.plotting.PALETTE[:3])
plt.show()
speedup = timings["JAX, op by op"].median / timings["JAX, jit (fused)"].median
print(f"fusion speed-up over op-by-op JAX: {speedup:.1f}× (traffic ratio 8/4 = 2×)")
ratio = gc.confirm_faster(jax.jit(seed_fn), lambda *a: jnp.maximum(a[0] * a[1] + a[2], 0.0), *xs,
                          claim="the fused kernel beats op-by-op dispatch")

# %% [markdown]
# ## Claims check
#
# | ID | claim (seed 000) | what this machine shows | verdict |
# |---|---|---|---|
# | C01 | BLAS Level 3 moves O(MN+MK+KN) data for O(MNK) compute, so GEMM is compute-bound | counted in §1.1 (2MNK FLOPs on MK+KN+MN distinct elements); measured in §1.2: a 1024³ GEMM sits right of the ridge point and reaches many times gemv's FLOP/s (printed above) — but a 64³ GEMM does not reach its roof, a skinny GEMM (batch 1 = gemv) is memory-bound, and the loop itself issues 2MNK loads unless tiling provides reuse | **qualified**: compute-bound only when all three dimensions are large enough for intensity ≈ 2/(s·(1/M+1/N+1/K)) to pass the ridge (≈ 890 for square bf16 on an H100) and the kernel tiles for reuse |
# | C02 | compilers turn as much as possible into GEMMs and fuse elementwise ops to cut memory traffic | §1.3: 64 gemvs → one GEMM is faster (speed-up printed above); §1.4: XLA's compiled HLO has one `kLoop` fusion for `relu(x*y+z)`, its cost model drops from 8 to 4 arrays of traffic, and the fused call beats op-by-op execution | **confirmed** |
#
# On a GPU the same cells measure the GPU (CuPy/cuBLAS for §1.2–1.3, JAX on the GPU for §1.4).
#
# **Next:** the lab, `labs/lab01_blas_roofline/lab01_blas_roofline.ipynb` — count, predict, tile and diagnose.
