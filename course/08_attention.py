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
# # 8 — Capstone: attention, fused (어텐션 — attention)
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/08_attention.ipynb)
#
# Attention (어텐션, attention) is the layer that made long contexts expensive.
# Written the obvious way — scores `S = QKᵀ/√d`, probabilities `P = softmax(S)`,
# output `O = PV` — it builds an s × s matrix per head and sends it through device memory several times.
# This section uses every tool of §1–§7 on it: count its FLOPs and bytes and place it on the roofline,
# run the naive kernels on the course's executor and count their traffic,
# read what XLA makes of it on this CPU and for an H100,
# derive the one trick that lets a fused kernel never write the s × s matrix (online softmax),
# and look at the fused kernel JAX ships — down to Hopper's `wgmma` instructions.
# Then inference: the KV cache, and why one decoding step is memory-bound (메모리 병목, memory-bound).
#
# **You will learn**
# - the FLOPs and bytes of naive attention, as formulas checked against XLA's cost model
#   and the executor's traffic counts, and the ideal lower bound (Q, K, V read once, O written once);
# - where naive and ideal attention sit on the roofline (루프라인, roofline) of an H100
#   and of this machine, and at which sequence length the s × s matrix stops fitting in 80 GB;
# - the online softmax (온라인 소프트맥스, online softmax) normalizer:
#   a running max and sum that give the exact log-sum-exp in one pass, and why it cannot overflow;
# - which kernels XLA forms for `jnp` attention on a CPU and for an H100, and where the s × s buffer is;
# - JAX's own fused Pallas kernel: run on this CPU, compiled for an H100 to `wgmma` / `HGMMA`,
#   and how its tile sizes set the instruction shapes;
# - the KV cache (KV 캐시, KV cache), prefill vs decode,
#   and why a decode step's attention is memory-bound at batch 1.
#
# The lab for this section is `labs/lab08_attention/`.

# %%
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

# %%
import math
import re

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from jax.experimental.pallas.ops.gpu import attention as pallas_attention

import gpucourse as gc
from gpucourse import simt, toolchain, xla_gpu

be = gc.setup()
cuda = be.cuda  # numba.cuda on a GPU; on CPU the course's executor (gpucourse.simt) with numba-cuda's API
h100 = gc.hardware.H100_SXM
rng = np.random.default_rng(0)
print(xla_gpu.describe())
# XLA:GPU here: the real GPU (compute capability 8.0 or later: Pallas' GPU kernels are not tried on older ones),
# or deviceless for an H100
GPU_XLA = be.gpu.compute_capability >= (8, 0) if be.is_gpu else xla_gpu.available()
SKIPPED = "[XLA:GPU] skipped: " + (xla_gpu.describe() if not be.is_gpu else "this GPU is older than compute capability 8.0")
TOL = 2e-2 if be.is_gpu else 1e-5  # a GPU's default float32 matmul is TF32 (§6.7); a CPU's is float32
# Every XLA:GPU compile of this section (8.3, 8.4), in ONE child process (JAX starts once; cached after).
# The child evaluates program text with jax, jnp and lax in scope, so the Pallas kernel's module is imported
# inside the text. The shapes: batch 1, 256 tokens, 2 heads, head dimension 64, float16.
PALLAS = "__import__('jax.experimental.pallas.ops.gpu.attention', fromlist=['mha'])"
MHA = (f"lambda q, k, v: {PALLAS}.mha(q, k, v, None, sm_scale=0.125, "
       f"block_sizes={PALLAS}.BlockSizes(block_q={{bq}}, block_k={{bk}}))")
NAIVE_BSHD = ("lambda q, k, v: jnp.einsum('bhqk,bkhd->bqhd', "
              "jax.nn.softmax(jnp.einsum('bqhd,bkhd->bhqk', q, k) * 0.125, axis=-1), v)")
GPU_SHAPE = ((1, 256, 2, 64), "float16")  # (batch, s, heads, d): the layout Pallas' mha takes
TILES = [(64, 32), (64, 128)]  # (block_q, block_k) of the two fused kernels compared in 8.4
GPU_PROGRAMS = [(NAIVE_BSHD, (GPU_SHAPE,) * 3, {})] + [(MHA.format(bq=bq, bk=bk), (GPU_SHAPE,) * 3, {})
                                                       for bq, bk in TILES]
if GPU_XLA:
    xla_gpu.compile_many(GPU_PROGRAMS)

# %% [markdown]
# ## 8.1 Naive attention: FLOPs and bytes
#
# One head of attention takes queries `Q`, keys `K` and values `V`, each s × d
# (s tokens, head dimension d), and computes
#
# $$S = QK^\top/\sqrt d,\qquad P = \mathrm{softmax}_{\text{rows}}(S),\qquad O = PV.$$
#
# **FLOPs.** `QKᵀ` is an (s × d)·(d × s) matrix product, 2·s²·d FLOPs (a multiply and an add per term);
# `PV` is (s × s)·(s × d), 2·s²·d again.
# The scaling and the softmax cost a few operations per score — scale, max, subtract, sum, divide (five
# FLOPs), and one exp, which cost models count apart, as a transcendental —
# s² terms against the matmuls' s²·d, so for d = 64 the five are under 2 % of the count (5/256):
#
# $$\text{FLOPs} \approx 4\,s^2 d \;(+\,5\,s^2)\quad\text{per head.}$$
#
# **Bytes, naive.** Three kernels, each reading its inputs from device memory and writing its output there
# (e bytes per value):
# the scores kernel reads Q and K (2·s·d) and writes S (s²);
# the softmax kernel reads S (s²) and writes P (s²);
# the PV kernel reads P (s²) and V (s·d) and writes O (s·d):
#
# $$\text{bytes}_\text{naive} = e\,(4\,s\,d + 4\,s^2)\quad\text{per head.}$$
#
# **Bytes, ideal.** Nothing forces the s × s matrices into memory:
# the lower bound reads Q, K, V once and writes O once, $e \cdot 4\,s\,d$ per head.
# For s ≫ d, naive attention moves about s/d times more — and its arithmetic intensity
# (연산 밀도, arithmetic intensity), FLOPs per byte, is stuck near d/e however long the sequence,
# while the ideal's grows as s/e.
#
# **Check the FLOPs against XLA.** The naive `jnp` version, jitted on this CPU (batch 1, 4 heads,
# s = 512, d = 64, float32), and XLA's own `cost_analysis()`:

