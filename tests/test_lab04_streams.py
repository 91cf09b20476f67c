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
