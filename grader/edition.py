"""The student edition (grader/DESIGN.md, part 2): what students install, without the answer side.

- :func:`write_expected` / :func:`stale_expected`: a split lab's visible expected values as data
  (``grader/labs/<lab>.expected.json``), computed by the references of ``grader/answers/<lab>.py``;
- :func:`build`: ``python -m grader student-edition DEST`` — the exercise side (``gpucourse``, ``grader`` without
  ``grader/answers``, ``labs/``) copied into ``DEST/src`` and a wheel of it into ``DEST``, verified before it is
  kept: no answer-side module, and no line of answer-side source (compared token by token, so a reformatted copy
  is caught too) in any file of the folder or member of the wheel.
"""

from __future__ import annotations

import importlib
import io
import json
import shutil
import subprocess
import sys
import tokenize
import zipfile
from pathlib import Path
from typing import Any

from .course import ROOT

ANSWERS = ROOT / "grader" / "answers"


def split_labs() -> list[str]:
    """Labs whose answer side lives in grader/answers (every lab today)."""
    return sorted(p.stem for p in ANSWERS.glob("lab*.py"))


def unsplit_labs() -> list[str]:
    """Labs whose references and generators are still in grader/labs (they ship with the edition until split)."""
    return sorted(p.stem for p in (ROOT / "grader" / "labs").glob("lab*.py") if p.stem not in split_labs())


def _stored(module: Any) -> dict[str, Any]:
    """The problems of a split lab whose answer side is in grader/answers (a lab may keep some on its exercise side:
    those need no stored expected values, their references are there)."""
    from .problem import _answer_module

    answers = _answer_module(module)
    split = getattr(answers, "ANSWERS", {})
    return {name: p for name, p in module.problems.items() if name in split}


def _expected(lab: str) -> str:
    from .pipeline.wire import encode

    module = importlib.import_module(f"grader.labs.{lab}")
    data = {name: p.visible_expected() for name, p in _stored(module).items()}
    return json.dumps(encode(data), allow_nan=True, sort_keys=True, indent=1) + "\n"


def write_expected(lab: str) -> Path:
    from .problem import expected_path

    path = expected_path(importlib.import_module(f"grader.labs.{lab}"))
    path.write_text(_expected(lab), encoding="utf-8")
    return path


def stale_expected(lab: str, recompute: bool = False) -> list[str]:
    """What is wrong with a split lab's stored expected values: missing, a problem or case missing, and (with
    ``recompute``: runs every reference on the visible cases) values the references no longer give."""
    from .pipeline.wire import decode
    from .problem import expected_path

    module = importlib.import_module(f"grader.labs.{lab}")
    path = expected_path(module)
    if not path.exists():
        return [f"{path.relative_to(ROOT)} is missing: run python -m grader expected {lab}"]
    text = path.read_text(encoding="utf-8")
    stored = decode(json.loads(text))
    bad = [f"{path.relative_to(ROOT)}: {name} has {len(stored.get(name, []))} expected values for "
           f"{len(p.visible)} visible cases: run python -m grader expected {lab}"
           for name, p in _stored(module).items() if len(stored.get(name, [])) != len(p.visible)]
    if not bad and recompute and _expected(lab) != text:
        bad.append(f"{path.relative_to(ROOT)} differs from what the references give: run python -m grader "
                   f"expected {lab}")
    return bad


# -- building the edition -----------------------------------------------------------------------------------------

COPIED = ("gpucourse", "grader", "course", "labs", "README.md", "LICENSE", "pyproject.toml")
MIN_TOKENS = 10 # a logical line this long is specific enough to say "this is the answer side's code"
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
         tokenize.ENDMARKER}


class LeakError(RuntimeError):
    """The edition would contain answer-side source: nothing is kept."""


def logical_lines(source: str) -> set[tuple[str, ...]]:
    """Token strings of every logical line of ``source`` with at least MIN_TOKENS tokens, imports excepted:
    the same code reformatted (spacing, line breaks inside brackets, comments) gives the same tuples."""
    out: set[tuple[str, ...]] = set()
    line: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NEWLINE or tok.type == tokenize.ENDMARKER:
                if len(line) >= MIN_TOKENS and line[0] not in ("import", "from"):
                    out.add(tuple(line))
                line = []
            elif tok.type not in _SKIP:
                line.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # not Python: one "line" per physical line, split on whitespace
        out |= {tuple(ln.split()) for ln in source.splitlines() if len(ln.split()) >= MIN_TOKENS}
    return out


