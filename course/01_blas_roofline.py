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
# Almost everything a neural network computes is a matrix multiply
# (GEMM) or an elementwise op. This section measures why that split matters on real hardware
# — yours.
#
# **You will learn**
# - the three BLAS levels, and Level 3's counts checked (not just asserted) on the source article's own
#   triple loop (Levels 1 and 2 are the lab's to count);
# - to compute FLOPs, bytes and arithmetic intensity for any shape and dtype;
# - to measure this machine's two roofs — memory bandwidth and peak FLOP/s — each by its own kernel,
#   against a stated peak, and to place real ops under them;
# - why a measured point can land *above* a roof (caches),
#   and when that means the measurement is wrong;
# - what a store really costs (STREAM's 3n bytes vs write-allocate's 4n);
# - why compilers turn work into GEMMs and fuse elementwise chains:
#   each predicted, measured, and the gap explained.
#
# The lab for this section is `labs/lab01_blas_roofline/`.

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
import platform

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
# BLAS (Basic Linear Algebra Subprograms) sorts linear algebra by what it multiplies.
# The source article writes GEMM as $C = \alpha AB + \beta C$ with $A$ of shape $(M, K)$ and $B$ of shape $(K, N)$.
#
# | level | example | FLOPs | data touched | intensity (FLOP/element) |
# |---|---|---|---|---|
# | 1 — vector·vector | axpy `y ← a·x + y` | $2N$ | $3N$ | constant: 2/3 |
# | 2 — matrix·vector | gemv `y ← A·x` | $2MN$ | $MN + M + N$ | constant: ≈ 2 |
# | 3 — matrix·matrix | gemm `C ← A·B` | $2MNK$ | $MK + KN + MN$ | grows: ≈ $\frac{2}{3}N$ for square |
#
# One correction to the source article:
# it labels Level 2 with $O(MN + MK + KN)$ — that is the *data* of Level 3.
# Level 2 does $O(MN)$ work on $O(MN)$ data:
# about 2 FLOPs per element of the matrix,
# so its intensity is 2 / (bytes per element) FLOP/byte — 0.5 in float32, 1 in bf16,
# 2 in int8 — below the ridge of that dtype on any GPU and on most CPUs.
#
# The source article's pseudo-code makes the Level 3 claim concrete.
# `gc.blas.triple_loop_matmul` runs that loop for real, with a counter on every access:

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
print(f"each element is accessed {counts.reuse:.1f}× on average (loads + stores per distinct element)")
# Expected output:
# FLOPs: 240  = 2·M·N·K
# loads issued by the loop: 240  = 2·M·N·K (every multiply reads A and B again)
# distinct elements touched: 74  = MK + KN + MN
# each element is accessed 3.6× on average (loads + stores per distinct element)

# %% [markdown]
# Both of the source article's formulas hold — and the loop shows the condition it leaves out:
# the loop *issues* $2MNK$ loads; only when something keeps $A$ and $B$ close (caches,
# shared memory, registers: **tiling**,
# the lab's exercise 6) does memory see just the $MK + KN + MN$ distinct elements.
# Intensity is a property of the algorithm *and* of how well the hardware reuses data.
#
# Counting bytes instead of elements needs the dtype:
# intensity in FLOP/byte halves every time the element size doubles.
# For a square GEMM it also grows with n (2n³ FLOPs on 3n² elements:
# 2n/3 FLOP per element) — the property the whole course leans on.
# (Level 1 and Level 2, whose intensity per byte does not grow, are the lab's to count — backwards, from a profiler's
# counters to the call: exercise 1.)

# %%
# NBVAL_CHECK_OUTPUT
def square_gemm_counts(n, dtype):
    """(FLOPs, bytes) of C = A·B with A, B, C all n×n: compulsory traffic, A and B read once, C written once."""
    s = np.dtype(dtype).itemsize
    return 2 * n**3, 3 * n * n * s


print("square GEMM, arithmetic intensity [FLOP/byte]")
print(f"{'n':>6}" + "".join(f"{d:>10}" for d in ("float64", "float32", "float16", "int8")))
for n in (64, 512, 4096):
    row = [square_gemm_counts(n, d)[0] / square_gemm_counts(n, d)[1] for d in ("float64", "float32", "float16", "int8")]
    # the counts agree with the closed form 2n/(3·itemsize): a derivation (computed from the formula, not measured)
    assert row == [2 * n / (3 * s) for s in (8, 4, 2, 1)]
    print(f"{n:>6}" + "".join(f"{v:>10.3g}" for v in row))
# Expected output:
# square GEMM, arithmetic intensity [FLOP/byte]
#      n   float64   float32   float16      int8
#     64      5.33      10.7      21.3      42.7
#    512      42.7      85.3       171       341
#   4096       341       683  1.37e+03  2.73e+03

