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
# # Lab 4 — The command queue, launch overhead and streams
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gpu-course/gpu-course/blob/main/labs/lab04_streams/lab04_streams.ipynb)
#
# Companion of `course/04_queues_streams.ipynb`.
# Five exercises, 3 points each (a visible test worth 1, a hidden one worth 2):
#
# | # | kind | you write |
# |---|---|---|
# | 1 | predict (inverse) | how long one kernel of a multi-stream schedule with events may run before the schedule misses its deadline ([article 002](../../course/00_overview.ipynb#Sources-and-claims-checks)'s Stream 1/2/3 example) |
# | 2 | implement | streams and events for a graph of copies and kernels: correct, and overlapped as far as the data allows |
# | 3 | diagnose | a fixed version of a broken timing snippet (asynchronous dispatch, compile time, load, a coarse clock) |
# | 4 | predict (inverse) | how many tiny launches make launch overhead dominate, for splits too large to simulate |
# | 5 | design | a chunked copy/compute pipeline over several streams, with the fewest chunks that meet a deadline |
#
# **How this lab works.**
# Each exercise prints its spec (`.show()`),
# gives you a stub that says roughly how many lines the answer takes, then checks your function:
# the visible test runs fixed cases and tells you what it expected and what it got;
# a hidden test runs randomized cases when your lab is graded.
# Replace `raise NotImplementedError()` with your code.
# Use **Validate** (nbgrader's toolbar button) before you submit.
#
# Schedules are judged by the course's stream/engine model, `gc.streams.simulate` (times in µs):
# ops of one stream run in order; ops of different streams run concurrently when the GPU has room;
# `waits` are events; streams are spread over 8 hardware queues (CUDA's default).
# `gc.streams.happens_before` and `gc.streams.races` tell you what your schedule guarantees.
# You may call all three to try your ideas;
# exercises 1 and 5 ask what the model does not compute directly (how long an op may run,
# how many chunks a deadline needs).
# On a GPU, exercise 5 also runs your pipeline for real.

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
from gpucourse import streams
from grader.labs import lab04_streams as lab

be = gc.setup()

# %% [markdown] nbgrader={"grade": false, "grade_id": "max_duration_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 1 — How long may one kernel take?
#
# Article 002's example: Stream 1 runs A → B → C, Stream 2 runs D → E,
# Stream 3 runs F → G → H → I. Within a stream, order is guaranteed;
# across streams, nothing is — unless an **event** says so (`waits`:
# record an event after B in stream 1, make stream 2 wait for it before E).
# The makespan is set by the longest *chain* of ops that wait for one another.
# Turn the prediction around: the schedule must end by a deadline;
# how long may one given kernel run?
# A kernel on the longest chain may grow only by the deadline's margin;
# one off it, by more — until its own chain becomes the longest.
# (`gc.streams.simulate` predicts a makespan for given durations; the question here is the inverse.)

# %% nbgrader={"grade": false, "grade_id": "max_duration_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["max_duration"].show()

# %% nbgrader={"grade": false, "grade_id": "max_duration", "locked": false, "schema_version": 3, "solution": true, "task": false}
def max_duration(streams, durations, waits, op, deadline_us):
    """The largest duration of `op` (µs) for which the schedule still ends by deadline_us, or None."""
    # roughly 18 lines
    ### BEGIN SOLUTION
    after = {}  # op -> the ops that cannot start before it ends: its stream's next op, the ops waiting for it
    for chain in streams.values():
        for a, b in zip(chain, chain[1:]):
            after.setdefault(a, []).append(b)
    for b, events in waits.items():
        for a in events:
            after.setdefault(a, []).append(b)
    before = {}
    for a, later in after.items():
        for b in later:
            before.setdefault(b, []).append(a)
    d = dict(durations, **{op: 0.0})  # op at 0 µs: what remains is the rest of the schedule
    ends, tails = {}, {}

    def end(x):  # the earliest end of x: after every op it needs
        if x not in ends:
            ends[x] = max((end(p) for p in before.get(x, [])), default=0.0) + d[x]
        return ends[x]

    def tail(x):  # the longest chain from x's start to the schedule's end
        if x not in tails:
            tails[x] = d[x] + max((tail(n) for n in after.get(x, [])), default=0.0)
        return tails[x]

    if max(end(x) for chain in streams.values() for x in chain) > deadline_us:
        return None  # the other ops alone miss the deadline
    return deadline_us - end(op) - tail(op)  # op's chain: start (= end at 0 µs) + op + what follows it
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "max_duration_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["max_duration"].check(max_duration)

# %% nbgrader={"grade": true, "grade_id": "max_duration_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["max_duration"].check(max_duration, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "schedule_dag_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 2 — Streams and events for a graph of copies and kernels
#
# A real program is not a set of independent chains:
# a kernel needs the copy that brought its input, a reduction needs several kernels,
# a copy-out needs the kernel that produced the data.
# You get that dependency graph and the order in which the host issues the tasks;
# you choose each task's **stream** and its **events** (`waits`).
# Two ways to get it wrong: a dependency that nothing guarantees (a race:
# the answer is sometimes right), or an ordering the data does not need that slows the graph down
# (a task stuck behind an unrelated one in its stream, a surplus wait,
# a stream that has to share a hardware queue) — correct, but slower.
# The checker wants neither: no race, and a makespan no longer than the fastest schedule's.
# (A surplus wait that costs nothing — on a task that would have started later anyway —
# is not counted against you: the checker judges the schedule's time, not its waits one by one.)

