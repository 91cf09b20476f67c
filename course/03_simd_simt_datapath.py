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
# # 3 — CPU SIMD vs GPU SIMT vs NPU, and how data reaches the GPU
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/03_simd_simt_datapath.ipynb)
#
# A CPU, a GPU and an NPU all apply one instruction to many numbers at once
# — they differ in *how many*, in who decides what runs next, and in how far the data has to travel.
# This section measures the first on your CPU, models the second,
# and runs [article 002](00_overview.ipynb#Sources-and-claims-checks)'s program
# — disk → CPU memory → GPU memory and back — step by step.
#
# **You will learn**
# - what article 000's CPU / GPU / NPU table means in numbers: cores, lanes, memories, links;
# - to see SIMD — the CPU's vector operations (벡터 연산) — on your own CPU:
#   the vector width in its flags and in the machine code the compiler emits,
#   and what it buys over a Python loop;
# - SIMT (Single Instruction, Multiple Threads):
#   32 threads, one instruction, an active mask — and what a branch costs;
# - the article 002 program `load → to_gpu → process → to_cpu → print`, each step timed,
#   as a timeline;
# - why GPU memory has no path to disk in the classic model,
#   and where GPUDirect Storage qualifies that;
# - PCIe, DMA (직접 메모리 접근) and pinned memory; the break-even size where offloading pays;
# - what out-of-memory (OOM) looks like, chunked streaming that works,
#   and KV-cache offload as the exception.
#
# The lab for this section is `labs/lab03_datapath/`.

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
import os
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numba
import numpy as np

import gpucourse as gc
from gpucourse import datapath, devmem, simd_simt

be = gc.setup()
xp = be.xp  # NumPy on CPU, CuPy on a GPU
rng = np.random.default_rng(0)
f32 = np.float32

# %% [markdown]
# ## 3.1 Article 000's table, in numbers
#
# [Article 000](00_overview.ipynb#Sources-and-claims-checks) compares the three kinds of processor
# in words.
# A CPU is built to minimize latency (지연 시간):
# few complex cores, big caches and elaborate control logic for branches and calls, DDR memory.
# A GPU is built for throughput (처리량):
# thousands of simple cores sharing control logic, fed by high-bandwidth memory (고대역폭 메모리, HBM).
# An NPU such as Google's TPU gives up generality and fills the chip with matrix multiply units
# (행렬 연산 유닛).
# Words like "core" hide the interesting numbers, and they must be compared like with like:
# **vector ALUs** — the fp32 units that run ordinary arithmetic, one fp32 unit each
# (an FMA or an add-only unit on the CPU, an FMA unit on the GPU,
# an adder or multiplier ALU on the TPU's VPU), counted as units, not FLOPs,
# the same way on every chip: a CPU core's SIMD pipes × their lanes,
# a GPU's "CUDA cores" (one FP32 unit per lane of an SM), a TPU's vector unit (an (8, 128) grid of lanes with two ALUs in each lane) — and **matrix units**,
# where an accelerator's FLOPs are (tensor cores, MXUs), counted in dense bf16 FLOP/s.

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'processor (published)':32} {'cores':<17} {'fp32 vector ALUs':>18} {'dense bf16 matrix':>18}  memory")
for name, p in datapath.PROCESSORS.items():
    matrix = f"{p['bf16_matrix_flops'] / 1e12:,.1f} TFLOP/s" if p["bf16_matrix_flops"] else "none"
    print(f"{name:32} {p['cores']:>5} {p['core_kind']:<11} {p['fp32_lanes']:>18,} {matrix:>18}  "
          f"{p['memory']}, {datapath.fmt_rate(p['bandwidth'])}")
cpu_p, gpu_p, npu_p = datapath.PROCESSORS.values()
print(f"vector ALUs: H100 / desktop CPU = {gpu_p['fp32_lanes'] / cpu_p['fp32_lanes']:.1f}×, "
      f"H100 / TPU v4 = {gpu_p['fp32_lanes'] / npu_p['fp32_lanes']:.2f}×")
print(f"dense bf16 matrix units: H100 / TPU v4 = {gpu_p['bf16_matrix_flops'] / npu_p['bf16_matrix_flops']:.1f}×; "
      f"TPU v4: 2 cores × 4 MXUs × 128 × 128 = {2 * 4 * 128 * 128:,} MACs per cycle × 2 FLOP × "
      f"{datapath.TPU_V4_CLOCK_HZ / 1e9:.2f} GHz = {2 * 4 * 128 * 128 * 2 * datapath.TPU_V4_CLOCK_HZ / 1e12:.0f} TFLOP/s")
mxu_macs = 2 * 4 * 128 * 128
print(f"the wrong comparison — TPU v4 MXU MACs counted as fp32 ALUs: {mxu_macs:,} vs the H100's "
      f"{gpu_p['fp32_lanes']:,} = {mxu_macs / gpu_p['fp32_lanes']:.1f}×")
assert (cpu_p["fp32_lanes"], gpu_p["fp32_lanes"], npu_p["fp32_lanes"]) == (1024, 16_896, 4096)
# like with like: ALUs on every chip, not lanes on one — the CPU's 4 pipes per core (2 FMA, 2 FADD) and the TPU's
# 2 ALUs per lane count
assert (cpu_p["fp32_lanes"], gpu_p["fp32_lanes"], npu_p["fp32_lanes"]) == (16 * 4 * 16, 132 * 128, 2 * (8 * 128) * 2)
# the H100's count is its fp32 peak: 16,896 FMA units × 2 FLOP × 1.98 GHz = 67 TFLOP/s (the datasheet's 66.9)
assert abs(gpu_p["fp32_lanes"] * 2 * 1.98e9 / gc.hardware.H100_SXM.peak_flops["fp32"] - 1) < 0.01
assert round(gpu_p["bf16_matrix_flops"] / npu_p["bf16_matrix_flops"], 1) == 3.6
# fp32 FLOP/s instead of units: a CPU FMA lane does 2 FLOPs a cycle, a FADD lane 1; at the 9950X's 5.7 GHz
# maximum boost (AMD's product page; an upper bound: 16 cores under AVX-512 run slower, which widens the gap)
CPU_BOOST_HZ = 5.7e9
cpu_fma_flops = 16 * 2 * 16 * 2 * CPU_BOOST_HZ  # FMA pipes only: §3.7's rule for a nominal peak counts these
cpu_all_flops = cpu_fma_flops + 16 * 2 * 16 * 1 * CPU_BOOST_HZ  # and the FADD pipes' adds
h100_fp32 = gc.hardware.H100_SXM.peak_flops["fp32"]
print(f"fp32 FLOP/s: H100 {h100_fp32 / 1e12:.1f} T vs the CPU's FMA-only peak {cpu_fma_flops / 1e12:.2f} T ="
      f" {h100_fp32 / cpu_fma_flops:.1f}×, vs FMA + FADD {cpu_all_flops / 1e12:.2f} T = {h100_fp32 / cpu_all_flops:.1f}×")
assert (round(h100_fp32 / cpu_fma_flops, 1), round(h100_fp32 / cpu_all_flops, 1)) == (11.5, 7.7)
cpu_all_core_flops = 16 * 2 * 16 * 2 * 5.0e9  # FMA pipes at §3.7's assumed 5.0 GHz all-core clock
print(f"at §3.7's 5.0 GHz all-core clock: the CPU's FMA-only peak {cpu_all_core_flops / 1e12:.2f} T ="
      f" {h100_fp32 / cpu_all_core_flops:.1f}× below the H100")
assert round(h100_fp32 / cpu_all_core_flops, 1) == 13.1
# Expected output:
# processor (published)            cores               fp32 vector ALUs  dense bf16 matrix  memory
# CPU (AMD Ryzen 9 9950X, desktop)    16 cores                    1,024               none  DDR5, 2 channels, 89.6 GB/s
# GPU (NVIDIA H100 SXM)              132 SMs                     16,896      989.4 TFLOP/s  HBM3 80 GB, 3.35 TB/s
# NPU (Google TPU v4)                  2 TensorCores              4,096      275.0 TFLOP/s  HBM2 32 GiB, 1.20 TB/s
# vector ALUs: H100 / desktop CPU = 16.5×, H100 / TPU v4 = 4.12×
# dense bf16 matrix units: H100 / TPU v4 = 3.6×; TPU v4: 2 cores × 4 MXUs × 128 × 128 = 131,072 MACs per cycle × 2 FLOP × 1.05 GHz = 275 TFLOP/s
# the wrong comparison — TPU v4 MXU MACs counted as fp32 ALUs: 131,072 vs the H100's 16,896 = 7.8×
# fp32 FLOP/s: H100 67.0 T vs the CPU's FMA-only peak 5.84 T = 11.5×, vs FMA + FADD 8.76 T = 7.7×
# at §3.7's 5.0 GHz all-core clock: the CPU's FMA-only peak 5.12 T = 13.1× below the H100

