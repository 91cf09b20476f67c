"""The instructor's grading workflow around nbgrader: import, autograde (sandboxed, parallel), feedback, CSV, report.

    python -m grader release [LAB ...]                  # regenerate labs/ from solutions/ (what students get)
    python -m grader import LAB SOURCE                  # a folder or a .zip export: one notebook per student
    python -m grader autograde LAB [--jobs N]           # grade every imported submission in the sandbox
    python -m grader grade LAB SOURCE                   # all of it: import, autograde, feedback, CSV, report
    python -m grader report LAB / export LAB            # print the per-student report / write the CSV again

Everything lives in a grading folder (``--dir``, default ``grading/`` in the course root)::

    grading/submitted/<student>/<lab>/<lab>.ipynb     the cleaned submission (+ .origin.json: file, sha256)
    grading/results/<lab>/<student>.json              per-cell scores and messages (the source of truth)
    grading/autograded/<student>/<lab>/<lab>.ipynb    nbgrader's executed notebook
    grading/feedback/<student>/<lab>/<lab>.html       feedback for the student, hidden tests removed
    grading/<lab>_grades.csv, grading/<lab>_report.txt

How one submission is graded (one job per student, ``--jobs`` of them at a time, each in its own folder):

1. *Preflight* (in the grader, nothing executed): decode (UTF-8, else reported), parse the JSON, strip all
   outputs, find the lab's cells by grade_id; report renamed/extra files, missing, duplicated and edited cells.
2. *nbgrader autograde* in a private course root (a copy of the lab's template gradebook, so jobs never share a
   database); the kernel is a kernelspec whose argv runs ipykernel inside :mod:`grader.sandbox`, talking over
   IPC sockets (the sandbox has no network). Locked cells are restored from the gradebook; deleted test cells
   are re-added (``OverwriteCells.add_missing_cells``).
3. *Verification in a fresh sandboxed process*: the instructor's locked cells and the student's own cells run
   again, outside IPython; for every test cell of the form ``lab.problems["f"].check(f[, hidden=True])`` the
   process only *calls* the student's function on the cases and returns the results as plain data (JSON, no
   pickle). The grader computes the expected answers with the reference and compares them **in its own
   process**. It also reports any change the student's code made to the check functions, NumPy, JAX or the
   lab module (monkeypatching).
4. *Verdict, fail closed*: a test cell scores nbgrader's points only if the out-of-process check passed too.
   A cell that could not be verified (not of that form) keeps nbgrader's score and is marked "kernel-only".
   If nbgrader could not finish (kernel died, timeout, out of memory), cells verified before the failure keep
   their points and the rest score 0 with the reason.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import importlib
import io
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
import unicodedata
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

from . import course
from .sandbox import Limits, Sandbox, warn_if_weak

GRADER_VERSION = "3"  # part of every result's cache key: bump when grading logic changes
MAX_NOTEBOOK_BYTES = 100 << 20     # larger submissions are refused (after outputs are stripped: 2 MB of source)
MAX_SOURCE_BYTES = 2 << 20
MAX_ZIP_BYTES = 500 << 20          # total uncompressed size accepted from one zip export
CHECK_LINE = re.compile(r"""^(\w+)\.problems\[(["'])(\w+)\2\]\.check\((\w+)(\s*,\s*hidden\s*=\s*(True|False))?\s*\)$""")
HIDDEN_MARKERS = re.compile(r"^\s*### (BEGIN|END) HIDDEN TESTS\s*$")
LAB_IMPORT = re.compile(r"^\s*from\s+grader\.labs\s+import\s+(\w+)\s+as\s+(\w+)\s*$", re.M)
ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "int4", "uint4")
SUSPICIOUS = re.compile(r"\.reference\b|grader\.labs|grader\.checks|grader\.problem|\bproblems\[")


def _src(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else (source or "")


def _meta(cell: dict) -> dict:
    return (cell.get("metadata") or {}).get("nbgrader") or {}


# ------------------------------------------------------------------------------------------------------------
# The grading folder and the lab
# ------------------------------------------------------------------------------------------------------------

def prepare_process(lab: "Lab") -> None:
    """Call first in a grading command. A lab whose setup cell gives JAX several CPU devices (lab 7's mesh:
    ``--xla_force_host_platform_device_count=8``) needs them in the grader too, which computes the reference
    answers in its own process; JAX reads XLA_FLAGS once, when it is imported, so this must run before that."""
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)", lab.source_path.read_text(encoding="utf-8"))
    if m and "jax" not in sys.modules and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + m.group(0)).strip()


@dataclass
class Settings:
    jobs: int = max(1, os.cpu_count() or 1)
    cell_timeout: int = 60        # seconds per cell (nbgrader's Execute.timeout)
    limits: Limits = field(default_factory=Limits)
    force: bool = False

    def key(self) -> str:
        return f"v{GRADER_VERSION}/cell{self.cell_timeout}/{self.limits}"


@dataclass
class Lab:
    name: str
    source_path: Path

    @classmethod
    def find(cls, name: str) -> "Lab":
        if name not in course.labs():
            raise SystemExit(f"no such lab in solutions/: {name} (labs: {', '.join(course.labs())})")
        nbs = sorted((course.ROOT / "solutions" / name).glob("*.ipynb"))
        if len(nbs) != 1:
            raise SystemExit(f"{name}: expected one notebook in solutions/{name}, found {len(nbs)}")
        return cls(name, nbs[0])

    @property
    def notebook(self) -> str:
        return self.source_path.stem

    def source(self) -> dict:
        return json.loads(self.source_path.read_text(encoding="utf-8"))

    def digest(self) -> str:
        return hashlib.sha256(self.source_path.read_bytes()).hexdigest()[:16]

    def cells(self) -> dict[str, dict]:
        return {_meta(c)["grade_id"]: c for c in self.source()["cells"] if _meta(c).get("grade_id")}


class Workspace:
    def __init__(self, root: Path | None = None):
        self.root = Path(root or course.ROOT / "grading").resolve()

    def submitted(self, student: str, lab: Lab) -> Path:
        return self.root / "submitted" / student / lab.name / f"{lab.notebook}.ipynb"

    def result(self, student: str, lab: Lab) -> Path:
        return self.root / "results" / lab.name / f"{student}.json"

    def students(self, lab: Lab) -> list[str]:
        base = self.root / "submitted"
        return sorted(p.name for p in base.iterdir() if (p / lab.name).is_dir()) if base.exists() else []


# ------------------------------------------------------------------------------------------------------------
# Import: a folder or a zip export, one notebook (or one folder) per student
# ------------------------------------------------------------------------------------------------------------

