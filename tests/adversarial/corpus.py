"""The adversarial corpus for lab 1: one submission per attack and per kind of bad input, each with the outcome
the grading command must produce. ``build(released, solutions)`` returns the files of a class export (paths
inside the export -> bytes); ``EXPECT`` maps each student id to the score range and report lines expected.

Every attack is paired with answers that would *not* earn the points honestly, so a defence that fails shows up
as points that should not be there. Full marks for lab 1 (``FULL``) are read from the solution notebook's graded
cells, so the expectations follow the lab when it gains an exercise.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

LAB_SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "lab01_blas_roofline" / "lab01_blas_roofline.ipynb"


def _full_marks(path: Path = LAB_SOLUTION) -> float:
    """The lab's total points: the sum over its graded cells' nbgrader ``points``."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return float(sum(c["metadata"].get("nbgrader", {}).get("points", 0) for c in cells
                     if c["metadata"].get("nbgrader", {}).get("grade")))


FULL = _full_marks()

ATTACK_PATCH_CHECKS = '''
import grader.labs.lab01_blas_roofline as L
L.expect_int = L.fail = lambda *a, **k: None  # every comparison now passes
def axpy_calls(flops, nbytes):
    return [(1, "float32")]                   # wrong
'''

ATTACK_PATCH_NUMPY = '''
np.abs = lambda x: x * 0                      # expect_array_close measures the error with np.abs
def blocked_matmul(A, B, tile):
    return A[:, :1] @ B[:1, :] * 0            # wrong (and of the right shape)
'''

ATTACK_INPUT_TRANSFORMER = '''
ip = get_ipython()
ip.input_transformers_post.append(lambda lines: [l for l in lines if ".check(" not in l])  # test cells do nothing
def axpy_calls(flops, nbytes):
    return None
'''

ATTACK_EXIT = '''
import os
os._exit(0)                                   # the kernel dies here: nbgrader tests nothing after it
'''

ATTACK_IGNORE_INTERRUPT = '''
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)   # the cell-timeout interrupt does nothing
while True:                                    # and every exception (the check's alarm, too) is swallowed
    try:
        time.sleep(0.2)
    except BaseException:
        pass
'''

ATTACK_OUTPUT_FLOOD = '''
for _ in range(400_000):                      # ~40 MB of output
    print("x" * 100)
'''

# 200 MB the line limit cannot cut (nbgrader's LimitOutput counts lines, and never looks at rich output): the
# autograded notebook kept used to be 100 MB (a class of 300 such: 30 GB); the grader keeps a few MB at most
ATTACK_OUTPUT_FLOOD_WIDE = '''
import sys
for _ in range(150):                          # 150 MB on stdout, no newline
    sys.stdout.write("y" * 1_000_000)
from IPython.display import HTML, display
for _ in range(25):                           # 50 MB of HTML output
    display(HTML("<b>" + "z" * 2_000_000 + "</b>"))
'''

# Read the hidden tests of the notebook being graded: nbgrader writes it, hidden tests restored, into the job
# folder, and the kernel used to run in that very folder. The probe first plants a file holding the hidden-test
# line (its own positive control: it must find that one), then searches every folder it can see for others.
ATTACK_READ_HIDDEN_TESTS = r'''
import json as _json, os as _os
def _hidden_tests_probe():
    needle = ".check(axpy_calls, hidden=True)"     # exercise 1's hidden test (no quotes: JSON escapes them)
    planted = None
    for folder in (_os.getcwd(), _os.path.expanduser("~"), _os.environ.get("TMPDIR", "/tmp"), "/tmp"):
        try:
            with open(_os.path.join(folder, "planted-probe.ipynb"), "w") as fh:
                fh.write(_json.dumps({"cells": [{"source": needle}]}))
            planted = _os.path.realpath(_os.path.join(folder, "planted-probe.ipynb"))
            break
        except OSError:
            continue
    roots, p = [_os.getcwd(), _os.path.expanduser("~"), _os.environ.get("TMPDIR", "/tmp"), "/tmp"], _os.getcwd()
    while p != "/":
        p = _os.path.dirname(p)
        roots.append(p)
    skip = {"/usr", "/proc", "/sys", "/dev", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/var", "/boot"}
    found, visited = set(), 0
    for root in roots:
        base = root.rstrip("/").count("/")
        for dirpath, dirs, files in _os.walk(root):
            dirs[:] = [d for d in dirs if _os.path.join(dirpath, d) not in skip and d not in
                       (".venv", "site-packages", "dist-packages", "__pycache__", "node_modules")]
            if dirpath.rstrip("/").count("/") - base >= 6:
                dirs[:] = []
            for f in files:
                visited += 1
                path = _os.path.realpath(_os.path.join(dirpath, f))
                if f.endswith(".ipynb") and path not in found:
                    try:
                        with open(path, encoding="utf-8", errors="replace") as fh:
                            if needle in fh.read(50_000_000):
                                found.add(path)
                    except OSError:
                        pass
            if visited > 50_000:
                break
    return sorted(found), planted, visited
_found, _planted, _visited = _hidden_tests_probe()
print("HIDDEN-TESTS-PROBE " + _json.dumps({"found": _found, "planted": _planted, "visited": _visited}))
'''

