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
# # 6 — JIT and XLA fusion, down to the machine code (커널 융합과 JIT — kernel fusion and JIT)
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/06_jit_xla_sass.ipynb)
#
# `jax.jit` turns Python into a compiled program.
# This section follows one function all the way down — jaxpr, StableHLO,
# optimized HLO with its fusions, PTX,
# and the SASS an H100/H200 would execute — and measures what kernel fusion (커널 융합,
# kernel fusion) buys.
#
# **You will learn**
# - what `jax.jit` sees when it traces: shapes and dtypes (abstract values), never the numbers;
# - to read the three IRs (중간 표현, intermediate representations) XLA goes through,
#   and the fusion kinds;
# - what fusion saves in bytes (predicted by XLA's cost model), in time (measured),
#   and how much of the difference between the two ratios a model of dispatch, memory traffic
#   and page faults explains (each term measured; what it leaves over is printed);
# - what common-subexpression elimination and buffer assignment do,
#   read from the compiler's own dump;
# - to get real PTX and SASS for Hopper with no GPU — from numba-cuda, from CUDA C,
#   and from XLA:GPU itself — and to read `FFMA`, `HMMA` and `HGMMA` in it:
#   which tensor-core path an H100 runs, and in which precision.
#
# The lab for this section is `labs/lab06_xla_sass/`.

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
import matplotlib.pyplot as plt
import numpy as np

import gpucourse as gc
from gpucourse import toolchain, xla_gpu

be = gc.setup()
print(toolchain.describe())
print(xla_gpu.describe())
rng = np.random.default_rng(0)
GPU_XLA = be.is_gpu or xla_gpu.available()  # XLA:GPU output here: the real GPU, or deviceless for an H100
BIG, F32, BF16 = ((1 << 26,), "float32"), ((1024, 1024), "float32"), ((4096, 4096), "bfloat16")
LAYER = "lambda a, b, c: jnp.maximum(jnp.dot(a, b) + c, 0)"  # a dense layer: GEMM + bias + relu
LAYER_ARGS = (BF16, BF16, ((4096,), "bfloat16"))
DOT = "lambda a, b: jnp.dot(a, b)"
GPU_PROGRAMS = [  # every XLA:GPU compile this section shows (6.5-6.7), compiled once, in one child process
    ("lambda x, y, z: jnp.maximum(x * y + z, 0.0)", (BIG, BIG, BIG), {}),
    (LAYER, LAYER_ARGS, {}), (LAYER, LAYER_ARGS, {"xla_gpu_enable_triton_gemm": False}),
    (DOT, (BF16, BF16), {}), (DOT, (BF16, BF16), {"xla_gpu_override_gemm_autotuner": xla_gpu.TUNED_TILE}),
    (DOT, (F32, F32), {}), ("lambda a, b: jnp.dot(a, b, precision='highest')", (F32, F32), {}),
]
if GPU_XLA:
    xla_gpu.compile_many(GPU_PROGRAMS)  # cached: the cells below get these results back without recompiling


def article_fn(x, y, z):
    """The source article's example: out = x * y; out = out + z; out = relu(out)."""
    return jnp.maximum(x * y + z, 0.0)


# %% [markdown]
# ## 6.1 Tracing: `jax.jit` sees shapes and dtypes, not values
#
# On the first call `jax.jit` runs the Python function once with **tracers**:
# stand-ins that carry only a shape and a dtype (an *abstract value*).
# The operations they record become the program;
# the Python code does not run again until a call arrives with a new shape or dtype.

# %%
# NBVAL_CHECK_OUTPUT
traces = []


@jax.jit
def traced(x, y, z):
    traces.append(f"traced with x = {x.aval!r}: shape {x.shape}, dtype {x.dtype}")  # a Python side effect: runs only while tracing
    return article_fn(x, y, z)


a = jnp.ones(8, jnp.float32)
traced(a, a, a)
traced(a * 2, a - 5, a)  # new values, same shape and dtype: no new trace
traced(jnp.ones(16, jnp.float32), jnp.ones(16), jnp.ones(16))  # new shape: traced again
print("\n".join(traces))
assert len(traces) == 2
try:
    jax.jit(lambda x: x if x.sum() > 0 else -x)(a)  # Python `if` on a value the tracer doesn't have
except jax.errors.TracerBoolConversionError:
    print("branching on a traced value fails: the tracer has no value to test")
# Expected output:
# traced with x = ShapedArray(float32[8]): shape (8,), dtype float32
# traced with x = ShapedArray(float32[16]): shape (16,), dtype float32
# branching on a traced value fails: the tracer has no value to test

# %% [markdown]
# ## 6.2 Three IRs: jaxpr → StableHLO → optimized HLO
#
# The trace is a **jaxpr** (JAX's own IR).
# `lower` turns it into **StableHLO**, the portable MLIR dialect every XLA backend accepts.
# `compile` runs XLA's HLO passes — fusion, CSE, layout,
# buffer assignment — and emits the **optimized HLO** plus machine code for this backend.
# Same multiply, add and maximum, three spellings:

# %%
x, y, z = (jnp.asarray(rng.standard_normal((1024, 1024)).astype(np.float32)) for _ in range(3))
print(jax.make_jaxpr(article_fn)(x, y, z).pretty_print(use_color=False))
lowered = jax.jit(article_fn).lower(x, y, z)
stablehlo = lowered.as_text()
print("\n".join(line for line in stablehlo.splitlines() if "stablehlo." in line))
fused = gc.xla.compiled(article_fn, x, y, z)
print("\n" + fused.excerpt())
assert all(op in stablehlo for op in ("stablehlo.multiply", "stablehlo.add", "stablehlo.maximum"))
assert fused.fusions == ["kLoop"]

# %% [markdown]
# In the optimized HLO the entry computation holds the parameters and **one** `fusion` instruction:
# one kernel.
# Its `kind` says how XLA generates it
# (the `FusionKind` enum of XLA's `xla/hlo/ir/hlo_instruction.h`):
#
# - `kLoop` — an elementwise loop over the output (this one);
# - `kInput` — the op's *inputs* are fused into it: a fusion whose root is a reduction;
# - `kOutput` — an op whose output is fused into it,
#   writing in place of an operand (the enum requires that an operand buffer can alias the output);
#   no program in this section produces one, on either backend,
#   and XLA:GPU fuses a GEMM's epilogue differently (6.5);
# - `kCustom` — "backend-specific fusions":
#   on a GPU, a fusion for which a specific code generator writes the kernel
#   — Triton for GEMMs and softmax-like fusions (`backend_config` kind `__triton_gemm`,
#   `__triton_nested_gemm_fusion`), cuDNN or CUTLASS fusions;
#   on this version's CPU backend, YNNPACK's GEMM fusions (`__ynn_fusion`).
#   A `kCustom` fusion is still code compiled for this program.
#   A *library call* — cuBLAS, cuBLASLt, cuDNN's precompiled kernels — is a different instruction,
#   `custom-call`.
#
# The multiply, add and maximum moved into the fused computation the fusion `calls`:

# %%
def fused_body(c):
    """The text of the first fused computation in an optimized HLO module, without metadata."""
    start = c.hlo.index("%fused_computation")
    text = c.hlo[start:c.hlo.index("\n}\n", start)]
    return "\n".join(line.split(", metadata")[0] for line in text.splitlines())


