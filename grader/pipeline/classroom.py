"""The class: every imported submission autograded, ``--jobs`` at a time, unchanged ones kept.

A result is reused while the submission's bytes, the lab's source, the settings and the grading
secret are unchanged (:func:`grader.pipeline.workspace.result_key`); ``--force`` regrades. Each
submission is one job (:func:`grader.pipeline.job.grade_submission`) in its own sandbox slot.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from queue import Queue

from ..sandbox import warn_if_weak
from .autograde import template
from .job import error_result, grade_submission
from .lab import Lab
from .secret import Secret, load_secret
from .workspace import Settings, Workspace, result_key


def autograde(lab: Lab, ws: Workspace, settings: Settings, students: list[str] | None = None,
              progress=print, secret: Secret | None = None) -> list[dict]:
    warn_if_weak()
    secret = secret or load_secret()
    if secret.created:
        progress(
            f"created the grading secret {secret.origin} (mode 0600; fingerprint"
            f" {secret.fingerprint()}). Back it up: it decides every student's hidden cases, and"
            " regrading without it changes them."
        )
    students = students or ws.students(lab)
    todo, results, other_secret = [], {}, []
    for s in students:
        path = ws.result(s, lab)
        key = result_key(ws.submission_bytes(s, lab), lab, settings, secret.fingerprint())
        if path.exists():
            old = json.loads(path.read_text(encoding="utf-8"))
            if old.get("secret") not in (None, secret.fingerprint()):
                other_secret.append(s)
            if old.get("key") == key and not settings.force:
                results[s] = old
                continue
        todo.append(s)
    if other_secret:
        progress(
            f"  {len(other_secret)} earlier result(s) were graded with another grading secret"
            f" ({', '.join(other_secret[:5])}{' …' if len(other_secret) > 5 else ''}): they are"
            f" regraded on new hidden cases (this secret: {secret.origin}, fingerprint"
            f" {secret.fingerprint()})"
        )
    if todo:
        template(lab, ws)
        _preload()
    slots: Queue = Queue()
    for i in range(settings.jobs):
        slots.put(i)

    def one(s: str) -> dict:
        slot = slots.get()
        try:
            r = grade_submission(lab, ws, s, settings, slot, secret)
        except Exception as exc:  # a bug or a broken job must not stop the class
            r = error_result(lab, ws, s, exc)
        finally:
            slots.put(slot)
        progress(
            f"  {s}: {r['score']:g}/{r['max_score']:g} ({r['status']}; nbgrader"
            f" {r.get('seconds_nbgrader', 0)} s, check {r.get('seconds_verify', 0)} s)"
        )
        return r

    with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
        for r in pool.map(one, todo):
            results[r["student"]] = r
    if len(todo) < len(students):
        progress(
            f"  {len(students) - len(todo)} unchanged submission(s) kept their grades (use --force"
            " to regrade)"
        )
    return [results[s] for s in students]


def _preload() -> None:
    """Import nbgrader/nbconvert once, in this thread: importing them from several grading threads
    at once fails (a circular import inside nbgrader.preprocessors); the job config each thread
    loads imports them too."""
    import nbconvert  # noqa: F401
    import nbformat  # noqa: F401
    import nbgrader.api  # noqa: F401
    import nbgrader.converters  # noqa: F401  (the job config, loaded here first, imports it)
    import nbgrader.preprocessors  # noqa: F401
    import traitlets.config.loader  # noqa: F401
    from nbconvert import HTMLExporter  # noqa: F401
