"""Each lab lists its exercises once (``problems`` in grader/labs/<lab>.py); the cells of every exercise, its
grade ids, heading numbers and the exercise table are derived from that list (grader/exercise_cells.py)."""

from __future__ import annotations

import copy
import json

import pytest

from grader import course, exercise_cells
from grader.pipeline.lab import Lab, nbgrader_meta, source_text
from grader.pipeline.preflight import preflight

LAB = "lab05b_kernel_puzzles"


def _released() -> dict:
    return json.loads((course.ROOT / "labs" / LAB / f"{LAB}.ipynb").read_text(encoding="utf-8"))


def _solution_cells() -> list[dict]:
    nb = json.loads((course.ROOT / "solutions" / LAB / f"{LAB}.ipynb").read_text(encoding="utf-8"))
    return [dict(c, source=source_text(c["source"])) for c in nb["cells"]]


def _gid(cell: dict) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def _names() -> list[str]:
    from grader.labs import lab05b_kernel_puzzles

    return list(lab05b_kernel_puzzles.problems)


def _insert_puzzle(cells: list[dict], before: str, new: str = "clamp_add", copy_of: str = "zip_add") -> list[dict]:
    """A new puzzle ``new`` (the cells of ``copy_of``, renamed) inserted before puzzle ``before``, as an author
    would add one: its heading carries no number yet (sync writes it)."""
    cells = copy.deepcopy(cells)
    mine = [copy.deepcopy(c) for c in cells if (_gid(c) or "").startswith(copy_of)]
    for cell in mine:
        meta = nbgrader_meta(cell)
        meta["grade_id"] = meta["grade_id"].replace(copy_of, new)
        cell["id"] = meta["grade_id"]
        cell["source"] = source_text(cell["source"]).replace(copy_of, new)
        if meta["grade_id"] == f"{new}_intro":
            cell["source"] = "## Puzzle N — Clamp" + cell["source"][cell["source"].index("\n"):]
    at = next(i for i, c in enumerate(cells) if _gid(c) == f"{before}_intro")
    return cells[:at] + mine + cells[at:]


def test_every_lab_follows_its_list_of_exercises():
    assert course.exercise_layout() == []


def test_grade_ids_are_exercise_names_not_positions():
    ids = [_gid(c) for c in _solution_cells() if nbgrader_meta(c).get("solution")]
    assert ids == _names()
    tests = [_gid(c) for c in _solution_cells() if nbgrader_meta(c).get("grade")]
    assert tests == [f"{n}_{kind}" for n in _names() for kind in ("visible", "hidden")]


@pytest.mark.parametrize("damage, message", [
    (lambda cells, i: cells.insert(i["dot"], cells.pop(i["pool3"])), "the answer cells come in the order"),
    (lambda cells, i: cells[i["dot_visible"]].update(source='lab.problems["dot"].check(pool3)'),
     "must be exactly 'lab.problems[\"dot\"].check(dot)'"),
    (lambda cells, i: cells.pop(i["conv1d_hidden"]), "exercise 'conv1d' has no cell 'conv1d_hidden'"),
    (lambda cells, i: nbgrader_meta(cells[i["dot"]]).update(grade_id="ex10_dot"),
     "answer cell 'ex10_dot' is not an exercise"),
    (lambda cells, i: nbgrader_meta(cells[i["map_add_visible"]]).update(points=0), "must be graded with points"),
    (lambda cells, i: cells[i["pool3_intro"]].update(source="## Puzzle 4 — Pooling\n"), "out of step"),
    (lambda cells, i: cells.insert(i["pool3_show"], cells.pop(i["pool3_visible"])), "not in the order"),
])
def test_the_layout_check_names_what_is_out_of_place(damage, message):
    cells = _solution_cells()
    damage(cells, {_gid(c): k for k, c in enumerate(cells) if _gid(c)})
    found = exercise_cells.layout_problems(LAB, cells, _names())
    assert any(message in m for m in found), found


def test_sync_numbers_an_inserted_puzzle_and_everything_after_it():
    cells = _insert_puzzle(_solution_cells(), before="pool3")
    assert exercise_cells.derive(cells)
    titles = [(kind, title) for _, kind, title in exercise_cells.headings(cells)]
    assert titles[8] == ("Puzzle", "Clamp") and titles[9] == ("Puzzle", "Pooling")
    text = {(_gid(c) or ""): source_text(c["source"]) for c in cells}
    assert text["clamp_add_intro"].startswith("## Puzzle 9 — Clamp")
    assert text["pool3_intro"].startswith("## Puzzle 10 — Pooling")
    assert text["softmax_rows_intro"].startswith(f"## Puzzle {len(_names()) + 1} — Softmax rows")
    assert "| 9 | Clamp |\n| 10 | Pooling |" in text["intro"]
    assert not exercise_cells.derive(cells)  # a second sync changes nothing
    assert exercise_cells.layout_problems(LAB, cells, [*_names()[:8], "clamp_add", *_names()[8:]]) == []