def student_id(name: str) -> str:
    """A file-system-safe, stable id for a student from a file or folder name (Korean names are kept)."""
    stem = unicodedata.normalize("NFC", name)
    stem = re.sub(r"\.(ipynb|json|zip)$", "", stem, flags=re.I)
    clean = re.sub(r"[^\w.-]+", "_", stem, flags=re.U).strip("._-")[:80]
    return clean or "student_" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _skip(parts: tuple[str, ...]) -> bool:
    return any(p.startswith(".") or p in ("__MACOSX", "__pycache__", ".ipynb_checkpoints") for p in parts)


def _collect(entries: dict[tuple[str, ...], bytes]) -> dict[str, dict[tuple[str, ...], bytes]]:
    """Group files by student: the first path component (a folder, or a file's stem) names the student.
    A single top-level folder (a zip's wrapper) is descended into."""
    entries = {k: v for k, v in entries.items() if k and not _skip(k)}
    while entries and len({k[0] for k in entries}) == 1 and all(len(k) > 1 for k in entries):
        entries = {k[1:]: v for k, v in entries.items()}
    groups: dict[str, dict[tuple[str, ...], bytes]] = {}
    for parts, data in sorted(entries.items()):
        owner = parts[0] if len(parts) > 1 else parts[0]
        groups.setdefault(owner, {})[parts] = data
    return groups


def _read_source(source: Path) -> dict[tuple[str, ...], bytes]:
    if source.is_file() and zipfile.is_zipfile(source):
        out, total = {}, 0
        with zipfile.ZipFile(source) as zf:
            for info in zf.infolist():
                if info.is_dir() or (info.external_attr >> 16) & 0o170000 == 0o120000:  # folders, symlinks
                    continue
                parts = tuple(p for p in info.filename.replace("\\", "/").split("/") if p not in ("", ".", ".."))
                total += info.file_size
                if total > MAX_ZIP_BYTES:
                    raise SystemExit(f"{source}: more than {MAX_ZIP_BYTES >> 20} MB uncompressed: refusing (zip bomb?)")
                with zf.open(info) as fh:
                    out[parts] = fh.read(MAX_NOTEBOOK_BYTES + 1)
        return out
    if source.is_dir():
        return {p.relative_to(source).parts: p.read_bytes()[: MAX_NOTEBOOK_BYTES + 1]
                for p in sorted(source.rglob("*")) if p.is_file() and not p.is_symlink()}
    if source.is_file():
        return {(source.name,): source.read_bytes()[: MAX_NOTEBOOK_BYTES + 1]}
    raise SystemExit(f"{source}: no such folder or zip file")


def import_submissions(lab: Lab, source: Path, ws: Workspace) -> list[dict]:
    """Copy each student's notebook into grading/submitted/<student>/<lab>/ (raw bytes; preflight cleans them
    at grading time). Re-importing the same export changes nothing; a changed file replaces the old one."""
    groups = _collect(_read_source(Path(source)))
    records, seen = [], {}
    for owner, files in groups.items():
        sid = student_id(owner)
        if sid in seen and seen[sid] != owner:  # two names that clean to the same id
            sid = f"{sid}_{hashlib.sha256(owner.encode()).hexdigest()[:6]}"
        seen[sid] = owner
        notebooks = {k: v for k, v in files.items() if k[-1].lower().endswith(".ipynb")}
        issues = []
        if len(notebooks) > 1:  # prefer the expected name, else the largest
            named = {k: v for k, v in notebooks.items() if k[-1] == f"{lab.notebook}.ipynb"}
            pick = sorted(named or notebooks, key=lambda k: (-len(notebooks[k]), k))[0]
            issues.append(f"several notebooks ({', '.join('/'.join(k) for k in sorted(notebooks))}): graded "
                          f"{'/'.join(pick)}")
        elif notebooks:
            pick = next(iter(notebooks))
        else:  # no .ipynb: a single file is taken as the notebook (renamed .json/.txt), else nothing
            pick = next(iter(files)) if len(files) == 1 else None
        if pick is not None and len(pick) > 1 and pick[-1] != f"{lab.notebook}.ipynb":
            # (a top-level file is named after its student: that is how one-file-per-student exports look)
            issues.append(f"notebook was named {'/'.join(pick)!r} (expected {lab.notebook}.ipynb): graded anyway")
        extra = sorted('/'.join(k) for k in files if k != pick)
        if extra:
            issues.append(f"ignored extra files: {', '.join(extra[:10])}{' …' if len(extra) > 10 else ''}")
        data = files[pick] if pick is not None else b""
        dest = ws.submitted(sid, lab)
        dest.parent.mkdir(parents=True, exist_ok=True)
        origin = {"original": owner, "file": "/".join(pick) if pick else None,
                  "sha256": hashlib.sha256(data).hexdigest(), "import_issues": issues}
        if not dest.exists() or dest.read_bytes() != data:
            dest.write_bytes(data)
        (dest.parent / ".origin.json").write_text(json.dumps(origin, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        records.append({"student": sid, **origin})
    return records


# ------------------------------------------------------------------------------------------------------------
# Preflight: bad input is reported, never fatal for the class
# ------------------------------------------------------------------------------------------------------------

def decode_notebook(data: bytes) -> tuple[str, list[str]]:
    issues = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), ["notebook is UTF-16 encoded (read anyway; save as UTF-8)"]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("cp1252", errors="replace")
        issues.append(f"notebook is not UTF-8 (first bad byte at offset {exc.start}): read as Windows-1252")
    return text, issues


def preflight(data: bytes, lab: Lab, released: dict) -> tuple[dict | None, list[str]]:
    """The submission as a clean notebook to grade (or None with the reason) and the problems found.
    ``released`` is the student version of the lab (what locked cells must still say)."""
    if not data.strip():
        return None, ["empty submission: no notebook, or an empty file"]
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, [f"notebook larger than {MAX_NOTEBOOK_BYTES >> 20} MB: not graded"]
    text, issues = decode_notebook(data)
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, issues + [f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})"]
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, issues + ["not a notebook: no list of cells"]
    cells = [c for c in nb["cells"] if isinstance(c, dict) and c.get("cell_type") in ("code", "markdown", "raw")]
    if len(cells) != len(nb["cells"]):
        issues.append(f"dropped {len(nb['cells']) - len(cells)} malformed cell(s)")
    source = {_meta(c)["grade_id"]: c for c in released["cells"] if _meta(c).get("grade_id")}
    seen: set[str] = set()
    huge = 0
    for cell in cells:
        huge += len(json.dumps(cell.get("outputs", [])))
        cell["source"] = _src(cell.get("source"))
        cell.setdefault("metadata", {})
        if not isinstance(cell["metadata"], dict):
            cell["metadata"] = {}
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        else:
            cell.pop("outputs", None), cell.pop("execution_count", None)
        gid = _meta(cell).get("grade_id")
        if gid is None:
            continue
        if gid in seen or gid not in source:  # duplicated or foreign: keep the code, drop the grading metadata
            issues.append(f"cell {gid!r} is {'duplicated' if gid in seen else 'not part of this lab'}: "
                          "graded as an ordinary cell")
            cell["metadata"].pop("nbgrader", None)
            continue
        seen.add(gid)
        want = source[gid]
        if _meta(want).get("locked") and cell["source"].strip() != _src(want["source"]).strip():
            issues.append(f"locked cell {gid!r} was edited: restored from the lab")
        cell["metadata"]["nbgrader"] = dict(_meta(want))  # the lab's metadata, not the student's
        cell["cell_type"] = want["cell_type"]
    if huge > 1 << 20:
        issues.append(f"the notebook carried {huge >> 20} MB of outputs: removed before grading")
    missing = [g for g, c in source.items() if g not in seen]
    lost_solutions = [g for g in missing if _meta(source[g]).get("solution")]
    if lost_solutions:
        issues.append(f"missing answer cells (deleted?): {', '.join(lost_solutions)}")
    if [g for g in missing if g not in lost_solutions]:
        issues.append(f"missing locked cells re-added from the lab: "
                      f"{', '.join(g for g in missing if g not in lost_solutions)}")
    if sum(len(c["source"]) for c in cells) > MAX_SOURCE_BYTES:
        return None, issues + [f"more than {MAX_SOURCE_BYTES >> 20} MB of code and text: not graded"]
    if not any(_meta(c).get("solution") for c in cells) and not any(
            c["cell_type"] == "code" and not _meta(c) for c in cells):
        return None, issues + ["empty submission: none of the lab's answer cells is present"]
    clean = {"cells": cells, "metadata": lab.source().get("metadata", {}), "nbformat": 4,
             "nbformat_minor": max(5, int(nb.get("nbformat_minor", 5)) if str(nb.get("nbformat_minor", 5)).isdigit() else 5)}
    for i, cell in enumerate(cells):
        cell["id"] = _meta(cell).get("grade_id") or f"student-{i:03d}"
    return clean, issues


