"""Stage 6, publish: what the grading leaves for the instructor and the students.

Per student: ``results/<lab>/<student>.json`` (the source of truth: per test cell score, message,
how it was checked), the executed notebook (capped:
:func:`grader.pipeline.output_cap.keep_notebook`) and the feedback page (scores and messages; hidden
tests' code, output and cases removed). Per class: the grades CSV (one row per student, one column
per test cell) and the report (what failed and why, for each student).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .lab import Lab, source_text
from .output_cap import keep_notebook
from .workspace import Workspace


def write_result(lab: Lab, ws: Workspace, student: str, result: dict) -> None:
    path = ws.result(student, lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    stable = {k: v for k, v in result.items() if not k.startswith("seconds")}
    path.write_text(
        json.dumps(stable, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def publish(
    lab: Lab, ws: Workspace, student: str, result: dict, autograded: Path | None, source: dict
) -> None:
    """Write the result JSON, the executed notebook (capped) and the student's feedback (hidden
    tests removed)."""
    write_result(lab, ws, student, result)
    fb_dir = ws.root / "feedback" / student / lab.name
    fb_dir.mkdir(parents=True, exist_ok=True)
    if autograded is not None:
        nb = keep_notebook(
            autograded, ws.root / "autograded" / student / lab.name / autograded.name
        )
    else:
        nb = {
            "cells": [],
            "metadata": source.get("metadata", {}),
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    html = feedback_html(nb, result, lab_tests(lab))
    (fb_dir / f"{lab.notebook}.html").write_text(html, encoding="utf-8")


def _in_order(cells: dict[str, dict], order: list[str] | None) -> list[tuple[str, dict]]:
    """A result's test cells in notebook order (``order``: the lab's test ids), any others last."""
    order = order or []
    rank = {t: i for i, t in enumerate(order)}
    return sorted(cells.items(), key=lambda kv: (rank.get(kv[0], len(order)), kv[0]))


def _shown_message(test: str, cell: dict) -> str:
    """What the student's feedback says of one test cell: a hidden test's details stay hidden, but
    a submission that was not graded says so for every cell alike."""
    if cell["message"].startswith("not graded"):
        return cell["message"][:300].replace("|", "/")
    if "hidden" in test:
        return ("passed" if cell["score"] >= cell["points"]
                else "failed (hidden test: details are not shown)")
    return cell["message"][:300].replace("|", "/")


def feedback_html(nb: dict, result: dict, order: list[str] | None = None) -> str:
    """The student's feedback: the executed notebook with scores, hidden test code and output
    removed; ``order``: the lab's test ids in notebook order."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbgrader.preprocessors import ClearHiddenTests

    rows = "\n".join(
        f"| `{k}` | {c['score']:g} / {c['points']:g} | {_shown_message(k, c)} |"
        for k, c in _in_order(result["cells"], order)
    )
    issues = "".join(
        f"\n- {i}" for i in result["issues"] if not i.startswith(("REVIEW", "TAMPERING"))
    )
    head = (
        f"# Feedback: {result['lab']}\n\n**Score: {result['score']:g} / {result['max_score']:g}** "
        f"({result['status']})\n\n| test | score | message |\n|---|---|---|\n{rows}\n"
        + (f"\n**Problems with the submission:**{issues}\n" if issues else "")
    )
    for cell in nb.get("cells", []):
        cell["source"] = src = source_text(cell.get("source"))
        if "BEGIN HIDDEN TESTS" in src and cell.get("cell_type") == "code":
            cell["outputs"] = [
                {
                    "output_type": "stream",
                    "name": "stdout",
                    "text": "(hidden test: output not shown)\n",
                }
            ]
    nb["cells"] = [
        {"cell_type": "markdown", "metadata": {}, "source": head, "id": "feedback-summary"}
    ] + nb.get("cells", [])
    node = nbformat.from_dict(nb)
    node, _ = ClearHiddenTests().preprocess(node, {})
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(node)
    return html


def load_results(lab: Lab, ws: Workspace) -> list[dict]:
    base = ws.root / "results" / lab.name
    return (
        [json.loads(p.read_text(encoding="utf-8")) for p in sorted(base.glob("*.json"))]
        if base.exists()
        else []
    )


def lab_tests(lab: Lab) -> list[str]:
    return list(lab.tests())


def export_csv(lab: Lab, ws: Workspace, path: Path | None = None) -> Path:
    results = load_results(lab, ws)
    tests = lab_tests(lab)
    path = path or ws.root / f"{lab.name}_grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["student", "original_name", "lab", "score", "max_score", "status", "issues", *tests]
        )
        for r in results:
            w.writerow(
                [
                    r["student"],
                    r.get("original", ""),
                    lab.name,
                    f"{r['score']:g}",
                    f"{r['max_score']:g}",
                    r["status"],
                    len(r["issues"]),
                    *(f"{r['cells'].get(t, {}).get('score', 0):g}" for t in tests),
                ]
            )
    return path


def report(lab: Lab, ws: Workspace) -> str:
    """The per-student report (written to ``<lab>_report.txt``): issues, then every test that lost
    points, in notebook order; a submission that was not graded is one line, not one per test."""
    lines = []
    results = load_results(lab, ws)
    order = lab_tests(lab)
    for r in results:
        lines.append(_headline(r))
        lines += [f"    ! {i}" for i in r["issues"]]
        lost = [(t, c) for t, c in _in_order(r["cells"], order) if c["score"] < c["points"]]
        if r["status"] == "not graded" and lost:
            lines.append(f"    ✗ all {len(lost)} tests: {lost[0][1]['message'][:300]}")
            continue
        for t, c in lost:
            lines.append(f"    ✗ {t} {c['score']:g}/{c['points']:g}: {c['message'][:300]}")
    lines += _totals(results)
    text = "\n".join(lines)
    (ws.root / f"{lab.name}_report.txt").write_text(text + "\n", encoding="utf-8")
    return text


def summary(lab: Lab, ws: Workspace) -> str:
    """What the grading command prints: one line per student, the class totals and where the
    report is (the report, written as well, holds every failed test and issue)."""
    report(lab, ws)
    results = load_results(lab, ws)
    lines = []
    for r in results:
        lost = sum(c["score"] < c["points"] for c in r["cells"].values())
        notes = [f"{lost} of {len(r['cells'])} tests lost points" if lost else "",
                 f"{len(r['issues'])} issue(s)" if r["issues"] else ""]
        lines.append(_headline(r) + "".join(f"; {n}" for n in notes if n))
    lines += _totals(results)
    lines.append(f"details (every failed test and issue): {ws.root / f'{lab.name}_report.txt'}")
    return "\n".join(lines)


def _headline(r: dict) -> str:
    return (f"{r['student']} ({r.get('original', '')}): {r['score']:g}/{r['max_score']:g} —"
            f" {r['status']}")


def _totals(results: list[dict]) -> list[str]:
    scores = [r["score"] for r in results]
    if not scores:
        return []
    return [f"\n{len(results)} students; mean {sum(scores) / len(scores):.2f}; "
            f"{sum(r['status'] != 'graded' for r in results)} not fully graded"]
