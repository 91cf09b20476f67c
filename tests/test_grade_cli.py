"""The instructor's grading command on the adversarial corpus (tests/adversarial/corpus.py): a class export as a
zip with odd names and nested folders, graded in parallel in the sandbox. Each attack must earn no points it did
not earn honestly, each bad input must be reported while the rest of the class is graded, and running the
command again must change nothing."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
import warnings
import zipfile

import pytest

from grader import __main__ as cli
from grader import course, grade
from grader.edition import split_labs
from grader.pipeline.steps import End, Exec
from grader.sandbox import bwrap_path
from tests import grading
from tests.adversarial import corpus

LAB = "lab01_blas_roofline"
# CI grades the grouped corpus (attacks that cannot interfere share a submission); GRADER_FULL_CORPUS=1 grades
# one submission per attack and per bad input (about twice as long)
FULL_CORPUS = bool(os.environ.get("GRADER_FULL_CORPUS"))
EXPECT = dict(corpus.EXPECT if FULL_CORPUS else corpus.EXPECT_GROUPED)
if bwrap_path() is None:  # the unshare fallback has no file-system isolation: reading solutions/ works there
    warnings.warn("bubblewrap is missing: the corpus runs in the weaker unshare fallback")
    EXPECT.update({k: (lo, hi + 3, []) for k, (lo, hi, _) in EXPECT.items() if k in ("read_solutions", "resource_abuse")})
ARGS = ["--jobs", "2", "--cell-timeout", "8", "--wall-timeout", "120", "--memory-mb", "2048", "--cpu-seconds", "60"]


SECRET = "corpus-grading-secret-0123456789"  # the instructor's secret for this class (never in a sandbox)


@pytest.fixture(scope="module", autouse=True)
def grading_secret():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUCOURSE_GRADING_SECRET", SECRET)
        yield SECRET


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grading_secret):
    tmp = tmp_path_factory.mktemp("class")
    lab = grade.Lab.find(LAB)
    released = json.loads((course.ROOT / "labs" / LAB / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    solutions = grading.solution_cells(lab.source())
    export = tmp / "export.zip"
    with zipfile.ZipFile(export, "w") as zf:  # an LMS export: everything inside one wrapper folder
        for name, data in corpus.build(released, solutions, grouped=not FULL_CORPUS).items():
            zf.writestr(f"Lab 1 submissions/{name}", data)
        zf.writestr("Lab 1 submissions/__MACOSX/._solution.ipynb", b"junk")
    ws = tmp / "grading"
    t0 = time.monotonic()
    assert cli.main(["grade", LAB, str(export), "--dir", str(ws), *ARGS]) == 0
    seconds = time.monotonic() - t0
    results = {r["student"]: r for r in grade.load_results(lab, grade.Workspace(ws))}
    return lab, ws, export, results, seconds


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(EXPECT))
def test_corpus_outcome(graded, student):
    _, _, _, results, _ = graded
    assert student in results, f"{student} missing from the results: {sorted(results)}"
    r = results[student]
    low, high, needles = EXPECT[student]
    failed = {k: c["message"] for k, c in r["cells"].items() if c["score"] < c["points"]}
    assert low <= r["score"] <= high, f"{student}: score {r['score']} not in [{low}, {high}]; issues {r['issues']}; failed {failed}"
    text = "\n".join(r["issues"])
    for needle in needles:
        assert needle in text, f"{student}: report lacks {needle!r}: {r['issues']}"
    for cell, needle in corpus.EXPECT_MESSAGES.get(student, {}).items():  # a message, or a tuple of alternatives
        needles = (needle,) if isinstance(needle, str) else needle
        assert any(n in failed.get(cell, "") for n in needles), \
            f"{student}: {cell} should fail with one of {needles!r}; failed {failed}"


@pytest.mark.slow
def test_every_student_is_in_csv_report_and_feedback(graded):
    lab, ws, _, results, _ = graded
    rows = list(csv.DictReader(open(ws / f"{LAB}_grades.csv", encoding="utf-8")))
    assert sorted(r["student"] for r in rows) == sorted(results) == sorted(EXPECT)
    report = (ws / f"{LAB}_report.txt").read_text(encoding="utf-8")
    assert "invalid JSON" in report and "TAMPERING" in report
    html = (ws / "feedback" / "solution" / LAB / f"{lab.notebook}.html").read_text(encoding="utf-8")
    assert f"Score: {corpus.FULL:g} / {corpus.FULL:g}" in html
    assert "hidden=True" not in html and "BEGIN HIDDEN TESTS" not in html, "feedback reveals hidden tests"
    blank = (ws / "feedback" / "blank" / LAB / f"{lab.notebook}.html").read_text(encoding="utf-8")
    hidden_case = lab_hidden_case("blank")
    assert hidden_case in (ws / f"{LAB}_report.txt").read_text(encoding="utf-8"), "control: the report names it"
    assert "details are not shown" in blank and hidden_case not in blank, "feedback reveals a hidden case"


def lab_hidden_case(student: str) -> str:
    """The first hidden case of exercise 1 as the grading command drew it for ``student``."""
    from grader.labs import lab01_blas_roofline as L
    from grader.pipeline.secret import Secret

    seed = Secret(SECRET.encode()).seed(LAB, student, "axpy_calls")
    return L.problems["axpy_calls"].hidden_cases(seed=seed)[0].call_text("axpy_calls")


def _cell(ws, student: str, grade_id: str) -> dict:
    nb = json.loads((ws / "autograded" / student / LAB / f"{LAB}.ipynb").read_text(encoding="utf-8"))
    return next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(s for s in corpus.EXPECT_PROBE if s in EXPECT))
def test_the_kernel_cannot_read_the_notebook_with_hidden_tests(graded, student):
    """The probe planted a notebook holding the hidden-test line in its own folder and then searched every folder
    the sandboxed kernel can see: it must find its planted file (so the search works) and no other."""
    if bwrap_path() is None:
        pytest.skip("the unshare fallback has no file-system isolation (warn_if_weak says so)")
    _, ws, _, _, _ = graded
    text = "".join("".join(o.get("text", "")) for o in _cell(ws, student, corpus.EXPECT_PROBE[student])["outputs"])
    m = re.search(r"HIDDEN-TESTS-PROBE (\{.*\})", text)
    assert m, f"{student}: the probe printed no report: {text[:2000]}"
    probe = json.loads(m.group(1))
    assert probe["found"] == [probe["planted"]], f"the kernel read a notebook with hidden tests: {probe}"
    assert probe["visited"] > 1, probe


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(s for s in corpus.EXPECT_FLOOD if s in EXPECT))
def test_an_output_flood_keeps_a_small_notebook(graded, student):
    """240 MB of output (lines, one long line, rich HTML): the kept notebook and the feedback stay within the caps,
    and the flooded cell says it was cut."""
    from grader.pipeline import output_cap

    lab, ws, _, _, _ = graded
    kept = ws / "autograded" / student / LAB / f"{lab.notebook}.ipynb"
    assert kept.stat().st_size <= output_cap.NOTEBOOK_OUTPUT_BYTES + (1 << 20), f"kept {kept.stat().st_size:,} bytes"
    feedback = ws / "feedback" / student / LAB / f"{lab.notebook}.html"
    assert feedback.stat().st_size <= output_cap.KEPT_NOTEBOOK_BYTES + (2 << 20)
    text = json.dumps(_cell(ws, student, corpus.EXPECT_FLOOD[student])["outputs"])
    assert "[grader] output truncated" in text, text[:1000]


@pytest.mark.slow
def test_rerun_is_idempotent(graded, capsys):
    lab, ws, export, results, first = graded
    before = {p: p.read_bytes() for p in (ws / "results").rglob("*.json")}
    t0 = time.monotonic()
    assert cli.main(["grade", LAB, str(export), "--dir", str(ws), *ARGS]) == 0
    assert time.monotonic() - t0 < first / 3, "unchanged submissions were graded again"
    after = {p: p.read_bytes() for p in (ws / "results").rglob("*.json")}
    assert after == before, "re-running changed grades or results"
    assert sorted(p.name for p in (ws / "submitted").iterdir()) == sorted(EXPECT)
    assert "unchanged submission(s) kept their grades" in capsys.readouterr().out


def test_student_ids_are_safe_and_stable():
    assert grade.student_id("김민지 (Kim)") == "김민지_Kim"
    assert grade.student_id("../../etc/passwd") == "etc_passwd"
    assert grade.student_id("...") .startswith("student_")
    assert grade.student_id("a b.ipynb") == grade.student_id("a b.ipynb") == "a_b"


def test_zip_slip_and_symlinks_are_not_followed(tmp_path):
    export = tmp_path / "evil.zip"
    with zipfile.ZipFile(export, "w") as zf:
        zf.writestr("../../outside.ipynb", b"{}")
        info = zipfile.ZipInfo("alice/link.ipynb")
        info.external_attr = 0o120777 << 16  # a symlink
        zf.writestr(info, "/etc/passwd")
    lab = grade.Lab.find(LAB)
    records = grade.import_submissions(lab, export, grade.Workspace(tmp_path / "g"))
    assert [r["student"] for r in records] == ["outside"]
    assert not (tmp_path / "outside.ipynb").exists()
    assert all(p.is_relative_to(tmp_path / "g") for p in (tmp_path / "g").rglob("*"))


def test_preflight_reports_bad_input_without_running_anything():
    lab = grade.Lab.find(LAB)
    released = json.loads((course.ROOT / "labs" / LAB / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    assert grade.preflight(b"", lab, released)[0] is None
    nb, issues = grade.preflight(b'{"cells": [', lab, released)
    assert nb is None and "invalid JSON" in issues[0]
    nb, issues = grade.preflight(json.dumps({"cells": [], "nbformat": 4}).encode(), lab, released)
    assert nb is None and "empty submission" in issues[-1]
    nb, issues = grade.preflight(json.dumps(released).encode("utf-16"), lab, released)
    assert nb is not None and "UTF-16" in issues[0]


def test_oversized_notebook_is_refused_before_parsing():
    lab = grade.Lab.find(LAB)
    nb, issues = grade.preflight(b"{" * (grade.MAX_NOTEBOOK_BYTES + 1), lab, {"cells": []})
    assert nb is None and "larger than" in issues[0]


def test_single_file_per_student_is_not_reported_as_renamed(tmp_path):
    src = tmp_path / "export"
    (src / "nested" / "bob").mkdir(parents=True)
    (src / "alice.ipynb").write_text("{}")
    (src / "nested" / "bob" / "whatever.ipynb").write_text("{}")
    lab = grade.Lab.find(LAB)
    records = {r["student"]: r for r in grade.import_submissions(lab, src, grade.Workspace(tmp_path / "g"))}
    assert records["alice"]["import_issues"] == []
    assert any("was named" in i for i in records["nested"]["import_issues"])


def test_answers_travel_as_data_and_only_course_dataclasses_come_back():
    import dataclasses

    import numpy as np

    from grader.checks import CheckFailure  # a class of the course's packages, though not a dataclass

    @dataclasses.dataclass(frozen=True)
    class Foreign:  # defined in tests/: not rebuilt in the grader
        x: int

    value = {"a": (1, 2.5, "s"), 3: [np.arange(4, dtype=np.int16), {1, 2}], "none": None, "b": True}
    back = grade.decode(json.loads(json.dumps(grade.encode(value))))
    assert back.keys() == value.keys() and back["a"] == (1, 2.5, "s") and back[3][1] == {1, 2}
    assert back[3][0].dtype == np.int16 and back[3][0].tolist() == [0, 1, 2, 3]
    assert isinstance(grade.decode(grade.encode(Foreign(1))), grade.Unsupported)
    assert isinstance(grade.decode(grade.encode(CheckFailure("x"))), grade.Unsupported)
    assert isinstance(grade.decode({"__dc__": "os:system", "fields": {}}), grade.Unsupported)


def test_course_dataclasses_are_rebuilt_in_the_grader():
    import dataclasses
    import importlib

    for mod_name in ("gpucourse.streams", "gpucourse.roofline", "gpucourse.hardware"):
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        for obj in vars(mod).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod_name:
                inst = obj.__new__(obj)
                for f in dataclasses.fields(obj):
                    object.__setattr__(inst, f.name, 1.5)
                back = grade.decode(json.loads(json.dumps(grade.encode(inst))))
                assert type(back) is obj and all(getattr(back, f.name) == 1.5 for f in dataclasses.fields(obj))
                return
    pytest.skip("no dataclass in the course package to try")


def test_job_config_sandboxes_the_kernel_and_caps_outputs(tmp_path):
    """The config each job's nbgrader runs with: the sandboxed kernel, its IPC kernel manager, the output caps.
    nbgrader only *logs* an error in its config and carries on without the rest, so the grader loads it first."""
    from nbgrader.preprocessors import Execute
    from traitlets.config.loader import PyFileConfigLoader

    from grader.pipeline import autograde as ag

    ag.write_job_config(tmp_path, grade.Settings(cell_timeout=17))
    c = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert c.Execute.kernel_name == ag.KERNEL_NAME and c.Execute.timeout == 17
    assert c.Execute.kernel_manager_class == "grader.pipeline.autograde.SandboxKernelManager"
    pre = c.Autograde.autograde_preprocessors
    assert pre[0] is not Execute and issubclass(pre[0], Execute) and pre[0].__name__ == "CappedExecute"
    with open(tmp_path / "nbgrader_config.py", "a", encoding="utf-8") as fh:
        fh.write("\nraise ValueError('a broken line')\n")
    with pytest.raises(RuntimeError, match="config is broken"):
        ag.check_config(tmp_path)


def test_tampering_fails_the_kernel_only_cells_after_it():
    """A test cell the re-check cannot replay keeps nbgrader's verdict — unless student code before it replaced
    what the checks rely on; cells before the tampering keep theirs."""
    steps = [End("early_kernel_only", kernel_only=True), Exec("ex1", "", student=True),
             End("late_kernel_only", kernel_only=True)]
    lines = [json.dumps(r) for r in ({"step": 0, "ok": True}, {"step": 1, "ok": True},
                                     {"step": 1, "tampered": ["numpy.abs"]}, {"step": 2, "ok": True}, {"done": True})]
    checked, tamper, stop = grade.verdicts(steps, {}, lines, {})
    assert stop is None and tamper and "numpy.abs" in tamper[0]
    assert "early_kernel_only" not in checked, "a cell before the tampering lost nbgrader's verdict"
    assert checked["late_kernel_only"]["ok"] is False and "not trusted" in checked["late_kernel_only"]["message"]
    clean = [json.dumps(r) for r in ({"step": 0, "ok": True}, {"step": 1, "ok": True}, {"step": 2, "ok": True},
                                     {"done": True})]
    assert grade.verdicts(steps, {}, clean, {})[0] == {}, "without tampering, kernel-only cells keep nbgrader's verdict"


FORGED_COMPILED = """
import gpucourse.xla
class _Fake:  # one loop fusion, the right bytes, no temp: what fixed_scale_tanh's structure check reads
    pass
