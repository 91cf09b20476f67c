"""Lab 1's model exercises name the mistake a wrong answer's number shows (review m3, m4): a gemv counted as n²
elements in min_size_for_fraction, an intensity exactly at the ridge called memory-bound in explain_point."""

from __future__ import annotations

import pytest

from grader.answers import lab01_blas_roofline as answers
from grader.checks import CheckFailure
from grader.labs import lab01_blas_roofline as lab

# the gemv's bytes as n² elements (x and y dropped), the rest right
N_SQUARED = '''
def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    size = np.dtype(dtype).itemsize
    n = 1
    while True:
        flops, elements = (2 * n * n, n * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        t = max(flops / peak_flops, elements * size / bandwidth)
        if t / (overhead_s + t) >= fraction:
            return n
        n += 1
'''

# the tie at the ridge called memory-bound, the rest right
RIDGE_MEMORY = '''
def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    intensity, achieved = flops / nbytes, flops / seconds
    if achieved > peak_flops:
        return "impossible"
    dram = intensity * bandwidth
    if achieved > dram:
        if working_set <= cache_bytes or achieved * (1 - cache_bytes / working_set) <= dram:
            return "cache"
        return "impossible"
    return "memory-bound" if intensity <= peak_flops / bandwidth else "compute-bound"
'''


def _fn(source: str, name: str):
    import numpy as np

    namespace = {"np": np}
    exec(source, namespace)
    return namespace[name]


@pytest.mark.parametrize("hidden", [False, True])
def test_a_gemv_counted_as_n_squared_elements_is_told_to_count_x_and_y(hidden):
    with pytest.raises(CheckFailure) as err:
        lab.SIZE_FOR_FRACTION.check(_fn(N_SQUARED, "min_size_for_fraction"), hidden=hidden)
    assert "count the gemv's bytes as in exercise 1: n² + 2n elements" in str(err.value)
    if not hidden:
        assert "expected 8,681, got 8,682" in str(err.value)


def test_the_n_squared_answers_the_cases_carry_are_the_answer_sides():
    """The visible gemv case's written-down n² answer is what the answer side computes; every hidden gemv case
    carries one; the hint needs the answer to be that number (an answer off the other way gets the general hint)."""
    n_squared = {"gemv": lambda n: (2 * n * n, n * n)}
    gemvs = [c for c in lab.SIZE_FOR_FRACTION.visible if c.args[0] == "gemv"]
    assert gemvs and all(c.args[0].n_squared == answers.min_size_for_fraction(*c.args, _counts=n_squared) for c in gemvs)
    hidden = [c for c in lab.SIZE_FOR_FRACTION.hidden_cases() if c.args[0] == "gemv"]
    assert hidden and all(c.args[0].n_squared == answers.min_size_for_fraction(*c.args, _counts=n_squared) for c in hidden)
    case = gemvs[0]
    with pytest.raises(CheckFailure) as err:
        lab.SIZE_FOR_FRACTION.compared(case.args[0].n_squared - 2, 8681, case)
    assert "n² + 2n" not in str(err.value)


@pytest.mark.parametrize("hidden", [False, True])
def test_explain_point_names_the_tie_rule_at_the_ridge(hidden):
    fn = _fn(RIDGE_MEMORY, "explain_point")
    if not hidden:  # no visible case sits on the ridge
        lab.EXPLAIN.check(fn)
        case = lab.Case((2.0**33, 2.0**30, 2.0**-2, 2.0**36, 2.0**33, 2.0**31, 2.0**25))
        with pytest.raises(CheckFailure) as err:
            lab.EXPLAIN.compared("memory-bound", "compute-bound", case)
    else:
        with pytest.raises(CheckFailure) as err:
            lab.EXPLAIN.check(fn, hidden=True)
    assert "at or above the ridge, compute-bound" in str(err.value)
