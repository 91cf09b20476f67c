"""What a submission's outputs may cost (grader/pipeline/output_cap.py), message by message as nbgrader receives
them from the kernel, and on the notebook kept: caps hold, grading signals survive (an error, a piece of stderr),
and the student is told what was cut."""

from __future__ import annotations

import json

import pytest

from grader.pipeline import output_cap as cap


def _msg(kind: str, **content) -> dict:
    return {"msg_type": kind, "header": {"msg_type": kind, "msg_id": "m"}, "parent_header": {"msg_id": "p"},
            "content": content, "metadata": {}}


@pytest.fixture
def execute():
    pytest.importorskip("nbgrader")
    ep = cap.capped_execute_class()()
    ep.reset_execution_trackers()
    ep.clear_before_next_output = False
    return ep


def _kept(outs: list) -> int:
    return sum(cap.payload_bytes(o) for o in outs if "[grader] output truncated" not in str(o.get("text", "")))


def test_a_cell_keeps_its_budget_and_says_what_was_cut(execute):
    outs: list = []
    for _ in range(20):  # 8 MB on stdout, 400 kB at a time
        execute.output(outs, _msg("stream", name="stdout", text="x" * 400_000), None, 0)
    assert _kept(outs) == cap.CELL_OUTPUT_BYTES
    marker = [o for o in outs if "[grader] output truncated" in o.get("text", "")]
    assert len(marker) == 1 and f"{20 * 400_000 - cap.CELL_OUTPUT_BYTES:,}" in marker[0]["text"]
    assert marker[0]["name"] == "stdout", "the marker must not write to stderr (nbgrader scores that 0)"


def test_stderr_and_errors_survive_the_cap(execute):
    outs: list = []
    execute.output(outs, _msg("stream", name="stdout", text="x" * (cap.CELL_OUTPUT_BYTES + 10)), None, 0)
    execute.output(outs, _msg("stream", name="stderr", text="warning: " + "w" * 5_000_000), None, 0)
    execute.output(outs, _msg("error", ename="ValueError", evalue="v" * 1_000_000, traceback=["t" * 100_000] * 3),
                   None, 0)
    stderr = [o for o in outs if o.get("name") == "stderr"]
    assert stderr and 0 < len(stderr[0]["text"]) <= cap.STDERR_KEPT_BYTES  # the cell still wrote to stderr
    (err,) = [o for o in outs if o["output_type"] == "error"]
    assert err["ename"] == "ValueError" and len(err["evalue"]) == cap.ERROR_TEXT_BYTES
    assert all(len(t) <= cap.ERROR_TEXT_BYTES for t in err["traceback"])


def test_rich_output_and_the_notebook_budget(execute):
    outs_by_cell = {}
    for cell in range(12):  # 12 cells x 0.9 MB of HTML: the notebook budget (4 MB) stops the later cells
        outs_by_cell[cell] = outs = []
        execute.output(outs, _msg("display_data", data={"text/html": "z" * 900_000, "text/plain": "<HTML>"},
                                  metadata={}), None, cell)
    total = sum(_kept(o) for o in outs_by_cell.values())
    assert total <= cap.NOTEBOOK_OUTPUT_BYTES
    assert total >= cap.NOTEBOOK_OUTPUT_BYTES - 1_000_000  # every cell that fitted was kept
    assert any("[grader] output truncated" in json.dumps(o) for o in outs_by_cell[11])


def test_a_cleared_cell_gets_its_budget_back(execute):
    outs: list = []
    execute.output(outs, _msg("stream", name="stdout", text="x" * cap.CELL_OUTPUT_BYTES), None, 0)
    execute.clear_output(outs, _msg("clear_output", wait=False), 0)
    assert outs == []
    execute.output(outs, _msg("stream", name="stdout", text="progress 100%"), None, 0)
    assert [o["text"] for o in outs] == ["progress 100%"]


def test_the_kept_notebook_is_capped_whatever_came_before():
    nb = {"cells": [{"cell_type": "code", "source": "print()", "metadata": {}, "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "y" * 3_000_000},
        {"output_type": "error", "ename": "E", "evalue": "e" * 100_000, "traceback": []}]} for _ in range(5)],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    capped, replaced = cap.cap_notebook(nb, limit=4_000_000)
    assert len(json.dumps(capped)) <= 4_000_000 and replaced >= 3
    assert all(any(o["output_type"] == "error" for o in c["outputs"]) for c in capped["cells"]), "an error was removed"
    small = {"cells": [{"cell_type": "code", "source": "", "metadata": {},
                        "outputs": [{"output_type": "stream", "name": "stdout", "text": "ok\n"}]}], "metadata": {}}
    assert cap.cap_notebook(json.loads(json.dumps(small)))[0] == small  # honest notebooks are kept as they are


def test_execute_is_swapped_in_nbgrader_s_own_list():
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    default = Autograde.class_traits()["autograde_preprocessors"].default()
    swapped = cap.capped_preprocessors(default)
    assert Execute in default and Execute not in swapped and len(swapped) == len(default)
    assert issubclass(swapped[default.index(Execute)], Execute)
    with pytest.raises(RuntimeError, match="no longer include Execute"):
        cap.capped_preprocessors([p for p in default if p is not Execute])