def _fake_compiled(fn, *args):
    return _Fake()
gpucourse.xla.compiled = _fake_compiled
"""


@pytest.mark.parametrize("forgery, names", [
    (FORGED_COMPILED, ["gpucourse.xla.compiled"]),
    ("from grader.labs import lab06_xla_sass as l6\nl6._JitProblem.observe = lambda self, fn, case: {}",
     ["grader.labs.lab06_xla_sass._JitProblem.observe"]),
    ("import grader.kernels\ngrader.kernels.KernelProblem.observe = lambda self, fn, case: {}",
     ["grader.kernels.KernelProblem.observe"]),
    ("import grader.labs.lab06_xla_sass as l6\nl6._MeasureProblem.observe = lambda *a: {}\n"
     "l6._ToolchainProblem.observe = lambda *a: {}",
     ["grader.labs.lab06_xla_sass._MeasureProblem.observe", "grader.labs.lab06_xla_sass._ToolchainProblem.observe"]),
    ("import sys\nsys.modules['gpucourse.simt.run'].run = lambda *a, **k: None", ["gpucourse.simt.run.run"]),
    ("from grader.labs import lab06_xla_sass as l6\nl6.problems['fused_bias_gelu'].observe = lambda fn, case: {}",
     ["problems['fused_bias_gelu'].observe"]),
    ("import grader.virtual_clock as vc\nvc.VirtualClock.__call__ = lambda self: self.now",
     ["grader.virtual_clock.VirtualClock.__call__"]),
], ids=["xla.compiled", "JitProblem.observe", "KernelProblem.observe", "Measure+Toolchain.observe", "simt.run",
        "an instance's observe", "VirtualClock.__call__"])
def test_replacing_what_an_observation_relies_on_is_tampering(tmp_path, forgery, names):
    """Issue 14: a student cell that replaces a function or class an observation relies on (gpucourse.xla's
    compiled-program reader, a problem class's observe, the executor) is reported as tampering by the re-check's
    worker — so the cells after it fail — while an honest cell next to it is not."""
    import pickle

    steps = [{"kind": "exec", "cell": "setup", "source": "import numpy as np", "student": False},
             {"kind": "exec", "cell": "honest", "source": "def f(x):\n    return np.tanh(2.0 * x)", "student": True},
             {"kind": "exec", "cell": "forged", "source": forgery, "student": True},
             {"kind": "exec", "cell": "after", "source": "y = 1", "student": True}]
    job = {"steps": steps, "lab_module": "grader.labs.lab06_xla_sass", "seeds": {}, "step_timeout": 60}
    (tmp_path / "job.pickle").write_bytes(pickle.dumps(job))
    subprocess.run([sys.executable, "-m", "grader.pipeline.recheck_worker", str(tmp_path / "job.pickle"),
                    str(tmp_path / "out.jsonl")], check=True, timeout=300, cwd=course.ROOT)
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {"done": True} in records
    assert all(r.get("ok", True) for r in records), records  # every cell ran
    tampered = [r for r in records if "tampered" in r]
    assert [r["step"] for r in tampered] == [2], records  # the forged cell only: not the honest one, not after
    assert set(names) <= set(tampered[0]["tampered"]), tampered


def test_review_flags_name_cells_that_reach_into_the_grader_and_spare_honest_answers():
    from grader.pipeline.preflight import review_flags

    for lab_name in course.labs():  # no solution of any lab is flagged
        lab = grade.Lab.find(lab_name)
        released = json.loads((course.ROOT / "labs" / lab_name / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
        assert review_flags(grading.fill(released, grading.solution_cells(lab.source()))) == [], lab_name
    lab = grade.Lab.find(LAB)
    released = json.loads((course.ROOT / "labs" / LAB / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    nb = grading.fill(released, {"axpy_calls": "import sys\nout = open(sys.argv[2], 'a')",
                                 "gemm_k": "f = lab.problems['gemm_k'].reference"})
    flags = "\n".join(review_flags(nb))
    assert "reach into the grading process: axpy_calls (sys.argv)" in flags
    assert "use the grader's own objects: gemm_k" in flags
    # issue 14: the instrumentation an observation reads (device counters, the virtual clock, a workload's
    # seconds) written or read by hand, attributes set by name, the course's modules rebound
    for code, shown in [("mem.h2d_bytes = x.nbytes", ".h2d_bytes ="), ("w.calls, w.timed = 4, 3", ".timed ="),
                        ("slow.clock.reads += 1", ".reads +="), ("return slow.seconds, fast.seconds", ".seconds"),
                        ("setattr(mem, 'peak', 0)", "setattr("), ("mem.__dict__.update(d)", "__dict__"),
                        ("vars(w)['timed'] = 3", "vars("),
                        ("gpucourse.xla.compiled = fake", "gpucourse.xla.compiled ="),
                        ("return fn.work_s", ".work_s"), ("t = fn.clock.now", ".clock")]:
        flags = "\n".join(review_flags(grading.fill(released, {"axpy_calls": code})))
        assert f"write the instrumentation the checks read: axpy_calls ({shown})" in flags, code
    for honest in ("if clock.now == t0:", "best = min(best, t.peak)", "assert mem.peak <= mem.budget"):
        assert review_flags(grading.fill(released, {"axpy_calls": honest})) == [], honest
    # the thirteenth attack's routes around the locks (grader/DESIGN.md): XLA's C++ entry points kept at cell level
    # (the call watch sees Python code only), numba's LLVM module read directly, a library's source run a second
    # time, JAX's rule tables copied
    for code, shown in [("import jaxlib._jax as _jx\nC = _jx.hlo_module_cost_analysis", "jaxlib"),
                        ("from jax._src.lib import xla_client", "xla_client"),
                        ("ir = str(d.overloads[sig].library._final_module)", "_final_module"),
                        ("exec(compile(src, name, 'exec'), ns)", "exec("),
                        ("src = open(mod.__file__).read()", "__file__"),
                        ("m = importlib.import_module(name)", "importlib"),
                        ("R = dict(ad.primitive_transposes)", "primitive_transposes")]:
        flags = "\n".join(review_flags(grading.fill(released, {"axpy_calls": code})))
        assert f"reach into the grading process: axpy_calls ({shown}" in flags, code


@pytest.mark.slow
def test_a_notebook_run_outside_the_sandboxed_kernel_is_not_graded(tmp_path, monkeypatch):
    """Were the job's nbgrader config lost (nbgrader only logs a config error, then runs its own kernel, with
    the whole machine in view), the job must fail instead of grading: here the config names no kernel at all."""
    from grader.pipeline import autograde as ag

    monkeypatch.setattr(ag, "write_job_config", lambda job, settings: ag.write_config(job, extra=""))
    lab = grade.Lab.find(LAB)
    released = json.loads((course.ROOT / "labs" / LAB / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    export = tmp_path / "export"
    export.mkdir()
    (export / "alice.ipynb").write_text(json.dumps(grading.fill(released, grading.solution_cells(lab.source()))))
    ws = grade.Workspace(tmp_path / "grading")
    grade.import_submissions(lab, export, ws)
    (r,) = grade.autograde(lab, ws, grade.Settings(jobs=1, cell_timeout=30), progress=lambda *_: None,
                           secret=grade.Secret(b"unsandboxed-kernel-test-secret", "test"))
    assert r["status"] == "error" and r["score"] == 0, r
    assert "sandboxed kernel never started" in r["issues"][0], r["issues"]


# -- a split lab (lab 7): no reference and no hidden-case generator where the student's code runs ---------------

LAB07 = "lab07_tpu"


@pytest.fixture(scope="module")
def graded_lab07(tmp_path_factory, grading_secret):
    tmp = tmp_path_factory.mktemp("class07")
    lab = grade.Lab.find(LAB07)
    released = json.loads((course.ROOT / "labs" / LAB07 / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    export = tmp / "export"
    export.mkdir()
    for name, data in corpus.build_lab07(released, grading.solution_cells(lab.source())).items():
        (export / name).write_bytes(data)
    ws = tmp / "grading"
    # a process of its own, as an instructor runs it: lab 7's references need JAX's 8 CPU devices in the grader's
    # process, and JAX reads XLA_FLAGS once, when first imported (this test process may have imported it already)
    run = subprocess.run([sys.executable, "-m", "grader", "grade", LAB07, str(export), "--dir", str(ws), "--jobs", "2",
                          "--wall-timeout", "300"], cwd=course.ROOT, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return lab, ws, {r["student"]: r for r in grade.load_results(lab, grade.Workspace(ws))}


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(corpus.EXPECT_LAB07))
def test_split_lab_outcome(graded_lab07, student):
    _, _, results = graded_lab07
    low, high, _ = corpus.EXPECT_LAB07[student]
    r = results[student]
    failed = {k: c["message"] for k, c in r["cells"].items() if c["score"] < c["points"]}
    assert low <= r["score"] <= high, f"{student}: score {r['score']} not in [{low}, {high}]; failed {failed}"
    # every test cell was judged in the grader's process (hidden ones from data: the sandbox only observed): none
    # is "kernel-only", systolic_matmul's clocked array included
    assert {c["checked"] for c in r["cells"].values()} <= {"kernel and outside", "checked outside the kernel"}, \
        r["cells"]


@pytest.mark.slow
def test_a_submission_searching_for_references_at_grading_time_finds_none(graded_lab07):
    """The probe searched the file system (its own planted file is its positive control), sys.modules and sys.path
    inside the sandboxed kernel; the answer side of the lab is nowhere, and the Problems there hold none."""
    if bwrap_path() is None:
        pytest.skip("the unshare fallback has no file-system isolation (warn_if_weak says so)")
    _, ws, _ = graded_lab07
    nb = json.loads((ws / "autograded" / "find_references" / LAB07 / f"{LAB07}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "pe_step")
    text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    m = re.search(r"ANSWERS-PROBE (\{.*\})", text)
    assert m, f"the probe printed no report: {text[:2000]}"
    probe = json.loads(m.group(1))
    assert probe["files"] == [probe["planted"]], f"the kernel can read the answer side: {probe['files']}"
    assert probe["visited"] > 1000, probe
    assert probe["modules"] == [] and not probe["imported"] and probe["references"] == [] and probe["path"] == [], probe


# -- every other split lab: the same hunt for its answer side, one submission per lab ------------------------------

SPLIT_LABS = [name for name in split_labs() if name != LAB07]  # lab 7: above, next to its solution


@pytest.fixture(scope="module", params=SPLIT_LABS)
def hunted(request, tmp_path_factory, grading_secret):
    """A split lab graded (a process of its own, as an instructor runs it) with the one submission of
    ``corpus.build_find_references``: (its result, the probe's report). One lab at a time: parallel grading
    commands would share slot 0's sandbox user, and its process limit."""
    name = request.param
    tmp = tmp_path_factory.mktemp(f"hunt-{name}")
    lab = grade.Lab.find(name)
    released = json.loads((course.ROOT / "labs" / name / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    data, probe_cell = corpus.build_find_references(name, released)
    (tmp / "export").mkdir()
    (tmp / "export" / "find_references.ipynb").write_bytes(data)
    ws = tmp / "ws"
    run = subprocess.run([sys.executable, "-m", "grader", "grade", name, str(tmp / "export"), "--dir", str(ws),
                          "--jobs", "1", "--wall-timeout", "300"], cwd=course.ROOT, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = {r["student"]: r for r in grade.load_results(lab, grade.Workspace(ws))}["find_references"]
    nb = json.loads((ws / "autograded" / "find_references" / name / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == probe_cell)
    text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
    m = re.search(r"ANSWERS-PROBE (\{.*\})", text)
    assert m, f"{name}: the probe printed no report: {text[:2000]}"
    return name, result, json.loads(m.group(1))


@pytest.mark.slow
@pytest.mark.skipif(bwrap_path() is None, reason="the unshare fallback has no file-system isolation")
def test_no_split_lab_shows_its_answer_side_to_a_submission_that_hunts_for_it(hunted):
    """As lab 7's probe above, for every other split lab (one submission each): the kernel finds no file of the
    lab's answer side (its own planted file is its positive control), no module, no import path, no reference or
    generator of a split problem on its Problems — and the submission, which answers only with what it finds,
    scores 0."""
    name, result, probe = hunted
    assert probe["files"] == [probe["planted"]], f"{name}: the kernel can read the answer side: {probe['files']}"
    assert probe["visited"] > 1000, probe
    assert probe["modules"] == [] and not probe["imported"] and probe["references"] == [] and probe["path"] == [], probe
    earned = {k: c["score"] for k, c in result["cells"].items() if c["score"]}
    assert result["score"] == 0, f"{name}: scored {result['score']} with what it found: {earned}"


# -- a split kernel lab (lab 5b): kernels observed in the sandbox, judged in the grader ------------------------------

LAB05B = "lab05b_kernel_puzzles"


@pytest.fixture(scope="module")
def graded_lab05b(tmp_path_factory, grading_secret):
    tmp = tmp_path_factory.mktemp("class05b")
    lab = grade.Lab.find(LAB05B)
    released = json.loads((course.ROOT / "labs" / LAB05B / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    solutions = grading.solution_cells(lab.source())
    export = tmp / "export"
    export.mkdir()
    subs = {"solution": grading.fill(released, solutions), "blank": released,
            "wrong": grading.fill(released, {**solutions, **grading.wrong_submissions(LAB05B)[0]})}
    for name, nb in subs.items():
        (export / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    ws = tmp / "grading"
    assert cli.main(["grade", LAB05B, str(export), "--dir", str(ws), "--jobs", "2", "--wall-timeout", "300"]) == 0
    return {r["student"]: r for r in grade.load_results(lab, grade.Workspace(ws))}


@pytest.mark.slow
def test_split_kernel_lab_is_judged_outside_the_kernel(graded_lab05b):
    """Every test cell of lab 5b — kernels on the executor, "kernel-only" before the split — is judged in the
    grader's process from the re-check's observations (outputs + the executor's report as data): the solution
    earns full marks, the blank zero, the first wrong answer of every puzzle less on every puzzle, with the
    judge's message."""
    results = graded_lab05b
    sol, blank, wrong = results["solution"], results["blank"], results["wrong"]
    full = sum(c["points"] for c in sol["cells"].values())
    assert full > 0 and sol["score"] == full, {k: c["message"] for k, c in sol["cells"].items() if c["message"]}
    assert blank["score"] == 0
    for r in (sol, blank, wrong):
        assert {c["checked"] for c in r["cells"].values()} <= {"kernel and outside", "checked outside the kernel"}, \
            {k: c["checked"] for k, c in r["cells"].items()}
    lost = {k: c["message"] for k, c in wrong["cells"].items() if c["score"] < c["points"]}
    def puzzle(cell: str) -> str:  # map_add_visible -> map_add
        return cell.rsplit("_", 1)[0]

    kept = {puzzle(k) for k in sol["cells"]} - {puzzle(k) for k in lost}
    assert not kept, f"wrong answers that kept all their points: {sorted(kept)}"
    assert all(m for m in lost.values()), lost


def test_the_class_benchmark_hands_in_a_class_mix():
    """grader.benchmark_grading --class-size: 4 in 10 full, 3 wrong (each a different exercise's plausible wrong
    answer, from tests/wrong_answers), 2 blank, 1 corrupt — what a class hands in, for the class-scale figures."""
    import json

    from grader import benchmark_grading, grade, scratch

    lab = grade.Lab.find("lab03_datapath")
    notebooks = benchmark_grading.class_notebooks(lab, 20)
    kinds = [name.rsplit("-", 1)[1].removesuffix(".ipynb") for name in notebooks]
    assert {k: kinds.count(k) for k in set(kinds)} == {"full": 8, "wrong": 6, "blank": 4, "broken": 2}
    answers = scratch.solution_cells(lab.source())
    changed = set()
    for name, body in notebooks.items():
        if "broken" in name:
            with pytest.raises(json.JSONDecodeError):
                json.loads(body)
            continue
        cells = scratch.solution_cells(json.loads(body))
        differ = {g for g in answers if cells.get(g, "").strip() != answers[g].strip()}
        if "full" in name:
            assert not differ
        elif "wrong" in name:
            assert len(differ) == 1
            changed |= differ
        else:
            assert differ == set(answers)  # blank: the released stubs
    assert len(changed) == 6  # a different exercise each time (lab 3 has six)
