"""The student edition (grader/edition.py): what students install holds no reference and no hidden-case
generator. The marker test of issue 14: a unique marker planted in a reference and in a hidden-case generator of
a scratch copy of the instructor's checkout appears nowhere in the edition built from it (folder and wheel); the
builder refuses a copy of a reference's code on the exercise side, however it is formatted; and the edition works
on its own (visible checks judge from the expected values shipped as data, hidden checks say they run at grading).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from grader import edition
from grader.course import ROOT

MARK_REF = f"EDITION-MARKER-REFERENCE-{uuid.uuid4().hex}"
MARK_GEN = f"EDITION-MARKER-GENERATOR-{uuid.uuid4().hex}"


def _checkout(tmp: Path) -> Path:
    """A scratch instructor checkout: what the builder reads."""
    root = tmp / "checkout"
    for name in ("gpucourse", "grader", "course", "labs", "solutions"):  # solutions/: what the edition must not hold
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, root / name)
    return root


def _plant(path: Path, after: str, line: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert after in text, after
    path.write_text(text.replace(after, after + "\n" + line, 1), encoding="utf-8")


def _build(root: Path, dest: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the scratch checkout's grader, not this one
    return subprocess.run([sys.executable, "-m", "grader", "student-edition", str(dest)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("edition")
    root = _checkout(tmp)
    answers = root / "grader" / "answers" / "lab07_tpu.py"
    _plant(answers, "hw: systolic.WeightStationaryArray | None = None\n) -> np.ndarray:", f'    _ = "{MARK_REF}"')
    _plant(answers, "def _systolic_cases(rng: np.random.Generator) -> list[Case]:", f'    _ = "{MARK_GEN}"')
    kernels = root / "grader" / "answers" / "lab05b_kernel_puzzles.py"  # a kernel lab's reference and generator too
    _plant(kernels, "def _warp_ref(a: np.ndarray) -> np.ndarray:", f'    _ = "{MARK_REF}"')
    _plant(kernels, "def _softmax_cases(rng: np.random.Generator) -> list[Case]:", f'    _ = "{MARK_GEN}"')
    run = _build(root, tmp / "edition")
    assert run.returncode == 0, run.stderr[-3000:]
    return root, tmp / "edition"


@pytest.mark.slow
def test_markers_in_a_reference_and_a_generator_are_nowhere_in_the_edition(built):
    root, dest = built
    for lab in ("lab07_tpu", "lab05b_kernel_puzzles"):
        planted = (root / "grader" / "answers" / f"{lab}.py").read_text(encoding="utf-8")
        assert MARK_REF in planted and MARK_GEN in planted  # positive control: the markers are on the answer side
    files = [p for p in (dest / "src").rglob("*") if p.is_file()]
    assert len(files) > 100
    for p in files:
        data = p.read_bytes()
        assert MARK_REF.encode() not in data and MARK_GEN.encode() not in data, p
    wheel = next(dest.glob("gpucourse-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        for n in names:
            data = zf.read(n)
            assert MARK_REF.encode() not in data and MARK_GEN.encode() not in data, n
    assert not [n for n in names if n.startswith("grader/answers")], "the wheel holds the answer side"
    for lab in ("lab07_tpu", "lab05b_kernel_puzzles"):
        assert f"grader/labs/{lab}.expected.json" in names and f"grader/labs/{lab}.py" in names
    assert not (dest / "src" / "grader" / "answers").exists()
    # the instructor's tooling stays with the instructor (it imports the answer side; students have no use for it)
    for tool in ("grader/mutation.py", "grader/strength/", "grader/benchmark.py", "grader/benchmark_grading.py",
                 "grader/benchmark_simt.py", "grader/equivalent_mutants.toml"):
        assert not [n for n in names if n.startswith(tool)], f"the wheel holds {tool}"
        assert not (dest / "src" / tool).exists(), f"the edition holds {tool}"


@pytest.mark.slow
def test_the_edition_checks_visible_cases_from_data_and_leaves_hidden_ones_to_grading(built):
    _, dest = built
    code = """
from grader.labs import lab07_tpu as lab
assert not any(p.has_answers() for p in lab.problems.values())
P = lab.problems["collective_seconds"]
P.show()
try:
    P.check(lambda *a: 0.0)
    raise SystemExit("a wrong answer passed")
except Exception as exc:
    print("WRONG:", str(exc)[:300])