# ------------------------------------------------------------------------------------------------------------
# The lab's template course root: generated assignment + gradebook, copied into each job
# ------------------------------------------------------------------------------------------------------------

def template(lab: Lab, ws: Workspace) -> Path:
    """grading/.template/<lab>/: nbgrader course root with the lab generated into its own gradebook."""
    root = ws.root / ".template" / lab.name
    stamp = root / "stamp"
    key = lab.digest() + GRADER_VERSION
    if stamp.exists() and stamp.read_text() == key:
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "source" / lab.name).mkdir(parents=True)
    shutil.copy2(lab.source_path, root / "source" / lab.name / lab.source_path.name)
    _write_config(root, extra="")
    course.nbgrader("generate_assignment", lab.name, "--force", cwd=root, config_dir=root)
    stamp.write_text(key)
    return root


def _write_config(root: Path, extra: str) -> None:
    config = (course.CONFIG_DIR / "nbgrader_config.py").read_text(encoding="utf-8")
    config += (
        "\n# --- grading job (written by grader.grade) ---\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.source_directory = 'source'\n"
        "c.CourseDirectory.release_directory = 'release'\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / 'gradebook.db'}'\n"
        "c.OverwriteCells.add_missing_cells = True\n"
        "c.LimitOutput.max_lines = 200\n"
        "c.LimitOutput.max_traceback = 40\n" + extra
    )
    (root / "nbgrader_config.py").write_text(config, encoding="utf-8")


# ------------------------------------------------------------------------------------------------------------
# The out-of-process check: plan (grader), worker (sandbox), verdict (grader)
# ------------------------------------------------------------------------------------------------------------

@dataclass
class Check:
    test_id: str
    problem: str
    fn: str
    hidden: bool


def parse_checks(lab: Lab) -> tuple[str | None, str | None, dict[str, list[Check]]]:
    """(lab module, its alias, test cell id -> its checks) for test cells that are only `alias.problems[..].check(..)`."""
    src = lab.source()
    module = alias = None
    for cell in src["cells"]:
        m = LAB_IMPORT.search(_src(cell["source"])) if _meta(cell).get("locked") else None
        if m:
            module, alias = m.group(1), m.group(2)
    out: dict[str, list[Check]] = {}
    for cell in src["cells"]:
        meta = _meta(cell)
        if not meta.get("grade") or cell["cell_type"] != "code" or not alias:
            continue
        lines = [ln.strip() for ln in _src(cell["source"]).splitlines()
                 if ln.strip() and not HIDDEN_MARKERS.match(ln) and not ln.strip().startswith("#")]
        checks = []
        for ln in lines:
            m = CHECK_LINE.match(ln)
            if not m or m.group(1) != alias:
                checks = []
                break
            checks.append(Check(meta["grade_id"], m.group(3), m.group(4), m.group(6) == "True"))
        if checks:
            out[meta["grade_id"]] = checks
    return (f"grader.labs.{module}" if module else None), alias, out


def plan(lab: Lab, nb: dict) -> tuple[list[dict], dict[int, tuple[Check, Any, Any]]]:
    """Steps for the worker, and for each call step the (check, case, expected answer) kept in the grader."""
    module_name, _, checks = parse_checks(lab)
    module = importlib.import_module(module_name) if module_name else None
    source = lab.cells()
    steps: list[dict] = []
    expected: dict[int, tuple[Check, Any, Any]] = {}
    order = [c for c in nb["cells"] if c["cell_type"] == "code"]
    present = {_meta(c).get("grade_id") for c in order}
    # test cells the student deleted are re-added by nbgrader at their place; append them at the end here
    order += [c for g, c in source.items() if g not in present and c["cell_type"] == "code" and _meta(c).get("grade")]
    for cell in order:
        meta = _meta(cell)
        gid = meta.get("grade_id")
        if gid in checks and all(type(module.problems[c.problem]).check is _problem_check() for c in checks[gid]):
            for chk in checks[gid]:
                problem = module.problems[chk.problem]
                cases = problem.hidden_cases() if chk.hidden else problem.visible
                for k, case in enumerate(cases):
                    expected[len(steps)] = (chk, case, problem.reference(*case.args, **case.kwargs))
                    # the worker rebuilds the case itself (cases are deterministic: seeded by the problem's name),
                    # so arguments never need to be pickled (they may be functions, modules, arrays...)
                    steps.append({"kind": "call", "test": gid, "fn": chk.fn, "problem": chk.problem,
                                  "hidden": chk.hidden, "index": k})
                if problem.after:
                    steps.append({"kind": "after", "test": gid, "problem": chk.problem, "fn": chk.fn,
                                  "hidden": chk.hidden})
            steps.append({"kind": "end", "test": gid})
        elif meta.get("grade") and not meta.get("solution"):
            continue  # a test cell the grader cannot re-check: nbgrader's kernel result stands ("kernel-only")
        else:
            trusted = bool(meta.get("locked")) and gid in source
            code = _src(source[gid]["source"]) if trusted else _src(cell["source"])
            steps.append({"kind": "exec", "cell": gid or "(student cell)", "source": code, "student": not trusted})
    return steps, expected


