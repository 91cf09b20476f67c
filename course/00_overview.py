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
# # 0 — What happens when you call `c = jnp.dot(a, b)`? (그래서 JAX 모델로부터 GPU 연산 과정은? — "So what happens, from a JAX model down to the GPU's computation?")
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/00_overview.ipynb)
#
# One line of Python, ten steps between it and the hardware.
# This notebook starts from the first example of the course's first source article (article 000,
# see [Sources and claims checks](#Sources-and-claims-checks)) and walks that article's ten steps
# live, each in one short cell — on this machine where it can,
# for an H100 through NVIDIA's and XLA's own compilers where that needs no GPU,
# and with the published figure where only a GPU can measure
# — and points to the section that goes deeper.
#
# **You will learn**
# - the whole path Python → JAX → XLA → HLO → PTX → SASS → GPU,
#   and which of its steps you can see anywhere;
# - that `jax.jit` traces with shapes and dtypes only;
# - what `jnp.dot` really becomes on an NVIDIA GPU
#   (a cuBLAS call or a Triton kernel that XLA generates,
#   in TF32 for float32 by default) — and where the source article's `HMMA` listing comes from;
# - the two tensor-core paths of a Hopper GPU (warp `mma.sync`: `HMMA`; warpgroup `wgmma`:
#   `HGMMA`, for fp16, bf16 and TF32), and which one approaches the datasheet peak;
# - where the data lives between ops, and when it comes home.
#
# | step | what happens | deeper in |
# |---|---|---|
# | 1 trace | Python → jaxpr, abstract values | §6 |
# | 2 lower | jaxpr → StableHLO | §6 |
# | 3 optimize | XLA passes: fusion, CSE, GEMM → library call or generated kernel, buffer assignment | §1, §6 |
# | 4 code generation | PTX → SASS (FFMA / HMMA / HGMMA) | §6 |
# | 5 transfer | host memory → device memory (PCIe, DMA) | §3 |
# | 6 launch | command queue, asynchronous dispatch | §4 |
# | 7 warps | grid → blocks → warps on SMs | §5 |
# | 8 tensor cores | HMMA / HGMMA instructions; TPUs: systolic arrays | §6, §7 |
# | 9 write-back | results stay in device memory (HBM) | §3, §4 |
# | 10 copy home | device → host, only when asked | §3 |
#
# ## Sources and claims checks
#
# The course follows two articles, written in Korean, which it calls the *source articles*:
#
# - **article 000** — "GPU는 어떻게 머신러닝 연산을 수행할까?"
#   ("How does a GPU carry out machine-learning computation?"):
#   Python → JAX → XLA → HLO → PTX → SASS, BLAS levels, backpropagation, CPU/GPU/NPU, PCIe and DMA,
#   command queues, fusion and JIT, grids/blocks/warps, the SM and warp scheduling,
#   TPU systolic arrays and ICI.
# - **article 002** — "What's happening on the CPU and GPU When you train a Deep Learning Model?"
#   (its title is in English, its text in Korean):
#   disk → CPU memory → GPU memory, why a GPU runs out of memory instead of paging, streams,
#   kernels split into blocks on SMs, warps.
#
# The course could not find the authors or the web addresses of either article;
# it cites them by these titles.
# You never need the Korean: every Korean term in the course appears once in parentheses beside its
# English name, as a gloss for readers who know the articles.
#
# The source articles make 33 checkable statements, numbered C01–C33.
# Each section ends with a **Claims check** table with one row per statement it covers:
# the ID, the statement and a **verdict**, and a link to a paragraph below the table that gives
# the verdict's reasons and the evidence: what this machine measured (or, where only other hardware
# can show it, a primary source: a datasheet, NVIDIA's documentation, a paper).
# The verdicts:
#
# - **confirmed** — true as stated, and shown in the section;
# - **qualified** — true under conditions the paragraph states (a size, a precision,
#   a generation of hardware);
# - **outdated** (or incorrect) — true once or never; the paragraph says what is true instead.
#
# A claim that a cell of the section measures is also *asserted* there:
# if this machine ever disagrees, the notebook fails instead of printing a contradiction.

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
import jax
import jax.numpy as jnp
import numpy as np