# %% [markdown]
# ## 1.2 This machine's roofline, measured
#
# A machine has two roofs: how many FLOPs per second its arithmetic units can do,
# and how many bytes per second its memory can deliver.
# The **roofline** says an op of intensity $I$ can run at most at $\min(\text{peak FLOP/s},\ I \times \text{bandwidth})$.
# The two meet at the **ridge point**.
#
# A roof is only worth plotting under if it was measured right.
# `gc.roofline.measure_roofline` follows four rules:
#
# - **One CPU core** (on a GPU, the whole device).
#   NumPy's elementwise ops run on one core anyway,
#   and the BLAS is held to one thread while it is timed.
#   A multi-threaded BLAS call stalls whenever *any* of its threads is descheduled
#   — its threads wait for each other
#   — so on a machine shared with other programs (a laptop running a browser,
#   a CI runner) all-core timings are mostly noise, while one core's roofline stays measurable.
#   The whole chip's compute roof is about cores × this one;
#   its memory roof is less than cores × this one, since the cores share the DRAM channels.
# - **Each roof by its own kernels, never by an op plotted under it.**
#   The memory roof is the fastest of three read-only streams over a float32 array of random values
#   at least 2× the last-level cache (a sweep larger than the cache evicts each line before it comes
#   back, so every byte comes from DRAM — HBM on a GPU):
#   NumPy's `max`, the BLAS dot `a·a`, and a BLAS matrix-vector product over a *wide* 64-row matrix.
#   Read-only, so no store policy muddles the count.
#   Why three: one core's bandwidth is limited by how many loads it keeps in flight,
#   and a kernel that prefetches in software
#   (OpenBLAS's gemv does) can keep more in flight than a plain loop,
#   or a plain loop can win where the hardware prefetcher does the work
#   — which one wins differs between machines, and the table prints all three:
#   the roof is the fastest of them, whichever it is.
#   The compute roof is the fastest float32 GEMM of sizes not plotted (384³, 640³, 1024³ on a CPU;
#   4096³, 8192³ on a GPU): the best the machine's BLAS (OpenBLAS here,
#   cuBLAS on a GPU) does in the dtype of the plotted ops.
#   Random data: constant data (`ones`) switches fewer transistors,
#   draws less power and can clock higher than real data.
# - **Best of a fixed number of interleaved rounds.**
#   Other programs only ever slow a run down, so each roof and each op is reported at its best run;
#   and they are timed in turns (roof, op, op, …, roof, op,
#   …) so that each has the same chances of a quiet moment.
#   The number of rounds (5) is fixed before anything is timed, and the result is summarised once:
#   nothing is re-timed because a point looks odd
#   (timing until the answer looks right is *optional stopping*, and it biases what it reports).
#   On a GPU every run is timed with CUDA events,
#   queued behind a 200 µs spin kernel that keeps the GPU busy while the host launches the op,
#   so the interval is the GPU's work, not the host's launch path (`gc.measure`'s `clock="cuda"`).
#   A point above the compute roof, which nothing can beat, is reported as such under the table.
# - **Against a stated peak.**
#   On a GPU, the datasheet.
#   On a CPU: cores × FMA units × lanes per FMA unit × 2 FLOP × clock
#   — here for the one core measured — each factor read from the operating system where it can be
#   (printed below with where it came from) except the FMA units,
#   which no interface reports (a table of the vendors' disclosures: `gc.roofline.fma_units_of`).
#   The lanes are the FMA unit's width, not the register's:
#   AMD's Zen 4 (and mobile Zen 5) runs AVX-512 on 256-bit FMA units, a 512-bit FMA in two halves,
#   so it counts 8 float32 lanes, not 16;
#   Intel's client cores with AVX-512 have one 512-bit FMA unit, not two.
#   A CPU's DRAM peak (channels × transfers/s × 8 bytes) is not visible from inside the OS,
#   so its memory roof is the measured read alone.

# %%
cache, cache_source = gc.roofline.cache_bytes()
stream = gc.roofline.stream_bytes()
stated_flops, stated_bw, stated_source = gc.roofline.stated_peaks("float32", cores=1)
print(f"last-level cache: {cache / 2**20:.0f} MiB ({cache_source}); DRAM-sized arrays: {stream / 2**20:.0f} MiB")
print(f"stated float32 peak{'' if be.is_gpu else ' of one core'}: {'-' if stated_flops is None else f'{stated_flops / 1e9:,.0f} GFLOP/s'}"
      f"{'' if stated_bw is None else f', {stated_bw / 1e9:,.0f} GB/s'}\n  = {stated_source}")
assert stream >= min(2 * cache, 1024 * 2**20)  # the memory roof's array does not fit in the cache

# %% [markdown]
# Now the ops, measured in the same rounds as the roofs:
# axpy (Level 1) and gemv (Level 2) on arrays at least twice the cache,
# a gemv small enough to sit *in* the cache (32 calls back to back in each timed run:
# see below), and GEMMs (Level 3) from 64³ to 512³ — all float32, random data.
# A point counts as *above* a roof when it beats the roof by more than 20 %:
# two different kernels doing the same work can differ by that much, and a busy machine adds noise.

# %%
f32 = np.float32
rng = np.random.default_rng(0)
n_vec = stream // 4  # axpy: two vectors, each the size of the memory roof's array
x_v, y_v = (xp.asarray(rng.standard_normal(n_vec, dtype=f32)) for _ in range(2))
axpy = gc.roofline.Op(f"axpy n={n_vec:,} (2 passes)", lambda: xp.add(f32(2.0) * x_v, y_v, out=y_v),
                      2.0 * n_vec, 3.0 * n_vec * 4, 3.0 * n_vec * 4)  # compulsory: read x, y; write y
n_gemv = int(math.sqrt(stream / 4)) // 256 * 256  # a matrix as large as the memory roof's array
SMALL_CALLS = 32  # back to back: the first call brings the 1 MiB matrix into the cache, the other 31 find it there
ops = [axpy, gc.roofline.gemv_op(n_gemv),
       gc.roofline.gemv_op(512, label=f"gemv n=512 ×{SMALL_CALLS} (in cache)", calls=SMALL_CALLS),
       gc.roofline.gemv_op(512, label="gemv n=512 ×1 (evicted)")]
GEMM_SIZES = (64, 128, 256, 512)
ops += [gc.roofline.gemm_op(n) for n in GEMM_SIZES]
m = gc.roofline.measure_roofline(ops, rounds=5)
roof = m.roof
for c in m.memory_candidates:
    print(f"  {c.label:38} {c.achieved_bandwidth / 1e9:7.1f} GB/s")
for c in m.compute_candidates:
    print(f"  {c.label:38} {c.achieved_flops / 1e9:7.1f} GFLOP/s")
print(f"memory roof:  {roof.bandwidth / 1e9:8.1f} GB/s      (fastest read: {m.memory.label}; best of {m.rounds} rounds)"
      + (f" = {roof.bandwidth / m.stated_bandwidth:.0%} of the datasheet" if m.stated_bandwidth else ""))
print(f"compute roof: {roof.peak_flops / 1e9:8.1f} GFLOP/s  (fastest: {m.compute.label})"
      + (f" = {roof.peak_flops / m.stated_flops:.0%} of the stated peak" if m.stated_flops else ""))
print(f"ridge point:  {roof.ridge:8.1f} FLOP/byte: below it memory-bound, above it compute-bound\n")
print(f"{'op':34} {'FLOP/B':>7} {'GFLOP/s':>9} {'GB/s':>8} {'of roof':>8}  verdict")
verdicts = {v.point.label: v for v in m.verdicts()}
for v in verdicts.values():
    p = v.point
    print(f"{p.label:34} {p.intensity:7.2f} {p.achieved_flops / 1e9:9.2f} {p.achieved_bandwidth / 1e9:8.1f} "
          f"{v.fraction:8.0%}  {v.bound}-bound, {v.explanation}")