# %% nbgrader={"grade": false, "grade_id": "schedule_dag_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["schedule_dag"].show()

# %% nbgrader={"grade": false, "grade_id": "schedule_dag", "locked": false, "schema_version": 3, "solution": true, "task": false}
def schedule_dag(tasks, deps):
    """One streams.Op per task, in issue order: a stream and the events (waits) that guarantee its dependencies."""
    # roughly 12 lines
    ### BEGIN SOLUTION
    last = {}  # stream -> the last task issued on it
    ops = []
    for name, engine, us, sms in tasks:
        needs = list(deps.get(name, []))
        # follow a dependency on its stream when it is that stream's last task: stream order is the guarantee;
        # an unrelated task on the stream would add an order the data does not need
        stream = next((s for s, t in last.items() if t in needs), None)
        if stream is None:
            stream = f"s{len(last)}"  # nothing to follow: a new stream (few are needed: ≤ 8 hardware queues)
        waits = tuple(d for d in needs if d != last.get(stream))  # every other dependency: an event
        ops.append(streams.Op(name, stream, us, engine, sms=sms, waits=waits))
        last[stream] = name
    return ops
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "schedule_dag_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["schedule_dag"].check(schedule_dag)

# %% nbgrader={"grade": true, "grade_id": "schedule_dag_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["schedule_dag"].check(schedule_dag, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "time_call_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 3 — Fix a broken timing snippet
#
# A classmate timed a jitted function like this and reported that the GPU is "incredibly fast"
# — and, on the first run, "incredibly slow":
#
# ```python
# t0 = time.perf_counter()
# y = f(x)
# print("f takes", time.perf_counter() - t0, "s")
# ```
#
# Two bugs: the call returns as soon as the work is *queued*
# (the clock stops before the work is done), and the first call also traces and compiles.
# A third trap waits on a shared machine:
# other programs slow some calls down (never speed one up),
# so one measurement is not enough — take the minimum or the median of several
# (the course's §4.4 does: "a busy machine slows some runs, never speeds one up").
# And a fourth: a clock has a resolution,
# and a call shorter than one tick reads as 0 or as a whole tick
# — time batches of calls queued back to back (the launches then hide behind the work, §4.4).
# Write the fixed version.
# The tests run your function on stand-in jitted functions with a virtual clock whose true times are
# known — some slowed by load, some on a clock that ticks every 2 ms
# — then once on a real `jax.jit` function with `time.perf_counter`.

# %% nbgrader={"grade": false, "grade_id": "time_call_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["time_call"].show()

# %% nbgrader={"grade": false, "grade_id": "time_call", "locked": false, "schema_version": 3, "solution": true, "task": false}
def time_call(f, x, repeat, clock):
    """(seconds of the first call incl. compile, seconds of one later call: the minimum or the median of `repeat`
    measurements, each a batch of calls), every result waited for, every reading on `clock`."""
    # roughly 14 lines
    ### BEGIN SOLUTION
    t0 = clock()
    f(x).block_until_ready()  # compile + launch + run, and wait for the result
    first = clock() - t0

    def batch(k):  # k calls back to back, waited for through the last one (the queue runs in order)
        t0 = clock()
        for _ in range(k):
            y = f(x)
        y.block_until_ready()
        return clock() - t0

    k = 1
    while batch(k) < 0.2:  # grow the batch until it spans many ticks of any clock
        k *= 2
    return first, min(batch(k) / k for _ in range(repeat))  # load only slows runs down: the fastest is the call
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "time_call_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["time_call"].check(time_call)

# %% nbgrader={"grade": true, "grade_id": "time_call_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["time_call"].check(time_call, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "launches_to_dominate_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 4 — How many tiny launches make overhead dominate?
#
# [Article 000](../../course/00_overview.ipynb#Sources-and-claims-checks):
# a launch costs "3–5 µs", so a 1 µs kernel is dominated by it.
# The course's §4.4 splits that cost in two:
# the latency (paid once, by the first kernel of an idle queue) and the host's time per launch,
# which limits back-to-back kernels.
# This exercise is about the second:
# the host queues launches while the GPU works,
# and as long as each kernel runs longer than a launch takes, the queue never runs dry.
# Split a fixed amount of work into more and more kernels and find where the GPU starts idling more
# than it works.
# `streams.CommandQueue` runs one split launch by launch — try it on small splits
# — but the tests split seconds to minutes of work,
# where N reaches millions to hundreds of millions:
# derive the makespan T(N) in closed form (both regimes:
# the GPU is the bottleneck, or the host is) and invert it.
# Ties: where T(N) is exactly 2·work_us the GPU idles exactly as long as it works — not *more*,
# so that N does not count yet.

# %% nbgrader={"grade": false, "grade_id": "launches_to_dominate_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["launches_to_dominate"].show()