import gpucourse as gc
from gpucourse import toolchain, xla_gpu

be = gc.setup()
print(toolchain.describe())
print(xla_gpu.describe())
rng = np.random.default_rng(0)
a = rng.standard_normal((128, 128)).astype(np.float32)  # the source article's f32[128,128] operands (its HLO example)
b = rng.standard_normal((128, 128)).astype(np.float32)

# %% [markdown]
# ## Step 0 — The source article's first example
#
# Article 000 opens with a (2×3) input times a (3×2) parameter matrix (파라미터 텐서, parameter tensor):

# %%
# NBVAL_CHECK_OUTPUT
x = jnp.array([[1.0, 2.0, 3.0],
               [4.0, 5.0, 6.0]])  # (2×3) input
w = jnp.array([[0.1, 0.2],
               [0.3, 0.4],
               [0.5, 0.6]])  # (3×2) parameters
y = jnp.dot(x, w)  # matrix product → (2×2)
print(np.round(np.asarray(y), 4), y.dtype)
expected = np.array([[1 * .1 + 2 * .3 + 3 * .5, 1 * .2 + 2 * .4 + 3 * .6],
                     [4 * .1 + 5 * .3 + 6 * .5, 4 * .2 + 5 * .4 + 6 * .6]])  # by hand, in float64
assert np.allclose(expected, [[2.2, 2.8], [4.9, 6.4]])
assert y.dtype == jnp.float32 and np.abs(np.asarray(y) - expected).max() < 1e-6
# Expected output:
# [[2.2 2.8]
#  [4.9 6.4]] float32

# %% [markdown]
# `[[2.2 2.8] [4.9 6.4]]`, as the source article prints.
# JAX computes in float32 (32-bit floats) unless told otherwise,
# and 0.1 has no exact float32 representation, so printed unrounded a result may read `2.8000002`:
# the assert checks it against the float64 hand calculation within 10⁻⁶.
# The rest of the notebook follows a bigger product, the source article's `f32[128,128]` one,
# down the ten steps.
#
# ## Step 1 — Trace (트레이싱, tracing): shapes and dtypes, not values
#
# `jax.jit` runs the Python once with tracers that carry only an abstract value.
# Claim C23.

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
# ## Step 3 — Optimize: XLA's HLO passes, and what becomes of the `dot`
#
# The source article's HLO excerpt — `dot(lhs, rhs), lhs_contracting_dims={1},
# rhs_contracting_dims={0}` — is XLA's input.
# What comes *out* of the optimizer depends on the backend:
# XLA hands a matrix multiply to a library or generates a kernel for it,
# and the optimized HLO says which.
# `gc.xla.find_gemm` reads it in every form (on CPU: a `kCustom` fusion run by the YNNPACK library;
# on an NVIDIA GPU: a `custom-call` to cuBLAS/cuBLASLt,
# or a `kCustom` fusion for which XLA generates a Triton kernel; a small dot: XLA's own loop).
# On this machine:

# %%
compiled = gc.xla.compiled(jnp.dot, a, b)
gemm = compiled.gemm
print(f"{be.name}: {gemm.describe()}; XLA's FLOP count {compiled.flops:,.0f} (2·128³ = {2 * 128**3:,})")
if be.is_gpu:  # JAX reads a GPU executable with XLA's plain cost analysis: a cuBLAS custom call counts -1 FLOP; a
    # split-K Triton GEMM adds a batch dimension (contracting dims {2} and {1}) and its reduce's FLOPs
    print("[GPU: the dims and the FLOP count are printed, not asserted: a library call counts -1 FLOP, a split-K "
          "GEMM contracts dims {2}·{1} and adds its reduce]")
else:
    assert (gemm.lhs_contracting, gemm.rhs_contracting) == ((1,), (0,)) and compiled.flops == 2 * 128**3
layer = gc.xla.compiled(lambda a, b, c: jnp.maximum(jnp.dot(a, b) + c, 0), a, b, b)
print("dot + bias + relu → fusions:", layer.fusions, f"({layer.flops:,.0f} FLOPs by XLA's count)")