gc.record("§1 memory roof (read stream)", roof.bandwidth / 1e9, "GB/s", note=m.memory.label)
gc.record("§1 compute roof (float32 GEMM)", roof.peak_flops / 1e9, "GFLOP/s", note=m.compute.label)
if m.stated_flops:
    gc.record("§1 compute roof / stated peak", roof.peak_flops / m.stated_flops, "-")
if m.stated_bandwidth:
    gc.record("§1 memory roof / datasheet", roof.bandwidth / m.stated_bandwidth, "-")

gemv_big, gemv_small = verdicts[f"gemv n={n_gemv}"], verdicts[f"gemv n=512 ×{SMALL_CALLS} (in cache)"]
gemv_cold = verdicts["gemv n=512 ×1 (evicted)"]
gemm64, gemm512 = verdicts["gemm n=64"], verdicts["gemm n=512"]
assert axpy.flops / axpy.bytes < roof.ridge and gemv_big.point.intensity < roof.ridge
sheet_ridges = {g.name: g.peak_flops["fp32"] / g.memory_bandwidth for g in gc.hardware.GPU_PROFILES}  # FLOP/byte
print("fp32 ridge points of GPUs, from their datasheets: "
      + ", ".join(f"{name} {r:.0f}" for name, r in sheet_ridges.items()) + " FLOP/byte")
assert min(sheet_ridges.values()) < 15 and max(sheet_ridges.values()) > gemm512.point.intensity  # both sides of it
if not be.is_gpu:  # a GPU's ridge can lie either side of the 512³ GEMM's intensity (printed): placed on a CPU only
    assert roof.ridge < gemm512.point.intensity
    # intensity n/6: the 64³ GEMM (an eighth of the 512³'s) is nearer the ridge, measured as a factor on the log axis
    assert abs(math.log(gemm64.point.intensity / roof.ridge)) < abs(math.log(gemm512.point.intensity / roof.ridge))
assert gemv_small.fits_in_cache and not gemv_big.fits_in_cache
if not be.is_gpu:  # the cache beats DRAM: the same gemv, in cache, beats itself evicted and reaches the DRAM roof
    in_cache_over_evicted = gemv_small.point.achieved_bandwidth / gemv_cold.point.achieved_bandwidth
    print(f"\nin-cache gemv: {in_cache_over_evicted:.1f}× the same gemv evicted, {gemv_small.fraction:.2f}× the DRAM "
          f"roof ({'above it by more than the 20 % margin' if gemv_small.above else 'within the 20 % margin'})")
    assert not gemv_cold.above and gemv_small.fraction > 0.9, (gemv_small.fraction, gemv_cold.fraction)  # × the roof
    assert in_cache_over_evicted > 1.5 and gemv_small.point.achieved_bandwidth > 1.2 * gemv_big.point.achieved_bandwidth
if m.stated_flops:  # a roof above its stated peak is flagged, and has one possible cause on a CPU
    if roof.peak_flops > m.stated_flops:
        print("\nFLAG: the measured compute roof is above the stated peak: the clock read is the nominal one, and the "
              "cores ran faster (turbo); the stated peak is a lower bound here.")
    assert 0.03 < roof.peak_flops / m.stated_flops < (1.02 if be.is_gpu else 1.6)
if m.stated_bandwidth:
    assert 0.5 < roof.bandwidth / m.stated_bandwidth < 1.02
if m.consistent:  # no point above the compute roof; what the text claims besides:
    assert verdicts[axpy.label].fraction < 0.9  # two passes move >= 5n elements for the 3n counted
    # fixed per-call costs; compared with the best larger GEMM: a busy neighbour can slow any one of them
    assert gemm64.fraction < 0.9 and gemm64.fraction < max(verdicts[f"gemm n={n}"].fraction for n in GEMM_SIZES[1:])
else:
    print(f"\nINCONSISTENT after {m.rounds} rounds: above the compute roof, which nothing can beat: "
          f"{', '.join(v.point.label for v in m.unexplained())}. Either every one of the roof's {m.rounds} runs was "
          "slowed down or the op's count or timing is wrong; the table reports the rounds as measured.")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.4))
gc.plotting.axes("problem size n [elements per side]", "achieved [GFLOP/s]", "GEMM throughput by size", ax=ax1)
gemms = [verdicts[f"gemm n={n}"].point for n in GEMM_SIZES]
ax1.plot(GEMM_SIZES, [p.achieved_flops / 1e9 for p in gemms], marker="o", label="gemm")
ax1.axhline(roof.peak_flops / 1e9, color=gc.plotting.PALETTE[3], ls="--", label=f"compute roof ({m.compute.label})")
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.legend()
gc.roofline.plot(ax2, [roof], [v.point for v in verdicts.values()])
for v in verdicts.values():
    if v.above:
        label = "above: cache" if v.fits_in_cache else "above: partly cached?" if v.bound == "memory" else "above: ?"
        ax2.annotate(label, (v.point.intensity, v.point.achieved_flops / 1e9),
                     textcoords="offset points", xytext=(6, 6), fontsize=8)
ax2.set_title("Measured roofline of this machine")
plt.tight_layout()
plt.show()

