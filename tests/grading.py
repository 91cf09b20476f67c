"""Test-side helpers for the grading pipeline: the scratch course (grader.scratch) plus the wrong answers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from grader.scratch import (  # noqa: F401  (re-exported for the tests)
    GradedCourse,
    exercise_of,
    fill,
    grade_id,
    load_notebook,
    make_course,
    solution_cells,
    test_cells,
)

WRONG_DIR = Path(__file__).parent / "wrong_answers"


def wrong_answers(lab: str) -> dict[str, str]:
    """tests/wrong_answers/<lab>.py: WRONG = {solution grade_id: plausible wrong code}."""
    path = WRONG_DIR / f"{lab}.py"
    spec = importlib.util.spec_from_file_location(f"wrong_{lab}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG
