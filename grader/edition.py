"""The student edition (grader/DESIGN.md, part 2): what students install, without the answer side.

- :func:`write_expected` / :func:`stale_expected`: a split lab's visible expected values as data
  (``grader/labs/<lab>.expected.json``), computed by the references of ``grader/answers/<lab>.py``;
- :func:`build`: ``python -m grader student-edition DEST`` — the exercise side (``gpucourse``,
  ``grader`` without ``grader/answers`` and the instructor's tooling, ``course/``, ``labs/``) copied
  into ``DEST/src`` and a wheel of it into ``DEST``, verified before it is kept: no answer-side
  module, and no line of answer-side source (compared token by token, so a reformatted copy is
  caught too) in any file of the folder or member of the wheel;
- :func:`solution_leaks`: ``python -m grader solution-leaks`` — no solution of ``solutions/`` in
  what students install: no function of a solution cell whose normalised syntax tree (names renamed
  in order of first appearance, docstrings and annotations dropped) equals a function or lambda of
  the edition, and no logical line of 8 or more tokens of a solution block in any of its files.
  :func:`build` refuses an edition that has either.
"""

from __future__ import annotations

import ast
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
    """Labs whose references and generators are still in grader/labs (they ship with the edition
    until split)."""
    return sorted(
        p.stem for p in (ROOT / "grader" / "labs").glob("lab*.py") if p.stem not in split_labs()
    )


def _stored(module: Any) -> dict[str, Any]:
    """The problems of a split lab whose answer side is in grader/answers (a lab may keep some on
    its exercise side: those need no stored expected values, their references are there)."""
    from .problem import _answer_module

    answers = _answer_module(module)
    split = getattr(answers, "ANSWERS", {})
    return {name: p for name, p in module.problems.items() if name in split}


def _expected(lab: str) -> str:
    from .wire import encode

    module = importlib.import_module(f"grader.labs.{lab}")
    data = {name: p.visible_expected() for name, p in _stored(module).items()}
    return json.dumps(encode(data), allow_nan=True, sort_keys=True, indent=1) + "\n"


def write_expected(lab: str) -> Path:
    from .problem import expected_path

    path = expected_path(importlib.import_module(f"grader.labs.{lab}"))
    path.write_text(_expected(lab), encoding="utf-8")
    return path


def stale_expected(lab: str, recompute: bool = False) -> list[str]:
    """What is wrong with a split lab's stored expected values: missing, a problem or case missing,
    and (with ``recompute``: runs every reference on the visible cases) values the references no
    longer give."""
    from .wire import decode
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
        bad.append(
            f"{path.relative_to(ROOT)} differs from what the references give: run python -m grader "
            f"expected {lab}"
        )
    return bad


# -- building the edition --------------------------------------------------------------------------

COPIED = ("gpucourse", "grader", "course", "labs", "README.md", "LICENSE", "pyproject.toml")
# the instructor's tooling: mutation testing and its machinery, the benchmarks (they import the
# answer side, and a student has no use for them)
INSTRUCTOR_ONLY = ("answers", "strength", "mutation.py", "equivalent_mutants.toml", "benchmark.py",
                   "benchmark_grading.py", "benchmark_simt.py")
# a logical line this long is specific enough to say "this is the answer side's code"
MIN_TOKENS = 10
_SKIP = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


class LeakError(RuntimeError):
    """The edition would contain answer-side source: nothing is kept."""


def logical_lines(source: str, min_tokens: int = MIN_TOKENS) -> set[tuple[str, ...]]:
    """Token strings of every logical line of ``source`` with at least ``min_tokens`` tokens,
    imports excepted: the same code reformatted (spacing, line breaks inside brackets, comments)
    gives the same tuples."""
    out: set[tuple[str, ...]] = set()
    line: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NEWLINE or tok.type == tokenize.ENDMARKER:
                if len(line) >= min_tokens and line[0] not in ("import", "from"):
                    out.add(tuple(line))
                line = []
            elif tok.type not in _SKIP:
                line.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # not Python: one "line" per physical line, split on whitespace
        out |= {tuple(ln.split()) for ln in source.splitlines() if len(ln.split()) >= min_tokens}
    return out


def answer_side(root: Path = ROOT) -> dict[str, set[tuple[str, ...]]]:
    """Answer-side file -> its specific logical lines (what must appear nowhere in the edition)."""
    return {str(p.relative_to(root)): logical_lines(p.read_text(encoding="utf-8"))
            for p in sorted((root / "grader" / "answers").glob("*.py"))}


def _texts(name: str, data: bytes) -> list[str]:
    """The source texts of one file of the edition: a notebook's code cells, a text file whole; none
    for binary."""
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


def leaks(
    files: dict[str, bytes], answers: dict[str, set[tuple[str, ...]]], markers: tuple[str, ...] = ()
) -> list[str]:
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
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}