P.check(lambda *a: 0.0, hidden=True)
"""
    # as in a student's environment: the edition and the third-party packages, not this checkout's editable
    # install (-S: no site, so no .pth finder mapping grader to the instructor's checkout)
    site_dirs = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(dest / "src"), *site_dirs])}
    run = subprocess.run([sys.executable, "-S", "-c", code], cwd=dest, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "WRONG:" in run.stdout and "expected" in run.stdout.split("WRONG:")[1], run.stdout
    assert "hidden tests run when your lab is graded" in run.stdout
    assert "Example: collective_seconds(" in run.stdout


KERNEL_PROGRAM = '''
import numpy as np
from gpucourse import simt
from grader.kernels import load_kernel
from grader.labs import lab05b_kernel_puzzles as lab
assert not any(p.has_answers() for p in lab.problems.values())
P = lab.problems["map_add"]
src = "@cuda.jit\\ndef map_add(a, out):\\n    i = cuda.threadIdx.x\\n    out[i] = a[i] + OFFSET\\n"
for offset, label in ((10.0, "RIGHT"), (11.0, "WRONG")):
    k = load_kernel(src, "map_add", {"np": np, "OFFSET": offset}, simt.cuda)
    try:
        P.check(k)
        print(label, "passed")
    except Exception as exc:
        print(label, "failed:", str(exc)[:300])
P.check(k, hidden=True)
'''


@pytest.mark.slow
def test_the_edition_judges_a_kernel_from_data_and_leaves_hidden_ones_to_grading(built):
    """Lab 5b in the edition: no reference, no generator; a right kernel passes its visible check against the
    stored expected outputs, one within budget but with wrong values fails with "expected", and the hidden check
    says it runs at grading."""
    _, dest = built
    site_dirs = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(dest / "src"), *site_dirs])}
    run = subprocess.run([sys.executable, "-S", "-c", KERNEL_PROGRAM], cwd=dest, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "RIGHT passed" in run.stdout, run.stdout
    assert "WRONG failed:" in run.stdout and "expected" in run.stdout.split("WRONG failed:")[1], run.stdout
    assert "hidden tests run when your lab is graded" in run.stdout


@pytest.mark.slow
def test_a_copied_reference_on_the_exercise_side_is_refused_however_it_is_formatted(tmp_path):
    root = _checkout(tmp_path)
    # _hops_reference's body, reformatted (other spacing, a line break inside the brackets, a comment)
    (root / "grader" / "labs" / "lab07_tpu.py").open("a", encoding="utf-8").write(
        "\n\ndef _helpful(a, b, dims, chip):\n"
        "    hypothetical=(chip,tuple(dims)) in HYPOTHETICAL\n"
        "    return hops(interconnect.Torus(dims,   # same code, new layout\n"
        "        wraparound(tpu.TPU_CHIPS[chip], dims, hypothetical=hypothetical)), a, b)\n")
    run = _build(root, tmp_path / "edition")
    assert run.returncode != 0
    assert "LeakError" in run.stderr and "grader/answers/lab07_tpu.py" in run.stderr, run.stderr[-2000:]
    assert not list((tmp_path / "edition").glob("*.whl"))


def test_the_answer_side_is_found_by_logical_lines():
    sig = edition.answer_side()
    assert "grader/answers/lab07_tpu.py" in sig and len(sig["grader/answers/lab07_tpu.py"]) > 20
    same = edition.logical_lines("x = foo(a,\n        b)  # c\ny = [1, 2, 3, 4, 5, 6]\n")
    assert same == edition.logical_lines("x = foo(a, b)\ny = [1,2,3,4,5,6]\n")


def test_every_exercise_of_every_lab_keeps_its_answers_on_the_answer_side():
    """No exercise ships its reference or hidden-case generator: every problem of every lab module is in its answer
    module's ANSWERS, and a freshly imported exercise side (a process of its own, as in the student edition) holds
    neither before the answer side binds them."""
    from grader.course import labs

    assert edition.unsplit_labs() == [] and edition.split_labs() == sorted(labs()) and labs()
    probe = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    lab = importlib.import_module(f'grader.labs.{name}')\n"
        "    shipped = [p.name for p in lab.problems.values() if p.reference is not None or p.hidden is not None]\n"
        "    answers = importlib.import_module(f'grader.answers.{name}')\n"
        "    out[name] = {'shipped': shipped, 'problems': sorted(lab.problems), 'answers': sorted(answers.ANSWERS)}\n"
        "print(json.dumps(out))\n")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    run = subprocess.run([sys.executable, "-c", probe, *labs()], cwd=ROOT, capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    import json

    for name, seen in json.loads(run.stdout.strip().splitlines()[-1]).items():
        assert seen["shipped"] == [], f"{name}: {seen['shipped']} hold a reference or generator on the exercise side"
        assert seen["problems"] == seen["answers"], (name, set(seen["problems"]) ^ set(seen["answers"]))


# -- no solution of solutions/ in the edition (issue 20) ---------------------------------------------------------


def test_the_edition_holds_no_solution():
    """What students install holds no function of a solution cell (normalised syntax tree) and no line of 8+ tokens
    of a solution block: no course notebook, helper or exercise-side module answers an exercise. The list of what
    it found is the fix list."""
    found = edition.solution_leaks(edition.edition_files())
    assert not found, "the student edition holds solutions:\n  " + "\n  ".join(found[:40])


def test_a_solution_is_found_however_it_is_renamed():
    """The normalised tree: other names, a docstring, annotations and comments change nothing; other code does."""
    import ast

    one = ast.parse("def f(x, n):\n    s = 0\n    for i in range(n):\n        s += x[i] * 2\n    return s\n").body[0]
    two = ast.parse("def total(values: list, count: int) -> int:\n    'Doubled sum.'\n    acc = 0  # start\n"
                    "    for k in range(count):\n        acc += values[k] * 2\n    return acc\n").body[0]
    other = ast.parse("def f(x, n):\n    s = 0\n    for i in range(n):\n        s += x[i] * 3\n    return s\n").body[0]
    assert edition.normalised(one) == edition.normalised(two)
    assert edition.normalised(one) != edition.normalised(other)
    lam = ast.parse("g = lambda a, b: (a @ b).sum(axis=0) + 1").body[0].value
    assert edition.normalised(lam) == edition.normalised(ast.parse("h = lambda p, q: (p @ q).sum(axis=0) + 1").body[0].value)


def _a_solution(root: Path) -> tuple[str, str]:
    """A solution function of the scratch checkout's solutions/ big enough to be compared: (grade id, its code)."""
    import ast

    for where, src in sorted(edition.solution_cells(root).items()):
        tree = edition._python(src)
        for fn in edition.functions(tree) if tree is not None else []:
            if isinstance(fn, ast.FunctionDef) and edition._size(fn) >= 40 and "cuda" not in src:
                return where, ast.get_source_segment(src, fn)
    raise AssertionError("no solution function found")


