"""Plausible wrong answers to lab 4, one per solution cell: each must score less than full marks."""

WRONG = {
    "max_duration": [
        # assumes the op is on the critical path: it may grow only by the deadline's margin
        '''def max_duration(streams, durations, waits, op, deadline_us):
    end = {}
    def finish(x):
        if x not in end:
            chain = next(c for c in streams.values() if x in c)
            deps = chain[:chain.index(x)][-1:] + list(waits.get(x, []))
            end[x] = max((finish(d) for d in deps), default=0.0) + durations[x]
        return end[x]
    total = max(finish(x) for c in streams.values() for x in c)
    grown = durations[op] + deadline_us - total
    return grown if grown >= 0 else None
''',
        # follows only op's own stream: the ops that wait for it (events) and the events it waits for are ignored
        '''def max_duration(streams, durations, waits, op, deadline_us):
    chain = next(c for c in streams.values() if op in c)
    rest = sum(durations[x] for x in chain if x != op)
    others = max((sum(durations[x] for x in c) for c in streams.values() if c is not chain), default=0.0)
    if others > deadline_us or rest > deadline_us:
        return None
    return deadline_us - rest
''',
    ],
    # the classic "copy stream + compute stream" pattern, one stream per engine, with an event for every dependency:
    # correct, but kernels that could share the SMs run one after another in the compute stream
    "schedule_dag": '''def schedule_dag(tasks, deps):
    return [streams.Op(name, engine, us, engine, sms=sms, waits=tuple(deps.get(name, [])))
            for name, engine, us, sms in tasks]
''',
    "time_call": [
        # adds the warm-up but still stops the clock before the work is done
        '''def time_call(f, x, repeat, clock):
    t0 = clock()
    f(x)
    first = clock() - t0
    times = []
    for _ in range(repeat):
        t0 = clock()
        f(x)
        times.append(clock() - t0)
    return first, float(np.median(times))
''',
        # synchronized, but the median also counts the first (compiling) call
        '''def time_call(f, x, repeat, clock):
    times = []
    for _ in range(repeat + 1):
        t0 = clock()
        f(x).block_until_ready()
        times.append(clock() - t0)
    return times[0], float(np.median(times))
''',
        # synchronized, but the mean: the calls slowed by load pull it up
        '''def time_call(f, x, repeat, clock):
    t0 = clock()
    f(x).block_until_ready()
    first = clock() - t0
    times = []
    for _ in range(repeat):
        t0 = clock()
        f(x).block_until_ready()
        times.append(clock() - t0)
    return first, float(np.mean(times))
''',
        # synchronized, the median, one call per measurement: on a clock that ticks every 2 ms a call of tens of µs
        # reads as 0 or as a whole tick (the old exercise's answer)
        '''def time_call(f, x, repeat, clock):
    t0 = clock()
    f(x).block_until_ready()
    first = clock() - t0
    times = []
    for _ in range(repeat):
        t0 = clock()
        f(x).block_until_ready()
        times.append(clock() - t0)
    return first, float(np.median(times))
''',
        # batches on the coarse clock, but the batch is never waited for: it times k launches, not k calls
        '''def time_call(f, x, repeat, clock):
    t0 = clock()
    f(x).block_until_ready()
    first = clock() - t0
    def batch(k):
        t0 = clock()
        for _ in range(k):
            f(x)
        return clock() - t0
    k = 1
    while batch(k) < 0.2:
        k *= 2
    return first, min(batch(k) / k for _ in range(repeat))
''',
    ],
    "launches_to_dominate": [
        # one formula for every N, T = N·launch + work/N: ignores that kernels longer than a launch keep the GPU
        # busy (T = launch + work), so the makespans of small N are wrong (the N it finds is the same)
        '''def launches_to_dominate(work_us, launch_us, ns):
    makespan = lambda n: n * launch_us + work_us / n
    n = 1
    if launch_us <= work_us:
        n = max(1, int((work_us + (work_us * work_us - launch_us * work_us) ** 0.5) / launch_us))
        while makespan(n) <= 2 * work_us:
            n += 1
        while n > 1 and makespan(n - 1) > 2 * work_us:
            n -= 1
    return n, [makespan(k) for k in ns]
''',
        # the larger root rounded up: one too few where T(root) == 2·work exactly (a tie does not count)
        '''import math

def launches_to_dominate(work_us, launch_us, ns):
    def makespan(n):
        return max(launch_us + work_us, n * launch_us + work_us / n)
    if launch_us > work_us:
        return 1, [makespan(k) for k in ns]
    root = (work_us + math.sqrt(work_us * work_us - launch_us * work_us)) / launch_us
    return math.ceil(root), [makespan(k) for k in ns]
''',
        # the rule of thumb N ≈ 2·work/launch (the host's time alone reaching 2·work), ignoring the last kernel
        '''def launches_to_dominate(work_us, launch_us, ns):
    def makespan(n):
        return max(launch_us + work_us, n * launch_us + work_us / n)
    return max(1, int(2 * work_us / launch_us) + 1), [makespan(k) for k in ns]
''',
        # the old exercise's answer: right, but a loop over N — hundreds of millions of steps on the hidden cases
        '''def launches_to_dominate(work_us, launch_us, ns):
    def makespan(n):
        if work_us / n >= launch_us:
            return launch_us + work_us
        return n * launch_us + work_us / n
    n = 1
    while makespan(n) <= 2 * work_us:
        n += 1
    return n, [makespan(k) for k in ns]
''',
    ],
    "fewest_chunks": [
        # the right pipeline, but timed without the launches: more chunks always look at least as good
        '''def fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
    def pipeline(n):
        base, extra = divmod(nbytes, n)
        ops = []
        for i in range(n):
            size, s = base + (i < extra), f"s{i % n_streams}"
            ops += [streams.Op(f"h2d{i}", s, size / h2d_Bps * 1e6, "h2d", nbytes=size),
                    streams.Op(f"k{i}", s, size / compute_Bps * 1e6, "compute", sms=132),
                    streams.Op(f"d2h{i}", s, size / d2h_Bps * 1e6, "d2h", nbytes=size)]
        return ops
    for n in range(1, 33):
        if streams.simulate(pipeline(n)).makespan <= target_us:
            return n, pipeline(n)
    return None, []
''',
        # a bisection over 1..32: assumes more chunks never hurt, but launches make the makespan rise again
        '''def fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
    def pipeline(n):
        base, extra = divmod(nbytes, n)
        ops = []
        for i in range(n):
            size, s = base + (i < extra), f"s{i % n_streams}"
            ops += [streams.Op(f"h2d{i}", s, size / h2d_Bps * 1e6, "h2d", nbytes=size),
                    streams.Op(f"k{i}", s, size / compute_Bps * 1e6, "compute", sms=132),
                    streams.Op(f"d2h{i}", s, size / d2h_Bps * 1e6, "d2h", nbytes=size)]
        return ops
    fits = lambda n: streams.simulate(pipeline(n), launch_us=launch_us).makespan <= target_us
    if not fits(32):
        return None, []
    lo, hi = 1, 32
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
    return lo, pipeline(lo)
''',
        # chunks, but all in one stream: nothing overlaps, so it needs more chunks (or none is enough)
        '''def fewest_chunks(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
    for n in range(1, 33):
        base, extra = divmod(nbytes, n)
        ops = []
        for i in range(n):
            size = base + (1 if i < extra else 0)
            ops.append(streams.Op(f"h2d{i}", "s0", size / h2d_Bps * 1e6, "h2d", nbytes=size))
            ops.append(streams.Op(f"k{i}", "s0", size / compute_Bps * 1e6, "compute", sms=132))
            ops.append(streams.Op(f"d2h{i}", "s0", size / d2h_Bps * 1e6, "d2h", nbytes=size))
        if streams.simulate(ops, launch_us=launch_us).makespan <= target_us:
            return n, ops
    return None, []
''',
    ],
}