# %%
def attention(q, k, v):
    """Naive attention for q, k, v of shape (batch, heads, s, d): the s × s scores go through memory."""
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    p = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v)


def naive_flops(b, h, s, d):
    return 4 * b * h * s * s * d  # QKᵀ and PV, 2·s²·d each (the softmax's ~5·s² left out)


def naive_bytes(b, h, s, d, e):
    return e * b * h * (4 * s * d + 4 * s * s)  # Q, K, V, O once; S written, read; P written, read


def ideal_bytes(b, h, s, d, e):
    return e * b * h * 4 * s * d  # Q, K, V read once, O written once


B, H, SEQ, D = 1, 4, 512, 64
q, k, v = (jnp.asarray(rng.standard_normal((B, H, SEQ, D)).astype(np.float32)) for _ in range(3))
cpu_attention = gc.xla.compiled(attention, q, k, v)
matmul_flops, scores = naive_flops(B, H, SEQ, D), B * H * SEQ * SEQ
# XLA counts exp (and log, tanh, …) apart from the FLOPs, as "transcendentals"
transcendentals = jax.jit(attention).lower(q, k, v).compile().cost_analysis().get("transcendentals", 0.0)
print(f"XLA's FLOPs: {cpu_attention.flops:,.0f}; formula 4·b·h·s²·d = {matmul_flops:,}; "
      f"the rest: {(cpu_attention.flops - matmul_flops) / scores:.2f} FLOPs per score, "
      f"plus {transcendentals / scores:.2f} transcendental per score")
if not be.is_gpu:  # on a GPU, XLA counts a library GEMM call as -1 FLOPs (§6)
    # scale, max, subtract, sum, multiply by the inverted sum: 5 FLOPs per score; the exp: 1 transcendental
    assert matmul_flops + 4.9 * scores < cpu_attention.flops < matmul_flops + 5.1 * scores
    assert 0.99 * scores < transcendentals < 1.01 * scores
    assert (cpu_attention.flops - matmul_flops) / matmul_flops < 0.02  # softmax: under 2 % of the FLOPs at d = 64
print(f"XLA's bytes accessed: {cpu_attention.bytes_accessed / 2**20:.2f} MiB; naive formula (e = 4): "
      f"{naive_bytes(B, H, SEQ, D, 4) / 2**20:.2f} MiB; ideal: {ideal_bytes(B, H, SEQ, D, 4) / 2**20:.2f} MiB")
s_by_s = 4 * scores  # bytes of one float32 s × s matrix per head, all heads
extra = cpu_attention.bytes_accessed - naive_bytes(B, H, SEQ, D, 4)
print(f"XLA's count minus the naive formula: {extra / s_by_s:.3f} s × s matrices")
if not be.is_gpu:  # XLA:CPU's plan (this JAX version): 5 passes over an s × s matrix, not 4 (explained below)
    assert abs(extra - s_by_s) < 8 * 4 * B * H * SEQ  # one more s × s pass, to a few length-s row vectors
print(re.sub(r", (calls|backend_config)=.*", "", cpu_attention.excerpt(12)))

# %% [markdown]
# XLA agrees on the FLOPs: the two matmuls' 4·s²·d, plus 5 per score for the 1/√d scaling and the
# softmax's max, subtract, sum and multiply by the inverted sum; the exp it counts apart, as one
# "transcendental" per score (both printed and asserted above).
# Its byte count is the naive formula **plus one more s × s matrix** (asserted above, on the CPU backend).
# The ENTRY computation shows why — five kernels (fusions), not three:
# the scores kernel (a YNNPACK `kCustom` fusion) also takes the row max and the `exp`,
# and writes `E = exp(S − max)`;
# a reduction kernel reads E for the row sums; a tiny one inverts them;
# a `kLoop` kernel reads E again to scale it into P; the last reads P and V.
# E is written once and read twice, P written and read once: 5 passes over an s × s matrix, where the
# three-kernel model has 4. Either way the s × s traffic dwarfs Q, K, V and O (4·s·d) when s ≫ d.
#
# **The three kernels, counted.** The same computation in the course's numba-cuda API,
# one kernel per step, run on the course's executor (`gpucourse.simt`), which records every load and store.
# Small shapes that are not multiples of the block: s = 37, d = 12.
# One thread per score, one per row of the softmax (three passes over its row: max, sum, write),
# one per output element:

# %%
@cuda.jit
def scores_kernel(Q, K, S, scale):
    i, j = cuda.grid(2)  # one thread per score: row i (query), column j (key)
    if i < S.shape[0] and j < S.shape[1]:
        acc = np.float32(0.0)
        for c in range(Q.shape[1]):
            acc += Q[i, c] * K[j, c]
        S[i, j] = acc * scale


@cuda.jit
def softmax_kernel(S, P):
    i = cuda.grid(1)  # one thread per row
    if i < S.shape[0]:
        m = S[i, 0]
        for j in range(1, S.shape[1]):
            m = max(m, S[i, j])
        total = np.float32(0.0)
        for j in range(S.shape[1]):
            total += math.exp(S[i, j] - m)
        for j in range(S.shape[1]):
            P[i, j] = math.exp(S[i, j] - m) / total


@cuda.jit
def pv_kernel(P, V, O):
    i, c = cuda.grid(2)  # one thread per output element: row i, column c
    if i < O.shape[0] and c < O.shape[1]:
        acc = np.float32(0.0)
        for j in range(P.shape[1]):
            acc += P[i, j] * V[j, c]
        O[i, c] = acc


