"""Per-student hidden cases (grader/pipeline/secret.py, grader/seeding.py): seeded from the instructor's secret,
the lab and the student, so they differ between students, are identical on regrade, and a list of arguments
leaked through one student's feedback is useless to another. The secret stays with the instructor (a private
file or an environment variable); only the derived seeds enter a sandbox."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import re
import stat
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from grader import course
from grader.pipeline.secret import SECRET_ENV, SECRET_FILE_ENV, Secret, load_secret, secret_path
from grader.seeding import FILE_ENV

A, B = "alice", "bob"
SECRET = Secret(b"0123456789abcdef-test-secret", "test")


# ----------------------------------------------------------------------------------------------------------
# The secret
# ----------------------------------------------------------------------------------------------------------

@pytest.fixture
def no_secret_env(monkeypatch, tmp_path):
    monkeypatch.delenv(SECRET_ENV, raising=False)
    monkeypatch.delenv(SECRET_FILE_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "gpucourse" / "grading-secret"


def test_secret_file_is_created_private_and_then_reused(no_secret_env):
    path = no_secret_env
    first = load_secret()
    assert first.created and Path(first.origin) == path == secret_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = load_secret()
    assert not again.created and again.value == first.value and again.fingerprint() == first.fingerprint()
    assert len(first.value) >= 32 and first.value.decode() not in repr(first)  # never printed


def test_secret_readable_by_others_is_refused(no_secret_env):
    load_secret()
    no_secret_env.chmod(0o640)
    with pytest.raises(SystemExit, match="chmod 600"):
        load_secret()


def test_secret_from_the_environment(no_secret_env, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, "short")
    with pytest.raises(SystemExit, match="shorter than 16"):
        load_secret()
    monkeypatch.setenv(SECRET_ENV, "a-long-enough-classroom-secret")
    s = load_secret()
    assert s.value == b"a-long-enough-classroom-secret" and not no_secret_env.exists()


def test_seeds_are_per_lab_student_and_problem_and_stable():
    seeds = SECRET.seeds("lab01", A, ["f", "g"])
    assert seeds == SECRET.seeds("lab01", A, ["f", "g"])  # regrade: the same
    assert seeds["f"] != seeds["g"]
    assert seeds["f"] != SECRET.seeds("lab01", B, ["f"])["f"]
    assert seeds["f"] != SECRET.seeds("lab02", A, ["f"])["f"]
    assert seeds["f"] != Secret(b"another-secret-of-the-same-size", "x").seeds("lab01", A, ["f"])["f"]
    assert all(0 <= s < 2**64 for s in seeds.values())


# ----------------------------------------------------------------------------------------------------------
# Hidden cases of every problem: different per student, identical on regrade, a leaked table useless
# ----------------------------------------------------------------------------------------------------------

# problems whose hidden cases are a fixed pool that the seed only reorders: per-student seeds cannot hide them
# (a lab design matter, for the lab's owner: draw the hidden candidates, or their inputs, from the rng)
FIXED_POOLS = {
    "is_correct_backward": "lab02's _diagnose_hidden permutes a fixed pool of 21 black-box forwards, each with a "
                           "candidate backward pass",
}


def _text_key(s: str) -> str:
    """A string by value; an HLO module without its debug metadata (the call stack that built it: source files,
    lines, functions), which changes with where the case was generated, not with the case."""
    if s.startswith("HloModule"):
        s = re.sub(r"\n\nFileNames\n.*?\n\n\n", "\n\n", s, flags=re.S)
        s = re.sub(r", metadata=\{[^}]*\}", "", s)
    return s


def _key(v):
    """A value's identity for a lookup table (arrays by bytes, strings by value, functions by what they run)."""
    if isinstance(v, str):
        return ("s", _text_key(str.__str__(v)))
    if isinstance(v, np.ndarray) or (hasattr(v, "shape") and hasattr(v, "dtype")):
        a = np.ascontiguousarray(np.asarray(v))
        return ("nd", a.dtype.str, a.shape, hashlib.sha1(a.tobytes()).hexdigest())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_key(x) for x in v))
    if isinstance(v, dict):
        return ("d", tuple(sorted((str(k), _key(x)) for k, x in v.items())))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):  # by the fields it compares (lab 2's Candidate:
        # its form; the name only labels it in messages)
        return ("dc", type(v).__qualname__, tuple(_key(getattr(v, f.name)) for f in dataclasses.fields(v) if f.compare))
    if callable(v) and hasattr(v, "__code__"):
        cells = tuple(_key(c.cell_contents) for c in (v.__closure__ or ()) if not isinstance(c.cell_contents, str))
        return ("fn", v.__code__.co_filename, v.__code__.co_firstlineno, cells)
    return ("r", repr(v))


