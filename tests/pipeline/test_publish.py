"""Stage f and 3 of the pipeline on their own (grader/pipeline/publish.py, preflight.py): what an
instructor reads in the terminal and the report, and what a student reads in the feedback — each on
results shaped as the pipeline writes them, without grading anything."""

from __future__ import annotations

import json
import re

from grader.pipeline import preflight, publish
from grader.pipeline.lab import Lab, nbgrader_meta, source_text
from grader.pipeline.workspace import Workspace

LAB = "lab03_datapath"


def _result(student: str, lab: Lab, status: str = "graded", lose: tuple[str, ...] = (),
            message: str = "expected 2.2, got 2.0", issues: tuple[str, ...] = ()) -> dict:
    """A result as grader.pipeline.job writes it: cells keyed by test id (the JSON is sorted, so a
    hidden test comes before its visible one)."""
    cells = {t: {"points": p, "score": 0.0 if (t in lose or status != "graded") else p,
                 "message": (message if t in lose else "not graded (see issues)"
                             if status != "graded" else ""), "checked": "kernel"}
             for t, p in lab.tests().items()}
    score = sum(c["score"] for c in cells.values())
    return {"student": student, "original": f"{student}.ipynb", "lab": lab.name, "score": score,
            "max_score": sum(lab.tests().values()), "status": status, "issues": list(issues),
            "cells": dict(sorted(cells.items()))}


def _workspace(tmp_path, results: list[dict]) -> Workspace:
    ws = Workspace(tmp_path / "grading")
    for r in results:
        path = ws.result(r["student"], Lab.find(LAB))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r, sort_keys=True), encoding="utf-8")
    return ws


def test_the_report_lists_failed_tests_in_notebook_order_visible_before_hidden(tmp_path):
    lab = Lab.find(LAB)
    tests = list(lab.tests())
    name = tests[0].rsplit("_", 1)[0]  # the lab's first exercise
    r = _result("ada", lab, lose=(f"{name}_visible", f"{name}_hidden"))
    assert list(r["cells"]).index(f"{name}_hidden") < list(r["cells"]).index(f"{name}_visible")
    text = publish.report(lab, _workspace(tmp_path, [r]))
    assert text.index(f"✗ {name}_visible") < text.index(f"✗ {name}_hidden"), text


def test_a_submission_that_was_not_graded_is_one_line_in_the_report_and_in_the_terminal(tmp_path):
    lab = Lab.find(LAB)
    broken = _result("bob", lab, status="not graded",
                     issues=("not a notebook: invalid JSON at line 1, column 2 (Expecting value)",))
    ws = _workspace(tmp_path, [broken, _result("ada", lab)])
    report = publish.report(lab, ws)
    assert f"✗ all {len(lab.tests())} tests: not graded (see issues)" in report
    assert report.count("✗") == 1, report
    terminal = publish.summary(lab, ws).splitlines()
    students = [ln for ln in terminal if ln.startswith(("ada", "bob"))]
    assert len(students) == 2, terminal
    assert any("bob" in ln and "not graded" in ln and "1 issue(s)" in ln for ln in students)
    assert not any("✗" in ln or "!" in ln.split(":")[0] for ln in terminal), terminal
    assert terminal[-1].endswith(f"{LAB}_report.txt") and (ws.root / f"{LAB}_report.txt").exists()


def test_feedback_of_a_corrupt_submission_says_not_graded_for_visible_and_hidden_rows_alike():
    lab = Lab.find(LAB)
    broken = _result("bob", lab, status="not graded", issues=("not a notebook: invalid JSON",))
    html = publish.feedback_html({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                                 broken, list(lab.tests()))
    rows = re.findall(r"<td><code>(\w+)</code></td>\s*<td>[^<]*</td>\s*<td>([^<]*)</td>", html)
    assert len(rows) == len(lab.tests()), html[:3000]
    assert {msg.strip() for _, msg in rows} == {"not graded (see issues)"}, rows
    assert [t for t, _ in rows] == list(lab.tests()), "feedback rows in notebook order"


def test_feedback_of_a_graded_submission_hides_a_hidden_tests_details():
    lab = Lab.find(LAB)
    name = next(iter(lab.tests())).rsplit("_", 1)[0]
    r = _result("ada", lab, lose=(f"{name}_visible", f"{name}_hidden"), message="expected 2.2, got 2.0")
    html = publish.feedback_html({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                                 r, list(lab.tests()))
    assert html.count("expected 2.2, got 2.0") == 1, "the visible row's message only"
    assert "failed (hidden test: details are not shown)" in html


def test_the_instructors_source_notebook_is_recognised_not_reported_as_edited_cells():
    lab = Lab.find(LAB)
    released = json.loads((lab.source_path.parents[2] / "labs" / LAB / f"{LAB}.ipynb")
                          .read_text(encoding="utf-8"))
    clean, issues = preflight.preflight(lab.source_path.read_bytes(), lab, released)
    hidden = [t for t in lab.tests() if t.endswith("_hidden")]
    assert clean is not None
    assert not [i for i in issues if "was edited" in i], issues
    assert any(f"{len(hidden)} hidden-test cells hold the hidden tests" in i for i in issues), issues
    # a hidden cell a student really edited is still reported, and restored
    nb = json.loads(lab.source_path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if nbgrader_meta(c).get("grade_id") == hidden[0])
    cell["source"] = source_text(cell["source"]).replace("hidden=True", "hidden=False")
    _, issues = preflight.preflight(json.dumps(nb).encode(), lab, released)
    assert f"locked cell {hidden[0]!r} was edited: restored from the lab" in issues, issues