# %% [markdown]
# Like with like.
# **Vector ALUs**: the 16-core desktop CPU has 1,024 fp32 ALUs
# (each core is itself a small SIMD machine:
# 2 FMA pipes and 2 FADD pipes × 16 lanes), an H100 16,896 — 16.5× in units
# (in fp32 FLOP/s at the CPU's 5.7 GHz maximum boost, the line `fp32 FLOP/s: …`: 11.5× against its FMA-only peak
# — counted by §3.7's rule for a nominal peak: an FMA lane does 2 FLOPs a cycle —
# and 7.7× counting the FADD pipes' adds too;
# §3.7's published desktop roofline takes a 5.0 GHz all-core clock instead: 5.12 T, 13.1×, the last line),
# not "16 vs thousands" — and a TPU v4 4,096 (each TensorCore's vector unit is an (8, 128) grid of lanes with 2 ALUs per lane:
# "a total of 2048 floating point adders" per core, the scaling book's TPU chapter),
# a quarter of the H100's.
# Counting the TPU's 2,048 *lanes* against the H100's 16,896 *units* would make the gap 8×:
# the CPU's pipes and the TPU's second ALU must be counted alike.
# **Matrix units**: in dense bf16 an H100's tensor cores deliver 3.6× a TPU v4's MXUs per chip
# (989 vs 275 TFLOP/s).
# Counting the TPU's MXU multiply-accumulators as "fp32 ALUs"
# (the line `the wrong comparison …`) would make a TPU v4 look like 7.8× an H100 — the wrong unit:
# MXUs multiply bf16 matrices, not fp32 vectors, and per chip the H100's matrix units are faster.
# What the TPU does have is the most matrix hardware per unit of control logic:
# two instruction streams (cores) each drive four 128×128 systolic arrays (section 7)
# — the source article's "smallest control unit" row, in numbers.
# The table's other rows: flexibility falls from CPU to NPU
# (an NPU runs what its compiler scheduled, section 7);
# the interconnects are PCIe, and between CPU sockets Intel's UPI
# (formerly QPI) or AMD's Infinity Fabric (xGMI);
# PCIe and NVLink for GPUs (NVLink between GPUs because PCIe is too slow, §3.6);
# and vendor links for NPUs (Google's ICI, AWS's NeuronLink).
#
# And this machine:

# %%
isa, vector_bits = simd_simt.cpu_vector_isa()
logical = os.cpu_count()
cores = simd_simt.physical_cores() or logical  # SMT siblings share a core's FMA pipes: count physical cores
MEMORY_ROUNDS = 5  # a fixed number of rounds of 7 copies each (fresh buffers every round); the best of them all
copy_rounds = [datapath.measure_host_copy(nbytes=64 * 2**20) for _ in range(MEMORY_ROUNDS)]
host_bw = max(bw for bw, _ in copy_rounds)  # bytes read + bytes written per second, best copy of every round
print(f"this CPU: {cores} physical cores ({logical} logical CPUs), widest vector extension {isa} ({vector_bits}-bit registers = "
      f"{simd_simt.lanes(vector_bits)} fp32 lanes per instruction)")
print(f"host memory bandwidth from a 64 MiB memcpy on one core: {datapath.fmt_rate(host_bw)} read + written "
      f"(best copy of {sum(len(t.times) for _, t in copy_rounds)} in {MEMORY_ROUNDS} rounds; each round's best: "
      f"{', '.join(datapath.fmt_rate(bw) for bw, _ in copy_rounds)})")
assert 1 <= cores <= logical and vector_bits in (0, 128, 256, 512)

# %% [markdown]
# ## 3.2 SIMD on this CPU, measured
#
# SIMD = one instruction, several data elements in one wide register.
# The source article: "AVX-512 computes 16 fp32 values with one instruction":
# 512 bits / 32 bits = 16.
# Whether your CPU can is in its flags (above);
# whether your *code* does is in the machine code the compiler emits. numba compiles a plain Python
# loop with LLVM, and `inspect_asm()` shows the x86 assembly:
# a `…ps` instruction on a `zmm` register works on 16 floats, on `ymm` 8, on `xmm` 4;
# a `…ss` instruction works on one.