s, d, TPB = 37, 12, 16
Qs, Ks, Vs = (rng.standard_normal((s, d)).astype(np.float32) for _ in range(3))
Sm, Pm, Om = np.zeros((s, s), np.float32), np.zeros((s, s), np.float32), np.zeros((s, d), np.float32)
runs = {
    "scores": simt.run(scores_kernel, (math.ceil(s / TPB), math.ceil(s / TPB)), (TPB, TPB), Qs, Ks, Sm,
                       np.float32(1 / math.sqrt(d))),
    "softmax": simt.run(softmax_kernel, math.ceil(s / 32), 32, Sm, Pm),
    "PV": simt.run(pv_kernel, (math.ceil(s / TPB), math.ceil(d / TPB)), (TPB, TPB), Pm, Vs, Om),
}
ref64 = Qs.astype(np.float64) @ Ks.T.astype(np.float64) / math.sqrt(d)
ref64 = np.exp(ref64 - ref64.max(axis=1, keepdims=True))
ref64 = (ref64 / ref64.sum(axis=1, keepdims=True)) @ Vs.astype(np.float64)
print(f"{'kernel':8} {'array':5} {'distinct read':>14} {'distinct written':>17} {'loads':>7} {'stores':>7}")
distinct_bytes = 0
for name, r in runs.items():
    assert r.ok and not r.float64_ops, r.summary()  # no races, all float32
    for array in r.arrays:
        read, written, loads, stores = r.array_traffic(array)
        distinct_bytes += (read + written) * r.itemsize[array]
        print(f"{name:8} {array:5} {read:14,} {written:17,} {loads:7,} {stores:7,}")
print(f"distinct bytes, all three kernels: {distinct_bytes:,}; naive formula e·(4sd + 4s²) = "
      f"{naive_bytes(1, 1, s, d, 4):,}; ideal 4·e·s·d = {ideal_bytes(1, 1, s, d, 4):,}")
print(f"max |O − float64 reference| = {np.abs(Om - ref64).max():.1e}")
assert np.abs(Om - ref64).max() < 1e-5
assert distinct_bytes == naive_bytes(1, 1, s, d, 4)  # the executor's count IS the naive formula
assert runs["scores"].array_traffic("S")[1] == s * s and runs["softmax"].array_traffic("S")[0] == s * s  # S: out, back
assert runs["softmax"].array_traffic("P")[1] == s * s and runs["PV"].array_traffic("P")[0] == s * s  # P: out, back
assert runs["scores"].array_traffic("Q")[2] == s * s * d  # without caches: every score loads its d-long row again
assert distinct_bytes * d == ideal_bytes(1, 1, s, d, 4) * (d + s)  # naive moves exactly (1 + s/d)× the ideal

# %% [markdown]
# Counted element by element: the distinct elements each kernel reads and writes add up to the naive
# formula exactly (asserted), and the table shows the s × s matrices' round trips — `S` written by the
# scores kernel and read back by the softmax kernel, `P` written by the softmax and read back by PV
# (s² = 1,369 elements each way).
# The load columns are what the threads *issue*: every score's thread loads its own row of Q and column
# of K (s²·d loads of Q, for s·d distinct values); caches or §5's shared-memory tiles turn those repeats
# into on-chip reads — but no cache holds an s × s matrix for long sequences, which is why the distinct
# counts are the device-memory traffic to reason about.
# Naive over ideal is (4sd + 4s²)/(4sd) = 1 + s/d: about 4× here, 65× at s = 4096, d = 64.
#
# **On the roofline.** Intensity = FLOPs / bytes. Naive: $4s^2d / (e(4sd + 4s^2)) = sd/(e(s+d))$,
# below d/e whatever s is; ideal: $4s^2d/(4esd) = s/e$, growing with s.
# The H100 (bf16 tensor cores, HBM, datasheet figures in `gc.hardware`) at s = 4096, d = 64, e = 2;
# this machine (float32, e = 4, its roofs measured now: read bandwidth, and a 1024² GEMM in JAX)
# at the 8.1 shape, with the naive `jnp` attention's measured throughput as a point:

# %%
h100_roof = gc.roofline.Roofline("H100 SXM bf16 (datasheet)", h100.peak_flops["bf16-tensor"], h100.memory_bandwidth)
bandwidth, _ = gc.roofline.measure_bandwidth(nbytes=64 * 2**20, repeat=3)
a_mat = jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32))
gemm, naive_jit = jax.jit(jnp.matmul), jax.jit(attention)
# the compute roof: a 1024² float32 GEMM through the same JAX, interleaved with the attention so both see one load
t_both = gc.roofline.measure_interleaved({"gemm": lambda: gemm(a_mat, a_mat), "attention": lambda: naive_jit(q, k, v)},
                                         rounds=5, clock_="host")
here_roof = gc.roofline.Roofline(f"this machine ({be.name}, measured)", 2 * 1024**3 / t_both["gemm"].best, bandwidth)
t_naive = t_both["attention"]
measured = gc.roofline.OpPoint(f"naive jnp attention, measured here (s={SEQ}, float32)",
                               naive_flops(B, H, SEQ, D), naive_bytes(B, H, SEQ, D, 4), t_naive)
points = {  # (roofline, intensity [FLOP/byte], label)
    "h100 naive": (h100_roof, naive_flops(1, 1, 4096, 64) / naive_bytes(1, 1, 4096, 64, 2), "H100: naive, s=4096 bf16"),
    "h100 ideal": (h100_roof, naive_flops(1, 1, 4096, 64) / ideal_bytes(1, 1, 4096, 64, 2), "H100: ideal, s=4096 bf16"),
    "here naive": (here_roof, naive_flops(B, H, SEQ, D) / naive_bytes(B, H, SEQ, D, 4), f"here: naive, s={SEQ} f32"),
    "here ideal": (here_roof, naive_flops(B, H, SEQ, D) / ideal_bytes(B, H, SEQ, D, 4), f"here: ideal, s={SEQ} f32"),
}
for roof in (h100_roof, here_roof):
    print(f"{roof.name}: ridge {roof.ridge:.1f} FLOP/byte")
for key, (roof, intensity, label) in points.items():
    print(f"  {label:28} {intensity:8.1f} FLOP/byte → {roof.bound(intensity)}-bound, "
          f"at most {roof.attainable(intensity) / 1e12:.3f} TFLOP/s")
print(f"measured here: {t_naive}, {measured.achieved_flops / 1e9:.1f} GFLOP/s at the best run")
ax = gc.plotting.axes("arithmetic intensity [FLOP/byte]", "attainable throughput [GFLOP/s]",
                      "attention on two rooflines: naive vs ideal bytes", figsize=(8, 5))
gc.roofline.plot(ax, [h100_roof, here_roof], [measured], imin=1, imax=8192)
for j, (key, (roof, intensity, label)) in enumerate(points.items()):
    ax.scatter([intensity], [roof.attainable(intensity) / 1e9], marker="osD^"[j], s=60, zorder=4,
               facecolor="none", edgecolor=gc.plotting.PALETTE[j % len(gc.plotting.PALETTE)], label=label)
