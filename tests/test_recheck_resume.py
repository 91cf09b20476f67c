"""The re-check resumes past a step that stops its process (grader/pipeline/recheck.py, run_recheck_resuming): one
runaway exercise (memory exhausted, the process ended, a timeout ignored) costs its own test cell, not the test
cells after it. The check process is replaced here by a fake that replays a worker's lines; the real one is in
tests/test_grade_cli.py (the corpus' exit_kernel and ignore_interrupt submissions)."""

from __future__ import annotations

import json

from grader.pipeline import recheck
from grader.pipeline.recheck import RecheckRun, run_recheck_resuming
from grader.pipeline.steps import Call, End, Exec
from grader.pipeline.verdict import verdicts

# a notebook of three exercises: each a student cell, then a test cell of two calls
STEPS = [Exec("setup", "", student=False)]
for ex in ("ex1", "ex2", "ex3"):
    STEPS += [Exec(ex, "", student=True),
              Call(f"{ex}_test", ex, ex, hidden=False, index=0),
              Call(f"{ex}_test", ex, ex, hidden=False, index=1),
              End(f"{ex}_test")]


def fake_runs(monkeypatch, stop_at):
    """A worker that ends its process when it reaches a step in ``stop_at`` (by the step's own dict), with the
    exit status given there; every other step passes. Returns the list of step lists it was run on."""
    seen = []

    def run(job, steps, *args, **kwargs):
        seen.append(steps)
        lines = []
        for i, st in enumerate(steps):
            key = (getattr(st, "cell", None), getattr(st, "test", None), getattr(st, "index", None))
            if key in stop_at:
                rc, stuck = stop_at[key]
                if stuck:
                    lines.append(json.dumps({"stuck": True}))
                return RecheckRun(lines, rc, False, 1.0)
            lines.append(json.dumps({"step": i, "ok": True, "value": None}))
        lines.append(json.dumps({"done": True}))
        return RecheckRun(lines, 0, False, 1.0)

    monkeypatch.setattr(recheck, "run_recheck", run)
    return seen


class Always:  # every returned value is right
    @staticmethod
    def compare(what, got, want, case):
        return None


class Case:
    @staticmethod
    def call_text(fn):
        return f"{fn}(...)"


EXPECTED = {i: (recheck.Check(st.test, st.problem, st.fn, False), Case(), None)
            for i, st in enumerate(STEPS) if isinstance(st, Call)}
PROBLEMS = {"ex1": Always, "ex2": Always, "ex3": Always}


def test_a_call_that_kills_the_process_costs_its_own_test_cell_only(monkeypatch):
    seen = fake_runs(monkeypatch, {(None, "ex2_test", 0): (-9, False)})
    run = run_recheck_resuming(None, STEPS, "m", None, None, None, [], {})
    assert len(seen) == 2
    # the fresh process: every cell before the runaway (to rebuild the state), then everything after its test
    assert [(s.kind, s.label) for s in seen[1]] == [
        ("exec", "setup"), ("exec", "ex1"), ("exec", "ex2"), ("end", "ex2_test"),
        ("exec", "ex3"), ("call", "ex3_test"), ("call", "ex3_test"), ("end", "ex3_test")]
    checked, tamper, stop = verdicts(STEPS, EXPECTED, run.lines, PROBLEMS)
    assert stop is None and not tamper
    assert checked["ex1_test"]["ok"] and checked["ex3_test"]["ok"]
    assert not checked["ex2_test"]["ok"]
    assert "stopped during this step (killed: a resource limit" in checked["ex2_test"]["message"]
    assert run.resumed == ["step 7 (ex2_test): killed: a resource limit (CPU time, memory, processes)"]


def test_a_student_cell_that_ends_the_process_is_skipped_and_its_exercise_fails(monkeypatch):
    seen = fake_runs(monkeypatch, {("ex1", None, None): (0, False)})
    run = run_recheck_resuming(None, STEPS, "m", None, None, None, [], {})
    assert [s.cell for s in seen[1] if isinstance(s, Exec)] == ["setup", "ex2", "ex3"]
    checked, _, stop = verdicts(STEPS, EXPECTED, run.lines, PROBLEMS)
    assert stop is None and checked["ex2_test"]["ok"] and checked["ex3_test"]["ok"]
    # the fake's calls of ex1 pass (it does not know the cell was skipped); the real worker's raise NameError
    assert "the submission's code ended the process" in run.resumed[0]


def test_a_timeout_ignored_is_named_and_resumed(monkeypatch):
    fake_runs(monkeypatch, {(None, "ex1_test", 1): (3, True)})
    run = run_recheck_resuming(None, STEPS, "m", None, None, None, [], {})
    checked, _, stop = verdicts(STEPS, EXPECTED, run.lines, PROBLEMS)
    assert "ignored the timeout" in checked["ex1_test"]["message"] and "ignored the timeout" in run.resumed[0]
    assert checked["ex2_test"]["ok"] and checked["ex3_test"]["ok"] and stop is None


def test_resumes_are_bounded_and_the_rest_is_not_reached(monkeypatch):
    seen = fake_runs(monkeypatch, {(None, f"{ex}_test", 0): (-9, False) for ex in ("ex1", "ex2", "ex3")})
    run = run_recheck_resuming(None, STEPS, "m", None, None, None, [], {}, resumes=1)
    assert len(seen) == 2 and len(run.resumed) == 1
    checked, _, stop = verdicts(STEPS, EXPECTED, run.lines, PROBLEMS)
    assert not checked["ex1_test"]["ok"] and not checked["ex2_test"]["ok"]
    assert checked["ex3_test"]["message"].startswith("not reached") and stop is not None


def test_a_run_out_of_wall_clock_is_not_resumed(monkeypatch):
    calls = []

    def run(job, steps, *a, **k):
        calls.append(steps)
        return RecheckRun([json.dumps({"step": 0, "ok": True})], -9, True, 100.0)

    monkeypatch.setattr(recheck, "run_recheck", run)
    out = run_recheck_resuming(None, STEPS, "m", None, None, None, [], {})
    assert len(calls) == 1 and out.resumed == [] and out.timed_out
