""""Open in Colab" support: the badge every notebook carries and the first code cell that, in Google
Colab only, installs the course's *student edition* and selects the GPU backend (Runtime → Change
runtime type → GPU).

    python -m gpucourse.colab cell                      # print the first-cell code (for this
                                                        # checkout's repo)
    python -m gpucourse.colab badge course/01_blas_roofline.ipynb
    python -m gpucourse.colab retarget me/my-fork@spring # point every notebook's badge and cell at
    a fork

What Colab installs is the wheel that ``python -m grader student-edition DEST`` builds
(``gpucourse`` and the exercise side of ``grader``: no reference answer, no hidden-case generator),
published as an asset of the repository's release ``student-edition``:  ``gh release create
student-edition DEST/gpucourse-*.whl``. Never the repository itself, which holds the answer side:
after installing, the cell checks that ``grader.answers`` cannot be imported, and otherwise
uninstalls what it installed and stops (a full build published by mistake).

The cell has to run *before* the package exists in Colab, so it is plain text here (never imports
gpucourse). It installs with ``--no-deps`` plus the few packages Colab lacks: Colab ships NumPy, JAX
with CUDA, CuPy, Matplotlib and Numba, and upgrading its Jupyter packages (``notebook``,
``jupyterlab``) would break the runtime. ``GPUCOURSE_INSTALL`` (a pip requirement or a wheel path)
overrides the source: tests/test_colab.py uses it to run the cell against an edition built from this
checkout, since Colab cannot be reached from CI.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# owner/name on GitHub; an instructor's fork: `python -m gpucourse.colab retarget`
REPO = "gpu-course/gpu-course"
BRANCH = "main"
RELEASE = "student-edition"  # the GitHub release whose asset is the student edition's wheel
VERSION = "0.1.0"  # gpucourse.__version__ (a test keeps them equal): the wheel's file name holds it
# runtime dependencies Colab does not preinstall (numba-cuda: the cell adds the flavour of the
# driver's CUDA major version, [cu12] or [cu13]: without one, numba-cuda resolves to cuda-bindings
# 13, which needs a driver >= 580)
COLAB_DEPS = ["numba-cuda>=0.20"]
MARK = "# Colab set-up"  # first line of the cell: how retarget (and the lead's insertion) finds it

CELL_TEMPLATE = '''{mark} (does nothing outside Google Colab): install the course (student edition),
# pick the backend.
import os, re, shutil, subprocess, sys
COURSE = "{url}"  # instructors: `python -m gpucourse.colab retarget OWNER/REPO@BRANCH`
if "google.colab" in sys.modules or os.environ.get("GPUCOURSE_INSTALL"):
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    wheel = os.environ.get("GPUCOURSE_INSTALL") or COURSE
    subprocess.run(pip + ["--no-deps", "--force-reinstall", wheel], check=True)
    answers = [sys.executable, "-c", "import grader.answers"]
    if subprocess.run(answers, capture_output=True).returncode == 0:
        uninstall = [sys.executable, "-m", "pip", "uninstall", "-y", "-q", "gpucourse"]
        subprocess.run(uninstall, check=True)
        raise RuntimeError("this build of the course holds the answers (grader/answers): "
                           "install the student edition")
    gpu = (shutil.which("nvidia-smi")
           and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0)
    smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout if gpu else ""
    # the newest CUDA the driver runs: numba-cuda's flavour follows it
    major = re.search(r"CUDA Version: (\\d+)", smi)
    flavour = f"[cu{{major.group(1)}}]" if major and major.group(1) in ("12", "13") else ""
    deps = [d.replace("numba-cuda", "numba-cuda" + flavour, 1) for d in {deps!r}]
    subprocess.run(pip + deps, check=True)
    os.environ["GPUCOURSE_BACKEND"] = "gpu" if gpu else "cpu"
    print("course installed; backend:", os.environ["GPUCOURSE_BACKEND"], "" if gpu else
          "(no GPU: Runtime > Change runtime type > GPU, then run this cell again)")'''

WHEEL_URL = (
    "https://github.com/{repo}/releases/download/{release}/gpucourse-{version}-py3-none-any.whl"
)

BADGE_TEMPLATE = ("[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                  "(https://colab.research.google.com/github/{repo}/blob/{branch}/{path})")


def wheel_url(repo: str = REPO) -> str:
    """Where Colab installs the course from: the student edition's wheel, an asset of ``repo``'s
    release."""
    return WHEEL_URL.format(repo=repo, release=RELEASE, version=VERSION)


def install_cell(repo: str = REPO, branch: str = BRANCH) -> str:
    """The first code cell of every notebook (Python source). ``branch`` is the badges' (the wheel
    is the release's)."""
    return CELL_TEMPLATE.format(mark=MARK, url=wheel_url(repo), deps=COLAB_DEPS)


def badge(path: str, repo: str = REPO, branch: str = BRANCH) -> str:
    """Markdown of the "Open in Colab" badge for a notebook at `path` (relative to the repository
    root)."""
    return BADGE_TEMPLATE.format(repo=repo, branch=branch, path=Path(path).as_posix())


def parse_target(target: str) -> tuple[str, str]:
    """"owner/name" or "owner/name@branch" → (repo, branch)."""
    m = re.fullmatch(r"([\w.-]+/[\w.-]+)(?:@([\w./-]+))?", target)
    if not m:
        raise ValueError(f"expected OWNER/REPO or OWNER/REPO@BRANCH, got {target!r}")
    return m.group(1), m.group(2) or BRANCH


_LINK = re.compile(
    r"(colab\.research\.google\.com/github/)[\w.-]+/[\w.-]+/blob/[\w./-]+?/"
    r"((?:course|solutions|labs)/)"
)
_COURSE = re.compile(r'(COURSE = "https://github\.com/)[\w.-]+/[\w.-]+(/releases/download/)')


def retarget_text(text: str, repo: str, branch: str) -> str:
    """Point every Colab badge and install cell in `text` at repo@branch."""
    text = _LINK.sub(lambda m: f"{m.group(1)}{repo}/blob/{branch}/{m.group(2)}", text)
    return _COURSE.sub(lambda m: f"{m.group(1)}{repo}{m.group(2)}", text)


def retarget(root: Path, repo: str, branch: str) -> list[Path]:
    """Rewrite the py:percent twins under course/ and solutions/; returns the files changed. Then
    run `python -m grader sync` and `python -m grader generate` to update the notebooks and
    labs/."""
    changed = []
    for path in sorted([*root.glob("course/*.py"), *root.glob("solutions/*/*.py")]):
        text = path.read_text(encoding="utf-8")
        new = retarget_text(text, repo, branch)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpucourse.colab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    cell = sub.add_parser("cell", help="print the first-cell code")
    cell.add_argument("--repo", default=f"{REPO}@{BRANCH}")
    bdg = sub.add_parser("badge", help="print the badge markdown for a notebook")
    bdg.add_argument("path")
    bdg.add_argument("--repo", default=f"{REPO}@{BRANCH}")
    ret = sub.add_parser(
        "retarget", help="point every notebook's badge and install cell at OWNER/REPO[@BRANCH]"
    )
    ret.add_argument("target")
    args = parser.parse_args(argv)
    if args.cmd == "cell":
        print(install_cell(*parse_target(args.repo)))
    elif args.cmd == "badge":
        print(badge(args.path, *parse_target(args.repo)))
    else:
        from .__main__ import course_root

        changed = retarget(course_root(), *parse_target(args.target))
        print("\n".join(f"retargeted {p}" for p in changed) or "no Colab badge or cell found")
        print("now run: python -m grader sync && python -m grader generate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