# %% [markdown]
# Read the right-hand plot with the table above it
# (a line under the table says if some point beat the compute roof,
# which would make the measurement inconsistent):
#
# - **axpy and the large gemv** sit left of the ridge, under the slanted memory roof;
#   their "of roof" column is how close they come.
#   NumPy's axpy stays well below (the cell asserts under 90 %):
#   `2*x + y` runs as two passes, a scaled copy into a temporary and then an add,
#   moving at least 5n elements for the 3n a fused BLAS `saxpy` needs
#   — the waste fusion (§1.4) removes.
# - **The small gemv** (n = 512, a 1 MiB matrix) fits in the cache.
#   The memory roof is *DRAM's* bandwidth, and a cache feeds an op faster than DRAM can.
#   It is 32 calls back to back in each timed run, and that matters:
#   every op is timed once per round, between the DRAM-sized read streams and the GEMMs,
#   which evict the matrix.
#   The same gemv timed as a single call
#   (the "×1" row) reads it from DRAM every time and does *not* land above the roof;
#   the back-to-back calls move bytes more than 1.5× faster than it and more than 1.2× faster than
#   the large gemv, and reach at least 90 % of the DRAM roof (asserted;
#   the line under the table prints both factors).
#   The same kernel in and out of the cache is the clean comparison:
#   the roof is set by other kernels,
#   so how far *above* the roof the cached point lands depends on how one core's cache bandwidth
#   compares with its DRAM bandwidth, and on how busy the machine is;
#   where it clears the 20 % margin, the table flags it "above" and the plot names the cache.
#   On a GPU each call is microseconds of launch for 1 MiB that HBM moves in 0.3 µs,
#   so there both points sit far below the roof, whatever the cache does.
#   A point above a roof is never ignored:
#   above the memory roof a cache can explain it — entirely if the data fit,
#   in part if the working set is larger (real caches keep part of it:
#   the table says "partly cached?", and lab 1's exercise 9 says by how much);
#   above the compute roof nothing can, and the measurement is wrong.
#   The rounds are not repeated to make the table look consistent:
#   what 5 rounds gave is what it shows.
# - **GEMMs** have an intensity that grows with n (n/6 FLOP/byte in float32):
#   the 512³ one sits far right of the ridge (asserted), the 64³ one,
#   at an eighth of that intensity, much closer to it (asserted;
#   both on a CPU — a GPU's ridge lies anywhere from about 10 to 100 FLOP/byte,
#   the line under the table prints the datasheets' fp32 ridges of six GPUs,
#   and an L4's lies beyond the 512³ GEMM's 85 (asserted),
#   so there the printed ridge and the table's intensities say where each GEMM sits).
#   All sit at or below the compute roof (within the 20 % margin),
#   the 64³ one well below it (asserted:
#   under 90 % of the roof, and below the best of the larger ones):
#   its 0.5 MFLOP are too little work to amortise the fixed costs of a call
#   (NumPy's dispatch into the BLAS, packing tiles into buffers,
#   loop set-up) — the first sign of the launch-overhead story of section 4.

# %% [markdown]
# ### What a store costs: STREAM's 3n bytes, or 4n
#
# STREAM's add, `c = a + b`, is reported as 3n × (bytes per element)
# — 3n·4 for this course's float32 arrays (STREAM's own default is double: 3n·8):
# read `a`, read `b`, write `c` — the bytes the program asks for,
# and the count this course uses for *compulsory* traffic.
# DRAM may see more.
# A cache writes back whole 64-byte lines,
# and a classic write-allocate cache first *reads* the line a store will overwrite
# (a "read for ownership"): then `c = a + b` moves 4n·4 bytes and STREAM's count understates the
# traffic by a quarter.
# Non-temporal ("streaming") stores skip that read
# — glibc's `memcpy` uses them for copies larger than the cache
# — and some cores skip it on their own when a run of stores overwrites whole lines.
# A GPU does not read a 32-byte sector a store overwrites whole
# (its L2 keeps a mask of written bytes), so on a GPU 3n is the traffic.
#
# Which one a CPU does can sometimes be read off the clock
# — and which bytes the clock can judge depends on what limits the roof.
# On one CPU core (this machine's §1.2 roof) it is a read roof,
# set by how many loads the core keeps in flight.
# Under write-allocate the core must read each line it stores to
# (a read for ownership) before the store completes,
# so the reads it waits for are the program's own reads *plus* the bytes it writes;
# the write-backs of the dirty lines leave later, evicted by the caches,
# without the core waiting for them, and are not bounded by that roof:
# there only the *read side* is judged.
# Where DRAM bandwidth sets the roof (a GPU, or many cores saturating the bus),
# reads and write-backs share the bus,
# and the *total* write-allocate traffic is judged against the memory roof.
# So write an array three ways, and rule write-allocate out only where the test that applies
# (named in the verdict column) needs more bandwidth than the roof delivered
# — by more than 15 %: the roof is itself the best of a few runs on a shared machine,
# so a test a few per cent above it is noise, not proof.

# %%
kinds = gc.roofline.store_kinds(rounds=9)
dram_limited = gc.get_backend().is_gpu  # a GPU's roof is HBM bandwidth; this CPU roof is one core's loads in flight
print(f"memory roof (§1.2): {roof.bandwidth / 1e9:.1f} GB/s, limited by "
      + ("DRAM bandwidth: the write-allocate total is judged" if dram_limited else
         "one core's loads in flight: the reads write-allocate needs are judged"))
print(f"{'store kind':18} {'STREAM count':>13} {'write-allocate':>15} {'reads if w-a':>13}  verdict")
for k in kinds:
    print(f"{k.label:18} {k.bandwidth(k.requested) / 1e9:9.1f} GB/s {k.bandwidth(k.allocate) / 1e9:10.1f} GB/s "
          f"{k.bandwidth(k.reads_if_allocate) / 1e9:8.1f} GB/s  {k.verdict(roof.bandwidth, dram_limited)}")
    gc.record(f"§1 {k.label} bandwidth (STREAM count)", k.bandwidth(k.requested) / 1e9, "GB/s")
ruled_out = [k.label for k in kinds if k.verdict(roof.bandwidth, dram_limited).startswith("no")]
print("→ " + (f"write-allocate is ruled out for: {', '.join(ruled_out)}" if ruled_out else
              "timing cannot tell here: the judged bytes fit under the roof, within its 15 % margin, either way "
              "(hardware counters would settle it)"))
# the verdict rules write-allocate out exactly where the applicable test's bytes beat the roof by over 15 %
assert all(k.verdict(roof.bandwidth, dram_limited).startswith("no") ==
           (k.bandwidth(k.allocate_test(dram_limited)[0]) > 1.15 * roof.bandwidth) for k in kinds)
# what the read roof does bound: the reads the program itself asks for (a copy reads n) cannot beat it
assert all(k.bandwidth(k.reads) < 1.3 * roof.bandwidth for k in kinds)

