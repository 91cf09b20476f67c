"""Lab 4's answer side: the reference of every exercise and its hidden-case generator (instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab04_streams.py, is the rest of the lab; this module imports it,
never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

time_call's cases are :class:`~grader.labs.lab04_streams.TimingSetup` data (a SimulatedJit and a VirtualClock
sharing one CommandQueue are built from it afresh, on whichever side calls): its reference,
:func:`time_call_reference`, runs :func:`time_call` on a fresh build, here in the grader.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import numpy as np

from gpucourse import streams as st

from ..labs.lab04_streams import LAUNCH_TIES, MAX_CHUNKS, MAX_LAUNCHES, TimingSetup, timing_case
from ..problem import Case


WIDE = st.Machine(sms=10**6, connections=None, name="unlimited SMs and queues")


def _ops(streams: dict, durations: dict, waits: dict) -> list[st.Op]:
    return [st.Op(name, s, float(durations[name]), waits=tuple(waits.get(name, ()))) for s, chain in streams.items()
            for name in chain]


def schedule_end(streams: dict, durations: dict, waits: dict) -> float:
    """The schedule's makespan on the spec's GPU (no SM limit, a hardware queue per stream)."""
    return st.simulate(_ops(streams, durations, waits), WIDE).makespan


def max_duration(streams: dict, durations: dict, waits: dict, op: str, deadline_us: float) -> float | None:
    """With ``op`` at 0 µs the rest must meet the deadline; beyond that the makespan is max(rest, the longest chain
    through op), and that chain grows µs for µs with op's duration: with op longer than every other op together,
    it is the longest, so makespan − that duration is the chain's length without op."""
    if schedule_end(streams, {**durations, op: 0.0}, waits) > deadline_us:
        return None
    big = sum(durations.values())
    return deadline_us - (schedule_end(streams, {**durations, op: big}, waits) - big)


def _random_schedule(rng: np.random.Generator) -> Case:
    n_streams = int(rng.integers(2, 6))
    lengths = [int(rng.integers(1, 6)) for _ in range(n_streams)]
    streams = {f"s{k}": [f"{chr(65 + k)}{j}" for j in range(n)] for k, n in enumerate(lengths)}
    durations = {op: float(rng.integers(2, 200)) / 2 for chain in streams.values() for op in chain}
    # a random interleaving of the streams is a global order; an op may wait only for ops earlier in it
    order = [s for s, chain in streams.items() for _ in chain]
    rng.shuffle(order)
    position = {s: 0 for s in streams}
    earlier: list[tuple[str, str]] = []
    waits: dict[str, list[str]] = {}
    for s in order:
        op = streams[s][position[s]]
        position[s] += 1
        others = [o for (o, os) in earlier if os != s]
        if others and rng.random() < 0.45:
            k = int(rng.integers(1, min(2, len(others)) + 1))
            waits[op] = [str(o) for o in rng.choice(others, size=k, replace=False)]
        earlier.append((op, s))
    return Case((streams, durations, waits))


def _many_streams(rng: np.random.Generator) -> Case:
    """Ten streams: more than a real GPU's 8 hardware queues (CUDA_DEVICE_MAX_CONNECTIONS). On such a GPU the 9th
    stream shares the 1st one's queue, and its ops would wait behind the 1st stream's second op, itself waiting for
    a long first op (a false dependency). The spec's GPU runs every stream side by side: nothing waits for it. The
    op asked about is the 9th stream's second: on 8 queues it starts late."""
    streams = {f"s{k}": [f"Q{k}"] for k in range(10)}
    streams["s0"], streams["s8"] = ["long", "after"], ["first", "second"]
    durations = {op: float(rng.integers(2, 20)) for chain in streams.values() for op in chain}
    durations["long"], durations["second"] = float(rng.integers(100, 200)), float(rng.integers(100, 200))
    deadline = schedule_end(streams, durations, {}) + float(rng.integers(0, 20))
    return Case((streams, durations, {}, "second", deadline))