# %% nbgrader={"grade": false, "grade_id": "launches_to_dominate", "locked": false, "schema_version": 3, "solution": true, "task": false}
def launches_to_dominate(work_us, launch_us, ns):
    """(smallest number of equal kernels N for which the makespan exceeds 2 * work_us, [T(n) for n in ns])."""
    # roughly 8 lines
    ### BEGIN SOLUTION
    def makespan(n):
        return max(launch_us + work_us,  # the GPU is the bottleneck: busy from the first launch on
                   n * launch_us + work_us / n)  # the host is: the last kernel is queued at n * launch_us

    if launch_us > work_us:  # one launch already costs more than the work: T(1) > 2 * work_us
        return 1, [makespan(k) for k in ns]
    # past the busy regime T(N) = N·launch + work/N, equal to 2·work at the larger root of
    # launch·N² − 2·work·N + work = 0: N is the first integer past it (a root exactly on an integer is a tie)
    root = (work_us + (work_us * work_us - launch_us * work_us) ** 0.5) / launch_us
    return int(root) + 1, [makespan(k) for k in ns]
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "launches_to_dominate_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["launches_to_dominate"].check(launches_to_dominate)

# %% nbgrader={"grade": true, "grade_id": "launches_to_dominate_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["launches_to_dominate"].check(launches_to_dominate, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "fewest_chunks_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Exercise 5 — The fewest chunks that meet a deadline
#
# Copy everything, compute, copy back:
# the copy engines and the SMs take turns and two of the three idle at any moment.
# Cut the data into chunks and spread them over streams:
# while chunk 1 is computed, chunk 2 is being copied in and chunk 0 copied out.
# (On a real GPU this needs **pinned** host memory:
# copies from pageable memory are staged by the CPU first and overlap little.) Chunk i goes to stream i
# % n_streams, so a stream's next copy-in waits for its last copy-out:
# at most n_streams chunks sit in device memory at once
# — the pattern to use when memory is tight (course §4.7 shows another one, a stream per engine,
# which does not bound it).
#
# More chunks overlap more, but every op costs the host a launch (§4.4):
# past some count the launches cost more than the overlap gains.
# Build the pipeline with `streams.Op`, time it with `streams.simulate(ops, launch_us=...)`,
# and find the smallest chunk count that meets the deadline.

# %% nbgrader={"grade": false, "grade_id": "fewest_chunks_show", "locked": true, "schema_version": 3, "solution": false, "task": false}
lab.problems["fewest_chunks"].show()

# %% nbgrader={"grade": false, "grade_id": "fewest_chunks", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
    """(the smallest chunk count whose pipeline meets target_us, its ops), or (None, [])."""
    # roughly 16 lines
    ### BEGIN SOLUTION
    def pipeline(n):
        base, extra = divmod(nbytes, n)
        ops = []
        for i in range(n):
            size = base + (1 if i < extra else 0)
            s = f"stream{i % n_streams}"
            ops.append(streams.Op(f"h2d{i}", s, size / h2d_Bps * 1e6, "h2d", nbytes=size))
            ops.append(streams.Op(f"k{i}", s, size / compute_Bps * 1e6, "compute", sms=132))
            ops.append(streams.Op(f"d2h{i}", s, size / d2h_Bps * 1e6, "d2h", nbytes=size))
        return ops

    for n in range(1, 33):  # not a bisection: the makespan falls, then rises again once launches dominate
        ops = pipeline(n)
        if streams.simulate(ops, launch_us=launch_us).makespan <= target_us:
            return n, ops
    return None, []
    ### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fewest_chunks_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
lab.problems["fewest_chunks"].check(fewest_chunks)

# %% nbgrader={"grade": true, "grade_id": "fewest_chunks_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
### BEGIN HIDDEN TESTS
lab.problems["fewest_chunks"].check(fewest_chunks, hidden=True)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "fewest_chunks_plot_intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Your pipeline next to the same ops on one stream (not graded — look at which engines idle):

# %% nbgrader={"grade": false, "grade_id": "fewest_chunks_plot", "locked": true, "schema_version": 3, "solution": false, "task": false}
import matplotlib.pyplot as plt

try:
    n, mine = fewest_chunks(64 * 10**6, 3, 25e9, 40e9, 25e9, 20.0, 3600.0)
    serial = streams.simulate(streams.on_one_stream(mine), launch_us=20.0)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5), layout="constrained")
    streams.plot_timeline(serial, ax=top, title=f"{n} chunks, one stream", xmax=1.02 * serial.makespan)
    streams.plot_timeline(streams.simulate(mine, launch_us=20.0), ax=bottom, title=f"your {n} chunks over 3 streams",
                          xmax=1.02 * serial.makespan)
    plt.show()
except NotImplementedError:
    print("implement fewest_chunks above to see its timeline")

# %% [markdown] nbgrader={"grade": false, "grade_id": "outro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Done?
#
# Run **Kernel → Restart and Run All**, then **Validate**.
# Every visible test should print a ✓ line.
# The hidden tests use other schedules, sizes and clocks:
# an answer that only handles the examples will lose those points.