body = fused_body(fused)
print(body)
assert all(op in body for op in (" multiply(", " add(", " maximum("))

# %% [markdown]
# ## 6.3 Fused vs unfused: predict the bytes, measure the time, explain the difference
#
# Claim C12: unfused ops each round-trip through global memory;
# a fused kernel loads once, computes in registers, stores once.
# **Predict**: compile each op alone (one kernel each,
# as op-by-op execution runs them) and the chain as one program,
# and ask XLA's cost model how many bytes each accesses.

# %%
# The claim is about memory traffic, so the arrays must not fit in the last-level cache: each array is at least half
# of it (16 MiB minimum), so the fused call's 4 arrays are at least 2× the cache and every call streams from DRAM.
# (4 MiB arrays — 16–24 MiB per call — fit in a 32 MiB L3: the "memory" term would be cache bandwidth.)
llc, llc_source = gc.roofline.cache_bytes()
n_elem = max(llc // 2, 16 * 2**20) // 4
xs, ys, zs = (jnp.asarray(rng.standard_normal(n_elem).astype(np.float32)) for _ in range(3))
n_bytes = xs.nbytes  # bytes per array
print(f"last-level cache: {llc / 2**20:.0f} MiB ({llc_source}); arrays of {n_elem:,} float32 = {n_bytes / 2**20:.0f} MiB")
assert 4 * n_bytes >= 2 * llc, "the fused call's working set (3 inputs + 1 output) is at least twice the cache"
mul, add, relu = jax.jit(lambda a, b: a * b), jax.jit(lambda a, b: a + b), jax.jit(lambda a: jnp.maximum(a, 0.0))
t1 = mul(xs, ys)
unfused_bytes = (gc.xla.compiled(lambda a, b: a * b, xs, ys).bytes_accessed
                 + gc.xla.compiled(lambda a, b: a + b, t1, zs).bytes_accessed
                 + gc.xla.compiled(lambda a: jnp.maximum(a, 0.0), t1).bytes_accessed)
fused_bytes = gc.xla.compiled(article_fn, xs, ys, zs).bytes_accessed
print(f"unfused: {unfused_bytes / n_bytes:.0f} arrays moved   fused: {fused_bytes / n_bytes:.0f} arrays moved")
assert unfused_bytes == 8 * n_bytes and fused_bytes == 4 * n_bytes


def unfused_chain(a, b, c):
    return relu(add(mul(a, b), c))  # three jitted calls: three kernels, two intermediates in memory


# %% [markdown]
# Bytes predict a 2× speed-up. **Measure** it
# — and the three things a call costs besides moving bytes:
# `gc.fusion.explain` times both versions (fastest of 5 runs after warm-up,
# the two versions' runs alternating so both see the same load),
# counts the page faults of that same run (`getrusage`), times a one-element call (pure dispatch:
# Python → JAX → runtime), times a page fault (touching fresh memory),
# calibrates the bandwidth on the fused call, and predicts the unfused time from
#
#     t ≈ calls · dispatch + bytes / bandwidth + page faults · cost per fault

# %%
tiny = tuple(jnp.ones(1, jnp.float32) for _ in range(3))
model = gc.fusion.explain(unfused_chain, jax.jit(article_fn), (xs, ys, zs), tiny, calls=(3, 1),
                          nbytes=(unfused_bytes, fused_bytes), repeat=5, rounds=5)
print(model.table())
ax = gc.plotting.axes("version [-]", "time per call [ms]",
                     f"relu(x·y + z), {n_bytes / 2**20:.0f} MiB float32 arrays: measured vs model")
names = ["3 kernels (unfused)", "1 kernel (fused)"]
sides = [model.unfused, model.fused]
ax.bar([0, 1], [s.seconds * 1e3 for s in sides], width=0.4, label="measured", color=gc.plotting.PALETTE[0])
ax.bar([0.4, 1.4], [model.predicted(s) * 1e3 for s in sides], width=0.4, label="model", color=gc.plotting.PALETTE[1])
ax.set_xticks([0.2, 1.2], names)
ax.legend()
plt.show()
off = model.off  # the median round's measured/model (every round's is in the table's last line)
pages = n_bytes / gc.fusion.PAGE  # 4 KiB pages in one array
print(f"page faults per page of one array: unfused {model.unfused.faults / pages:.2f}, fused "
      f"{model.fused.faults / pages:.2f} (fresh arrays per call: 3 unfused, 1 fused); bandwidth "
      + ("calibrated" if model.calibrated else "not calibrated: the measured fault cost fills the fused call"))
# what a fault costs inside XLA's own loop: `a + 1` into a fresh output vs into its donated input (no allocation)
add_fresh, add_reuse = jax.jit(lambda a: a + 1.0), jax.jit(lambda a: a + 1.0, donate_argnums=0)
held = [jnp.zeros_like(xs)]


def add_reused():
    held[0] = add_reuse(held[0])
    return held[0]


probe = gc.roofline.measure_interleaved({"fresh": lambda: add_fresh(xs), "reused": add_reused}, rounds=5,
                                        clock_="host")
probe_faults = gc.fusion.page_faults(add_fresh, xs, repeat=2) or 0.0
if probe_faults >= pages / 2:
    print(f"a fault inside XLA's loop: {(probe['fresh'].best - probe['reused'].best) / probe_faults * 1e6:.2f} µs "
          f"(a + 1 into a fresh vs a donated output, {probe_faults:,.0f} faults); the model's one-thread probe: "
          f"{model.fault_cost * 1e6:.2f} µs")
else:
    print(f"a fresh {n_bytes / 2**20:.0f} MiB output took {probe_faults:,.0f} faults: the allocator reused memory")
assert model.byte_ratio == 2.0 and len(model.rounds) == 5 and off == sorted(model.rounds)[2]
if not be.is_gpu:  # on a GPU, these arrays take microseconds: dispatch, overlapped with the GPU, dominates (next cell)
    assert model.measured_ratio > 1.0, "fusion is faster, not only in XLA's count"
print(f"measured/model, the median round: {off:.2f} (printed, not asserted: see below)")

# %% [markdown]
# **Explain**: read the table above.
# The byte ratio is exactly 2 (XLA's count).
# With arrays out of the last-level cache, the memory term is DRAM bandwidth.
# Where the runs take page faults (fresh intermediates and outputs the OS must map on first touch:
# glibc hands allocations above 32 MiB to `mmap` and unmaps them on `free`;
# smaller ones fault too or not, as the allocator's state decides), the faults column shows them,
# and the line under the plot counts them per page of one array:
# about 3 unfused and 1 fused when every fresh array faults
# — at these sizes (below glibc's 32 MiB ceiling,
# on a machine whose last-level cache is under 64 MiB) the allocator may instead hand back memory it
# already mapped, and then fewer faults show, even none;
# the model charges only the faults the run counted.
# The model charges them at a cost measured once, before the rounds,
# by touching fresh pages from one thread;
# the cell also prints what a fault costs inside XLA's own loop
# (a fresh output against a donated one, as §1.4 measures it) when the call took faults.
# On a shared machine one moment's load is not the next one's,
# so the cost charged can exceed what the fused call's faults took;
# when the faults would then fill the whole fused call,
# no time is left to calibrate the bandwidth on:
# the table says "not calibrated" instead of printing one,
# and the memory term is a floor (5 % of the fused time), not a measurement.
# A GPU's caching allocator reuses device memory and takes no faults.
# Five independent rounds are measured and **all five are printed**;
# the table is the median round (not the round that agrees best).
# What the cell asserts is what holds on any CPU: XLA's byte ratio is 2,
# and fusion is faster in time too.
# How far the model's ratio is from the measured one (measured/model, each round) is printed,
# not asserted: the model leaves things out, and which of them shows depends on the machine.
# Two of them the printout shows directly.
# The fault cost is one probe taken before the rounds, from one thread:
# where it differs from what a fault costs inside XLA's loop
# (both are printed when the run faulted),
# the model misses by the same amount in every round — a systematic miss, in either direction,
# not noise.
# And on a machine shared with other processes the rounds can also spread (all five are printed).
# (With arrays small enough for the whole working set to sit in the last-level cache,
# the memory term would be cache bandwidth, not DRAM,
# and the DRAM-calibrated model would be off for a reason that is not noise
# — hence the out-of-cache sizes.)
# Read measured/model this way:
# well below 1 with faults counted means the one-thread fault cost overcharges them
# (compare the in-loop cost printed when the run faulted);
# well above 1 with no faults in either column means
# the unfused calls took longer than their dispatch and their DRAM traffic at the fused call's rate
# — a part of the time this model leaves out
# (each small op may stream below the rate one fused pass reaches);
# below 1 with no faults means the opposite: the unfused calls streamed *faster* than the rate
# calibrated on the fused call
# (a simpler loop per op — one load stream, or two — can keep more of the memory system busy than
# one pass reading three arrays, and the calibration is one call's number);
# and the spread of the five rounds shows how much of the miss is the machine's load.
#
# **On a GPU** the question is about HBM,
# so the arrays must not fit in the 50 MB L2 cache of an H100:
# the next cell uses 2²⁶ float32 elements (256 MiB per array).
# JAX runs on its own CUDA streams, which CuPy's CUDA events cannot bracket,
# so `explain` times JAX with the host clock after `block_until_ready`
# — against a fused call that moves 1 GiB through HBM,
# the host's synchronization (the dispatch time the cell prints is of its order) is a few per cent.
# There the cell asserts that the measured ratio sits near the byte ratio,
# 2 (between 1.6 and 2.5) — what the cell checks when run on a GPU, not a reported result:
# no GPU run of this course is recorded yet (`course/gpu_runs/`).

# %%
if gc.require_gpu("fused vs unfused at 256 MiB per array (out of the 50 MB L2), JAX on the GPU"):
    big = tuple(jax.device_put(rng.standard_normal(1 << 26).astype(np.float32), be.jax_device) for _ in range(3))
    tiny_gpu = tuple(jax.device_put(np.ones(1, np.float32), be.jax_device) for _ in range(3))
    big_bytes = (8 * big[0].nbytes, 4 * big[0].nbytes)
    gpu_model = gc.fusion.explain(unfused_chain, jax.jit(article_fn), big, tiny_gpu, calls=(3, 1), nbytes=big_bytes)
    print(gpu_model.table())
    print(f"fused: {gpu_model.fused.bytes / gpu_model.fused.seconds / 1e12:.2f} TB/s of HBM traffic")
    assert 1.6 <= gpu_model.measured_ratio <= 2.5, "bandwidth-bound: the time ratio follows the byte ratio"

# %% [markdown]
# ## 6.4 CSE and buffer assignment
#
# **Common-subexpression elimination** (공통 하위 표현식 제거, common-subexpression elimination):
# write `sin(x·y)` twice and XLA computes it once.

# %%
twice = gc.xla.compiled(lambda a, b: jnp.sin(a * b) + jnp.sin(a * b), x, y)
body = fused_body(twice)
print(body)
print(f"sine ops after optimization: {body.count(' sine(')}; multiplies: {body.count(' multiply(')}")
assert body.count(" sine(") == 1 and body.count(" multiply(") == 1

# %% [markdown]
# **Buffer assignment** (버퍼 할당, buffer assignment) — claim C20:
# XLA decides at compile time which buffers the program needs and which values may share one because
# their lifetimes don't overlap. A fused chain has no intermediate to store at all;
# to see reuse we need a program that *has* intermediates that must exist in memory:
# a stack of layers `x ← tanh(x @ w)`,
# where each GEMM (a library fusion on CPU) writes its result to memory and the `tanh` fusion reads
# it back.
# `gc.xla.buffer_assignment` reads XLA's own dump of the decision (`xla_dump_to`):
# every allocation and the values placed in it, with offsets.

# %%
def layers(k):
    def f(x, w):
        for _ in range(k):
            x = jnp.tanh(x @ w)
        return x
    return f


xw = jnp.asarray(rng.standard_normal((256, 256)).astype(np.float32))
one = xw.nbytes
rows = []
for k in (1, 2, 4, 8):
    allocs = gc.xla.buffer_assignment(layers(k), xw, xw)
    inner = [al for al in allocs if al.kind in ("temp", "output")]
    values = sum(len(al.values) for al in inner)
    reserved = sum(al.size for al in inner)
    rows.append((k, values, sum(al.value_bytes for al in inner), reserved))
    print(f"{k} layer(s): {values:2} intermediate values of {one // 1024} KiB = {values * one // 1024:5} KiB if each "
          f"had its own buffer; XLA reserves {reserved // 1024} KiB ({len(inner)} allocation{'s' * (len(inner) > 1)})")
for al in gc.xla.buffer_assignment(layers(4), xw, xw):
    print(f"  allocation {al.index} ({al.kind:9}, {al.size // 1024} KiB): "
          + ", ".join(f"{name}@{off}" for name, _, off in al.values))
# within a few KiB: with cuBLAS chosen for the GEMMs (a GPU's autotuner may), each GEMM adds a small workspace
# (compiled deviceless for an H100 with Triton GEMMs off, XLA:GPU reserves one cuBLAS workspace of a few MiB and a
# few hundred bytes more per layer; not run in this cell, so only the 8 KiB tolerance is claimed here)
assert abs(rows[-1][3] - rows[1][3]) <= 8 * 1024 and rows[-1][3] < rows[-1][2] / 4, \
    "8 layers reserve what 2 layers do (to a few KiB of workspace), far less than their values"
if not be.is_gpu:  # on a GPU the GEMM's kernel may also take the tanh (Triton) or a cuBLAS workspace
    assert [r[1] for r in rows] == [2, 4, 8, 16]  # 2 values per layer: the GEMM's result and the tanh's
    assert all(r[2] == r[1] * one for r in rows)
    assert all(r[3] == (1 if r[0] == 1 else 2) * one for r in rows), "from 2 layers on: 2 arrays, however many"
    k8 = gc.xla.compiled(layers(8), xw, xw)
    assert k8.temp_bytes == one and k8.output_bytes == one  # memory_analysis agrees with the dump

# %% [markdown]
# Sixteen intermediate values for 8 layers, two arrays of memory:
# the output allocation and one preallocated temporary, used in turn (ping-pong),
# each value at offset 0 of one of them — decided before the program runs.
# `memory_analysis()` reports the same numbers (`temp_bytes`, `output_bytes`).
# That is C20's "fixes memory locations and lifetimes at compile time" inside one compiled program;
# between programs, the arrays a Python program keeps alive are allocated at run time by the device
# allocator (on a GPU, JAX's BFC allocator),
# where fragmentation remains possible — hence the verdict in the claims table.
#
# ## 6.5 What blocks fusion
#
# Fusion needs ops XLA emits inside one elementwise loop.
# Ops it does not (a sort, an FFT, a library custom-call, control flow) can't be fused with the
# chain: it splits around them and the intermediate goes through memory.
# Each row compiles `tanh(BREAK(x·y + 1)·y − x)`:

# %%
from gpucourse.xla import entry_ops, fusion_breakers

# the opcode each breaker lowers to on XLA:CPU (top_k is a library call there: a custom-call)
LOWERS_TO = {"sort": "sort", "fft": "fft", "custom-call": "custom-call", "conditional": "conditional",
             "top_k": "custom-call"}
xs, ys = jnp.ones((64, 96)), jnp.ones((64, 96))
print(f"{'breaker':12} {'fusions':>8} {'bytes':>9}  every ENTRY op, in order")
for name, brk in fusion_breakers().items():
    c = gc.xla.compiled(lambda a, b: jnp.tanh(brk(a * b + 1.0) * b - a), xs, ys)
    ops = entry_ops(c.hlo)
    print(f"{name:12} {len(c.fusions):>8} {c.bytes_accessed:>9,.0f}  {ops}")
    assert len(c.fusions) >= 2 and LOWERS_TO[name] in ops and ops.count("fusion") == len(c.fusions)
    if name == "sort":
        sorted_hlo = c
plain = gc.xla.compiled(lambda a, b: jnp.tanh((a * b + 1.0) * b - a), xs, ys)
print(f"{'(none)':12} {len(plain.fusions):>8} {plain.bytes_accessed:>9,.0f}  {entry_ops(plain.hlo)}")
print("\nthe sort row's ENTRY computation:\n" + sorted_hlo.excerpt(14))
assert len(plain.fusions) == 1

# %% [markdown]
# A GEMM is the most common fusion "breaker" — and the most interesting,
# because each backend fuses its *epilogue* (bias, activation) its own way.
# On this CPU the GEMM is a YNNPACK `kCustom` fusion and the bias and relu stay in a separate
# `kLoop` fusion.
# XLA:GPU has two ways, which the next cell prints for an H100 when XLA:GPU is available
# (deviceless with the XLA:GPU plugin installed, or this GPU on a GPU backend;
# otherwise it prints only why it skipped):
# the bias and relu go **into the Triton GEMM fusion** (`kCustom`:
# one kernel XLA generates), or, when the GEMM is a cuBLASLt call,
# into **cuBLASLt's epilogue** (`epilogue` in the call's `backend_config`).
# Neither is a `kOutput` fusion.

# %%
layer = eval(LAYER)  # the same program text, compiled for this backend
wl = jnp.asarray(rng.standard_normal((512, 512)).astype(np.float32))
cpu_layer = gc.xla.compiled(layer, wl, wl, wl[0])
print(f"{be.name}: fusions {cpu_layer.fusions}; GEMM: {cpu_layer.gemm.describe()}")
if GPU_XLA:
    triton_layer, cublas_layer = xla_gpu.compile_many([(LAYER, LAYER_ARGS, {}),
                                                       (LAYER, LAYER_ARGS, {"xla_gpu_enable_triton_gemm": False})])
    print(triton_layer.provenance())
    for r in (triton_layer, cublas_layer):
        print(f"  fusions {gc.xla.entry_ops(r.hlo).count('fusion')}, custom-calls "
              f"{gc.xla.entry_ops(r.hlo).count('custom-call')}: {r.gemm.describe()}")
    assert cublas_layer.gemm.epilogue == "BIAS_RELU" and "kOutput" not in triton_layer.hlo + cublas_layer.hlo
    if not be.is_gpu:
        assert triton_layer.gemm.target == "__triton_nested_gemm_fusion" and {"add", "maximum"} <= set(triton_layer.gemm.fused)
else:
    print("[XLA:GPU] skipped: " + xla_gpu.describe())
if not be.is_gpu:
    assert cpu_layer.fusions == ["kCustom", "kLoop"]

# %% [markdown]
# ## 6.6 Below HLO: PTX for Hopper, from numba-cuda and from XLA
#
# The source article: "the compiled kernel is translated CUDA → PTX → SASS".
# PTX is NVIDIA's virtual ISA; we can get it for compute capability 9.0 (H100/H200) on this machine:
# numba-cuda's `compile_ptx` runs NVIDIA's NVVM (in a child process,
# so that it never meets a `numba.cuda` that numba's simulator has replaced).
# The source article's fused kernel, written by hand:

# %%
def article_kernel(x, y, z, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = max(x[i] * y[i] + z[i], numba.float32(0.0))


SIG = "void(float32[::1], float32[::1], float32[::1], float32[::1])"
if toolchain.available():
    ptx = toolchain.numba_ptx(article_kernel, SIG, cc=(9, 0))
    counts = toolchain.ptx_instructions(ptx)
    print("\n".join(line for line in ptx.splitlines() if any(k in line for k in ("ld.global", "fma.rn", "max.f32", "st.global"))))
    print({k: v for k, v in counts.items() if k in ("ld.global.f32", "fma.rn.f32", "max.f32", "st.global.f32")})
    assert ".target sm_90" in ptx and counts["ld.global.f32"] == 3 and counts["fma.rn.f32"] == 1
    assert counts["st.global.f32"] == 1  # load x, y, z once; multiply-add and max in registers; store once
else:
    print("skipped: " + toolchain.describe())

# %% [markdown]
# Three loads, one `fma.rn.f32` (numba, like `nvcc` by default,
# contracted the multiply and the add into one fused multiply-add:
# one rounding instead of two), one `max.f32`, one store:
# the source article's "load x, y, z → mul, add, relu in registers → store",
# as the compiler wrote it.
#
# XLA writes that kernel itself for the `kLoop` fusion of 6.2.
# When XLA:GPU and NVIDIA's toolchain are available,
# the next cell prints its PTX for an H100 (2²⁶ elements;
# deviceless, or this GPU's), and the SASS `ptxas` makes of it (otherwise, why it skipped):

# %%
if GPU_XLA and toolchain.available():
    xla_chain = xla_gpu.compile_for_gpu("lambda x, y, z: jnp.maximum(x * y + z, 0.0)", BIG, BIG, BIG)
    pcount = xla_chain.ptx_instructions()
    print(xla_chain.provenance())
    print("PTX:", {k: v for k, v in pcount.items() if k.startswith(("ld.global", "st.global", "mul.", "add.rn", "fma", "max"))})
    chain_sass = xla_chain.sass()
    print("SASS:", {op: chain_sass.count(op) for op in ("LDG", "FMUL", "FADD", "FFMA", "FMNMX", "STG")},
          dict(chain_sass.variants("LDG")))
    if not be.is_gpu:  # deviceless for an H100 (a real GPU's XLA may choose another unroll factor)
        assert pcount["ld.global.nc.v4.b32"] == 3 and pcount["st.global.v4.b32"] == 1  # 128-bit: 4 floats per load
        assert pcount["mul.rn.f32"] == pcount["add.rn.f32"] == 4 and chain_sass.count("FFMA") == 0
else:
    print("[XLA:GPU] skipped: " + (xla_gpu.describe() if toolchain.available() else toolchain.describe()))

# %% [markdown]
# Three differences from the hand-written kernel,
# all in the listing above when it was printed (deviceless, for an H100;
# the asserts check the first two there).
# XLA **vectorizes**: each thread loads four consecutive floats with one 128-bit load
# (`ld.global.nc.v4.b32` → `LDG.E.128`), so a warp moves 512 bytes per instruction — same bytes,
# a quarter of the load instructions.
# And XLA **does not contract** `x·y + z` into an FMA:
# it emits `mul.rn` and `add.rn` (the explicit rounding mode forbids `ptxas` from fusing them),
# keeping the HLO's two roundings, so the SASS has `FMUL` + `FADD`, not `FFMA`.
# And XLA keeps `jnp.maximum`'s NaN propagation:
# its relu is `max.NaN.f32` (relu(NaN) is NaN),
# where numba's `max` and CUDA's `fmaxf` return the other operand (relu(NaN) is 0).
# For a memory-bound kernel the extra instruction costs nothing measurable;
# the point is that "what the compiler emits" depends on the compiler — and so, at the edges,
# does the result.
#
# ## 6.7 SASS for sm_90: FFMA for elementwise, HMMA and HGMMA for the tensor cores
#
# PTX is still virtual. `ptxas` (or the driver's JIT) turns it into **SASS**,
# the machine code of one GPU generation.
# NVRTC compiles CUDA C straight to an sm_90 cubin, and `nvdisasm` prints its SASS.
# First the same elementwise kernel, in CUDA C:

# %%
from gpucourse.toolchain import ELEMENTWISE_CU, WGMMA_CU, wmma_cu

print(ELEMENTWISE_CU)
if toolchain.available():
    elem = toolchain.sass_of(ELEMENTWISE_CU)
    print(elem.excerpt())
    assert elem.count("FFMA") == 1 and elem.count("LDG") == 3 and elem.count("STG") == 1 and elem.count("HMMA") == 0
else:
    print("skipped: " + toolchain.describe())

# %% [markdown]
# Now the tensor cores.
# Hopper feeds them through two levels of instruction,
# and the course compiles an fp16 kernel for each — its own kernels,
# written to show the instruction, not what `jnp.dot` becomes (that comes after).
# The SASS opcode also names the data type (lab 6 reads the int8, fp8 and fp64 ones too).
# First one warp multiplying 16×16 half-precision tiles with the wmma API (`mma.h`),
# accumulating in fp32 — the warp-level path, Ampere's: its PTX is `wmma.mma.sync` (m16n16k16),
# which ptxas lowers to the same `HMMA.16816` instructions `mma.sync.m16n8k16` becomes (two of them):

# %%
print(wmma_cu(1))
if toolchain.available():
    tc1 = toolchain.sass_of(wmma_cu(1))
    print(tc1.excerpt(("HMMA", "LDG", "STG")))
    print("HMMA variants:", dict(tc1.variants("HMMA")), " FFMA:", tc1.count("FFMA"))
    assert tc1.variants("HMMA") == {"HMMA.16816.F32": 2} and tc1.count("FFMA") == 0
    for k in (2, 4):
        assert toolchain.sass_of(wmma_cu(k)).count("HMMA") == 2 * k
    print("k_steps = 2, 4 → HMMA count 4, 8: two HMMA.16816 per 16×16×16 product")
else:
    print("skipped: " + toolchain.describe())

# %% [markdown]
# **Reading `HMMA.16816.F32`**: a warp-wide matrix multiply-accumulate of shape **m16 n8 k16** with
# fp32 accumulators (the PTX `mma.sync.m16n8k16`), operands in the warp's registers.
# One 16×16×16 wmma product is two of them (n = 16 = 2 × 8): 2,048 multiply-adds per instruction.
#
# Second, Hopper's own: a **warpgroup** (4 warps,
# 128 threads — one warp per SM sub-partition) issues `wgmma.mma_async`,
# whose operands the tensor cores read straight from shared memory through 64-bit matrix descriptors
# (`toolchain.WGMMA_CU`: a 64×16 by 16×8 tile).
# It exists only for the architecture-specific target `sm_90a`;
# for plain `sm_90`, `ptxas` refuses it.
# Last, the same kernel with its `wgmma` line changed to FP8 inputs (`m64n8k32.f32.e4m3.e4m3`):
# the opcode names the data type, so a tensor-core test that looks only for `HMMA` and `HGMMA` would
# miss it:

# %%
print(WGMMA_CU[WGMMA_CU.index("    float d0"):WGMMA_CU.index("    c[4 * t")])
if toolchain.available():
    wg = toolchain.sass_of(WGMMA_CU, arch="sm_90a")
    print(wg.excerpt(("FENCE", "WARPGROUP", "HGMMA"), context=0))
    refusal = toolchain.compile_error(WGMMA_CU, arch="sm_90")
    print("for sm_90:", "\n  ".join(line.split("error   : ")[-1] for line in refusal.splitlines() if "not supported" in line))
    assert wg.variants("HGMMA") == {"HGMMA.64x8x16.F32": 1} and wg.count("HMMA") == 0
    assert [i.split(".")[0] for i in wg.instructions if i.startswith(("FENCE", "WARPGROUP", "HGMMA"))] == \
        ["FENCE", "WARPGROUP", "HGMMA", "WARPGROUP"]  # the async-proxy fence comes before the wgmma
    assert "FENCE.VIEW.ASYNC.S" in wg.instructions
    assert "Instruction 'wgmma.fence' not supported on .target 'sm_90'" in refusal
    # the same kernel with FP8 (e4m3) inputs, K = 32: still wgmma, but the SASS opcode is not HGMMA
    fp8 = toolchain.sass_of(WGMMA_CU.replace("m64n8k16.f32.f16.f16", "m64n8k32.f32.e4m3.e4m3")
                            .replace("p, 1, 1, 0, 0;", "p, 1, 1;"), arch="sm_90a")
    print("the same wgmma with fp8 (e4m3) inputs:", dict(fp8.variants("QGMMA")), " HGMMA:", fp8.count("HGMMA"))
    assert fp8.variants("QGMMA") == {"QGMMA.64x8x32.F32.E4M3.E4M3": 1} and fp8.count("HGMMA") == 0
else:
    print("skipped: " + toolchain.describe())

# %% [markdown]
# `FENCE.VIEW.ASYNC.S` (the `fence.proxy.async.shared::cta` the kernel issues after
# `__syncthreads()`: the tiles were written to shared memory with ordinary stores,
# and `wgmma` reads shared memory through the *async proxy*;
# the PTX ISA requires "an async proxy fence … to establish an ordering between prior writes to
# shared memory matrices and subsequent reads of the same matrices in a wgmma.mma_async instruction"
# — CUTLASS's `fence_view_async_shared`;
# without it the kernel races), `WARPGROUP.ARRIVE` (the `wgmma.fence`:
# it orders the warpgroup's *register* accesses — accumulators and a register A operand
# — before the wgmma), `HGMMA.64x8x16.F32` (the multiply,
# 64×8×16 = 8,192 multiply-adds for the warpgroup, asynchronous:
# the warps may go on issuing other work), `WARPGROUP.DEPBAR` (the `wgmma.wait_group`: wait for it).
# N goes up to 256: one `HGMMA.64x256x16` is 262,144 multiply-adds.
#
# **Which one does an H100 run?**
# The one that approaches the datasheet.
# FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, 2024, arXiv:2407.08608,
# §2) reports that on H100 the older `mma.sync` reaches only about two thirds of the tensor cores'
# peak throughput; `wgmma` is needed to approach the peak
# (FA3 itself reaches about 740 TFLOP/s in FP16, ≈ 75 % of the H100's 989),
# a kernel fed by TMA (the Tensor Memory Accelerator) copying tiles from HBM into shared memory
# asynchronously. cuBLAS's Hopper kernels and XLA's Triton GEMMs use `wgmma` when their tile is
# warpgroup-sized.
# Ask XLA:GPU itself: the same bf16 `jnp.dot` compiled for an H100 with XLA's untuned default tile
# (16×8 outputs, 2 warps: what it uses deviceless, with no autotuner to time candidates),
# and with a warpgroup-sized tile, **forced** with the debug option
# `xla_gpu_override_gemm_autotuner` (128×128×64, 8 warps = 2 warpgroups:
# the kind of tile an autotuned Hopper GEMM of this size uses
# — a 4096×4096 output is 1,024 such tiles, plenty for 132 SMs — but nothing here timed it):

# %%
if GPU_XLA and toolchain.available():
    untuned, tuned = xla_gpu.compile_many([
        (DOT, (BF16, BF16), {}), (DOT, (BF16, BF16), {"xla_gpu_override_gemm_autotuner": xla_gpu.TUNED_TILE}),
    ])
    print(tuned.provenance())
    for name, r in (("default tile", untuned), ("forced tile ", tuned)):
        s = r.sass()
        print(f"{name}: {r.gemm.tile}  →  {dict(s.variants('HMMA') + s.variants('HGMMA'))}, "
              f"{s.count('WARPGROUP')} WARPGROUP")
    if not be.is_gpu:
        assert set(untuned.sass().variants("HMMA")) == {"HMMA.16816.F32.BF16"}
        assert set(tuned.sass().variants("HGMMA")) == {"HGMMA.64x128x16.F32.BF16"} and tuned.sass().count("HMMA") == 0
else:
    print("[XLA:GPU] skipped: " + (xla_gpu.describe() if toolchain.available() else toolchain.describe()))

# %% [markdown]
# When XLA:GPU is available the cell above shows it (otherwise it printed why it skipped).
# Same `jnp.dot`, same GPU: with the small default tile Triton emits Ampere's `mma.sync`
# (`HMMA.16816`); with a warpgroup-sized tile it emits `wgmma` (`HGMMA.64x128x16`:
# each warpgroup computes 64 rows × 128 columns per instruction, bf16 in, fp32 accumulated).
# On a real H100 the autotuner times such tiles against cuBLAS and keeps the fastest;
# the forced tile shows which instruction a warpgroup-sized tile compiles to,
# not which tile an autotuner would keep.
#
# **Precision.**
# The dtype of a `jnp.dot` does not fully decide the arithmetic.
# JAX's default matmul precision lets an NVIDIA GPU
# (Ampere and later) run a float32 dot in **TF32**:
# inputs rounded to a 10-bit mantissa (PTX `cvt.rna.tf32.f32`), multiplied on the tensor cores,
# accumulated in float32.
# `precision="highest"` asks for true float32.
# Compiled for an H100 — default precision with the untuned default tile and with the same forced
# warpgroup-sized tile as above, and `highest` (first,
# how many such tiles this 1024×1024 output makes):

# %%
import re

tile = {k: int(v) for k, v in re.findall(r"(\w+): (\d+)", xla_gpu.TUNED_TILE)}
ctas = (F32[0][0] // tile["block_m"]) * (F32[0][1] // tile["block_n"])
print(f"forced tile {tile['block_m']}×{tile['block_n']} on the {F32[0][0]}×{F32[0][1]} output: {ctas} CTAs for "
      f"{gc.hardware.H100_SXM.sm_count} SMs (on the {BF16[0][0]}² bf16 output: "
      f"{(BF16[0][0] // tile['block_m']) * (BF16[0][1] // tile['block_n']):,})")
assert ctas < gc.hardware.H100_SXM.sm_count  # too few to fill the GPU: XLA's autotuner drops such configurations
if GPU_XLA and toolchain.available():
    f32_default, f32_tuned, f32_highest = xla_gpu.compile_many([
        (DOT, (F32, F32), {}), (DOT, (F32, F32), {"xla_gpu_override_gemm_autotuner": xla_gpu.TUNED_TILE}),
        ("lambda a, b: jnp.dot(a, b, precision='highest')", (F32, F32), {}),
    ])
    for name, r in (("default, untuned tile", f32_default), ("default, forced tile", f32_tuned),
                    ("highest", f32_highest)):
        s = r.sass()
        print(f"float32 dot, {name:22}: {dict(s.variants('HMMA') + s.variants('HGMMA'))}, FFMA {s.count('FFMA')}, "
              f"cvt.rna.tf32.f32 in PTX: {r.ptx_instructions()['cvt.rna.tf32.f32']}"
              + (f" [{r.gemm.runner}]" if r.gemm.how == "library call" else ""))
    if not be.is_gpu:
        assert set(f32_default.sass().variants("HMMA")) == {"HMMA.1688.F32.TF32"}
        assert set(f32_tuned.sass().variants("HGMMA")) == {"HGMMA.64x128x8.F32.TF32"}
        assert f32_tuned.sass().count("HMMA") == 0 and f32_tuned.ptx_instructions()["cvt.rna.tf32.f32"] > 0
        assert f32_highest.sass().count("HMMA") == f32_highest.sass().count("HGMMA") == 0 and f32_highest.sass().count("FFMA") > 0
else:
    print("[XLA:GPU] skipped: " + (xla_gpu.describe() if toolchain.available() else toolchain.describe()))

# %% [markdown]
# In the listing above (printed, and asserted, when XLA:GPU is available;
# deviceless, for an H100), default precision is **TF32** (inputs rounded by `cvt.rna.tf32.f32`,
# tensor cores); the *instruction* depends on the tile:
# `HMMA.1688.F32.TF32` (warp `mma.sync`) with the untuned deviceless tile,
# `HGMMA.64x128x8.F32.TF32` (warpgroup `wgmma`) with a warpgroup-sized tile (forced).
# Not what an autotuned H100 would run for this shape:
# the forced tile makes the number of CTAs printed above, fewer than the 132 SMs,
# and XLA's autotuner removes such low-occupancy configurations from its search
# (`EliminateLowOccupancyConfigs` in XLA's `dot_search_space.cc`);
# for a float32 dot this small it would more likely keep a small split-K `mma.sync` tile,
# or cuBLAS — which of them, only a timed run on an H100 can say.
# Highest: no tensor-core instruction, `FFMA`s on the CUDA cores.
# What that costs in accuracy, measured:
# a 512×512 float32 product against a float64 reference,
# computed by this backend at both precisions,
# and (on a CPU) with its inputs rounded to TF32 as a GPU's default would:

# %%
A = rng.standard_normal((512, 512)).astype(np.float32)
B = rng.standard_normal((512, 512)).astype(np.float32)
ref = A.astype(np.float64) @ B.astype(np.float64)


def rel_err(c):
    return float(np.abs(np.asarray(c, np.float64) - ref).max() / np.abs(ref).max())


Ad, Bd = jax.device_put(A, be.jax_device), jax.device_put(B, be.jax_device)
default = np.asarray(jnp.dot(Ad, Bd))
highest = np.asarray(jnp.dot(Ad, Bd, precision="highest"))
tf32 = gc.xla.round_to_tf32(A).astype(np.float64) @ gc.xla.round_to_tf32(B).astype(np.float64)
print(f"{be.name} default: {rel_err(default):.1e}   highest: {rel_err(highest):.1e}   "
      f"TF32-rounded inputs: {rel_err(tf32):.1e}   (relative to the largest |entry|)")
assert rel_err(highest) < 1e-5 and 1e-4 < rel_err(tf32) < 3e-3 and rel_err(tf32) > 100 * rel_err(highest)
if be.is_gpu and be.gpu.compute_capability >= (8, 0):
    assert rel_err(default) > 10 * rel_err(highest), "the GPU's default float32 dot is TF32"
elif be.is_gpu:  # before Ampere (a T4, cc 7.5) there is no TF32: a float32 dot is float32
    assert rel_err(default) < 1e-5, "no TF32 before compute capability 8.0"
else:
    assert np.array_equal(default, highest), "on a CPU, default precision is true float32"

# %% [markdown]
# On this CPU the default and `highest` results are bit-identical (true float32, error ≈ 10⁻⁶);
# TF32 inputs make the error a few hundred times larger (≈ 3·10⁻⁴,
# printed above) — fine for training most networks, not for every numerical code.
# On a GPU backend the cell checks that the default dot is the less accurate one.
#
# **The source article's "a tensor core does a 4×4×4 matrix multiply per cycle"
# (C21)** is the 2017 Volta whitepaper's description of *one* Volta tensor core
# (64 fp16 FMA per clock).
# For Hopper, start from independent rates, not from the peak itself:
# the A100 whitepaper gives 256 dense fp16 FMA per clock per tensor core;
# the H100 whitepaper gives Hopper's SM 2× A100's tensor-core rate clock for clock,
# so 512 per tensor core, 4 per SM.
# Then dense bf16 peak = SMs × 4 tensor cores × 512 FMA × 2 FLOP × clock gives the clock the
# datasheet figure assumes.

# %%
h100 = gc.hardware.H100_SXM
per_tensor_core = 2 * 256  # dense fp16/bf16 FMA per clock: A100 whitepaper 256, Hopper whitepaper 2× per SM clock
fma_per_clock_per_sm = 4 * per_tensor_core  # 4 tensor cores per SM, one per sub-partition
implied_hz = h100.peak_flops["bf16-tensor"] / 2 / h100.sm_count / fma_per_clock_per_sm
print(f"H100 dense bf16: {h100.sm_count} SMs × {fma_per_clock_per_sm:,} FMA/clock × 2 FLOP at "
      f"{implied_hz / 1e9:.3f} GHz = {h100.peak_flops['bf16-tensor'] / 1e12:.1f} TFLOP/s; max boost clock "
      f"{h100.boost_clock_hz / 1e9:.2f} GHz (the tensor-core figures assume the lower clock; computed from the "
      "datasheet and the whitepapers' rates, not measured)")
print(f"per tensor core: {per_tensor_core} FMA/clock (Volta's 4×4×4: 64, {per_tensor_core / 64:.0f}× less)")
print(f"instruction shapes: HMMA.16816 = {16 * 8 * 16:,} FMA per warp; HGMMA.64x256x16 = {64 * 256 * 16:,} per warpgroup")
# computed from the datasheet, not measured: the clock the text quotes (XLA's own H100 description, h100_sxm.txtpb,
# not installed here, lists 1.8295 GHz for the matrix units)
assert abs(implied_hz - 1.83e9) < 0.005e9
assert h100.boost_clock_hz == 1.98e9 and implied_hz < h100.boost_clock_hz and per_tensor_core // 64 == 8

# %% [markdown]
# 512 dense fp16/bf16 multiply-adds per clock per tensor core, 8× Volta's 64:
# the "4×4×4 per cycle" is outdated as a rate, and as a shape — no Hopper instruction is 4×4×4;
# the instructions the compilers emit are the warp's 16×8×K `mma.sync` and the warpgroup's 64×N×K
# `wgmma`, with K = 16 for fp16/bf16,
# 8 for TF32 (the float32 dot's `HMMA.1688` and `HGMMA.64x128x8`,
# when XLA:GPU is available above) and 32 for FP8 and int8 (int8 `mma.sync` also has K = 16 shapes,
# `m16n8k16`; PTX ISA: `mma` and `wgmma` shapes); only the warpgroup's approaches that rate.
# The SASS opcode names the data type as well as the level:
# `mma.sync` is `HMMA` (fp16, bf16, TF32), `IMMA` (int8) or `DMMA` (fp64),
# and `wgmma` is `HGMMA` (fp16, bf16, TF32),
# `IGMMA` (int8) or `QGMMA` (FP8) — §6.7's fp8 `wgmma` above is a `QGMMA`, not an `HGMMA`
# (and the 1-bit `.b1 ... .and.popc` shapes are `BMMA` and `BGMMA`, which this course does not use).
#
# ## 6.8 On a GPU: the same kernels, run and timed
#
# On a GPU backend the CUDA C above runs as CuPy `RawKernel`s
# (compiled by NVRTC for the GPU you have),
# the elementwise chain also as a CuPy `ElementwiseKernel` and op by op;
# these are timed with CUDA events on CuPy's stream (`gc.measure(..., clock="cuda")`).
# The JAX version runs on JAX's own CUDA streams, which CuPy's events do not see:
# it is timed with the host clock after `block_until_ready` (the default of `gc.measure`),
# which adds the host's synchronization
# (microseconds) to a kernel that moves 4 arrays of 2²⁶ float32 (256 MiB each:
# a fraction of a millisecond at HBM rates).
# The arrays do not fit in the L2 cache.

# %%
if gc.require_gpu("CuPy RawKernel / ElementwiseKernel (CUDA events) and JAX-on-GPU (host clock) timings of the fused kernel, and a wmma tile"):
    cp = be.xp
    n = 1 << 26
    gx, gy, gz = (cp.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(3))
    gout = cp.empty_like(gx)
    raw = cp.RawKernel(ELEMENTWISE_CU, "fused_relu")
    ew = cp.ElementwiseKernel("float32 x, float32 y, float32 z", "float32 o", "o = fmaxf(x * y + z, 0.0f)", "ew_relu")
    t_raw = gc.measure(lambda: raw(((n + 255) // 256,), (256,), (gx, gy, gz, gout, np.int32(n))), clock="cuda")
    t_ew = gc.measure(lambda: ew(gx, gy, gz, gout), clock="cuda")
    t_unf = gc.measure(lambda: cp.maximum(gx * gy + gz, 0), clock="cuda")
    jx = [jax.device_put(np.asarray(a.get()), be.jax_device) for a in (gx, gy, gz)]
    t_jax = gc.measure(jax.jit(article_fn), *jx)  # host clock + block_until_ready: JAX's streams are not CuPy's
    for name, t in (("RawKernel", t_raw), ("ElementwiseKernel", t_ew), ("CuPy op by op", t_unf), ("JAX jit (host clock)", t_jax)):
        print(f"{name:20} {t}  {16 * n / t.best / 1e12:6.2f} TB/s (fused traffic: 16 B per element)")
    assert cp.allclose(gout, cp.maximum(gx * gy + gz, 0))
    spec = gc.hardware.lookup(be.gpu.name)  # form factor and memory size matched; None: no figures for this card
    if spec is not None:
        print(f"RawKernel: {16 * n / t_raw.best / spec.memory_bandwidth:.0%} of the {spec.name}'s HBM bandwidth")
        assert 0.5 < 16 * n / t_raw.best / spec.memory_bandwidth <= 1.0, "a large fraction of HBM bandwidth"
    assert 1.4 < t_unf.best / t_raw.best < 3.5, "op by op moves 8 arrays per element (both temporaries included) against 4: about 2× (+ launch)"
    a16 = cp.asarray(rng.standard_normal((16, 16)), dtype=cp.float16)
    b16 = cp.asarray(rng.standard_normal((16, 16)), dtype=cp.float16)
    c32 = cp.zeros((16, 16), cp.float32)
    cp.RawKernel(wmma_cu(1), "wmma_gemm", options=("-std=c++17",))((1,), (32,), (a16, b16.T.copy(), c32))
    assert cp.allclose(c32, a16.astype(cp.float32) @ b16.astype(cp.float32), atol=1e-2)
    print("wmma tile on the tensor cores matches the fp32 product")
else:
    print("On an H100 (3.35 TB/s) the fused kernel would move 16 B per element: 2^26 elements in about "
          f"{16 * (1 << 26) / gc.hardware.H100_SXM.memory_bandwidth * 1e6:.0f} µs at the datasheet bandwidth "
          "(computed, not measured); CuPy op by op (x·y, +z, max: 3 kernels, 2 temporaries) moves about twice that.")

# %% [markdown]
# ## Claims check
#
# What the verdicts mean: [§0, Sources and claims
# checks](00_overview.ipynb#Sources-and-claims-checks).
#
# | ID | claim (article 000) | verdict |
# |---|---|---|
# | C12 | unfused ops each round-trip global memory; a fused kernel loads once, computes in registers, stores once | **confirmed** ([why](#Claim-C12)) |
# | C20 | XLA's buffer assignment fixes memory locations and lifetimes at compile time and prevents fragmentation | **qualified** ([why](#Claim-C20)) |
# | C21 | a tensor core performs a 4×4×4 matrix multiply per cycle | **outdated** ([why](#Claim-C21)) |
# | C22 | matmuls compile to tensor-core HMMA instructions instead of FFMA when conditions allow | **qualified** ([why](#Claim-C22)) |
#
# On a GPU the §6.3 and §6.8 cells also run the kernels and time them;
# their asserts are what the cell checks when run on a GPU, not a reported result:
# no GPU run of this course is recorded yet (`course/gpu_runs/`).
#
# **Next:** the lab, `labs/lab06_xla_sass/lab06_xla_sass.ipynb` — fuse, count bytes,
# find and fix a fusion breaker, write the fused kernel and check its traffic against XLA's,
# count instructions in SASS you compile, and predict,
# measure and explain what fusion buys on your machine.
#
# ### Each claim: the verdict's reasons and the evidence
#
# #### Claim C12
#
# **confirmed** — the saving in *time* is the byte ratio only where memory traffic dominates
# (large arrays, a GPU's HBM); for small arrays per-call dispatch dominates,
# and on a CPU page faults of fresh intermediates can add more where the run takes them
# (the faults column shows whether it did; the model's leftover, measured/model, is printed too).
#
# *Evidence.*
# §6.3: XLA's cost model: 8 arrays of traffic unfused vs 4 fused (byte ratio 2);
# arrays sized out of the last-level cache, the measured time ratio (5 rounds, all printed,
# median kept) is above 1 (asserted), printed beside a model of dispatch + bytes
# (DRAM) + page faults whose bandwidth is calibrated on the fused call
# (so the fused side matches by construction and the unfused time is the model's one prediction),
# with measured/model for every round (printed, not asserted: a one-thread fault cost can overcharge
# the faults, the unfused ops can stream faster or slower than the fused pass's calibrated rate,
# and a busy machine spreads the rounds); §6.6–6.7:
# the fused kernel's PTX/SASS loads x, y, z once, computes in registers, stores once (numba:
# 1 `fma.rn.f32`; XLA: 128-bit loads, `mul.rn`/`add.rn`).
#
# #### Claim C20
#
# **qualified**: true *inside one compiled program*;
# arguments, outputs and arrays that live between programs are allocated at run time by the device
# allocator (JAX's BFC allocator on GPU), where fragmentation remains possible.
#
# *Evidence.*
# §6.4: XLA's buffer-assignment dump for a stack of k layers:
# 2k intermediate values placed in 2 allocations (one output, one temporary) at fixed offsets,
# for every k ≥ 2; `memory_analysis` agrees.
#
# #### Claim C21
#
# **outdated**: 4×4×4 per clock is Volta's (2017) tensor core;
# Hopper's does 8× that rate, and its full-rate instruction is the warpgroup-wide,
# asynchronous `wgmma` (HGMMA) fed from shared memory.
#
# *Evidence.*
# §6.7: A100 whitepaper (256 dense fp16 FMA per clock per tensor core) × 2 (H100 whitepaper:
# Hopper's SM has 2× A100's tensor-core rate clock for clock) → 512 dense fp16/bf16 FMA per clock
# per tensor core (8× the 4×4×4 = 64),
# which with the H100 datasheet's dense bf16 peak implies the 1.83 GHz printed above
# (computed from the datasheet, not measured);
# the instructions compiled here are `HMMA.16816` (warp, m16n8k16; TF32:
# `HMMA.1688`, K = 8) and `HGMMA.64xNxK` (warpgroup, sm_90a; K = 16 fp16/bf16, 8 TF32;
# with FP8 inputs, K = 32, the opcode is `QGMMA`, compiled in §6.7),
# and FlashAttention-3 reports `mma.sync` reaching only about 2/3 of Hopper's peak.
#
# #### Claim C22
#
# **qualified** — the conditions: a tensor-core dtype (fp16, bf16, fp8,
# or float32 *rounded to TF32* by default),
# shapes worth a GEMM kernel (XLA runs a tiny dot as a loop on CUDA cores, §0),
# and on Hopper a warpgroup-sized tile for `HGMMA`;
# and the GEMM is usually not compiled by XLA at all but run by cuBLAS, or generated by Triton.
#
# *Evidence.*
# §6.7: the elementwise kernel compiles to `FFMA`, the fp16 wmma kernel to `HMMA.16816.F32`,
# the wgmma kernel to `HGMMA.64x8x16.F32`;
# XLA:GPU compiles a float32 `jnp.dot` to TF32 tensor-core instructions by default
# — `HMMA.1688.F32.TF32` with the untuned tile,
# `HGMMA.64x128x8.F32.TF32` with a forced warpgroup-sized one
# — and to `FFMA` with `precision="highest"`,
# and a bf16 one to `HMMA` or `HGMMA` depending on the tile.
