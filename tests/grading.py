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


def wrong_answer_lists(lab: str) -> dict[str, list[str]]:
    """tests/wrong_answers/<lab>.py: WRONG = {solution grade_id: plausible wrong code, or a list of them (one per
    misconception or budget)}, every value as a list."""
    path = WRONG_DIR / f"{lab}.py"
    spec = importlib.util.spec_from_file_location(f"wrong_{lab}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = {}
    for gid, codes in module.WRONG.items():
        codes = [codes] if isinstance(codes, str) else list(codes)
        if not codes or not all(isinstance(c, str) and c.strip() for c in codes):
            raise ValueError(f"{path.name}: WRONG[{gid!r}] must be a code string or a non-empty list of them")
        out[gid] = codes
    return out


def wrong_answers(lab: str) -> dict[str, str]:
    """The first wrong answer of every exercise (what one "wrong" submission holds)."""
    return {gid: codes[0] for gid, codes in wrong_answer_lists(lab).items()}


def wrong_submissions(lab: str) -> list[dict[str, str]]:
    """Submission k holds the k-th wrong answer of every exercise (an exercise with fewer reuses its last): as many
    submissions as the longest list, so grading time grows with that length, not with the number of answers."""
    lists = wrong_answer_lists(lab)
    rounds = max((len(v) for v in lists.values()), default=0)
    return [{gid: codes[min(k, len(codes) - 1)] for gid, codes in lists.items()} for k in range(rounds)]


def error_outputs(gc: GradedCourse, student: str) -> dict[str, dict]:
    """grade_id -> the error output of each test cell that failed in the autograded notebook of ``student``."""
    path = gc.root / "autograded" / student / gc.lab / f"{gc.notebook}.ipynb"
    out = {}
    for cell in load_notebook(path)["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        for o in cell.get("outputs", []):
            if meta.get("grade") and o.get("output_type") == "error":
                out[meta["grade_id"]] = o
    return out


def strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)