ax.legend(fontsize=7, loc="upper left")
plt.show()
assert 31 < points["h100 naive"][1] < 32 and points["h100 ideal"][1] == 2048  # s·d/(e(s+d)) and s/e
assert points["h100 naive"][1] < h100_roof.ridge / 9 and points["h100 ideal"][1] > 6 * h100_roof.ridge
assert abs(h100_roof.ridge - 295) < 1  # 989.4 TFLOP/s / 3.35 TB/s
assert naive_bytes(1, 1, 4096, 64, 2) == 65 * ideal_bytes(1, 1, 4096, 64, 2)  # 1 + s/d at s = 4096, d = 64
assert points["here naive"][1] < 16 < points["here ideal"][1] == SEQ / 4  # below d/e = 16; ideal s/e = 128
assert measured.achieved_flops < 1.5 * float(here_roof.attainable(measured.intensity))  # not above this roof

# %% [markdown]
# On the H100 the naive version sits at about 31 FLOP/byte, roughly a tenth of the ridge
# (295 FLOP/byte): memory-bound, at most about a tenth of the tensor cores' peak (asserted above;
# the printout gives the figures).
# The ideal version of the same attention sits at s/e = 2048 FLOP/byte, far right of the ridge:
# compute-bound. Same FLOPs, and 1 + s/d = 65× fewer bytes — that is the gap a fused kernel goes after.
# This machine's roofs and the naive point measured on it are printed above;
# where its ridge falls relative to the two intensities depends on the machine (the printout says which
# side each lands on), and the measured point stays under its roof (asserted, with a 1.5× margin for load:
# the bandwidth is `gc.roofline`'s one-core read stream, the compute roof a JAX GEMM on all cores).
# Where this machine's ridge lies left of naive attention's intensity, the s × s traffic is not what limits
# it here, and fusing would buy little on this CPU — one reason 8.6 matters on a GPU.
#
# **When the s × s matrix stops fitting.** Model: one layer's forward, batch b, h heads, one s × s matrix
# per head of e bytes — b·h·s²·e bytes — against the H100's 80 GB (`gc.hardware`, 80·10⁹ bytes).
# For b = 1, h = 32 heads (Llama 2 7B's count; Touvron et al. 2023) and bf16 (e = 2):