def _problem_check():
    """``Problem.check``: a lab whose problem overrides it (e.g. launching a CUDA kernel on a simulator) judges
    in its own way, which the out-of-process check cannot replay: its test cells stay "kernel-only"."""
    from .problem import Problem

    return Problem.check


class Unsupported:
    """A value the worker could not turn into plain data (a custom object): never equal to an answer."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object (not a plain number, string, tuple, list or array)>"


def encode(x: Any, depth: int = 0) -> Any:
    """Plain JSON for a result (runs in the worker): numbers, strings, tuples, lists, dicts, numeric arrays."""
    import numpy as np

    if depth > 20:
        return {"__unsupported__": "deeply nested"}
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, np.generic):
        x = x.item()
        if isinstance(x, (bool, int, float, str)):
            return encode(x, depth + 1)
    if isinstance(x, int):
        return int.__int__(x)
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, str):
        return str.__str__(x)[:100_000]
    if isinstance(x, tuple):
        return {"__tuple__": [encode(v, depth + 1) for v in x[:10_000]]}
    if isinstance(x, list):
        return [encode(v, depth + 1) for v in x[:10_000]]
    if isinstance(x, dict):
        return {"__map__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in list(x.items())[:10_000]]}
    if isinstance(x, (set, frozenset)):
        return {"__set__": [encode(v, depth + 1) for v in list(x)[:10_000]], "frozen": isinstance(x, frozenset)}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        cls = type(x)
        return {"__dc__": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(x, f.name, None), depth + 1) for f in dataclasses.fields(x)}}
    if hasattr(x, "__array__") or hasattr(x, "get") and type(x).__module__.split(".")[0] == "cupy":
        try:
            a = np.asarray(x.get() if type(x).__module__.split(".")[0] == "cupy" else x)
        except Exception:
            return {"__unsupported__": type(x).__name__}
        a = np.array(a, copy=True).view(np.ndarray)
        if a.size > 20_000_000:
            return {"__unsupported__": f"array of {a.size} elements"}
        if a.dtype.kind == "V" and a.dtype.name in ML_DTYPES:  # bfloat16 & co. (JAX's ml_dtypes)
            return {"__nd__": "ml:" + a.dtype.name, "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}
        if a.dtype.kind not in "biufc":
            return {"__unsupported__": f"array of dtype {a.dtype}"}
        return {"__nd__": a.dtype.str, "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}
    return {"__unsupported__": type(x).__name__, "course": type(x).__module__.split(".")[0] in ("gpucourse", "grader")}


def decode(x: Any) -> Any:
    """Inverse of :func:`encode`, in the grader: only data comes back, never code."""
    import numpy as np

    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if "__tuple__" in x:
            return tuple(decode(v) for v in x["__tuple__"])
        if "__map__" in x:
            try:
                return {decode(k): decode(v) for k, v in x["__map__"]}
            except TypeError:  # an unhashable key
                return Unsupported("dict")
        if "__set__" in x:
            try:
                return (frozenset if x.get("frozen") else set)(decode(v) for v in x["__set__"])
            except TypeError:
                return Unsupported("set")
        if "__dc__" in x:
            return _dataclass(x["__dc__"], {k: decode(v) for k, v in x["fields"].items()})
        if "__nd__" in x and str(x["__nd__"]).startswith("ml:"):
            name = x["__nd__"][3:]
            if name not in ML_DTYPES:
                return Unsupported(f"array of dtype {name}")
            import ml_dtypes

            dt = np.dtype(getattr(ml_dtypes, name))
            return np.frombuffer(base64.b64decode(x["data"]), dtype=dt).reshape(x["shape"]).copy()
        if "__nd__" in x:
            dt = np.dtype(x["__nd__"])
            if dt.kind not in "biufc":
                return Unsupported(f"array of dtype {dt}")
            return np.frombuffer(base64.b64decode(x["data"]), dtype=dt).reshape(x["shape"]).copy()
        return Unsupported(str(x.get("__unsupported__", "dict")))
    return x


def _dataclass(name: str, fields: dict[str, Any]) -> Any:
    """Rebuild a dataclass of the course's own packages (gpucourse, grader) from plain data; anything else is
    Unsupported. ``__init__`` is bypassed (frozen classes, init=False fields): only the field values matter."""
    module, _, qualname = name.partition(":")
    if module.split(".")[0] not in ("gpucourse", "grader"):
        return Unsupported(qualname or name)
    try:
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            return Unsupported(qualname)
        obj = cls.__new__(cls)
        for k, v in fields.items():
            object.__setattr__(obj, k, v)
        return obj
    except Exception:  # noqa: BLE001 - a class that cannot be rebuilt is an unsupported answer
        return Unsupported(qualname)


def _has_unsupported(x: Any) -> bool:
    """Whether an encoded value holds something :func:`encode` could not turn into data."""
    if isinstance(x, list):
        return any(_has_unsupported(v) for v in x)
    if isinstance(x, dict):
        return "__unsupported__" in x or any(_has_unsupported(v) for v in x.values())
    return False


def _has_course_object(x: Any) -> bool:
    """Whether an encoded answer holds an object of the course's own classes that is not plain data (e.g. the
    simulator the student clocked): the lab's comparison may inspect it, so only the kernel can judge it."""
    if isinstance(x, list):
        return any(_has_course_object(v) for v in x)
    if isinstance(x, dict):
        return bool(x.get("course")) or any(_has_course_object(v) for v in x.values())
    return False


def _snapshot(modules: list[Any]) -> dict[str, int]:
    """ids of the public attributes of the modules checks rely on (and of each Problem's fields)."""
    snap = {}
    for mod in modules:
        for name in dir(mod):
            if not name.startswith("__"):
                snap[f"{mod.__name__}.{name}"] = id(getattr(mod, name, None))
    return snap


