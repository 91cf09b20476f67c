"""The course's files as the grading side sees them: notebook pairs, labs generated from solutions.

Authors edit the ``.py`` (py:percent) twin of a notebook or the notebook itself; ``python -m grader
sync`` brings the pair back in step and strips outputs; ``python -m grader generate`` rebuilds
``labs/`` from ``solutions/`` with nbgrader; ``python -m grader check`` fails when either is stale
(CI runs it via pytest).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import exercise_cells

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "grader"
PAIRED_DIRS = ("course", "solutions")


def nbgrader_env(extra_config_dir: Path | None = None) -> dict[str, str]:
    """Environment in which ``nbgrader`` finds the course config and its own tools (alembic) on
    PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    dirs = [str(extra_config_dir)] if extra_config_dir else [str(CONFIG_DIR)]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(dirs)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # keeps a debugger warning off stderr
    return env


def nbgrader(*args: str, cwd: Path = ROOT, config_dir: Path | None = None, check: bool = True,
             timeout: float | None = 1800) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "nbgrader", *args]
    return subprocess.run(
        cmd,
        cwd=cwd,
        env=nbgrader_env(config_dir),
        check=check,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def labs() -> list[str]:
    """Names of the labs (folders of solutions/ that hold a notebook)."""
    return sorted(
        p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb"))
    )


def paired_notebooks() -> list[Path]:
    """Every notebook of course/ and solutions/ (as its .ipynb path), whichever half of the pair
    exists."""
    found = {
        p.with_suffix(".ipynb")
        for d in PAIRED_DIRS
        for pattern in ("*.ipynb", "*.py")
        for p in (ROOT / d).rglob(pattern)
        if ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts
    }
    return sorted(found)


def _strip(nb: dict) -> dict:
    """No outputs, no execution counts, stable cell ids (the nbgrader grade_id, else the position),
    and no pairing in the notebook's own metadata: course/ and solutions/ pair through their
    jupytext.toml, and a paired notebook's metadata would follow it into labs/ and into every copy a
    student makes."""
    nb.get("metadata", {}).get("jupytext", {}).pop("formats", None)
    for i, cell in enumerate(nb.get("cells", [])):
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        cell["id"] = gid if gid else f"cell-{i:03d}"
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return nb


def sync(paths: list[Path] | None = None) -> list[str]:
    """Bring each notebook in step with its py:percent twin (the newer one wins), outputs
    stripped."""
    import jupytext

    changed = []
    for ipynb in paths or paired_notebooks():
        twin = ipynb.with_suffix(".py")
        if twin.exists() and (not ipynb.exists() or twin.stat().st_mtime > ipynb.stat().st_mtime):
            nb = jupytext.read(twin)
        else:
            nb = jupytext.read(ipynb)
        nb = _strip(nb)
        if ipynb.parent.parent == ROOT / "solutions":
            # heading numbers and the exercise table, from the cell order
            exercise_cells.derive(nb.cells)
        for path, fmt in ((ipynb, "ipynb"), (twin, "py:percent")):
            text = jupytext.writes(nb, fmt=fmt)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                changed.append(str(path.relative_to(ROOT)))
    return changed


def out_of_sync() -> list[str]:
    """Problems with notebook pairs: missing twin, different cells, committed outputs."""
    import jupytext

    problems = []
    for ipynb in paired_notebooks():
        rel = ipynb.relative_to(ROOT)
        twin = ipynb.with_suffix(".py")
        if not twin.exists() or not ipynb.exists():
            problems.append(f"{rel}: one half of the pair is missing (run `python -m grader sync`)")
            continue
        nb = json.loads(ipynb.read_text(encoding="utf-8"))
        if any(c.get("outputs") or c.get("execution_count") for c in nb["cells"]):
            problems.append(f"{rel}: committed with outputs (run `python -m grader sync`)")
        if "formats" in nb.get("metadata", {}).get("jupytext", {}):
            problems.append(
                f"{rel}: pairs itself in its metadata, which labs/ and students' copies would"
                " inherit (run `python -m grader sync`)"
            )
        from_py = jupytext.read(twin)
        a = [
            (c["cell_type"], source_text(c["source"]), c.get("metadata", {}).get("nbgrader"))
            for c in nb["cells"]
        ]
        b = [
            (c["cell_type"], source_text(c["source"]), c.get("metadata", {}).get("nbgrader"))
            for c in from_py.cells
        ]
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            problems.append(
                f"{rel}: differs from {twin.name} at cell {first} (run `python -m grader sync`)"
            )
    return problems


def exercise_layout() -> list[str]:
    """Solution notebooks whose cells do not follow their lab's list of exercises (``problems``)."""
    import importlib

    import jupytext

    problems = []
    for lab in labs():
        names = list(importlib.import_module(f"grader.labs.{lab}").problems)
        cells = jupytext.read(ROOT / "solutions" / lab / f"{lab}.ipynb").cells
        problems += exercise_cells.layout_problems(lab, cells, names)
    return problems


def source_text(source: str | list[str]) -> str:
    return "".join(source) if isinstance(source, list) else source


def generate(dest: Path | None = None, use_db: bool = False, only: list[str] | None = None) -> Path:
    """Run nbgrader generate_assignment for every lab (or those in ``only``), into ``dest``
    (default: labs/)."""
    dest = dest or ROOT / "labs"
    args = ["--force", f"--CourseDirectory.release_directory={dest}"]
    if not use_db:
        args.append("--no-db")
    unknown = sorted(set(only or []) - set(labs()))
    if unknown:
        raise SystemExit(f"no such lab in solutions/: {', '.join(unknown)}")
    for lab in only or labs():
        nbgrader("generate_assignment", lab, *args)
    return dest


def _normalized(path: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        cell["source"] = source_text(cell["source"])
    return nb


def stale_labs() -> list[str]:
    """Differences between labs/ and what nbgrader generates from solutions/ now."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp) / "labs")
        problems = []
        for lab in labs():
            want = sorted(p.relative_to(fresh) for p in (fresh / lab).rglob("*") if p.is_file())
            have_dir = ROOT / "labs" / lab
            have = (
                sorted(p.relative_to(ROOT / "labs") for p in have_dir.rglob("*") if p.is_file())
                if have_dir.exists()
                else []
            )
            if want != have:
                problems.append(
                    f"labs/{lab}: files {[str(p) for p in have]} != generated"
                    f" {[str(p) for p in want]}"
                )
                continue
            for rel in want:
                a, b = fresh / rel, ROOT / "labs" / rel
                same = (
                    _normalized(a) == _normalized(b)
                    if rel.suffix == ".ipynb"
                    else a.read_bytes() == b.read_bytes()
                )
                if not same:
                    problems.append(f"labs/{rel} is stale (run `python -m grader generate`)")
        extra = sorted(
            p.name for p in (ROOT / "labs").iterdir() if p.is_dir() and p.name not in labs()
        )
        problems += [f"labs/{name} has no source in solutions/" for name in extra]
        return problems


def copy_lab_sources(dest_root: Path) -> None:
    """Copy solutions/ notebooks (not their .py twins) into another course root, for throwaway
    grading runs."""
    for lab in labs():
        (dest_root / "solutions" / lab).mkdir(parents=True, exist_ok=True)
        for nb in (ROOT / "solutions" / lab).glob("*.ipynb"):
            shutil.copy2(nb, dest_root / "solutions" / lab / nb.name)
