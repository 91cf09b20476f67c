"""Every lab, graded by nbgrader for real: the solution earns full marks, the blank earns zero, and every
plausible wrong answer to each exercise (tests/wrong_answers/<lab>.py: one code string, or a list of them) earns
less than that exercise's full marks. Wrong submission k holds the k-th wrong answer of every exercise. Grades are
read from nbgrader's gradebook, not inferred; what the student sees for each wrong answer is read from the
autograded notebook."""

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
    wrong = grading.wrong_answer_lists(lab)
    gc.submit("solution", grading.fill(released, solutions))
    gc.submit("blank", released)
    for k, answers in enumerate(grading.wrong_submissions(lab)):
        gc.submit(f"wrong-{k + 1}", grading.fill(released, {**solutions, **answers}))
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
    gc, source, solutions, wrong = graded
    tests = grading.test_cells(source)
    for exercise in solutions:
        cells = [t for t in tests if grading.exercise_of(t) == exercise]
        assert cells, f"solution cell {exercise} has no test cells named {exercise}_visible/_hidden"
        full = sum(tests[t] for t in cells)
        for k in range(len(wrong[exercise])):  # submission k holds this exercise's k-th wrong answer
            grades = gc.grades(f"wrong-{k + 1}")
            earned = sum(grades[t] for t in cells)
            assert earned < full, f"{exercise}: wrong answer {k + 1} of {len(wrong[exercise])} earned full marks " \
                                  f"({earned}/{full})"


@pytest.mark.slow
def test_wrong_answers_show_their_message_not_a_traceback(graded):
    """What the student sees under each failing test cell (and in Validate, and in the feedback): the check's
    message on the first line, no frame of the grader, a few lines at most."""
    gc, source, solutions, wrong = graded
    for k in range(max(len(v) for v in wrong.values())):
        for cell, out in grading.error_outputs(gc, f"wrong-{k + 1}").items():
            text = grading.strip_ansi("\n".join(out["traceback"]))
            message = " ".join(text.split("\n\n")[0].split())  # the first paragraph: the message, wrapped at 100 columns
            assert message == " ".join(f"{out['ename']}: {out['evalue']}".split()), \
                f"{cell}: the message is not first:\n{text[:800]}"
            assert "Traceback" not in text and "grader/" not in text and "problem.py" not in text, \
                f"{cell}: the grader's frames are shown:\n{text[:1500]}"
            assert len(text.splitlines()) <= 16, f"{cell}: {len(text.splitlines())} lines:\n{text[:1500]}"


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
