"""A student in a real browser: opens the released lab 1, sees the backend banner, answers the exercises (pasted
into the cell editors), runs all cells, clicks nbgrader's Validate and sees success; with a wrong answer to
exercise 1, Validate shows the failing check's message. Screenshots of each step go to harness.ARTIFACTS."""

from __future__ import annotations

import re

import pytest

from grader.scratch import load_notebook, solution_cells
from tests.grading import wrong_answers

from . import harness

LAB = "lab01_blas_roofline"
NOTEBOOK = f"labs/{LAB}/{LAB}.ipynb"
FIRST = "ex1_axpy_cost"  # the exercise the wrong answer goes into

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def answer(page, answers: dict[str, str]) -> None:
    """Paste each answer into the solution cell that starts with the same `def name(` line."""
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    for gid, code in answers.items():
        header = re.search(r"^def \w+\(", code, re.M).group(0)
        cell = panel.locator(".jp-CodeCell", has_text=header).filter(has_text="NotImplementedError")
        if cell.count() == 0:  # answered before (the second test re-answers the same notebook)
            cell = panel.locator(".jp-CodeCell", has_text=header).filter(has_not_text=".check(")
        assert cell.count() == 1, f"{gid}: expected one solution cell with {header!r}, found {cell.count()}"
        harness.replace_cell_source(page, cell.first.element_handle(), code)


@pytest.fixture(scope="module")
def answers(lab_server):
    source = load_notebook(lab_server.checkout / "solutions" / LAB / f"{LAB}.ipynb")
    right = solution_cells(source)
    assert FIRST in right and len(right) >= 2
    return right, {**right, FIRST: wrong_answers(LAB)[FIRST]}


@pytest.fixture(scope="module")
def page(browser_context, lab_server):
    """One student session: the lab stays open across the two tests, as a student's tab would."""
    page = browser_context.new_page()
    harness.open_notebook(page, lab_server, NOTEBOOK)
    yield page
    page.close()


def test_student_answers_runs_all_and_validates(page, lab_server, answers):
    right, _ = answers
    harness.screenshot(page, "student-01-opened-lab")
    answer(page, right)
    harness.screenshot(page, "student-02-answered")

    harness.run_all_and_wait(page)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    banner = panel.locator(".jp-CodeCell", has_text="be = gc.setup()").locator(".jp-OutputArea").inner_text()
    assert re.search(r"gpucourse: (CPU|GPU) backend", banner), f"no backend banner under the setup cell: {banner!r}"
    errors = panel.locator(".jp-OutputArea-output", has_text="Traceback")
    assert errors.count() == 0, f"Run All raised: {errors.first.inner_text()[:1500]}"
    prompts = harness.ran_prompts(page)
    assert prompts and all(re.search(r"\[\d+\]", p) for p in prompts), f"not every cell ran: {prompts}"
    panel.locator(".jp-CodeCell", has_text="be = gc.setup()").scroll_into_view_if_needed()
    harness.screenshot(page, "student-03-ran-all-banner")

    result = harness.validate(page, "student-04-validate-success")
    assert "Success! Your notebook passes all the tests." in result, result[:2000]


def test_wrong_answer_shows_the_failing_check(page, lab_server, answers):
    _, wrong = answers
    answer(page, {FIRST: wrong[FIRST]})  # the other exercises keep the right answers typed before
    harness.screenshot(page, "student-05-wrong-answer-typed")
    result = harness.validate(page, "student-06-validate-failure")  # saves, then runs the file in a fresh kernel
    assert "The following cell failed" in result, result[:2000]
    assert 'lab.problems["axpy_cost"].check(axpy_cost)' in result, result[:2000]
    # the check's own message: what it called, what it expected, what it got
    assert re.search(r"CheckFailure: .*axpy_cost.*expected .*got ", result.replace("\n", " ")), result[:2000]
    assert "passes all the tests" not in result
