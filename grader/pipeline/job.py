"""One job: a student's submission graded end to end in its own folder
(``grading/jobs/<lab>/<student>/``).

    preflight  ->  hidden-case seeds  ->  nbgrader autograde (kernel sandboxed)
               ->  re-check (sandboxed worker)  ->  verdict (fail closed)
               ->  publish (result JSON, capped notebook, feedback)

Nothing in a job is shared with another: its own nbgrader course root and gradebook copy, its own
sandbox slot (an unprivileged user per slot when the grader runs as root), its own scratch folders;
the folder is removed afterwards (``GRADER_KEEP_JOBS=1`` keeps it for debugging).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from ..sandbox import Sandbox, tail
from ..seeding import FILE_ENV
from .autograde import released_notebook, run_nbgrader, template
from .ingest import origin_of
from .lab import Lab
from .preflight import preflight, review_flags
from .publish import publish, write_result
from .recheck import (
    lab_problems,
    parse_checks,
    plan,
    run_recheck_resuming,
    split_problems,
    stop_cause,
)
from .wire import encode_cases
from .secret import Secret, write_seed_file
from .verdict import cell_messages, combine, verdicts
from .workspace import Settings, Workspace, result_key


def grade_submission(
    lab: Lab, ws: Workspace, student: str, settings: Settings, slot: int, secret: Secret
) -> dict:
    data = ws.submission_bytes(student, lab)
    origin = origin_of(ws, student, lab)
    source = lab.source()
    tests = lab.tests()
    result: dict[str, Any] = {
        "student": student,
        "lab": lab.name,
        "original": origin.get("original", student),
        "key": result_key(data, lab, settings, secret.fingerprint()),
        "secret": secret.fingerprint(),
        "max_score": sum(tests.values()),
        "score": 0.0,
        "status": "graded",
        "issues": list(origin.get("import_issues", [])),
        "cells": {},
    }
    tpl = template(lab, ws)
    nb, issues = preflight(data, lab, released_notebook(lab, ws))
    result["issues"] += issues
    if nb is None:
        result["status"] = "not graded"
        result["cells"] = {
            t: {"points": p, "score": 0.0, "message": "not graded (see issues)", "checked": "-"}
            for t, p in tests.items()
        }
        publish(lab, ws, student, result, None, source)
        return result
    result["issues"] += review_flags(nb)

    job = ws.job(student, lab)
    shutil.rmtree(job, ignore_errors=True)
    (job / "source" / lab.name).mkdir(parents=True)
    shutil.copy2(tpl / "gradebook.db", job / "gradebook.db")
    shutil.copy2(lab.source_path, job / "source" / lab.name / lab.source_path.name)
    sandbox = Sandbox(settings.limits, slot=slot)

    # this student's hidden cases: one seed per problem, derived from the instructor's secret (which
    # stays here)
    problems = lab_problems(lab)
    seeds = secret.seeds(lab.name, student, sorted(problems))
    # a split lab's generators stay here: its sandboxes get this student's hidden cases as data, not
    # seeds
    # (a problem whose cases are not data stays on the exercise side: seeded)
    split = split_problems(lab)
    cases = {
        n: encode_cases(p.hidden_cases(seed=seeds[n])) for n, p in problems.items() if n in split
    }
    seed_file = write_seed_file(
        job / "seeds" / "hidden-seeds.json",
        lab.name,
        student,
        {n: s for n, s in seeds.items() if n not in cases},
        sandbox.uid,
        cases,
    )
    inputs, env = [seed_file], {FILE_ENV: str(seed_file)}

    run = run_nbgrader(lab, job, student, nb, sandbox, settings, inputs, env)
    result["seconds_nbgrader"] = run.seconds
    if run.issue:
        result["issues"].append(run.issue)

    steps, expected = plan(lab, nb, seeds)
    module_name, _, _ = parse_checks(lab)
    recheck = run_recheck_resuming(job, steps, module_name, seeds, sandbox, settings, inputs, env)
    result["seconds_verify"] = recheck.seconds
    checked, tamper, stop = verdicts(steps, expected, recheck.lines, problems)
    if tamper:
        result["issues"].append("TAMPERING: " + "; ".join(tamper))
    # one runaway exercise: its test failed, the check resumed after it
    for where in recheck.resumed:
        result["issues"].append(f"the check process stopped in {where}; resumed after it")
    if stop:
        vrc = recheck.rc
        result["issues"].append(f"{stop} ({stop_cause(vrc, recheck.timed_out)})")
        # for the instructor: why it stopped (a sandbox that could not start...)
        log = ws.stop_log(student, lab)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"exit status {vrc}{' (timed out)' if recheck.timed_out else ''}\n"
                       + tail(job / "verify.log", 20000), encoding="utf-8")

    messages = cell_messages(run.notebook) if run.notebook else {}
    result["cells"] = combine(tests, run.scores, checked, messages)
    result["score"] = sum(c["score"] for c in result["cells"].values())
    if run.scores is None or stop:
        result["status"] = "partly graded"
    publish(lab, ws, student, result, run.notebook, source)
    if not os.environ.get("GRADER_KEEP_JOBS"):
        shutil.rmtree(job, ignore_errors=True)
    return result


def error_result(lab: Lab, ws: Workspace, student: str, exc: BaseException) -> dict:
    """The result of a job that broke (a grader bug must not stop the class): 0, with the reason."""
    r = {"student": student, "lab": lab.name, "status": "error", "score": 0.0, "max_score": 0.0,
         "issues": [f"grader error: {type(exc).__name__}: {exc}"], "cells": {}}
    write_result(lab, ws, student, r)
    return r