# %% [markdown]
# And for an H100: with JAX's CUDA compiler plugin (`python -m gpucourse.xla_gpu install`),
# XLA:GPU compiles **deviceless** — the whole GPU pipeline runs on this CPU for a described H100
# (`gc.xla_gpu`).
# It cannot *autotune* (time cuBLAS against several Triton tilings and keep the fastest) without the
# device, so it keeps its default choice;
# on a GPU backend this cell compiles for the real GPU, autotuned.

# %%
if be.is_gpu or xla_gpu.available():
    article_gpu, dot_gpu, layer_gpu, forced_gpu = xla_gpu.compile_many([
        ("lambda x, w: jnp.dot(x, w)", (x, w), {}),
        ("lambda a, b: jnp.dot(a, b)", (a, b), {}),
        ("lambda a, b, c: jnp.maximum(jnp.dot(a, b) + c, 0)", (a, b, b[0]), {"xla_gpu_enable_triton_gemm": False}),
        # the same 128×128 dot with a warpgroup-sized tile forced (step 4 reads its instructions)
        ("lambda a, b: jnp.dot(a, b)", (a, b), {"xla_gpu_override_gemm_autotuner": xla_gpu.TUNED_TILE}),
    ])
    print(dot_gpu.provenance())
    print(f"article 000's 2×3·3×2: {article_gpu.gemm.describe()}")
    print(f"128×128 float32:       {dot_gpu.gemm.describe()}")
    print(f"+ bias + relu, Triton GEMMs off: {layer_gpu.gemm.describe()}")
    print("128×128 float32, entry ops:", gc.xla.entry_ops(dot_gpu.hlo))
    # the split, where there is one: the dot's output shape, and the fusion that sums the slices (its ROOT line)
    split_dot = dot_gpu.gemm.dot.split(" dot(")[0].split("=")[-1].strip()
    summing = [ln.strip().split(" fusion(")[0] for ln in dot_gpu.hlo.splitlines()
               if "ROOT" in ln and "reduce_fusion" in ln]  # "ROOT %loop_reduce_fusion = f32[128,128]{1,0}"
    print(f"128×128 float32: the dot's own output {split_dot}; summed by {summing[0] if summing else '(no reduce)'}")
    forced_dot = forced_gpu.gemm.dot.split(" dot(")[0].split("=")[-1].strip()
    print(f"128×128 float32, 128×128 tile forced: the dot's own output {forced_dot}")
    assert dot_gpu.gemm.how in ("library call", "generated fusion")
    assert layer_gpu.gemm.target.startswith("__cublas") and layer_gpu.gemm.epilogue in ("BIAS_RELU", "RELU")
    if not be.is_gpu:  # deviceless: XLA's untuned defaults for an H100
        assert article_gpu.gemm.runner == "XLA's own kLoop emitter" and dot_gpu.gemm.runner.startswith("Triton")
        assert " f32[8,128,128]" in dot_gpu.gemm.dot and "reduce" in dot_gpu.hlo  # K split in 8, then summed
        assert " f32[8,128,128]" in forced_gpu.gemm.dot  # the forced tile keeps the split: one tile per K slice
else:
    print("[XLA:GPU] skipped: " + xla_gpu.describe())

