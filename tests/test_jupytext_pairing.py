"""jupytext pairs notebooks with py:percent twins only in course/ and solutions/ (their jupytext.toml), never what
students edit: opening and saving a lab, or a student's copy of a notebook, through jupytext's contents manager
(the one JupyterLab uses) writes no stray .py, and a lab whose .ipynb changed outside JupyterLab still opens (a
paired lab failed with "File Load Error … is more recent than …py")."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from grader import course

ROOT = course.ROOT
LAB = "lab01_blas_roofline"
COURSE_NB = "course/01_blas_roofline"
SOLUTION_NB = f"solutions/{LAB}/{LAB}"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The parts of a checkout jupytext looks at: pyproject.toml, the folders' jupytext.toml, one notebook each."""
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in ("course", "solutions"):
        (tmp_path / folder).mkdir()
        shutil.copy2(ROOT / folder / "jupytext.toml", tmp_path / folder / "jupytext.toml")
    for stem in (COURSE_NB, SOLUTION_NB):
        (tmp_path / stem).parent.mkdir(parents=True, exist_ok=True)
        for suffix in (".ipynb", ".py"):
            shutil.copy2(ROOT / f"{stem}{suffix}", tmp_path / f"{stem}{suffix}")
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy2(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB / f"{LAB}.ipynb")
    return tmp_path


def _manager(root: Path):
    from jupytext import TextFileContentsManager

    return TextFileContentsManager(root_dir=str(root))


def _open_and_save(cm, path: str, edit: str | None = None) -> dict:
    model = cm.get(path)
    if edit is not None:
        model["content"].cells[0].source += edit
    cm.save(model, path)
    return model


def _py_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.py")}


def test_a_lab_opened_and_saved_gets_no_twin(checkout):
    cm = _manager(checkout)
    lab = f"labs/{LAB}/{LAB}.ipynb"
    _open_and_save(cm, lab, edit="\n<!-- a student's note -->")
    assert _py_files(checkout / "labs" / LAB) == set(), "saving a lab wrote a paired .py next to it"
    # the .ipynb changes outside JupyterLab (a new release, a copy from elsewhere): it still opens, as itself
    path = checkout / lab
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"][0]["source"] = "# changed outside JupyterLab\n"
    path.write_text(json.dumps(nb), encoding="utf-8")
    future = time.time() + 60
    os.utime(path, (future, future))
    assert cm.get(lab)["content"].cells[0].source.strip() == "# changed outside JupyterLab"
    assert _py_files(checkout / "labs" / LAB) == set()


def test_a_students_copy_of_a_paired_notebook_gets_no_twin(checkout):
    cm = _manager(checkout)
    (checkout / "mine").mkdir()
    shutil.copy2(checkout / f"{COURSE_NB}.ipynb", checkout / "mine" / "copy.ipynb")
    _open_and_save(cm, "mine/copy.ipynb", edit="\nmy notes")
    assert _py_files(checkout / "mine") == set()


@pytest.mark.parametrize("stem", [COURSE_NB, SOLUTION_NB])
def test_course_and_solutions_stay_paired(checkout, stem):
    cm = _manager(checkout)
    py = checkout / f"{stem}.py"
    py.unlink()
    _open_and_save(cm, f"{stem}.ipynb", edit="\nedited in JupyterLab")
    assert py.exists(), f"saving {stem}.ipynb did not write its py:percent twin"
    assert "edited in JupyterLab" in py.read_text(encoding="utf-8")
    assert "# %%" in py.read_text(encoding="utf-8")


def test_no_notebook_pairs_itself_in_its_metadata():
    """Pairing in a notebook's metadata would follow it into labs/ (nbgrader copies metadata) and into copies."""
    paired = [str(p.relative_to(ROOT)) for folder in ("course", "solutions", "labs") for p in (ROOT / folder).rglob("*.ipynb")
              if "formats" in json.loads(p.read_text(encoding="utf-8"))["metadata"].get("jupytext", {})]
    assert paired == []
    assert (ROOT / "course" / "jupytext.toml").read_text() == (ROOT / "solutions" / "jupytext.toml").read_text()
    assert not (ROOT / "labs" / "jupytext.toml").exists()


def test_sync_strips_pairing_from_metadata_and_keeps_the_pair(tmp_path, monkeypatch):
    """`python -m grader sync` still writes both halves, and removes a `formats` entry an old twin carries."""
    stem = tmp_path / "course" / "01_blas_roofline"
    stem.parent.mkdir()
    shutil.copy2(ROOT / f"{COURSE_NB}.py", stem.with_suffix(".py"))
    text = stem.with_suffix(".py").read_text(encoding="utf-8")
    stem.with_suffix(".py").write_text(text.replace("#   jupytext:\n", "#   jupytext:\n#     formats: ipynb,py:percent\n", 1),
                                       encoding="utf-8")
    monkeypatch.setattr(course, "ROOT", tmp_path)
    changed = course.sync([stem.with_suffix(".ipynb")])
    assert sorted(Path(c).suffix for c in changed) == [".ipynb", ".py"]
    nb = json.loads(stem.with_suffix(".ipynb").read_text(encoding="utf-8"))
    assert "formats" not in nb["metadata"]["jupytext"]
    assert "formats:" not in stem.with_suffix(".py").read_text(encoding="utf-8")
    assert stem.with_suffix(".py").read_text(encoding="utf-8") == (ROOT / f"{COURSE_NB}.py").read_text(encoding="utf-8")
