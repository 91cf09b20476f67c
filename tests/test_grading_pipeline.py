"""Every lab, graded by nbgrader for real: the solution earns full marks, the blank earns zero, and a
plausible wrong answer to each exercise earns less than that exercise's full marks. Grades are read from
nbgrader's gradebook, not inferred."""

from __future__ import annotations

import pytest

from grader import course
from tests import grading

LABS = course.labs()


@pytest.fixture(scope="module", params=LABS)
def graded(request, tmp_path_factory):
    lab = request.param
    gc = grading.make_course(tmp_path_factory.mktemp(lab), lab)
    released, source = gc.released(), gc.source()
    solutions = grading.solution_cells(source)
    wrong = grading.wrong_answers(lab)
    gc.submit("solution", grading.fill(released, solutions))
    gc.submit("blank", released)
    gc.submit("wrong", grading.fill(released, {**solutions, **wrong}))
    gc.autograde()
    return gc, source, solutions, wrong


@pytest.mark.slow
def test_solution_gets_full_marks(graded):
    gc, source, _, _ = graded
    score, max_score = gc.total("solution")
    grades = gc.grades("solution")
    lost = {k: v for k, v in grades.items() if v < grading.test_cells(source).get(k, 0)}
    assert max_score > 0 and score == max_score, f"solution lost points in {lost}"


@pytest.mark.slow
def test_blank_gets_zero(graded):
    gc, source, _, _ = graded
    score, max_score = gc.total("blank")
    earned = {k: v for k, v in gc.grades("blank").items() if v}
    assert max_score > 0 and score == 0, f"the blank lab earned points in {earned}"


@pytest.mark.slow
def test_every_exercise_has_a_wrong_answer(graded):
    gc, source, solutions, wrong = graded
    assert set(wrong) == set(solutions), (
        f"tests/wrong_answers/{gc.lab}.py must have one wrong answer per solution cell; "
        f"missing {sorted(set(solutions) - set(wrong))}, unknown {sorted(set(wrong) - set(solutions))}"
    )


@pytest.mark.slow
def test_wrong_answers_score_less_than_full(graded):
    gc, source, solutions, _ = graded
    tests = grading.test_cells(source)
    grades = gc.grades("wrong")
    for exercise in solutions:
        cells = [t for t in tests if grading.exercise_of(t) == exercise]
        assert cells, f"solution cell {exercise} has no test cells named {exercise}_visible/_hidden"
        earned, full = sum(grades[t] for t in cells), sum(tests[t] for t in cells)
        assert earned < full, f"{exercise}: the plausible wrong answer earned full marks ({earned}/{full})"


@pytest.mark.slow
def test_every_exercise_has_a_visible_and_a_hidden_test(graded):
    _, source, solutions, _ = graded
    for exercise in solutions:
        kinds = {}
        for cell in source["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and grading.exercise_of(meta["grade_id"]) == exercise:
                text = course.source_text(cell["source"])
                kinds[meta["grade_id"].rsplit("_", 1)[1]] = text
        assert "visible" in kinds and "hidden" in kinds, f"{exercise}: needs _visible and _hidden test cells"
        assert "### BEGIN HIDDEN TESTS" in kinds["hidden"], f"{exercise}: the hidden test cell is not hidden"
        assert "hidden=True" in kinds["hidden"], f"{exercise}: the hidden test must run the randomized cases"