# %% [markdown]
# Three different answers to "what is a `dot` on a GPU?" — what the cell above prints, and asserts,
# when XLA:GPU is available (deviceless for an H100 with the XLA:GPU plugin installed,
# or on a GPU backend); without it the cell prints only why it skipped:
#
# - the source article's tiny 2×3·3×2 product is not worth a GEMM kernel:
#   XLA wraps it in a loop fusion of its own (the printed "XLA's own kLoop emitter":
#   CUDA-core arithmetic);
# - the 128×128 product becomes a `kCustom` fusion that XLA compiles with **Triton**
#   — and it is not even one GEMM: XLA's untuned choice for this target splits the K dimension into
#   8 slices (split-K spreads a small output over more SMs;
#   why 8 and not another count, the output does not say) (the dot's own output `f32[8,128,128]`,
#   printed: "split-K"; K = 128 becomes 8 × 16,
#   which is why the printed contracting dimension is `{2}` of the reshaped operand,
#   where the CPU line contracts `{1}`) and adds them up in a second kernel
#   (the `loop_reduce_fusion` printed, the second `fusion` of the entry ops).
#   On a real GPU the autotuner may pick cuBLAS instead;
# - with Triton GEMMs switched off, the GEMM is a `custom-call` to **cuBLASLt**,
#   and the bias-add and relu ride along as cuBLASLt's `BIAS_RELU` *epilogue*
#   — fused into the library's kernel, not into a loop of XLA's.
#
# Neither GEMM-sized dot is a kernel of XLA's own emitters:
# each is either a call into a library (cuBLAS/cuBLASLt,
# a `custom-call`) or a kernel generated by Triton (whose PTX, like all of XLA:GPU's,
# goes through LLVM's NVPTX backend — step 4 shows such a kernel's `HMMA`).
#
# ## Step 4 — Code generation: PTX and SASS for a Hopper GPU
#
# For the kernels it generates, XLA emits PTX (via LLVM or Triton) and runs `ptxas`,
# NVIDIA's assembler, to get SASS, the GPU's machine code.
# (The source article says the *driver* compiles PTX to SASS.
# It can — the driver JIT-compiles PTX when no SASS for the GPU is present
# — but XLA normally runs `ptxas` itself and hands the driver ready SASS.)
# Here is the SASS `ptxas` makes of XLA's own PTX for the 128×128 float32 `jnp.dot` above:

# %%
if (be.is_gpu or xla_gpu.available()) and toolchain.available():
    if dot_gpu.gemm.how == "generated fusion":  # a kernel XLA generated (Triton); a cuBLAS call has none of XLA's
        sass = dot_gpu.sass()
        mma = {k: v for k, v in dot_gpu.ptx_instructions().items() if "mma" in k or "cvt.rna.tf32" in k}
        print("PTX:", mma)
        print(sass.excerpt(("HMMA", "HGMMA", "FFMA"), limit=6))
        print("tensor-core instructions:", dict(sass.variants("HMMA") + sass.variants("HGMMA")), " FFMA:", sass.count("FFMA"))
        forced = dict(forced_gpu.sass().variants("HGMMA") + forced_gpu.sass().variants("HMMA"))
        print("the same dot, 128×128 tile forced:", forced)
        if not be.is_gpu:
            assert set(sass.variants("HMMA")) == {"HMMA.1688.F32.TF32"} and sass.count("FFMA") == 0
            assert set(forced) == {"HGMMA.64x128x8.F32.TF32"}  # warpgroup MMA once the tile is warpgroup-sized
    else:
        print(f"{dot_gpu.gemm.runner} runs its own precompiled kernel: XLA generated no PTX for this dot")
else:
    print("[XLA:GPU] skipped: " + (xla_gpu.describe() if toolchain.available() else toolchain.describe()))

# %% [markdown]
# When XLA:GPU and NVIDIA's toolchain are available,
# the deviceless listing above (for an H100) is `HMMA.1688.F32.TF32`
# (otherwise the cell printed only why it skipped):
# a tensor-core multiply-accumulate (m16n8k8) whose inputs are **TF32**
# — float32 values rounded to a 10-bit mantissa (`cvt.rna.tf32.f32` in the PTX)
# — accumulating in float32.
# TF32 is what a float32 `jnp.dot` gets on Ampere and Hopper GPUs by default
# (JAX's default matmul precision); the *instruction* depends on the tile:
# this `HMMA.1688` (warp `mma.sync`) comes from XLA's untuned deviceless tile (16×8, 2 warps),
# while with a warpgroup-sized tile (forced:
# `xla_gpu.TUNED_TILE`, printed by §6.7,
# with XLA's debug option `xla_gpu_override_gemm_autotuner`) the same dot becomes
# `HGMMA.64x128x8.F32.TF32` (warpgroup `wgmma`: the cell's last line;
# §6.7 compiles both for its larger dots).
# That forced tile is not what an autotuned H100 would pick for this dot:
# one 128×128 tile is the whole 128×128 output,
# and XLA keeps its 8-way K-split (the forced compile's dot output printed in step 3,
# `f32[8,128,128]`: one tile per K slice),
# so 8 CTAs for 132 SMs (§6.7 prints the count for its 1024² dot),
# a configuration XLA's autotuner drops from its search;
# the listing shows which instruction a warpgroup-sized tile compiles to.
# `precision="highest"` asks for true float32.
# On this machine's CPU, float32 is float32 either way (§6).
#
# The source article's SASS example, `HMMA.16816.F32`,
# is the fp16 version of the same warp-level instruction.
# The listing below does **not** come from `jnp.dot`:
# it is the course's own 16×16×16 `wmma` kernel (CUDA C,
# `toolchain.wmma_cu`) compiled by NVRTC for sm_90.
# Beside it, Hopper's other tensor-core path
# — a `wgmma` kernel (`toolchain.WGMMA_CU`) for the target `sm_90a`, which `sm_90` refuses:

