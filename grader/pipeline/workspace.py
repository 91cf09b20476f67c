"""The grading folder (``--dir``, default ``grading/`` in the course root) and the settings of a
grading run.

    grading/submitted/<student>/<lab>/<lab>.ipynb     the submission as imported
                                                      (+ .origin.json: file, sha256)
    grading/results/<lab>/<student>.json              per-cell scores and messages
                                                      (the source of truth)
    grading/autograded/<student>/<lab>/<lab>.ipynb    nbgrader's executed notebook (outputs capped)
    grading/feedback/<student>/<lab>/<lab>.html       feedback for the student, hidden tests removed
    grading/<lab>_grades.csv, grading/<lab>_report.txt
    grading/jobs/<lab>/<student>/                     one job's private nbgrader course root
                                                      (removed after)
    grading/.template/<lab>/                          the lab generated once into a gradebook,
                                                      copied per job
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import course
from ..sandbox import Limits
from .lab import Lab

GRADER_VERSION = "4"  # part of every result's cache key: bump when grading logic changes


@dataclass
class Settings:
    jobs: int = max(1, os.cpu_count() or 1)
    cell_timeout: int = 60        # seconds per cell (nbgrader's Execute.timeout)
    limits: Limits = field(default_factory=Limits)
    force: bool = False

    def key(self) -> str:
        return f"v{GRADER_VERSION}/cell{self.cell_timeout}/{self.limits}"


class Workspace:
    def __init__(self, root: Path | None = None):
        self.root = Path(root or course.ROOT / "grading").resolve()

    def submitted(self, student: str, lab: Lab) -> Path:
        return self.root / "submitted" / student / lab.name / f"{lab.notebook}.ipynb"

    def result(self, student: str, lab: Lab) -> Path:
        return self.root / "results" / lab.name / f"{student}.json"

    def job(self, student: str, lab: Lab) -> Path:
        return self.root / "jobs" / lab.name / student

    def stop_log(self, student: str, lab: Lab) -> Path:
        """The check process's output when it stopped early (instructor only: it can hold what the
        student's code printed, hidden cases included, so it never goes into feedback)."""
        return self.root / "logs" / lab.name / f"{student}-check.log"

    def students(self, lab: Lab) -> list[str]:
        base = self.root / "submitted"
        return (
            sorted(p.name for p in base.iterdir() if (p / lab.name).is_dir())
            if base.exists()
            else []
        )

    def submission_bytes(self, student: str, lab: Lab) -> bytes:
        path = self.submitted(student, lab)
        return path.read_bytes() if path.exists() else b""


def result_key(data: bytes, lab: Lab, settings: Settings, secret_id: str) -> str:
    """A result is reused while the submission's bytes, the lab's source, the settings and the
    grading secret (through its fingerprint: it decides the hidden cases) are unchanged."""
    material = data + lab.digest().encode() + settings.key().encode() + secret_id.encode()
    return hashlib.sha256(material).hexdigest()[:24]
