"""The lab being graded and the notebook helpers every stage shares.

A :class:`Lab` is one folder of ``solutions/`` (the nbgrader *source*: solutions plus hidden tests,
one notebook). Cells are identified by their nbgrader ``grade_id``; test cells carry ``grade`` and
``points``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import course


def source_text(source: Any) -> str:
    """A cell's source as one string (nbformat allows a list of lines)."""
    return "".join(source) if isinstance(source, list) else (source or "")


def nbgrader_meta(cell: dict) -> dict:
    """The cell's nbgrader metadata ({} for an ordinary cell or malformed metadata)."""
    meta = (cell.get("metadata") or {}).get("nbgrader") or {}
    return meta if isinstance(meta, dict) else {}


@dataclass
class Lab:
    name: str
    source_path: Path

    @classmethod
    def find(cls, name: str) -> "Lab":
        if name not in course.labs():
            raise SystemExit(
                f"no such lab in solutions/: {name} (labs: {', '.join(course.labs())})"
            )
        nbs = sorted((course.ROOT / "solutions" / name).glob("*.ipynb"))
        if len(nbs) != 1:
            raise SystemExit(f"{name}: expected one notebook in solutions/{name}, found {len(nbs)}")
        return cls(name, nbs[0])

    @property
    def notebook(self) -> str:
        return self.source_path.stem

    def source(self) -> dict:
        return json.loads(self.source_path.read_text(encoding="utf-8"))

    def digest(self) -> str:
        return hashlib.sha256(self.source_path.read_bytes()).hexdigest()[:16]

    def cells(self) -> dict[str, dict]:
        """grade_id -> cell, for every cell of the source that has one."""
        return {
            nbgrader_meta(c)["grade_id"]: c
            for c in self.source()["cells"]
            if nbgrader_meta(c).get("grade_id")
        }

    def tests(self) -> dict[str, float]:
        """Test cell grade_id -> its points, in notebook order."""
        return {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c).get("points", 0))
                for c in self.source()["cells"] if nbgrader_meta(c).get("grade")}


def prepare_process(lab: Lab) -> None:
    """Call first in a grading command. A lab whose setup cell gives JAX several CPU devices (lab
    7's mesh: ``--xla_force_host_platform_device_count=8``) needs them in the grader too, which
    computes the reference answers in its own process; JAX reads XLA_FLAGS once, when it is
    imported, so this must run before that."""
    m = re.search(
        r"--xla_force_host_platform_device_count=(\d+)", lab.source_path.read_text(encoding="utf-8")
    )
    if (
        m
        and "jax" not in sys.modules
        and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "")
    ):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + m.group(0)).strip()