# %%
if toolchain.available():
    sm90 = toolchain.sass_of(toolchain.wmma_cu(1), arch="sm_90")
    sm90a = toolchain.sass_of(toolchain.WGMMA_CU, arch="sm_90a")
    print("wmma / mma.sync kernel, sm_90:        ", dict(sm90.variants("HMMA")))
    print("wgmma kernel, sm_90a:                 ", dict(sm90a.variants("HGMMA")), dict(sm90a.variants("WARPGROUP")))
    refusal = toolchain.compile_error(toolchain.WGMMA_CU, arch="sm_90")
    print("wgmma kernel, sm_90:                  ",
          next(line.split("error   : ")[-1] for line in refusal.splitlines() if "wgmma.fence" in line))
    assert sm90.variants("HMMA") == {"HMMA.16816.F32": 2} and sm90a.variants("HGMMA") == {"HGMMA.64x8x16.F32": 1}
    assert "not supported on .target 'sm_90'" in refusal
else:
    print("skipped: " + toolchain.describe())

# %% [markdown]
# ## Step 5 — Transfer: host memory → device memory
#
# `jax.device_put` copies a NumPy array into the backend's memory (over PCIe with DMA on a GPU; §3).

# %%
a_dev, b_dev = jax.device_put(a, be.jax_device), jax.device_put(b, be.jax_device)
print("a lives on:", a_dev.devices())
assert a_dev.devices() == {be.jax_device}
pcie, hbm = gc.hardware.LINKS["PCIe 5.0 x16"], gc.hardware.H100_SXM.memory_bandwidth
print(f"on an H100: PCIe 5.0 x16 {pcie / 1e9:.0f} GB/s vs HBM3 {hbm / 1e12:.2f} TB/s — {hbm / pcie:.0f}× slower to cross")
assert 50 < hbm / pcie < 55

# %% [markdown]
# ## Step 6 — Launch: the call returns before the work is done
#
# The CPU enqueues the kernel and returns; the device runs it asynchronously (§4).
# Even on CPU, JAX dispatches asynchronously:
# the call returns long before a large product is finished (on this CPU, asserted:
# in under a tenth of the time; on an H100 the same product runs far faster
# — §1's roofline plots them from the datasheets — so there dispatch and work are much closer).

# %%
big = jax.device_put(rng.standard_normal((1536, 1536)).astype(np.float32), be.jax_device)
jdot = jax.jit(jnp.dot)
jdot(big, big).block_until_ready()  # compile and warm up
enqueue = gc.measure(jdot, big, big, sync=False, repeat=5)
complete = gc.measure(jdot, big, big, repeat=5)
print(f"returned after {enqueue}; finished after {complete}: {complete.median / enqueue.median:,.0f}× later")
assert enqueue.median < complete.median
if not be.is_gpu:  # on a GPU this product takes tens of µs, not much more than the dispatch itself
    assert enqueue.median < complete.median / 10, "on this CPU the call returns long before the product is done"

