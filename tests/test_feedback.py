"""What a student sees for real wrong answers, executed as nbgrader executes them (its Validator, the code behind
the Validate button: nbclient runs the notebook in a fresh kernel, the failed cells' error outputs are what the
dialog shows). One lab, four kinds of mistake at once, bounded by the check's time limit (10 s), not by
nbgrader's 60 s cell timeout. The browser test (tests/e2e/test_student_lab.py) shows the same in the dialog."""

from __future__ import annotations

import re
import time

import pytest

from grader import course
from tests import grading
from tests.test_validate import LAB, validate

# answers a student could write, each in the same lab (the other exercises answered right)
ANSWERS = {
    # one call where the counters fit two
    "axpy_calls": grading.wrong_answers(LAB)["axpy_calls"],
    # their own bug: an exception inside their function
    "gemv_shapes": '''def gemv_shapes(flops, nbytes, dtype):
    size = np.dtype(dtype).itemsize
    per_row = flops // (size - size)  # ZeroDivisionError
    return [(per_row, 1)]
''',
    # not written yet
    "gemm_k": '''def gemm_k(m, n, flops, nbytes, dtype):
    # YOUR CODE HERE
    raise NotImplementedError()
''',
    # a search that never ends for a layer that never reaches the ridge point
    "min_batch_compute_bound": '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    size = np.dtype(dtype).itemsize
    b = 1
    while True:
        if 2 * b * d_in * d_out / (size * (b * d_in + d_in * d_out + b * d_out)) >= peak_flops / bandwidth:
            return b
        b += 1
''',
}


@pytest.fixture(scope="module")
def failed(tmp_path_factory) -> tuple[dict[str, str], float]:
    released = grading.load_notebook(course.ROOT / "labs" / LAB / f"{LAB}.ipynb")
    solutions = grading.solution_cells(grading.load_notebook(course.ROOT / "solutions" / LAB / f"{LAB}.ipynb"))
    start = time.monotonic()
    results = validate(grading.fill(released, {**solutions, **ANSWERS}), tmp_path_factory.mktemp("validate"))
    seconds = time.monotonic() - start
    errors = {re.search(r'problems\["(\w+)"\]', f["source"]).group(1): grading.strip_ansi(f["raw_error"])
              for f in results["failed"]}
    return errors, seconds


def _message(error: str) -> str:
    """The first paragraph of what Validate shows: the message (wrapped at 100 columns), unwrapped again."""
    return " ".join(error.strip().split("\n\n")[0].split())


@pytest.mark.slow
def test_only_the_four_wrong_cells_fail(failed):
    errors, _ = failed
    assert set(errors) == {"axpy_calls", "gemv_shapes", "gemm_k", "min_batch_compute_bound"}, errors


@pytest.mark.slow
def test_a_wrong_value_shows_only_its_message(failed):
    error = failed[0]["axpy_calls"]
    assert "\n\n" not in error.strip() and _message(error) == (
        "CheckFailure: axpy_calls(2_000, 12_000): expected [(250, 'complex128'), (1000, 'float32')], got [(1000, "
        "'float32')]. Hint: these counters fit two calls: a complex axpy does 8 real FLOPs per element, so it has a "
        "quarter of the elements of a real one with the same FLOPs — and at 4× the element size, the same bytes. "
        "List every call")


@pytest.mark.slow
def test_a_students_own_exception_shows_their_frames_not_the_graders(failed):
    error = failed[0]["gemv_shapes"]
    assert _message(error) == "CheckFailure: gemv_shapes(24, 76, 'float32') raised ZeroDivisionError: integer " \
                              "division or modulo by zero"
    assert re.search(r"Where your code raised it \(most recent call last\):\n  Cell In\[\d+\], line 3, in "
                     r"gemv_shapes\n    per_row = flops // \(size - size\)  # ZeroDivisionError\n"
                     r"ZeroDivisionError: integer division", error)
    assert "grader" not in error and "Traceback" not in error


@pytest.mark.slow
def test_a_blank_stub_says_it_is_not_written(failed):
    assert _message(failed[0]["gemm_k"]) == ("NotImplementedError: gemm_k is not written yet: replace `raise "
                                              "NotImplementedError()` in its cell with your code, run that cell, "
                                              "then this one.")


@pytest.mark.slow
def test_a_loop_that_never_ends_is_stopped_within_the_time_limit(failed):
    errors, seconds = failed
    error = errors["min_batch_compute_bound"]
    assert _message(error) == ("CallTimedOut: min_batch_compute_bound did not return within 10 s on case "
                               "min_batch_compute_bound(128, 128, 'float16', 9.894e+14, 3.35e+12); does its work "
                               "grow much faster with the input than it needs to, or is there an input where your "
                               "loop never ends?")
    assert re.search(r"Your code was running here when it was stopped:\n  Cell In\[\d+\], line [3-6], in "
                     r"min_batch_compute_bound\n", error), error
    assert seconds < 55, f"Validate took {seconds:.0f} s: nbgrader's cell timeout, not the check's limit, ended it"
