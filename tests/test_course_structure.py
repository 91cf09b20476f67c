"""The course's shape: notebook pairs in step, labs/ generated from solutions/, one template everywhere,
every claim of the source articles checked in its section's Claims-check table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader import course
from tests.claims import CLAIMS

ROOT = course.ROOT
COURSE = sorted((ROOT / "course").glob("[0-9][0-9]_*.ipynb"))
LABS = course.labs()
VERDICT = re.compile(r"\*\*(confirmed|qualified|outdated|incorrect)\b", re.I)


def cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [{**c, "source": course.source_text(c["source"])} for c in nb["cells"]]


def section(path: Path) -> int:
    return int(path.name[:2])


def test_notebook_pairs_are_in_step_and_without_outputs():
    assert course.out_of_sync() == []


def test_labs_are_exactly_what_nbgrader_generates():
    assert course.stale_labs() == []


def test_claims_list_matches_the_shared_plan():
    shared = ROOT.parent / "shared" / "CLAIMS.md"
    if not shared.exists():
        pytest.skip("shared/CLAIMS.md is not beside this checkout")
    ids = re.findall(r"^\| (C\d\d) \| (\d) \|", shared.read_text(encoding="utf-8"), re.M)
    assert {i: int(s) for i, s in ids} == {i: s for i, (s, _) in CLAIMS.items()}


@pytest.mark.parametrize("nb", COURSE, ids=lambda p: p.name)
def test_course_notebook_follows_the_template(nb):
    cs = cells(nb)
    first = cs[0]
    assert first["cell_type"] == "markdown" and first["source"].startswith(f"# {section(nb)} — "), \
        "first cell: '# N — Title'"
    assert "**You will learn**" in first["source"], "first cell lists what the student will learn"
    code = [c["source"] for c in cs if c["cell_type"] == "code"]
    from gpucourse import colab

    assert code[0] == colab.install_cell().rstrip("\n"), \
        "the first code cell is the current Colab install cell (python -m gpucourse.colab cell; it cannot import " \
        "the package it installs, so it is repeated in every notebook and kept identical by this test)"
    assert "colab.research.google.com" in first["source"], "the title cell carries the Open-in-Colab badge"
    assert any("gc.setup()" in s for s in code[:3]), "the backend banner is printed at the top (gc.setup())"
    assert not any(re.search(r"^\s*(import|from)\s+(cupy|numba\.cuda)\b", s, re.M) for s in code), \
        "notebooks reach CuPy and numba-cuda through gpucourse's backend, never directly"
    assert not any(re.search(r"^\s*(import|from)\s+grader\b", s, re.M) for s in code), \
        "course notebooks import the helper package only; grader is the labs' side"
    assert not any("wget" in s or "urllib.request" in s for s in code), "nothing downloads at run time"
    assert not any(re.search(r"time\.(perf_counter|time)\(", s) for s in code), \
        "every timing goes through gc.measure"


@pytest.mark.parametrize("nb", COURSE, ids=lambda p: p.name)
def test_every_claim_of_the_section_has_a_verdict(nb):
    md = "\n".join(c["source"] for c in cells(nb) if c["cell_type"] == "markdown")
    table = md.split("## Claims check", 1)
    mine = sorted(i for i, (s, _) in CLAIMS.items() if s == section(nb))
    if not mine:
        return
    assert len(table) == 2, "a '## Claims check' section closes the notebook"
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (C\d\d) \|.*$", table[1], re.M)}
    for cid in mine:
        assert cid in rows, f"{cid} ({CLAIMS[cid][1]}) has no row in the Claims-check table"
        assert VERDICT.search(rows[cid]), f"{cid}: the row must state **confirmed**, **qualified** or **outdated**"
        # a short row links to its claim's paragraph: the verdict's reasons and the evidence
        assert f"(#Claim-{cid})" in rows[cid], f"{cid}: the row links to #Claim-{cid}"
        first = re.search(rf"^#### Claim {cid}\n\n\*\*(confirmed|qualified|outdated)\*\*", table[1], re.M)
        assert first and first.group(1) in re.findall(r"\*\*(confirmed|qualified|outdated)\*\*", rows[cid]), \
            f"{cid}: a '#### Claim {cid}' paragraph below the table starts with the row's verdict"
        paragraph = table[1].split(f"#### Claim {cid}\n", 1)[1].split("\n#", 1)[0]
        assert "*Evidence.*" in paragraph, f"{cid}: its paragraph gives the evidence"


@pytest.mark.parametrize("lab", LABS)
def test_lab_has_a_problem_module_and_wrong_answers(lab):
    assert (ROOT / "grader" / "labs" / f"{lab}.py").exists(), f"grader/labs/{lab}.py holds the lab's problems"
    assert (ROOT / "tests" / "wrong_answers" / f"{lab}.py").exists()
    import importlib

    module = importlib.import_module(f"grader.labs.{lab}")
    nb_src = "\n".join(c["source"] for c in cells(next((ROOT / "solutions" / lab).glob("*.ipynb"))))
    for name in module.problems:
        assert f'problems["{name}"].check(' in nb_src, f"{lab}: problem {name} is never checked in the notebook"


@pytest.mark.parametrize("lab", LABS)
def test_lab_opens_in_colab(lab):
    from gpucourse import colab

    cs = cells(next((ROOT / "solutions" / lab).glob("*.ipynb")))
    code = [c for c in cs if c["cell_type"] == "code"]
    assert code[0]["source"] == colab.install_cell().rstrip("\n"), "first code cell: the current Colab install cell"
    assert code[0]["metadata"]["nbgrader"]["locked"] and not code[0]["metadata"]["nbgrader"]["grade"]
    assert f"labs/{lab}/" in cs[0]["source"] and "colab.research.google.com" in cs[0]["source"]


@pytest.mark.parametrize("lab", LABS)
def test_lab_exercises_follow_one_shape(lab):
    nb = next((ROOT / "solutions" / lab).glob("*.ipynb"))
    solutions = [c for c in cells(nb) if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    assert len(solutions) >= 5, f"{lab}: at least 5 graded exercises"
    for c in solutions:
        src = c["source"]
        assert re.search(r"# roughly \d+ lines?", src), f"{c['metadata']['nbgrader']['grade_id']}: stub says 'roughly N lines'"
        assert "### BEGIN SOLUTION" in src and "### END SOLUTION" in src


def test_every_lab_has_a_course_notebook():
    sections = {section(p) for p in COURSE}
    for lab in LABS:
        assert int(lab[3:5]) in sections, f"{lab} has no course notebook"


def test_imports_run_one_way():
    """gpucourse never imports grader or tests; only backend.py touches CuPy and device discovery."""
    for path in sorted((ROOT / "gpucourse").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+(grader|tests)\b", text, re.M), f"{path.name} imports grader/tests"
        if path.name != "backend.py":
            assert not re.search(r"^\s*(import|from)\s+cupy\b", text, re.M), \
                f"{path.name} imports CuPy at module level: ask gpucourse.backend for it"


# the exercise side (what a student's notebook imports) and the grading pipeline are two sides of the imports
EXERCISE_SIDE = ("grader.problem", "grader.seeding", "grader.checks", "grader.kernels", "grader.wire", "grader.case")


def test_the_exercise_side_never_imports_the_grading_pipeline():
    """Importing the exercise side (the check machinery and every lab module) loads no module of grader.pipeline,
    no answer-side module, and no instructor tooling; and grader.problem, grader.wire, grader.case and
    grader.seeding import without a circle (each imported alone, first, in a fresh interpreter)."""
    import subprocess
    import sys

    labs = [f"grader.labs.{lab}" for lab in LABS]
    code = (
        "import importlib, sys\n"
        f"for name in {list(EXERCISE_SIDE) + labs!r}: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('grader.pipeline', 'grader.answers', "
        "'grader.strength', 'grader.mutation', 'grader.benchmark')))\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, f"the exercise side imports {run.stdout.strip()} {run.stderr[-2000:]}"
    for first in ("grader.wire", "grader.case", "grader.seeding", "grader.problem"):
        run = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 0, f"import {first} alone fails (an import circle?): {run.stderr[-1500:]}"


@pytest.mark.parametrize("nb", COURSE, ids=lambda p: p.stem)
def test_no_notebook_says_numbas_simulator_runs_kernels_by_default(nb):
    """Without a GPU the course's SIMT executor runs @cuda.jit kernels (numba's simulator only on request):
    prose that says otherwise contradicts the setup cell's "kernels" line."""
    text = " ".join(c["source"] for c in cells(nb) if c["cell_type"] == "markdown")
    assert not re.search(r"(in|on) numba'?s\s+CUDA\s+simulator\s+otherwise", text), nb.name


def test_the_simt_executor_imports_run_one_way():
    """Issue 22: gpucourse/simt reads from the bottom up — state and types, then the launch loop, then the public API
    (api.py, run.py on top): no module imports one that imports it back, at module level or inside a function
    (imports for type checking only are not run)."""
    import ast

    import gpucourse

    simt = Path(gpucourse.__file__).parent / "simt"
    names = {p.stem for p in simt.glob("*.py")}
    edges: dict[str, set[str]] = {}
    for path in simt.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and id(node) not in skip:
                deps |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        edges[path.stem] = (deps & names) - {"__init__"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and reaches(d, goal, seen | {d})) for d in edges.get(start, ()))

    circles = sorted(m for m in edges if m != "__init__" and reaches(m, m, {m}))
    assert not circles, f"import circles through {circles}: {({m: sorted(edges[m]) for m in circles})}"