def _slack_cases(rng: np.random.Generator) -> list[Case]:
    """Random schedules with an op and a deadline of every kind: the op on the critical path or off it (it may
    grow by more than the deadline's margin), a deadline missed whatever op takes (None), one met exactly with op
    at 0 µs (the boundary of None), an op whose only successors wait for it through events, or whose start an
    event delays; and a deadline met exactly by the rest with op on its longest chain (op may take 0 or 0.5 µs:
    1 µs already misses it)."""
    cases = []
    kinds = ["critical", "slack", "slack", "missed", "exact", "zero", "event_tail", "event_head", "slack"]
    for kind in kinds:
        while True:
            streams, durations, waits = _random_schedule(rng).args
            ops = [o for chain in streams.values() for o in chain]
            total = schedule_end(streams, durations, waits)
            waited = {w for ws in waits.values() for w in ws}
            if kind == "event_tail":  # the last op of its stream, waited for by another stream
                pool = [chain[-1] for chain in streams.values() if chain[-1] in waited]
            elif kind == "event_head":  # waits for an op of another stream that ends after its predecessor
                pool = [o for o in waits if o in ops]
            else:
                pool = ops
            if not pool:
                continue
            op = str(pool[int(rng.integers(len(pool)))])
            rest = schedule_end(streams, {**durations, op: 0.0}, waits)
            answer_at = lambda deadline: max_duration(streams, durations, waits, op, deadline)  # noqa: E731
            if kind == "missed":
                if rest <= 1.0:
                    continue
                deadline = float(rng.integers(1, int(rest)))
            elif kind == "exact":
                deadline = rest
                if answer_at(deadline) in (None, 0.0):
                    continue
            elif kind == "zero":  # the deadline met exactly with op at 0 µs, op on the longest chain: 0 or 0.5 µs
                deadline = rest
                if not 0.0 <= answer_at(deadline) < 1.0:
                    continue
            else:
                deadline = total + float(rng.integers(0, 40)) / 2
            grown = answer_at(deadline)
            critical = grown is not None and grown == durations[op] + deadline - total
            if kind == "critical" and not critical or kind in ("slack", "event_tail", "event_head") and critical:
                continue
            cases.append(Case((streams, durations, waits, op, deadline)))
            break
    return cases


def dag_ideal(tasks: list, deps: dict) -> list[st.Op]:
    """Every task on its own stream, waiting for exactly its dependencies: the timeline the data allows (on
    unlimited hardware queues; an answer itself whenever 8 streams suffice, so it lives on the answer side)."""
    return [st.Op(name, f"ideal{i}", float(us), engine, sms=int(sms), waits=tuple(deps.get(name, ())))
            for i, (name, engine, us, sms) in enumerate(tasks)]


def dag_target(tasks: list, deps: dict) -> float:
    """The ideal's makespan, which the reference's schedule reaches (the check compares with the reference's)."""
    return st.simulate(dag_ideal(tasks, deps), st.Machine(connections=None)).makespan


def schedule_dag(tasks: list, deps: dict) -> list[st.Op]:
    """Chains on streams: a task follows one of its dependencies on that dependency's stream when it is the
    stream's last task; its other dependencies become events; a task with no such dependency opens a stream."""
    tail: dict[str, str] = {}  # stream -> its last task
    ops = []
    for name, engine, us, sms in tasks:
        needs = list(deps.get(name, ()))
        stream = next((s for s, last in tail.items() if last in needs), None)
        if stream is None:
            stream = f"s{len(tail)}"
        waits = tuple(d for d in needs if d != tail.get(stream))
        ops.append(st.Op(name, stream, float(us), engine, sms=int(sms), waits=waits))
        tail[stream] = name
    return ops


