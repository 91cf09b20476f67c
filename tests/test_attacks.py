"""No exercise is answered by the course itself (issue 20): the attack suite.

``tests/attacks/<lab>.py`` holds, for every exercise where installed code (gpucourse, the exercise side of grader,
the course notebooks' code) computes any part of the answer, the shortest submissions a determined student
assembles from the student edition alone: the helper called directly, its module loaded a second time
(``importlib.util.spec_from_file_location``), its source pasted into the cell. Each is graded here through the
instructor's grading command (``python -m grader grade``: sandboxed, hidden cases drawn per student from a
secret, every verdict re-computed outside the student's process) and must earn less than the exercise's full
marks, while the rest of its submission (the solution's cells) keeps full marks, so the loss is the attack's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import course, grade
from tests import grading

ATTACKS_DIR = Path(__file__).parent / "attacks"
LABS = course.labs()
SECRET = "attack-suite-grading-secret-0123456789"


def attack_lists(lab: str) -> dict[str, list[str]]:
    """tests/attacks/<lab>.py: ATTACKS = {solution grade_id: [answer cell, ...]} ({} where nothing installed
    computes any part of an answer)."""
    path = ATTACKS_DIR / f"{lab}.py"
    if not path.exists():
        return {}
    spec = importlib.util.spec_from_file_location(f"attacks_{lab}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = {}
    for gid, codes in module.ATTACKS.items():
        codes = [codes] if isinstance(codes, str) else list(codes)
        if not codes or not all(isinstance(c, str) and c.strip() for c in codes):
            raise ValueError(f"{path.name}: ATTACKS[{gid!r}] must be a code string or a non-empty list of them")
        out[gid] = codes
    return out


def attack_submissions(lab: str) -> list[dict[str, str]]:
    """Submission k holds the k-th attack on every attacked exercise (one with fewer reuses its last)."""
    lists = attack_lists(lab)
    rounds = max((len(v) for v in lists.values()), default=0)
    return [{gid: codes[min(k, len(codes) - 1)] for gid, codes in lists.items()} for k in range(rounds)]


ATTACKED = [lab for lab in LABS if attack_lists(lab)]


@pytest.mark.parametrize("lab", LABS)
def test_every_lab_has_an_attack_file(lab):
    """Every lab says, in its attack file, what installed code could answer (an empty ATTACKS says: nothing)."""
    assert (ATTACKS_DIR / f"{lab}.py").exists(), f"tests/attacks/{lab}.py is missing"
    attack_lists(lab)


@pytest.mark.parametrize("lab", ATTACKED)
def test_attacks_use_only_the_student_edition(lab):
    """An attack is what a student holds: no answer side, no solutions, no tests, no grader internals."""
    solutions = grading.solution_cells(grade.Lab.find(lab).source())
    for gid, codes in attack_lists(lab).items():
        assert gid in solutions, f"tests/attacks/{lab}.py: {gid} is not a solution cell of {lab}"
        for code in codes:
            for banned in ("grader.answers", "grader/answers", "solutions/", "tests.", "grader.pipeline",
                           "_reference", "_cases("):
                assert banned not in code, f"{lab}/{gid}: an attack may use only the edition, not {banned!r}"


# In the fresh-clone CI runs of 2026-12-06 the check process of one submission or another (labs 4, 5, 5b, 6) ended
# before its first step in the full run only; the grader now empties a slot before each command (Sandbox.reap),
# starts a check process that ended before its first step once more, and keeps its output for the instructor
# (Workspace.stop_log), which the failure messages below print.
@pytest.fixture(scope="module", params=ATTACKED)
def attacked(request, tmp_path_factory):
    """One lab's attack submissions (plus the solution, the control) graded by the grading command, in a process
    of its own as an instructor runs it. One lab at a time: parallel grading commands would share slot 0's
    sandbox user."""
    lab = request.param
    tmp = tmp_path_factory.mktemp(f"attack-{lab}")
    found = grade.Lab.find(lab)
    released = json.loads((course.ROOT / "labs" / lab / f"{found.notebook}.ipynb").read_text(encoding="utf-8"))
    source = found.source()
    solutions = grading.solution_cells(source)
    export = tmp / "export"
    export.mkdir()
    (export / "solution.ipynb").write_text(json.dumps(grading.fill(released, solutions)), encoding="utf-8")
    for k, answers in enumerate(attack_submissions(lab)):
        (export / f"attack-{k + 1}.ipynb").write_text(json.dumps(grading.fill(released, {**solutions, **answers})),
                                                     encoding="utf-8")
    ws = tmp / "grading"
    # sandbox users of their own: other grading tests run at the same time in this worker's range (tests/conftest.py
    # gives each worker its own), and the process limit of a slot's user would be shared (an attack that starts many
    # threads would kill its neighbours)
    own = int(os.environ["GPUCOURSE_SANDBOX_UID_BASE"]) + 100
    env = {**os.environ, "GPUCOURSE_GRADING_SECRET": SECRET, "GPUCOURSE_SANDBOX_UID_BASE": str(own)}
    run = subprocess.run([sys.executable, "-m", "grader", "grade", lab, str(export), "--dir", str(ws), "--jobs", "2",
                          "--wall-timeout", "300"], cwd=course.ROOT, env=env, capture_output=True, text=True,
                         timeout=1500)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = {r["student"]: r for r in grade.load_results(found, grade.Workspace(ws))}
    for student, r in results.items():  # a check process that stopped early: its output, for the failure report
        log = grade.Workspace(ws).stop_log(student, found)
        r["stop_log"] = log.read_text(encoding="utf-8")[-3000:] if log.exists() else ""
    return lab, grading.test_cells(source), results


@pytest.mark.slow
def test_installed_code_does_not_answer_an_exercise(attacked):
    lab, tests, results = attacked
    lists = attack_lists(lab)
    solution = results["solution"]
    assert solution["score"] == solution["max_score"], (f"{lab}: the solution lost points: {solution['issues']}\n"
                                                        f"{solution['stop_log']}\n{solution['cells']}")
    for exercise, codes in lists.items():
        cells = [t for t in tests if grading.exercise_of(t) == exercise]
        assert cells, f"{lab}: {exercise} has no test cells"
        full = sum(tests[t] for t in cells)
        for k in range(len(codes)):
            r = results[f"attack-{k + 1}"]
            earned = sum(r["cells"][t]["score"] for t in cells)
            assert earned < full, (f"{lab}/{exercise}: attack {k + 1} of {len(codes)}, assembled from the student "
                                   f"edition alone, earned full marks ({earned}/{full}):\n{codes[k]}")
    # the loss is the attacks': every exercise not attacked in a submission keeps its marks there
    for k in range(max(len(c) for c in lists.values())):
        r = results[f"attack-{k + 1}"]
        lost = {t: c["message"][:200] for t, c in r["cells"].items()
                if c["score"] < c["points"] and grading.exercise_of(t) not in lists}
        assert not lost, (f"{lab}: attack submission {k + 1} lost points outside the attacked exercises: {lost}\n"
                          f"{r['issues']}\n{r['stop_log']}")
