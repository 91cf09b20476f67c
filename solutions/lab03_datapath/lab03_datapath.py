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
# # Lab 3 — CPU SIMD vs GPU SIMT, and how data reaches the GPU
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab03_datapath/lab03_datapath.ipynb)
#
# Companion of `course/03_simd_simt_datapath.ipynb`.
# Six exercises, 3 points each (a visible test worth 1, a hidden one worth 2):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | design | which steps of a pipeline run on the GPU, copies included, and the total time |
# | 2 | predict | the slowest link at which offloading starts to pay — or that none does |
# | 3 | implement | chunked processing of an array larger than device memory, within a memory budget |
# | 4 | design | the thread-to-data layout whose warps issue the fewest instructions, its count and lane utilization |
# | 5 | implement | a vectorized four-region loss (Tukey's biweight, a cutoff per side) and its gradient, without a Python loop |
# | 6 | diagnose | latency and bandwidth of a transfer path from noisy, interrupted runs, and the copy size they imply |
#
# **How this lab works.**
# Each exercise prints its spec (`.show()`),
# gives you a stub that says roughly how many lines the answer takes, then checks your function:
# the visible test runs fixed cases and tells you what it expected and what it got;
# a hidden test runs randomized cases when your lab is graded.
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** (nbgrader's toolbar button) before you submit.
#
# Conventions: a processor is a dict `{"flops": FLOP/s, "bandwidth":
# bytes/s}` and runs work in its roofline time `max(flops / proc["flops"],
# bytes / proc["bandwidth"])`; a link is a dict `{"bandwidth": bytes/s, "latency":
# s}` and a copy of `b` bytes over it takes `latency + b / bandwidth`.

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
import numpy as np

import gpucourse as gc
from gpucourse import devmem
from grader.labs import lab03_datapath as lab

be = gc.setup()

# %% [markdown] nbgrader={"grade": false, "grade_id": "place_pipeline_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — Which steps run on the GPU?
#
# [Article 002](../../course/00_overview.ipynb#Sources-and-claims-checks)'s program is `load →
# to_gpu → process → to_cpu → print`,
# and its "complicated case" has a processing step that needs the CPU in the middle.
# The GPU's steps may be 50× faster than the CPU's,
# but every crossing of PCIe costs a copy of the whole array,
# far slower than the GPU's HBM (63 GB/s per direction for PCIe 5.0 ×16 against 3.35 TB/s) and only
# comparable to a desktop CPU's DDR5 (two channels: 90 GB/s).
# The course's model (`gc.datapath.offload_times`) prices *one* offload with its two copies;
# in a pipeline, a run of GPU steps shares one copy in and one copy out.
# Find the best placement of every step.

# %% nbgrader={"grade": false, "grade_id": "place_pipeline_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["place_pipeline"].show()

# %% nbgrader={"grade": false, "grade_id": "place_pipeline", "locked": false, "schema_version": 3, "solution": true, "task": false}
def place_pipeline(steps, nbytes, cpu, gpu, link):
    """(total seconds of the best placement, its list of 'cpu'/'gpu' per step)."""
    # roughly 12 lines (itertools.product lists every placement the gpu_ok flags allow)
    ### BEGIN SOLUTION
    import itertools

    copy = link["latency"] + nbytes / link["bandwidth"]

    def seconds(placement):
        total, side = 0.0, "cpu"  # the array starts in host memory ...
        for step, place in zip(steps, placement):
            proc = gpu if place == "gpu" else cpu
            total += (copy if place != side else 0.0) + max(step["flops"] / proc["flops"], step["bytes"] / proc["bandwidth"])
            side = place
        return total + (copy if side == "gpu" else 0.0)  # ... and must end there

    choices = [("cpu", "gpu") if step["gpu_ok"] else ("cpu",) for step in steps]
    best = min(itertools.product(*choices), key=seconds)
    return seconds(best), list(best)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "place_pipeline_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["place_pipeline"].check(place_pipeline)

# %% nbgrader={"grade": true, "grade_id": "place_pipeline_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["place_pipeline"].check(place_pipeline, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "min_link_bandwidth_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — How fast must the link be?
#
# Whether offloading pays depends on the link:
# a vector add never pays over PCIe from a desktop (its DDR5 is faster than PCIe, course §3.7),
# a big matrix multiply pays over almost anything.
# Turn the question around: for one workload, CPU and GPU,
# what is the slowest link bandwidth at which offloading (both copies included) beats the CPU?
# The copies' latencies do not shrink with bandwidth:
# if they and the GPU's own work already take the CPU's time, no link is fast enough.
#
# Ties: "pays" means strictly faster,
# so when the latencies plus the GPU's work take *exactly* the CPU's time the answer is `None`.

# %% nbgrader={"grade": false, "grade_id": "min_link_bandwidth_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_link_bandwidth"].show()

# %% nbgrader={"grade": false, "grade_id": "min_link_bandwidth", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    """The bandwidth B* [bytes/s] above which offloading beats the CPU, or None if no link is fast enough."""
    # roughly 5 lines
    ### BEGIN SOLUTION
    moved = bytes_in + bytes_out
    on_cpu = max(flops / cpu["flops"], moved / cpu["bandwidth"])
    on_gpu = max(flops / gpu["flops"], moved / gpu["bandwidth"])
    left_for_copies = on_cpu - on_gpu - 2 * latency  # what the copies' bytes / B may take at most
    return moved / left_for_copies if left_for_copies > 0 else None
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "min_link_bandwidth_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["min_link_bandwidth"].check(min_link_bandwidth)

# %% nbgrader={"grade": true, "grade_id": "min_link_bandwidth_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["min_link_bandwidth"].check(min_link_bandwidth, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "chunked_map_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — Bigger than device memory
#
# A GPU does not page its memory out to disk:
# an array larger than device memory raises an out-of-memory error
# (`mem.to_device(x)` on the whole array raises it).
# The cure is to stream: copy a chunk in, process it, copy the result out, free, repeat.
# `gpucourse.devmem.DeviceMemory` tracks every allocation on a budget;
# the checker reads its peak and its copy counters.
# Any design that stays within the budget passes:
# one chunk at a time as large as fits,
# or double buffering (the next chunk copied in while the current one is processed,
# course §3.8 and §4.7), which needs room for both.

# %% nbgrader={"grade": false, "grade_id": "chunked_map_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["chunked_map"].show()

# %% nbgrader={"grade": false, "grade_id": "chunked_map", "locked": false, "schema_version": 3, "solution": true, "task": false}
def chunked_map(x, mem, fn, copies):
    """fn(x) computed chunk by chunk on `mem`, never holding more than mem.budget bytes; returns a NumPy array."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    out = np.empty_like(x)
    chunk = mem.budget // (copies * x.itemsize)  # the largest chunk whose working set fits
    for start in range(0, x.size, chunk):
        d = mem.to_device(x[start:start + chunk])
        r = fn(d)
        out[start:start + chunk] = mem.to_host(r)
        del d, r  # free before the next chunk is copied in
    return out
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "chunked_map_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["chunked_map"].check(chunked_map)

# %% nbgrader={"grade": true, "grade_id": "chunked_map_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["chunked_map"].check(chunked_map, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "warp_layout_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — SIMT: lay the data out so that warps agree
#
# A warp is 32 threads that share one instruction stream.
# When its threads disagree on a branch, the warp runs both paths one after the other,
# masking off the lanes that did not take the path being run (course §3.3).
# You cannot change which items need which path, but you choose which thread processes which item:
# find the layout whose warps issue the fewest instructions, count them,
# and give the fraction of lane slots doing useful work.
# (`gpucourse.simt` runs a kernel warp by warp and counts what a layout issues;
# it does not choose the layout.)

# %% nbgrader={"grade": false, "grade_id": "warp_layout_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["warp_layout"].show()

# %% nbgrader={"grade": false, "grade_id": "warp_layout", "locked": false, "schema_version": 3, "solution": true, "task": false}
def warp_layout(cond, cost_if, cost_else):
    """(order: thread t processes item order[t], instructions issued by all warps, lane utilization): the order
    whose warps issue the fewest instructions for `if cond[item]: ... else: ...`."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    cond = np.asarray(cond, dtype=bool)

    def issued(order):  # per warp: each path once if any of its lanes takes it
        total = 0
        for start in range(0, len(order), 32):
            lanes = cond[order[start:start + 32]]
            total += cost_if * int(lanes.any()) + cost_else * int(not lanes.all())
        return total

    # group each path's items into whole warps; the partial last warp holds the leftovers of one path or the other
    candidates = [np.argsort(~cond, kind="stable"), np.argsort(cond, kind="stable")]
    order = min(candidates, key=issued)
    useful = cost_if * int(cond.sum()) + cost_else * int((~cond).sum())
    return order, issued(order), useful / (32 * issued(order))
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "warp_layout_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["warp_layout"].check(warp_layout)

# %% nbgrader={"grade": true, "grade_id": "warp_layout_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["warp_layout"].check(warp_layout, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "asym_tukey_vectorized_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — Vectorize a branchy loss and its gradient
#
# `lab.huber_loop` (print it with `import inspect;
# print(inspect.getsource(lab.huber_loop))`) shows the shape of the problem:
# one Python iteration per element, with a branch.
# Your loss is another one, Tukey's biweight, a robust loss: a residual beyond a cutoff stops pulling
# on the fit. It has a cutoff of its own on each side, so four regions,
# and you return its gradient too (what a training step needs).
# Write it as whole-array operations:
# every branch is computed for every element and a mask picks one
# — what a SIMD unit does with a branch, and what a divergent warp pays for one
# (a warp whose lanes all agree skips the other path; §3.3).
# The checker counts the Python lines your function executes and reports the speed-up.

# %% nbgrader={"grade": false, "grade_id": "asym_tukey_vectorized_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["asym_tukey_vectorized"].show()

# %% nbgrader={"grade": false, "grade_id": "asym_tukey_vectorized", "locked": false, "schema_version": 3, "solution": true, "task": false}
def asym_tukey_vectorized(pred, target, lo, hi):
    """(loss, d loss / d pred) of Tukey's biweight on pred - target, cutoff hi above 0 and lo below, without a
    Python loop."""
    # roughly 7 lines
    ### BEGIN SOLUTION
    r = pred - target
    c = np.where(r >= 0, hi, lo).astype(r.dtype)  # each residual's own cutoff
    w = 1 - (r / c) ** 2
    inside = np.abs(r) <= c
    flat = c * c / 6  # the loss beyond the cutoff
    loss = np.where(inside, flat * (1 - w * w * w), flat)  # w * w * w: NumPy's w**3 calls pow per element, far slower
    grad = np.where(inside, r * w * w, 0)  # an outlier stops pulling
    return loss, grad
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "asym_tukey_vectorized_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["asym_tukey_vectorized"].check(asym_tukey_vectorized)

# %% nbgrader={"grade": true, "grade_id": "asym_tukey_vectorized_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["asym_tukey_vectorized"].check(asym_tukey_vectorized, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "transfer_plan_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 6 — Diagnose a transfer path from measurements, then size a copy
#
# A copy costs a fixed latency plus bytes over bandwidth.
# Small copies measure the latency, large ones the bandwidth — a single point measures neither.
# Fit both from a series of measurements (the kind `gc.datapath.measure_h2d` produces on a GPU),
# then use the model: how large must a copy be to reach a given fraction of the link's bandwidth?
# Real timings wobble by a *fraction* of themselves:
# a 100 ms copy is off by milliseconds, a 10 µs one by a fraction of a microsecond,
# and a fit that weighs every point's error in seconds alike is steered by the largest copies.
# And on a busy machine some runs are interrupted:
# such a run is slower, never faster
# (course §3.7 takes the best of several runs for the same reason).
# You are graded against the latency and bandwidth the measurements were generated from,
# and the size they imply.

# %% nbgrader={"grade": false, "grade_id": "transfer_plan_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["transfer_plan"].show()

# %% nbgrader={"grade": false, "grade_id": "transfer_plan", "locked": false, "schema_version": 3, "solution": true, "task": false}
def transfer_plan(sizes, seconds, fraction):
    """(latency [s], bandwidth [bytes/s], smallest size [bytes] reaching `fraction` of the bandwidth), from the
    runs seconds[i, j] of copies of sizes[i] bytes."""
    # roughly 5 lines
    ### BEGIN SOLUTION
    best = np.asarray(seconds).min(axis=1)  # interruptions only ever slow a run down: keep each size's best
    # least squares on the *relative* errors: each residual divided by its own time (np.polyfit's w multiplies it)
    slope, latency = np.polyfit(sizes, best, 1, w=1.0 / best)
    bandwidth = 1.0 / slope
    # size / (latency + size / bandwidth) = fraction · bandwidth  ⇔  size · (1 − fraction) = fraction · latency · bandwidth
    return latency, bandwidth, fraction * latency * bandwidth / (1.0 - fraction)
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "transfer_plan_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["transfer_plan"].check(transfer_plan)

# %% nbgrader={"grade": true, "grade_id": "transfer_plan_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["transfer_plan"].check(transfer_plan, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test should print a ✓ line.
# The hidden tests use other sizes, machines, dtypes and branch patterns:
# an answer that only handles the examples will lose those points.
