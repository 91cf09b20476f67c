"""A class on one machine, for real: JupyterHub (deploy/local/jupyterhub_config.py) + configurable-http-proxy +
nbgrader's exchange on loopback, an instructor and three real Linux users. The lab is released, fetched, filled
(one right, one wrong in exercise 1, one blank), submitted, collected, autograded and exported; the grades must
be exactly what the answers deserve. Students cannot read each other's work or the exchange's inbound, nor any
reference, hidden-case generator or solution (the users' venv holds the student edition only), and Formgrader
renders under the hub. Timings go to <artifacts>/hub-timings.json."""

from __future__ import annotations

import json
import os
import pwd
import shlex
import stat
import subprocess
import time

import pytest

from tests.e2e import harness as browser

from . import harness

pytestmark = [pytest.mark.slow, pytest.mark.hub]


@pytest.fixture(scope="module")
def class_run():
    modes = harness.grant_traversal() + harness.close_checkout() if os.geteuid() == 0 else []
    reason = harness.missing_tools()
    if reason:
        harness.restore_modes(modes)
        pytest.skip(f"the JupyterHub test cannot run here: {reason}")
    hub = harness.Hub(n_students=3)
    try:
        t0 = time.monotonic()
        hub.setup()
        setup_s = time.monotonic() - t0
        start_s = hub.start()
        spawn_s = hub.spawn_all()
        kinds = harness.kinds_for(hub.students)
        result = harness.workflow(hub, kinds)
        result.seconds.update(setup=setup_s, hub_start=start_s, spawn_all=spawn_s)
        browser.ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (browser.ARTIFACTS / "hub-timings.json").write_text(json.dumps(
            {"students": len(hub.students), "seconds": result.seconds, "grades": result.grades,
             "grading_command": result.grading_command}, indent=1))
        yield hub, kinds, result
    finally:
        hub.stop()
        harness.restore_modes(modes)


def test_grades_are_exported_and_correct(class_run):
    hub, kinds, result = class_run
    expected = harness.expected_scores()
    assert expected["right"] > expected["wrong"] > expected["blank"] == 0
    assert set(result.grades) == set(hub.students), f"grades.csv lists {sorted(result.grades)}"
    for student, kind in kinds.items():
        score, max_score = result.grades[student]
        assert max_score == expected["right"], f"{student}: max score {max_score}"
        assert score == expected[kind], f"{student} ({kind} answers) scored {score}, expected {expected[kind]}\n{result.report[:3000]}"


def test_students_cannot_read_each_others_work_or_the_inbound(class_run):
    hub, _, _ = class_run
    alice, bob = hub.students[:2]
    bobs = hub.home(bob) / harness.notebook_path()
    assert bobs.exists(), "bob's fetched lab is missing (the test would prove nothing)"
    own = hub.as_user(bob, f"cat {bobs} > /dev/null")
    assert own.returncode == 0, f"bob cannot read his own lab: {own.stderr}"
    peek = hub.as_user(alice, f"cat {bobs}")
    assert peek.returncode != 0 and "Permission denied" in peek.stderr, "alice read bob's notebook"
    inbound = hub.exchange / harness.COURSE_ID / "inbound"
    assert any(inbound.iterdir()), "nothing was submitted to the inbound"
    listing = hub.as_user(alice, f"ls {inbound}")
    assert listing.returncode != 0 and "Permission denied" in listing.stderr, f"alice listed the inbound: {listing.stdout}"
    # and through the hub: alice's own token does not open bob's server
    token = hub.user_token(alice)
    status, _ = hub.api("GET", f"/user/{bob}/api/contents/{harness.notebook_path()}", token=token)
    assert status in (403, 404), f"alice's token read bob's notebook through the hub (HTTP {status})"
    status, _ = hub.api("GET", f"/user/{alice}/api/contents", token=token)
    assert status == 200, f"alice's token cannot open her own server (HTTP {status}): the check above proves nothing"


PROBE = r"""
import importlib, importlib.util, json, os, sys
import gpucourse, grader
from grader.labs import lab05b_kernel_puzzles as lab05b
found = []  # any file of the answer side or of the solutions reachable from the import path
for entry in sys.path:
    for d, dirs, files in os.walk(entry) if os.path.isdir(entry) else ():
        parts = d.split(os.sep)
        if ("grader" in parts and "answers" in parts[parts.index("grader"):]
                or "solutions" in parts and any(f.endswith((".ipynb", ".py")) for f in files)):
            found.append(d)
print("PROBE " + json.dumps({
    "gpucourse": gpucourse.__file__, "grader": grader.__file__, "answers": repr(importlib.util.find_spec("grader.answers")),
    "has_answers": [p.has_answers() for p in lab05b.problems.values()],
    "references": [p.name for p in lab05b.problems.values() if p.reference is not None or p.hidden is not None],
    "found": found[:20]}))
"""