def _cases(problem, student: str, lab: str) -> list:
    return [_key((c.args, sorted(c.kwargs.items()))) for c in
            problem.hidden_cases(seed=SECRET.seed(lab, student, problem.name))]


SLOW_LABS = {"lab02_backprop", "lab06_xla_sass"}  # their hidden cases compile XLA programs: ~40 s each here


def _problem_params():
    out = []
    for lab in course.labs():
        marks = [pytest.mark.slow] if lab in SLOW_LABS else []
        module = importlib.import_module(f"grader.labs.{lab}")
        for name in module.problems:
            m = marks + ([pytest.mark.xfail(strict=True, reason=FIXED_POOLS[name])] if name in FIXED_POOLS else [])
            out.append(pytest.param(lab, name, marks=m, id=f"{lab}.{name}"))
    return out


@pytest.mark.parametrize("lab, name", _problem_params())
def test_hidden_cases_are_per_student_repeatable_and_a_leak_is_useless(lab, name):
    problem = importlib.import_module(f"grader.labs.{lab}").problems[name]
    alice, bob = _cases(problem, A, lab), _cases(problem, B, lab)
    assert _cases(problem, A, lab) == alice, "regrading drew other hidden cases"
    assert alice != bob, "two students got the same hidden cases"
    # a lookup table of alice's cases (her recorded arguments, answered) must miss some of bob's: a table-only
    # answer then fails his hidden test cell
    unseen = [c for c in bob if c not in set(alice)]
    assert unseen, f"every hidden case of {B} appears in {A}'s: a leaked table passes"


def test_outside_grading_the_seed_is_public_and_deterministic(monkeypatch):
    from grader.labs import lab01_blas_roofline as lab1

    p = lab1.problems["axpy_calls"]
    assert p.seed() == zlib.crc32(b"axpy_calls")
    assert [c.args for c in p.hidden_cases()] == [c.args for c in p.hidden_cases(seed=zlib.crc32(b"axpy_calls"))]


# ----------------------------------------------------------------------------------------------------------
# Inside a sandbox: the seeds file
# ----------------------------------------------------------------------------------------------------------

PROBE_SEEDS = r'''
import importlib, json, os, sys
import grader.seeding as s
from grader.labs import lab01_blas_roofline as lab1
out = {"env_after_import": os.environ.get(sys.argv[1]), "seed": s.installed_seed("axpy_calls"),
       "problem_seed": lab1.problems["axpy_calls"].seed(),
       "first_case": list(lab1.problems["axpy_calls"].hidden_cases()[0].args)}
os.environ[sys.argv[1]] = "/nonexistent"      # student code tries to reset the seeds to the public ones
importlib.reload(s)
out["seed_after_reload"] = s.installed_seed("axpy_calls")
print(json.dumps(out))
'''


def test_seeds_are_read_once_before_student_code_and_survive_a_reload(tmp_path):
    seeds_file = tmp_path / "hidden-seeds.json"
    seeds_file.write_text(json.dumps({"lab": "lab01", "student": A, "seeds": {"axpy_calls": 12345}}))
    env = {**os.environ, FILE_ENV: str(seeds_file), "PYTHONPATH": str(course.ROOT)}
    proc = subprocess.run([sys.executable, "-c", PROBE_SEEDS, FILE_ENV], capture_output=True, text=True,
                          env=env, timeout=120, cwd=tmp_path)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    from grader.labs import lab01_blas_roofline as lab1

    assert out["env_after_import"] is None, "the seeds file's name stayed in the environment"
    assert out["seed"] == out["problem_seed"] == out["seed_after_reload"] == 12345
    assert out["first_case"] == list(lab1.problems["axpy_calls"].hidden_cases(seed=12345)[0].args)


