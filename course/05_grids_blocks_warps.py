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
# # 5 — Grids, blocks, warps and the SM
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/course/05_grids_blocks_warps.ipynb)
#
# A kernel launch starts thousands of threads.
# This section follows them down the hierarchy the source articles describe
# — the kernel's view (커널 관점): grid → block → warp → thread — onto the hardware that runs them,
# the streaming multiprocessor (SM), and measures what the hierarchy costs when it is used badly.
#
# **You will learn**
# - to index 1-D and 2-D data from `cuda.grid`, guard the ragged last block,
#   and write grid-stride loops;
# - what one SM holds (registers, shared memory, L1) and how many blocks fit:
#   occupancy from published limits;
# - why a waiting warp costs nothing (latency hiding by warp switching) and how many warps that
#   takes (Little's law);
# - what warp divergence (분기) really costs — article 000's "about 2×", checked;
# - coalescing and shared-memory tiling, counted per thread by an instrumented executor.
#
# Every kernel here is a numba-cuda `@cuda.jit` function:
# it runs on the GPU when there is one and, without one,
# on the course's SIMT executor by default (`gpucourse.simt`:
# numba-cuda's API, CUDA threads run as coroutines;
# the setup cell's "kernels" line says which runner is in use).
# The executor also runs the *same* Python kernel instrumented and reports per thread and per warp
# what it did — on both backends alike.
# The lab is `labs/lab05_kernels/`.

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
import struct

import matplotlib.pyplot as plt
import numpy as np

import gpucourse as gc
from gpucourse import occupancy, simt

be = gc.setup()
cuda = be.cuda  # numba.cuda on a GPU; on CPU the course's executor (gpucourse.simt) with numba-cuda's API
h100 = gc.hardware.H100_SXM

# %% [markdown]
# ## 5.1 Grid → block → warp → thread
#
# Article 000 names the levels: the **grid** (그리드) is every thread of one launch;
# it is cut into **blocks** (블록), each placed on one SM, whose threads can share data fast;
# the SM runs a block's threads in **warps** (워프) of 32 that execute the same instruction together.
# A launch `kernel[blocks, threads_per_block](...)` fixes the first two;
# the hardware makes the warps.
# Thread `i = blockIdx.x · blockDim.x + threadIdx.x`
# (`cuda.grid(1)`) is the usual one-thread-per-element index,
# and since the grid is rounded *up* to whole blocks, the last block needs a guard.
#
# The first kernel computes nothing:
# every thread writes down who it is — its block, its number in the block,
# its global index — in the column of a table that its index names.
# For `n = 200` elements and blocks of 64 threads,
# the launch geometry is `ceil(200 / 64) = 4` blocks = 256 threads,
# of which the last 56 have no element.

# %%
@cuda.jit
def who_am_i(ids):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < ids.shape[1]:  # the guard: the last block has threads past the end
        ids[0, i], ids[1, i], ids[2, i] = cuda.blockIdx.x, cuda.threadIdx.x, i  # a table: 3 rows, n columns


n, tpb = 200, 64
blocks = math.ceil(n / tpb)  # the grid is rounded up to whole blocks
print(f"{n} elements, {tpb} threads per block: {blocks} blocks = {blocks * tpb} threads, {blocks * tpb - n} idle")
assert (blocks, blocks * tpb - n) == (4, 56)
ids_dev = be.to_device(np.full((3, n), -1, np.int32))
who_am_i[blocks, tpb](ids_dev)  # numba-cuda: the device, or the course's executor on CPU
be.sync()
ids = np.full((3, n), -1, np.int32)
report = simt.run(who_am_i, blocks, tpb, ids)  # the same kernel, instrumented
blk, thr, idx = ids
for k in (0, 63, 64, 199):
    print(f"element {k:3}: block {blk[k]}, thread {thr[k]:2}, global index {blk[k]} · {tpb} + {thr[k]} = {idx[k]}")
