"""Stage e of the pipeline on its own (grader/pipeline/verdict.py): the worker's result lines and
the planned steps in, one verdict per test cell out — judged here, failed closed."""

from __future__ import annotations

import json

from grader.checks import CheckFailure
from grader.pipeline.steps import After, Call, End, Exec
from grader.pipeline.verdict import verdicts
from grader.problem import Case


class _Check:
    fn, problem = "double", "double"


class _Double:
    """A problem whose answer for x is 2x, compared exactly."""

    def compare(self, what, got, want, case):
        if got != want:
            raise CheckFailure(f"{what}: expected {want}, got {got}")


PROBLEMS = {"double": _Double()}
STEPS = [Exec("double", "def double(x): ...", student=True),
         Call("double_visible", "double", "double", hidden=False, index=0),
         Call("double_visible", "double", "double", hidden=False, index=1),
         End("double_visible")]
EXPECTED = {1: (_Check(), Case((2,)), 4), 2: (_Check(), Case((5,)), 10)}


def _lines(*records):
    return [json.dumps(r) for r in records]


def test_right_answers_pass_and_a_wrong_one_says_expected_and_got():
    ok = _lines({"step": 0, "ok": True}, {"step": 1, "ok": True, "value": 4},
                {"step": 2, "ok": True, "value": 10}, {"step": 3, "ok": True}, {"done": True})
    assert verdicts(STEPS, EXPECTED, ok, PROBLEMS) == ({"double_visible": {"ok": True, "message": ""}},
                                                      [], None)
    wrong = _lines({"step": 0, "ok": True}, {"step": 1, "ok": True, "value": 4},
                   {"step": 2, "ok": True, "value": 11}, {"step": 3, "ok": True}, {"done": True})
    cell = verdicts(STEPS, EXPECTED, wrong, PROBLEMS)[0]["double_visible"]
    assert not cell["ok"] and cell["message"] == "double(5): expected 10, got 11"


def test_a_call_that_raised_names_the_student_cell_that_failed_before_it():
    lines = _lines({"step": 0, "ok": False, "error": "SyntaxError: invalid syntax"},
                   {"step": 1, "ok": False, "error": "NameError: name 'double' is not defined"},
                   {"done": True})
    cell = verdicts(STEPS, EXPECTED, lines, PROBLEMS)[0]["double_visible"]
    assert not cell["ok"]
    assert "raised NameError" in cell["message"] and "cell double raised SyntaxError" in cell["message"]


def test_steps_the_worker_never_reached_fail_closed():
    lines = _lines({"step": 0, "ok": True}, {"step": 1, "ok": True, "value": 4})  # then it died
    checked, _, stop = verdicts(STEPS, EXPECTED, lines, PROBLEMS)
    assert not checked["double_visible"]["ok"] and "not reached" in checked["double_visible"]["message"]
    assert stop == "the check process stopped after step 2 of 4"


def test_tampering_fails_every_test_cell_after_it():
    steps = STEPS + [After("double_visible", "double", "double", hidden=False)]
    lines = _lines({"step": 0, "ok": True}, {"step": 0, "tampered": ["numpy.allclose"]},
                   {"step": 1, "ok": True, "value": 4}, {"step": 2, "ok": True, "value": 10},
                   {"step": 3, "ok": True}, {"step": 4, "ok": True}, {"done": True})
    checked, tamper, _ = verdicts(steps, EXPECTED, lines, PROBLEMS)
    assert tamper == ["code in double replaced numpy.allclose"]
    assert not checked["double_visible"]["ok"] and "not trusted" in checked["double_visible"]["message"]


def test_a_failed_extra_check_fails_its_cell():
    steps = STEPS[:3] + [After("double_visible", "double", "double", hidden=False), STEPS[3]]
    lines = _lines({"step": 0, "ok": True}, {"step": 1, "ok": True, "value": 4},
                   {"step": 2, "ok": True, "value": 10},
                   {"step": 3, "ok": False, "error": "the timer waited for nothing"},
                   {"step": 4, "ok": True}, {"done": True})
    cell = verdicts(steps, EXPECTED, lines, PROBLEMS)[0]["double_visible"]
    assert cell == {"ok": False, "message": "the timer waited for nothing"}