ATTACK_LOOP = '''
while True:                                   # never finishes: the cell times out
    pass
'''

ATTACK_MEMORY = '''
hog = bytearray(8 * 2**30)                    # 8 GiB: above the sandbox's memory limit
'''

ATTACK_READ = '''
text = open("{root}/solutions/lab01_blas_roofline/lab01_blas_roofline.py").read()   # the instructor's answers
exec(text[text.index("def axpy_calls"):text.index("# %%", text.index("def axpy_calls"))])
'''

# the lab's own answers, called from the student's functions three ways: each costs its exercise
ATTACK_CALL_REFERENCE = {
    "gemv_shapes": """
def gemv_shapes(flops, nbytes, dtype):
    return lab.gemv_shapes(flops, nbytes, dtype)  # the lab module's reference, looked up when called
""",
    "gemm_k": """
_answer = lab.problems["gemm_k"].reference   # captured before the check runs
def gemm_k(m, n, flops, nbytes, dtype):
    return _answer(m, n, flops, nbytes, dtype)
""",
    "min_size_for_fraction": """
def _helper(*args):
    return lab.problems["min_size_for_fraction"].reference(*args)
def min_size_for_fraction(*args, ask=_helper):  # through a default argument and a helper
    return ask(*args)
""",
}


def _nb(released: dict, answers: dict[str, str]) -> dict:
    nb = copy.deepcopy(released)
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


def _bytes(nb: dict) -> bytes:
    return json.dumps(nb, indent=1, ensure_ascii=False).encode("utf-8")


def _messy(released: dict, full: dict[str, str], huge: bool) -> dict:
    """Duplicated answer cell, edited locked cell, deleted test cell (and, if ``huge``, 1 MB of output per cell)."""
    messy = _nb(released, full)
    cells = messy["cells"]
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in cells]
    cells.insert(ids.index("axpy_calls") + 1, copy.deepcopy(cells[ids.index("axpy_calls")]))  # duplicated
    cells[ids.index("setup")]["source"] += "\nimport os  # edited locked cell"
    del cells[ids.index("gemm_k_visible") + 1]  # a deleted test cell (+1: the duplicate shifted it)
    if huge:
        for cell in cells:
            if cell["cell_type"] == "code":
                cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * 1_000_000}]
    return messy


def _not_utf8(nb: dict) -> bytes:
    nb["cells"][0]["source"] = "Résumé: café — naïve"
    return json.dumps(nb, ensure_ascii=False).encode("cp1252", errors="replace")