assert np.array_equal(be.to_host(ids_dev), ids)
# i = blockIdx.x · blockDim.x + threadIdx.x, and every element has exactly one thread
assert np.array_equal(idx, np.arange(n)) and np.array_equal(idx, blk * tpb + thr)
assert np.array_equal(blk, np.arange(n) // tpb) and np.array_equal(thr, np.arange(n) % tpb)
print(report)
assert report.n_threads == 256 and len(report.warps) == 8 and report.total("global", "w") == 3 * n  # 3 per element

# %% [markdown]
# The article 002 tree, drawn from this launch.
# Which SM runs which block is the hardware's choice:
# on a GPU it is read from the `%smid` register of every block of a real launch;
# on CPU the tree shows the executor's blocks with the SM left open.

# %%
sm_of_block = None
if gc.require_gpu("read %smid in every block of a real launch to see which SM ran it"):
    cp = be.xp
    smid = cp.RawKernel(r'''
    extern "C" __global__ void smid(int* out) {
        unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
        if (threadIdx.x == 0) out[blockIdx.x] = s;
    }''', "smid")
    ids = cp.zeros(blocks, dtype=cp.int32)
    smid((blocks,), (tpb,), (ids,))
    sm_of_block = {b: int(s) for b, s in enumerate(ids.get())}
    print("SM of each block:", sm_of_block)
tree = simt.launch_tree(report, sm_of_block, kernel="who_am_i", stream="Stream 1")
print(tree)
assert "Warp 0-1 (threads 32–63)" in tree and "Block 3" in tree

# %% [markdown]
# A warp is 32 *consecutive* threads of a block.
# The picture colours every element of the table (its three rows:
# block, thread, index) by the warp that wrote it: 8 warps;
# the last block's second warp (threads 224–255) writes nothing — every lane fails the guard
# — and its first warp stores with only 8 of 32 lanes.

# %%
ax = simt.plot_access(report, "ids", "w", by="warp", title="who_am_i: which warp wrote column i of ids")
plt.show()
warp_map = report.access_map("ids", "w", by="warp")[2]
assert all(np.array_equal(row, warp_map) for row in report.access_map("ids", "w", by="warp"))
assert np.array_equal(warp_map, (blk * tpb + thr) // 32)  # warp = (block · 64 + thread) // 32: consecutive threads
assert list(np.unique(warp_map)) == list(range(7))  # warps 0..6 wrote; warp 7 (all past the end) did not
assert report.warps[-1].steps == 2 and report.warps[-1].active == 2 * 32  # index + guard, then all lanes exit
assert report.warps[-2].steps == 3 and report.warps[-2].active == 2 * 32 + 8  # 8 live lanes store

# %% [markdown]
# **Warp = 32 threads (C14).**
# On a GPU the device reports its warp size;
# everywhere, CUDA's programming guide fixes it at 32 for every NVIDIA architecture so far.

# %%
if gc.require_gpu("ask the device for its warp size"):
    ws = be.xp.cuda.runtime.getDeviceProperties(0)["warpSize"]
    print("device warp size:", ws)
    assert ws == 32
assert simt.WARP_SIZE == 32 and all(w.threads == 32 for w in report.warps)

# %% [markdown]
# ## 5.2 Two dimensions, guards, and grid-stride loops
#
# For a matrix, `cuda.grid(2)` returns `(x, y)`;
# with row-major storage x should walk along a row (the contiguous axis) — why, §5.6 measures.
# Shapes rarely divide the block, so both coordinates are guarded.
# A **grid-stride loop** decouples the data size from the launch:
# each thread handles elements `i, i + gridsize, i + 2·gridsize, …`, so a fixed grid (say,
# a few blocks per SM) covers any `n`.
#
# As in §5.1, the kernels below compute nothing: they record which thread touched which element.
# `owner_2d` runs 2 × 2 blocks of 16 × 8 threads over a 13 × 21 array
# (neither dimension a multiple of the block) and writes into every element the number of the block
# that reached it and the thread's number inside that block
# (`threadIdx.y · blockDim.x + threadIdx.x`,
# the order in which the block's threads are cut into warps).
# `stride_owner` runs 64 threads over 300 elements and writes into each element the global index of
# the thread that handled it.

# %%
@cuda.jit
def owner_2d(block, thread):
    c, r = cuda.grid(2)  # x → column, y → row
    if r < thread.shape[0] and c < thread.shape[1]:  # both coordinates guarded
        block[r, c] = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x  # blocks numbered along x first
        thread[r, c] = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x  # warps are cut from this number


@cuda.jit
def stride_owner(owner):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, owner.size, stride):
        owner[i] = start  # the thread of the grid that handled element i


shape2, grid2, block2 = (13, 21), (2, 2), (16, 8)  # grid and block as (x, y): x along the 21 columns
blk2, thr2 = np.full(shape2, -1, np.int32), np.full(shape2, -1, np.int32)
r2 = simt.run(owner_2d, grid2, block2, blk2, thr2)
dev2 = [be.to_device(np.full(shape2, -1, np.int32)) for _ in range(2)]
owner_2d[grid2, block2](*dev2)
be.sync()
assert np.array_equal(be.to_host(dev2[0]), blk2) and np.array_equal(be.to_host(dev2[1]), thr2)
rows, cols = np.indices(shape2)
assert np.array_equal(blk2, (rows // 8) * 2 + cols // 16) and np.array_equal(thr2, (rows % 8) * 16 + cols % 16)
warp2 = blk2 * 4 + thr2 // 32  # 128 threads per block: 4 warps
print("which warp touched each element of the 13 × 21 array (rows down, columns across):")
print("\n".join(" ".join(f"{w:2}" for w in row) for row in warp2))
# a warp covers 2 rows × 16 columns: its 16 neighbouring threads along x touch 16 neighbouring elements of a row
assert all(set(map(tuple, np.argwhere(warp2 == w) % (8, 16) // (2, 16))) == {(w % 4, 0)} for w in np.unique(warp2))
assert np.all(np.diff(thr2[:, :16], axis=1) == 1)  # along a row, inside a block: the next thread
owner = np.full(300, -1, np.int32)
rs = simt.run(stride_owner, 2, 32, owner)
assert np.array_equal(owner, np.arange(300) % 64)  # element i: thread i mod 64, on its (i // 64)-th pass
print(f"2-D: {r2.n_threads} threads for {thr2.size} elements; each element written "
      f"{r2.total('global', 'w') / (2 * thr2.size):.0f}× per array; {r2.n_threads - thr2.size} threads guarded off")
print(f"grid-stride: {rs.n_threads} threads for {owner.size} elements: "
      f"{rs.per_thread('global')['writes']:.2f} writes per thread (max {rs.per_thread('global')['max_writes']})")
assert r2.total("global", "w") == 2 * thr2.size and rs.per_thread("global")["max_writes"] == math.ceil(300 / 64)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 3.6))
simt.plot_access(r2, "thread", "w", by="block", ax=ax1, title="owner_2d on 13×21, blocks of 16×8")
simt.plot_access(rs, "owner", "w", by="thread", ax=ax2, title="grid-stride loop: 64 threads, 300 elements")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 5.3 The SM: registers, shared memory, L1 — and occupancy
#
# Article 000 lists what an SM holds;
# article 002 adds that these are *private* to the SM while L2 and global memory
# (HBM) are shared by all SMs.
# Published figures for the H100 SXM (Hopper whitepaper,
# CUDA Programming Guide for compute capability 9.0; `gc.hardware`).
# One detail decides a lot below: an SM is four **sub-partitions**,
# each with its own warp scheduler and a quarter of the register file,
# and every warp lives in one of them.

# %%
# NBVAL_CHECK_OUTPUT
p = h100.per_sm
print(f"H100 SXM: {h100.sm_count} SMs, compute capability {h100.compute_capability[0]}.{h100.compute_capability[1]}")
print(f"per SM (private): register file {p['register_file_bytes'] // 1024} KB = {p['register_file_bytes'] // 4:,} "
      f"32-bit registers, in {p['sub_partitions']} sub-partitions of {p['register_file_bytes'] // 4 // p['sub_partitions']:,}"
      f" (one warp scheduler each)")
print(f"  shared memory up to {p['shared_memory_bytes'] // 1024} KB (carved from a 256 KB L1/shared array); per block "
      f"{p['shared_memory_per_block'] // 1024} KB by default, up to {p['shared_memory_per_block_optin'] // 1024} KB "
      f"with the opt-in (dynamic shared memory), + {p['shared_reserved_per_block'] // 1024} KB the driver reserves per block")
print(f"  up to {p['max_warps']} warps = {p['max_threads']} threads and {p['max_blocks']} blocks resident")
print("shared by all SMs: 50 MB L2 cache, 80 GB HBM3")
print(f"registers per thread when the SM is full: {p['register_file_bytes'] // 4 // p['max_threads']}")
# the datasheet's figure (Hopper whitepaper, typed into gc.hardware), not measured: article 000's 256 KB (C13); on a GPU
# the device's own count (cudaDeviceProp.regsPerMultiprocessor) is the independent check
assert p["register_file_bytes"] == 256 * 1024
if be.is_gpu and "H100" in be.gpu.name:
    assert be.xp.cuda.runtime.getDeviceProperties(0)["regsPerMultiprocessor"] * 4 == p["register_file_bytes"]
# Expected output:
# H100 SXM: 132 SMs, compute capability 9.0
# per SM (private): register file 256 KB = 65,536 32-bit registers, in 4 sub-partitions of 16,384 (one warp scheduler each)
#   shared memory up to 228 KB (carved from a 256 KB L1/shared array); per block 48 KB by default, up to 227 KB with the opt-in (dynamic shared memory), + 1 KB the driver reserves per block
#   up to 64 warps = 2048 threads and 32 blocks resident
# shared by all SMs: 50 MB L2 cache, 80 GB HBM3
# registers per thread when the SM is full: 32

# %% [markdown]
# Every resident thread keeps its own registers for its whole life
# — that is why switching warps needs no save/restore (C13, C15).
# The price: registers and shared memory are *partitioned* among resident blocks,
# so a kernel that uses many of them fits fewer warps on the SM.
# **Occupancy** = resident warps / 64.
# NVIDIA computes it in a header-only calculator, `cuda_occupancy.h`,
# and `gpucourse.occupancy` follows it rule by rule:
#
# - **warps**: 64 per SM, so `64 // warps per block` blocks;
# - **registers**: granted per warp, `registers/thread × 32` rounded up to 256;
#   a sub-partition's 16,384 registers hold `16384 // that` whole warps, the SM four times that.
#   Dividing the SM's 65,536 registers by a block's registers is wrong whenever the four remainders
#   would add up to another block: 32 threads × 81 registers
#   (2,816 per warp) fit 5 warps per sub-partition = 20 blocks, not 65,536 // 2,816 = 23.
#   And a launch is refused when the block's warps,
#   **rounded up to a multiple of 4 sub-partitions**,
#   would not fit in the 65,536 registers one block may hold:
#   257 threads × 200 registers is 9 warps → 12 × 6,400 = 76,800 > 65,536,
#   so **0** blocks — though 9 × 6,400 = 57,600 looks as if it fits.
#   (On the H100 and A100, where one block may hold all 65,536 registers,
#   this check refuses exactly the launches for which the sub-partition count gives 0 blocks:
#   6,400 registers per warp leave room for 2 warps per sub-partition, 8 per SM,
#   fewer than 9 — asserted below for every warp and register count.
#   The header keeps both; they differ only where a block may hold less than an SM);
# - **shared memory**: a block takes what it declares + 1 KB reserved, rounded up to 128 bytes,
#   and may not exceed 48 KB unless the kernel opts in (`cudaFuncSetAttribute(kernel,
#   cudaFuncAttributeMaxDynamicSharedMemorySize,
#   n)`) — an opt-in for **dynamic** shared memory only:
#   a block's static `__shared__` arrays
#   (every `cuda.shared.array` in this course) never exceed 48 KB,
#   opt-in or not (CUDA C++ Programming Guide, compute capability 9.0);
#   the SM's carve-out holds `carve-out // that` blocks;
# - **blocks**: at most 32 per SM.

# %%
# NBVAL_CHECK_OUTPUT
configs = [(256, 32, 0, False), (256, 64, 0, False), (256, 128, 0, False), (128, 32, 48 * 1024, False),
           (128, 32, 60 * 1024, False), (128, 32, 60 * 1024, True), (32, 32, 0, False), (1024, 64, 0, False),
           (96, 40, 0, False), (32, 81, 0, False), (257, 200, 0, False)]
for threads, regs, smem, opt_in in configs:
    o = occupancy.occupancy(threads, regs, smem, opt_in=opt_in)
    print(f"{threads:5} threads × {regs:3} regs, {smem // 1024:3} KB shared{' (opt-in)' if opt_in else '          '}: "
          f"{o.blocks_per_sm:2} blocks, {o.warps_per_sm:2} warps, {o.occupancy:4.0%} ({o.limiter})")
assert occupancy.occupancy(256, 64, 0).occupancy == 0.5 and occupancy.occupancy(32, 32, 0).limiter == "blocks"
assert occupancy.occupancy(32, 81, 0).blocks_per_sm == 20 and 65536 // (2816 * 1) == 23
assert occupancy.occupancy(257, 200, 0).blocks_per_sm == 0 and 9 * 6400 <= 65536 < 12 * 6400
for w in range(1, 33):  # warps per block: the per-block check refuses exactly when no block fits the sub-partitions
    for per_warp in (-(-r * 32 // 256) * 256 for r in range(1, 256)):
        assert (per_warp * -(-w // 4) * 4 > 65536) == ((16384 // per_warp) * 4 // w == 0)
# Expected output:
#   256 threads ×  32 regs,   0 KB shared          :  8 blocks, 64 warps, 100% (warps)
#   256 threads ×  64 regs,   0 KB shared          :  4 blocks, 32 warps,  50% (registers)
#   256 threads × 128 regs,   0 KB shared          :  2 blocks, 16 warps,  25% (registers)
#   128 threads ×  32 regs,  48 KB shared          :  4 blocks, 16 warps,  25% (shared_memory)
#   128 threads ×  32 regs,  60 KB shared          :  0 blocks,  0 warps,   0% (shared_memory)
#   128 threads ×  32 regs,  60 KB shared (opt-in):  3 blocks, 12 warps,  19% (shared_memory)
#    32 threads ×  32 regs,   0 KB shared          : 32 blocks, 32 warps,  50% (blocks)
#  1024 threads ×  64 regs,   0 KB shared          :  1 blocks, 32 warps,  50% (registers)
#    96 threads ×  40 regs,   0 KB shared          : 16 blocks, 48 warps,  75% (registers)
#    32 threads ×  81 regs,   0 KB shared          : 20 blocks, 20 warps,  31% (registers)
#   257 threads × 200 regs,   0 KB shared          :  0 blocks,  0 warps,   0% (registers)

# %% [markdown]
# These are not our rules to invent.
# NVIDIA ships its calculator as C++ in every CUDA toolkit and in its pip wheels
# (`nvidia/cu13/include/cuda_occupancy.h`, from the `toolchain` extra).
# The next cell compiles it with g++ — no GPU needed — feeds it an H100's device properties,
# and compares every warp count (most blocks ragged,
# not multiples of 32 threads) with every register count:

# %%
from gpucourse import occupancy_nvidia

nvidia = occupancy_nvidia.NvidiaOccupancy.build() if not occupancy_nvidia.missing() else None
if nvidia is None:
    print("NVIDIA's calculator cannot be built here (missing: " + "; ".join(occupancy_nvidia.missing()) + "); "
          "tests/test_occupancy_header.py runs this comparison wherever it can")
else:
    sweep = [(32 * w - (w % 7), r, 0, False, None) for w in range(1, 33) for r in range(1, 256)]  # mostly ragged
    header = nvidia.run(occupancy_nvidia.DEVICES["sm_90"], sweep + [(32, 81, 0, False, None), (257, 200, 0, False, None)])
    ours = [occupancy.occupancy(t, r, s, opt_in=o).blocks_per_sm for t, r, s, o, _ in sweep]
    per_sm = [min(64 // -(-t // 32), 65536 // (-(-r * 32 // 256) * 256 * -(-t // 32)), 32) for t, r, *_ in sweep]
    agree = sum(a == h.blocks for a, h in zip(ours, header))
    wrong = sum(a != h.blocks for a, h in zip(per_sm, header))
    print(f"NVIDIA's cuda_occupancy.h vs gpucourse.occupancy: {agree:,} of {len(sweep):,} configurations agree")
    print(f"a per-SM register division gets {wrong:,} of them wrong")
    print(f"NVIDIA's answers for 32 threads × 81 registers: {header[-2].blocks} blocks; 257 × 200: {header[-1].blocks} blocks")
    assert agree == len(sweep) and wrong > 100 and (header[-2].blocks, header[-1].blocks) == (20, 0)

# %%
ax = gc.plotting.axes("registers per thread [registers]", "occupancy [%]", "H100: occupancy vs register use")
regs = np.arange(16, 256, 1)
for i, threads in enumerate((32, 128, 256, 512)):
    ax.step(regs, [100 * occupancy.occupancy(threads, int(r), 0).occupancy for r in regs], where="post",
            label=f"{threads} threads/block", color=gc.plotting.PALETTE[i])
per_sm_32 = [100 * min(32, 65536 // (-(-int(r) * 32 // 256) * 256)) / 64 for r in regs]
ax.step(regs, per_sm_32, where="post", ls=":", color=gc.plotting.PALETTE[0], label="32 threads, per-SM division (wrong)")
ax.legend()
plt.show()
assert occupancy.occupancy(256, 255, 0).occupancy == 0.125

# %% [markdown]
# Article 002's sizes (C30): "usually 100–500 threads per block" and "each SM executes 1–4 warps at
# the same time".
# CUDA allows 1–1024 threads per block;
# multiples of 32 avoid half-empty warps
# (the last warp of a 100-thread block has 4 live lanes of 32), and 128–256 is the common choice.
# An H100 SM *holds* up to 64 warps and its 4 schedulers each *issue* one warp instruction per cycle
# — "1–4 at the same time" is the issue rate, not the number of warps in flight:

# %%
for threads in (100, 128, 500, 512):
    o = occupancy.occupancy(threads, 32, 0)
    live = threads % 32 or 32
    print(f"{threads} threads/block: {math.ceil(threads / 32)} warps (last one {live}/32 lanes), "
          f"{o.blocks_per_sm} blocks/SM → {o.warps_per_sm} resident warps, {p['warp_schedulers']} issued per cycle")
assert occupancy.occupancy(100, 32, 0).warps_per_sm > p["warp_schedulers"]

# %% [markdown]
# Blocks of one kernel are independent (C31):
# CUDA guarantees no order between them, so the hardware may spread them over SMs in any order.
# A correct kernel cannot tell — run the blocks backwards and nothing changes;
# on a GPU the `%smid` readout in §5.1 shows blocks on different SMs.

# %%
fwd = [np.full(shape2, -1, np.int32) for _ in range(2)]
rev = [np.full(shape2, -1, np.int32) for _ in range(2)]
simt.run(owner_2d, grid2, block2, *fwd)
simt.run(owner_2d, grid2, block2, *rev, block_order="reverse")
assert all(np.array_equal(f, r) for f, r in zip(fwd, rev))
if sm_of_block is not None:
    print("distinct SMs used by", blocks, "blocks:", len(set(sm_of_block.values())))
    assert len(set(sm_of_block.values())) > 1

# %% [markdown]
# ## 5.4 Latency hiding: warps switch, bytes stay in flight
#
# A load that misses the L2 and goes to HBM takes hundreds of cycles:
# a pointer-chasing microbenchmark (each load's address comes from the previous load,
# so nothing overlaps) measured **~655 cycles** on an H100 PCIe at its 1,755 MHz boost clock,
# **373 ns** (D. Ernst's `gpu-benches`, `gpu-latency/h100_pcie.txt`;
# an L2 hit costs ~265 to ~475 cycles depending on the L2 partition, an L1 hit ~34).
# On a GPU the next cell measures it on yours:
# a chain of links, one per 128-byte line in random order, through at least 8× the L2,
# each run continuing where the last one stopped,
# so that no timed load finds its line in the cache
# — beside the same chase through a chain that fits in the L2.
# What such a number includes: at a power of two of at least 8× the L2 and at least 512 MiB
# (512 MiB on an H100) the chain also spans hundreds of 2 MiB pages,
# visited in random order (the cell prints how rarely two consecutive links share a page),
# so a load may also miss the TLBs, the caches of address translations,
# and wait for a page-table walk.
# The measurement cannot separate that from the trip to HBM:
# it is the latency of a random load at that footprint
# — an L2 miss *plus* whatever address translation costs there — not the bare DRAM access.
# The source's 655 cycles include the same:
# gpu-benches' chain is random too and reaches 1.5 GB (`gpu-latency/main.cu`;
# its 655 cycles are read at about 550 MiB: the file's footprint column is KiB).
# The small chain's 8 MiB are 4 such pages.
# The cell's asserts (the big chain well above the small one,
# and on an H100 nearer the source's 655 cycles than its 475) are what the cell checks when run on a
# GPU, not a reported result: no GPU run of this course is recorded yet (`course/gpu_runs/`).
# Article 000 (C15): while warp A waits, the scheduler issues from warp B — no context switch,
# because B's registers are already there.
# How many warps does that take?
# **Little's law**: to sustain bandwidth $B$ against latency $L$,
# $B \cdot L$ bytes must be in flight.
# The latency used is the *unloaded* one (one pointer chase, an idle memory system);
# at full bandwidth requests queue and the latency rises,
# so the count below is a lower bound (Little's law is linear in the latency).
# The numbers below are computed from the published latency and the datasheet,
# not measured here (the cell after it measures the latency on a GPU).

# %%
cycles = gc.hardware.H100_LATENCY_CYCLES["HBM (L2 miss)"]
latency = cycles / gc.hardware.H100_LATENCY_CLOCK_HZ  # s
in_flight = occupancy.bytes_in_flight(h100.memory_bandwidth, latency)
per_sm = in_flight / h100.sm_count
warps = occupancy.warps_to_hide_latency(h100.memory_bandwidth, latency, h100.sm_count, 128)
print(f"HBM latency: {cycles} cycles at {gc.hardware.H100_LATENCY_CLOCK_HZ / 1e6:,.0f} MHz = {latency * 1e9:.0f} ns "
      f"({gc.hardware.H100_LATENCY_SOURCE})")
print(f"H100 SXM: {h100.memory_bandwidth / 1e12:.2f} TB/s × {latency * 1e9:.0f} ns (the PCIe card's latency: the source "
      f"did not measure the SXM part) = {in_flight / 1e6:.2f} MB in flight = {per_sm / 1e3:.2f} kB per SM")
print(f"= {warps:.0f} warp-wide float32 loads (128 B) outstanding per SM at the unloaded latency — a lower bound "
      "(queueing at full bandwidth raises the latency) — more than the 64 warps an SM can hold,")
print("  so each warp must keep several loads in flight (unrolling, vector loads) or move more bytes per load")
# computed from the source's cycles and clock and the datasheet's bandwidth (not measured): the text's 373 ns, and
# more warps than an SM holds
assert round(latency * 1e9) == 373 and 64 < warps < 100
assert round(per_sm / 1e3, 2) == 9.47  # decimal kB beside decimal MB (1.25 MB / 132 SMs)

# %%
if gc.require_gpu("measure the latency of a load that misses L2: one thread chasing pointers through 8× the L2"):
    cp = be.xp
    chase = cp.RawKernel(r"""
    extern "C" __global__ void chase(const long long* next, long long steps, long long* pos, long long* cycles) {
        long long i = pos[0];  // where the previous run stopped: runs continue along the cycle, never restart
        long long t0 = clock64();
        for (long long s = 0; s < steps; ++s) i = __ldcg(next + i);  // each address depends on the previous load
        long long t1 = clock64();  // (__ldcg: cached in L2 only, so the small chain below measures L2, not L1)
        pos[0] = i; cycles[0] = t1 - t0;
    }""", "chase")
    LINE = 128 // 8  # int64 slots per 128-byte cache line: one link per line, so no two links share a sector
    l2 = int(cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    steps, warmup, repeat = 200_000, 1, 3
    PAGE_LINES = 2 * 2**20 // 128  # 128-byte lines per 2 MiB page (the granularity of CUDA's device allocations)

    def chase_latency(lines: int) -> tuple:
        """(ns, SM cycles) per dependent load: one cycle through `lines` cache lines in random order."""
        order = np.random.default_rng(0).permutation(lines)
        nxt = np.zeros(lines * LINE, np.int64)
        nxt[order * LINE] = np.roll(order, -1) * LINE  # element index of the next link
        d_next, pos, clk = cp.asarray(nxt), cp.asarray(order[:1] * LINE), cp.zeros(1, cp.int64)
        flush = cp.ones(2 * l2 // 4, cp.float32)  # 2× the L2 written after the upload: none of the chain stays cached
        flush *= 2
        del flush
        t = gc.measure(lambda: chase((1,), (1,), (d_next, np.int64(steps), pos, clk)), warmup=warmup, repeat=repeat,
                       clock="cuda")
        same_page = float(np.mean(order // PAGE_LINES == np.roll(order, -1) // PAGE_LINES))  # consecutive links
        return t.best / steps * 1e9, int(clk.get()[0]) / steps, same_page  # cycles: the last run's

    # lines: ≤ a quarter of the L2 (H100: 64 Ki lines, 8 MiB), and a power of two ≥ 8× the L2, ≥ 512 MiB and ≥ the
    # links the runs load (H100: 4 Mi lines, 512 MiB)
    small, big = gc.hardware.chase_lines(l2, (warmup + repeat) * steps)
    assert (warmup + repeat) * steps <= big  # the big chain: every timed load is a link no run has touched
    ns_l2, cyc_l2, page_l2 = chase_latency(small)
    ns, cyc, page = chase_latency(big)
    print(f"L2 = {l2 / 2**20:.0f} MiB; dependent loads, 1 thread, one link per 128-byte line, random order:")
    print(f"  through {small * 128 / 2**20:4.0f} MiB (fits in L2, chased again and again): {ns_l2:4.0f} ns = "
          f"{cyc_l2:4.0f} SM cycles per load")
    print(f"  through {big * 128 / 2**20:4.0f} MiB (every link loaded once: misses L2):  {ns:4.0f} ns = "
          f"{cyc:4.0f} SM cycles per load")
    print(f"  consecutive links on the same 2 MiB page: {page_l2:.1%} of them in the {small * 128 / 2**20:.0f} MiB "
          f"chain, {page:.2%} in the {big * 128 / 2**20:.0f} MiB one — its latency includes address translation "
          "(TLB misses) as well as the L2 miss")
    gc.record("§5 L2 load latency", ns_l2, "ns", note=f"{cyc_l2:.0f} cycles; pointer chase, 1 thread, "
              f"{small * 128 / 2**20:.0f} MiB")
    gc.record("§5 L2-miss load latency, TLB misses included", ns, "ns", note=f"{cyc:.0f} cycles; pointer chase, "
              f"1 thread, {big * 128 / 2**20:.0f} MiB in random order, no link revisited")
    assert 150 < ns < 2000 and cyc > 1.3 * cyc_l2  # an L2 miss costs well above an L2 hit (the source: 655 vs 265–475)
    assert page < 0.01 < page_l2  # the big chain leaves its page at nearly every link: TLB misses are in its number
    if "H100" in be.gpu.name:  # nearer the source's HBM figure (655 cycles) than its far-partition L2 hit (475)
        table = gc.hardware.H100_LATENCY_CYCLES
        assert cyc > (table["L2 hit (far)"] + table["HBM (L2 miss)"]) / 2, (cyc, table)

# %% [markdown]
# A toy model makes the switching visible.
# Each warp computes for `c` cycles (the last instruction a load), then waits `L` cycles for it.
# An H100 SM does not issue from one pool of warps:
# it has **4 warp schedulers**, one per sub-partition,
# each issuing at most one instruction per cycle and only from *its own* warps
# (warp `w` lives on scheduler `w % 4`).
# So one warp keeps one scheduler busy `c/(c+L)` of the time — a quarter of the SM's issue slots:
# the SM is busy `c/(4(c+L))`, not `c/(c+L)`.
# Filling every slot takes `ceil((c+L)/c)` warps *per scheduler*, 4× that per SM.
# `gc.occupancy.sm_busy` simulates the four schedulers,
# each issue slot accounted for (greedy-then-oldest:
# a scheduler keeps issuing from one warp until it stalls,
# then takes the warp that has waited longest); the closed form must match it.

# %%
c, L = 40, cycles
W = np.arange(1, 81)
simulated = np.array([occupancy.sm_busy(int(w), c, L) for w in W])
model = np.array([occupancy.sm_busy_model(int(w), c, L) for w in W])
one_pool = np.minimum(1, W * c / (c + L))  # the old model: every warp issuing from one pool
need = 4 * math.ceil((c + L) / c)
ax = gc.plotting.axes("resident warps per SM [warps]", "SM issue slots used [%]",
                      f"latency hiding: {c} cycles of work per {L}-cycle load")
ax.plot(W, 100 * simulated, label="4 schedulers, simulated")
ax.plot(W, 100 * model, ls="--", label="4 schedulers: mean of min(1, k·c/(c+L))")
ax.plot(W, 100 * one_pool, ls=":", label="one pool of warps (wrong)")
ax.axvline(64, color=gc.plotting.PALETTE[3], lw=1, label="64 warps: a full SM")
ax.legend()
plt.show()
print(f"1 warp: {simulated[0]:.1%} of the SM's issue slots (one pool would say {one_pool[0]:.1%})")
print(f"all slots busy from {need} warps = 4 × ceil((c+L)/c) (one pool would say {math.ceil((c + L) / c)}); "
      f"at 64 warps: {simulated[63]:.0%}")
assert np.allclose(simulated, model, atol=1e-9)
assert simulated[0] == c / (4 * (c + L)) and simulated[need - 1] == 1.0 > simulated[need - 2]
assert need > 64 and simulated[63] < 1  # at this ratio even a full SM cannot hide the latency with one load per warp

# %% [markdown]
# With 40 cycles of work per load and HBM's ~655-cycle latency,
# the SM would need 72 warps — more than the 64 it can hold
# — to hide the latency with one load in flight per warp;
# at 64 it uses the fraction of its slots printed above.
# Both ways out are the ones Little's law pointed to:
# more independent work per load (a larger `c`),
# or several loads in flight per warp before the first one is needed.

# %% [markdown]
# ## 5.5 Warp divergence: both paths, one after the other
#
# Article 000 (C16): when a warp's threads disagree at an `if`,
# the warp runs the `if` path with the other lanes masked off,
# then the `else` path — "about 2× the time, half the utilization".
# The executor shows it lane by lane: **SIMT efficiency** = active lanes per issued warp step / 32.

# %%
@cuda.jit
def branchy(x, out, mode, reps):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        cond = i % 2 if mode == 0 else (i // 32) % 2  # mode 0: split inside warps; mode 1: whole warps agree
        if cond == 0:
            for _ in range(reps):
                v = v * 0.999 + 0.5
        else:
            for _ in range(reps):
                v = v * 0.998 - 0.25
        out[i] = v


x = np.linspace(-1, 1, 256)
res = {}
for mode, name in ((0, "divergent (i % 2)"), (1, "warp-uniform (i // 32 % 2)")):
    o = np.zeros_like(x)
    res[name] = simt.run(branchy, 4, 64, x, o, mode, 8)
    res[name].out = o
    print(f"{name:28} SIMT efficiency {res[name].simt_efficiency:5.1%}, {res[name].issued_steps} warp steps, "
          f"{res[name].divergent_steps} divergent")
div, uni = res.values()
for mode, r in enumerate((div, uni)):  # check each against NumPy: same maths, vectorised
    idx = np.arange(x.size)
    take_if = (idx % 2 if mode == 0 else (idx // 32) % 2) == 0
    a_path, b_path = x.copy(), x.copy()
    for _ in range(8):
        a_path, b_path = a_path * 0.999 + 0.5, b_path * 0.998 - 0.25
    assert np.allclose(r.out, np.where(take_if, a_path, b_path))
ratio = div.issued_steps / uni.issued_steps
print(f"divergent / uniform warp steps: {ratio:.2f}×")
assert 1.7 < ratio < 2.0 and div.simt_efficiency < 0.6 < 0.95 < uni.simt_efficiency

# %% [markdown]
# Below article 000's 2× here (the ratio is printed),
# because the two paths are equally long but do not make up the whole kernel:
# the index, the guard, the load and the store run once, on every lane, divergent or not.
# In general the divergent warp pays the *sum* of the paths instead of the longest one.
# The cost depends on the shape:

# %%
# NBVAL_CHECK_OUTPUT
def divergence_cost(paths, common=4):
    """Warp steps when all `paths` (their lengths) occur in one warp, relative to a warp that takes the longest only."""
    return (common + sum(paths)) / (common + max(paths))


for paths in ([8, 8], [8, 1], [1, 8, 0, 0], [8, 8, 8, 8], [8] * 32):
    print(f"paths {str(paths[:4]) + ('…' if len(paths) > 4 else ''):16} → {divergence_cost(paths):5.2f}× the uniform time")
# Expected output:
# paths [8, 8]           →  1.67× the uniform time
# paths [8, 1]           →  1.08× the uniform time
# paths [1, 8, 0, 0]     →  1.08× the uniform time
# paths [8, 8, 8, 8]     →  3.00× the uniform time
# paths [8, 8, 8, 8]…    → 21.67× the uniform time

# %%
fig, axs = plt.subplots(1, 2, figsize=(12, 3.4))
for ax, (name, r) in zip(axs, res.items()):
    gc.plotting.axes("warp [index]", "SIMT efficiency [%]", name, ax=ax)
    ax.bar(range(len(r.warps)), [100 * w.efficiency for w in r.warps], color=gc.plotting.PALETTE[0])
    ax.set_ylim(0, 105)
plt.tight_layout()
plt.show()

# %% [markdown]
# Does a real GPU run both paths one after the other,
# or could the compiler turn the `if`/`else` into branch-free selects (predication),
# which would cost no divergence at all?
# The PTX numba-cuda generates for `branchy` on Hopper (compute capability 9.0,
# compiled here with no GPU) shows each path as a loop of `fma` instructions with its own constant,
# and a conditional branch (`@%p bra`) picking one
# — a loop whose trip count is only known at run time cannot be predicated away.
# PTX is not yet machine code, so the cell also assembles that PTX with `ptxas` to sm_90 SASS:
# the two loops are still there (`DFMA` with +0.5 and −0.25),
# behind predicated branches (`@P0 BRA`),
# inside a `BSSY`/`BSYNC` pair where the warp's lanes reconverge — no `FSEL` selects.
# (Lab 5's machine-code cell shows the same for its divergent loop.)

# %%
if "nvvm" in " ".join(gc.toolchain.missing()).lower():
    print("[toolchain] skipped: numba-cuda needs NVIDIA's nvvm wheel to generate PTX:", gc.toolchain.missing())
else:
    ptx = gc.toolchain.numba_ptx(branchy, "void(float64[::1], float64[::1], int64, int64)")
    body = ptx[ptx.index("{", ptx.index(".entry")):]
    fmas = [ln.split()[-1].rstrip(";") for ln in body.splitlines() if "fma.rn.f64" in ln]
    branches = [ln.strip() for ln in body.splitlines() if re.match(r"\s*@%p\d+ bra", ln)]
    consts = sorted({struct.unpack(">d", bytes.fromhex(c[2:]))[0] for c in fmas})  # PTX 0d… = IEEE-754 bits
    print(f"{len(branches)} conditional branches; fma loops adding {consts}: the two paths' + 0.5 and - 0.25")
    print("\n".join(ln.strip() for ln in body.splitlines() if re.search(r"fma.rn.f64|@%p\d+ bra|^\$L__BB", ln.strip()))[:900])
    assert consts == [-0.25, 0.5] and len(branches) >= 2  # two separate loops, chosen by a branch: no predication
    sass = gc.toolchain.sass_of_ptx(ptx, arch="sm_90")  # the machine code: ptxas could still have predicated it
    listing = sass.excerpt(("BRA", "BSSY", "BSYNC", "DFMA", "FSEL"), limit=500)
    sass_consts = sorted({float(c) for c in re.findall(r"DFMA R\d+, R\d+, R\d+, (-?[\d.]+)", listing)})
    cond_bra = len(re.findall(r"@!?P\d+ BRA", listing))
    print(f"SASS (sm_90): DFMA constants {sass_consts}, {cond_bra} predicated BRA, {sass.count('BSSY')} BSSY / "
          f"{sass.count('BSYNC')} BSYNC, {sass.count('FSEL')} FSEL")
    assert sass_consts == [-0.25, 0.5] and cond_bra >= 2 and sass.count("BSSY") >= 1 and sass.count("FSEL") == 0

# %% [markdown]
# On a GPU the same kernel is timed with CUDA events (`reps` large so the branches dominate);
# the cell asserts the divergent kernel at least 1.3× the uniform one
# — what the cell checks when run on a GPU, not a reported result:
# no GPU run of this course is recorded yet (`course/gpu_runs/`).

# %%
if gc.require_gpu("time the divergent and the warp-uniform kernel with CUDA events"):
    n_big = 1 << 22
    xd = be.xp.linspace(-1, 1, n_big)
    od = be.xp.zeros_like(xd)
    # numba-cuda device arrays, made once: handed CuPy arrays, every launch would sync CuPy's stream inside the timed
    # interval (§5.6 says more)
    xd, od = cuda.as_cuda_array(xd, sync=False), cuda.as_cuda_array(od, sync=False)
    grid_big = n_big // 256
    t_div = gc.measure(lambda: branchy[grid_big, 256](xd, od, 0, 2000), clock="cuda", repeat=5)
    t_uni = gc.measure(lambda: branchy[grid_big, 256](xd, od, 1, 2000), clock="cuda", repeat=5)
    print(f"divergent {t_div}\nuniform   {t_uni}\nratio {t_div.median / t_uni.median:.2f}×")
    gc.record("§5 divergent / warp-uniform time", t_div.median / t_uni.median, "×", note="branchy, reps = 2000")
    assert t_div.median > 1.3 * t_uni.median

# %% [markdown]
# ## 5.6 Coalescing: neighbouring threads, neighbouring addresses
#
# Global memory is served in 32-byte sectors.
# When the 32 lanes of a warp read 32 consecutive float32s,
# the request touches 4 sectors (128 bytes, all used).
# When consecutive lanes read down a column of a row-major matrix,
# every lane hits a different sector: 32 sectors to deliver 128 useful bytes.
# These are the sectors one warp-wide request asks of L1/L2, not the bytes DRAM moves:
# with (32, 32) blocks, the next warp of the block reads the neighbouring column of the same 32 rows
# — the same sectors — so the caches serve much of the 8× and DRAM moves far fewer extra bytes.
# The GPU timing below therefore asserts a 2× slowdown,
# not 8× — what the cell checks when run on a GPU, not a reported result:
# no GPU run of this course is recorded yet (`course/gpu_runs/`).
#
# The copy below works on the matrix's memory as it lies:
# one flat array, element `(r, c)` at offset `r · cols + c`.
# With x → column, neighbouring lanes read neighbouring offsets;
# with x → row, they read offsets `cols` elements (`4 · cols` bytes) apart.

# %%
@cuda.jit
def copy_rows(a, out, cols, x_is_row):
    x, y = cuda.grid(2)
    r, c = (x, y) if x_is_row else (y, x)
    k = r * cols + c  # the element's offset in a row-major matrix of `cols` columns, stored flat
    if c < cols and k < a.size:
        out[k] = a[k]


mat = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
flat = mat.ravel()  # the matrix's memory: row after row
sectors = {}
for flag, name in ((0, "x → column (coalesced)"), (1, "x → row (strided)")):
    o = np.zeros_like(flat)
    r = simt.run(copy_rows, (2, 2), (32, 32), flat, o, mat.shape[1], flag)
    assert np.array_equal(o, flat)
    sectors[name] = r.sectors_per_request("a")
    print(f"{name:24} {sectors[name]:5.1f} sectors per warp request (L1/L2) = {128 / (32 * sectors[name]):5.1%} of the "
          "requested bytes used")
ax = gc.plotting.axes("mapping [-]", "sectors per warp request [sectors]", "copy_rows: 32 float32 per warp")
ax.bar(list(sectors), list(sectors.values()), color=gc.plotting.PALETTE[:2])
plt.show()
good, bad = sectors.values()
assert good == 4 and bad == 32 and 128 / (32 * bad) == 0.125  # 12.5 % of each strided request's bytes used

# %%
if gc.require_gpu("measure the bandwidth of the coalesced and the strided copy with CUDA events"):
    # random data, as §0 and §1 time theirs: constant data (`ones`) draws less power (L2 compression needs a
    # compressible allocation, which CuPy's cudaMalloc'd arrays are not)
    big = be.xp.asarray(np.random.default_rng(5).standard_normal((4096, 4096), dtype=np.float32))
    assert float(big.std()) > 0.9  # not constant
    ob = be.xp.zeros_like(big)
    grid_b = (4096 // 32, 4096 // 32)
    big, ob = big.ravel(), ob.ravel()  # contiguous: views of the same memory
    # numba-cuda device arrays over the same memory, made once: handed CuPy arrays, every launch would import them
    # through the CUDA Array Interface and synchronise CuPy's stream first (NUMBA_CUDA_ARRAY_INTERFACE_SYNC), leaving
    # the GPU idle during the next launch — inside the timed interval
    big, ob = cuda.as_cuda_array(big, sync=False), cuda.as_cuda_array(ob, sync=False)
    t_good = gc.measure(lambda: copy_rows[grid_b, (32, 32)](big, ob, 4096, 0), clock="cuda", repeat=5)
    t_bad = gc.measure(lambda: copy_rows[grid_b, (32, 32)](big, ob, 4096, 1), clock="cuda", repeat=5)
    for name, t in (("coalesced", t_good), ("strided", t_bad)):
        print(f"{name:10} {2 * big.nbytes / t.median / 1e9:7.0f} GB/s ({t})")  # read + write, bytes each
        gc.record(f"§5 {name} copy bandwidth", 2 * big.nbytes / t.median / 1e9, "GB/s", note="copy_rows, 4096², float32")
    assert t_bad.median > 2 * t_good.median

# %% [markdown]
# ## 5.7 Shared-memory tiling — and the race it invites
#
# A naive matmul thread reads a row of A and a column of B: `2k` global reads per output.
# A tiled kernel loads a TILE×TILE piece of each into shared memory, synchronises,
# and lets all TILE² threads of the block reuse it: `2·ceil(k/TILE)` reads per thread.
# Article 002's "repeatedly modified data lives in SMEM" is exactly this.
# The accumulators and the zero padding are `np.float32(0.0)`, not `0.0`:
# numba types a bare `0.0` as float64,
# so `acc = 0.0` would turn each float32 product into a multiply,
# a conversion and a float64 add (FP64 runs at half the FP32 rate on an H100 SXM,
# a small fraction of it on consumer GPUs).
# Lab 5's machine-code cell shows that trap in the SASS.

# %%
TILE = 8


@cuda.jit
def matmul_naive(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = np.float32(0.0)  # a bare 0.0 is a float64 in numba: every product would be widened and added in FP64
        for p in range(A.shape[1]):
            acc += A[row, p] * B[p, col]
        C[row, col] = acc


@cuda.jit
def matmul_tiled(A, B, C, barriers):
    sA = cuda.shared.array((TILE, TILE), np.float32)
    sB = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k = A.shape
    acc = np.float32(0.0)
    for t in range((k + TILE - 1) // TILE):
        p = t * TILE
        sA[ty, tx] = A[row, p + tx] if row < m and p + tx < k else np.float32(0.0)
        sB[ty, tx] = B[p + ty, col] if p + ty < k and col < B.shape[1] else np.float32(0.0)
        if barriers:
            cuda.syncthreads()  # tiles complete before anyone reads them
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        if barriers:
            cuda.syncthreads()  # nobody overwrites a tile someone is still reading
    if row < m and col < B.shape[1]:
        C[row, col] = acc


rng = np.random.default_rng(0)
reads = {"naive": [], "tiled": []}
ks = [8, 20, 36]
for k in ks:
    A = rng.standard_normal((10, k)).astype(np.float32)
    B = rng.standard_normal((k, 9)).astype(np.float32)
    grid2 = (math.ceil(9 / TILE), math.ceil(10 / TILE))
    for name, kern, extra in (("naive", matmul_naive, ()), ("tiled", matmul_tiled, (1,))):
        C = np.zeros((10, 9), np.float32)
        r = simt.run(kern, grid2, (TILE, TILE), A, B, C, *extra)
        assert np.allclose(C, A @ B, atol=1e-4) and r.race_count == 0
        reads[name].append(r.per_thread("global")["max_reads"])
    print(f"k = {k:3}: global reads per thread: naive {reads['naive'][-1]:3}, tiled {reads['tiled'][-1]:3}")
assert reads["naive"] == [2 * k for k in ks] and reads["tiled"] == [2 * math.ceil(k / TILE) for k in ks]
ax = gc.plotting.axes("k [elements]", "global reads per thread [reads]", f"matmul: naive vs {TILE}×{TILE} tiles")
for name in reads:
    ax.plot(ks, reads[name], marker="o", label=name)
ax.legend()
plt.show()

# %% [markdown]
# Drop the barriers and the kernel is wrong — but on a real GPU it can be wrong only *sometimes*,
# depending on how warps happen to be scheduled.
# The executor runs threads in a fixed order between barriers and checks every shared-memory access
# against the others of the same phase, so the race is reported every time, on every machine:

# %%
A = rng.standard_normal((10, 20)).astype(np.float32)
B = rng.standard_normal((20, 9)).astype(np.float32)
C = np.zeros((10, 9), np.float32)
racy = simt.run(matmul_tiled, (2, 2), (TILE, TILE), A, B, C, 0)
print(racy.summary())
for race in racy.races[:3]:
    print(" ", race)
assert racy.race_count > 0 and racy.races[0].space == "shared" and not np.allclose(C, A @ B, atol=1e-3)
C_dev = be.to_device(np.zeros((10, 9), np.float32))
matmul_tiled[(2, 2), (TILE, TILE)](be.to_device(A), be.to_device(B), C_dev, 1)  # with barriers, on the backend
be.sync()
assert np.allclose(be.to_host(C_dev), A @ B, atol=1e-4)

# %% [markdown]
# ## Claims check
#
# | ID | claim (article) | verdict |
# |---|---|---|
# | C13 | an H100 SM has a 256 KB register file; per-thread registers make warp switches nearly free (000) | **qualified** ([why](#Claim-C13)) |
# | C14 | a warp is 32 threads executing the same instruction (000, 002) | **qualified** ([why](#Claim-C14)) |
# | C15 | a waiting warp is replaced by another with no context-switch cost (000) | **confirmed** / **qualified** ([why](#Claim-C15)) |
# | C16 | a divergent if/else runs both paths in turn: about 2× time, half the utilization (000) | **qualified** ([why](#Claim-C16)) |
# | C30 | a block has ~100–500 threads; each SM runs 1–4 warps at once (002) | **qualified** ([why](#Claim-C30)) |
# | C31 | blocks of a kernel are independent and spread over the SMs (002) | **confirmed** ([why](#Claim-C31)) |
# | C32 | each SM has its own registers, shared memory, read-only memory and L1; L2 and global memory are shared (002) | **confirmed** ([why](#Claim-C32)) |
#
# **Next:** the lab, `labs/lab05_kernels/lab05_kernels.ipynb` — guard, index, reduce, tile,
# budget registers for an occupancy target with this section's model, and fix a divergent kernel,
# the kernels graded by the instrumented executor.
#
# ### Each claim: the verdict's reasons and the evidence
#
# #### Claim C13
#
# **qualified**: true by the datasheet (a stated figure, not measured here),
# with the occupancy trade-off.
#
# *Evidence.*
# Hopper whitepaper / CUDA Programming Guide (cc 9.0):
# 65,536 × 32-bit registers = 256 KB per SM (§5.3: the datasheet's figure, not measured here;
# checked against the device's `regsPerMultiprocessor` on an H100),
# split into 4 sub-partitions of 16,384, one per warp scheduler;
# each resident thread keeps its registers, so switching saves/restores nothing.
# §5.3 adds the cost the source article omits:
# registers are partitioned among resident warps *per sub-partition*,
# so 64 registers/thread halve the resident warps (50 %), 128 quarter them,
# 32 threads × 81 registers fit 20 blocks (not 23),
# and 257 × 200 cannot launch — NVIDIA's `cuda_occupancy.h`, compiled in §5.3,
# agrees on every configuration tried.
#
# #### Claim C14
#
# **qualified**.
#
# *Evidence.* Warp size 32 on every NVIDIA GPU (CUDA Programming Guide;
# read from the device on a GPU); the executor groups 32 consecutive threads per warp and §5.5 shows
# lanes of one warp masked off when they disagree.
# Since Volta each thread has its own program counter (independent thread scheduling),
# so "same instruction" holds per issued step, not for the warp's whole life.
#
# #### Claim C15
#
# **confirmed** (free switch) / **qualified** (needs 4× the warps a one-pool model says,
# and memory-level parallelism).
#
# *Evidence.*
# §5.4: the switch is free (registers stay put),
# but each of an SM's 4 schedulers switches only among its own warps:
# one warp keeps c/(4(c+L)) of the SM's issue slots busy,
# and filling them takes 4 × ceil((c+L)/c) warps
# — 72 for 40 cycles of work per ~655-cycle HBM load (measured on an H100 PCIe, `gpu-benches`),
# more than the 64 an SM holds; Little's law asks for at least ~74 warp-wide loads in flight per SM
# at 3.35 TB/s (computed from the published latency and the datasheet, not measured; a lower bound:
# the unloaded latency, which queueing at full bandwidth raises).
# Switching hides latency only with enough warps on every scheduler *and* several loads in flight
# per warp.
#
# #### Claim C16
#
# **qualified**: 2× only for two equal, dominant paths.
#
# *Evidence.*
# §5.5, instrumented: with two equal 8-iteration paths the divergent/uniform warp-step ratio and
# SIMT efficiencies are printed there (the ratio asserted between 1.7× and 2.0×);
# the sm_90 PTX, and the SASS `ptxas` makes of it,
# keep the two paths as two loops behind conditional branches, not predicated selects;
# in general the warp pays the *sum* of the paths:
# 1.08× for an 8-vs-1 split, 3× for four paths, up to ~22× for 32;
# on a GPU timed with CUDA events (asserted > 1.3×).
#
# #### Claim C30
#
# **qualified**: 1–4 is the issue rate (one warp per scheduler per cycle),
# not the number of resident warps.
#
# *Evidence.*
# CUDA: 1–1024 threads per block, multiples of 32 recommended
# (a 100-thread block wastes 28 lanes of its last warp);
# an H100 SM holds up to 64 warps (2048 threads), 16 per sub-partition,
# and its 4 schedulers each issue one warp instruction per cycle, from their own warps (§5.3, §5.4).
#
# #### Claim C31
#
# **confirmed**.
#
# *Evidence.*
# CUDA guarantees no order between blocks; §5.3 runs blocks backwards with identical results;
# on a GPU the `%smid` readout of §5.1 lists the SMs that ran them.
#
# #### Claim C32
#
# **confirmed** (on Hopper, thread-block clusters can also read other SMs' shared memory:
# distributed shared memory).
#
# *Evidence.*
# Hopper whitepaper: per SM 256 KB registers, 256 KB combined L1/shared (up to 228 KB shared),
# plus constant/texture caches; 50 MB L2 and HBM shared by all 132 SMs (§5.3).