@pytest.mark.slow
def test_a_solution_pasted_into_a_course_notebook_or_helper_is_refused(tmp_path):
    """The build refuses (and keeps nothing) when a solution of solutions/ sits in a course notebook with its names
    changed, or when a solution block's line sits in a helper module."""
    import ast
    import json
    import re

    root = _checkout(tmp_path)
    where, code = _a_solution(root)
    tree = ast.parse(code).body[0]
    args = {a.arg: f"arg_{k}" for k, a in enumerate(tree.args.args)}

    class Rename(ast.NodeTransformer):  # what a student does: other names for the function and its arguments
        def visit_Name(self, node):
            node.id = args.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = args.get(node.arg, node.arg)
            return node

    tree.name = "handy_helper"
    renamed = '"""A helper, in a course cell."""\n' + ast.unparse(Rename().visit(tree))
    assert "arg_0" in renamed and "handy_helper" in renamed
    nb_path = root / "course" / "01_blas_roofline.ipynb"
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": renamed, "outputs": [], "execution_count": None})
    nb_path.write_text(json.dumps(nb), encoding="utf-8")
    found = edition.solution_leaks(edition.edition_files(root), root)
    assert [f for f in found if f.startswith("course/01_blas_roofline.ipynb") and f"the solution {where}" in f], found
    run = _build(root, tmp_path / "edition")
    assert run.returncode != 0 and "LeakError" in run.stderr, run.stderr[-2000:]
    assert not list((tmp_path / "edition").glob("*.whl")) and not (tmp_path / "edition" / "src").exists()
    # a line of a solution block, alone, in a helper module
    nb_path.write_text((ROOT / "course" / "01_blas_roofline.ipynb").read_text(encoding="utf-8"), encoding="utf-8")
    src = edition.solution_cells(root)[where]
    line = max((ln.strip() for k, ln in enumerate(src.splitlines(), 1) if k in edition._block_lines(src)
                and not ln.strip().startswith(("#", "return", "if", "for", "elif", "else"))), key=len)
    with (root / "gpucourse" / "timing.py").open("a", encoding="utf-8") as fh:
        fh.write("\n\ndef _unrelated(" + ", ".join(sorted(set(re.findall(r"\b[a-z_]\w*\b", line)) - {
            "np", "jnp", "math", "int", "float", "min", "max", "sum", "len", "range", "abs", "round"})) + "):\n"
                 f"    {line}\n")
    found = edition.solution_leaks(edition.edition_files(root), root)
    assert [f for f in found if f.startswith("gpucourse/timing.py: a line of the solution")], (line, found)