def test_a_submission_made_before_an_insertion_is_graded_the_same_after_it():
    """A student's notebook from the release before a puzzle was inserted in the middle: against the new release,
    every answer stays with its exercise, every test cell keeps its id and points, and only the new puzzle is
    reported missing (its answer cell), with no other cell said to be edited or foreign."""
    lab = Lab.find(LAB)
    old = _released()
    answers = {_gid(c): source_text(c["source"]) for c in _solution_cells() if nbgrader_meta(c).get("solution")}
    submission = copy.deepcopy(old)
    for cell in submission["cells"]:
        if _gid(cell) in answers:
            cell["source"] = answers[_gid(cell)]
    new = copy.deepcopy(old)
    new["cells"] = _insert_puzzle(old["cells"], before="pool3")
    exercise_cells.derive(new["cells"])
    data = json.dumps(submission).encode()

    before, before_issues = preflight(data, lab, old)
    after, after_issues = preflight(data, lab, new)
    assert before_issues == []
    assert after_issues == ["missing answer cells (deleted?): clamp_add",
                            "missing locked cells re-added from the lab: clamp_add_intro, clamp_add_show, "
                            "clamp_add_visible, clamp_add_hidden, clamp_add_diagram"]

    def graded(nb: dict) -> dict:
        return {_gid(c): (source_text(c["source"]), nbgrader_meta(c).get("points")) for c in nb["cells"]
                if nbgrader_meta(c).get("solution") or nbgrader_meta(c).get("grade")}

    assert graded(after) == graded(before)
    assert set(answers) <= set(graded(after)) and all(graded(after)[g][0] == answers[g] for g in answers)
    # the headings after the insertion are renumbered in the new release: the submission's old text is replaced
    # by the lab's without a note
    pool = next(c for c in after["cells"] if _gid(c) == "pool3_intro")
    assert source_text(pool["source"]).startswith("## Puzzle 10 — Pooling")


def test_a_notebook_from_the_release_that_numbered_its_exercises_is_graded_by_name():
    """Grade ids carried the exercise's position before (``ex09_pool3``, ``ex09_intro``): such a submission's cells
    are found under today's names, with nothing reported foreign or missing."""
    lab = Lab.find(LAB)
    released = _released()
    answers = {_gid(c): source_text(c["source"]) for c in _solution_cells() if nbgrader_meta(c).get("solution")}
    old = copy.deepcopy(released)
    for cell in old["cells"]:
        gid = _gid(cell)
        for k, name in enumerate(_names(), 1):
            if gid and (gid == name or gid.startswith(name + "_")):
                rest = gid[len(name):]
                nbgrader_meta(cell)["grade_id"] = (f"ex{k:02d}{rest}" if rest in ("_intro", "_show")
                                                   else f"ex{k:02d}_{gid}")
                if gid in answers:
                    cell["source"] = answers[gid]
    assert any(_gid(c) == "ex09_pool3" for c in old["cells"]) and any(_gid(c) == "ex09_intro" for c in old["cells"])
    clean, issues = preflight(json.dumps(old).encode(), lab, released)
    assert issues == []
    got = {_gid(c): source_text(c["source"]) for c in clean["cells"] if nbgrader_meta(c).get("solution")}
    assert got == answers


def test_a_puzzle_has_one_name():
    """The puzzle's problem object, its constant in the lab module, its answer cell and its grade ids share one
    name (``row_sum``: ``ROW_SUM``, ``row_sum``, ``row_sum_visible``)."""
    from grader.labs import lab05b_kernel_puzzles as lab

    for problem in lab.ORDER:
        assert getattr(lab, problem.name.upper()) is problem, problem.name


def test_no_count_of_exercises_is_typed_anywhere():
    """The number of a lab's exercises is derived (headings and the exercise table are written by `grader sync`):
    no README, notebook or test states it as a typed number next to what it counts."""
    import re

    from grader.labs import lab05b_kernel_puzzles as lab

    n = len(lab.problems)
    typed = re.compile(rf"\b{n}\s+(kernel\s+)?(puzzles|exercises)\b")
    files = [course.ROOT / "README.md", *sorted((course.ROOT / "course").glob("*.py")),
             *sorted((course.ROOT / "solutions").glob("*/*.py")), *sorted((course.ROOT / "tests").glob("test_*.py"))]
    found = [f"{p.relative_to(course.ROOT)}: {m.group(0)}" for p in files
             for m in typed.finditer(p.read_text(encoding="utf-8"))]
    assert found == []