# %% [markdown]
# ## Step 7 — Warps: the grid is cut into blocks, blocks into warps of 32 threads
#
# On a GPU the kernel's grid is split into blocks spread over the SMs, each block into warps (§5).
# The course's kernel runner shows the indexing with numba-cuda (on CPU:
# the course's instrumented executor, §5):

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
print("block, thread, warp of elements 0, 31, 32, 63, 64, 79:", [tuple(map(int, ids[i])) for i in (0, 31, 32, 63, 64, 79)])
assert tuple(ids[79]) == (1, 15, 0) and tuple(ids[32]) == (0, 32, 1)
h100 = gc.hardware.H100_SXM
print(f"an H100 has {h100.sm_count} SMs, each holding up to {h100.per_sm['max_warps']} resident warps")

# %% [markdown]
# ## Step 8 — Tensor cores execute the matrix instructions
#
# The source article: "a tensor core performs a 4×4×4 matrix multiply per cycle" (C21).
# That is the 2017 Volta figure: 64 fp16 multiply-adds per clock per tensor core.
# Hopper has two paths to the tensor cores,
# both compiled above (the SASS opcode also names the data type:
# `IMMA`/`DMMA` for int8/fp64 `mma.sync`,
# `IGMMA`/`QGMMA` for int8/FP8 `wgmma` — §6.7 compiles an FP8 one):
#
# - `HMMA.16816` (PTX `mma.sync` / `wmma`):
#   one **warp** multiplies 16×16 by 16×8 from registers — 2,048 multiply-adds,
#   synchronously (fp16/bf16; a TF32 one is `HMMA.1688`, K = 8).
#   Ampere's instruction; on Hopper it still works,
#   but the FlashAttention-3 paper (Shah et al. 2024, arXiv:2407.08608,
#   §2) reports that `mma.sync` reaches only about two thirds of the H100's tensor-core peak.
# - `HGMMA.64xNxK` (PTX `wgmma.mma_async`, target `sm_90a` only):
#   a **warpgroup** — 4 warps, one per SM sub-partition,
#   so all four tensor cores of an SM — multiplies a 64×K tile by a K×N tile (N up to 256;
#   K is 32 bytes of input: 16 for fp16/bf16 — the `HGMMA.64x8x16.F32` above —,
#   8 for TF32 — the `HGMMA.64x128x8.F32.TF32` of a float32 dot with a forced warpgroup-sized tile
#   —, 32 for FP8, where the opcode is `QGMMA`; PTX ISA, `wgmma` shapes);
#   B is read straight from shared memory (usually filled by the TMA copy engine;
#   ordinary stores and a proxy fence, as §6.7's kernel does, work too),
#   A from shared memory or from registers (FlashAttention-3 keeps P in registers for P·V),
#   *asynchronously*: issued after `WARPGROUP.ARRIVE`, waited for with `WARPGROUP.DEPBAR`.
#   This is the path that approaches the datasheet peak
#   (FlashAttention-3 reaches about 740 TFLOP/s in FP16, ≈ 75 % of it);
#   cuBLAS's Hopper kernels and XLA's Triton GEMMs (with warpgroup-sized tiles, §6) use it.
#
# The datasheet's dense bf16 peak, taken apart from independent rates:
# the A100 whitepaper's 256 dense fp16 FMA per clock per tensor core,
# doubled per SM clock for clock on Hopper (H100 whitepaper), 4 tensor cores per SM.
# The clock then comes out: 1.83 GHz,
# the clock the tensor-core figures assume
# (XLA's H100 target description lists the matrix units at 1.8295 GHz)
# — below the 1.98 GHz maximum boost clock:

# %%
peak = h100.peak_flops["bf16-tensor"]
per_tensor_core = 2 * 256  # FMA/clock: A100 whitepaper 256 per tensor core; Hopper 2× per SM, clock for clock
per_sm = 4 * per_tensor_core  # 4 tensor cores per SM, one per sub-partition
clock = peak / 2 / h100.sm_count / per_sm  # Hz the datasheet figure implies
print(f"H100 SXM dense bf16: {peak / 1e12:.1f} TFLOP/s = {h100.sm_count} SMs × {per_sm:,} FMA/clock × "
      f"{clock / 1e9:.3f} GHz × 2 (max boost: {h100.boost_clock_hz / 1e9:.2f} GHz)")
