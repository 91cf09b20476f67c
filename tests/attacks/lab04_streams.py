"""Attacks on lab04_streams from the student edition alone: what a determined student assembles from installed code.

Every cell runs after the lab's setup cell (numpy as np, gpucourse as gc, gpucourse.streams as streams, the lab).
Not listed, on purpose: max_duration by a search over gc.streams.simulate on the spec's machine (unlimited SMs and
queues), and fewest_chunks by building the spec's pipeline and trying every count with simulate. The specs allow
both: they are the exercises done with the model (the inverse it does not compute, found by using it).
"""

ATTACKS = {
    "max_duration": [
        # the old exercise's one-call answer: the schedule's makespan on a machine with unlimited SMs and queues
        '''def max_duration(streams_, durations, waits, op, deadline_us):
    ops = [streams.Op(n, s, float(durations[n]), waits=tuple(waits.get(n, ()))) for s, c in streams_.items() for n in c]
    return streams.simulate(ops, streams.Machine(sms=10**6, connections=None)).makespan
''',
        # the same, with gpucourse.streams loaded a second time from its file
        '''import importlib.util
_spec = importlib.util.spec_from_file_location("streams_again", gc.streams.__file__)
_again = importlib.util.module_from_spec(_spec)
import sys as _sys
_sys.modules["streams_again"] = _again
_spec.loader.exec_module(_again)

def max_duration(streams_, durations, waits, op, deadline_us):
    ops = [_again.Op(n, s, float(durations[n]), waits=tuple(waits.get(n, ()))) for s, c in streams_.items() for n in c]
    return deadline_us - _again.simulate(ops, _again.Machine(sms=10**6, connections=None)).makespan + durations[op]
''',
        # the closest composition on the default machine (8 hardware queues): the op's duration made huge, the
        # makespan read back — a 9th stream shares a queue and inherits a false dependency
        '''def max_duration(streams_, durations, waits, op, deadline_us):
    def makespan(d):
        ops = [streams.Op(n, s, float(d if n == op else durations[n]), waits=tuple(waits.get(n, ())))
               for s, c in streams_.items() for n in c]
        return streams.simulate(ops).makespan
    if makespan(0.0) > deadline_us:
        return None
    big = sum(durations.values())
    return deadline_us - (makespan(big) - big)
''',
    ],
    "schedule_dag": [
        # the DAG transcribed task by task, every task on its own stream waiting for its dependencies: correct,
        # but more than 8 streams share hardware queues (a false dependency)
        '''def schedule_dag(tasks, deps):
    return [streams.Op(n, f"t{i}", us, e, sms=s, waits=tuple(deps.get(n, ()))) for i, (n, e, us, s) in enumerate(tasks)]
''',
    ],
    "time_call": [
        # the course's timing helper: synchronized and a median, but on time.perf_counter, not the clock given
        '''def time_call(f, x, repeat, clock):
    first = gc.measure(f, x, warmup=0, repeat=1).median
    return first, gc.measure(f, x, warmup=0, repeat=repeat).median
''',
        # attack 3: gc.timing loaded a second time with its clock swapped for the one given: right clock, but one
        # call per measurement — on the 2 ms clock a call of tens of µs reads as 0 or a whole tick
        '''import importlib.util, sys, types

def time_call(f, x, repeat, clock):
    spec = importlib.util.spec_from_file_location("gpucourse._timing_again", gc.timing.__file__)
    again = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = again
    spec.loader.exec_module(again)
    again.time = types.SimpleNamespace(perf_counter=clock)
    first = again.measure(f, x, warmup=0, repeat=1, max_seconds=None).times[0]
    return first, again.measure(f, x, warmup=0, repeat=repeat, max_seconds=None).best
''',
        # measure's loop pasted into the cell, on the clock given (the minimum, as §4.4 teaches)
        '''def time_call(f, x, repeat, clock):
    times = []
    for _ in range(repeat + 1):
        t0 = clock()
        gc.block(f(x))
        times.append(clock() - t0)
    return times[0], min(times[1:])
''',
    ],
    "launches_to_dominate": [
        # attack 3: the course's CommandQueue runs the one queue for N = 1, 2, … (its log cleared: O(N) per N)
        '''def launches_to_dominate(work_us, launch_us, ns):
    def makespan(n):
        q = gc.streams.CommandQueue(launch_us=launch_us, latency_us=0.0)
        for _ in range(n):
            q.launch(work_us / n)
            q.log.clear()
        return q.device_free_us
    n = 1
    while makespan(n) <= 2 * work_us:
        n += 1
    return n, [makespan(k) for k in ns]
''',
        # the queue again, bisecting over N (T grows with N): O(N log N) launches instead of O(N²)
        '''def launches_to_dominate(work_us, launch_us, ns):
    def makespan(n):
        q = gc.streams.CommandQueue(launch_us=launch_us)
        for _ in range(n):
            q.launch(work_us / n)
            q.log.clear()
        return q.device_free_us
    lo, hi = 1, 1
    while makespan(hi) <= 2 * work_us:
        lo, hi = hi + 1, 2 * hi
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if makespan(mid) > 2 * work_us else (mid + 1, hi)
    return lo, [makespan(k) for k in ns]
''',
        # course §4.4's cell: every T(N) simulated with gc.streams.simulate (one launch per kernel)
        '''def launches_to_dominate(work_us, launch_us, ns):
    def makespan(n):
        ops = [streams.Op(f"k{i}", "s0", work_us / n) for i in range(n)]
        return streams.simulate(ops, launch_us=launch_us).makespan
    n = 1
    while makespan(n) <= 2 * work_us:
        n += 1
    return n, [makespan(k) for k in ns]
''',
    ],
    "fewest_chunks": [
        # course §4.7's pipeline (a stream per engine, events between) searched with simulate: another pattern,
        # whose copies in run ahead — not the spec's chunk-per-stream pipeline, so other counts and ops
        '''def engine_streams(nbytes, n_chunks, gbps_in=25, gbps_kernel=50, gbps_out=25):
    chunk = nbytes // n_chunks
    us = lambda gbps: chunk / (gbps * 1e3)
    ops = []
    for c in range(n_chunks):
        ops.append(streams.Op(f"h2d{c}", "copy in", us(gbps_in), "h2d", nbytes=chunk))
        ops.append(streams.Op(f"k{c}", "kernels", us(gbps_kernel), sms=132, waits=(f"h2d{c}",)))
        ops.append(streams.Op(f"d2h{c}", "copy out", us(gbps_out), "d2h", nbytes=chunk, waits=(f"k{c}",)))
    return ops

def fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
    for n in range(1, 33):
        ops = engine_streams(nbytes, n, h2d_Bps / 1e9, compute_Bps / 1e9, d2h_Bps / 1e9)
        if streams.simulate(ops, launch_us=launch_us).makespan <= target_us:
            return n, ops
    return None, []
''',
    ],
}
