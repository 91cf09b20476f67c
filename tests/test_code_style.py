"""Issue 24's two rules for the code a maintainer reads, checked on the whole of gpucourse/ and
grader/: no line over 100 characters outside data (JSON, saved SASS listings, markdown table rows),
and no two-letter name that is neither a listed convention nor explained where it is bound."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import names

ROOT = names.ROOT
WIDTH = 100
DATA = {".json", ".sass", ".npz", ".png"}  # data files: their lines are what a tool wrote


def _long_lines(path: Path) -> list[str]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if len(line) > WIDTH and not (path.suffix == ".md" and line.lstrip().startswith("|")):
            out.append(f"{path.relative_to(ROOT)}:{number} ({len(line)} characters)")
    return out


def test_no_line_over_100_characters_outside_data():
    long = []
    for package in names.PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.is_file() and path.suffix not in DATA and "__pycache__" not in path.parts:
                long += _long_lines(path)
    assert not long, f"{len(long)} lines over {WIDTH} characters:\n" + "\n".join(long[:40])


def test_every_two_letter_name_is_a_convention_or_explained_where_it_is_bound():
    bad = names.unexplained()
    assert not bad, (
        "two-letter names with no entry in CONTRIBUTING.md's 'Short names' and no comment where "
        "they are bound (spell the name out, or say what it holds):\n"
        + "\n".join(f"{b.path}:{b.line} {b.name}" for b in bad[:40]))


def test_the_short_names_table_lists_only_names_in_use():
    used = {b.name for package in names.PACKAGES for path in (ROOT / package).rglob("*.py")
            for b in names.bindings(path)}
    listed = names.glossary()
    assert {"np", "xp", "fn", "ws"} <= set(listed)
    assert not set(listed) - used, f"listed but bound nowhere: {sorted(set(listed) - used)}"


def test_the_name_check_catches_an_unexplained_name_and_accepts_a_comment(tmp_path, monkeypatch):
    package = tmp_path / "gpucourse"
    package.mkdir()
    (package / "m.py").write_text(
        "def f(values):\n"
        "    qz = sorted(values)\n"           # unexplained
        "    # the largest value\n"
        "    mx = qz[-1]\n"                   # explained by the comment above
        "    np = 1  # noqa: F811\n"          # a listed convention
        "    rr = mx + np  # noqa: E501\n"    # a linter's comment explains nothing
        "    return rr\n")
    monkeypatch.setattr(names, "ROOT", tmp_path)
    monkeypatch.setattr(names, "PACKAGES", ("gpucourse",))
    monkeypatch.setattr(names, "GLOSSARY", ROOT / "CONTRIBUTING.md")
    assert [(b.name, b.line) for b in names.unexplained()] == [("qz", 2), ("rr", 6)]
    ast.parse((package / "m.py").read_text())


def _helpers_students_call() -> dict[str, object]:
    """Every ``gc.<module>.<name>`` and ``gc.<name>`` the lab notebooks' code uses, as objects."""
    import re

    import gpucourse as gc

    found = {}
    for path in sorted((ROOT / "solutions").glob("*/*.py")):
        for name in re.findall(r"\bgc\.([a-z_]+(?:\.[A-Za-z_]+)?)\b", path.read_text(encoding="utf-8")):
            obj = gc
            for part in name.split("."):
                obj = getattr(obj, part)
            if callable(obj):
                found[name] = obj
    return found


def test_helpers_students_call_say_what_they_take_and_give():
    """Issue 24: a helper a lab's code calls has a one-line summary, and an ``Args:`` list naming
    each parameter, and (a function) a ``Returns:`` entry."""
    import inspect

    helpers = _helpers_students_call()
    assert len(helpers) >= 25, sorted(helpers)
    missing = []
    for name, obj in sorted(helpers.items()):
        doc = inspect.getdoc(obj) or ""
        summary = doc.split("\n\n", 1)[0]
        params = [p for p in inspect.signature(obj).parameters
                  if p not in ("self", "args", "kwargs", "tiny_args", "jit_kwargs")]
        args = doc.split("Args:", 1)[1].split("Returns:", 1)[0] if "Args:" in doc else ""
        if not summary or summary.startswith(name.rsplit(".", 1)[-1] + "("):
            missing.append(f"gc.{name}: no summary line")
        lost = [p for p in params if p not in args]
        if lost:
            missing.append(f"gc.{name}: Args: does not name {', '.join(lost)}")
        if not inspect.isclass(obj) and "Returns:" not in doc:
            missing.append(f"gc.{name}: no Returns:")
    assert not missing, "\n".join(missing)