print(f"per tensor core: {per_tensor_core:,} FMA/clock; Volta's 4×4×4: {4 * 4 * 4} ({per_tensor_core / 64:.0f}× less)")
print(f"one HMMA.16816 = {16 * 8 * 16:,} FMA (one warp); one HGMMA.64x256x16 = {64 * 256 * 16:,} FMA (one warpgroup)")
# XLA: xla/backends/gpu/target_config/specs/h100_sxm.txtpb, matrix_unit_description clock_rate_ghz 1.8295201
assert abs(clock - 1.8295e9) < 0.005e9 and clock < h100.boost_clock_hz == 1.98e9 and per_tensor_core // 64 == 8

# %% [markdown]
# On a GPU backend the next cell times an 8192³ fp16 GEMM (cuBLAS through CuPy) with CUDA events,
# on random fp16 data (constant data such as `ones` switches fewer transistors,
# draws less power and can clock higher:
# it flatters the result), and reports it as a fraction of the datasheet's dense fp16 peak
# (the same 989 TFLOP/s as bf16 on an H100),
# asserting that it lies between 30 % and 102 % of it (as §1.2 does: a card can clock a little above
# the datasheet's assumed clock) — what the cell checks when run on a GPU,
# not a reported result: no GPU run of this course is recorded yet (`course/gpu_runs/`).

# %%
if gc.require_gpu("a cuBLAS fp16 GEMM on random data, timed with CUDA events, as a fraction of the datasheet peak"):
    cp = be.xp
    n = 8192
    g = cp.random.default_rng(0)
    x16 = g.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
    y16 = g.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
    t = gc.measure(lambda: x16 @ y16, clock="cuda", repeat=10)
    achieved = 2 * n**3 / t.best
    spec = gc.hardware.lookup(be.gpu.name)  # form factor and memory size matched; None: no figures for this card
    fp16_peak = gc.hardware.half_tensor_peak(spec) if spec else None  # the T4's fp16 figure; bf16's elsewhere
    print(f"{achieved / 1e12:.0f} TFLOP/s fp16 on {be.gpu.name}"
          + (f" = {achieved / fp16_peak:.0%} of the {spec.name} dense fp16 peak" if spec else ""))
    assert achieved > 0 and (fp16_peak is None or 0.3 < achieved / fp16_peak < 1.02)

# %% [markdown]
# On a TPU the same dot runs on a systolic array instead (§7).
#
# ## Step 9 — Write-back: the result stays in device memory
#
# `c` lands in HBM and stays there; the next op reads it from there (claim C24).
# A chain of ops never leaves the device until something asks for the values.

# %%
c = jdot(a_dev, b_dev)
d = jnp.tanh(c) @ b_dev  # consumes c where it lives
print("c is a", type(c).__name__, "on", c.devices(), "— no host copy made yet")
assert c.devices() == {be.jax_device} and d.devices() == {be.jax_device}
if be.is_gpu:  # JAX's transfer guard raises on any implicit device → host copy inside the block
    with jax.transfer_guard_device_to_host("disallow"):
        (jnp.tanh(c) @ b_dev).block_until_ready()  # the chain: no copy, so nothing raises
        try:
            np.asarray(c)  # an implicit copy home: refused
            refused = False
        except Exception:  # noqa: BLE001 - JAX raises its own error type for a refused transfer
            refused = True
    print("transfer guard: the chain ran with device→host copies disallowed; np.asarray(c) was refused")
    assert refused
else:
    print("on a CPU the device's memory is the host's: there is no copy home to catch (JAX's transfer guard"
          " stays silent here); on a GPU this cell runs the chain with device→host copies disallowed")

# %% [markdown]
# ## Step 10 — Copy home, only when asked
#
# `np.asarray(c)` (or printing, or `float(c[0, 0])`) is what triggers the device → host copy (§3),
# and it waits for the queued work first.

