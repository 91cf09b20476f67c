"""A throwaway nbgrader course: run nbgrader for real on made-up submissions, read grades from its
gradebook.

A throwaway course root is built in a temporary folder: the lab's source notebook, the course's
nbgrader config (folders redirected there), a fresh gradebook. Submissions are the *released*
notebook with its solution cells filled in — with the instructor's solution, with nothing (the
blank), or with wrong answers. Used by the tests (solution full / blank zero / wrong less) and by
the benchmark.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import course

SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.M)


def load_notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def solution_cells(nb: dict) -> dict[str, str]:
    """grade_id -> source (markers removed) of every solution cell."""
    out = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = SOLUTION_MARKERS.sub("", course.source_text(cell["source"]))
    return out


def test_cells(nb: dict) -> dict[str, float]:
    """grade_id -> points of every graded test cell."""
    return {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"].get("points", 0)
            for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")}


def exercise_of(test_id: str) -> str:
    """Test cells are named ``<solution grade_id>_visible`` / ``_hidden``."""
    return re.sub(r"_(visible|hidden)$", "", test_id)


def fill(released: dict, answers: dict[str, str]) -> dict:
    """The released notebook with the given solution cells replaced (as a student would type
    them)."""
    nb = copy.deepcopy(released)
    for cell in nb["cells"]:
        gid = grade_id(cell)
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


@dataclass
class GradedCourse:
    root: Path
    lab: str
    notebook: str  # file stem

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"

    def released(self) -> dict:
        return load_notebook(self.root / "release" / self.lab / f"{self.notebook}.ipynb")

    def source(self) -> dict:
        return load_notebook(self.root / "source" / self.lab / f"{self.notebook}.ipynb")

    def submit(self, student: str, nb: dict | str) -> None:
        folder = self.root / "submitted" / student / self.lab
        folder.mkdir(parents=True, exist_ok=True)
        text = nb if isinstance(nb, str) else json.dumps(nb, indent=1)
        (folder / f"{self.notebook}.ipynb").write_text(text, encoding="utf-8")

    def autograde(self, *students: str) -> None:
        args = ["autograde", self.lab, "--create", "--force"]
        if students:
            args.append(
                "--CourseDirectory.student_id=" + (students[0] if len(students) == 1 else "*")
            )
        course.nbgrader(*args, cwd=self.root, config_dir=self.root, check=False)

    def grades(self, student: str) -> dict[str, float]:
        """grade_id -> score for every graded cell, read from nbgrader's gradebook."""
        from nbgrader.api import Gradebook

        with Gradebook(self.db_url) as gb:
            sub = gb.find_submission_notebook(self.notebook, self.lab, student)
            return {g.name: (g.score if g.score is not None else 0.0) for g in sub.grades}

    def total(self, student: str) -> tuple[float, float]:
        from nbgrader.api import Gradebook

        with Gradebook(self.db_url) as gb:
            sub = gb.find_submission_notebook(self.notebook, self.lab, student)
            return sub.score, sub.max_score


def make_course(tmp: Path, lab: str) -> GradedCourse:
    """A throwaway nbgrader course holding one lab, with the lab generated (and recorded in its
    gradebook)."""
    src = course.ROOT / "solutions" / lab
    notebooks = sorted(src.glob("*.ipynb"))
    assert len(notebooks) == 1, f"{lab}: expected one notebook, found {notebooks}"
    (tmp / "source" / lab).mkdir(parents=True)
    shutil.copy2(notebooks[0], tmp / "source" / lab / notebooks[0].name)
    config = (course.CONFIG_DIR / "nbgrader_config.py").read_text(encoding="utf-8")
    config += (
        f"\nc.CourseDirectory.root = {str(tmp)!r}\n"
        "c.CourseDirectory.source_directory = 'source'\n"
        "c.CourseDirectory.release_directory = 'release'\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{tmp / 'gradebook.db'}'\n"
    )
    (tmp / "nbgrader_config.py").write_text(config, encoding="utf-8")
    course.nbgrader("generate_assignment", lab, "--force", cwd=tmp, config_dir=tmp)
    return GradedCourse(tmp, lab, notebooks[0].stem)