def test_a_students_server_cannot_read_any_reference_generator_or_solution(class_run):
    """As a student — code run in a kernel of their own server through the hub and Jupyter's REST/websocket API,
    and a shell as their Linux user with their venv's Python: the course comes from the student
    edition installed in the users' venv; grader.answers does not exist there, lab 5b's problems hold no reference
    or generator, nothing under the import path is an answer module or a solution; the instructor's checkout and
    this checkout's grader/answers and solutions/ cannot be read; and the marker planted in the instructor's
    reference module and solution is in no file the student can read (positive controls: it is in the checkout,
    and the student's own lab is readable)."""
    hub, _, _ = class_run
    student = hub.students[0]
    checkout = hub.checkout()
    planted = [checkout / "grader" / "answers" / "lab05b_kernel_puzzles.py",
               checkout / "solutions" / harness.LAB / f"{harness.LAB}.py"]
    assert all(hub.marker in p.read_text(encoding="utf-8") for p in planted)
    closed = [*planted, checkout / "solutions", harness.ROOT / "grader" / "answers" / "lab05b_kernel_puzzles.py",
              harness.ROOT / "grader" / "answers" / "lab07_tpu.py", harness.ROOT / "solutions",
              harness.ROOT / "solutions" / harness.LAB / f"{harness.LAB}.ipynb"]
    site = str(hub.tmp / "venv")
    # 1. where a student's code really runs: a kernel of their own server, through the hub and Jupyter's API
    peek_code = (PROBE + "\nimport os\nseen = {}\nfor p in " + repr([str(p) for p in closed]) + ":\n"
                 "    try:\n        seen[p] = 'read' if os.path.isfile(p) and open(p).read(1) is not None "
                 "else 'listed: ' + str(len(os.listdir(p)))\n"
                 "    except OSError as e:\n        seen[p] = type(e).__name__\n"
                 "print('PEEK ' + json.dumps(seen))\n")
    own = str(hub.home(student) / harness.notebook_path())  # positive control: the student's own lab
    peek_code = peek_code.replace("for p in [", f"for p in [{own!r}, ", 1)
    kernel_out = hub.run_in_kernel(student, peek_code, token=hub.user_token(student))
    probe = json.loads(kernel_out.split("PROBE ", 1)[1].split("\n", 1)[0])
    assert probe["gpucourse"].startswith(site) and probe["grader"].startswith(site), probe
    assert probe["answers"] == "None" and probe["references"] == [] and probe["found"] == [], probe
    assert len(probe["has_answers"]) == 18 and not any(probe["has_answers"]), probe
    seen = json.loads(kernel_out.split("PEEK ", 1)[1])
    assert seen == {own: "read", **{str(p): "PermissionError" for p in closed}}, f"the student's kernel: {seen}"
    # 2. the same as the student's Linux user from a shell (their venv's Python, no server in between)
    out = hub.as_user(student, f"cd && python -c {shlex.quote(PROBE)}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.split("PROBE ", 1)[1]) == probe
    for path in closed:
        assert path.exists(), path
        peek = hub.as_user(student, f"cat {shlex.quote(str(path))} || ls {shlex.quote(str(path))}")
        assert peek.returncode != 0 and "Permission denied" in peek.stderr, f"{student} read {path}"
    own = hub.as_user(student, f"cat {shlex.quote(str(hub.home(student) / harness.notebook_path()))} > /dev/null")
    assert own.returncode == 0, own.stderr  # the student can read their own work: the checks above mean something
    grep = hub.as_user(student, f"grep -rlF {hub.marker} {hub.tmp} {harness.ROOT} 2>/dev/null; true", timeout=900)
    assert grep.stdout.strip() == "", f"the marker is readable by a student in: {grep.stdout[:2000]}"
    # positive control: as root, grep finds it where it is (the planted files, their bytecode), all of it in the
    # instructor's checkout
    control = subprocess.run(["grep", "-rlF", hub.marker, str(hub.tmp)], capture_output=True, text=True, timeout=900)
    found = set(control.stdout.split())
    assert {str(p) for p in planted} <= found and all(f.startswith(f"{checkout}/") for f in found), control.stdout


def test_grading_secret_is_the_instructors_alone(class_run):
    """The grading command created the instructor's secret (it seeds every student's hidden cases) in their own
    config folder, mode 0600; a student cannot read it."""
    hub, _, _ = class_run
    secret = hub.home(hub.instructor) / ".config" / "gpucourse" / "grading-secret"
    assert secret.exists(), "the grading command did not create the instructor's grading secret"
    st = secret.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and pwd.getpwuid(st.st_uid).pw_name == hub.instructor
    own = hub.as_user(hub.instructor, f"cat {secret} > /dev/null")
    assert own.returncode == 0, f"the instructor cannot read their own secret: {own.stderr}"
    peek = hub.as_user(hub.students[0], f"cat {secret}")
    assert peek.returncode != 0 and "Permission denied" in peek.stderr, "a student read the grading secret"


def test_formgrader_is_for_the_instructor_only(class_run):
    hub, _, _ = class_run
    status, body = hub.api("GET", f"/user/{hub.instructor}/formgrader/api/assignments")
    assert status == 200, body
    lab = {a["name"]: a for a in body}[harness.LAB]
    assert lab["num_submissions"] == len(hub.students), lab
    status, _ = hub.api("GET", f"/user/{hub.students[0]}/formgrader/api/assignments")
    assert status == 404, f"a student's server serves Formgrader (HTTP {status})"


def test_formgrader_renders_under_the_hub(class_run):
    """In Chromium: log in as the instructor, open Formgrader from the Nbgrader menu; the iframe lists the lab
    (without `frame-ancestors 'self'` it would say 'refused to connect')."""
    hub, _, _ = class_run
    reason = browser.missing_tools()
    if reason:
        pytest.skip(f"needs Chromium and Playwright: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, timeout=60_000)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{hub.base}/hub/login")
            page.fill("input[name=username]", hub.instructor)
            page.fill("input[name=password]", hub.token)
            page.click("input[type=submit], button[type=submit]")
            page.wait_for_url(f"**/user/{hub.instructor}/lab**", timeout=90_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").first.wait_for(timeout=90_000)
            browser.menu_command(page, "Nbgrader", "nbgrader:open-formgrader")
            frame = page.frame_locator("iframe").first
            frame.locator("td, a", has_text=harness.LAB).first.wait_for(timeout=60_000)
            browser.screenshot(page, "hub-01-formgrader-under-jupyterhub")
        finally:
            chromium.close()