# %%
c_host = np.asarray(c)
# TF32 inputs on a GPU (step 4): 10-bit mantissas; the errors of this product with its inputs rounded to TF32 and
# truncated (cuBLAS and TMA-fed kernels may drop the low 13 bits) are computed and printed here — both pass
a64, b64 = a.astype(np.float64), b.astype(np.float64)
tf32_round = np.abs(gc.xla.round_to_tf32(a).astype(np.float64) @ gc.xla.round_to_tf32(b).astype(np.float64)
                    - a64 @ b64).max()
trunc = lambda m: (np.asarray(m, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)  # noqa: E731
tf32_trunc = np.abs(trunc(a).astype(np.float64) @ trunc(b).astype(np.float64) - a64 @ b64).max()
tol = 6e-2 if be.is_gpu else 1e-4
print(f"TF32 errors of this product: rounded {tf32_round:.1e}, truncated {tf32_trunc:.1e} (a GPU's tolerance: 6e-2)")
assert tf32_round < tf32_trunc < 6e-2
err = np.abs(c_host - a.astype(np.float64) @ b.astype(np.float64)).max()
print("copied home:", type(c_host).__name__, c_host.shape, f"- largest difference from float64 a @ b: {err:.1e}")
assert isinstance(c_host, np.ndarray) and err < tol

# %% [markdown]
# On this CPU the copy agrees with a float64 product to float32 precision
# (the difference printed above); on a GPU backend the tolerance is looser,
# because the product was computed with TF32 inputs (step 4).
#
# ## Claims check
#
# What the verdicts mean: see [Sources and claims checks](#Sources-and-claims-checks).
#
# | ID | claim (article 000) | verdict |
# |---|---|---|
# | C23 | `jax.jit` traces with shapes and dtypes only, not values | **confirmed** ([why](#Claim-C23)) |
# | C24 | results stay in GPU memory between ops and return to the CPU only when needed | **confirmed** ([why](#Claim-C24)) |
# | C25 | Blackwell handles FP8 in hardware through the Transformer Engine | **qualified** ([why](#Claim-C25)) |
#
# Step 8 also takes apart the source article's "4×4×4 per cycle" (C21), judged in §6: **outdated**.
#
# **Next:** §1, BLAS levels and arithmetic intensity — `course/01_blas_roofline.ipynb`.
#
# ### Each claim: the verdict's reasons and the evidence
#
# #### Claim C23
#
# **confirmed** (qualified only by `static_argnums`,
# which makes chosen arguments part of the cache key by value).
#
# *Evidence.* Step 1: a second call with other values does not re-run the Python;
# the trace recorded `((128, 128), 'float32')` only; §6.1: branching on a traced value fails.
#
# #### Claim C24
#
# **confirmed** — on a GPU the arrays live in HBM;
# JAX copies home only on request (printing, NumPy conversion, `device_get`).
# On a CPU-only run this verdict rests on JAX's documented transfer semantics (its transfer guard refuses
# implicit device → host copies), which step 9's GPU cell checks when it runs; no GPU run is recorded yet.
#
# *Evidence.* Steps 9–10: `c` and the next result stay on the backend's device;
# the host copy happens at `np.asarray(c)`.
# On a GPU, step 9 runs the chain under JAX's transfer guard with device → host copies disallowed
# (nothing raises) and shows `np.asarray(c)` refused there;
# on a CPU the device's memory is the host's, so a CPU run shows where the arrays live, not that no copy
# was made: the verdict rests on the GPU cell and on JAX's documented semantics.
#
# #### Claim C25
#
# **qualified**: FP8 tensor-core math is hardware since Hopper (2022), not new in Blackwell;
# the Transformer Engine is NVIDIA's name for that hardware plus the library
# (`transformer_engine`) that picks per-tensor scales
# — Blackwell's novelty is FP4/FP6 and finer-grained scaling.
#
# *Evidence.* Primary source: NVIDIA Blackwell architecture technical brief (2024)
# — 2nd-generation Transformer Engine,
# FP8 and new FP4/FP6 tensor-core formats with micro-tensor scaling;
# FP8 tensor cores already existed on Hopper (H100 datasheet:
# 1,979 dense FP8 TFLOP/s, `gc.hardware`).
