"""A student in a real browser: opens the released lab 1, sees the backend banner, answers the exercises (pasted
into the cell editors), runs all cells (each visible check says the hidden tests run at grading), clicks
nbgrader's Validate and sees success; with a wrong answer to exercise 1, Validate shows the failing check's message
as the first line of the error, not a traceback through the grader; a search loop that never ends is stopped by the
check's time limit and Validate says so, long before nbgrader's 60 s cell timeout. Screenshots of each step go to
harness.ARTIFACTS."""

from __future__ import annotations

import re
import time

import pytest

from grader.scratch import load_notebook, solution_cells
from tests.grading import wrong_answers

from . import harness

LAB = "lab01_blas_roofline"
NOTEBOOK = f"labs/{LAB}/{LAB}.ipynb"
FIRST = "axpy_calls"  # the exercise the wrong answer goes into
SEARCH = "min_batch_compute_bound"  # a search a student may write as `while True:` with no way out
NEVER_ENDS = '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    size = np.dtype(dtype).itemsize
    b = 1
    while True:  # forgets the layers that never reach the ridge point: for them this loop never ends
        if 2 * b * d_in * d_out / (size * (b * d_in + d_in * d_out + b * d_out)) >= peak_flops / bandwidth:
            return b
        b += 1
'''

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
    # what a visible check proved, in its own output: the hidden tests are still to come
    check = panel.locator(".jp-CodeCell", has_text='lab.problems["axpy_calls"].check(axpy_calls)').locator(".jp-OutputArea")
    assert re.search(r"✓ axpy_calls: \d+ visible cases? passed\s+These were the visible cases only: hidden tests with "
                     r"other inputs run when your lab is graded", check.inner_text()), check.inner_text()

    result = harness.validate(page, "student-04-validate-success")
    assert "Success! Your notebook passes all the tests." in result, result[:2000]


def failed_cells(page) -> list[tuple[str, str, bool]]:
    """(cell source, error text, is the error's first line inside the dialog's visible area) per failed cell of
    the open Validation Results dialog (nbgrader's markup: a <pre> with the source, then a <pre> with the error)."""
    return page.evaluate("""() => {
        const dialog = document.querySelector('.jp-Dialog .jp-Dialog-body');
        const pres = [...dialog.querySelectorAll('.validation-failed .jp-RenderedText pre')];
        const out = [];
        for (let i = 0; i + 1 < pres.length; i += 2) {
            const err = pres[i + 1], box = dialog.getBoundingClientRect();
            const first = err.getClientRects()[0] || err.getBoundingClientRect();
            out.push([pres[i].innerText, err.innerText, first.top >= box.top && first.top + 16 <= box.bottom]);
        }
        return out;
    }""")


def test_wrong_answer_shows_the_failing_check(page, lab_server, answers):
    _, wrong = answers
    answer(page, {FIRST: wrong[FIRST]})  # the other exercises keep the right answers typed before
    harness.screenshot(page, "student-05-wrong-answer-typed")
    result, cells = harness.validate(page, "student-06-validate-failure", inspect=failed_cells)
    assert "The following cell failed" in result, result[:2000]
    assert 'lab.problems["axpy_calls"].check(axpy_calls)' in result, result[:2000]
    assert "passes all the tests" not in result
    (source, error, visible), = cells
    assert source.strip() == 'lab.problems["axpy_calls"].check(axpy_calls)'
    # the check's own message is the first line of the error, in view when the dialog opens; no grader traceback
    first = " ".join(line.strip() for line in error.strip().split("\n\n")[0].splitlines())  # the wrapped message
    assert re.match(r"CheckFailure: axpy_calls\(.*\): expected \[.*\], got \[.*\]", first), error[:2000]
    assert visible, "the failing check's message is below the fold of the Validate dialog"
    assert "Traceback" not in error and "problem.py" not in error and len(error.strip().splitlines()) <= 4, error


def test_a_loop_that_never_ends_is_stopped_with_the_case(page, lab_server, answers):
    right, _ = answers
    answer(page, {FIRST: right[FIRST], SEARCH: NEVER_ENDS})
    start = time.monotonic()
    result, cells = harness.validate(page, "student-07-validate-loop-stopped", inspect=failed_cells)
    seconds = time.monotonic() - start
    (source, error, visible), = cells
    assert "min_batch_compute_bound" in source
    first = " ".join(line.strip() for line in error.strip().split("\n\n")[0].splitlines())  # the wrapped message
    assert re.match(r"CallTimedOut: min_batch_compute_bound did not return within 10 s on case "
                    r"min_batch_compute_bound\(.*\); does its work grow much faster with the input than it needs to, or "
                    r"is there an input where your loop never ends\?", first), error
    # where the loop was when it was stopped: the student's own cell and line (whichever line of the loop it was on)
    assert re.search(r"Your code was running here when it was stopped:\n\s+Cell In\[\d+\], line [3-7], in "
                     r"min_batch_compute_bound\n", error), error
    assert visible and "CellTimeoutError" not in result
    assert seconds < 55, f"Validate took {seconds:.0f} s: the check's time limit did not end the loop"