def random_dag(rng: np.random.Generator, n_chains: int) -> Case:
    """Pipelines (copy in → kernels → copy out) with cross-pipeline dependencies, issued interleaved."""
    chains: list[list[tuple[str, str, float, int]]] = []
    for c in range(n_chains):
        chain = [(f"in{c}", "h2d", float(rng.integers(5, 60)), 1)]
        for j in range(int(rng.integers(1, 4))):
            chain.append((f"k{c}{'abc'[j]}", "compute", float(rng.integers(5, 120)), int(rng.choice([20, 44, 66, 132]))))
        if rng.random() < 0.7:
            chain.append((f"out{c}", "d2h", float(rng.integers(5, 60)), 1))
        chains.append(chain)
    order = [c for c, chain in enumerate(chains) for _ in chain]
    rng.shuffle(order)
    position = [0] * n_chains
    tasks, deps, issued = [], {}, []
    for c in order:
        task = chains[c][position[c]]
        needs = [chains[c][position[c] - 1][0]] if position[c] else []
        kernels_before = [t for t in issued if t[1] == "compute" and not t[0].startswith(f"k{c}")]
        if task[1] == "compute" and kernels_before and rng.random() < 0.45:  # needs another pipeline's result
            needs.append(kernels_before[int(rng.integers(len(kernels_before)))][0])
        position[c] += 1
        tasks.append(task)
        issued.append(task)
        if needs:
            deps[task[0]] = needs
    return Case((tasks, deps))


def one_stream_per_task(tasks: list, deps: dict) -> list[st.Op]:
    """The DAG transcribed task by task: correct, but each task opens a stream — beyond 8 they share queues."""
    return [st.Op(name, f"t{i}", float(us), engine, sms=int(sms), waits=tuple(deps.get(name, ())))
            for i, (name, engine, us, sms) in enumerate(tasks)]


def false_dependency_dag(rng: np.random.Generator) -> Case:
    """A DAG where one stream per task (12 streams on 8 hardware queues) picks up a false dependency and finishes
    late, while following the pipelines (5 streams) reaches the ideal: the 10th task, a kernel on the critical
    path, shares a hardware queue with the 2nd, which waits for a long kernel."""
    r = lambda lo, hi: float(rng.integers(lo, hi))  # noqa: E731  (µs)
    tasks = [("kLong", "compute", r(150, 220), 44), ("kTail", "compute", r(5, 20), 44),  # kTail waits for kLong
             ("in0", "h2d", r(5, 15), 1), ("in1", "h2d", r(5, 15), 1), ("inC", "h2d", r(5, 15), 1),
             ("k0", "compute", r(5, 30), 20), ("k1", "compute", r(5, 30), 20),
             ("out0", "d2h", r(5, 15), 1), ("out1", "d2h", r(5, 15), 1),
             ("kC1", "compute", r(80, 120), 44), ("kC2", "compute", r(80, 120), 44), ("outC", "d2h", r(10, 30), 1)]
    deps = {"kTail": ["kLong"], "k0": ["in0"], "k1": ["in1"], "out0": ["k0"], "out1": ["k1"],
            "kC1": ["inC"], "kC2": ["kC1"], "outC": ["kC2"]}
    target = dag_target(tasks, deps)
    assert st.simulate(schedule_dag(tasks, deps)).makespan <= target < st.simulate(one_stream_per_task(tasks, deps)).makespan
    return Case((tasks, deps))


def launched_makespan(work_us: float, launch_us: float, n: int) -> float:
    """µs to run ``work_us`` of GPU work as ``n`` equal kernels issued by a host that needs ``launch_us`` each."""
    return max(launch_us + work_us, n * launch_us + work_us / n)


def launches_to_dominate(work_us: float, launch_us: float) -> tuple[int, list[float]]:
    makespans = [launched_makespan(work_us, launch_us, 1)]
    while makespans[-1] <= 2 * work_us:  # the spec's definition, N by N: N <= MAX_LAUNCHES on every case
        makespans.append(launched_makespan(work_us, launch_us, len(makespans) + 1))
    return len(makespans), makespans