def test_an_unreadable_seeds_file_fails_loudly(tmp_path):
    env = {**os.environ, FILE_ENV: str(tmp_path / "missing.json"), "PYTHONPATH": str(course.ROOT)}
    proc = subprocess.run([sys.executable, "-c", "import grader.seeding"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode != 0 and "hidden-case seeds cannot be read" in proc.stderr


# ----------------------------------------------------------------------------------------------------------
# End to end: a leak through feedback, a cheat with the leaked table, regrading
# ----------------------------------------------------------------------------------------------------------

LAB = "lab01_blas_roofline"

RECORD = '''
_own_axpy_calls = axpy_calls
_calls = []
def axpy_calls(flops, nbytes):                 # records every call: the visible and the hidden cases
    _calls.append([int(flops), int(nbytes)])
    return _own_axpy_calls(flops, nbytes)
'''

LEAK = '''
import json, os
print("LEAKED-CALLS " + json.dumps(_calls))           # shows up in the feedback page
print("SANDBOX-ENV " + json.dumps(sorted(os.environ.items())))
try:
    open({secret_file!r}).read()
    print("SECRET-READ")
except OSError as e:
    print("SECRET-UNREADABLE " + type(e).__name__)
'''

TABLE = '''
_TABLE = {table!r}
def axpy_calls(flops, nbytes):                 # answers only what someone else's feedback leaked
    return [tuple(call) for call in _TABLE.get(f"{{int(flops)}}/{{int(nbytes)}}", [])]
'''


def _outputs(nb_path: Path, grade_id: str) -> str:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")


@pytest.mark.slow
def test_a_leaked_argument_list_is_useless_to_another_student(tmp_path, monkeypatch):
    from grader import __main__ as cli
    from grader import grade
    from grader.answers.lab01_blas_roofline import _axpy_calls_reference  # lab 1 is split: its references are answer-side
    from tests import grading

    secret_value = "classroom-secret-" + "x" * 24
    secret_file = tmp_path / "instructor" / "grading-secret"
    secret_file.parent.mkdir()
    secret_file.write_text(secret_value)
    secret_file.chmod(0o600)
    monkeypatch.delenv(SECRET_ENV, raising=False)
    monkeypatch.setenv(SECRET_FILE_ENV, str(secret_file))
    monkeypatch.setenv("GRADER_KEEP_JOBS", "1")

    lab = grade.Lab.find(LAB)
    released = json.loads((course.ROOT / "labs" / LAB / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    full = grading.solution_cells(lab.source())
    last = list(full)[-1]  # the last answer cell: it runs after every test of exercise 1
    ws = tmp_path / "grading"
    args = ["--dir", str(ws), "--jobs", "2", "--cell-timeout", "30", "--memory-mb", "2048"]

    # 1. alice's honest answer records its arguments; a later cell of hers prints them: her feedback shows them
    leak = grading.fill(released, {**full, "axpy_calls": full["axpy_calls"] + RECORD,
                                   last: full[last] + LEAK.format(secret_file=str(secret_file))})
    first = tmp_path / "export1"
    first.mkdir()
    (first / f"{A}.ipynb").write_text(json.dumps(leak), encoding="utf-8")
    assert cli.main(["grade", LAB, str(first), *args]) == 0
    kept = ws / "autograded" / A / LAB / f"{lab.notebook}.ipynb"
    printed = _outputs(kept, last)
    calls = json.loads(re.search(r"LEAKED-CALLS (.*)", printed).group(1))
    feedback = (ws / "feedback" / A / LAB / f"{lab.notebook}.html").read_text(encoding="utf-8")
    from grader.labs import lab01_blas_roofline as lab1
    visible = {tuple(c.args) for c in lab1.problems["axpy_calls"].visible}
    hidden_n = [flops for flops, nbytes in calls if (flops, nbytes) not in visible]
    assert hidden_n and all(str(n) in feedback for n in hidden_n), "the leak is not in alice's feedback"
    # the secret never entered her sandbox: not in its environment, its file unreadable, nowhere in the job
    assert "SECRET-UNREADABLE" in printed and secret_value not in printed
    job = ws / "jobs" / LAB / A
    for p in job.rglob("*"):
        if p.is_file() and p.stat().st_size < 50 << 20:
            assert secret_value.encode() not in p.read_bytes(), f"the grading secret is in {p}"

    # 2. a table of alice's leaked arguments, answered right: under alice's name it passes (her hidden cases are
    #    the same on regrade), under bob's it fails his hidden test
    table = {f"{f}/{b}": [list(call) for call in _axpy_calls_reference(f, b)] for f, b in calls}
    cheat = grading.fill(released, {**full, "axpy_calls": TABLE.format(table=table)})
    second = tmp_path / "export2"
    second.mkdir()
    for student in (A, B):
        (second / f"{student}.ipynb").write_text(json.dumps(cheat), encoding="utf-8")
    assert cli.main(["grade", LAB, str(second), *args]) == 0
    results = {r["student"]: r for r in grade.load_results(lab, grade.Workspace(ws))}
    alice, bob = results[A]["cells"], results[B]["cells"]
    assert alice["axpy_calls_visible"]["score"] == 1 and alice["axpy_calls_hidden"]["score"] == 2, alice
    assert bob["axpy_calls_visible"]["score"] == 1, bob
    assert bob["axpy_calls_hidden"]["score"] == 0, f"bob passed with alice's leaked table: {bob}"
    assert results[B]["score"] == results[A]["score"] - 2
    assert results[A]["secret"] == results[B]["secret"] == Secret(secret_value.encode()).fingerprint()
