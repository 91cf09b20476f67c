"""The re-check's steps (grader/pipeline/steps.py): typed records that travel to the worker as plain
data and come back the same."""

from __future__ import annotations

import json

import pytest

from grader.pipeline.steps import KINDS, After, Call, End, Exec, from_wire, to_wire


@pytest.mark.parametrize("step", [
    Exec("setup", "import numpy as np", student=False),
    Exec("(student cell)", "def f(x):\n    return x", student=True),
    Call("f_visible", "f", "f", hidden=False, index=2),
    Call("k_hidden", "k", "k", hidden=True, index=0, case={"__tuple__": [1, 2]}, observe=True),
    After("time_call_hidden", "time_call", "time_call", hidden=True),
    End("f_visible"),
    End("sass_counts_hidden", kernel_only=True),
], ids=lambda s: f"{s.kind}-{s.label}")
def test_a_step_survives_the_wire(step):
    data = json.loads(json.dumps(to_wire(step)))  # what the worker reads: JSON-plain data
    assert data["kind"] == step.kind
    assert from_wire(data) == step


def test_every_kind_is_on_the_wire_and_labels_its_cell():
    assert set(KINDS) == {"exec", "call", "after", "end"}
    assert Exec("ex1", "", student=True).label == "ex1"
    assert Call("ex1_hidden", "f", "f", hidden=True, index=0).label == "ex1_hidden"


@pytest.mark.parametrize("data, match", [
    ({"kind": "shell", "cell": "x"}, "unknown step kind 'shell'"),
    ({"cell": "x"}, "unknown step kind None"),
    ({"kind": "end", "test": "t", "points": 3}, "points"),
])
def test_a_malformed_step_is_refused(data, match):
    with pytest.raises((ValueError, TypeError), match=match):
        from_wire(data)


def test_steps_are_records_not_dicts():
    step = Call("t", "f", "f", hidden=False, index=0)
    with pytest.raises(TypeError):
        step["kind"]  # the old dict steps: a reader must use the fields
    with pytest.raises(AttributeError):
        step.index = 1  # frozen: the grader's plan cannot be changed on the way