def _clear_of_ties(case: Case, rtol: float = 1e-12) -> bool:
    """A random draw keeps the spec's promise: T(N) and T(N − 1) are more than ``rtol`` away from 2·work_us in exact
    arithmetic (on the floats as given), and N is the exact answer, so that floating point decides as exact
    arithmetic does however a correct answer computes T (a formula, or kernel by kernel). Exact ties are left to the
    deliberate cases (LAUNCH_TIES: integers, exact in any order)."""
    work, launch = (Fraction(v) for v in case.args)
    n = launches_to_dominate(*case.args)[0]
    if n > MAX_LAUNCHES:
        return False
    exact = {k: max(launch + work, k * launch + work / k) for k in (n - 1, n) if k >= 1}
    if any(abs(t - 2 * work) <= rtol * 2 * work for t in exact.values()):
        return False
    return exact[n] > 2 * work and (n == 1 or exact[n - 1] <= 2 * work)


def _launch_case(rng: np.random.Generator) -> Case:
    """work/launch between 0.3 and 900: N ≈ 2·work/launch stays below MAX_LAUNCHES; kept clear of ties."""
    while True:
        launch = float(np.round(rng.uniform(1, 20), 2))
        case = Case((float(np.round(launch * 10 ** rng.uniform(-0.5, np.log10(900)), 2)), launch))
        if _clear_of_ties(case):
            return case


def time_call(f: Any, x: Any, repeat: int, clock: Callable[[], float]) -> tuple[float, float]:
    t0 = clock()
    f(x).block_until_ready()
    first = clock() - t0
    times = []
    for _ in range(repeat):
        t0 = clock()
        f(x).block_until_ready()
        times.append(clock() - t0)
    return first, float(np.median(times))


def time_call_reference(setup: TimingSetup) -> tuple[float, float]:
    """The reference on a case: :func:`time_call` on the case's arguments built afresh (a new command queue, a
    function not compiled yet), as the student's function gets them."""
    return time_call(*setup.build())


def spread_factors(rng: np.random.Generator, repeat: int, spikes: int) -> dict[int, float]:
    """A distinct work multiplier for every one of ``repeat`` (odd, >= 5) timed calls: ordinary calls spread over
    0.75–1.35, ``spikes`` (2 .. (repeat-1)/2) calls 3–8× slower, shuffled, and the first timed call never the
    median. Then only the median of exactly the ``repeat`` timed calls fits: a trimmed or interquartile mean keeps
    a spike, the second-smallest or first value, the mode, the median of times[1:] or of the calls with the
    compiling one all land on another value."""
    assert repeat >= 5 and repeat % 2 == 1 and 2 <= spikes <= (repeat - 1) // 2
    ordinary = rng.choice(np.arange(75, 136), size=repeat - spikes, replace=False) / 100
    values = np.concatenate([ordinary, rng.uniform(3, 8, size=spikes)])
    rng.shuffle(values)
    if values[0] == np.median(values):  # a mode that returns the first value would hit the median
        values[[0, 1]] = values[[1, 0]]
    return {k + 1: float(v) for k, v in enumerate(values)}