def _ignore(folder: str, names: list[str]) -> set[str]:
    skip = {
        n
        for n in names
        if n in ("__pycache__", ".ipynb_checkpoints") or n.endswith((".pyc", ".egg-info"))
    }
    if Path(folder).name == "grader":
        # the answer side, and the instructor's tooling (mutation testing's reviewed equivalents
        # quote reference lines, original and mutated)
        skip.update(n for n in names if n in INSTRUCTOR_ONLY)
    return skip


def build(dest: Path, root: Path = ROOT, markers: tuple[str, ...] = ()) -> Path:
    """The student edition in ``dest``: ``dest/src`` (the exercise side) and
    ``dest/gpucourse-*.whl``, verified (:func:`leaks`) in both forms before anything is kept.
    Returns the wheel. ``markers``: strings that must not appear either (the marker test)."""
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
    pp.write_text(
        pp.read_text(encoding="utf-8")
        .replace(', "grader.answers"', "")
        .replace(', "grader.strength"', ""),
        encoding="utf-8",
    )
    # visible expected values as data, computed now by the references (the committed ones may be
    # stale)
    for lab in split_labs():
        from .problem import expected_path

        rel = expected_path(importlib.import_module(f"grader.labs.{lab}")).relative_to(ROOT)
        (src / rel).write_text(_expected(lab), encoding="utf-8")
    answers = answer_side(root)
    found = leaks(_folder_files(src), answers, markers) + solution_leaks(_folder_files(src), root)
    if found:
        shutil.rmtree(src, ignore_errors=True)
        raise LeakError(
            "the student edition would contain the answer side:\n  " + "\n  ".join(found[:20])
        )
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dest),
            str(src),
        ],
        capture_output=True,
        text=True,
        cwd=dest,
    )
    if built.returncode != 0:
        raise RuntimeError(f"pip wheel failed: {built.stderr[-2000:]}")
    shutil.rmtree(src / "build", ignore_errors=True)
    for info in src.glob("*.egg-info"):
        shutil.rmtree(info, ignore_errors=True)
    wheel = next(dest.glob("gpucourse-*.whl"))
    found = leaks(_wheel_files(wheel), answers, markers) + solution_leaks(_wheel_files(wheel), root)
    if found:
        wheel.unlink()
        raise LeakError(
            "the student edition's wheel would contain the answer side:\n  "
            + "\n  ".join(found[:20])
        )
    return wheel


# -- no solution in the edition --------------------------------------------------------------------

# a logical line of a solution block this long, found in the edition, is the solution's code
SOLUTION_TOKENS = 8
# a function this small (syntax nodes) says nothing: ``lambda X, W: X @ W`` is 9
SOLUTION_NODES = 16
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# Lines of 8+ tokens that solution blocks share with the course's own cells because the course
# teaches them as idioms, not answers: a CUDA thread's index, the guard of a 2-D kernel, the seeded
# RNG, waiting for JAX's result. A loop header ``for i in range(n):`` is never specific either
# (skipped by its shape).
IDIOMS = (
    "rng = np.random.default_rng(0)",
    "i = cuda.grid(1)",
    "c, r = cuda.grid(2)",
    "tx, ty = cuda.threadIdx.x, cuda.threadIdx.y",
    "if r < a.shape[0] and c < a.shape[1]:",
    "f(x).block_until_ready()",
)


def _idiom(line: tuple[str, ...]) -> bool:
    loop = (
        len(line) == 8
        and line[0] == "for"
        and line[2:5] == ("in", "range", "(")
        and line[6:] == (")", ":")
    )
    return loop or line in _IDIOM_LINES


def _size(fn: ast.AST) -> int:
    return sum(1 for n in ast.walk(fn) if not isinstance(n, ast.expr_context))


def _cells(nb_text: str) -> list[dict[str, Any]]:
    try:
        return json.loads(nb_text).get("cells", [])
    except (ValueError, AttributeError):
        return []


def solution_cells(root: Path = ROOT) -> dict[str, str]:
    """``"<lab>/<grade_id>"`` -> the code of every solution cell of ``solutions/`` (the cells an
    instructor fills; what lies between BEGIN and END SOLUTION is what students must write)."""
    out = {}
    for nb in sorted((root / "solutions").glob("*/*.ipynb")):
        for k, cell in enumerate(_cells(nb.read_text(encoding="utf-8"))):
            meta = cell.get("metadata", {}).get("nbgrader", {})
            src = "".join(cell.get("source", ""))
            if cell.get("cell_type") == "code" and (meta.get("solution") or BEGIN in src):
                out[f"{nb.parent.name}/{meta.get('grade_id', f'cell{k}')}"] = src
    return out


def _python(source: str) -> ast.Module | None:
    """A notebook cell's or a file's code as a tree (IPython's ``%magic`` and ``!shell`` lines
    blanked), or None."""
    lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return None


