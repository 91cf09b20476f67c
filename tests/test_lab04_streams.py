"""Lab 4: the DAG exercise's checker accepts every schedule that guarantees the dependencies without extra
ordering, and catches races, premature events, serialised engines and false dependencies in shared queues; the
inverse exercises (max_duration, fewest_chunks) have exact answers that the forward model alone does not give."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import streams as st
from grader.checks import CheckFailure
from grader.answers import lab04_streams as answers  # the instructor's side: references, hidden-case generators
from grader.labs import lab04_streams as lab

DAG = lab.problems["schedule_dag"]


def _cases():
    return DAG.visible + DAG.hidden_cases()


def _judge(fn):
    verdicts = []
    for case in _cases():
        try:
            DAG.compare("schedule_dag", fn(*case.args), answers.schedule_dag(*case.args), case)
            verdicts.append(True)
        except CheckFailure as exc:
            verdicts.append(str(exc))
    return verdicts


def follow_last_dependency(tasks, deps):  # another correct greedy: prefers the last-listed dependency
    last, ops = {}, []
    for name, engine, us, sms in tasks:
        needs = list(deps.get(name, ()))
        stream = next((s for s, t in reversed(list(last.items())) if t in needs[::-1]), None) or f"s{len(last)}"
        ops.append(st.Op(name, stream, us, engine, sms=sms, waits=tuple(d for d in needs if d != last.get(stream))))
        last[stream] = name
    return ops


def test_sound_schedules_pass_every_case():
    assert all(v is True for v in _judge(answers.schedule_dag))
    assert all(v is True for v in _judge(follow_last_dependency))

    def with_redundant_waits(tasks, deps):  # waits that stream order already implies change nothing
        ops = answers.schedule_dag(tasks, deps)
        return [st.Op(o.name, o.stream, o.duration, o.engine, sms=o.sms, waits=tuple(deps.get(o.name, ())))
                for o in ops]

    assert all(v is True for v in _judge(with_redundant_waits))


def test_plausible_wrong_schedules_fail_some_cases_with_a_reason():
    per_engine = _judge(lambda t, d: [st.Op(n, e, us, e, sms=s, waits=tuple(d.get(n, ()))) for n, e, us, s in t])
    assert sum(v is not True for v in per_engine) >= 5 and any("too few streams" in str(v) for v in per_engine)
    per_task = _judge(answers.one_stream_per_task)
    assert any("hardware queues" in str(v) for v in per_task)
    assert all(v is not True for v in per_task[-3:])  # the three false-dependency hidden cases
    one = _judge(lambda t, d: [st.Op(n, "s", us, e, sms=s) for n, e, us, s in t])
    assert all(v is not True for v in one)

    def forgets_cross_events(tasks, deps):  # follows the pipelines, but no events at all
        return [st.Op(o.name, o.stream, o.duration, o.engine, sms=o.sms) for o in answers.schedule_dag(tasks, deps)]

    assert any("race" in str(v) for v in _judge(forgets_cross_events))


def test_events_on_tasks_issued_later_are_refused():
    case = DAG.visible[0]
    tasks, deps = case.args
    rest = [o for o in answers.schedule_dag(tasks, deps) if o.name not in ("in0", "k0")]
    k0_first = [st.Op("k0", "b", 50.0, sms=40, waits=("in0",)), st.Op("in0", "a", 20.0, "h2d")] + rest
    with pytest.raises(CheckFailure, match="issued after it"):
        DAG.compare("schedule_dag", k0_first, answers.schedule_dag(tasks, deps), case)
    with pytest.raises(CheckFailure, match="expected every task once"):
        DAG.compare("schedule_dag", answers.schedule_dag(tasks, deps)[:-1], answers.schedule_dag(tasks, deps), case)


def test_reference_reaches_the_ideal_on_many_random_graphs():
    rng = np.random.default_rng(7)
    for _ in range(300):
        tasks, deps = answers.random_dag(rng, int(rng.integers(2, 5))).args
        ref = answers.schedule_dag(tasks, deps)
        assert not st.races([st.Op(o.name, o.stream, o.duration, o.engine, sms=o.sms, waits=o.waits,
                                   writes=(o.name,), reads=tuple(deps.get(o.name, ()))) for o in ref])
        assert len({o.stream for o in ref}) <= 8
        assert st.simulate(ref).makespan == pytest.approx(answers.dag_target(tasks, deps), rel=1e-12)


def test_the_check_target_is_the_ideal_and_the_ideal_stays_on_the_answer_side():
    """The check compares with the reference's makespan: on every visible case and the hidden cases of 40 seeds
    (200 checked once by hand) that is the ideal's makespan exactly, so the target did not move. The ideal schedule
    (one stream per task, waits = dependencies) answers every case that needs at most 8 streams: the exercise side
    must not hold it."""
    assert not hasattr(lab, "dag_ideal") and not hasattr(lab, "dag_target")
    for seed in range(40):
        for case in (DAG.visible if seed == 0 else []) + DAG.hidden_cases(seed):
            ref = st.simulate(answers.schedule_dag(*case.args)).makespan
            assert ref == pytest.approx(answers.dag_target(*case.args), rel=1e-12), (seed, case)
    small = [c for c in _cases() if len(c.args[0]) <= 8]
    assert small
    for case in small:  # why it is an answer: on 8 streams or fewer it is a schedule the check accepts
        DAG.compare("schedule_dag", answers.dag_ideal(*case.args), answers.schedule_dag(*case.args), case)


def _time_call_with(stat):
    def time_call(f, x, repeat, clock):
        t0 = clock()
        f(x).block_until_ready()
        first = clock() - t0
        times = []
        for _ in range(repeat):
            t0 = clock()
            f(x).block_until_ready()
            times.append(clock() - t0)
        return first, float(stat(times))

    return time_call


def test_time_call_median_is_told_from_mean_and_min():
    """Review finding 5: a load spike and a lucky fast call make the mean and the minimum wrong, visibly and hidden;
    the median (the spec) passes."""
    for stat in (np.mean, np.min):
        for hidden in (False, True):
            with pytest.raises(CheckFailure, match="steady state"):
                lab.TIMING.check(_time_call_with(stat), hidden=hidden)
    lab.TIMING.check(_time_call_with(np.median), hidden=True)


def test_time_call_cases_travel_as_data_and_every_call_gets_a_fresh_queue():
    """Issue 14: time_call's cases are data (TimingSetup, no shared objects): they go to a sandbox and come back as
    equal setups with the same reference answer, nothing in them is opaque to the grader's verdict, every call of
    the student's function gets a new queue and a function not compiled yet (a re-run cell sees the same), and the
    visible expected values are the hand-worked ones: first = compile + launch + work, steady = launch + work·factor."""
    from grader.pipeline.wire import decode_cases, encode, encode_cases, has_unsupported

    cases = lab.TIMING.visible + lab.TIMING.hidden_cases()
    back = decode_cases(encode_cases(cases))
    assert len(back) == len(cases) == 3 + 3 + 4 + 4
    for case, again in zip(cases, back):
        assert isinstance(again.args[0], lab.TimingSetup) and again.args[0] == case.args[0]
        assert answers.time_call_reference(*again.args) == answers.time_call_reference(*case.args)
        assert not has_unsupported(encode((case.args, case.kwargs)))
        assert again.call_text("time_call") == case.call_text("time_call")
    assert lab.TIMING.visible[0].call_text("time_call") == (
        "time_call(<jit f: compiles in 800 µs, 250 µs of device work per call, launch 4 µs>, <float32 array (4,)>, 5, "
        "<virtual clock [s]>)")
    expected = lab.TIMING.visible_expected()
    assert expected[0] == pytest.approx((1054e-6, 254e-6), rel=1e-12)
    assert expected[1] == pytest.approx((345e-6, 45e-6), rel=1e-12)
    assert expected[2] == pytest.approx((604e-6, 114e-6), rel=1e-12)  # median factor 1.1 of TIMING_SPREAD

    seen = []

    def records_its_arguments(f, x, repeat, clock):
        if isinstance(f, st.SimulatedJit):  # (the visible check's last call times a real jax.jit function)
            seen.append((f, clock(), f.compiled))
        return _time_call_with(np.median)(f, x, repeat, clock)

    for _ in range(2):  # the visible cell run twice
        lab.TIMING.check(records_its_arguments)
    assert len({id(f) for f, _, _ in seen}) == len(seen) == 6
    assert all(t == 0.0 and not compiled for _, t, compiled in seen)


def test_time_call_is_judged_in_the_grader_from_plain_data():
    """Issue 14: the re-check sends time_call's cases to the worker as data (no seed, no generator there); the worker
    step (``Problem.call`` on the decoded case: built afresh) returns (first, steady) as plain numbers, and the grader
    judges them against its own fresh build — a wrong answer fails there with the check's message (while the cases
    were objects, such a failure was opaque to the grader and nbgrader's kernel decided)."""
    import json

    from grader import course, grade
    from grader.pipeline import recheck, verdict
    from grader.pipeline.wire import decode_cases, encode

    name = "lab04_streams"
    released = json.loads((course.ROOT / "labs" / name / f"{name}.ipynb").read_text(encoding="utf-8"))
    for p in lab.problems.values():
        p.has_answers()
    steps, expected = recheck.plan(grade.Lab.find(name), released, {"time_call": 11})
    calls = {i: s for i, s in enumerate(steps) if s["kind"] == "call" and s["problem"] == "time_call"}
    assert len(calls) == 3 + 11 and all("case" in s and not s.get("observe") for s in calls.values())
    sent = decode_cases([s["case"] for s in calls.values()])
    assert [c.args for c in sent] == [c.args for c in lab.TIMING.visible + lab.TIMING.hidden_cases(seed=11)]

    def judged(fn):
        lines = [json.dumps({"step": i, "ok": True, "value": encode(lab.TIMING.call(fn, case))})  # the worker's part
                 for i, case in zip(calls, sent)]
        lines += [json.dumps({"step": i, "ok": True, "value": ""}) for i, s in enumerate(steps)
                  if s.get("problem") == "time_call" and s["kind"] == "after"]
        lines += [json.dumps({"step": i, "ok": True}) for i, s in enumerate(steps)
                  if s["kind"] == "end" and s["test"].startswith("ex3_time_call")] + [json.dumps({"done": True})]
        checked = verdict.verdicts(steps, expected, lines, lab.problems)[0]
        return {k: v for k, v in checked.items() if k.startswith("ex3_time_call")}

    assert judged(_time_call_with(np.median)) == {"ex3_time_call_visible": {"ok": True, "message": ""},
                                                   "ex3_time_call_hidden": {"ok": True, "message": ""}}
    wrong = judged(_time_call_with(np.mean))
    assert set(wrong) == {"ex3_time_call_visible", "ex3_time_call_hidden"}
    assert all(not v["ok"] and "→ steady state [s]" in v["message"] for v in wrong.values()), wrong


