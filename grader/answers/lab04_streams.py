"""Lab 4's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side, grader/labs/lab04_streams.py,
is the rest of the lab; this module imports it, never the reverse (``Problem.has_answers`` binds
``ANSWERS`` on first use where this module is installed).

time_call's cases are :class:`grader.virtual_clock.Workload` data (lab 1's stand-in, rebuilt afresh
wherever the student's function runs); its reference, :func:`time_call_reference`, is the workload's
analytic truth. Exercise 4's reference inverts T(N) exactly in integers
(:func:`smallest_dominated`): its cases' N reach 10^8, beyond any loop.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt
from typing import Any, Callable

import numpy as np

from gpucourse import streams as st

from ..labs.lab04_streams import (
    DISPATCH,
    LAUNCH_TIES,
    MAX_CHUNKS,
    MAX_LAUNCHES,
    Workload,
    timing_case,
)
from ..problem import Case


WIDE = st.Machine(sms=10**6, connections=None, name="unlimited SMs and queues")


def _ops(streams: dict, durations: dict, waits: dict) -> list[st.Op]:
    return [
        st.Op(name, s, float(durations[name]), waits=tuple(waits.get(name, ())))
        for s, chain in streams.items()
        for name in chain
    ]


def schedule_end(streams: dict, durations: dict, waits: dict) -> float:
    """The schedule's makespan on the spec's GPU (no SM limit, a hardware queue per stream)."""
    return st.simulate(_ops(streams, durations, waits), WIDE).makespan


def max_duration(
    streams: dict, durations: dict, waits: dict, op: str, deadline_us: float
) -> float | None:
    """With ``op`` at 0 µs the rest must meet the deadline; beyond that the makespan is max(rest,
    the longest chain through op), and that chain grows µs for µs with op's duration: with op longer
    than every other op together, it is the longest, so makespan − that duration is the chain's
    length without op."""
    if schedule_end(streams, {**durations, op: 0.0}, waits) > deadline_us:
        return None
    big = sum(durations.values())
    return deadline_us - (schedule_end(streams, {**durations, op: big}, waits) - big)


def _random_schedule(rng: np.random.Generator) -> Case:
    n_streams = int(rng.integers(2, 6))
    lengths = [int(rng.integers(1, 6)) for _ in range(n_streams)]
    streams = {f"s{k}": [f"{chr(65 + k)}{j}" for j in range(n)] for k, n in enumerate(lengths)}
    durations = {op: float(rng.integers(2, 200)) / 2 for chain in streams.values() for op in chain}
    # a random interleaving of the streams is a global order; an op may wait only for ops earlier in
    # it
    order = [s for s, chain in streams.items() for _ in chain]
    rng.shuffle(order)
    position = {s: 0 for s in streams}
    earlier: list[tuple[str, str]] = []
    waits: dict[str, list[str]] = {}
    for s in order:
        op = streams[s][position[s]]
        position[s] += 1
        others = [o for (o, other_stream) in earlier if other_stream != s]
        if others and rng.random() < 0.45:
            k = int(rng.integers(1, min(2, len(others)) + 1))
            waits[op] = [str(o) for o in rng.choice(others, size=k, replace=False)]
        earlier.append((op, s))
    return Case((streams, durations, waits))


def _many_streams(rng: np.random.Generator) -> Case:
    """Ten streams: more than a real GPU's 8 hardware queues (CUDA_DEVICE_MAX_CONNECTIONS). On such
    a GPU the 9th stream shares the 1st one's queue, and its ops would wait behind the 1st stream's
    second op, itself waiting for a long first op (a false dependency). The spec's GPU runs every
    stream side by side: nothing waits for it. The op asked about is the 9th stream's second: on 8
    queues it starts late."""
    streams = {f"s{k}": [f"Q{k}"] for k in range(10)}
    streams["s0"], streams["s8"] = ["long", "after"], ["first", "second"]
    durations = {op: float(rng.integers(2, 20)) for chain in streams.values() for op in chain}
    durations["long"], durations["second"] = float(rng.integers(100, 200)), float(
        rng.integers(100, 200)
    )
    deadline = schedule_end(streams, durations, {}) + float(rng.integers(0, 20))
    return Case((streams, durations, {}, "second", deadline))


def _slack_cases(rng: np.random.Generator) -> list[Case]:
    """Random schedules with an op and a deadline of every kind: the op on the critical path or off
    it (it may grow by more than the deadline's margin), a deadline missed whatever op takes (None),
    one met exactly with op at 0 µs (the boundary of None), an op whose only successors wait for it
    through events, or whose start an event delays; and a deadline met exactly by the rest with op
    on its longest chain (op may take 0 or 0.5 µs: 1 µs already misses it)."""
    cases = []
    kinds = [
        "critical",
        "slack",
        "slack",
        "missed",
        "exact",
        "zero",
        "event_tail",
        "event_head",
        "slack",
    ]
    for kind in kinds:
        while True:
            streams, durations, waits = _random_schedule(rng).args
            ops = [o for chain in streams.values() for o in chain]
            total = schedule_end(streams, durations, waits)
            waited = {w for deps in waits.values() for w in deps}
            if kind == "event_tail":  # the last op of its stream, waited for by another stream
                pool = [chain[-1] for chain in streams.values() if chain[-1] in waited]
            # waits for an op of another stream that ends after its predecessor
            elif kind == "event_head":
                pool = [o for o in waits if o in ops]
            else:
                pool = ops
            if not pool:
                continue
            op = str(pool[int(rng.integers(len(pool)))])
            rest = schedule_end(streams, {**durations, op: 0.0}, waits)
            answer_at = lambda deadline: max_duration(
                streams, durations, waits, op, deadline
            )  # noqa: E731
            if kind == "missed":
                if rest <= 1.0:
                    continue
                deadline = float(rng.integers(1, int(rest)))
            elif kind == "exact":
                deadline = rest
                if answer_at(deadline) in (None, 0.0):
                    continue
            # the deadline met exactly with op at 0 µs, op on the longest chain: 0 or 0.5 µs
            elif kind == "zero":
                deadline = rest
                if not 0.0 <= answer_at(deadline) < 1.0:
                    continue
            else:
                deadline = total + float(rng.integers(0, 40)) / 2
            grown = answer_at(deadline)
            critical = grown is not None and grown == durations[op] + deadline - total
            if (
                kind == "critical"
                and not critical
                or kind in ("slack", "event_tail", "event_head")
                and critical
            ):
                continue
            cases.append(Case((streams, durations, waits, op, deadline)))
            break
    return cases


def dag_ideal(tasks: list, deps: dict) -> list[st.Op]:
    """Every task on its own stream, waiting for exactly its dependencies: the timeline the data
    allows (on unlimited hardware queues; an answer itself whenever 8 streams suffice, so it lives
    on the answer side)."""
    return [
        st.Op(name, f"ideal{i}", float(us), engine, sms=int(sms), waits=tuple(deps.get(name, ())))
        for i, (name, engine, us, sms) in enumerate(tasks)
    ]


def dag_target(tasks: list, deps: dict) -> float:
    """The ideal's makespan, which the reference's schedule reaches (the check compares with the
    reference's)."""
    return st.simulate(dag_ideal(tasks, deps), st.Machine(connections=None)).makespan


def schedule_dag(tasks: list, deps: dict) -> list[st.Op]:
    """Chains on streams: a task follows one of its dependencies on that dependency's stream when it
    is the stream's last task; its other dependencies become events; a task with no such dependency
    opens a stream."""
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
    """Pipelines (copy in → kernels → copy out) with cross-pipeline dependencies, issued
    interleaved."""
    chains: list[list[tuple[str, str, float, int]]] = []
    for c in range(n_chains):
        chain = [(f"in{c}", "h2d", float(rng.integers(5, 60)), 1)]
        for j in range(int(rng.integers(1, 4))):
            chain.append(
                (
                    f"k{c}{'abc'[j]}",
                    "compute",
                    float(rng.integers(5, 120)),
                    int(rng.choice([20, 44, 66, 132])),
                )
            )
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
        # needs another pipeline's result
        if task[1] == "compute" and kernels_before and rng.random() < 0.45:
            needs.append(kernels_before[int(rng.integers(len(kernels_before)))][0])
        position[c] += 1
        tasks.append(task)
        issued.append(task)
        if needs:
            deps[task[0]] = needs
    return Case((tasks, deps))


def one_stream_per_task(tasks: list, deps: dict) -> list[st.Op]:
    """The DAG transcribed task by task: correct, but each task opens a stream — beyond 8 they share
    queues."""
    return [st.Op(name, f"t{i}", float(us), engine, sms=int(sms), waits=tuple(deps.get(name, ())))
            for i, (name, engine, us, sms) in enumerate(tasks)]


def false_dependency_dag(rng: np.random.Generator) -> Case:
    """A DAG where one stream per task (12 streams on 8 hardware queues) picks up a false dependency
    and finishes late, while following the pipelines (5 streams) reaches the ideal: the 10th task, a
    kernel on the critical path, shares a hardware queue with the 2nd, which waits for a long
    kernel."""
    r = lambda lo, hi: float(rng.integers(lo, hi))  # noqa: E731  (µs)
    # kTail waits for kLong
    tasks = [
        ("kLong", "compute", r(150, 220), 44),
        ("kTail", "compute", r(5, 20), 44),
        ("in0", "h2d", r(5, 15), 1),
        ("in1", "h2d", r(5, 15), 1),
        ("inC", "h2d", r(5, 15), 1),
        ("k0", "compute", r(5, 30), 20),
        ("k1", "compute", r(5, 30), 20),
        ("out0", "d2h", r(5, 15), 1),
        ("out1", "d2h", r(5, 15), 1),
        ("kC1", "compute", r(80, 120), 44),
        ("kC2", "compute", r(80, 120), 44),
        ("outC", "d2h", r(10, 30), 1),
    ]
    deps = {"kTail": ["kLong"], "k0": ["in0"], "k1": ["in1"], "out0": ["k0"], "out1": ["k1"],
            "kC1": ["inC"], "kC2": ["kC1"], "outC": ["kC2"]}
    target = dag_target(tasks, deps)
    assert (
        st.simulate(schedule_dag(tasks, deps)).makespan
        <= target
        < st.simulate(one_stream_per_task(tasks, deps)).makespan
    )
    return Case((tasks, deps))


def launched_makespan(work_us: float, launch_us: float, n: int) -> float:
    """µs to run ``work_us`` of GPU work as ``n`` equal kernels issued by a host that needs
    ``launch_us`` each."""
    return max(launch_us + work_us, n * launch_us + work_us / n)


def smallest_dominated(work_us: float, launch_us: float) -> int:
    """The smallest N with T(N) > 2·work, exactly (integers: work/launch = a/b). A launch longer
    than the work makes T(1) = launch + work > 2·work; otherwise launch + work <= 2·work, and T(N) >
    2·work exactly when N·launch + work/N > 2·work, i.e. b·N² − 2a·N + a > 0, i.e. (past the vertex
    a/b, the smaller root being <= 1) b·N − a > √(a² − ab), i.e. b·N − a >= isqrt(a² − ab) + 1."""
    ratio = Fraction(work_us) / Fraction(launch_us)
    a, b = ratio.numerator, ratio.denominator
    if b > a:
        return 1
    return (a + isqrt(a * a - a * b) + b) // b  # ⌈(a + isqrt + 1) / b⌉


def launches_to_dominate(
    work_us: float, launch_us: float, ns: list[int]
) -> tuple[int, list[float]]:
    return smallest_dominated(work_us, launch_us), [
        launched_makespan(work_us, launch_us, n) for n in ns
    ]


def _clear_of_ties(work_us: float, launch_us: float, rtol: float = 1e-12) -> bool:
    """A random draw keeps the spec's promise: T(N) and T(N − 1) are more than ``rtol`` away from
    2·work_us in exact arithmetic (on the floats as given), so that floating point decides as exact
    arithmetic does however a correct answer computes T. Exact ties are left to the deliberate cases
    (LAUNCH_TIES: integers, exact in any order)."""
    work, launch = Fraction(work_us), Fraction(launch_us)
    n = smallest_dominated(work_us, launch_us)
    if n > MAX_LAUNCHES:
        return False
    exact = {k: max(launch + work, k * launch + work / k) for k in (n - 1, n) if k >= 1}
    return all(abs(t - 2 * work) > rtol * 2 * work for t in exact.values())


def _kernel_counts(rng: np.random.Generator, work_us: float, launch_us: float) -> list[int]:
    """Counts in both regimes: 1, one where the GPU is busy (n <= work/launch), the last busy one
    and the next, N − 1, N, and one past N."""
    n = smallest_dominated(work_us, launch_us)
    # the largest n with work/n >= launch (0: none)
    busy = int(Fraction(work_us) // Fraction(launch_us))
    ns = [1, n, n + int(rng.integers(1, 1000))]
    if busy >= 2:
        ns += [int(rng.integers(2, busy + 1)), busy, busy + 1]
    if n > 1:
        ns.append(n - 1)
    rng.shuffle(ns)
    return [int(k) for k in ns]


def _launch_case(
    rng: np.random.Generator, work_range: tuple[float, float], launch_range: tuple[float, float]
) -> Case:
    """work and launch drawn log-uniformly (two decimals), kept clear of ties."""
    while True:
        launch = float(np.round(10 ** rng.uniform(*np.log10(launch_range)), 2))
        work = float(np.round(10 ** rng.uniform(*np.log10(work_range)), 2))
        if launch > 0 and work > 0 and _clear_of_ties(work, launch):
            return Case((work, launch, _kernel_counts(rng, work, launch)))


def time_call_reference(w: Workload, x: Any, repeat: int) -> tuple[float, float]:
    """The spec's answer for a case (its analytic truth, whatever ``repeat`` is): the first call
    waited for takes compile + launch + work; a later call's work is what the check's band starts
    from (a call timed alone adds its launch: the band's top)."""
    return w.first_s + DISPATCH + w.work_s, w.work_s


def _timing_cases(rng: np.random.Generator) -> list[Case]:
    """Asynchronous calls of 20 µs to 2 ms with a first call that compiles (50–500 ms): with and
    without load spikes (20× slower; fewer than half of the timed calls, so the median is as right
    as the minimum; never the first call; once among the calls of batched measurements), one timed
    call, and calls far shorter than a clock that ticks every 2 ms (two of them)."""
    def us(lo: int, hi: int) -> float:
        return float(rng.integers(lo, hi + 1)) / 1e6

    def ms(lo: int, hi: int) -> float:
        return float(rng.integers(lo, hi + 1)) / 1e3

    def spikes(repeat: int, k: int) -> tuple[int, ...]:
        return tuple(
            sorted(int(c) for c in rng.choice(np.arange(1, repeat + 1), size=k, replace=False))
        )

    def batch_of(work_s: float) -> int:
        """The batch a timer makes that doubles k until k calls span 0.2 s."""
        k = 1
        while k * work_s < 0.2:
            k *= 2
        return k

    def late_spikes(work_s: float) -> tuple[int, ...]:
        """Two slowed calls among the calls of the measurements, if these are batches doubled until
        one spans 0.2 s (calls 2k .. 7k − 1 for batches of k): one in each of two batches (so the
        maximum fails, the minimum and the median of 5 do); whatever batches a timer makes, they
        slow at most two of its measurements."""
        k = batch_of(work_s)
        first, second = sorted(int(b) for b in rng.choice(np.arange(1, 5), size=2, replace=False))
        return tuple(2 * k + b * k + int(rng.integers(0, k)) for b in (first, second))

    slow = us(1000, 2000)
    cases = [
        # each slowed call stalls for half a batch (another program holding the core ~0.1 s): a
        # spiked batch is 1.5× its clean time, so the mean of the 5 is ~20 % high, as far out as a
        # mean of single calls
        timing_case(slow, ms(50, 500), 5, late_spikes(slow), spike_factor=1 + batch_of(slow) / 2),
        timing_case(us(20, 2000), ms(50, 500), int(rng.integers(3, 8))),
        # one timed call: its time, not the compiling call's
        timing_case(us(20, 200), ms(50, 500), 1),
        timing_case(us(20, 2000), ms(50, 500), 5, spikes(5, 2)),
        timing_case(us(20, 2000), ms(50, 500), 7, spikes(7, 3)),
        timing_case(us(50, 500), ms(50, 500), 4, spikes(4, 1)),
        timing_case(us(20, 60), ms(100, 300), int(rng.integers(3, 6)), tick_s=2e-3),
        timing_case(us(20, 60), ms(100, 300), 5, spikes(5, 2), tick_s=2e-3),
    ]
    rng.shuffle(cases)
    return cases


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


def pipeline_makespan(
    nbytes: int,
    n_chunks: int,
    n_streams: int,
    h2d_Bps: float,
    compute_Bps: float,
    d2h_Bps: float,
    launch_us: float,
) -> float:
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
    """No makespan within a relative 1e-6 of the target: rounding (µs computed in another order)
    never decides."""
    return all(abs(m - target) > 1e-6 * target for m in makespans)


def _chunk_case(rng: np.random.Generator, kind: str) -> Case:
    """kind "first": the answer is n = 1; "record": a chunk count 2..24 that beats every smaller
    one; "u": as "record", with a larger count that misses the target again (launches dominate: the
    predicate is not monotonic, a bisection fails); "none": no count up to 32 reaches it, while 33
    would (no launch cost); "last": 31 or 32 chunks, the largest counts allowed (no launch cost)."""
    while True:
        nbytes, n_streams = int(rng.integers(10**6, 10**9)), int(rng.integers(2, 5))
        rates = [float(10 ** rng.uniform(9.5, 11)) for _ in range(3)]
        size_us = nbytes / min(rates) * 1e6  # the slowest engine's time for everything
        launch = (
            0.0
            if kind in ("none", "last")
            else float(np.round(size_us * 10 ** rng.uniform(-3.5, -1.5), 1))
        )
        # the makespans that matter
        top = {"first": 1, "none": MAX_CHUNKS + 1, "last": MAX_CHUNKS}.get(kind, 25)
        m = [pipeline_makespan(nbytes, n, n_streams, *rates, launch) for n in range(1, top + 1)]
        if kind == "first":
            target = m[0] * float(rng.uniform(1.001, 1.2))
        elif kind == "none":
            if not m[-1] < min(m[:-1]) * (1 - 1e-5):
                continue
            target = (m[-1] + min(m[:-1])) / 2
        else:
            first = MAX_CHUNKS - 1 if kind == "last" else 2
            records = [
                n
                for n in range(first, top + (kind == "last"))
                if m[n - 1] < min(m[: n - 1]) * (1 - 1e-5)
            ]
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


# a target equal to a makespan (every duration a dyadic number of µs: exact whatever order a µs is
# computed in): 4 chunks take 23,445.5 µs exactly, fewer take longer, 5 take 23,445.500931…:
# "within" includes the target
CHUNK_TIE = Case((2**24, 2, 2.0**30, 2.0**31, 2.0**30, 8.0, 23445.5))


def _chunk_cases(rng: np.random.Generator) -> list[Case]:
    return [
        _chunk_case(rng, kind) for kind in ("first", "record", "record", "u", "u", "none", "last")
    ] + [CHUNK_TIE]


def _article_cases(rng: np.random.Generator) -> list[Case]:
    """The visible cases' schedules with other durations and deadlines: the source article's three
    streams (with and without its two events) and two ops in one stream."""
    from ..labs.lab04_streams import ARTICLE_STREAMS

    cases = []
    for op, waits in (("B", {"E": ["B"], "H": ["D"]}), ("D", {"E": ["B"], "H": ["D"]}), ("I", {})):
        durations = {
            o: float(rng.integers(10, 90)) / 2 for chain in ARTICLE_STREAMS.values() for o in chain
        }
        deadline = schedule_end(ARTICLE_STREAMS, durations, waits) + float(rng.integers(0, 30))
        if op == "I":  # missed whatever I takes
            deadline = float(
                rng.integers(5, int(schedule_end(ARTICLE_STREAMS, {**durations, "I": 0.0}, waits)))
            )
        cases.append(Case((ARTICLE_STREAMS, durations, waits, op, deadline)))
    x, y = float(rng.integers(1, 20)) / 2, float(rng.integers(1, 20)) / 2
    return cases + [
        Case(({"s0": ["x", "y"]}, {"x": x, "y": y}, {}, "x", x + y + float(rng.integers(0, 9))))
    ]


def _max_duration_cases(rng: np.random.Generator) -> list[Case]:
    return _slack_cases(rng) + [_many_streams(rng)] + _article_cases(rng)


def _dag_cases(rng: np.random.Generator) -> list[Case]:
    return [random_dag(rng, n) for n in (2, 3, 4, 4, 3)] + [
        false_dependency_dag(rng) for _ in range(3)
    ]


def _launch_cases(rng: np.random.Generator) -> list[Case]:
    """Small splits (N in the tens to thousands: what the queue can show), and splits of 1 s to 2
    min of work into kernels of a few µs (N from 10^6 to about 10^8: no loop over N, or queue run of
    N launches, ends in time); N = 1 (a launch longer than the work) and its boundary work == launch
    (T(1) = 2·work exactly: N = 2); exact ties."""
    cases = [_launch_case(rng, (30.0, 5e3), (1.0, 20.0)) for _ in range(3)]
    cases += [_launch_case(rng, (5e6, 1.2e8), (0.5, 5.0)) for _ in range(4)]
    cases += [Case((2.5, 3.0, [1, 2, 3])), Case((6.5, 6.5, [1, 2, 3]))] + LAUNCH_TIES
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "max_duration": (max_duration, _max_duration_cases),
    "schedule_dag": (schedule_dag, _dag_cases),
    "time_call": (time_call_reference, _timing_cases),
    "launches_to_dominate": (launches_to_dominate, _launch_cases),
    "fewest_chunks": (fewest_chunks, _chunk_cases),
}
