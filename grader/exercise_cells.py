"""The cells each exercise has in its lab's solution notebook, derived from the one list of the
lab's exercises.

A lab's exercises are listed once: ``problems`` in ``grader/labs/<lab>.py`` (a dict, in notebook
order). Every exercise ``NAME`` then has, in the solution notebook and in this order:

    NAME_intro     markdown, the exercise's text
                   ("## Exercise N — title" or "## Puzzle N — title" on top)
    NAME_show      code, shows the problem: ``lab.problems["NAME"].show()``
    NAME           the answer cell (nbgrader solution), defining ``NAME``
    NAME_visible   test cell, exactly ``lab.problems["NAME"].check(NAME)``
    NAME_hidden    test cell, the same with ``hidden=True`` inside nbgrader's hidden-test markers
    NAME_diagram   optional, exactly ``lab.problems["NAME"].diagram(NAME)``

Grade ids are names, never positions: inserting an exercise changes no other exercise's cells, so a
notebook submitted before the insertion is graded the same after it. What *is* positional — the
number in each heading and the table of exercises between ``<!-- exercise table -->`` and ``<!-- end
exercise table -->`` — is written by ``python -m grader sync`` (:func:`derive`), and ``python -m
grader check`` reports a notebook whose cells do not follow the list (:func:`layout_problems`).
"""

from __future__ import annotations

import re

VISIBLE = 'lab.problems["{name}"].check({name})'
HIDDEN = (
    '### BEGIN HIDDEN TESTS\nlab.problems["{name}"].check({name}, hidden=True)\n### END HIDDEN'
    ' TESTS'
)
DIAGRAM = 'lab.problems["{name}"].diagram({name})'
# the show cell names its problem (and may print more after .show())
SHOW = 'lab.problems["{name}"]'

# "## Exercise 3 — title" / "## Puzzle 12 — title": the number is the exercise's place among the
# headings
HEADING = re.compile(r"^## (Exercise|Puzzle) (\d+|N) — (.+)$")
TABLE_START, TABLE_END = "<!-- exercise table -->", "<!-- end exercise table -->"


def _gid(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def headings(cells: list[dict]) -> list[tuple[int, str, str]]:
    """(cell index, kind, title) of every exercise heading, in notebook order."""
    found = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        match = HEADING.match(_text(cell).split("\n", 1)[0])
        if match:
            found.append((i, match.group(1), match.group(3)))
    return found


def derive(cells: list[dict]) -> bool:
    """Write what the cell order determines: heading numbers (1, 2, … in order) and the exercise
    table. Changes ``cells`` in place; True when anything changed."""
    changed = False
    found = headings(cells)
    for number, (i, kind, title) in enumerate(found, 1):
        first, _, rest = _text(cells[i]).partition("\n")
        new = f"## {kind} {number} — {title}" + (
            "\n" + rest if rest or _text(cells[i]).endswith("\n") else ""
        )
        if new != _text(cells[i]):
            cells[i]["source"], changed = new, True
    rows = "\n".join(f"| {n} | {title} |" for n, (_, _, title) in enumerate(found, 1))
    kind = found[0][1].lower() if found else "exercise"
    table = f"{TABLE_START}\n| # | {kind} |\n|---|---|\n{rows}\n{TABLE_END}"
    for cell in cells:
        text = _text(cell)
        if cell.get("cell_type") == "markdown" and TABLE_START in text and TABLE_END in text:
            before, _, after = text.partition(TABLE_START)
            new = before + table + after.partition(TABLE_END)[2]
            if new != text:
                cell["source"], changed = new, True
    return changed


def layout_problems(lab: str, cells: list[dict], names: list[str]) -> list[str]:
    """What is wrong with the solution notebook's cells of ``lab`` for its exercises ``names`` (in
    order)."""
    out = []
    at: dict[str, int] = {}
    for i, cell in enumerate(cells):
        gid = _gid(cell)
        if gid in at:
            out.append(f"{lab}: grade_id {gid!r} appears twice")
        elif gid:
            at[gid] = i
    answers = [_gid(c) for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    for gid in answers:
        if gid not in names:
            out.append(
                f"{lab}: answer cell {gid!r} is not an exercise of grader/labs/{lab}.py's problems "
                "(its grade_id must be the exercise's name)"
            )
    listed = [gid for gid in answers if gid in names]
    if listed != [n for n in names if n in listed]:
        out.append(f"{lab}: the answer cells come in the order {listed}, the lab lists {names}")
    for name in names:
        want = {"_intro": None, "_show": SHOW, "": None, "_visible": VISIBLE, "_hidden": HIDDEN}
        if f"{name}_diagram" in at:
            want["_diagram"] = DIAGRAM
        places = []
        for suffix, template in want.items():
            gid = name + suffix
            if gid not in at:
                out.append(f"{lab}: exercise {name!r} has no cell {gid!r}")
                continue
            places.append(at[gid])
            cell, text = cells[at[gid]], _text(cells[at[gid]]).strip()
            if template is None:
                continue
            expected = template.format(name=name)
            if suffix == "_show" and expected not in text or suffix != "_show" and text != expected:
                out.append(
                    f"{lab}: cell {gid!r} must {'name' if suffix == '_show' else 'be exactly'} "
                    f"{expected!r}, it is {text[:80]!r}"
                )
            grade = cell.get("metadata", {}).get("nbgrader", {})
            if suffix in ("_visible", "_hidden") and not (
                grade.get("grade") and grade.get("points", 0) > 0
            ):
                out.append(f"{lab}: test cell {gid!r} must be graded with points")
        if places != sorted(places):
            out.append(
                f"{lab}: the cells of {name!r} are not in the order {[name + s for s in want]}"
            )
        intro = cells[at[name + "_intro"]] if name + "_intro" in at else None
        if intro is not None and intro.get("cell_type") != "markdown":
            out.append(f"{lab}: {name}_intro must be a markdown cell")
    scratch = [dict(c, source=_text(c)) for c in cells]
    if derive(scratch):
        out.append(
            f"{lab}: heading numbers or the exercise table are out of step (run `python -m grader"
            " sync`)"
        )
    return out
