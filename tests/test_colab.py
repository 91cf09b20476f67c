"""The "Open in Colab" first cell, run for real against the student edition built from this checkout (Colab cannot
be reached from CI): in a fresh virtual environment, with `google.colab` faked into sys.modules, the cell installs
the course and selects the backend; the next cell's `import gpucourse` then comes from the wheel, and no reference
answer or hidden-case generator is installed. Given a full build (the repository, answers included) the cell
refuses and uninstalls it. pip runs with PIP_NO_INDEX=1: everything the cell installs must come from the wheel or
be present already (nothing downloads)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import gpucourse
from gpucourse import colab

ROOT = Path(__file__).resolve().parent.parent


def test_cell_and_badge_text():
    cell = colab.install_cell("me/fork", "spring")
    assert cell.startswith(colab.MARK)
    compile(cell, "<colab cell>", "exec")  # valid Python
    # the student edition's wheel, an asset of the fork's release: never the repository (it holds the answers)
    assert ('COURSE = "https://github.com/me/fork/releases/download/student-edition/gpucourse-'
            f'{gpucourse.__version__}-py3-none-any.whl"') in cell
    assert "git+" not in cell and "import grader.answers" in cell
    assert colab.badge("course/01_blas_roofline.ipynb", "me/fork") == (
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/me/fork/blob/main/course/01_blas_roofline.ipynb)")


def test_retarget_rewrites_badge_and_cell():
    text = colab.badge("course/01_blas_roofline.ipynb") + "\n\n" + colab.install_cell()
    new = colab.retarget_text(text, "uni-x/gpu-course-2027", "fall")
    assert new == colab.badge("course/01_blas_roofline.ipynb", "uni-x/gpu-course-2027", "fall") + "\n\n" + \
        colab.install_cell("uni-x/gpu-course-2027", "fall")
    assert colab.retarget_text(new, "uni-x/gpu-course-2027", "fall") == new  # idempotent
    with pytest.raises(ValueError):
        colab.parse_target("not a repo")
    assert colab.parse_target("a/b") == ("a/b", "main")
    assert colab.parse_target("a/b@dev") == ("a/b", "dev")


def test_cell_is_inert_outside_colab():
    env = {k: v for k, v in os.environ.items() if k not in ("GPUCOURSE_INSTALL", "GPUCOURSE_BACKEND")}
    code = colab.install_cell() + "\nprint('backend env:', os.environ.get('GPUCOURSE_BACKEND'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "backend env: None", out.stdout


def _deps_view(dest: Path) -> Path:
    """This venv's site-packages minus the course itself (its editable install): the packages Colab already has."""
    dest.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if "gpucourse" in entry.name.lower():
            continue
        (dest / entry.name).symlink_to(entry)
    return dest


def _needs_offline_build() -> None:
    import importlib.util

    # building offline needs the build backend here: setuptools>=70.1 has bdist_wheel built in, older needs `wheel`
    if importlib.util.find_spec("setuptools.command.bdist_wheel") is None and importlib.util.find_spec("wheel") is None:
        pytest.skip("building a wheel without the network needs setuptools>=70.1 (or `wheel`) installed")


def _colab_venv(tmp_path: Path) -> tuple[Path, str]:
    """A fresh venv that sees Colab's preinstalled packages (a view of ours, without the course)."""
    venv = tmp_path / "colab-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    view = _deps_view(tmp_path / "preinstalled")
    Path(site, "colab_preinstalled.pth").write_text(f"import site; site.addsitedir({str(view)!r})\n")
    before = subprocess.run([str(py), "-c", "import gpucourse"], capture_output=True, text=True, cwd=tmp_path)
    assert before.returncode != 0, "the fresh venv already imports gpucourse: the test would prove nothing"
    return py, site


def _env() -> dict[str, str]:
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("GPUCOURSE_BACKEND", None)
    return env


COLAB = "import sys, types\nsys.modules['google.colab'] = types.ModuleType('google.colab')\n"


def test_the_cell_names_this_version():
    assert colab.VERSION == gpucourse.__version__