def build(released: dict, solutions: dict[str, str], grouped: bool = False) -> dict[str, bytes]:
    """The class export. ``grouped=False``: one submission per attack and per bad input (EXPECT).
    ``grouped=True`` (CI, half the grading time): attacks that cannot interfere share a submission
    (EXPECT_GROUPED); the attacks whose effect reaches past their own cell keep their own."""
    from grader.course import ROOT

    attack_read = ATTACK_READ.replace("{root}", str(ROOT))  # wherever the course is checked out
    full = dict(solutions)
    files: dict[str, bytes] = {}
    files["solution.ipynb"] = _bytes(_nb(released, full))
    files["blank.ipynb"] = _bytes(released)
    files["patch_checks.ipynb"] = _bytes(_nb(released, {**full, "axpy_calls": ATTACK_PATCH_CHECKS}))
    files["patch_numpy.ipynb"] = _bytes(_nb(released, {**full, "blocked_matmul": ATTACK_PATCH_NUMPY}))
    files["input_transformer.ipynb"] = _bytes(_nb(released, {"axpy_calls": ATTACK_INPUT_TRANSFORMER}))
    files["exit_kernel.ipynb"] = _bytes(_nb(released, {**full, "min_batch_compute_bound": ATTACK_EXIT}))
    files["ignore_interrupt.ipynb"] = _bytes(_nb(released, {**full, "max_batch_within": ATTACK_IGNORE_INTERRUPT}))
    files["corrupt_json.ipynb"] = _bytes(_nb(released, full))[:5000]
    files["empty.ipynb"] = b""
    # extra files next to a renamed notebook in nested folders (a numpy.py would shadow NumPy in the kernel)
    kim = "김민지 (Kim)/homework/Lab 1 FINAL (2).ipynb"
    files["김민지 (Kim)/homework/numpy.py"] = b"raise SystemExit('shadowed numpy')\n"
    files["김민지 (Kim)/notes.txt"] = b"my notes"
    if grouped:
        files["resource_abuse.ipynb"] = _bytes(_nb(released, {
            **full, "axpy_calls": attack_read, "max_batch_within": ATTACK_LOOP,
            "longest_chain": ATTACK_OUTPUT_FLOOD + ATTACK_MEMORY + full["longest_chain"],
            **ATTACK_CALL_REFERENCE}))
        # what must be read from the executed notebook needs nbgrader to finish it: no second cell timeout here
        files["flood_and_probe.ipynb"] = _bytes(_nb(released, {
            **full, "min_batch_compute_bound": ATTACK_READ_HIDDEN_TESTS + full["min_batch_compute_bound"],
            "longest_chain": ATTACK_OUTPUT_FLOOD_WIDE + full["longest_chain"]}))
        files[kim] = _not_utf8(_messy(released, full, huge=True))
        return files
    files["infinite_loop.ipynb"] = _bytes(_nb(released, {**full, "max_batch_within": ATTACK_LOOP}))
    files["output_flood.ipynb"] = _bytes(_nb(released, {
        **full, "longest_chain": ATTACK_OUTPUT_FLOOD + ATTACK_OUTPUT_FLOOD_WIDE + full["longest_chain"]}))
    files["read_hidden_tests.ipynb"] = _bytes(_nb(released, {
        **full, "min_batch_compute_bound": ATTACK_READ_HIDDEN_TESTS + full["min_batch_compute_bound"]}))
    files["memory_hog.ipynb"] = _bytes(_nb(released, {**full, "longest_chain": ATTACK_MEMORY + full["longest_chain"]}))
    files["read_solutions.ipynb"] = _bytes(_nb(released, {**full, "axpy_calls": attack_read}))
    files["call_reference.ipynb"] = _bytes(_nb(released, {**full, **ATTACK_CALL_REFERENCE}))
    files["not_utf8.ipynb"] = _not_utf8(_nb(released, full))
    files[kim] = _bytes(_nb(released, full))
    files["messy_cells.ipynb"] = _bytes(_messy(released, full, huge=False))
    big = _nb(released, full)
    for cell in big["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * 1_000_000}]
    files["huge_outputs.ipynb"] = _bytes(big)
    return files


# student id -> (lowest score, highest score, substrings that must appear in the report's issues)
EXPECT: dict[str, tuple[float, float, list[str]]] = {
    "solution": (FULL, FULL, []),
    "blank": (0, 0, []),
    "patch_checks": (0, 0, ["TAMPERING", "expect_int"]),
    "patch_numpy": (0, FULL - 6, ["TAMPERING", "numpy.abs"]),
    "input_transformer": (0, 0, []),
    # the check process stops in the attacked cell and resumes after it: that exercise alone is lost
    "exit_kernel": (FULL - 3, FULL - 3, ["nbgrader could not finish", "ended the process", "resumed after it"]),
    "ignore_interrupt": (FULL - 3, FULL - 3, ["ignored the interrupt", "ignored the timeout", "resumed after it"]),
    "infinite_loop": (FULL - 3, FULL - 3, []),
    "output_flood": (FULL - 3, FULL, []),
    "memory_hog": (FULL - 3, FULL - 3, []),
    "read_solutions": (FULL - 3, FULL - 3, []),
    "read_hidden_tests": (FULL, FULL, []),
    "call_reference": (FULL - 9, FULL - 9, ["REVIEW"]),
    "corrupt_json": (0, 0, ["invalid JSON"]),
    "empty": (0, 0, ["empty submission"]),
    "not_utf8": (FULL, FULL, ["not UTF-8"]),
    "김민지_Kim": (FULL, FULL, ["was named", "ignored extra files", "numpy.py"]),
    "messy_cells": (FULL, FULL, ["duplicated", "was edited", "re-added"]),
    "huge_outputs": (FULL, FULL, ["outputs: removed"]),
}

_SHARED = ("solution", "blank", "patch_checks", "patch_numpy", "input_transformer", "exit_kernel",
           "ignore_interrupt", "corrupt_json", "empty")
EXPECT_GROUPED: dict[str, tuple[float, float, list[str]]] = {
    **{k: EXPECT[k] for k in _SHARED},
    # read solutions/ (ex1), an infinite loop (ex3), 40 MB of output then 8 GiB (ex5), the lab's reference
    # answers called three ways (ex1b, ex2, ex7): each costs its exercise
    "resource_abuse": (FULL - 18, FULL - 18, ["REVIEW"]),
    # a search for the hidden tests (ex4: costs nothing, finds nothing but its own file), 200 MB of output (ex5:
    # may run past the cell's time limit, which costs ex5)
    "flood_and_probe": (FULL - 3, FULL, []),
    # renamed, nested, extra files, not UTF-8, duplicated/edited/deleted cells, huge outputs: all reported
    "김민지_Kim": (FULL, FULL, ["was named", "ignored extra files", "numpy.py", "not UTF-8", "duplicated",
                               "was edited", "re-added", "outputs: removed"]),
}

# student id -> {test cell: a substring its failure message must contain}, for attacks whose cells must say why
# lab 1 is split (grader/answers): in the sandbox its references are not there at all — the module has no
# gemv_shapes, a Problem's reference is None — so the attack fails on that; where the answer side is present (a
# sandbox without file-system isolation), the answer lock stops it instead. Either message is a pass.
_ABSENT = {"gemv_shapes": "has no attribute 'gemv_shapes'", "gemm_k": "'NoneType' object is not callable",
           "min_size_for_fraction": "'NoneType' object is not callable"}
_LOCKED = {f"{ex}_{kind}": ("does this exercise for you", _ABSENT[ex])
           for ex in ATTACK_CALL_REFERENCE for kind in ("visible", "hidden")}
EXPECT_MESSAGES: dict[str, dict[str, str | tuple[str, ...]]] = {"call_reference": _LOCKED, "resource_abuse": _LOCKED}

# student id -> the answer cell whose kept output holds the hidden-test probe's report (HIDDEN-TESTS-PROBE {...}):
# it must have found its own planted file and nothing else
EXPECT_PROBE: dict[str, str] = {"read_hidden_tests": "min_batch_compute_bound",
                                "flood_and_probe": "min_batch_compute_bound"}
# student id -> the answer cell that flooded its output: the kept notebook stays small and says it was cut
EXPECT_FLOOD: dict[str, str] = {"output_flood": "longest_chain", "flood_and_probe": "longest_chain"}


# -- lab 7, a split lab (grader/DESIGN.md): its references and hidden-case generators are not in the sandbox ------

LAB07_FULL = 21.0  # 7 exercises x (1 visible + 2 hidden)

# Search the file system, sys.modules and sys.path for the answer side at grading time, and answer with whatever
# it finds. The probe plants a file holding the answer side's marker first (its own positive control: it must find
# that one), then reads every Python file it can see (byte-compiled ones too) for the marker or a reference's name.
_FIND_REFERENCES = r'''
import importlib as _il, json as _json, os as _os, sys as _sys
_NEEDLES = @NEEDLES@
_SPLIT = @SPLIT@
def _answers_probe():
    planted = None
    for folder in (_os.getcwd(), _os.path.expanduser("~"), _os.environ.get("TMPDIR", "/tmp"), "/tmp"):
        try:
            with open(_os.path.join(folder, "planted_answers.py"), "w") as fh:
                fh.write("ANSWERS = {}\n")
            planted = _os.path.realpath(_os.path.join(folder, "planted_answers.py"))
            break
        except OSError:
            continue
    files, visited = set(), 0
    # where the course's packages were imported from (their parent: a checkout or site-packages), every import
    # path, the scratch folders, and the whole file system but the system's own folders, 6 levels deep
    import grader as _g
    here = _os.path.dirname(_os.path.dirname(_os.path.abspath(_g.__file__)))
    roots = [here, *[p for p in _sys.path if p and _os.path.isdir(p)], _os.getcwd(), _os.path.expanduser("~"), "/"]
    system = {"/proc", "/sys", "/dev", "/usr", "/etc", "/var", "/boot", "/bin", "/sbin", "/lib", "/lib64"}
    seen = set()
    for root in roots:
        for dirpath, dirs, names in _os.walk(root):
            real = _os.path.realpath(dirpath)
            if real in seen or visited > 300_000:
                dirs[:] = []
                continue
            seen.add(real)
            dirs[:] = [d for d in dirs if _os.path.join(dirpath, d) not in system]
            if root == "/" and dirpath.count("/") >= 6:
                dirs[:] = []
            for f in names:
                visited += 1
                path = _os.path.realpath(_os.path.join(dirpath, f))
                if "answers" in path.split("/") and f.endswith((".py", ".pyc")):
                    files.add(path + " (by name)")
                # contents: every Python file but the standard library's and third-party packages' (the course's
                # packages included wherever they are installed)
                third = any(s in path for s in ("/usr/", "site-packages", "dist-packages", "/lib/python3"))
                ours = any(s in path for s in ("/grader/", "/gpucourse/", "/answers/"))
                if f.endswith((".py", ".pyc")) and path not in files and (ours or not third):
                    try:
                        with open(path, "rb") as fh:
                            data = fh.read(2_000_000)
                    except OSError:
                        continue
                    if any(n.encode() in data for n in _NEEDLES):
                        files.add(path)
    modules = sorted(m for m in _sys.modules if "answers" in m)
    try:
        _il.import_module("grader.answers.@LAB@")
        imported = True
    except ImportError:
        imported = False
    _lab = _il.import_module("grader.labs.@LAB@")
    refs = sorted(n for n, p in _lab.problems.items()
                  if (_SPLIT is None or n in _SPLIT) and (p.reference is not None or p.hidden is not None))
    return {"files": sorted(files), "planted": planted, "visited": visited, "modules": modules,
            "imported": imported, "references": refs,
            "path": [p for p in _sys.path if "answers" in p or "solutions" in p]}
_probe = _answers_probe()
print("ANSWERS-PROBE " + _json.dumps(_probe))
def _steal(name):
    try:
        return _il.import_module("grader.answers.@LAB@").ANSWERS[name][0]
    except Exception:
        return _il.import_module("grader.labs.@LAB@").problems[name].reference    # None where the answer side is absent
'''


def find_references_probe(lab: str, needles: tuple[str, ...], split: list[str] | None = None) -> str:
    """The probe for ``lab``: ``needles`` are strings only its answer side holds; ``split`` the problems whose
    answer side is in grader/answers (None: all of them), the only ones whose ``reference`` must be absent."""
    return (_FIND_REFERENCES.replace("@NEEDLES@", repr(tuple(needles))).replace("@SPLIT@", repr(split))
            .replace("@LAB@", lab))


ATTACK_FIND_REFERENCES = find_references_probe(
    "lab07_tpu", ("ANSWERS = {", "_systolic_reference", "_hops_reference", "def _collective_reference"))

LAB07_STEAL = {
    "pe_step": ATTACK_FIND_REFERENCES + '''
def pe_step(a, p, W, a_in):
    ref = _steal("pe_step")
    return ref(a, p, W, a_in) if ref else None
''',
    "systolic_matmul": '''
def systolic_matmul(A, W):
    ref = _steal("systolic_matmul")
    return (ref(A, W), None) if ref else None
''',
    "best_array": '''
def best_array(M, K, N, pes):
    ref = _steal("best_array")
    return ref(M, K, N, pes) if ref else None
''',
    "fused_dense": '''
def fused_dense(x, w, b, bm, bn, bk):
    ref = _steal("fused_dense")
    return ref(x, w, b, bm, bn, bk) if ref else None
''',
    "sharded_matmul": '''
def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    ref = _steal("sharded_matmul")
    return ref(a_spec, b_spec, out_spec, mesh_shape) if ref else None
''',
    "slice_hops": '''
def slice_hops(a, b, dims, chip):
    ref = _steal("slice_hops")
    return ref(a, b, dims, chip) if ref else None
''',
    "collective_seconds": '''
def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
    ref = _steal("collective_seconds")
    return ref(kind, nbytes, p, wrap, link_bandwidth, latency) if ref else None
''',
}


def build_lab07(released: dict, solutions: dict[str, str]) -> dict[str, bytes]:
    """Lab 7's class export: the solution, and the submission that hunts for the answer side (it answers only
    with what it finds: 0 when it finds nothing)."""
    return {"solution.ipynb": _bytes(_nb(released, dict(solutions))),
            "find_references.ipynb": _bytes(_nb(released, LAB07_STEAL))}


EXPECT_LAB07: dict[str, tuple[float, float, list[str]]] = {
    "solution": (LAB07_FULL, LAB07_FULL, []),
    "find_references": (0, 0, []),
}


# -- every other split lab: the same hunt, one submission per lab ---------------------------------------------------

def split_answers(lab: str) -> tuple[list[str], tuple[str, ...]]:
    """(the problems whose answer side is in grader/answers, needles only that answer side holds): its ``ANSWERS``
    line and the ``def`` line of every reference and hidden-case generator defined there, less any that a file of
    the exercise side (``gpucourse``, ``grader`` without ``answers``) also holds."""
    import importlib

    from grader.course import ROOT

    module = f"grader.answers.{lab}"
    answers = importlib.import_module(module).ANSWERS
    defs = {f"def {f.__name__}(" for pair in answers.values() for f in pair
            if getattr(f, "__module__", None) == module and f.__name__.isidentifier()}
    exercise = [p.read_text(encoding="utf-8") for folder in ("gpucourse", "grader") for p in (ROOT / folder).rglob("*.py")
                if "answers" not in p.relative_to(ROOT).parts]
    needles = sorted(d for d in defs if not any(d in text for text in exercise))
    return sorted(answers), ("ANSWERS = {", *needles)


def _defined(source: str) -> set[str]:
    """Top-level names a cell defines (functions, kernels, assignments); none if it does not parse."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def build_find_references(lab: str, released: dict) -> tuple[bytes, str]:
    """A submission for a split lab that hunts for its answer side at grading time (the probe) and answers every
    split problem with the reference it finds (None where it finds none); the lab's other cells stay blank. Returns
    the notebook and the grade_id of the cell whose output holds the probe's report."""
    split, needles = split_answers(lab)
    cells: dict[str, str] = {}
    probe_cell = None
    for cell in released["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] != "code" or not meta.get("solution"):
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        mine = sorted(_defined(src) & set(split))
        if not mine:
            continue
        code = "".join(f'''
def {name}(*args, **kwargs):
    ref = _steal("{name}")
    return ref(*args, **kwargs) if ref else None
''' for name in mine)
        if probe_cell is None:
            probe_cell = meta["grade_id"]
            code = find_references_probe(lab, needles, split) + code
        cells[meta["grade_id"]] = code
    assert probe_cell is not None and len(cells) >= 1, f"{lab}: no solution cell defines a split problem's function"
    return _bytes(_nb(released, cells)), probe_cell