def _noisy_timing_cases(rng: np.random.Generator) -> list[Case]:
    """Every timed call with its own work multiplier, two or more load spikes, an odd number of calls."""
    cases = []
    for repeat in (5, 7, 9, int(rng.choice([5, 7, 9]))):
        spikes = int(rng.integers(2, (repeat - 1) // 2 + 1))
        cases.append(timing_case(float(rng.integers(20, 2000)), float(rng.integers(100, 50_000)),
                                 float(rng.integers(2, 20)), repeat, spread_factors(rng, repeat, spikes)))
    return cases


def _timing_cases(rng: np.random.Generator) -> list[Case]:
    return [
        timing_case(float(rng.integers(1, 2000)), float(rng.integers(100, 50_000)), float(rng.integers(2, 20)),
                    int(rng.integers(1, 9)))
        for _ in range(3)
    ] + _noisy_timing_cases(rng) + [
        timing_case(60.0, 900.0, 3.0, 9, {1: 5.0, 2: 1.2, 3: 0.9, 4: 1.05, 5: 1.0, 6: 0.85, 7: 1.15, 8: 7.0, 9: 0.4}),
        timing_case(80.0, 700.0, 3.0, 1, {1: 1.25}),  # one timed call: its time, not the compiling call's
        timing_case(80.0, 700.0, 3.0, 2, {1: 0.9, 2: 3.0}),  # two: their mean (the median of two)
        # the clock reads 12.5 s at the start (first = clock() − t0, not clock() alone); the first timed call is the
        # fastest, so a call that compiles again (f called on something other than x) moves the median
        timing_case(150.0, 2000.0, 4.0, 5, {1: 0.8, 2: 1.1, 3: 0.9, 4: 1.3, 5: 1.0}, start_us=12.5e6),
    ]


def chunk_sizes(nbytes: int, n_chunks: int) -> list[int]:
    base, extra = divmod(nbytes, n_chunks)
    return [base + (i < extra) for i in range(n_chunks)]


def chunked_pipeline(nbytes: int, n_chunks: int, n_streams: int, h2d_Bps: float, compute_Bps: float,
                     d2h_Bps: float) -> list[st.Op]:
    """The spec's classic pipeline: chunk i on stream i % n_streams, issued chunk by chunk."""
    ops = []
    for i, size in enumerate(chunk_sizes(nbytes, n_chunks)):
        s = f"s{i % n_streams}"
        ops += [st.Op(f"h2d{i}", s, size / h2d_Bps * 1e6, "h2d", nbytes=size),
                st.Op(f"k{i}", s, size / compute_Bps * 1e6, "compute", sms=st.Machine().sms),
                st.Op(f"d2h{i}", s, size / d2h_Bps * 1e6, "d2h", nbytes=size)]
    return ops


def pipeline_makespan(nbytes: int, n_chunks: int, n_streams: int, h2d_Bps: float, compute_Bps: float,
                      d2h_Bps: float, launch_us: float) -> float:
    ops = chunked_pipeline(nbytes, n_chunks, n_streams, h2d_Bps, compute_Bps, d2h_Bps)
    return st.simulate(ops, launch_us=launch_us).makespan


def fewest_chunks(nbytes: int, n_streams: int, h2d_Bps: float, compute_Bps: float, d2h_Bps: float,
                  launch_us: float, target_us: float) -> tuple[int | None, list[st.Op]]:
    for n in range(1, MAX_CHUNKS + 1):
        ops = chunked_pipeline(nbytes, n, n_streams, h2d_Bps, compute_Bps, d2h_Bps)
        if st.simulate(ops, launch_us=launch_us).makespan <= target_us:
            return n, ops
    return None, []


def _clear(target: float, makespans: list[float]) -> bool:
    """No makespan within a relative 1e-6 of the target: rounding (µs computed in another order) never decides."""
    return all(abs(m - target) > 1e-6 * target for m in makespans)


def _chunk_case(rng: np.random.Generator, kind: str) -> Case:
    """kind "first": the answer is n = 1; "record": a chunk count 2..24 that beats every smaller one; "u": as
    "record", with a larger count that misses the target again (launches dominate: the predicate is not
    monotonic, a bisection fails); "none": no count up to 32 reaches it, while 33 would (no launch cost); "last":
    31 or 32 chunks, the largest counts allowed (no launch cost)."""
    while True:
        nbytes, n_streams = int(rng.integers(10**6, 10**9)), int(rng.integers(2, 5))
        rates = [float(10 ** rng.uniform(9.5, 11)) for _ in range(3)]
        size_us = nbytes / min(rates) * 1e6  # the slowest engine's time for everything
        launch = 0.0 if kind in ("none", "last") else float(np.round(size_us * 10 ** rng.uniform(-3.5, -1.5), 1))
        top = {"first": 1, "none": MAX_CHUNKS + 1, "last": MAX_CHUNKS}.get(kind, 25)  # the makespans that matter
        m = [pipeline_makespan(nbytes, n, n_streams, *rates, launch) for n in range(1, top + 1)]
        if kind == "first":
            target = m[0] * float(rng.uniform(1.001, 1.2))
        elif kind == "none":
            if not m[-1] < min(m[:-1]) * (1 - 1e-5):
                continue
            target = (m[-1] + min(m[:-1])) / 2
        else:
            first = MAX_CHUNKS - 1 if kind == "last" else 2
            records = [n for n in range(first, top + (kind == "last")) if m[n - 1] < min(m[:n - 1]) * (1 - 1e-5)]
            if kind == "u":
                records = [n for n in records if max(m[n:]) > m[n - 1] * 1.01]
            if not records:
                continue
            n = records[int(rng.integers(len(records)))]
            target = m[n - 1] + float(rng.uniform(0.1, 0.9)) * (min(m[:n - 1]) - m[n - 1])
            if kind == "u" and not max(m[n:]) > target:
                continue
        case = Case((nbytes, n_streams, *rates, launch, float(target)))
        if _clear(target, m):
            return case


# a target equal to a makespan (every duration a dyadic number of µs: exact whatever order a µs is computed in):
# 4 chunks take 23,445.5 µs exactly, fewer take longer, 5 take 23,445.500931…: "within" includes the target
CHUNK_TIE = Case((2**24, 2, 2.0**30, 2.0**31, 2.0**30, 8.0, 23445.5))


def _chunk_cases(rng: np.random.Generator) -> list[Case]:
    return [_chunk_case(rng, kind) for kind in ("first", "record", "record", "u", "u", "none", "last")] + [CHUNK_TIE]


def _seed_cases(rng: np.random.Generator) -> list[Case]:
    """The visible cases' schedules with other durations and deadlines: the seed's three streams (with and without
    its two events) and two ops in one stream."""
    from ..labs.lab04_streams import SEED_STREAMS

    cases = []
    for op, waits in (("B", {"E": ["B"], "H": ["D"]}), ("D", {"E": ["B"], "H": ["D"]}), ("I", {})):
        durations = {o: float(rng.integers(10, 90)) / 2 for chain in SEED_STREAMS.values() for o in chain}
        deadline = schedule_end(SEED_STREAMS, durations, waits) + float(rng.integers(0, 30))
        if op == "I":  # missed whatever I takes
            deadline = float(rng.integers(5, int(schedule_end(SEED_STREAMS, {**durations, "I": 0.0}, waits))))
        cases.append(Case((SEED_STREAMS, durations, waits, op, deadline)))
    x, y = float(rng.integers(1, 20)) / 2, float(rng.integers(1, 20)) / 2
    return cases + [Case(({"s0": ["x", "y"]}, {"x": x, "y": y}, {}, "x", x + y + float(rng.integers(0, 9))))]


def _max_duration_cases(rng: np.random.Generator) -> list[Case]:
    return _slack_cases(rng) + [_many_streams(rng)] + _seed_cases(rng)


def _dag_cases(rng: np.random.Generator) -> list[Case]:
    return [random_dag(rng, n) for n in (2, 3, 4, 4, 3)] + [false_dependency_dag(rng) for _ in range(3)]


def _launch_cases(rng: np.random.Generator) -> list[Case]:
    # N = 1 (a launch longer than the work) and its boundary, work == launch (T(1) = 2·work exactly: N = 2)
    return [_launch_case(rng) for _ in range(7)] + [Case((2.5, 3.0)), Case((6.5, 6.5))] + LAUNCH_TIES


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "max_duration": (max_duration, _max_duration_cases),
    "schedule_dag": (schedule_dag, _dag_cases),
    "time_call": (time_call_reference, _timing_cases),
    "launches_to_dominate": (launches_to_dominate, _launch_cases),
    "fewest_chunks": (fewest_chunks, _chunk_cases),
}