def worker(job_path: str, out_path: str) -> int:
    """Runs INSIDE the sandbox: execute the cells, call the student's functions, write results as JSON lines."""
    import builtins
    import math

    import numpy as np

    with open(job_path, "rb") as fh:
        job = pickle.load(fh)
    out = open(out_path, "w", encoding="utf-8", buffering=1)
    sys.stdout = sys.stderr = io.StringIO()  # what the student prints does not matter here

    def emit(**rec: Any) -> None:
        out.write(json.dumps(rec, allow_nan=True) + "\n")

    class _Shell:  # IPython magics become calls on get_ipython(): make them no-ops
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: None

    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    ns: dict[str, Any] = {"__name__": "__main__", "get_ipython": lambda: _Shell()}
    watched: list[Any] = []
    baseline: dict[str, int] = {}

    def alarm(*_: Any) -> None:
        raise TimeoutError(f"took longer than {job['step_timeout']} s")

    # every case the checks will use, built when the first student cell is about to run: after the locked setup
    # cells (they may configure JAX before it is imported) and before any student code
    cases: dict[tuple[str, bool], list[Any]] = {}
    problem_of: dict[str, Any] = {}  # the Problem objects as the lab made them, before any student code ran

    def build_cases() -> None:
        if cases or not job["lab_module"]:
            return
        lab_problems = importlib.import_module(job["lab_module"]).problems
        for st in job["steps"]:
            key = (st.get("problem"), bool(st.get("hidden")))
            if st["kind"] == "call" and key not in cases:
                p = lab_problems[key[0]]
                cases[key] = list(p.hidden_cases() if key[1] else p.visible)
                problem_of[key[0]] = p
                p.answer_sites()  # where the answers live, found now: the lock swaps them while fn runs

    signal.signal(signal.SIGALRM, alarm)
    # a watchdog thread for code that swallows the alarm's TimeoutError (``except BaseException`` in a loop):
    # 3 s after a step's deadline it ends the process; the grader reports the steps not reached
    deadline = [time.monotonic() + job["step_timeout"]]

    def watchdog() -> None:
        while True:
            time.sleep(0.5)
            if time.monotonic() > deadline[0] + 3:
                out.write(json.dumps({"stuck": True}) + "\n")
                out.flush()
                os._exit(3)

    import threading

    threading.Thread(target=watchdog, daemon=True).start()
    for i, step in enumerate(job["steps"]):
        deadline[0] = time.monotonic() + job["step_timeout"]
        signal.alarm(job["step_timeout"])
        try:
            if step["kind"] == "exec":
                if step["student"] and not watched:  # first student code: snapshot what checks rely on
                    from grader import checks, problem

                    build_cases()
                    watched = [builtins, math, np, np.linalg, np.random, checks, problem, problem.Problem]
                    watched += [sys.modules[m] for m in (job["lab_module"], "jax", "jax.numpy", "gpucourse")
                                if m and m in sys.modules]
                    baseline = _snapshot(watched)
                    lab_module = sys.modules.get(job["lab_module"] or "")
                    for name, p in getattr(lab_module, "problems", {}).items():
                        baseline.update({f"problems[{name!r}].{k}": id(v) for k, v in vars(p).items()})
                try:
                    exec(compile(transform(step["source"]), f"<cell {step['cell']}>", "exec"), ns)
                    emit(step=i, ok=True)
                except BaseException as exc:  # noqa: BLE001 - the student's cell failed; keep going like a kernel
                    emit(step=i, ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
                if watched:
                    now = _snapshot(watched)
                    lab_module = sys.modules.get(job["lab_module"] or "")
                    for name, p in getattr(lab_module, "problems", {}).items():
                        now.update({f"problems[{name!r}].{k}": id(v) for k, v in vars(p).items()})
                    changed = sorted(k for k in baseline if now.get(k) != baseline[k])
                    if changed:
                        emit(step=i, tampered=changed[:20])
                        baseline = now
            elif step["kind"] == "call":
                fn = ns.get(step["fn"])
                if fn is None:
                    emit(step=i, ok=False, error=f"NameError: name {step['fn']!r} is not defined")
                elif not callable(fn):
                    emit(step=i, ok=False, error=f"{step['fn']} is not a function")
                else:
                    build_cases()  # (no student cell ran before: nothing could have changed the lab yet)
                    case = cases[(step["problem"], bool(step["hidden"]))][step["index"]]
                    value = encode(problem_of[step["problem"]].call(fn, case))  # answers locked while fn runs
                    emit(step=i, ok=True, value=value)
            elif step["kind"] == "after":
                problem_obj = sys.modules[job["lab_module"]].problems[step["problem"]]
                fn = ns.get(step["fn"])
                msg = problem_obj.after(fn, step["hidden"]) if callable(fn) else ""
                emit(step=i, ok=callable(fn), value=str(msg)[:500])
            else:
                emit(step=i, ok=True)
        except BaseException as exc:  # noqa: BLE001
            emit(step=i, ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
        finally:
            signal.alarm(0)
    emit(done=True)
    out.flush()
    os._exit(0)  # skip interpreter teardown (student objects' __del__ cannot change anything now)


def verdicts(steps: list[dict], expected: dict, lines: list[str], problems: dict) -> tuple[dict[str, dict], list[str], str | None]:
    """Per test cell {"ok", "message"} from the worker's results, judged here; tamper reports; the stop reason."""
    from .checks import CheckFailure

    records: dict[int, dict] = {}
    tamper: list[str] = []
    done = stuck = False
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            break
        if rec.get("done"):
            done = True
        elif rec.get("stuck"):
            stuck = True
        elif "tampered" in rec:
            step = steps[rec["step"]]
            tamper.append(f"code in {step.get('cell')} replaced {', '.join(rec['tampered'])}")
            records.setdefault(rec["step"], {})["tampered"] = True
        elif isinstance(rec.get("step"), int):
            records.setdefault(rec["step"], {}).update(rec)
    out: dict[str, dict] = {}
    tainted = False
    failed_cells: list[str] = []  # answer cells that raised since the last test cell: the likely cause
    last = max(records) if records else -1
    for i, step in enumerate(steps):
        rec = records.get(i)
        if step["kind"] == "exec" and rec and rec.get("tampered"):
            tainted = True
        if step["kind"] == "exec" and step.get("student") and rec and rec.get("ok") is False:
            failed_cells.append(f"cell {step['cell']} raised {rec.get('error')}"[:300])
        if step["kind"] == "end":
            failed_cells = []
        if step["kind"] not in ("call", "after", "end"):
            continue
        cell = out.setdefault(step["test"], {"ok": True, "message": ""})
        if not cell["ok"]:
            continue
        if rec is None:
            cell.update(ok=False, message="not reached: the grading process stopped before this test "
                                          f"({'killed' if not done else 'no result'})")
            continue
        if tainted:
            cell.update(ok=False, message="not trusted: earlier code replaced check functions or NumPy/JAX "
                                          f"({'; '.join(tamper)})")
            continue
        if step["kind"] == "call":
            chk, case, want = expected[i]
            what = case.call_text(chk.fn)
            if _has_unsupported(encode(want)):  # the answer itself is not plain data: nbgrader's verdict stands
                cell["unverifiable"] = True
                continue
            if not rec.get("ok"):
                cause = f" (earlier, {failed_cells[-1]})" if failed_cells else ""
                cell.update(ok=False, message=f"{what} raised {rec.get('error')}{cause}")
                continue
            try:
                problems[chk.problem].compare(what, decode(rec.get("value")), want, case)
            except Exception as exc:  # a comparison that chokes on a strange answer is a wrong answer
                message = str(exc) if isinstance(exc, CheckFailure) else \
                    f"{what}: could not compare the answer ({type(exc).__name__}: {exc})"
                opaque = _has_unsupported(encode((case.args, case.kwargs))) or _has_course_object(rec.get("value"))
                if opaque and not tainted:
                    # the case passes objects (a device model, a callback), or the answer holds one of the course's
                    # objects, whose state the comparison may read: that state stayed in the sandbox, so nbgrader's
                    # verdict decides this cell
                    cell["unverifiable"] = True
                else:
                    cell.update(ok=False, message=message)
        elif step["kind"] == "after" and not rec.get("ok"):
            cell.update(ok=False, message=str(rec.get("error") or "the extra check failed"))
    for test, cell in list(out.items()):
        if cell.pop("unverifiable", False) and cell["ok"]:
            del out[test]  # "kernel-only"
    stop = None if done else (f"the check process stopped after step {last + 1} of {len(steps)}"
                              + (": a cell ran past its time limit and ignored the timeout" if stuck else ""))
    return out, tamper, stop


# ------------------------------------------------------------------------------------------------------------
# One job: a student's submission, graded end to end in its own folder
# ------------------------------------------------------------------------------------------------------------

KERNEL_NAME = "grade-sandbox"


def _kernel_manager_class():
    """An AsyncKernelManager that talks to the kernel over IPC sockets in the job's runtime folder (the sandbox
    has no network, so TCP cannot connect). nbgrader names it through ``Execute.kernel_manager_class``."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class SandboxKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_default(self) -> str:
            return os.path.join(os.environ["GRADER_RUNTIME_DIR"], "kernel")

        @default("connection_file")
        def _connection_file_default(self) -> str:
            return os.path.join(os.environ["GRADER_RUNTIME_DIR"], "kernel-connection.json")

        async def _async_interrupt_kernel(self) -> None:
            # nbclient interrupts a cell at its timeout. Code that ignores SIGINT keeps the kernel busy, and every
            # later cell times out in turn (cell timeout x cells). So the second timeout in a notebook kills the
            # kernel: nbgrader stops at once (DeadKernelError) and the out-of-process check grades what it can.
            _CELL_INTERRUPTS[0] += 1
            if _CELL_INTERRUPTS[0] >= 2:
                Path(os.environ["GRADER_JOB_DIR"]).joinpath("interrupt-ignored").write_text(str(_CELL_INTERRUPTS[1]))
                await self._async_kill_kernel()
                return
            await super()._async_interrupt_kernel()

        interrupt_kernel = _async_interrupt_kernel

        def write_connection_file(self, **kwargs: Any) -> None:
            super().write_connection_file(**kwargs)
            uid = os.environ.get("GRADER_SANDBOX_UID")
            if uid:  # the kernel runs as the sandbox user: it must read its (0600) connection file
                os.chown(self.connection_file, int(uid), int(uid))

    return SandboxKernelManager


_CELL_INTERRUPTS = [0, -1]  # interrupts sent in this notebook, the running cell's index (one notebook per process)


def cell_started(cell: Any = None, cell_index: int = -1, **_: Any) -> None:
    """nbclient's ``on_cell_start`` hook (set in the job's nbgrader config): remember which cell runs."""
    _CELL_INTERRUPTS[1] = cell_index


def __getattr__(name: str):  # lazy: importing grader.grade must not import jupyter_client
    if name == "SandboxKernelManager":
        return _kernel_manager_class()
    raise AttributeError(name)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, log: Path, memory: int | None = None):
    """Run a trusted helper process with a wall-clock limit; its output goes to a file, never to our memory."""
    # no preexec_fn: the grader may hold JAX's threads (lab modules import it), and forking a threaded process
    # to run Python code is unsafe; a new session (setsid) and prlimit do the same without it
    if memory:
        cmd = ["/usr/bin/prlimit", f"--as={memory}", "--", *cmd]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
            return rc, False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return -9, True


def _tail(path: Path, n: int = 4000) -> str:
    if not path.exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - n))
        return fh.read().decode("utf-8", "replace")


def grade_submission(lab: Lab, ws: Workspace, student: str, settings: Settings, slot: int) -> dict:
    data = ws.submitted(student, lab).read_bytes() if ws.submitted(student, lab).exists() else b""
    origin_path = ws.submitted(student, lab).parent / ".origin.json"
    origin = json.loads(origin_path.read_text(encoding="utf-8")) if origin_path.exists() else {}
    source = lab.source()
    tests = {_meta(c)["grade_id"]: float(_meta(c).get("points", 0)) for c in source["cells"] if _meta(c).get("grade")}
    result: dict[str, Any] = {
        "student": student, "lab": lab.name, "original": origin.get("original", student),
        "key": hashlib.sha256(data + lab.digest().encode() + settings.key().encode()).hexdigest()[:24],
        "max_score": sum(tests.values()), "score": 0.0, "status": "graded",
        "issues": list(origin.get("import_issues", [])), "cells": {},
    }
    tpl = template(lab, ws)
    released = json.loads((tpl / "release" / lab.name / lab.source_path.name).read_text(encoding="utf-8"))
    nb, issues = preflight(data, lab, released)
    result["issues"] += issues
    if nb is None:
        result["status"] = "not graded"
        result["cells"] = {t: {"points": p, "score": 0.0, "message": "not graded (see issues)", "checked": "-"}
                           for t, p in tests.items()}
        _publish(lab, ws, student, result, None, source)
        return result
    flagged = [_meta(c).get("grade_id") for c in nb["cells"] if _meta(c).get("solution")
               and SUSPICIOUS.search(_src(c["source"]))]
    if flagged:
        result["issues"].append(f"REVIEW: answer cells use the grader's own objects: {', '.join(flagged)}")

    job = ws.root / "jobs" / lab.name / student
    shutil.rmtree(job, ignore_errors=True)
    (job / "source" / lab.name).mkdir(parents=True)
    shutil.copy2(tpl / "gradebook.db", job / "gradebook.db")
    shutil.copy2(lab.source_path, job / "source" / lab.name / lab.source_path.name)
    sub_dir = job / "submitted" / student / lab.name
    sub_dir.mkdir(parents=True)
    (sub_dir / f"{lab.notebook}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
    home, runtime = job / "home", job / "runtime"
    if len(str(runtime)) > 60:  # AF_UNIX socket paths stop at 107 bytes: keep the kernel's IPC sockets short
        import tempfile

        runtime = Path(tempfile.mkdtemp(prefix="grader-ipc-", dir="/tmp"))
    sandbox = Sandbox(settings.limits, slot=slot)
    sandbox.prepare(home, runtime)
    cwd = job / "autograded" / student / lab.name
    python = str(Path(sys.executable).parent / "python")
    kernel = job / "share" / "kernels" / KERNEL_NAME
    kernel.mkdir(parents=True)
    argv = sandbox.wrap([python, "-m", "ipykernel_launcher", "-f", "{connection_file}"], [home, runtime, cwd], cwd,
                        env={"NBGRADER_EXECUTION": "autograde"})
    (kernel / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "sandbox", "language": "python",
                                                         "interrupt_mode": "message"}))
    _write_config(job, extra=(
        f"c.Execute.kernel_name = {KERNEL_NAME!r}\n"
        f"c.Execute.timeout = {settings.cell_timeout}\n"
        "c.Execute.startup_timeout = 60\n"
        "c.Execute.interrupt_on_timeout = True\n"
        "c.Execute.raise_on_iopub_timeout = False\n"
        "c.Execute.kernel_manager_class = 'grader.grade.SandboxKernelManager'\n"
        "from grader.grade import cell_started\n"
        "c.Execute.on_cell_start = cell_started\n"
    ))
    env = course.nbgrader_env(job)
    env.update(JUPYTER_PATH=str(job / "share"), JUPYTER_RUNTIME_DIR=str(runtime), JUPYTER_DATA_DIR=str(job / "share"),
               IPYTHONDIR=str(job / "ipython"), GRADER_RUNTIME_DIR=str(runtime), GRADER_JOB_DIR=str(job), TMPDIR=str(runtime),
               GRADER_SANDBOX_UID=str(sandbox.uid or ""))
    t0 = time.monotonic()
    rc, timed_out = _run([sys.executable, "-m", "nbgrader", "autograde", lab.name, f"--student={student}",
                          "--create", "--force"], job, env, settings.limits.wall_s, job / "nbgrader.log",
                         memory=6 << 30)
    result["seconds_nbgrader"] = round(time.monotonic() - t0, 2)
    nbgrader_scores: dict[str, float] | None = None
    autograded = cwd / f"{lab.notebook}.ipynb"
    if rc == 0 and autograded.exists():
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{job / 'gradebook.db'}") as gb:
            sub = gb.find_submission_notebook(lab.notebook, lab.name, student)
            nbgrader_scores = {g.name: float(g.score or 0.0) for g in sub.grades}
    else:
        why = "timed out" if timed_out else f"exited with status {rc}"
        log = _tail(job / "nbgrader.log")
        hint = ("a cell ran past its time limit and ignored the interrupt: the kernel was killed"
                if (job / "interrupt-ignored").exists() else
                "the kernel died (exit, crash, or memory)" if re.search(r"[Dd]ead ?[Kk]ernel|Kernel died", log)
                else "a cell ran too long" if "Timeout" in log or timed_out else "see the log")
        result["issues"].append(f"nbgrader could not finish this notebook ({why}: {hint})")

    # the out-of-process check
    steps, expected = plan(lab, nb)
    module_name, _, _ = parse_checks(lab)
    problems = importlib.import_module(module_name).problems if module_name else {}
    vhome = job / "verify"
    sandbox.prepare(vhome)
    with open(vhome / "job.pickle", "wb") as fh:
        pickle.dump({"steps": steps, "lab_module": module_name, "step_timeout": settings.cell_timeout}, fh)
    sandbox.prepare(vhome)
    t0 = time.monotonic()
    vcmd = sandbox.wrap([python, "-c", "import sys; from grader.grade import worker; worker(sys.argv[1], sys.argv[2])",
                         str(vhome / "job.pickle"), str(vhome / "results.jsonl")], [vhome], vhome)
    vrc, vtimeout = _run(vcmd, vhome, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, settings.limits.wall_s,
                         job / "verify.log")
    result["seconds_verify"] = round(time.monotonic() - t0, 2)
    lines = []
    if (vhome / "results.jsonl").exists():
        with open(vhome / "results.jsonl", "rb") as fh:
            lines = fh.read(settings.limits.file_bytes).decode("utf-8", "replace").splitlines()
    checked, tamper, stop = verdicts(steps, expected, lines, problems)
    if tamper:
        result["issues"].append("TAMPERING: " + "; ".join(tamper))
    if stop:
        why = ("wall-clock limit" if vtimeout else "the submission's code ended the process" if vrc in (0, 1)
               else "killed: a resource limit (CPU time, memory, processes)" if vrc < 0 or vrc > 128
               else f"exit status {vrc}")
        result["issues"].append(f"{stop} ({why})")

    # the verdict: fail closed
    outputs = _cell_messages(autograded) if autograded.exists() else {}
    for test_id, points in tests.items():
        nbg = nbgrader_scores.get(test_id) if nbgrader_scores is not None else None
        chk = checked.get(test_id)
        if chk is not None and not chk["ok"]:
            score, msg, how = 0.0, chk["message"], "checked outside the kernel"
        elif nbg is None:
            if chk is not None and nbgrader_scores is None:
                score, msg, how = points, "", "checked outside the kernel (nbgrader did not finish)"
            else:
                score, msg, how = 0.0, "not graded: nbgrader did not finish this notebook", "kernel"
        else:
            score, how = nbg, "kernel and outside" if chk is not None else "kernel-only"
            msg = "" if nbg >= points else outputs.get(test_id, "the test cell failed")
        result["cells"][test_id] = {"points": points, "score": score, "message": msg, "checked": how}
    result["score"] = sum(c["score"] for c in result["cells"].values())
    if nbgrader_scores is None or stop:
        result["status"] = "partly graded"
    _publish(lab, ws, student, result, autograded if autograded.exists() else None, source)
    if runtime != job / "runtime":
        shutil.rmtree(runtime, ignore_errors=True)
    if not os.environ.get("GRADER_KEEP_JOBS"):
        shutil.rmtree(job, ignore_errors=True)
    return result


def _cell_messages(path: Path) -> dict[str, str]:
    """Test cell id -> the last line of its error (what nbgrader saw), from the executed notebook."""
    out = {}
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return out
    for cell in nb["cells"]:
        gid = _meta(cell).get("grade_id")
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                out[gid] = f"{o.get('ename')}: {o.get('evalue')}"[:500]
            elif o.get("output_type") == "stream" and o.get("name") == "stderr" and gid not in out:
                out[gid] = "the test cell wrote to stderr: " + _src(o.get("text"))[:200]
    return out


def _publish(lab: Lab, ws: Workspace, student: str, result: dict, autograded: Path | None, source: dict) -> None:
    """Write the result JSON, the executed notebook and the student's feedback (hidden tests removed)."""
    path = ws.result(student, lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    stable = {k: v for k, v in result.items() if not k.startswith("seconds")}
    path.write_text(json.dumps(stable, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    fb_dir = ws.root / "feedback" / student / lab.name
    fb_dir.mkdir(parents=True, exist_ok=True)
    if autograded is not None:
        dest = ws.root / "autograded" / student / lab.name
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(autograded, dest / autograded.name)
        nb = json.loads(autograded.read_text(encoding="utf-8"))
    else:
        nb = {"cells": [], "metadata": source.get("metadata", {}), "nbformat": 4, "nbformat_minor": 5}
    (fb_dir / f"{lab.notebook}.html").write_text(feedback_html(nb, result), encoding="utf-8")


def feedback_html(nb: dict, result: dict) -> str:
    """The student's feedback: the executed notebook with scores, hidden test code and output removed."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbgrader.preprocessors import ClearHiddenTests

    rows = "\n".join(f"| `{k}` | {c['score']:g} / {c['points']:g} | {c['message'][:300].replace('|', '/')} |"
                     if "hidden" not in k else
                     f"| `{k}` | {c['score']:g} / {c['points']:g} | "
                     f"{'passed' if c['score'] >= c['points'] else 'failed (hidden test: details are not shown)'} |"
                     for k, c in result["cells"].items())
    issues = "".join(f"\n- {i}" for i in result["issues"] if not i.startswith(("REVIEW", "TAMPERING")))
    head = (f"# Feedback: {result['lab']}\n\n**Score: {result['score']:g} / {result['max_score']:g}** "
            f"({result['status']})\n\n| test | score | message |\n|---|---|---|\n{rows}\n"
            + (f"\n**Problems with the submission:**{issues}\n" if issues else ""))
    for cell in nb.get("cells", []):
        cell["source"] = src = _src(cell.get("source"))
        if "BEGIN HIDDEN TESTS" in src and cell.get("cell_type") == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "(hidden test: output not shown)\n"}]
    nb["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": head, "id": "feedback-summary"}] + nb.get("cells", [])
    node = nbformat.from_dict(nb)
    node, _ = ClearHiddenTests().preprocess(node, {})
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(node)
    return html


# ------------------------------------------------------------------------------------------------------------
# The class: parallel autograde, CSV, report
# ------------------------------------------------------------------------------------------------------------

def autograde(lab: Lab, ws: Workspace, settings: Settings, students: list[str] | None = None,
              progress=print) -> list[dict]:
    warn_if_weak()
    students = students or ws.students(lab)
    todo, results = [], {}
    for s in students:
        path = ws.result(s, lab)
        data = ws.submitted(s, lab).read_bytes() if ws.submitted(s, lab).exists() else b""
        key = hashlib.sha256(data + lab.digest().encode() + settings.key().encode()).hexdigest()[:24]
        if path.exists() and not settings.force:
            old = json.loads(path.read_text(encoding="utf-8"))
            if old.get("key") == key:
                results[s] = old
                continue
        todo.append(s)
    if todo:
        template(lab, ws)
        _preload()
    slots: Queue = Queue()
    for i in range(settings.jobs):
        slots.put(i)

    def one(s: str) -> dict:
        slot = slots.get()
        try:
            r = grade_submission(lab, ws, s, settings, slot)
        except Exception as exc:  # a bug or a broken job must not stop the class
            r = {"student": s, "lab": lab.name, "status": "error", "score": 0.0, "max_score": 0.0,
                 "issues": [f"grader error: {type(exc).__name__}: {exc}"], "cells": {}}
            path = ws.result(s, lab)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(r, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        finally:
            slots.put(slot)
        progress(f"  {s}: {r['score']:g}/{r['max_score']:g} ({r['status']}; nbgrader {r.get('seconds_nbgrader', 0)} s, "
                 f"check {r.get('seconds_verify', 0)} s)")
        return r

    with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
        for r in pool.map(one, todo):
            results[r["student"]] = r
    if len(todo) < len(students):
        progress(f"  {len(students) - len(todo)} unchanged submission(s) kept their grades (use --force to regrade)")
    return [results[s] for s in students]


def _preload() -> None:
    """Import nbgrader/nbconvert once, in this thread: importing them from several grading threads at once
    fails (a circular import inside nbgrader.preprocessors)."""
    import nbconvert  # noqa: F401
    import nbformat  # noqa: F401
    import nbgrader.api  # noqa: F401
    import nbgrader.preprocessors  # noqa: F401
    from nbconvert import HTMLExporter  # noqa: F401


def load_results(lab: Lab, ws: Workspace) -> list[dict]:
    base = ws.root / "results" / lab.name
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(base.glob("*.json"))] if base.exists() else []


def export_csv(lab: Lab, ws: Workspace, path: Path | None = None) -> Path:
    results = load_results(lab, ws)
    tests = list(lab_tests(lab))
    path = path or ws.root / f"{lab.name}_grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "original_name", "lab", "score", "max_score", "status", "issues", *tests])
        for r in results:
            w.writerow([r["student"], r.get("original", ""), lab.name, f"{r['score']:g}", f"{r['max_score']:g}",
                        r["status"], len(r["issues"]), *(f"{r['cells'].get(t, {}).get('score', 0):g}" for t in tests)])
    return path


def lab_tests(lab: Lab) -> list[str]:
    return [_meta(c)["grade_id"] for c in lab.source()["cells"] if _meta(c).get("grade")]


def report(lab: Lab, ws: Workspace) -> str:
    lines = []
    results = load_results(lab, ws)
    for r in results:
        lines.append(f"{r['student']} ({r.get('original', '')}): {r['score']:g}/{r['max_score']:g} — {r['status']}")
        lines += [f"    ! {i}" for i in r["issues"]]
        for t, c in r["cells"].items():
            if c["score"] < c["points"]:
                lines.append(f"    ✗ {t} {c['score']:g}/{c['points']:g}: {c['message'][:300]}")
    scores = [r["score"] for r in results]
    if scores:
        lines.append(f"\n{len(results)} students; mean {sum(scores) / len(scores):.2f}; "
                     f"{sum(r['status'] != 'graded' for r in results)} not fully graded")
    text = "\n".join(lines)
    (ws.root / f"{lab.name}_report.txt").write_text(text + "\n", encoding="utf-8")
    return text