# %% [markdown]
# Read the verdict column: on one core,
# "no write-allocate" would mean its own reads plus the reads for ownership would have the core read faster than
# the fastest read stream of §1.2, by over 15 % — impossible, so those stores did not read their
# lines first.
# Where it says "cannot tell", both counts are possible (within that margin) and only hardware counters
# (`perf stat` of DRAM reads) decide.
# On one core the write-allocate total can be above the read roof and still be possible
# (the write-backs are not the core's loads):
# judging the total against a one-core read roof would rule out write-allocate where nothing rules
# it out.
# On a GPU the opposite holds: a fill at most of HBM's bandwidth would, under write-allocate,
# need twice that on the same bus — impossible, so the total is the test there.
# So "STREAM add = 3n" is the program's count,
# true on a GPU and on a CPU whose stores skip the read;
# on a classic write-allocate CPU, DRAM moves 4n.
# The axpy above is judged against its compulsory 3n either way:
# NumPy's two passes move at least 5n, whatever each store costs on top.

# %% [markdown]
# ### The same ops on an H100 and an H200 (published figures)
#
# Datasheet roofs (`gc.hardware`, dense tensor-core throughput):
# the tensor-core ridge of a data-centre GPU is far to the right of this CPU core's,
# so *more* ops are memory-bound there (its FP32 CUDA-core ridge, printed for six GPUs in §1.2,
# sits much further left).
# On a GPU backend the measured roofline above is the GPU's own (float32 on CUDA cores,
# against that card's FP32 datasheet figure, 67 TFLOP/s on an H100 SXM),
# and the next cell measures its half-precision tensor-core roof too
# (its 30 %–102 % band against the datasheet is what the cell checks when run on a GPU,
# not a reported result: no GPU run of this course is recorded yet (`course/gpu_runs/`)).

# %%
h100, h200 = gc.hardware.H100_SXM, gc.hardware.H200_SXM
gpu_roofs = [
    gc.roofline.Roofline("H100 SXM bf16 (datasheet)", h100.peak_flops["bf16-tensor"], h100.memory_bandwidth),
    gc.roofline.Roofline("H200 SXM bf16 (datasheet)", h200.peak_flops["bf16-tensor"], h200.memory_bandwidth),
    gc.roofline.Roofline("H100 SXM fp32 (datasheet)", h100.peak_flops["fp32"], h100.memory_bandwidth),
]
for r in gpu_roofs:
    print(f"{r.name:28} ridge at {r.ridge:6.1f} FLOP/byte")
print(f"{roof.name:28} ridge at {roof.ridge:6.1f} FLOP/byte")
assert all(r.ridge > roof.ridge for r in gpu_roofs) or be.is_gpu  # more ops are memory-bound on a GPU
ax = gc.plotting.axes("arithmetic intensity [FLOP/byte]", "attainable [GFLOP/s]")
gc.roofline.plot(ax, [roof] + gpu_roofs, imax=4096)
ax.set_title("Rooflines: this machine vs published GPU figures")
plt.show()
# a bf16 GEMM is compute-bound on an H100 only when its intensity n/3 passes the ridge (989.4 / 3.35 = 295 FLOP/B)
n_ridge = next(n for n in range(16, 10_000)
               if square_gemm_counts(n, "float16")[0] / square_gemm_counts(n, "float16")[1] >= gpu_roofs[0].ridge)
print(f"smallest square bf16 GEMM that is compute-bound on an H100: n = {n_ridge}")
assert n_ridge == math.ceil(3 * gpu_roofs[0].ridge) == 887  # n/3 >= 295.3

# %%
if gc.require_gpu("measure the half-precision tensor-core roof (cuBLAS, n = 8192, random data, CUDA events)"):
    half = gc.roofline.gemm_op(8192, "float16", label="fp16 gemm n=8192")
    t_half = gc.measure(half.fn, repeat=10, clock="cuda")
    tflops = half.flops / t_half.best / 1e12
    sheet = gc.hardware.lookup(be.gpu.name)
    print(f"fp16 tensor-core GEMM: {tflops:.0f} TFLOP/s ({t_half})"
          + (f" = {tflops * 1e12 / gc.hardware.half_tensor_peak(sheet):.0%} of the {sheet.name} datasheet's "
             "dense fp16 figure" if sheet else ""))
    gc.record("§1 fp16 tensor-core roof", tflops, "TFLOP/s", note="cuBLAS via CuPy, n = 8192, CUDA events")
    if sheet:
        assert 0.3 < tflops * 1e12 / gc.hardware.half_tensor_peak(sheet) < 1.02

# %% [markdown]
# ## 1.3 Why compilers turn work into GEMMs
#
# Applying one weight matrix `W` (n × n) to a batch of vectors can be one gemv per vector
# — or one GEMM.
# Same FLOPs, but the gemvs read `W` once *each* while the GEMM reads it once in all.
# The roofline predicts the speed-up from the roofs measured above (one core):
# each gemv is memory-bound (`W`'s `n²·4` bytes, plus x and y, at the memory roof);
# the GEMM takes the longer of its FLOPs at the compute roof and its bytes at the memory roof.
# `W` is made larger than the cache, so that every gemv really reads it from DRAM.