def answer_side(root: Path = ROOT) -> dict[str, set[tuple[str, ...]]]:
    """Answer-side file -> its specific logical lines (what must appear nowhere in the edition)."""
    return {str(p.relative_to(root)): logical_lines(p.read_text(encoding="utf-8"))
            for p in sorted((root / "grader" / "answers").glob("*.py"))}


def _texts(name: str, data: bytes) -> list[str]:
    """The source texts of one file of the edition: a notebook's code cells, a text file whole; none for binary."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return []
    if name.endswith(".ipynb"):
        try:
            return ["".join(c.get("source", "")) for c in json.loads(text).get("cells", [])]
        except (ValueError, AttributeError):
            return [text]
    return [text]


def leaks(files: dict[str, bytes], answers: dict[str, set[tuple[str, ...]]], markers: tuple[str, ...] = ()) -> list[str]:
    """Where answer-side source (or a marker string) appears among ``files`` (name -> bytes)."""
    found = []
    for name, data in sorted(files.items()):
        if "answers" in Path(name).parts[:3] and name.endswith((".py", ".pyc")):
            found.append(f"{name}: an answer-side module")
        for marker in markers:
            if marker.encode() in data:
                found.append(f"{name}: holds {marker!r}")
        for text in _texts(name, data):
            lines = logical_lines(text)
            for src, sig in answers.items():
                for hit in sorted(lines & sig)[:3]:
                    found.append(f"{name}: a line of {src}: {' '.join(hit)[:120]}")
    return found


def _folder_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}


def _ignore(folder: str, names: list[str]) -> set[str]:
    skip = {n for n in names if n in ("__pycache__", ".ipynb_checkpoints") or n.endswith((".pyc", ".egg-info"))}
    if Path(folder).name == "grader":
        skip.add("answers")
        # mutation testing's reviewed equivalents quote reference lines (original/mutated): instructor-only
        skip.add("equivalent_mutants.toml")
    return skip


def build(dest: Path, root: Path = ROOT, markers: tuple[str, ...] = ()) -> Path:
    """The student edition in ``dest``: ``dest/src`` (the exercise side) and ``dest/gpucourse-*.whl``, verified
    (:func:`leaks`) in both forms before anything is kept. Returns the wheel. ``markers``: strings that must not
    appear either (the marker test)."""
    dest = Path(dest)
    src = dest / "src"
    shutil.rmtree(src, ignore_errors=True)
    for old in dest.glob("gpucourse-*.whl"):
        old.unlink()
    src.mkdir(parents=True)
    for name in COPIED:
        path = root / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=_ignore)
        elif path.exists():
            shutil.copy2(path, src / name)
    # the edition's pyproject: the answer side is not a package of it
    pp = src / "pyproject.toml"
    pp.write_text(pp.read_text(encoding="utf-8").replace(', "grader.answers"', ""), encoding="utf-8")
    # visible expected values as data, computed now by the references (the committed ones may be stale)
    for lab in split_labs():
        from .problem import expected_path

        rel = expected_path(importlib.import_module(f"grader.labs.{lab}")).relative_to(ROOT)
        (src / rel).write_text(_expected(lab), encoding="utf-8")
    answers = answer_side(root)
    found = leaks(_folder_files(src), answers, markers)
    if found:
        shutil.rmtree(src, ignore_errors=True)
        raise LeakError("the student edition would contain the answer side:\n  " + "\n  ".join(found[:20]))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(dest), str(src)], capture_output=True, text=True, cwd=dest)
    if built.returncode != 0:
        raise RuntimeError(f"pip wheel failed: {built.stderr[-2000:]}")
    shutil.rmtree(src / "build", ignore_errors=True)
    for info in src.glob("*.egg-info"):
        shutil.rmtree(info, ignore_errors=True)
    wheel = next(dest.glob("gpucourse-*.whl"))
    found = leaks(_wheel_files(wheel), answers, markers)
    if found:
        wheel.unlink()
        raise LeakError("the student edition's wheel would contain the answer side:\n  " + "\n  ".join(found[:20]))
    return wheel