def _launches_with(dominated, busy_regime=True):
    def launches_to_dominate(work_us, launch_us):
        def makespan(n):
            if busy_regime and work_us / n >= launch_us:
                return launch_us + work_us
            return n * launch_us + work_us / n

        makespans = [makespan(1)]
        while not dominated(makespans[-1], 2 * work_us):
            makespans.append(makespan(len(makespans) + 1))
        return len(makespans), makespans

    return launches_to_dominate


def test_launches_catch_ties_and_the_missing_busy_regime():
    """Review finding 6: ">=" instead of ">" fails on the exact ties T(N) == 2·work; T = N·launch + work/N for every N
    gives the same N but wrong makespans in the busy regime; the right answer passes."""
    strictly = _launches_with(lambda t, limit: t > limit)
    lab.LAUNCHES.check(strictly)
    lab.LAUNCHES.check(strictly, hidden=True)
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="→ N"):
            lab.LAUNCHES.check(_launches_with(lambda t, limit: t >= limit), hidden=hidden)
        with pytest.raises(CheckFailure, match=r"→ T\("):
            lab.LAUNCHES.check(_launches_with(lambda t, limit: t > limit, busy_regime=False), hidden=hidden)
    for case in lab.LAUNCH_TIES:  # the ties are exact: T(N) == 2·work at the N before the answer
        n, makespans = answers.launches_to_dominate(*case.args)
        assert makespans[-2] == 2 * case.args[0]