# %%
heads, elem = 32, 2
s_max = math.isqrt(int(h100.memory_bytes) // (1 * heads * elem))
print(f"largest s with 1·{heads}·s²·{elem} bytes ≤ {h100.memory_bytes / 1e9:.0f} GB: s = {s_max:,}")
for seq in (8192, 32768, 65536):
    need = heads * seq * seq * elem
    print(f"  s = {seq:6,}: {need / 1e9:7.1f} GB for the scores alone ({need / h100.memory_bytes:.2f}× the H100)")
assert 35_300 < s_max < 35_400
assert heads * 32768**2 * elem <= h100.memory_bytes < heads * 65536**2 * elem
assert 68 < heads * 32768**2 * elem / 1e9 < 70 and 270 < heads * 65536**2 * elem / 1e9 < 280
# XLA's memory analysis on this CPU: the temporaries of the 8.1 program
print(f"XLA's temp buffer for s = {SEQ}, {H} heads, float32: {cpu_attention.temp_bytes / 2**20:.1f} MiB; "
      f"one s × s matrix per head: {B * H * SEQ * SEQ * 4 / 2**20:.1f} MiB")
if not be.is_gpu:
    assert cpu_attention.temp_bytes >= B * H * SEQ * SEQ * 4  # at least one full s × s matrix lives in memory
    assert cpu_attention.temp_bytes == 2 * B * H * SEQ * SEQ * 4  # E and P, both live (8.3 shows them)

# %% [markdown]
# 32,768 tokens fit (about 69 GB, for the scores of one layer alone); 65,536 need about 275 GB.
# A real naive implementation needs more — S and P, the weights, the KV cache —
# so s_max ≈ 35 thousand is an upper bound against the datasheet's 80·10⁹ bytes, and the wall comes sooner.
# (The card's memory is a little larger than that figure — 80 GiB of HBM3, about 79.6 GiB usable, which
# would move the bound to about 36 thousand; the conclusion does not change.)
# XLA's own memory analysis on this CPU shows the s × s buffers for what they are:
# its `temp` allocation is exactly two float32 s × s matrices per head (8 MiB at s = 512, 4 heads).

# %% [markdown]
# ## 8.2 Online softmax: the normalizer in one pass
#
# A fused kernel wants to read each key once, in order, and never hold a whole row of scores.
# The softmax seems to forbid that: its denominator $\sum_i e^{x_i}$ needs every score,
# and computing it safely needs the row's **maximum** first — $e^{x}$ overflows float32 from x ≈ 88.7 on,
# so one subtracts $m = \max_i x_i$ and sums $e^{x_i - m} \le 1$. Max first, then sum: two passes.
#
# Milakov & Gimelshein ("Online normalizer calculation for softmax", 2018, arXiv:1805.02867)
# do both in one. Keep, after j scores, the running max and the sum *relative to it*:
#
# $$m_j = \max(m_{j-1}, x_j),\qquad l_j = \sum_{i \le j} e^{x_i - m_j}.$$
#
# Because $e^{x_i - m_j} = e^{x_i - m_{j-1}}\, e^{m_{j-1} - m_j}$ exactly, the old sum only needs
# rescaling when the max moves:
#
# $$l_j = l_{j-1}\, e^{m_{j-1} - m_j} + e^{x_j - m_j},\qquad m_0 = -\infty,\; l_0 = 0.$$
#
# After the last score, $\log \sum_i e^{x_i} = m_n + \log l_n$ (the log-sum-exp) and
# $\mathrm{softmax}_i = e^{x_i - m_n} / l_n$.
# Nothing is approximated: the recurrence is an identity, so the result is the two-pass one up to
# rounding. And nothing can overflow: every exponent is ≤ 0, so every term is in (0, 1] and $1 \le l_j \le j$.
# (A masked score is −∞ and adds $e^{-\infty} = 0$. A row whose every score is masked has $l = 0$ and
# log-sum-exp $\log 0 = -\infty$, the lab's convention, and what FlashAttention-3's current kernel
# stores (`hopper/softmax.h`; an earlier version of it stored +∞ when not split, as FlashAttention-2's
# non-split kernel still does). Either way the row's output is 0 — the lab's kernel has to
# get that case right.)
#
# The recurrence, on a stream of 2,000 float32 scores around 80 (some above 88.7),
# against a two-pass log-sum-exp in float64:

# %%
def online_logsumexp(stream):
    """Log-sum-exp of a stream of float32 scores in one pass: the running max m and the running sum l of
    exp(x − m), rescaled by exp(m_old − m_new) whenever the max moves (Milakov & Gimelshein 2018)."""
    m, l = np.float32(-np.inf), np.float32(0.0)
    for x in stream:
        m_new = max(m, x)
        l = l * np.exp(m - m_new) + np.exp(x - m_new)
        m = m_new
    return m + np.log(l), m, l


x32 = (80 + 4 * rng.standard_normal(2000)).astype(np.float32)
x64 = x32.astype(np.float64)
reference = x64.max() + np.log(np.sum(np.exp(x64 - x64.max())))  # two passes, float64
lse, m_final, l_final = online_logsumexp(x32)
shuffled, _, _ = online_logsumexp(rng.permutation(x32))
with np.errstate(over="ignore"):  # the overflow is the point: keep NumPy's warning out of the output
    no_max = np.log(np.sum(np.exp(x32)))  # float32, no max subtracted
    e88, e89 = np.exp(np.float32(88.0)), np.exp(np.float32(89.0))
print(f"scores: {x32.size}, largest {x32.max():.1f}, {(x32 > 88.72).sum()} above ln(float32 max) = "
      f"{np.log(np.finfo(np.float32).max):.2f}")
print(f"online (float32, one pass): {lse:.6f}  (m = {m_final:.3f}, l = {l_final:.3f})")
print(f"same stream shuffled:       {shuffled:.6f}")
print(f"two-pass float64 reference: {reference:.6f}   |online − reference| = {abs(lse - reference):.1e}")
print(f"float32 exp(88) = {e88:.3e}, exp(89) = {e89}; log(sum(exp(x))) without the max: {no_max}")
assert abs(lse - reference) < 1e-4 and abs(shuffled - reference) < 1e-4  # exact up to float32 rounding
assert 1 <= l_final <= x32.size and m_final == x32.max()  # l stays in [1, n]: no overflow possible
assert np.isinf(e89) and np.isfinite(e88) and np.isinf(no_max) and (x32 > 89).any()
assert abs(np.log(np.finfo(np.float32).max) - 88.72) < 0.01 and 80 < lse < 110

# %% [markdown]
# One pass, in float32, in any order: the log-sum-exp agrees with the float64 two-pass value to
# float32 rounding (|difference| printed and asserted below 10⁻⁴, on a value near 100),
# while the sum without the max overflows — `exp(89)` is already `inf` in float32.
# The final `l` is a count-like number between 1 and the stream's length, as derived.
#
# **From the normalizer to attention (prose only: the lab builds it).**
# FlashAttention (Dao et al. 2022) applies the same identity to the *output* as well:
# walking K and V tile by tile, each query row keeps its running max m, its running sum l and its output.
# When a new tile raises the max from $m_\text{old}$ to $m_\text{new}$, the output so far is rescaled by
# $e^{m_\text{old} - m_\text{new}}$, exactly as l is above, before the tile's own terms are added.
# The 2022 algorithm keeps that output normalised, dividing by the new l at every step (its Algorithm 1,
# line 12); FlashAttention-2 (Dao 2023, §3.1.1) keeps it *unnormalised* — the sum of
# $e^{x_i - m}\, v_i$ so far — and divides by l once, at the end: fewer non-matmul FLOPs, the form lab 8 asks for.
# The s × s matrices never exist outside the chip: each tile of scores lives in registers and shared memory
# for one step (the running output, d values per row, is the thread's own: registers, or local memory that
# the L1 cache holds). For training, the forward saves the row statistics instead of P — FlashAttention (2022) saves
# m and l, FlashAttention-2 (Dao 2023, §3.1) only their log-sum-exp $m + \log l$ —
# and the backward recomputes P from them instead of reading a stored s × s matrix.
# Writing that update, and the kernel around it on the executor, is lab 8.
#
# ## 8.3 What XLA does with `jnp` attention
#
# Fusion (커널 융합, kernel fusion) in §6 merged elementwise chains; attention has two matmuls and
# two reductions in a row. What XLA makes of it, on this CPU — each ENTRY fusion, its kind and its output —
# and where the s × s values are in its buffer assignment (`gc.xla.buffer_assignment`, XLA's own dump):

# %%
FUSION = re.compile(r"%(\S+) = (\S+?)\{[^}]*\} fusion\(.*?kind=(k\w+)(?:.*?\"kind\":\"(\w+)\")?")


def fusions_of(hlo):
    """(name, output type, fusion kind, code-generator kind) of each fusion in the ENTRY computation."""
    start = hlo.index("\nENTRY ")  # the entry computation: from its header to its closing brace
    entry_lines = hlo[start:hlo.index("\n}", start)].splitlines()
    return [m.groups() for m in map(FUSION.search, entry_lines) if m]


for name, shape, kind, generator in fusions_of(cpu_attention.hlo):
    print(f"  {name:26} {kind:8} {generator or '':14} → {shape}")
temp = [a for a in gc.xla.buffer_assignment(attention, q, k, v) if a.kind == "temp"]
square = B * H * SEQ * SEQ * 4  # bytes of one float32 s × s matrix, all heads
for a in temp:
    print(f"temp allocation {a.index}: {a.size / 2**20:.1f} MiB holding "
          + ", ".join(f"{name} ({size / 2**20:.1f} MiB at offset {off / 2**20:.0f} MiB)" for name, size, off in a.values))
if not be.is_gpu:
    assert sum(size == square for a in temp for _, size, _ in a.values) >= 1
    assert [kind for _, _, kind, _ in fusions_of(cpu_attention.hlo)] == ["kCustom", "kCustom", "kLoop", "kLoop", "kCustom"]
    assert [size for a in temp for _, size, _ in a.values] == [square, square]  # E and P, side by side

# %% [markdown]
# Five kernels on the CPU, as 8.1 read off the byte count: the two matmuls are YNNPACK `kCustom` fusions
# (the first also takes the scaling, the row max and the `exp`), the row sum another,
# then two `kLoop`s: a tiny one inverting the row sums, and the s × s one that scales E into P.
# The temporary allocation holds two full s × s matrices side by side:
# E = exp(S − max) and P.
#
# For an H100, deviceless (§6's `gc.xla_gpu`, when the XLA:GPU plugin is installed),
# the same attention in float16 at (batch 1, s = 256, 2 heads, d = 64):

# %%
if GPU_XLA:
    gpu_naive = xla_gpu.compile_many(GPU_PROGRAMS[:1])[0]
    print(gpu_naive.provenance())
    for name, shape, kind, generator in fusions_of(gpu_naive.hlo):
        print(f"  {name:26} {kind:8} {generator or '':28} → {shape}")
    print(f"memory analysis: {gpu_naive.memory}")
    gpu_temp = [a for a in gpu_naive.allocations() if a.kind == "temp"]
    for a in gpu_temp:
        print(f"temp allocation {a.index}: {a.size:,} B holding "
              + ", ".join(f"{name} ({size:,} B at {off:,})" for name, size, off in a.values))
    f16_square = 1 * 2 * 256 * 256 * 2  # bytes of one float16 s × s matrix, both heads
    assert gpu_naive.memory["temp"] >= 2 * f16_square  # S and P in device memory
    if not be.is_gpu:  # deviceless, untuned: what this JAX version's XLA:GPU plans
        generators = [g for _, _, _, g in fusions_of(gpu_naive.hlo)]
        assert len(generators) == 4 and generators.count("__triton_nested_gemm_fusion") == 2
        assert generators.count("__triton") == 1 and "f32[2,4,64,256]" in gpu_naive.hlo  # PV split in 4 parts
        values = {name: size for a in gpu_temp for name, size, _ in a.values}
        assert sorted(size for name, size in values.items() if size == f16_square) == [f16_square] * 2
else:
    print(SKIPPED)

# %% [markdown]
# When XLA:GPU is available the cell above lists four kernels for the H100
# (otherwise it printed why it skipped): two Triton GEMM fusions (`__triton_nested_gemm_fusion`: QKᵀ with
# the scaling fused in, and PV), **one** Triton softmax fusion (`__triton`: max, exp, sum and divide in one
# kernel that reads S once and writes P — the three-kernel model of 8.1 exactly), and a last fusion that
# sums the PV GEMM's partial results (the untuned deviceless tile splits PV's s-long reduction
# into 4 parts, float32 partial outputs; an autotuned GPU may choose otherwise).
# The buffer assignment holds S and P, float16 s × s each (asserted deviceless).
# XLA fuses *around* the matmuls; it does not fuse the two matmuls and the softmax into one kernel.
#
# `jax.nn.dot_product_attention` is JAX's attention API. Its docstring (JAX 0.10): `implementation`
# is `"xla"` or `"cudnn"` ("cuDNN flash attention"), and the default `None` "currently falls back to `xla`";
# `cudnn` "supports only a subset of shapes/dtypes" and raises otherwise.
# With `implementation="xla"` on this CPU (it takes (batch, s, heads, d)):

# %%
bshd = [jnp.swapaxes(t, 1, 2) for t in (q, k, v)]  # (batch, s, heads, d)
dpa_jit = jax.jit(lambda a, b, c: jax.nn.dot_product_attention(a, b, c, implementation="xla"))
out_dpa = dpa_jit(*bshd)
dpa = gc.xla.of_executable(dpa_jit.lower(*bshd).compile())  # JAX's cache hands back the executable just run
print(f"fusions: {[kind for _, _, kind, _ in fusions_of(dpa.hlo)]}")
print(f"FLOPs {dpa.flops:,.0f} (naive jnp: {cpu_attention.flops:,.0f}); temp {dpa.temp_bytes / 2**20:.2f} MiB "
      f"(naive jnp: {cpu_attention.temp_bytes / 2**20:.2f} MiB)")
err = float(jnp.abs(jnp.swapaxes(out_dpa, 1, 2) - attention(q, k, v)).max())
print(f"max |dot_product_attention − naive| = {err:.1e}")
assert err < TOL
if not be.is_gpu:  # the same s × s plan: two s × s matrices, and under 1 MiB besides
    assert dpa.flops == cpu_attention.flops and 2 * square <= dpa.temp_bytes < 2 * square + 2**20

# %% [markdown]
# The same computation and the same s × s temporaries (2 × 4 MiB, plus a little for the layout
# transposes): on a CPU, `dot_product_attention` is naive attention in a nicer wrapper.
# Which kernel it selects on a GPU is what JAX's docs above say and no more:
# `"xla"` unless you ask for `"cudnn"`.
#
# ## 8.4 A fused kernel as JAX ships it: Pallas flash attention
#
# JAX ships a fused attention written in Pallas for GPUs,
# `jax.experimental.pallas.ops.gpu.attention.mha` (a library call here: the course does not write its own).
# Pallas runs it on this CPU with `interpret=True` — slowly, but the same program:
# a grid over (query tiles of `block_q` rows, batch, heads), each step walking K and V in tiles of `block_k`
# — tiling (타일링, tiling) as in §5 and §7.
# Checked against the library's own `mha_reference` and our naive attention
# (shape (batch 1, s = 128, 1 head, d = 64): two query tiles, two K/V tiles each; float32, scale 1/√d):

# %%
qp, kp, vp = (jnp.asarray(rng.standard_normal((1, 128, 1, 64)).astype(np.float32)) for _ in range(3))
fused = pallas_attention.mha(qp, kp, vp, None, sm_scale=1 / 8, interpret=True,
                             block_sizes=pallas_attention.BlockSizes(block_q=64, block_k=64))
ref = pallas_attention.mha_reference(qp, kp, vp, None, sm_scale=1 / 8)
ours = jnp.swapaxes(attention(*(jnp.swapaxes(t, 1, 2) for t in (qp, kp, vp))), 1, 2)
print(f"max |mha − mha_reference| = {float(jnp.abs(fused - ref).max()):.1e}; "
      f"max |mha − naive attention| = {float(jnp.abs(fused - ours).max()):.1e}")
assert float(jnp.abs(fused - ref).max()) < TOL and float(jnp.abs(fused - ours).max()) < TOL

# %% [markdown]
# Compiled for an H100 (deviceless, sm_90a; float16, s = 256, d = 64), it becomes one Triton custom-call and
# no temporary buffer at all. **Predict** its tensor-core instructions first.
# With d ≤ 64 the kernel runs 4 warps (`mha`'s default) = one warpgroup, and a Hopper `wgmma` computes a
# 64-row slab: shape m64 × n × k16. Per K/V tile (the loop body, which the PTX holds once):
# - `S_tile = Q_tile · K_tileᵀ` is (block_q × d)·(d × block_k): (block_q/64)·(d/16) `wgmma` of n = block_k;
# - `acc += P_tile · V_tile` is (block_q × block_k)·(block_k × d): (block_q/64)·(block_k/16) of n = d.
#
# Two tilings, (block_q, block_k) = (64, 32) and (64, 128), compiled; the PTX counted, and the SASS
# `ptxas` makes of it (`gc.toolchain`, when installed):

# %%
if GPU_XLA:
    for (bq, bk), r in zip(TILES, xla_gpu.compile_many(GPU_PROGRAMS[1:])):
        hd = GPU_SHAPE[0][3]  # head dimension
        predicted = {f"m64n{bk}k16": (bq // 64) * (hd // 16), f"m64n{hd}k16": (bq // 64) * (bk // 16)}
        found = {m.group(1): n for op, n in r.ptx_instructions().items()
                 if (m := re.match(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)\.f32\.f16\.f16$", op))}
        print(f"block_q={bq}, block_k={bk}: entry {gc.xla.entry_ops(r.hlo)[-1]}, temp {r.memory['temp']} B; "
              f"PTX wgmma {found}, predicted {predicted}")
        if toolchain.available():
            sass = r.sass()
            print(f"  SASS: {dict(sass.variants('HGMMA'))}, HMMA {sass.count('HMMA')}")
            if not be.is_gpu:
                assert sass.count("HGMMA") == sum(predicted.values()) and sass.count("HMMA") == 0
        assert r.memory["temp"] == 0  # no s × s buffer, nor any other
        if not be.is_gpu:  # deviceless for an H100 (sm_90a): a real GPU's Pallas may tune differently
            assert found == {shape: n for shape, n in predicted.items()}, (found, predicted)
    if not toolchain.available():
        print("SASS skipped: " + toolchain.describe())
else:
    print(SKIPPED)

# %% [markdown]
# When XLA:GPU is available, the listing above (deviceless, for an H100) matches the prediction
# (asserted): `block_k` sets the n of the QKᵀ `wgmma` (m64n32k16 vs m64n128k16) and, through the
# k-steps of PV, the number of m64n64k16 — so (64, 128) issues four times as many PV
# instructions per tile as (64, 32), over a quarter as many K/V tiles.
# In SASS the same instructions are `HGMMA.64xNx16.F32` — Hopper's warpgroup tensor-core path of §6.7,
# not Ampere's `HMMA`. And `temp` is 0 bytes: the scores live in registers and shared memory, tile by tile.
# What the kernel moves through HBM, tile size by tile size, is one of the lab's exercises.
#
# ## 8.5 Inference: the KV cache, prefill and decode
#
# A decoder generates one token at a time, and each new token attends to every token before it.
# Recomputing the keys and values of the past at every step would be wasteful, so they are kept: the
# **KV cache** (KV 캐시, KV cache) holds K and V of every past token, in every layer and every key/value
# head. Per token:
#
# $$\text{KV bytes per token} = 2 \cdot \text{layers} \cdot \text{kv\_heads} \cdot \text{head\_dim}
# \cdot e.$$
#
# **Prefill** (프리필, prefill) processes the whole prompt at once: s queries against s keys,
# the attention of 8.1, whose ideal intensity grows as s/e.
# **Decode** (디코드, decode) processes one new query per sequence against the t cached keys:
# per head, 2·t·d FLOPs for q·Kᵀ and 2·t·d for p·V, while K and V — t·d values each — must be read
# from memory, all of them, for this one query. At batch 1 its intensity is
#
# $$\frac{4\,t\,d}{e\,(2\,t\,d + 2\,d)} \approx \frac{2}{e},$$
#
# about 1 FLOP per byte in bf16, whatever t. Llama 2 7B's shape (32 layers, 32 heads, all of them
# key/value heads, head dimension 128; Touvron et al. 2023), in float16:

# %%
layers, kv_heads, head_dim, e = 32, 32, 128, 2
kv_per_token = 2 * layers * kv_heads * head_dim * e
context = 4096
print(f"KV cache: {kv_per_token:,} B = {kv_per_token / 2**10:.0f} KiB per token; "
      f"{context:,} tokens: {kv_per_token * context / 2**30:.1f} GiB per sequence")


def decode_intensity(t, d, e):
    """FLOPs per byte of one decode step's attention, one head, batch 1: q·Kᵀ and p·V over t cached tokens;
    K and V read (t·d values each), q read and o written (d values each)."""
    return 4 * t * d / (e * (2 * t * d + 2 * d))


ts = np.unique(np.geomspace(16, 131072, 60).astype(int))
ax = gc.plotting.axes("tokens in context, t [tokens]", "arithmetic intensity [FLOP/byte]",
                      "attention's intensity, bf16: prefill (ideal) vs decode at batch 1")
ax.loglog(ts, ts / e, label="prefill, ideal bytes: s/e")
ax.loglog(ts, decode_intensity(ts, head_dim, e), label="decode, batch 1: ≈ 2/e")
ax.axhline(h100_roof.ridge, color="grey", linestyle=":", label=f"H100 bf16 ridge, {h100_roof.ridge:.0f}")
ax.legend(fontsize=8)
plt.show()
di = decode_intensity(context, head_dim, e)
read_ms = kv_per_token * context / h100.memory_bandwidth * 1e3
compute_us = 4 * context * head_dim * kv_heads * layers / h100.peak_flops["bf16-tensor"] * 1e6
print(f"decode at t = {context:,}: {di:.4f} FLOP/byte, {h100_roof.ridge / di:.0f}× below the H100's ridge")
print(f"one decode step's attention on an H100, all layers: reading the KV cache ≥ {read_ms:.2f} ms; "
      f"its FLOPs at the bf16 peak: {compute_us:.1f} µs")
print(f"prefill (ideal bytes) reaches the ridge at s = {math.ceil(h100_roof.ridge * e)} tokens")
assert kv_per_token == 512 * 2**10 and kv_per_token * context == 2 * 2**30  # 0.5 MiB per token, 2 GiB
assert 0.99 < di < 1.0 and all(decode_intensity(t, head_dim, e) < 1 for t in ts)  # ≈ 2/e, whatever t
assert 290 < h100_roof.ridge / di < 300 and 0.6 < read_ms < 0.7 and 2 < compute_us < 2.5
assert math.ceil(h100_roof.ridge * e) == 591

# %% [markdown]
# Half a MiB of cache per token for this model, 2 GiB for one sequence of 4,096 tokens.
# A decode step's attention does 1 FLOP per byte it reads — about 295× below the H100's ridge —
# so its time is the time to stream the cache: at least 0.64 ms per step at the datasheet bandwidth for
# 4,096 tokens, against about 2 µs of tensor-core work.
# The step is memory-bound by a factor of the ridge itself.
# Prefill, with all s queries reusing each K and V row, crosses the ridge near 600 tokens (ideal bytes).
# (What batching does to a whole layer's decode step — weights shared by the batch, caches not — is the lab's.)
#
# ## 8.6 On a GPU: naive vs fused, timed
#
# On a GPU backend the next cell times, at (batch 1, s = 4096, 16 heads, d = 64) in bfloat16, the naive
# `jnp` attention (through `jax.nn.dot_product_attention(implementation="xla")`) against JAX's Pallas
# `mha` compiled for the GPU, and checks that the fused kernel is faster.
# JAX runs on its own CUDA streams, which the CuPy events of `gc.measure(..., clock="cuda")` do not bracket
# (§6.8), so both are timed with `gc.measure`'s host clock after `block_until_ready` — against kernels of
# milliseconds, the host's synchronisation is a few microseconds.
# On a CPU the cell prints what it would measure and the published figures instead.

# %%
FIGURES = [  # (source, what was measured, value, unit): cited, not measured here
    ("Dao et al. 2022, FlashAttention (arXiv:2205.14135), abstract", "end-to-end speed-up, GPT-2, seq. 1K", 3, "×"),
    ("Dao et al. 2022, FlashAttention, abstract", "end-to-end speed-up, BERT-large, seq. 512, vs MLPerf 1.1", 15, "%"),
    ("Dao 2023, FlashAttention-2 (arXiv:2307.08691), abstract", "speed-up over FlashAttention", 2, "× (around)"),
    ("Dao 2023, FlashAttention-2, abstract", "training throughput per A100", 225, "TFLOP/s"),
    ("Shah et al. 2024, FlashAttention-3 (arXiv:2407.08608), abstract", "speed-up on H100 GPUs",
     "1.5–2.0", "×"),
    ("Shah et al. 2024, FlashAttention-3, abstract", "FP16 throughput on H100, up to", 740, "TFLOP/s"),
]
if gc.require_gpu("naive vs Pallas flash attention at s = 4096, bf16, timed") and not GPU_XLA:
    print("skipped: " + SKIPPED)
elif be.is_gpu:
    qg, kg, vg = (jax.device_put(rng.standard_normal((1, 4096, 16, 64)).astype(jnp.bfloat16), be.jax_device)
                  for _ in range(3))
    naive_gpu = jax.jit(lambda a, b, c: jax.nn.dot_product_attention(a, b, c, implementation="xla"))
    fused_gpu = jax.jit(lambda a, b, c: pallas_attention.mha(a, b, c, None, sm_scale=1 / 8))
    t_n, t_f = gc.measure(naive_gpu, qg, kg, vg), gc.measure(fused_gpu, qg, kg, vg)
    gpu_flops = naive_flops(1, 16, 4096, 64)
    for name, t in (("naive (xla)", t_n), ("fused (Pallas mha)", t_f)):
        print(f"{name:20} {t}  {gpu_flops / t.best / 1e12:6.1f} TFLOP/s")
    print(f"fused is {t_n.best / t_f.best:.1f}× faster (host clock, best of the runs)")
    diff = float(jnp.abs(naive_gpu(qg, kg, vg).astype(jnp.float32) - fused_gpu(qg, kg, vg).astype(jnp.float32)).max())
    assert diff < 5e-2, diff  # bf16 outputs agree to bf16 rounding
    assert t_n.best / t_f.best > 1.0, "the fused kernel skips the s × s round trips: it is faster"
else:
    print("On a GPU this cell would time naive attention (s × s matrices through HBM) against JAX's Pallas flash "
          "attention at s = 4096, bf16. Published figures instead (cited, not measured here):")
    for source, what, value, unit in FIGURES:
        print(f"  {what:58} {f'{value} {unit}':18} [{source}]")
fa3 = 740e12 / h100.peak_flops["bf16-tensor"]
fa2 = 225e12 / gc.hardware.A100_SXM.peak_flops["bf16-tensor"]
print(f"as fractions of the datasheet peaks (gc.hardware): FA3 {fa3:.0%} of the H100's dense fp16/bf16, "
      f"FA2 {fa2:.0%} of the A100's")
assert 0.74 < fa3 < 0.76 and 0.71 < fa2 < 0.73  # the papers' own "75 %" and "72 % model FLOPs utilization"

# %% [markdown]
# The papers' own utilisation figures check out against `gc.hardware`'s datasheet peaks (asserted above):
# FlashAttention-3's 740 TFLOP/s is 75 % of the H100's dense bf16 peak, FlashAttention-2's 225 TFLOP/s is
# 72 % of the A100's. On a GPU backend the cell asserts that the fused kernel beats the naive one —
# what the cell checks when run on a GPU, not a reported result: no GPU run of this section is recorded yet
# (`course/gpu_runs/`).
#
# ## Lab 8
#
# **Next:** the lab, [`labs/lab08_attention/lab08_attention.ipynb`](../labs/lab08_attention/lab08_attention.ipynb)
# — write the online-softmax update with the output accumulator, a fused attention kernel on the executor
# that never writes the s × s matrix, the same kernel in Pallas (interpret mode), count the bytes a fused
# kernel moves, find the batch at which a whole
# decoder layer's decode step turns compute-bound, and size what training must save for attention's backward.
