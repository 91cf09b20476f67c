"""Lab 2's references checked against independent implementations (never against themselves)."""

from __future__ import annotations

import numpy as np

from gpucourse import training_memory as tm
from grader.labs import lab02_backprop as lab


def _via_course_estimate(widths, budget, dtype, optimizer):
    """The same memory model, assembled from gpucourse.training_memory (written separately from the lab)."""
    n_params = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    mixed = dtype == "mixed-bf16"
    at = lambda b: tm.estimate(n_params, sum(widths[1:]), b, dtype="float32" if mixed else dtype,  # noqa: E731
                               optimizer=optimizer, io_elems_per_example=widths[0] + widths[-1], mixed=mixed)
    return tm.largest_batch(budget, at)


def _x_twice(widths, budget, dtype, optimizer):
    fixed, per = lab._fixed_and_per_example(widths, dtype, optimizer)
    value = 2 if dtype == "mixed-bf16" else np.dtype(dtype).itemsize
    return max(0, (budget - fixed) // (per + widths[0] * value))


def test_largest_batch_reference_agrees_with_the_course_estimate():
    P = lab.problems["largest_batch"]
    for case in P.visible + P.hidden_cases():
        assert P.reference(*case.args) == _via_course_estimate(*case.args), case.args


def test_largest_batch_hidden_cases_cover_the_spec_and_separate_counting_x_twice():
    P = lab.problems["largest_batch"]
    cases = P.hidden_cases()
    assert {c.args[2] for c in cases} == set(lab.DTYPES)
    assert {c.args[3] for c in cases} == set(lab.OPTIMIZER_SLOTS)
    answers = [P.reference(*c.args) for c in cases]
    assert 0 in answers  # the model alone, or one example, does not fit
    ties = [c for c, b in zip(cases, answers) if b > 0 and
            sum(lab._fixed_and_per_example(c.args[0], c.args[2], c.args[3])) + (b - 1) *
            lab._fixed_and_per_example(c.args[0], c.args[2], c.args[3])[1] == c.args[1]]
    assert ties, "a budget that is met exactly (a total equal to the budget fits)"
    differs = sum(_x_twice(*c.args) != b for c, b in zip(cases, answers))
    assert differs >= 6, f"counting X twice must fail many hidden cases, fails {differs}"
    assert P.hidden_cases()[0].args == cases[0].args  # seeded: the same cases every time
