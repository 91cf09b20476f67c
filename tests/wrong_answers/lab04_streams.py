"""Plausible wrong answers to lab 4, one per solution cell: each must score less than full marks."""

WRONG = {
    # ignores the events: every stream on its own, the longest stream sets the makespan
    "ex1_predict_makespan": '''def predict_makespan(streams, durations, waits):
    return max(sum(durations[op] for op in chain) for chain in streams.values())
''',
    # the classic "copy stream + compute stream" pattern, one stream per engine, with an event for every dependency:
    # correct, but kernels that could share the SMs run one after another in the compute stream
    "ex2_schedule_dag": '''def schedule_dag(tasks, deps):
    return [streams.Op(name, engine, us, engine, sms=sms, waits=tuple(deps.get(name, [])))
            for name, engine, us, sms in tasks]
''',
    # adds the warm-up but still stops the clock before the work is done
    "ex3_time_call": '''def time_call(f, x, repeat, clock):
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
    # one formula for every N, T = N·launch + work/N: ignores that kernels longer than a launch keep the GPU busy
    # (T = launch + work), so the small-N makespans are wrong (the N it finds is the same: review finding 6)
    "ex4_launches_to_dominate": '''def launches_to_dominate(work_us, launch_us):
    makespans = [launch_us + work_us]
    while makespans[-1] <= 2 * work_us:
        n = len(makespans) + 1
        makespans.append(n * launch_us + work_us / n)
    return len(makespans), makespans
''',
    # chunks, but all in one stream: nothing overlaps
    "ex5_chunked_overlap": '''def chunked_overlap(nbytes, n_chunks, n_streams, h2d_Bps, compute_Bps, d2h_Bps):
    base, extra = divmod(nbytes, n_chunks)
    ops = []
    for i in range(n_chunks):
        size = base + (1 if i < extra else 0)
        ops.append(streams.Op(f"h2d{i}", "s0", size / h2d_Bps * 1e6, "h2d", nbytes=size))
        ops.append(streams.Op(f"k{i}", "s0", size / compute_Bps * 1e6, "compute", sms=132))
        ops.append(streams.Op(f"d2h{i}", "s0", size / d2h_Bps * 1e6, "d2h", nbytes=size))
    return ops
''',
}
