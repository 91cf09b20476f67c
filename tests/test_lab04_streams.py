"""Lab 4's DAG exercise: the checker accepts every schedule that guarantees the dependencies without extra
ordering, and catches races, premature events, serialised engines and false dependencies in shared queues."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import streams as st
from grader.checks import CheckFailure
from grader.labs import lab04_streams as lab

DAG = lab.problems["schedule_dag"]


def _cases():
    return DAG.visible + DAG.hidden_cases()


def _judge(fn):
    verdicts = []
    for case in _cases():
        try:
            DAG.compare("schedule_dag", fn(*case.args), None, case)
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
    assert all(v is True for v in _judge(lab.schedule_dag))
    assert all(v is True for v in _judge(follow_last_dependency))

    def with_redundant_waits(tasks, deps):  # waits that stream order already implies change nothing
        ops = lab.schedule_dag(tasks, deps)
        return [st.Op(o.name, o.stream, o.duration, o.engine, sms=o.sms, waits=tuple(deps.get(o.name, ())))
                for o in ops]

    assert all(v is True for v in _judge(with_redundant_waits))


def test_plausible_wrong_schedules_fail_some_cases_with_a_reason():
    per_engine = _judge(lambda t, d: [st.Op(n, e, us, e, sms=s, waits=tuple(d.get(n, ()))) for n, e, us, s in t])
    assert sum(v is not True for v in per_engine) >= 5 and any("too few streams" in str(v) for v in per_engine)
    per_task = _judge(lab.one_stream_per_task)
    assert any("hardware queues" in str(v) for v in per_task)
    assert all(v is not True for v in per_task[-3:])  # the three false-dependency hidden cases
    one = _judge(lambda t, d: [st.Op(n, "s", us, e, sms=s) for n, e, us, s in t])
    assert all(v is not True for v in one)

    def forgets_cross_events(tasks, deps):  # follows the pipelines, but no events at all
        return [st.Op(o.name, o.stream, o.duration, o.engine, sms=o.sms) for o in lab.schedule_dag(tasks, deps)]

    assert any("race" in str(v) for v in _judge(forgets_cross_events))


def test_events_on_tasks_issued_later_are_refused():
    case = DAG.visible[0]
    tasks, deps = case.args
    rest = [o for o in lab.schedule_dag(tasks, deps) if o.name not in ("in0", "k0")]
    k0_first = [st.Op("k0", "b", 50.0, sms=40, waits=("in0",)), st.Op("in0", "a", 20.0, "h2d")] + rest
    with pytest.raises(CheckFailure, match="issued after it"):
        DAG.compare("schedule_dag", k0_first, None, case)
    with pytest.raises(CheckFailure, match="expected every task once"):
        DAG.compare("schedule_dag", lab.schedule_dag(tasks, deps)[:-1], None, case)


def test_reference_reaches_the_ideal_on_many_random_graphs():
    rng = np.random.default_rng(7)
    for _ in range(300):
        tasks, deps = lab.random_dag(rng, int(rng.integers(2, 5))).args
        ref = lab.schedule_dag(tasks, deps)
        assert not st.races([st.Op(o.name, o.stream, o.duration, o.engine, sms=o.sms, waits=o.waits,
                                   writes=(o.name,), reads=tuple(deps.get(o.name, ()))) for o in ref])
        assert len({o.stream for o in ref}) <= 8
        assert st.simulate(ref).makespan <= lab.dag_target(tasks, deps) + 1e-9


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
        n, makespans = lab.launches_to_dominate(*case.args)
        assert makespans[-2] == 2 * case.args[0]
