"""Two-letter names in gpucourse/ and grader/: each is a convention listed in CONTRIBUTING.md's
table of short names, or explained by a comment where it is bound (on its line or the line above).
Used by tests/test_code_style.py."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gpucourse", "grader")
GLOSSARY = ROOT / "CONTRIBUTING.md"


@dataclass(frozen=True)
class Binding:
    name: str
    path: str
    line: int


def glossary() -> dict[str, str]:
    """name -> meaning, from the rows of CONTRIBUTING.md's "Short names" table
    (`` | `np` | NumPy | ``)."""
    text = GLOSSARY.read_text(encoding="utf-8")
    section = text.split("## Short names", 1)[1].split("\n## ", 1)[0]
    out = {}
    for row in re.finditer(r"^\| ([^|]+) \| ([^|]+) \|$", section, re.M):
        for name in re.findall(r"`(\w+)`", row.group(1)):
            out[name] = row.group(2).strip()
    return out


def bindings(path: Path) -> list[Binding]:
    """Every place a name of exactly two characters is bound: an assignment or loop target, an
    argument, a function or class, an import alias, an ``except ... as``, a ``with ... as``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = str(path.relative_to(ROOT))
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.alias):
            names.append(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.append(node.name)
        # `_c`: a one-letter name made private, not a two-letter one
        out += [Binding(n, rel, node.lineno) for n in names if len(n) == 2 and not n.startswith("_")]
    return out


def _comments(path: Path) -> dict[int, tuple[str, bool]]:
    """line -> (comment text, whether the comment is the whole line), from the tokenizer (a # in a
    string is no comment)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            row = token.start[0]
            out[row] = (token.string, lines[row - 1].lstrip().startswith("#"))
    return out


LINTER = re.compile(r"#\s*(noqa|type:|pragma|fmt:)")


def commented(comments: dict[int, tuple[str, bool]], line: int) -> bool:
    """A comment on the binding's line, or a comment line right above it, that is not a linter's."""
    here, above = comments.get(line), comments.get(line - 1)
    explains_here = here is not None and not LINTER.match(here[0])
    explains_above = above is not None and above[1] and not LINTER.match(above[0])
    return bool(explains_here or explains_above)


def unexplained() -> list[Binding]:
    known = glossary()
    bad = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            comments = _comments(path)
            for b in bindings(path):
                if b.name not in known and not commented(comments, b.line):
                    bad.append(b)
    return bad
