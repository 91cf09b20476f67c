"""What a student sees when clicking Validate (nbgrader's Validator, the code behind the button): success for a
right answer, and the failing check's "expected …, got …" message for a wrong one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from grader import course
from tests import grading

LAB = "lab01_blas_roofline"


def validate(nb: dict, tmp_path: Path) -> dict:
    from nbgrader.validator import Validator

    path = tmp_path / f"{LAB}.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    return Validator().validate(str(path))


@pytest.fixture(scope="module")
def released_and_solutions():
    released = grading.load_notebook(course.ROOT / "labs" / LAB / f"{LAB}.ipynb")
    source = grading.load_notebook(course.ROOT / "solutions" / LAB / f"{LAB}.ipynb")
    return released, grading.solution_cells(source)


@pytest.mark.slow
def test_validate_passes_a_correct_lab(released_and_solutions, tmp_path):
    released, solutions = released_and_solutions
    assert validate(grading.fill(released, solutions), tmp_path) == {}


@pytest.mark.slow
def test_validate_shows_the_failing_checks_message(released_and_solutions, tmp_path):
    released, solutions = released_and_solutions
    wrong = grading.wrong_answers(LAB)
    nb = grading.fill(released, {**solutions, "gemm_k": wrong["gemm_k"]})
    results = validate(nb, tmp_path)
    errors = [f["raw_error"] for f in results["failed"]]
    assert len(errors) == 1, errors
    assert "gemm_k(5, 7, 210, 212, 'float16'): expected (3, True), got None" in errors[0]