# %%
@numba.njit(fastmath=True)
def saxpy_numba(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


def saxpy_python(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


n = 2**15
x, y, out = rng.standard_normal(n).astype(f32), rng.standard_normal(n).astype(f32), np.empty(n, f32)
saxpy_numba(f32(2.0), x, y, out)  # compile
asm = next(iter(saxpy_numba.inspect_asm().values()))
ops = simd_simt.vector_instructions(asm)
widest = simd_simt.widest_packed(asm)
print("floating-point arithmetic in the compiled loop (mnemonic, register): count")
for (op, reg), count in sorted(ops.items(), key=lambda kv: -simd_simt.REGISTER_BITS[kv[0][1]]):
    print(f"  {op:14} {reg}: {count}")
print(f"widest packed instruction: {widest}-bit = {simd_simt.lanes(widest)} fp32 lanes per instruction")
import llvmlite.binding  # numba's LLVM: the core it tunes the code for
print(f"LLVM compiled for the core `{llvmlite.binding.get_host_cpu_name()}`")
assert np.allclose(out, 2 * x + y)
if simd_simt.is_x86():  # the assembly reader knows x86 only (on ARM, look for `fmla v0.4s`: NEON, 4 lanes)
    assert widest >= 128 and (vector_bits == 0 or widest <= vector_bits), "vectorized within the CPU's width"

# %% [markdown]
# `vfmadd…ps` is a *fused multiply-add* on a whole register:
# `a * x[i] + y[i]` for 4, 8 or 16 values of `i` at once.
# (The compiler also emits narrower and scalar code for the loop's remainder.)
# Which register you see depends on the CPU's feature flags (printed in §3.1:
# what the OS exposes, which in a VM may be less than the chip has) *and* on the compiler's tuning
# for its core.
# With the AVX-512 flags exposed, AMD Zen 4 and Zen 5 (LLVM core `znver4`,
# `znver5`) give `zmm` — the source article's 16 lanes, for real;
# a VM that hides those flags gets `ymm` even on a `znver4` core.
# On Intel's AVX-512 cores (`skylake-avx512`, `cascadelake`, `icelake-server`, `sapphirerapids`,
# the usual cloud Xeons) you will see `ymm`:
# LLVM's tuning for them sets `prefer-256-bit`,
# so its vectorizer uses 256-bit vectors even though the CPU has 512-bit ones
# (heavy 512-bit code lowers the clock of those cores).
# On an AVX2-only CPU you see `ymm`, and on one without AVX `xmm`.
# The assert checks only that the loop is vectorized and no wider than the CPU allows.
# Now the clock: the same loop interpreted by Python, NumPy's precompiled vector loop,
# and the numba loop.

# %%
a = f32(2.0)
timings = {
    "Python loop": gc.measure(saxpy_python, a, x, y, out, repeat=3, warmup=1),
    "NumPy (a*x + y)": gc.measure(lambda: np.add(a * x, y, out=out), repeat=15),
    "numba @njit loop": gc.measure(saxpy_numba, a, x, y, out, repeat=15),
}
ns_per = {k: t.median / n * 1e9 for k, t in timings.items()}
for k, t in timings.items():
    print(f"{k:18} {t}   {ns_per[k]:8.3f} ns per element")
ax = gc.plotting.axes("implementation [-]", "time per element [ns]", f"saxpy on {n:,} float32 (log scale)")
ax.bar(list(ns_per), list(ns_per.values()), color=gc.plotting.PALETTE[:3])
ax.set_yscale("log")
plt.show()
print(f"Python loop / numba loop: {ns_per['Python loop'] / ns_per['numba @njit loop']:,.0f}×; "
      f"Python loop / NumPy: {ns_per['Python loop'] / ns_per['NumPy (a*x + y)']:,.0f}×")
assert ns_per["Python loop"] > 20 * ns_per["numba @njit loop"], "compiled + vectorized beats the interpreter by far"
assert ns_per["Python loop"] > 20 * ns_per["NumPy (a*x + y)"]

# %% [markdown]
# Most of the Python loop's cost is the interpreter, not the arithmetic:
# compiling removes it, vectorizing then divides what is left by the lane count.
# Vectorizing is not automatic, though.
# A **sum** has a chain of dependencies (`s += x[i]` needs the previous `s`);
# adding 16 partial sums in parallel *reorders* the additions,
# and floating-point addition is not associative,
# so the compiler may only do it when you allow it (`fastmath=True`).
# Same loop, two permissions:

# %%
@numba.njit
def total_strict(x):
    s = f32(0.0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@numba.njit(fastmath=True)
def total_fast(x):
    s = f32(0.0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


big = rng.standard_normal(2**20).astype(f32)
sums = {f.__name__: f(big) for f in (total_strict, total_fast)}
adds = {}
for f in (total_strict, total_fast):
    found = simd_simt.vector_instructions(next(iter(f.inspect_asm().values())))
    adds[f.__name__] = {k: v for k, v in found.items() if k[0].startswith("vadd")}
t_strict, t_fast = gc.measure(total_strict, big, repeat=9), gc.measure(total_fast, big, repeat=9)
print(f"strict:   adds {adds['total_strict']}  {t_strict}  sum = {sums['total_strict']:.6f}")
print(f"fastmath: adds {adds['total_fast']}  {t_fast}  sum = {sums['total_fast']:.6f}")
print(f"speed-up from reordering the additions: {t_strict.median / t_fast.median:.1f}×")
if simd_simt.is_x86():
    assert all(op.endswith("ss") for op, _ in adds["total_strict"]), "strict order: one scalar add at a time"
    assert any(op.endswith("ps") for op, _ in adds["total_fast"]), "fastmath: packed (vector) adds"
ratio = gc.confirm_faster(total_fast, total_strict, big, factor=1.5, claim="packed adds beat one scalar add at a time")
assert abs(sums["total_strict"] - sums["total_fast"]) < 1e-2 * np.abs(big).sum()  # close, not bit-identical

# %% [markdown]
# The strict loop issues one scalar `vaddss` per element and waits for each result;
# the fastmath loop keeps several vector accumulators busy.
# The two sums differ in the last digits — the price of reordering,
# and the reason GPU reductions (which also reorder) don't reproduce a CPU's sum bit for bit.
#
# ## 3.3 SIMT: 32 threads, one instruction, an active mask
#
# A GPU SM does the same trick at a larger scale, but the programmer writes *one thread's* code.
# The hardware groups 32 consecutive threads into a **warp** and issues each instruction once for
# all 32 lanes.
# When threads of a warp disagree on an `if`, the warp executes both paths one after the other,
# and an **active mask** turns off the lanes that are not on the path being executed.
# First, the grouping, with a real CUDA kernel (numba-cuda: on the GPU when there is one;
# on CPU in the course's instrumented executor, `gpucourse.simt`,
# which runs each warp in lock step with an active mask, §5):

# %%
# NBVAL_CHECK_OUTPUT
cuda = be.cuda


@cuda.jit
def who_am_i(warp, lane, path, warpsize):
    t = cuda.threadIdx.x
    warpsize[0] = cuda.warpsize
    warp[t] = t // cuda.warpsize
    lane[t] = t % cuda.warpsize
    if t % 4 == 0:  # a branch that splits every warp
        path[t] = 1
    else:
        path[t] = 2


threads = 64
warp_id, lane_id, path = (np.zeros(threads, np.int32) for _ in range(3))
warpsize = np.zeros(1, np.int32)
who_am_i[1, threads](warp_id, lane_id, path, warpsize)
print(f"cuda.warpsize = {warpsize[0]}")
print(f"threads 30..33 -> warp {warp_id[30:34].tolist()}, lane {lane_id[30:34].tolist()}")
print(f"path taken by threads 0..7: {path[:8].tolist()}")
assert warpsize[0] == simd_simt.WARP_SIZE == 32
# Expected output:
# cuda.warpsize = 32
# threads 30..33 -> warp [0, 0, 1, 1], lane [30, 31, 0, 1]
# path taken by threads 0..7: [1, 2, 2, 2, 1, 2, 2, 2]

# %% [markdown]
# The kernel can also show the mask itself:
# `cuda.activemask()` returns, as a 32-bit integer,
# which lanes of the warp are executing the instruction that calls it (bit *i* = lane *i*).
# Called on each side of the same branch:

# %%
@cuda.jit
def mask_on_each_path(mask):
    t = cuda.threadIdx.x
    if t % 4 == 0:
        mask[t] = cuda.activemask()  # lanes 0, 4, 8, … are here together
    else:
        mask[t] = cuda.activemask()  # the other 24 lanes, in a second pass


mask = np.zeros(32, np.uint32)
mask_on_each_path[1, 32](mask)
print(f"path A (t % 4 == 0): activemask = {mask[0]:#010x} = {bin(mask[0]).count('1')} lanes; "
      f"path B: activemask = {mask[1]:#010x} = {bin(mask[1]).count('1')} lanes")
assert all(int(m) >> t & 1 for t, m in enumerate(mask)), "a lane is always in its own mask"
if not be.is_gpu:  # the course's executor runs each path once for the lanes on it
    assert set(mask[::4].tolist()) == {0x11111111} and set(np.delete(mask, np.s_[::4]).tolist()) == {0xEEEEEEEE}
else:  # a GPU may split a path further (independent thread scheduling), but never mixes the two paths
    assert all(int(m) & ~0x11111111 == 0 for m in mask[::4]), "path A's mask holds only lanes with t % 4 == 0"
    assert all(int(m) & ~0xEEEEEEEE == 0 for m in np.delete(mask, np.s_[::4])), "path B's only the other lanes"

# %% [markdown]
# `0x11111111` has every fourth bit set:
# the 8 lanes with `t % 4 == 0` ran path A together while the other 24 were masked off;
# `0xeeeeeeee` is the complement, path B. (On a GPU since Volta,
# threads of a warp may also be scheduled independently,
# so the hardware is allowed to split a path further; `activemask` reports what it did.)
# The cost of this, as a model: one warp issuing `if t % 4 == 0: A else:
# B` with path A 6 instructions long and path B 4.
# A path is issued if at least one lane takes it;
# while it runs, only the lanes that took it are active.
# Below, each row is one issued instruction, each column a lane, dark = active.
# These masks were computed by the course's reference model on the instructor's side
# (not in the student edition: lab 3's exercise 4 uses the same issue rule to choose a layout)
# and ship as data, `gpucourse/data/warp_masks.json`
# (`simd_simt.stored_warp_masks()` reads it; a test recomputes it).
# The cell checks them against what the rule above says:
# every active lane-slot is useful work, and a path is issued only if some lane takes it.

# %%
# NBVAL_CHECK_OUTPUT
cost_if, cost_else, stored = simd_simt.stored_warp_masks()
lanes_ = np.arange(32)
assert {title: cond.tolist() for title, (cond, _) in stored.items()} == {
    "t % 4 == 0 (divergent)": (lanes_ % 4 == 0).tolist(), "t < 32 (uniform)": (lanes_ < 32).tolist(),
    "t < 12 (divergent)": (lanes_ < 12).tolist()}
masks = {}
for title, (cond, m) in stored.items():
    masks[title] = m
    useful = cost_if * cond.sum() + cost_else * (~cond).sum()
    assert m.sum() == useful  # every active lane-slot is useful work
    print(f"{title:24} issued {m.shape[0]:2} instructions, lane utilization {m.mean():.1%}")
# the uniform warp issues path A only; a divergent one issues both, one after the other
assert [m.shape[0] for m in masks.values()] == [cost_if + cost_else, cost_if, cost_if + cost_else]
# Expected output:
# t % 4 == 0 (divergent)   issued 10 instructions, lane utilization 45.0%
# t < 32 (uniform)         issued  6 instructions, lane utilization 100.0%
# t < 12 (divergent)       issued 10 instructions, lane utilization 47.5%

# %%
fig, axs = plt.subplots(1, 3, figsize=(13, 3.6))
for ax, (title, m) in zip(axs, masks.items()):
    gc.plotting.axes("lane [thread index in warp]", "issue slot [instruction #]", title, ax=ax)
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1.4, aspect="auto", interpolation="nearest",
              extent=(-0.5, 31.5, m.shape[0] - 0.5, -0.5))
    ax.set_ylim(9.5, -0.5)  # same height for every warp: 10 issue slots
    ax.grid(False)
plt.suptitle("Active mask of one warp: if (cond) {6 instructions} else {4 instructions}; dark = lane active")
plt.tight_layout()
plt.show()

# %% [markdown]
# A divergent warp pays for both paths: 10 issue slots instead of 6 or 4, and most lane-slots idle.
# A branch costs nothing when all 32 threads of a warp agree (`t < 32`),
# whatever other warps do — so arranging data so that warps agree is a real optimization
# (section 5 measures it).
# Lab exercise 4 designs such an arrangement:
# which thread processes which item so that a whole grid issues the fewest instructions.
#
# The CPU's vector units face the same problem and solve it the same way:
# a vectorized loop with an `if` computes both sides for all lanes and **blends** them under a mask
# (AVX-512 even has mask registers `k0–k7`).
# That is also how you vectorize a branch in NumPy:
# `np.where(cond, a, b)` — lab exercise 5 does it for a four-region loss and its gradient.

# %%
@numba.njit(fastmath=True)
def clip_branchy(x, t, out):
    for i in range(x.shape[0]):
        if x[i] > t:
            out[i] = t
        else:
            out[i] = x[i] * f32(0.5)


clip_branchy(x, f32(0.3), out)
asm_branch = next(iter(clip_branchy.inspect_asm().values()))
masked = asm_branch.count("{%k")
blends = sum(asm_branch.count(b) for b in ("vblendvps", "vblendmps", "vpblendmd"))
print(f"branchy loop: widest packed op {simd_simt.widest_packed(asm_branch)}-bit, "
      f"{masked} AVX-512 masked operations, {blends} blend instructions")
assert np.allclose(out, np.where(x > 0.3, 0.3, 0.5 * x))
if simd_simt.is_x86():
    assert simd_simt.widest_packed(asm_branch) >= 128, "the if/else was vectorized, not run lane by lane"

# %% [markdown]
# | | CPU SIMD | GPU SIMT |
# |---|---|---|
# | who writes the vector code | the compiler (or you, with intrinsics) | the hardware: you write one thread |
# | lanes per instruction | 4 / 8 / 16 fp32 (SSE / AVX — AVX2 adds 256-bit integers, FMA3 the fused multiply-add — / AVX-512) | 32 threads per warp |
# | a branch | both sides + blend/mask, chosen by the compiler | both paths under an active mask, by the hardware |
# | independent instruction streams | one per core (+ SMT) | up to 64 warps resident per SM (H100, A100; 48 on sm_86/sm_89; 32 on sm_75, the T4), 4 issuing per clock |
#
# ## 3.4 Article 002's program, run for real
#
# ```python
# data = numpy.load("~")           # line 1: disk → CPU memory
# data.to_gpu()                    # line 2: CPU memory → GPU memory
# GPU_processing_function(data)    # line 3: all the work inside the GPU
# data.to_cpu()                    # line 4: GPU memory → CPU memory
# print(data)                      # line 5: the CPU reads its own memory
# ```
#
# Running it starts one operating-system process;
# the GPU is not a process of its own but a co-processor the process *uses*:
# the CPU runs the program, prepares the data and decides which kernel runs when,
# the GPU executes what it is sent.
# Here it is with the course's device-memory tracker (`gpucourse.devmem`):
# on a GPU its arrays are CuPy arrays in real device memory and `to_device`/`to_host` are real PCIe
# copies; on this CPU the "device" is a second buffer in the same RAM,
# so `to_gpu` is a memcpy — the bytes still move, just not over PCIe.
# Every step is timed with `gc.measure` (synchronized).

# %%
N = 2**22  # 16 MiB of float32
workdir = Path(tempfile.mkdtemp(prefix="gpucourse03-"))
path_npy = workdir / "data.npy"
np.save(path_npy, rng.standard_normal(N).astype(f32))
mem = devmem.DeviceMemory(budget=256 * 2**20, name=f"{be.name} device memory")


def gpu_processing_function(d):
    return np.tanh(d) * 2.0 + 1.0  # elementwise work, all of it "on the device"


data = np.load(path_npy)
d = mem.to_device(data)
r = gpu_processing_function(d)
result = mem.to_host(r)
print(result[:4])

steps = {
    "load (disk → CPU)": gc.measure(np.load, path_npy, repeat=5),
    "to_gpu (CPU → GPU)": gc.measure(mem.to_device, data, repeat=5),
    "process (on GPU)": gc.measure(gpu_processing_function, d, repeat=5),
    "to_cpu (GPU → CPU)": gc.measure(mem.to_host, r, repeat=5),
    "print": gc.measure(np.array2string, result[:4], repeat=5),
}
for step, t in steps.items():
    print(f"{step:20} {t}")
assert np.allclose(result, np.tanh(data) * 2 + 1, atol=1e-6)
assert mem.h2d_bytes >= data.nbytes and mem.d2h_bytes >= result.nbytes
del d, r

# %% [markdown]
# (`load` reads a file written a moment ago,
# so it comes from the operating system's page cache in RAM, not from the disk itself;
# a cold read is limited by the drive: ~7 GB/s for a PCIe 4.0 NVMe SSD.)
#
# The same program on an H100 behind PCIe 5.0, from published figures (`gc.datapath`):
# load from an NVMe drive, copy at 63 GB/s (PCIe 5.0 ×16 after its line encoding, §3.6),
# process at HBM speed (3.35 TB/s, the op is memory-bound), copy back.
# A third row is article 002's "complicated case":
# one step of the processing needs the CPU, so the data goes to the CPU and back in the middle.
# Both model rows price the copies at the link's peak, which only a *pinned* host buffer gets;
# the array `np.load` returns is pageable,
# and §3.6–3.7 show that a pageable copy is staged by the CPU and slower still,
# so these copy bars are the optimistic bound.

# %%
nbytes = N * 4
nvme = datapath.BANDWIDTHS["NVMe SSD, PCIe 4.0 x4"][0]
pcie5 = datapath.Link("PCIe 5.0 x16", datapath.BANDWIDTHS["PCIe 5.0 x16"][0], latency=10e-6)
h100 = gc.roofline.Roofline("H100 SXM fp32", gc.hardware.H100_SXM.peak_flops["fp32"], gc.hardware.H100_SXM.memory_bandwidth)
ddr5 = datapath.BANDWIDTHS["DDR5-5600, 2 channels (desktop)"][0]
process = datapath.roofline_time(20 * N, 2 * nbytes, h100)  # tanh ~ 20 FLOPs per element; read + write
to_gpu = datapath.transfer_time(nbytes, pcie5)
cpu_step = 2 * nbytes / ddr5  # the CPU-only step: read and write the array once at DDR5 speed
rows = {
    "this machine\n(measured)": [(k, t.median) for k, t in steps.items()],
    "H100 + PCIe 5, pinned\nhost buffer (model)": [("load (disk → CPU)", nbytes / nvme), ("to_gpu (CPU → GPU)", to_gpu),
                               ("process (on GPU)", process), ("to_cpu (GPU → CPU)", to_gpu), ("print", 0.0)],
    "H100, pinned, one\nCPU-only step (model)": [("load (disk → CPU)", nbytes / nvme), ("to_gpu (CPU → GPU)", to_gpu),
                                         ("process (on GPU)", process / 2), ("to_cpu (GPU → CPU)", to_gpu),
                                         ("CPU-only step", cpu_step), ("to_gpu (CPU → GPU)", to_gpu),
                                         ("process (on GPU)", process / 2), ("to_cpu (GPU → CPU)", to_gpu),
                                         ("print", 0.0)],
}
ax = gc.plotting.axes("time since the program started [ms]", "program [-]", f"Article 002's program on {nbytes / 2**20:.0f} MiB",
                      figsize=(11, 4.4))
datapath.draw_timeline(ax, rows, unit=1e-3)
plt.tight_layout()
plt.show()
total_model = sum(t for _, t in rows["H100 + PCIe 5, pinned\nhost buffer (model)"])
print(f"H100 model: process {process * 1e6:.0f} µs of {total_model * 1e3:.2f} ms total "
      f"({process / total_model:.1%}); copies {2 * to_gpu * 1e3:.2f} ms; the CPU round trip adds "
      f"{(2 * to_gpu + cpu_step) * 1e3:.2f} ms")
assert process < 0.05 * total_model, "on a GPU the work itself is the smallest bar: data movement dominates"
assert 2 * to_gpu > 20 * process and 2 * to_gpu < 1e-3 < nbytes / nvme, "copies: tens of × the work; disk: longer"

# %% [markdown]
# On the GPU, `process` is a sliver:
# for a memory-bound operation the work is microseconds,
# moving the bytes in and out tens of times longer (about half a millisecond for these 16 MiB:
# printed and asserted), and reading them from disk longer still.
# That is the source article's advice in one picture:
# load once, copy once, keep data on the GPU for as many operations as possible
# — and avoid CPU-only steps in the middle, which cost two more trips over PCIe.
#
# ## 3.5 Why GPU memory has no path to disk
#
# Article 002: a GPU cannot read the disk mid-computation;
# disk ↔ GPU data always passes through CPU memory,
# and data larger than GPU memory gives an OOM error rather than paging.
# Its reason is bandwidth: put every hop on one axis.

# %%
def hop_color(name):
    kinds = (("measured", 7), ("SSD", 3), ("PCIe", 1), ("NVLink", 1), ("HBM", 2))
    return gc.plotting.PALETTE[next((c for key, c in kinds if key in name), 0)]  # DDR: blue


names = list(datapath.BANDWIDTHS)
values = [datapath.BANDWIDTHS[k][0] for k in names]
names.append("this machine: host memcpy\n(measured on one core, read + written)")
values.append(host_bw)
order = np.argsort(values)
ax = gc.plotting.axes("bandwidth [GB/s]", "path [-]", "Every hop from disk to the GPU's cores (log scale)", figsize=(9, 5))
colors = [hop_color(names[i]) for i in order]
ax.barh([names[i] for i in order], [values[i] / 1e9 for i in order], color=colors)
ax.set_xscale("log")
plt.tight_layout()
plt.show()
bw = {k: v[0] for k, v in datapath.BANDWIDTHS.items()}
hbm, ssd = bw["HBM3 (H100 SXM)"], bw["NVMe SSD, PCIe 4.0 x4"]
print(f"HBM3 / NVMe SSD = {hbm / ssd:.0f}×: streaming 80 GB from the SSD takes {80e9 / ssd:.1f} s, "
      f"from HBM {80e9 / hbm * 1e3:.0f} ms")
assert ssd < bw["PCIe 4.0 x16"] < bw["PCIe 5.0 x16"] < bw["NVLink 4 (H100, per GPU, each direction)"] < hbm
assert 440 < hbm / ssd < 460

# %% [markdown]
# A kernel that had to wait for the disk would run at 1/450 of its memory speed
# (the ratio printed above): every SM idle.
# So the classic design moves data *between* computations:
# disk → page cache in CPU memory → (through a pinned staging buffer) → PCIe DMA → GPU memory,
# driven by the CPU.
#
# **Where this is qualified: GPUDirect Storage (GDS).**
# Since CUDA 11.4, NVIDIA's cuFile API lets an NVMe drive DMA *directly* into GPU memory over PCIe,
# skipping the bounce buffer in CPU memory (NVIDIA *GPUDirect Storage Overview Guide*).
# The CPU still issues the request and the file system still decides where the blocks are,
# the transfer still happens between kernels, and it needs supported drives,
# drivers and file systems — but the bytes no longer pass through CPU memory.
# In Python it is `kvikio` (RAPIDS);
# on a GPU with it installed, this cell reads the file straight into device memory:

# %%
raw = workdir / "data.f32"
data.tofile(raw)
if gc.require_gpu("GPUDirect Storage: read the file with kvikio (cuFile) straight into GPU memory"):
    try:
        import kvikio
    except ImportError:
        print("kvikio is not installed (pip install kvikio-cu12): the read would go disk → CPU memory → GPU")
    else:
        buf = xp.empty(N, dtype=f32)
        with kvikio.CuFile(str(raw), "r") as f:
            f.read(buf)
        assert np.array_equal(buf.get(), data)
        compat = getattr(kvikio.defaults, "compat_mode", None)  # the name of this query varies by version
        print(f"kvikio read {buf.nbytes / 2**20:.0f} MiB into GPU memory; compatibility mode (a CPU bounce "
              f"buffer instead of GDS): {compat() if callable(compat) else 'unknown'}")
shutil.rmtree(workdir, ignore_errors=True)  # the files were only needed for the reads above

# %% [markdown]
# ## 3.6 PCIe, DMA and pinned memory
#
# `to_gpu` is a **DMA** (직접 메모리 접근) transfer:
# the driver queues a copy command ("these bytes to that address") for the GPU's copy engine,
# a DMA engine, and the CPU goes on;
# the engine moves the bytes over PCIe and signals completion (article 000).
# One condition: DMA needs host memory the OS will not move or swap out
# — **pinned** (page-locked) memory.
# An ordinary NumPy array is *pageable*, so the CUDA driver first copies it, with the CPU,
# into a pinned staging buffer, then DMAs from there (CUDA Runtime API,
# "API synchronization behavior": a copy from pageable memory "will return once the pageable
# buffer has been copied to the staging memory for DMA transfer").
#
# **What "PCIe 5.0 ×16 = 64 GB/s" means.**
# It is the raw signalling rate: 32 GT/s per lane × 16 lanes ÷ 8 bits, per direction.
# PCIe 3.0–5.0 send every 128 bits of data as a 130-bit block (128b/130b encoding),
# so DMA can move at most 128/130 of it: 63.0 GB/s.
# PCIe 6.0 doubles the rate with PAM4 signalling
# (2 bits per symbol) and drops the line code for fixed 256-byte FLITs,
# each carrying 236 bytes of packets beside 20 bytes of link payload,
# CRC and forward error correction (PCI-SIG).
# Every packet also carries a header, sequence number and CRC (≈ 20–30 bytes per packet),
# and its payload is at most the link's *Max_Payload_Size*:
# the specification allows up to 4096 bytes, systems typically configure 128–512,
# and at 24 bytes of overhead per packet that alone costs about 16 % at 128 and 4.5 % at 512
# (the last line).
# Flow-control packets share the link too:
# what a real copy reaches is lower again — the GPU cell below measures it.

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'link, one direction':18} {'raw':>10} {'after encoding':>15}  encoding")
for gen in (3, 4, 5, 6):
    r = datapath.pcie_bandwidth(gen, 16)
    print(f"PCIe {gen}.0 ×16       {r.raw / 1e9:6.1f} GB/s {r.encoded / 1e9:10.1f} GB/s  {r.encoding}")
assert round(bw["PCIe 4.0 x16"] / 1e9, 1) == 31.5 and round(bw["PCIe 5.0 x16"] / 1e9, 1) == 63.0
TLP_OVERHEAD = 24  # bytes per packet: header (12–16), sequence number (2), LCRC (4), framing (≈ 2–4)
share = {mps: mps / (mps + TLP_OVERHEAD) for mps in (128, 256, 512, 4096)}  # Max_Payload_Size: typical ... spec max
print("payload share of a packet, by Max_Payload_Size: " + ", ".join(f"{m} B {v:.1%}" for m, v in share.items()))
assert share[128] < 0.85 < 0.95 < share[512] < share[4096], "the configured payload size, not the spec's 4096, binds"
# Expected output:
# link, one direction        raw  after encoding  encoding
# PCIe 3.0 ×16         16.0 GB/s       15.8 GB/s  128b/130b
# PCIe 4.0 ×16         32.0 GB/s       31.5 GB/s  128b/130b
# PCIe 5.0 ×16         64.0 GB/s       63.0 GB/s  128b/130b
# PCIe 6.0 ×16        128.0 GB/s      118.0 GB/s  PAM4, 256-byte FLITs (236 bytes of packets each)
# payload share of a packet, by Max_Payload_Size: 128 B 84.2%, 256 B 91.4%, 512 B 95.5%, 4096 B 99.4%

# %% [markdown]
# On a GPU the next cell measures pageable and pinned copies with CUDA events,
# against the encoded peaks; on this CPU it says what it would measure.

# %%
if gc.require_gpu("host→device and device→host bandwidth, pageable vs pinned, 256 MiB, CUDA events"):
    size = 256 * 2**20
    measured = {}
    for direction, fn in (("H2D", datapath.measure_h2d), ("D2H", datapath.measure_d2h)):
        for pinned in (False, True):
            rate, t = fn(size, pinned=pinned)
            measured[f"{direction} {'pinned' if pinned else 'pageable'}"] = rate
            print(f"{direction} {'pinned  ' if pinned else 'pageable'} {datapath.fmt_rate(rate):>12}  ({t})")
    ax = gc.plotting.axes("copy [-]", "bandwidth [GB/s]", f"{be.gpu.name}: pageable vs pinned, 256 MiB")
    ax.bar(list(measured), [v / 1e9 for v in measured.values()], color=gc.plotting.PALETTE[:4])
    ax.axhline(bw["PCIe 5.0 x16"] / 1e9, color="k", ls="--", lw=1, label="PCIe 5.0 x16 after 128b/130b")
    ax.axhline(bw["PCIe 4.0 x16"] / 1e9, color="grey", ls=":", lw=1, label="PCIe 4.0 x16 after 128b/130b")
    ax.legend()
    plt.show()
    if measured["H2D pinned"] > 1.02 * bw["PCIe 5.0 x16"]:  # e.g. Grace Hopper: the host link is NVLink-C2C (§3.9)
        print("pinned H2D is faster than PCIe 5.0 ×16 can carry: this GPU's host link is not PCIe")
    else:
        gen = 5 if measured["H2D pinned"] > bw["PCIe 4.0 x16"] else 4  # the link, judged by its speed
        print(f"pinned H2D reaches {measured['H2D pinned'] / bw[f'PCIe {gen}.0 x16']:.0%} of PCIe {gen}.0 ×16 "
              "after its encoding (the rest: packet headers and flow control)")
    assert measured["H2D pinned"] > measured["H2D pageable"], "pinned memory skips the CPU staging copy"
else:
    print(f"Encoded peaks to compare with on a GPU: PCIe 4.0 x16 {datapath.fmt_rate(bw['PCIe 4.0 x16'])}, "
          f"PCIe 5.0 x16 {datapath.fmt_rate(bw['PCIe 5.0 x16'])} per direction")

# %% [markdown]
# That the CPU only *starts* a DMA copy shows on a GPU as a gap between two clocks:
# the host's time to enqueue an asynchronous copy from pinned memory on a stream,
# and the copy's duration on the GPU.

# %%
if gc.require_gpu("a pinned async copy: host time to enqueue vs the copy's duration"):
    size = 256 * 2**20
    host = datapath.pinned_empty(size)
    dev = xp.empty(size, dtype=xp.uint8)
    stream = xp.cuda.Stream(non_blocking=True)
    enqueue = gc.measure(lambda: dev.set(host, stream=stream), sync=False, repeat=5)
    full = gc.measure(lambda: dev.set(host, stream=stream), repeat=5)
    print(f"host returns after {enqueue}; the copy takes {full}: the CPU is free for "
          f"{1 - enqueue.median / full.median:.0%} of the transfer")
    assert enqueue.median < 0.2 * full.median

# %% [markdown]
# On any machine we can compare what the numbers say: PCIe is the narrowest pipe after the disk.

# %%
# NBVAL_CHECK_OUTPUT
for label, link in (("PCIe 4.0 x16", "PCIe 4.0 x16"), ("PCIe 5.0 x16", "PCIe 5.0 x16"),
                    ("NVLink 4 (H100, each direction)", "NVLink 4 (H100, per GPU, each direction)"),
                    ("DDR5 desktop (2 ch)", "DDR5-5600, 2 channels (desktop)"),
                    ("DDR5 server (12 ch)", "DDR5-4800, 12 channels (EPYC 9004 server)")):
    print(f"HBM3 (H100) / {label:32} = {hbm / bw[link]:6.1f}×")
assert hbm / bw["PCIe 5.0 x16"] > 50
# Expected output:
# HBM3 (H100) / PCIe 4.0 x16                     =  106.3×
# HBM3 (H100) / PCIe 5.0 x16                     =   53.2×
# HBM3 (H100) / NVLink 4 (H100, each direction)  =    7.4×
# HBM3 (H100) / DDR5 desktop (2 ch)              =   37.4×
# HBM3 (H100) / DDR5 server (12 ch)              =    7.3×

# %% [markdown]
# And against this machine.
# §3.1's memcpy rate (the best copy of its fixed rounds,
# used unchanged here) counts every byte twice, read and written,
# which is how STREAM and every memory datasheet count bandwidth;
# a STREAM-style add (`c = a + b`, 3 bytes counted per byte of `c`) measures the same memory another
# way.
# Both run on **one core** (NumPy does not spread them over threads),
# so they show what one core sustains,
# usually less than the memory's peak that all cores together can draw.
# And one core sustains different rates for different access patterns:
# the add reads two streams and writes a third,
# and each of its stores that misses the cache first reads the line it lands in (*write-allocate*:
# a 4th byte per byte of `c` that STREAM's count leaves out),
# while a large memcpy usually skips that read
# (glibc copies with non-temporal stores above a cache-size threshold, below it with `rep movsb`,
# whose fast-string stores skip it too on Intel CPUs).
# So the two need not match: the ratio is printed,
# below 1 where the add's write-allocate reads cost the core bandwidth,
# near 1 where the memory system hides them,
# and above 1 where memcpy itself runs below the add's rate
# (a copy that is not the fastest this core can do).
# What is asserted is only that they agree in order of magnitude (within a factor of 4).
# The add runs the same fixed number of rounds as §3.1's copy, and the best run of each is compared,
# once:

# %%
adds = [datapath.measure_host_add(nbytes=64 * 2**20)[0] for _ in range(MEMORY_ROUNDS)]  # §3.1's fixed rounds
host_add = max(adds)  # the best: a busy machine slows some runs down, never speeds one up
print(f"this machine, one core: memcpy {datapath.fmt_rate(host_bw)} (§3.1's best), STREAM add "
      f"{datapath.fmt_rate(host_add)} (best of {MEMORY_ROUNDS} rounds; each round's best: "
      f"{', '.join(datapath.fmt_rate(a) for a in adds)})\n(bytes read + written per second, as STREAM counts them; "
      f"add / memcpy = {host_add / host_bw:.2f})")
print(f"HBM3 (H100) / one core's memory rate here = {hbm / max(host_bw, host_add):.0f}× (the faster of the two; an "
      "upper bound on HBM / this machine's memory, which all cores together can draw harder)")
assert 1 / 4 < host_add / host_bw < 4, "two ways of measuring the same memory agree in order of magnitude"
assert hbm / max(host_bw, host_add) > 3

# %% [markdown]
# ## 3.7 When does offloading pay? The break-even size
#
# Offloading costs `to_gpu + process + to_cpu`; staying costs the CPU's time.
# For `n` elements both grow linearly,
# but the GPU side starts with two copy latencies and pays PCIe per byte.
# So the question is per element: is *copy + GPU work* cheaper than *CPU work*?
# For a vector add (1 FLOP per 12 bytes) on a desktop CPU with dual-channel DDR5,
# the PCIe copies alone, one after the other as this model runs them,
# are slower than the CPU reading its own memory:
# it **never** pays, however large `n` (asserted below;
# where it can pay on a slower machine, and why staging undoes that, follows).
# For a matrix multiply (2n³ FLOPs on 3n² numbers) the work grows faster than the copies,
# and it pays beyond some size.
# The GPU is an H100 over PCIe 5.0;
# the CPU is a published desktop CPU, and this machine with its roofs measured.
# A roof is meant to be a *peak*: this CPU's compute roof is NumPy's BLAS on a 1536 × 1536 float32
# GEMM — a size chosen to let every core's vector units run flat out, warmed up,
# the best of several runs (other programs only ever slow a run down),
# though on a shared or busy machine it can reach only a fraction of the nominal peak printed beside
# it (and above it where the cores boost past the clock the kernel reports, as a virtual machine's
# base clock often is), and it is then the roof *measured here,
# under whatever else runs* — and its memory roof is the faster of the two bandwidths measured in
# §3.1 and §3.6 (one core's: all cores together draw more,
# so this machine's true ridge point lies left of the one drawn).
# The nominal peak (physical cores × FMA pipes × fp32 lanes per pipe × 2 FLOP × the clock the kernel
# reports, computed as §1 does: 2 pipes on most cores,
# 1 of 512 bits on Intel's client cores with AVX-512;
# a pipe's lanes are its width, 8 on AMD's Zen 4 and mobile Zen 5,
# whose 256-bit pipes run AVX-512 in two halves) is printed beside it for scale.
# It counts *physical* cores (§3.1's printout gives both counts):
# with SMT (Hyper-Threading) two logical CPUs share one core's FMA pipes,
# and counting logical CPUs would double the nominal peak.

# %%
cpu_peak, t_peak = datapath.measure_host_peak_flops(n=1536, repeat=4)  # NumPy's BLAS, warmed, best of several
stated = gc.roofline.cpu_stated_peak("float32", cores=cores)  # §1's nominal peak: lanes = the FMA pipes' width
nominal = stated.flops
print(f"this CPU's GEMM peak: {cpu_peak / 1e9:.1f} GFLOP/s (1536² float32, best of {len(t_peak.times)}: "
      f"{gc.timing.format_seconds(t_peak.best)})" + (f"; nominal {nominal / 1e9:.0f} GFLOP/s = {stated.how} "
      f"(measured / nominal = {cpu_peak / nominal:.0%})" if nominal else ""))
here = gc.roofline.Roofline("this CPU (1 core's memory)", cpu_peak, max(host_bw, host_add))
# Ryzen 9 9950X: 16 cores × 2 FMA pipes × 16 fp32 lanes × 2 FLOP × 5.0 GHz (an assumed all-core clock; its boost
# clock is 5.7 GHz); DDR5-5600 dual channel
desktop = gc.roofline.Roofline("desktop CPU (published)", 16 * 2 * 16 * 2 * 5.0e9, bw["DDR5-5600, 2 channels (desktop)"])


# the two workloads of size n, float32 (datapath.WORKLOADS): a vector add (n FLOPs, 8n bytes in, 4n out) and a
# square matmul (2n³ FLOPs, 8n² in, 4n² out)
breaks = {}
for cpu in (desktop, here):
    breaks[cpu.name] = (datapath.break_even("vector add", cpu, h100, pcie5),
                        datapath.break_even("matmul", cpu, h100, pcie5, n_max=1 << 16))
    print(f"{cpu.name:24} {cpu.peak_flops / 1e9:7.1f} GFLOP/s, {datapath.fmt_rate(cpu.bandwidth):>10}:  offloading to an "
          f"H100 pays from  vector add n = {breaks[cpu.name][0]},  matmul n = {breaks[cpu.name][1]}")
n_add, n_mm = breaks[desktop.name]
assert n_add is None, "with DDR5 faster than PCIe, a vector add never pays for its trip"
assert n_mm is not None and n_mm < 4096
# a vector add moves 12 bytes per FLOP: it can pay only if the CPU's own memory is slower than the link
slower_than_link = 12 / here.bandwidth > 12 / pcie5.bandwidth + 12 / h100.bandwidth
assert (breaks[here.name][0] is not None) == slower_than_link
# ... and the model's link is the pinned-memory DMA peak. NumPy arrays are pageable: the driver first copies them
# with the CPU, at this machine's memcpy rate, into a pinned buffer (§3.6, C09) — at best overlapped with the DMA
staged = datapath.pageable_link(pcie5, host_bw)
n_add_pageable = datapath.break_even("vector add", here, h100, staged)
print(f"{'this CPU, pageable data':24} staged at {datapath.fmt_rate(staged.bandwidth)} (memcpy ÷ 2, overlapped with "
      f"the DMA):  vector add n = {n_add_pageable}")
assert n_add_pageable is None, "staged at the host's own memcpy speed, a vector add can never pay"
cpu = desktop

ns = np.unique(np.logspace(3, 8, 40).astype(int))
sq = np.unique(np.logspace(0.5, 3.6, 40).astype(int))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
for ax, sizes, wl, title, xlabel in ((ax1, ns, datapath.WORKLOADS["vector add"], "vector add", "elements n [-]"),
                                     (ax2, sq, datapath.WORKLOADS["matmul"], "square matmul", "matrix side n [-]")):
    t = [datapath.offload_times(wl(int(k)), cpu, h100, pcie5) for k in sizes]
    gc.plotting.axes(xlabel, "time [s]", title, ax=ax)
    ax.loglog(sizes, [x["cpu"] for x in t], label=cpu.name)
    ax.loglog(sizes, [datapath.gpu_total(x) for x in t], label="H100: to_gpu + process + to_cpu")
    ax.loglog(sizes, [x["process"] for x in t], ls="--", label="H100: process only")
    ax.legend()
ax2.axvline(n_mm, color="grey", lw=1)
ax2.annotate(f"break-even n = {n_mm}", (n_mm, ax2.get_ylim()[0]), xytext=(5, 10), textcoords="offset points")
plt.suptitle(f"{desktop.name} vs H100 over PCIe 5.0 (model)")
plt.tight_layout()
plt.show()

# %% [markdown]
# If the measured GEMM peak printed above is a small fraction of the nominal one,
# the cores were shared with other programs while this ran (or ran below the reported clock);
# if it is above it, the cores ran faster than the reported clock (a boost, or a virtual machine
# reporting its base clock);
# the break-even printed for this CPU moves with it: a slower CPU makes offloading pay sooner.
#
# The dashed line is what a benchmark that ignores transfers reports: the GPU "wins" everywhere.
# With the copies included, the vector add's GPU line runs parallel to the CPU's — above it.
# The rule behind it: a vector add moves 12 bytes per FLOP,
# so it can only pay when the CPU code's memory rate is slower than PCIe
# — as the row for this CPU prices it:
# **one core** (the course's timings are single-core) against the link,
# false of any desktop's all-core DDR5.
# And the copy engine's own reads and writes go through the same host DRAM:
# a pinned DMA moves the 8 input bytes out and the 4 result bytes in, 12 bytes per element,
# as the CPU's add does — so the offload can only win while the CPU code draws less of the DRAM than
# the copy engine can (single-threaded code, as here),
# and only **if the data already lives in pinned memory**: the model's link is the pinned DMA peak.
# From pageable memory — an ordinary NumPy array
# — the driver first copies every byte with the CPU at this machine's own memcpy speed (§3.6, C09),
# and the last printed row shows that a vector add then never pays on this machine (asserted).
# The reason holds on any machine whose copies run through the same DRAM as its add:
# staging moves at least 24 bytes per element through host memory
# (the CPU reads the 8 input bytes and writes them into the pinned buffer,
# then reads the 4 output bytes out of it and writes them back:
# 16 + 8), while the add on the CPU moves 12 (reads 8, writes 4;
# 16 if the write allocates its line first, §3.6).
# The trip costs the host 1.5–2× the memory traffic of doing the add itself,
# before the GPU has done anything.
# On a GPU, the next cell finds the break-even of a real matmul, copies included,
# against NumPy on the host.

# %%
if gc.require_gpu("matmul on the host (NumPy) vs to_gpu + CuPy matmul + to_cpu, by size"):
    rows_gpu = []
    for k in (64, 128, 256, 512, 1024, 2048):
        A, B = rng.standard_normal((k, k)).astype(f32), rng.standard_normal((k, k)).astype(f32)
        t_cpu = gc.measure(np.matmul, A, B, repeat=5)
        t_gpu = gc.measure(lambda: xp.asnumpy(xp.asarray(A) @ xp.asarray(B)), repeat=5)
        rows_gpu.append((k, t_cpu.median, t_gpu.median))
        print(f"n = {k:5}: host {t_cpu}   GPU incl. copies {t_gpu}")
    first = next((k for k, c, g in rows_gpu if g < c), None)
    print(f"measured break-even on this machine: n = {first} (the desktop CPU model's: {n_mm}; this host's CPU "
          "is not that CPU, so the two need not agree — the claim is the kind: a GEMM pays once it is large)")
    assert first is not None and rows_gpu[-1][2] < rows_gpu[-1][1], "the GPU never beat the host, copies included"

# %% [markdown]
# ## 3.8 Larger than device memory: OOM, then streaming
#
# A GPU allocates device memory with `cudaMalloc`;
# when it does not fit, the call fails — PyTorch prints "CUDA out of memory.
# Tried to allocate …", CuPy raises `OutOfMemoryError`, JAX `RESOURCE_EXHAUSTED`.
# Nothing is paged out to disk.
# `devmem.DeviceMemory` enforces a budget the same way; here a 4 MiB device meets 16 MiB:

# %%
# NBVAL_CHECK_OUTPUT
small = devmem.DeviceMemory(budget=4 * 2**20, name="4 MiB device", xp=np)
try:
    small.to_device(data)
except devmem.OutOfMemoryError as e:
    print(f"{type(e).__name__}: {e}")
assert small.in_use == 0 and small.h2d_copies == 0  # nothing was copied: the allocation failed first
# Expected output:
# OutOfMemoryError: 4 MiB device: out of memory. Tried to allocate 16.00 MiB (16,777,216 bytes); 4.00 MiB total capacity, 0 bytes already allocated, 4.00 MiB free

# %%
if gc.require_gpu("a real CuPy out-of-memory error: asking for 1.5× the device's memory"):
    free_b, total_b = xp.cuda.runtime.memGetInfo()
    try:
        xp.empty(int(total_b * 1.5), dtype=xp.uint8)
    except xp.cuda.memory.OutOfMemoryError as e:
        print(f"{type(e).__name__}: {e}")

# %% [markdown]
# The cure is the one every data loader uses:
# **stream** the data in chunks that fit,
# keep only one chunk (and its temporaries) on the device at a time,
# and combine the partial results.
# A reduction — the root mean square of the 16 MiB array on the 4 MiB device.
# The chunk below fills the budget exactly (the chunk and its one temporary);
# the tracker counts only the arrays made here, while a real device's `sum`
# also needs a small output buffer (and CuPy's reduction may need workspace):
# on a GPU, leave a little headroom.

# %%
chunk = small.budget // (2 * 4)  # each chunk needs itself + one temporary (d * d), float32
partial = 0.0
for start in range(0, N, chunk):
    dchunk = small.to_device(data[start:start + chunk])
    partial += float((dchunk * dchunk).sum(dtype=np.float64))  # a scalar comes back, not the chunk
    del dchunk  # free it before the next chunk arrives
rms = np.sqrt(partial / N)
print(small.summary())
print(f"RMS streamed: {rms:.9f}   RMS in one piece (host): {np.sqrt(np.mean(data.astype(np.float64) ** 2)):.9f}")
assert small.peak <= small.budget and small.h2d_bytes == data.nbytes
assert small.d2h_copies == -(-N // chunk) and small.d2h_bytes == 8 * small.d2h_copies  # one float64 per chunk came back
assert np.isclose(rms, np.sqrt(np.mean(data.astype(np.float64) ** 2)), rtol=1e-6)

# %% [markdown]
# `del` matters: like CuPy, the tracker frees memory when the last reference goes,
# and `dchunk = …` rebinds the name only *after* the new chunk is allocated — without the `del`,
# two chunks would be alive at once.
# A real pipeline also overlaps the copy of chunk *i + 1* with the work on chunk *i* (streams,
# section 4): then two chunks *are* alive at once by design, so each must be smaller — the budget,
# not one chunk size, is the rule.
#
# **Qualifications.**
# CUDA *Unified Memory* (`cudaMallocManaged`) lets a GPU oversubscribe its memory on Linux since
# Pascal: pages migrate between device and *host memory* on demand (CUDA Programming Guide,
# "Unified Memory Programming") — slowly, and never to disk;
# frameworks allocate with `cudaMalloc` by default, hence OOM.
# And article 002's own closing remark is the modern exception:
# **LLM serving offloads the KV cache**.
# A transformer keeps a key and a value vector per layer, KV head and token of context:

# %%
# NBVAL_CHECK_OUTPUT
# Llama-3.1-8B (128k context; Llama-3-8B has the same shape and an 8k context): 32 layers, 8 KV heads (grouped-query attention), head dimension 128, bf16
per_token = datapath.kv_cache_bytes(layers=32, kv_heads=8, head_dim=128, tokens=1)
print(f"KV cache per token: {per_token // 1024} KiB")
for tokens, batch in ((8_192, 1), (131_072, 1), (131_072, 8)):
    total = per_token * tokens * batch
    swap = datapath.transfer_time(total, pcie5)
    # one unit in the comparison: GB (1e9 bytes); the H100's "80 GB" is taken as 80·10⁹ bytes, a floor (a driver
    # reports 81,559 MiB ≈ 85.5·10⁹), which changes none of the verdicts below; the weights: 8.0e9 × 2 bytes
    print(f"{batch} × {tokens:>7,} tokens: {total / 1e9:6.1f} GB  (fits an 80 GB H100 with 16 GB of weights: "
          f"{'yes' if total + 16e9 <= 80e9 else 'no '}; one trip over PCIe 5.0: {swap:.2f} s)")
assert per_token == 128 * 1024
# Expected output:
# KV cache per token: 128 KiB
# 1 ×   8,192 tokens:    1.1 GB  (fits an 80 GB H100 with 16 GB of weights: yes; one trip over PCIe 5.0: 0.02 s)
# 1 × 131,072 tokens:   17.2 GB  (fits an 80 GB H100 with 16 GB of weights: yes; one trip over PCIe 5.0: 0.27 s)
# 8 × 131,072 tokens:  137.4 GB  (fits an 80 GB H100 with 16 GB of weights: no ; one trip over PCIe 5.0: 2.18 s)

# %% [markdown]
# Serving engines therefore move KV blocks of paused or finished requests out of GPU memory
# — LMCache and Mooncake tier them to CPU memory and SSDs
# (vLLM reaches them through its KV-connector interface),
# FlexGen offloads weights and KV cache to CPU memory and disk
# — and pay the transfer time to serve longer contexts or more users. vLLM's own preemption changed:
# its V0 engine could *swap* a preempted request's KV blocks to CPU memory;
# the V1 engine preempts by *recomputation* (`PreemptionMode.RECOMPUTE`:
# the blocks are freed and rebuilt by a new prefill),
# so CPU offload in current vLLM goes through a KV connector such as LMCache's (vLLM documentation,
# "Preemption" and "KV cache offloading").
# Note what did *not* change: the software moves the data between kernels over the same CPU/PCIe
# path (or GDS); the GPU still never pages.
#
# ## 3.9 Where the other memory lives (C26)
#
# "CPU and GPU have separate memories;
# each reaches only its own" describes a discrete GPU with ordinary allocations.
# CUDA can also map pinned host memory into the GPU's address space ("zero-copy"):
# a kernel then reads and writes host RAM directly over PCIe — slowly, but without a copy.
# Unified Memory (§3.8) migrates pages between the two memories on demand.
#
# A **Grace Hopper** superchip (GH200) does not merge the memories either:
# it keeps two physical memories, LPDDR5X beside the Grace CPU and HBM3 beside the Hopper GPU,
# joined by NVLink-C2C, a cache-coherent chip-to-chip link.
# What is shared is the *address space*:
# the GPU can load and store CPU memory — even ordinary pageable `malloc` memory,
# through the CPU's page tables (Address Translation Services) — and the CPU can reach the HBM,
# without copies and coherently (NVIDIA, *Grace Hopper Superchip Architecture In-Depth*, 2022).
# The figures below are the shipping GH200's (NVIDIA GH200 product page and datasheet, 2024:
# 96 GB HBM3 at 4 TB/s, or the HBM3e SKU with 144 GB at 4.9 TB/s
# — announced in August 2023 as 141 GB at 5 TB/s;
# up to 480 GB LPDDR5X at "up to" 512 GB/s, a nominal figure:
# other sources quote ≈ 500 GB/s, and the bandwidth scales with the memory fitted;
# the 2022 pre-launch paper quoted 3 TB/s and 546 GB/s).
# A GPU kernel that reads CPU memory does it at NVLink-C2C speed, not HBM speed:

# %%
# NBVAL_CHECK_OUTPUT
gh = datapath.GRACE_HOPPER
for name, rate in gh.items():
    print(f"{name:40} {datapath.fmt_rate(rate):>10}")
c2c = gh["NVLink-C2C (CPU ↔ GPU, each direction)"]
hbm_gh = {k: v for k, v in gh.items() if k.startswith("HBM")}
slower = {k: v / c2c for k, v in hbm_gh.items()}
print("a GPU kernel streaming CPU memory over NVLink-C2C is "
      + ", ".join(f"{r:.1f}× slower than its own {k.split(' (')[0]}" for k, r in slower.items())
      + f"; {c2c / bw['PCIe 5.0 x16']:.1f}× faster than over PCIe 5.0 ×16")
# the band holds for every figure of the GH200 that shipped or was announced for sale: 4 TB/s HBM3, 4.9 TB/s HBM3e,
# the announced 5 TB/s; not for the 2022 pre-launch paper's 3 TB/s, a chip that never shipped
assert all(8 < r < 12 for r in slower.values()), "an order of magnitude below HBM, on either GH200 version"
assert 7 < c2c / bw["PCIe 5.0 x16"] < 7.5
# Expected output:
# HBM3 (Hopper GPU, 96 GB)                  4.00 TB/s
# HBM3e (Hopper GPU, 144 GB version)        4.90 TB/s
# LPDDR5X (Grace CPU, up to 480 GB)        512.0 GB/s
# NVLink-C2C (CPU ↔ GPU, each direction)   450.0 GB/s
# a GPU kernel streaming CPU memory over NVLink-C2C is 8.9× slower than its own HBM3, 10.9× slower than its own HBM3e; 7.1× faster than over PCIe 5.0 ×16

# %% [markdown]
# So "unified" describes the addresses, not the memory:
# data placement still decides speed, and the driver and frameworks still migrate hot data into HBM.
# Only integrated designs have one physical memory for CPU and GPU:
# laptop and phone chips, NVIDIA Jetson, Apple silicon,
# and data-centre APUs such as AMD's Instinct MI300A (one HBM3 pool for its CPU and GPU dies).
# On a discrete GPU, the next cell shows zero-copy.

# %%
if gc.require_gpu("a kernel writing to mapped (zero-copy) host memory, read back by the CPU without a copy"):
    @cuda.jit
    def double(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= 2

    mapped = cuda.mapped_array(1000, dtype=np.float32)  # pinned host memory, mapped into the GPU's address space
    mapped[:] = np.arange(1000, dtype=np.float32)
    double[4, 256](mapped)
    cuda.synchronize()
    assert np.array_equal(mapped, 2 * np.arange(1000, dtype=np.float32))
    print("the GPU kernel doubled an array that lives in host memory; no cudaMemcpy was issued")

# %% [markdown]
# ## Claims check
#
# | ID | claim | verdict |
# |---|---|---|
# | C05 | AVX-512 computes 16 fp32 values with one instruction (article 000) | **qualified** ([why](#Claim-C05)) |
# | C06 | desktop CPUs have about 4–16 cores; GPUs thousands (article 000) | **qualified** ([why](#Claim-C06)) |
# | C07 | HBM feeds a GPU several times faster than CPU memory feeds a CPU (article 000) | **confirmed** ([why](#Claim-C07)) |
# | C08 | PCIe is far slower than the GPU's HBM, so transfers must be minimized (article 000) | **confirmed** ([why](#Claim-C08)) |
# | C09 | DMA moves the bytes; the CPU only starts and confirms the transfer (article 000) | **qualified** ([why](#Claim-C09)) |
# | C26 | CPU and GPU have separate memories; each device's units reach only their own (article 002) | **qualified** ([why](#Claim-C26)) |
# | C27 | GPU memory has no direct path to disk; data always passes through CPU memory (article 002) | **qualified** ([why](#Claim-C27)) |
# | C28 | GPUs don't page device memory out to disk: data larger than GPU memory means OOM (article 002) | **qualified** ([why](#Claim-C28)) |
# | C33 | modern LLM serving offloads KV cache out of GPU memory during computation, accepting the slowdown (article 002) | **qualified** ([why](#Claim-C33)) |
#
# On a GPU, the guarded cells above measure the GPU rows (pinned vs pageable, async DMA, break-even,
# OOM, zero-copy) on the device itself.
#
# **Next:** the lab, `labs/lab03_datapath/lab03_datapath.ipynb`
# — placing a pipeline's steps on CPU or GPU, the slowest link at which offloading pays,
# streaming within a memory budget, warp utilization, vectorizing a branch,
# and fitting a transfer path.
#
# ### Each claim: the verdict's reasons and the evidence
#
# #### Claim C05
#
# **qualified**: true of the instruction;
# whether a compiler uses it depends on its tuning for the core (LLVM, and so numba,
# emits 256-bit vectors on Intel's AVX-512 server cores);
# many CPUs lack AVX-512 (Intel client CPUs since Alder Lake have AVX2 only:
# 8 lanes), some execute a 512-bit op as two 256-bit halves (AMD Zen 4),
# and compilers use it only for loops whose lanes are independent.
#
# *Evidence.*
# §3.2 prints this CPU's widest vector extension and the widest packed instruction numba compiled:
# `vfmadd…ps` on `zmm` registers (512 bits = 16 fp32 lanes) on AMD Zen 4/5,
# but on `ymm` (8 lanes) on Intel's AVX-512 cores
# (LLVM's tuning for them prefers 256-bit vectors) and on AVX2-only CPUs;
# the compiled loop runs more than 20× faster per element than the Python loop (asserted;
# the ratio is printed).
# A plain `sum` stays scalar (`vaddss`) unless reordering is allowed.
#
# #### Claim C06
#
# **qualified**: a GPU "core" is one lane of an SM, not a CPU-like core;
# compare SMs with cores (132 vs 16) or ALUs with ALUs (16,896 vs 1,024;
# in fp32 FLOP/s at the CPU's maximum boost, 11.5× against its FMA-only peak and 7.7× with its FADD pipes),
# and matrix units with matrix units (H100 3.6× a TPU v4 in dense bf16).
# Desktop CPUs now reach 24 cores (Core i9-14900K).
#
# *Evidence.*
# §3.1, published: Ryzen 9 9950X 16 cores; H100 SXM 132 SMs × 128 FP32 units = 16,896 "CUDA cores".
# Counted in fp32 vector ALUs, the CPU has 16 × 4 × 16 = 1,024 (2 FMA and 2 FADD pipes per core; a TPU v4
# 4,096: 2 cores × 8 × 128 lanes × 2 ALUs), so the gap is 16.5×, not 1000×;
# the GPU's FLOPs are mostly in its tensor cores
# (989 dense bf16 TFLOP/s vs 67 fp32 TFLOP/s of lanes).
#
# #### Claim C07
#
# **confirmed** (several times against a server CPU, tens of times against a desktop).
#
# *Evidence.*
# §3.6: H100 HBM3 3.35 TB/s vs desktop DDR5 (2 channels) 89.6 GB/s = 37×,
# vs a 12-channel server 460.8 GB/s = 7.3× (datasheet peaks, each counting bytes read + written);
# this machine's memory, measured the same way on one core (memcpy counting read + write,
# and a STREAM add, each the best of a fixed 5 rounds, agreeing within 4×;
# one core draws less than the memory's peak, so the ratio is an upper bound),
# gives the ratio printed in §3.6.
#
# #### Claim C08
#
# **confirmed**.
#
# *Evidence.*
# §3.6: HBM3 / PCIe 5.0 ×16 = 53×, / PCIe 4.0 ×16 = 106× (PCIe after its 128b/130b encoding:
# 63.0 and 31.5 GB/s per direction; the datasheets' 64 and 32 GB/s are raw rates); §3.4 timeline:
# the copies dominate a memory-bound op; §3.7:
# a vector add never pays for its transfer on a desktop with dual-channel DDR5 (asserted),
# can pay on a machine whose memory is slower than the link only from pinned memory,
# and never from pageable memory (asserted on this machine);
# on a GPU the pinned/pageable cell measures the link.
#
# #### Claim C09
#
# **qualified**: true for pinned memory;
# from ordinary pageable memory the CPU does copy every byte once (the staging copy),
# which is why pinned transfers are faster.
#
# *Evidence.*
# §3.6: on a GPU, the host returns from an async pinned copy long before the copy ends
# (measured there); CUDA Runtime API, "API synchronization behavior":
# pageable transfers are first copied by the CPU into a pinned staging buffer;
# on a CPU-only run, §3.7's pageable-link row prints what that staging costs at this machine's own
# memcpy rate.
#
# #### Claim C26
#
# **qualified**: true for a discrete GPU and ordinary allocations;
# zero-copy mapped memory and Unified Memory let a GPU reach CPU memory over PCIe;
# Grace Hopper keeps two physical memories (LPDDR5X, HBM3 or HBM3e) in one coherent address space,
# the GPU reading CPU memory at NVLink-C2C speed (450 GB/s each way,
# about 1/9 of the shipping GH200's 4 TB/s HBM3 and 1/11 of its HBM3e, §3.9; GH200 datasheet);
# only integrated GPUs share one physical memory.
#
# *Evidence.*
# §3.4 runs the program with explicit `to_device`/`to_host` copies; §3.9 (GPU):
# a kernel writes mapped host memory directly.
#
# #### Claim C27
#
# **qualified**: true of the classic path and of kernels (no kernel reads a file);
# with GDS the bytes skip CPU memory, though the CPU still orchestrates.
#
# *Evidence.*
# §3.5: NVMe at 7.45 GB/s is 450× slower than HBM3, so disk I/O belongs between kernels;
# NVIDIA GPUDirect Storage (cuFile, CUDA ≥ 11.4) DMAs NVMe ↔ GPU memory without a CPU bounce buffer.
#
# #### Claim C28
#
# **qualified**: never to disk, and `cudaMalloc` (what frameworks use) fails with OOM;
# but Unified Memory can oversubscribe device memory by migrating pages to *host* memory,
# and streaming or offloading avoids OOM in software.
#
# *Evidence.*
# §3.8: the tracker's OOM, and on a GPU CuPy's real `OutOfMemoryError`;
# streaming in chunks computes the same result within the budget.
#
# #### Claim C33
#
# **qualified**: offload is real and common, but as an add-on tier (KV connectors, LMCache,
# Mooncake), not the default of the best-known engine — vLLM V1 recomputes rather than swaps;
# and it is software moving blocks between steps (over PCIe or GDS), not GPU paging.
#
# *Evidence.*
# §3.8: Llama-3.1-8B's KV cache is 128 KiB per token — 137 GB for 8 × 128k-token contexts,
# more than an H100 holds; LMCache/Mooncake/FlexGen tier KV blocks to CPU memory or SSD
# (in vLLM through KV connectors); vLLM V0 swapped preempted requests' blocks to CPU memory,
# V1 preempts by recomputation instead.
