"""The re-check's steps: what the grader asks the sandboxed worker to do, in notebook order.

:func:`grader.pipeline.recheck.plan` makes them from the submission, the worker
(:mod:`grader.pipeline.recheck_worker`) runs them one by one and writes one result per step, and
:func:`grader.pipeline.verdict.verdicts` judges each test cell from the results of its steps. They
travel to the worker as JSON (:func:`to_wire`, :func:`from_wire`): plain data, never pickled code.

- :class:`Exec` — run a cell: the instructor's locked cells from the lab's source, the student's
  cells as submitted;
- :class:`Call` — call the student's function on one case of one check, answers locked;
- :class:`After` — a problem's extra check after its cases (lab 4's timer, say);
- :class:`End` — the end of a test cell (``kernel_only``: a cell the grader cannot re-check, whose
  nbgrader verdict stands unless earlier code tampered with the checks).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Union


@dataclass(frozen=True)
class Exec:
    cell: str  # the cell's grade id, or "(student cell)"
    source: str
    student: bool  # the student's code (else a locked cell, its source taken from the release)
    kind: ClassVar[str] = "exec"

    @property
    def label(self) -> str:
        return self.cell


@dataclass(frozen=True)
class Call:
    test: str  # the test cell's grade id
    fn: str  # the student's function, by name
    problem: str
    hidden: bool
    index: int  # which case of the check
    # a split lab's case as wire data (the worker has no generator for it); None: the worker draws
    # the case itself from the same seed
    case: Any = None
    observe: bool = False  # a kernel or a compiled program: observed, then judged in the grader
    kind: ClassVar[str] = "call"

    @property
    def label(self) -> str:
        return self.test


@dataclass(frozen=True)
class After:
    test: str
    problem: str
    fn: str
    hidden: bool
    kind: ClassVar[str] = "after"

    @property
    def label(self) -> str:
        return self.test


@dataclass(frozen=True)
class End:
    test: str
    kernel_only: bool = False
    kind: ClassVar[str] = "end"

    @property
    def label(self) -> str:
        return self.test


Step = Union[Exec, Call, After, End]
KINDS: dict[str, type] = {cls.kind: cls for cls in (Exec, Call, After, End)}


def to_wire(step: Step) -> dict:
    """The step as JSON-ready data: its kind and its fields."""
    return {"kind": step.kind, **{f.name: getattr(step, f.name) for f in fields(step)}}


def from_wire(data: dict) -> Step:
    """A step back from :func:`to_wire`'s data; an unknown kind or field is an error."""
    cls = KINDS.get(data.get("kind"))
    if cls is None:
        raise ValueError(f"unknown step kind {data.get('kind')!r}")
    return cls(**{k: v for k, v in data.items() if k != "kind"})