def _trimmed_mean(times):  # drops the fastest and the slowest call
    return np.mean(sorted(times)[1:-1]) if len(times) > 2 else np.mean(times)


def _interquartile_mean(times):
    lo, hi = np.percentile(times, [25, 75])
    return np.mean([t for t in times if lo <= t <= hi])


def _time_call_including_first(f, x, repeat, clock):  # the median over the compiling call and the timed ones
    times = []
    for _ in range(repeat + 1):
        t0 = clock()
        f(x).block_until_ready()
        times.append(clock() - t0)
    return times[0], float(np.median(times))


@pytest.mark.parametrize("name, fn", [
    ("trimmed mean", _time_call_with(_trimmed_mean)),
    ("interquartile mean", _time_call_with(_interquartile_mean)),
    ("second-smallest", _time_call_with(lambda t: sorted(t)[min(1, len(t) - 1)])),
    ("mode", _time_call_with(lambda t: __import__("statistics").mode(t))),
    ("median of times[1:]", _time_call_with(lambda t: np.median(t[1:]) if len(t) > 1 else t[0])),
    ("median including the compiling call", _time_call_including_first),
])
def test_time_call_only_the_median_fits(name, fn):
    """Review r2 finding 2: every timed call has its own factor, two or more spikes, odd repeat counts: statistics
    that are 'robust like the median' fail, visibly and hidden."""
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="steady state"):
            lab.TIMING.check(fn, hidden=hidden)