# %%
batch = 32
n = max(1024, int(math.sqrt(stream / 4)) // 256 * 256)  # W: the streaming size, out of the cache
W = xp.asarray(rng.standard_normal((n, n), dtype=f32))
X = xp.asarray(rng.standard_normal((n, batch), dtype=f32))
columns = [X[:, i].copy() for i in range(batch)]
assert np.allclose(be.to_host(xp.stack([W @ x for x in columns], axis=1)), be.to_host(W @ X), rtol=1e-3, atol=1e-3)
with gc.roofline.blas_threads(1):  # one core, like the roofs the prediction uses
    t = gc.roofline.measure_interleaved({"gemvs": lambda: [W @ x for x in columns], "gemm": lambda: W @ X}, rounds=5)
gemv_pred = batch * (n * n + 2 * n) * 4 / roof.bandwidth  # each gemv reads W and x, writes y
gemm_flops, gemm_bytes = 2 * n * n * batch, (n * n + 2 * n * batch) * 4
gemm_pred = max(gemm_flops / roof.peak_flops, gemm_bytes / roof.bandwidth)
predicted, measured = gemv_pred / gemm_pred, t["gemvs"].best / t["gemm"].best
print(f"W is {n}×{n} float32 ({n * n * 4 / 2**20:.0f} MiB), batch {batch}")
print(f"{batch} gemv calls: predicted {gemv_pred * 1e3:7.2f} ms, measured {t['gemvs'].best * 1e3:7.2f} ms")
gemm_bound = "compute" if gemm_flops / roof.peak_flops > gemm_bytes / roof.bandwidth else "memory"
print(f"one gemm call: predicted {gemm_pred * 1e3:7.2f} ms, measured {t['gemm'].best * 1e3:7.2f} ms "
      f"({gemm_bound}-bound)")
print(f"speed-up: predicted {predicted:.1f}×, measured {measured:.1f}× (measured / predicted = {measured / predicted:.2f})")
gemv_eff, gemm_eff = gemv_pred / t["gemvs"].best, gemm_pred / t["gemm"].best  # fraction of the roof each reached
print(f"why the ratio is not 1: the gemvs reached {gemv_eff:.0%} of the memory roof, the {batch}-column GEMM "
      f"{gemm_eff:.0%} of the {gemm_bound} roof{' (the square GEMM’s)' if gemm_bound == 'compute' else ''}; "
      f"measured / predicted = {gemm_eff:.2f} / {gemv_eff:.2f}")
# these runs are timed apart from the roofs' rounds: load can slow them. §1.2's gemv of the same W, timed in the
# same rounds as the roofs, is the yardstick for what a gemv of this shape reaches
same_gemv = gemv_big if n == n_gemv else None
if same_gemv is not None:
    print(f"§1.2's gemv n={n_gemv}, timed in the roofs' rounds, reached {same_gemv.fraction:.0%} of the memory roof")
    if gemv_eff < 0.7 * same_gemv.fraction:
        print("→ the gemvs here ran well below that same-size gemv, one call timed in the roofs' rounds: a run of "
              "32 gemvs is a longer window, so other programs on a shared machine may have slowed it (not measured "
              "here; rerun on an idle machine to tell)")
if gemm_bound == "compute":
    print(f"→ the {batch}-column GEMM is compute-bound here: its fraction reflects how many FMA units a "
          f"{batch}-column GEMM keeps busy compared with the square GEMM that set the compute roof (and any load "
          "these runs saw)")
else:
    print(f"→ the {batch}-column GEMM is memory-bound here ({gemm_flops / gemm_bytes:.1f} FLOP/byte < ridge "
          f"{roof.ridge:.1f}): its fraction is of the memory roof, and FMA units are not what limits it")
gc.record("§1 one GEMM vs gemvs speed-up", measured, "×", note=f"predicted {predicted:.1f}×, W {n}², batch {batch}")
# neither beats its roof: these runs are timed apart from the roofs' rounds (load between the two timings moves either
# side), so the margin here is 50 %, not the 20 % of points timed in the roofs' own rounds
assert gemv_eff < 1.5 and gemm_eff < 1.5
assert predicted > 3 and measured > 1.5 and 0.33 < measured / predicted < 3.0
# on an H100, W is sized by the same rule (2× the last-level cache) from the L2 the device reports, 50 MiB =
# 52,428,800 B (the datasheet's "50 MB"; XLA's h100_sxm.txtpb): is that 32-column GEMM compute-bound there?
h100 = gc.hardware.H100_SXM
assert h100.l2_bytes == 52_428_800
n_h100 = int(math.sqrt(2 * h100.l2_bytes / 4)) // 256 * 256
i_h100 = 2 * n_h100 * n_h100 * batch / ((n_h100 * n_h100 + 2 * n_h100 * batch) * 4)
ridge_h100 = h100.peak_flops["fp32"] / h100.memory_bandwidth
print(f"on an H100: W {n_h100}², {batch} columns: {i_h100:.1f} FLOP/byte, left of the fp32 ridge {ridge_h100:.1f}: "
      "memory-bound")
# computed from the datasheet (L2 size, fp32 peak, HBM bandwidth), not measured: the numbers the text quotes
assert n_h100 == 5120 and round(i_h100, 1) == 15.8 and i_h100 < ridge_h100

# %% [markdown]
# One GEMM beats the 32 gemvs (asserted:
# by more than 1.5×), and the roofline predicts the speed-up to within the band the cell asserts
# (a factor of 3 either way; the printed ratio says how close).
# What it leaves out is how efficient each call is, and the printed fractions measure that:
# by their definition, measured/predicted is the GEMM's fraction of its roof divided by the gemvs'
# fraction of theirs.
# Two causes can lower a fraction.
# Load: these runs are timed apart from the roofs' rounds,
# so the cell prints §1.2's gemv of the same `W`, timed in those rounds,
# next to the gemvs' fraction, and says other programs may have slowed them when the gemvs here fall below
# 0.7× of it.
# Shape: only where the GEMM is compute-bound
# (the cell prints which roof bounds it) does a GEMM 32 columns wide keep fewer FMA units busy than
# the square GEMM that set the compute roof;
# on an H100, W of 5120² with 32 columns is 15.8 FLOP/byte, left of the fp32 ridge (20.0;
# both computed from the datasheet above, not measured),
# so there it is memory-bound and its fraction is of the memory roof.

# %% [markdown]
# The compiler's side of it: written as one gemv per column and batched with `jax.vmap`,
# the program JAX traces holds a single matrix product (`dot_general`) of `W` with all the columns
# — the gemvs became a GEMM before XLA saw them — and XLA's compiled module has one dot as well.

# %%
one_column = lambda x: jnp.asarray(W) @ x  # noqa: E731  a gemv: (n, n) @ (n,)
batched = jax.jit(jax.vmap(one_column, in_axes=1, out_axes=1))  # one column per call, batch axis 1
traced = jax.make_jaxpr(batched)(jnp.asarray(X))
dots = [e for e in traced.jaxpr.eqns[0].params["jaxpr"].eqns if e.primitive.name == "dot_general"]
hlo_dots = batched.lower(jnp.asarray(X)).compile().as_text().count(" dot(")
print(f"vmap of a gemv over {batch} columns: {len(dots)} dot_general in the jaxpr, operand shapes "
      f"{[tuple(v.aval.shape) for v in dots[0].invars]}; {hlo_dots} dot in the compiled HLO")
assert len(dots) == 1 and tuple(dots[0].invars[1].aval.shape) == tuple(X.shape) and hlo_dots == 1

# %% [markdown]
# ## 1.4 Why compilers fuse elementwise chains
#
# The source article's example, `relu(x * y + z)`: three Level-1 ops, each memory-bound.
# Run one at a time (NumPy, or JAX op by op) and every intermediate result makes a round trip
# through memory; under `jax.jit`, XLA fuses the chain into one kernel that reads `x, y,
# z` once and writes the result once.
# XLA's own cost model counts the bytes of both,
# on arrays larger than the cache so that they come from DRAM:

# %%
def article_fn(x, y, z):
    return jnp.maximum(x * y + z, 0.0)


n = stream // 4
xs = [jnp.asarray(rng.standard_normal(n, dtype=f32), device=be.jax_device) for _ in range(3)]
fused = gc.xla.compiled(article_fn, *xs)
steps = [gc.xla.compiled(lambda a, b: a * b, *xs[:2]), gc.xla.compiled(lambda a, b: a + b, *xs[:2]),
         gc.xla.compiled(lambda a: jnp.maximum(a, 0.0), xs[0])]  # the three ops, each compiled alone
unfused_bytes = sum(s.bytes_accessed for s in steps)
print(fused.excerpt())
print(f"\nfusions in the compiled HLO: {fused.fusions}")
print(f"XLA's bytes: fused {fused.bytes_accessed / (n * 4):.0f} arrays of n float32, op by op "
      f"{unfused_bytes / (n * 4):.0f} (3 + 3 + 2) → traffic predicts {unfused_bytes / fused.bytes_accessed:.1f}× faster")
assert len(fused.fusions) == 1 and fused.bytes_accessed == 4 * n * 4 and unfused_bytes == 8 * n * 4

# %% [markdown]
# If bytes were all that mattered, fusion would be 2× faster.
# The clock adds two costs the byte count omits, and the next cell measures both:
# every JAX call is a **dispatch** (Python, tracing cache, launching the computation:
# microseconds), and every op's result is a **fresh buffer** — op by op makes three, fused one.
# On a CPU a fresh buffer this large (the size is printed below:
# 64 MiB or more, above the 32 MiB past which glibc's `malloc` always maps memory from the operating
# system and returns it on `free`) comes straight from the OS,
# whose pages are mapped on first touch.
# How many page faults that takes depends on Linux's transparent-huge-page (THP) settings,
# printed below with the counts: with THP in `madvise` mode JAX's buffers fault once per base page
# (4 KiB on x86-64) while NumPy, which asks for huge pages (2 MiB) for arrays of 4 MiB and more,
# takes far fewer; with `never` (and no huge-page size set apart) both fault once per base page;
# with `always` both may get huge pages.
# Linux 6.8 and later also sets each huge-page size apart,
# and the kernel falls back to base pages when it finds no free huge page:
# the cell reads those settings and counts the fallbacks too.
# So the first-touch cost is measured on JAX's own buffers:
# a fresh output against a donated one it reuses.
# On a GPU, JAX's allocator reuses device memory: no such cost.
# The model: time = traffic / bandwidth + buffers × (first-touch cost) + calls × (dispatch).

# %%
jit_fn = jax.jit(article_fn)
x_np, y_np, z_np = (np.asarray(a) for a in xs)
# first touch, on JAX's own buffers (the ones these calls allocate): the same jitted `a + 1` (read n floats, write n)
# into a fresh output vs into its donated input, which it reuses; timed in the same rounds as the chain, same load
add_fresh = jax.jit(lambda a: a + 1.0)
add_reuse = jax.jit(lambda a: a + 1.0, donate_argnums=0)
held = [jnp.zeros(n, f32, device=be.jax_device)]


def add_reused():
    held[0] = add_reuse(held[0])  # the output takes the donated buffer: no new allocation
    return held[0]


rounds = gc.roofline.measure_interleaved({  # JAX queues work on its own streams: host clock + block_until_ready
    "NumPy, op by op": lambda: np.maximum(x_np * y_np + z_np, 0.0),
    "JAX, op by op": lambda: jnp.maximum(xs[0] * xs[1] + xs[2], 0.0),
    "JAX, jit (fused)": lambda: jit_fn(*xs),
    "fresh": lambda: add_fresh(xs[0]), "reused": add_reused}, rounds=9, clock_="host")
# best of 9 rounds: another program on a busy machine only ever adds time, and the model's five terms are each a best
t = {k: rounds[k] for k in ("NumPy, op by op", "JAX, op by op", "JAX, jit (fused)")}
tiny = [jnp.ones(8, f32, device=be.jax_device)] * 3
t_dispatch = gc.roofline.measure_interleaved({"op": lambda: tiny[0] * tiny[1]}, rounds=30, clock_="host")["op"].best
t_fresh_extra = max(0.0, rounds["fresh"].best - rounds["reused"].best)  # s per fresh n-element buffer
pages = n * 4 / gc.fusion.PAGE  # base pages per buffer
fallbacks_before = gc.fusion.thp_fallbacks()  # times the kernel wanted a huge page and could not get one
faults_jax = gc.fusion.page_faults(add_fresh, xs[0], repeat=2)  # None where the OS does not count them
faults_np = gc.fusion.page_faults(lambda: np.empty(n, f32).fill(2.0), repeat=2)
fell_back = (gc.fusion.thp_fallbacks() or 0) - (fallbacks_before or 0)
# what the THP settings allow each buffer (largest huge page in KiB, 0 = none) and the most faults per base page
# that allows: JAX's buffers do not ask for huge pages (unless glibc's malloc is tuned to), NumPy's do
jax_kib, jax_bound = gc.fusion.fault_bound(n * 4, madvised=gc.fusion.glibc_madvises_malloc())
np_kib, np_bound = gc.fusion.fault_bound(n * 4, madvised=bool(gc.fusion.numpy_asks_for_huge_pages()))
if faults_jax is not None and be.jax_device.platform == "cpu":  # on a GPU, JAX's buffers are device memory
    jax_per_page, np_per_page = faults_jax / pages, faults_np / pages
    print(f"page faults per {gc.fusion.PAGE // 1024} KiB page of a fresh {n * 4 / 2**20:.0f} MiB buffer: "
          f"JAX {jax_per_page:.2f}, NumPy {np_per_page:.2f}; THP mode {gc.fusion.thp_mode()}: the settings allow "
          f"huge pages up to {jax_kib} KiB for JAX's buffers, {np_kib} KiB for NumPy's (0 = none); "
          f"fallbacks to base pages meanwhile: {fell_back}")
    if jax_kib == 0:
        assert 0.8 < jax_per_page < 1.3, "without huge pages, a fresh JAX buffer faults once per base page"
    if np_kib == 0:
        assert np_per_page > 0.8, "without huge pages NumPy faults once per base page too"
    elif fell_back == 0 and np_bound < 0.1:  # one fault per huge page, plus base pages at the unaligned ends
        assert np_per_page < 0.1, "NumPy's huge pages take far fewer faults"
t_ops, t_fused = t["JAX, op by op"].best, t["JAX, jit (fused)"].best
t_traffic = max(t_fused - t_fresh_extra - t_dispatch, 1e-9)  # the fused call's own traffic time
model = (2 * t_traffic + 3 * t_fresh_extra + 3 * t_dispatch) / (t_traffic + t_fresh_extra + t_dispatch)
measured = t_ops / t_fused
print(f"JAX op by op {t_ops * 1e3:7.1f} ms, fused {t_fused * 1e3:7.1f} ms: measured {measured:.2f}×")
print(f"dispatch: {t_dispatch * 1e6:.0f} µs per call; a fresh {n * 4 / 2**20:.0f} MiB buffer costs "
      f"{t_fresh_extra * 1e3:.1f} ms more than a reused one ({t_fresh_extra / pages * 1e6:.2f} µs per {gc.fusion.PAGE // 1024} KiB page)")
print(f"predicted: traffic alone 2.00×; with 3 fresh buffers and 3 dispatches against 1 and 1: {model:.2f}×")
if t_fresh_extra + t_dispatch >= t_fused:  # the probe (one thread) took longer than the whole fused call
    print(f"  the first-touch probe ({t_fresh_extra * 1e3:.1f} ms) is at least the whole fused call "
          f"({t_fused * 1e3:.1f} ms): no traffic time is left to split off, so the model is the buffer-count "
          "ratio (3 fresh buffers against 1) — the fused call touched its pages on more threads than the probe")
gc.record("§1 fusion speed-up (JAX op by op / jit)", measured, "×", note=f"model {model:.2f}×, traffic 2×")
assert measured > 1.3 and 0.6 < measured / model < 1.6, "the fused/unfused ratio is outside the model's band"

ax = gc.plotting.axes("implementation [-]", "best time per call [ms]", f"relu(x·y + z) on {n:,} float32")
ax.bar(list(t), [tt.best * 1e3 for tt in t.values()], color=gc.plotting.PALETTE[:3])
plt.show()

# %% [markdown]
# The traffic model says 2×; the measured ratio (printed above) lies within the asserted band
# (0.6× to 1.6× the *full* model's), whose extra terms are printed too:
# on a CPU the first touch of the two extra fresh buffers is part of what fusion saves,
# besides their traffic.
# (When the first-touch probe alone takes as long as the fused call, the cell says so:
# the model is then 3 fresh buffers against 1, the traffic term too small to separate.)
# On a GPU (cached device memory: no first-touch faults) the fresh-buffer term vanishes,
# and the dispatches (the cell prints this machine's;
# §6.3 measures them on a GPU run) weigh against the HBM traffic of 4 or 8 arrays twice the L2's
# size (§1.4's sizing, on a GPU too).
# JAX dispatches asynchronously, so on a GPU each later dispatch overlaps the previous op's kernel
# (§6.3): only the first is exposed per evaluation, and the prediction is about the traffic's 2×.
# NumPy's op-by-op version (bar chart) pays the same kinds of cost.
#
# What this model does not claim: that its split of the fused call into traffic and first-touch time
# is each term's true share.
# The first-touch term is one difference of two best times (a fresh output against a donated one),
# and XLA:CPU may run a large fusion on more than one thread
# (its HLO says so where it partitions the loop),
# unlike §1.2's one-core roofs — so the traffic time left over need not match §1.2's memory roof.
# The ratio is what is asserted, within a band that wide.
#
# ## Claims check
#
# | ID | claim (article 000) | verdict |
# |---|---|---|
# | C01 | BLAS Level 3 moves O(MN+MK+KN) data for O(MNK) compute, so GEMM is compute-bound | **qualified** ([why](#Claim-C01)) |
# | C02 | compilers turn as much as possible into GEMMs and fuse elementwise ops to cut memory traffic | **confirmed** ([why](#Claim-C02)) |
#
# On a GPU the same cells measure the GPU (CuPy/cuBLAS with CUDA events for §1.2–1.3,
# JAX on the GPU for §1.4); `python -m gpucourse.gpu_check` gathers the numbers
# (`gc.record`) into `course/gpu_runs/`.
# What this notebook says of a GPU's numbers
# (the GPU cells' bands against the datasheet) is what the cell checks when run on a GPU,
# not a reported result: no GPU run of this course is recorded yet (`course/gpu_runs/`).
#
# **Next:** the lab, `labs/lab01_blas_roofline/lab01_blas_roofline.ipynb` — count, predict, tile,
# diagnose, then time and explain ops on your own machine.
#
# ### Each claim: the verdict's reasons and the evidence
#
# #### Claim C01
#
# **qualified**: compute-bound only when all three dimensions are large enough for intensity ≈
# 2/(s·(1/M+1/N+1/K)) to pass the ridge
# (n ≥ 887 for square bf16 on an H100) and the kernel tiles for reuse.
#
# *Evidence.* Counted in §1.1 (2MNK FLOPs on MK+KN+MN distinct elements);
# measured in §1.2 against roofs measured by their own kernels:
# the 512³ GEMM sits far right of the ridge point,
# the 64³ one (an eighth of its intensity) much closer to it and well below the compute roof
# (fixed per-call costs), a gemv (a GEMM with one column) is memory-bound,
# and the loop itself issues 2MNK loads unless tiling provides reuse.
#
# #### Claim C02
#
# **confirmed** — fusion cuts traffic *and* allocations and dispatches.
#
# *Evidence.*
# §1.3: one GEMM replaces 32 gemvs with the speed-up the roofline predicts (within 3×, printed),
# and `jax.vmap` of a gemv traces and compiles to that one GEMM (one `dot_general`, one HLO `dot`);
# §1.4: XLA compiles `relu(x*y+z)` to one `kLoop` fusion moving 4 arrays instead of 8,
# and the measured speed-up matches a model of traffic + fresh buffers + dispatch
# (within 0.6–1.6× of it).