class _Normalised(ast.NodeTransformer):
    """A function's tree with every name renamed in order of first appearance (v0, v1, ...) and its
    docstrings, bare strings and annotations dropped: the same code with other names, comments or
    types gives the same dump. Attribute names, keywords and constants stay (they are what the code
    *does*)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._rename(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation = self._rename(node.arg), None
        return node

    def _function(self, node: Any) -> ast.AST:
        node.name, node.returns = self._rename(node.name), None
        node.body = [
            b
            for b in node.body
            if not (
                isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)
            )
        ] or [ast.Pass()]
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return ast.Pass()
        return self.visit(ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno))


def normalised(fn: ast.AST) -> str:
    """The dump of a function's (or lambda's) normalised tree (:class:`_Normalised`)."""
    import copy

    return ast.dump(
        _Normalised().visit(copy.deepcopy(fn)), annotate_fields=False, include_attributes=False
    )


def functions(tree: ast.AST) -> list[ast.AST]:
    """Every function definition and lambda in a tree, nested ones included."""
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    ]


def _block_lines(source: str) -> set[int]:
    """Line numbers (1-based) strictly between BEGIN and END SOLUTION."""
    inside, out = False, set()
    for number, line in enumerate(source.splitlines(), 1):
        if BEGIN in line:
            inside = True
        elif END in line:
            inside = False
        elif inside:
            out.add(number)
    return out


def solution_token_lines(source: str, min_tokens: int = SOLUTION_TOKENS) -> set[tuple[str, ...]]:
    """The token strings of every logical line that starts inside a solution block of a cell and has
    at least ``min_tokens`` tokens (comments and layout ignored)."""
    block, out, line, start = _block_lines(source), set(), [], 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if len(line) >= min_tokens and start in block:
                    out.add(tuple(line))
                line = []
            elif tok.type not in _SKIP:
                if not line:
                    start = tok.start[0]
                line.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _edition_code(files: dict[str, bytes]) -> dict[str, list[str]]:
    """name -> the code texts of one file of the edition: a Python file whole, a notebook's code
    cells."""
    out = {}
    for name, data in files.items():
        if name.endswith((".py", ".ipynb")):
            out[name] = _texts(name, data)
    return out


def solution_leaks(files: dict[str, bytes], root: Path = ROOT) -> list[str]:
    """Where a solution of ``solutions/`` appears among ``files`` (name -> bytes: an edition's
    folder or wheel): a function or lambda whose normalised tree equals one of a solution cell's
    functions, or a logical line of 8+ tokens of a solution block in any text file. Each finding
    names the file, the solution cell and the code."""
    solutions = solution_cells(root)
    wanted: dict[str, str] = {}  # normalised dump -> "<lab>/<grade_id>: def name"
    lines: dict[tuple[str, ...], str] = {}
    for where, src in solutions.items():
        tree = _python(src)
        for fn in functions(tree) if tree is not None else []:
            if _size(fn) >= SOLUTION_NODES and _block_lines(src) & set(
                range(fn.lineno, (fn.end_lineno or fn.lineno) + 1)
            ):
                label = getattr(fn, "name", "lambda")
                wanted.setdefault(normalised(fn), f"{where}: {label}")
        for token_line in solution_token_lines(src):
            if not _idiom(token_line):
                lines.setdefault(token_line, where)
    found = []
    for name, texts in sorted(_edition_code(files).items()):
        for text in texts:
            tree = _python(text)
            for fn in functions(tree) if tree is not None else []:
                hit = wanted.get(normalised(fn)) if _size(fn) >= SOLUTION_NODES else None
                if hit:
                    found.append(f"{name}:{fn.lineno}: the solution {hit} (same code, other names)")
    for name, data in sorted(files.items()):
        for text in _texts(name, data):
            for token_line in sorted(logical_lines(text, SOLUTION_TOKENS) & set(lines))[:3]:
                found.append(
                    f"{name}: a line of the solution {lines[token_line]}:"
                    f" {' '.join(token_line)[:120]}"
                )
    return found


def edition_files(root: Path = ROOT) -> dict[str, bytes]:
    """What :func:`build` copies into the edition's folder, read from the checkout (before the build
    runs)."""
    out = {}
    for name in COPIED:
        path = root / name
        if path.is_file():
            out[name] = path.read_bytes()
        elif path.is_dir():
            for sub in sorted(path.rglob("*")):
                rel = sub.relative_to(root)
                if sub.is_file() and not any(_ignore(str(root / Path(*rel.parts[:i])), [part])
                                             for i, part in enumerate(rel.parts)):
                    out[str(rel)] = sub.read_bytes()
    return out


_IDIOM_LINES = set().union(*(logical_lines(line + ("\n    pass" if line.endswith(":") else ""), 1)
                              for line in IDIOMS)) - {("pass",)}