def test_spread_factors_are_distinct_with_spikes_and_a_median_off_the_first_call():
    rng = np.random.default_rng(3)
    for _ in range(200):
        repeat = int(rng.choice([5, 7, 9]))
        spikes = int(rng.integers(2, (repeat - 1) // 2 + 1))
        f = answers.spread_factors(rng, repeat, spikes)
        values = [f[k] for k in range(1, repeat + 1)]
        assert len(set(values)) == repeat and sum(v >= 3 for v in values) == spikes
        assert values[0] != np.median(values)


def _simulated_launches(work_us, launch_us):
    """A correct plain event simulation, O(N²): kernel i is queued at i·launch and starts when queued and its
    predecessor is done; T(N) is when kernel N ends."""
    makespans = []
    while not makespans or makespans[-1] <= 2 * work_us:
        n, fin = len(makespans) + 1, 0.0
        for i in range(1, n + 1):
            fin = max(i * launch_us, fin) + work_us / n
        makespans.append(fin)
    return len(makespans), makespans


def test_launches_a_kernel_by_kernel_simulation_passes_in_time():
    """Review r2 finding 3: the spec bounds N (≤ 2,000), so an O(N²) simulation of the spec passes every case."""
    lab.LAUNCHES.check(_simulated_launches)
    lab.LAUNCHES.check(_simulated_launches, hidden=True)
    for seed in range(50):
        for case in lab.LAUNCHES.hidden_cases(seed):
            assert answers.launches_to_dominate(*case.args)[0] <= lab.MAX_LAUNCHES


def test_launch_draws_keep_the_spec_promise_and_the_boundaries_are_drawn():
    """Issue 13: random draws keep T(N) and T(N − 1) clear of 2·work (so a kernel-by-kernel simulation, which adds
    in another order, decides as the formula does); N = 1 and the work == launch boundary are always there."""
    for seed in range(40):
        cases = lab.LAUNCHES.hidden_cases(seed)
        assert all(answers._clear_of_ties(c) for c in cases[:7])
        found = [answers.launches_to_dominate(*c.args)[0] for c in cases]
        assert 1 in found and answers.launches_to_dominate(6.5, 6.5)[0] == 2
        for case in cases:
            lab.LAUNCHES.compare("launches", _simulated_launches(*case.args), answers.launches_to_dominate(*case.args),
                                 case)


def test_time_call_hidden_cases_catch_a_clock_read_as_a_duration_and_a_call_on_another_argument():
    def clock_from_zero(f, x, repeat, clock):  # takes clock() itself for the first call's duration
        f(x).block_until_ready()
        first = clock()
        times = []
        for _ in range(repeat):
            t0 = clock()
            f(x).block_until_ready()
            times.append(clock() - t0)
        return first, float(np.median(times))

    def warms_up_on_none(f, x, repeat, clock):  # the first call on something else: the timed calls compile again
        t0 = clock()
        f(None).block_until_ready()
        first = clock() - t0
        times = []
        for _ in range(repeat):
            t0 = clock()
            f(x).block_until_ready()
            times.append(clock() - t0)
        return first, float(np.median(times))

    for wrong, message in ((clock_from_zero, "first call"), (warms_up_on_none, "steady state")):
        with pytest.raises(CheckFailure, match=message):
            lab.TIMING.check(wrong, hidden=True)


def _spec_pipeline(nbytes, n, n_streams, h2d_Bps, compute_Bps, d2h_Bps, nbytes_field=True):
    base, extra = divmod(nbytes, n)
    ops = []
    for i in range(n):
        size, s = base + (i < extra), f"s{i % n_streams}"
        copy = {"nbytes": size} if nbytes_field else {}
        ops += [st.Op(f"h2d{i}", s, size / h2d_Bps * 1e6, "h2d", **copy), st.Op(f"k{i}", s, size / compute_Bps * 1e6, sms=132),
                st.Op(f"d2h{i}", s, size / d2h_Bps * 1e6, "d2h", **copy)]
    return ops


def test_fewest_chunks_copies_must_say_their_bytes():
    def no_nbytes(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):  # right durations, no nbytes
        for n in range(1, 33):
            ops = _spec_pipeline(nbytes, n, n_streams, h2d_Bps, compute_Bps, d2h_Bps, nbytes_field=False)
            if st.simulate(ops, launch_us=launch_us).makespan <= target_us:
                return n, ops
        return None, []

    with pytest.raises(CheckFailure, match="nbytes"):
        lab.CHUNKS.check(no_nbytes)
    lab.CHUNKS.check(answers.fewest_chunks, hidden=True)


def test_fewest_chunks_answer_is_the_first_count_and_the_cases_are_clear_of_ties():
    """Issue 20: the answer is the smallest count whose makespan (launches included) is within the target, every
    makespan up to the answer (and the 33rd for the "none" case) keeps a relative 1e-6 from the target, the hidden
    cases hold n = 1, a count past which the makespan rises above the target again (a bisection misses it), a
    target that only 33 chunks would meet, 31 or 32 chunks, and a target equal to a makespan."""
    n, _ = answers.fewest_chunks(*answers.CHUNK_TIE.args)
    assert n == 4 and answers.pipeline_makespan(*answers.CHUNK_TIE.args[:1], 4, *answers.CHUNK_TIE.args[1:6]) == 23445.5
    for seed in range(6):
        kinds = {"one": False, "u": False, "none": False, "last": False}
        cases = lab.CHUNKS.hidden_cases(seed)
        assert answers.CHUNK_TIE in cases
        for case in lab.CHUNKS.visible + [c for c in cases if c != answers.CHUNK_TIE]:
            nbytes, n_streams, h, k, d, launch, target = case.args
            n, ops = answers.fewest_chunks(*case.args)
            m = [answers.pipeline_makespan(nbytes, c, n_streams, h, k, d, launch) for c in range(1, (n or 33) + 1)]
            assert all(abs(t - target) > 1e-6 * target for t in m)
            if n is None:
                assert min(m[:32]) > target and (seed > 0 or case in lab.CHUNKS.visible or m[32] < target)
                kinds["none"] = True
                continue
            assert m[-1] <= target and all(t > target for t in m[:-1])
            assert st.simulate(ops, launch_us=launch).makespan == m[-1]
            kinds["one"] |= n == 1
            kinds["last"] |= n >= 31
            kinds["u"] |= any(answers.pipeline_makespan(nbytes, c, n_streams, h, k, d, launch) > target
                              for c in range(n + 1, 33))
        assert all(kinds.values()), (seed, kinds)


def test_fewest_chunks_a_stream_per_engine_is_another_pipeline():
    """The course's §4.7 shape (a stream per engine, events between) fails: the check wants the spec's pipeline."""
    def per_engine(nbytes, n_streams, h2d_Bps, compute_Bps, d2h_Bps, launch_us, target_us):
        for n in range(1, 33):
            ops = []
            for o in _spec_pipeline(nbytes, n, n_streams, h2d_Bps, compute_Bps, d2h_Bps):
                i = o.name.split("h2d")[-1].split("k")[-1].split("d2h")[-1]
                waits = {"h2d": (), "compute": (f"h2d{i}",), "d2h": (f"k{i}",)}[o.engine]
                ops.append(st.Op(o.name, o.engine, o.duration, o.engine, sms=o.sms, nbytes=o.nbytes, waits=waits))
            if st.simulate(ops, launch_us=launch_us).makespan <= target_us:
                return n, ops
        return None, []

    with pytest.raises(CheckFailure):
        lab.CHUNKS.check(per_engine, hidden=True)


def test_max_duration_is_the_inverse_the_model_does_not_give():
    """Issue 20: the makespan (the old exercise's answer, one call of simulate) fails; the spec's two ways pass — a
    search with simulate on unlimited SMs and queues, and the chains through the op — while the same search on the
    default machine (8 hardware queues) fails the hidden case with ten streams."""
    wide = st.Machine(sms=10**6, connections=None)

    def searched(machine):
        def max_duration(streams, durations, waits, op, deadline_us):
            def makespan(d):
                ops = [st.Op(n, s, float(d if n == op else durations[n]), waits=tuple(waits.get(n, ())))
                       for s, c in streams.items() for n in c]
                return st.simulate(ops, machine).makespan
            if makespan(0.0) > deadline_us:
                return None
            lo, hi = 0.0, deadline_us
            for _ in range(80):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if makespan(mid) <= deadline_us else (lo, mid)
            return lo
        return max_duration

    lab.MAX_DURATION.check(searched(wide))
    lab.MAX_DURATION.check(searched(wide), hidden=True)
    with pytest.raises(CheckFailure):
        lab.MAX_DURATION.check(searched(st.Machine()), hidden=True)

    def the_makespan(streams, durations, waits, op, deadline_us):
        return answers.schedule_end(streams, durations, waits)

    for hidden in (False, True):
        with pytest.raises(CheckFailure):
            lab.MAX_DURATION.check(the_makespan, hidden=hidden)
    expected = lab.MAX_DURATION.visible_expected()
    assert expected == [45.0, 45.0, None, 2.0]  # worked by hand: 100 − A − C; 90 − (H + I); I's stream alone is 75


def test_max_duration_hidden_cases_hold_every_kind():
    """Critical and non-critical ops, None, a deadline met exactly with the op at 0 µs (None's boundary), and the
    ten-stream case."""
    for seed in range(10):
        cases = lab.MAX_DURATION.hidden_cases(seed)
        results = [answers.max_duration(*c.args) for c in cases]
        assert None in results
        critical = [r is not None and r == c.args[1][c.args[3]] + c.args[4] - answers.schedule_end(*c.args[:3])
                    for c, r in zip(cases, results)]
        assert any(critical) and not all(r is None or k for r, k in zip(results, critical))
        exact = [c for c in cases if answers.schedule_end(c.args[0], {**c.args[1], c.args[3]: 0.0}, c.args[2]) == c.args[4]]
        grown = [answers.max_duration(*c.args) for c in exact]  # the boundary of None, from both sides of 1 µs
        assert None not in grown and any(g >= 1 for g in grown) and any(g < 1 for g in grown)