@pytest.mark.slow
def test_install_cell_installs_the_student_edition(tmp_path):
    _needs_offline_build()
    from grader import edition

    # 1. the student edition built from this checkout, as the instructor publishes it (python -m grader
    # student-edition): its builder refuses to write it if any answer-side source is in it
    # (a process of its own: lab 7's references need JAX's 8 CPU devices, set before JAX is first imported)
    run = subprocess.run([sys.executable, "-m", "grader", "student-edition", str(tmp_path / "edition")], cwd=ROOT,
                         capture_output=True, text=True, timeout=600, env=_env())
    assert run.returncode == 0, run.stderr[-3000:]
    wheel = next((tmp_path / "edition").glob("gpucourse-*.whl"))
    py, site = _colab_venv(tmp_path)

    # 2. the cell as Colab runs it, then the notebook's own first lines, then a search for the answer side
    program = (COLAB + colab.install_cell() + "\n"
               "import gpucourse as gc\nbe = gc.setup()\nimport grader.labs.lab01_blas_roofline as lab\n"
               "print('FROM', gc.__file__)\nprint('LAB', lab.__file__)\nprint('BACKEND', be.name)\n"
               "import importlib, importlib.util, os\n"
               "print('ANSWERS', importlib.util.find_spec('grader.answers'))\n"
               "split = [importlib.import_module('grader.labs.' + m) for m in ('lab05b_kernel_puzzles',)]\n"
               "print('HAS_ANSWERS', sum(p.has_answers() for m in split for p in m.problems.values()),\n"
               "      sum(len(m.problems) for m in split))\n"
               "root = os.path.dirname(os.path.dirname(gc.__file__))\n"
               "print('FILES', sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)\n"
               "      for f in fs if 'answers' in d.split(os.sep) and 'grader' in d.split(os.sep)))\n")
    out = subprocess.run([str(py), "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env={**_env(), "GPUCOURSE_INSTALL": str(wheel)})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines()
                 if line.split(" ", 1)[0] in ("FROM", "LAB", "BACKEND", "ANSWERS", "HAS_ANSWERS", "FILES"))
    assert lines["FROM"].startswith(site), f"gpucourse was imported from {lines['FROM']}, not the installed wheel"
    assert lines["LAB"].startswith(site), lines["LAB"]
    assert "course installed; backend: cpu" in out.stdout  # no GPU here; on a Colab GPU runtime it says gpu
    assert lines["BACKEND"] == "cpu" and "CPU backend" in out.stdout
    # no answer side anywhere in what Colab installed: not importable, no file, the split labs' problems bare
    assert lines["ANSWERS"] == "None" and lines["FILES"] == "[]", lines
    n_bare, n = lines["HAS_ANSWERS"].split()
    from grader.labs import lab05b_kernel_puzzles

    assert n_bare == "0" and int(n) == len(lab05b_kernel_puzzles.problems), lines["HAS_ANSWERS"]
    installed = {str(p.relative_to(site)): p.read_bytes() for p in Path(site).rglob("*")
                 if p.is_file() and p.parts[len(Path(site).parts)] in ("grader", "gpucourse")}
    assert len(installed) > 50 and not edition.leaks(installed, edition.answer_side(ROOT))


@pytest.mark.slow
def test_install_cell_refuses_a_build_that_holds_the_answers(tmp_path):
    """A wheel of the whole repository (what `pip install git+…` of the instructor's repository gives): the cell
    stops with the reason and leaves no course installed."""
    _needs_offline_build()
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for pkg in ("gpucourse", "grader"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, env=_env(),
                           timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((tmp_path / "dist").glob("gpucourse-*.whl"))
    import zipfile

    assert any(n.startswith("grader/answers/") for n in zipfile.ZipFile(wheel).namelist())  # it does hold them
    py, _ = _colab_venv(tmp_path)
    out = subprocess.run([str(py), "-c", COLAB + colab.install_cell()], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600, env={**_env(), "GPUCOURSE_INSTALL": str(wheel)})
    assert out.returncode != 0 and "holds the answers (grader/answers)" in out.stderr, out.stderr[-3000:]
    after = subprocess.run([str(py), "-c", "import grader.answers"], capture_output=True, text=True, cwd=tmp_path)
    assert after.returncode != 0, "the refused build is still installed"
