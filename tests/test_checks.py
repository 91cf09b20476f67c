"""Shared check functions and the Problem shape: clear messages, deterministic hidden cases."""

from __future__ import annotations

import numpy as np
import pytest

from grader import Case, CheckFailure, Problem
from grader import checks as C


def test_messages_say_expected_and_got():
    with pytest.raises(CheckFailure, match=r"^gemm flops: expected 65,536, got 32,768$"):
        C.expect_int("gemm flops", 32768, 65536)
    with pytest.raises(CheckFailure, match="expected 2.2, got 2"):
        C.expect_close("x", 2.0, 2.2)


def test_int_accepts_numpy_and_integral_floats_but_not_bools_or_none():
    C.expect_int("n", np.int64(6), 6)
    C.expect_int("n", 6.0, 6)
    with pytest.raises(CheckFailure, match="forget `return`"):
        C.expect_int("n", None, 6)
    with pytest.raises(CheckFailure):
        C.expect_int("n", True, 1)
    with pytest.raises(CheckFailure):
        C.expect_int("n", 6.5, 6)


def test_close_tolerates_float_precision_only():
    C.expect_close("t", 1.0 + 1e-9, 1.0)
    with pytest.raises(CheckFailure):
        C.expect_close("t", 1.01, 1.0)
    with pytest.raises(CheckFailure, match="expected a number"):
        C.expect_close("t", "fast", 1.0)


def test_choice_reports_invalid_and_wrong_answers():
    with pytest.raises(CheckFailure, match="expected one of 'memory', 'compute', got 'io'"):
        C.expect_choice("bound", "io", "memory", ("memory", "compute"))
    with pytest.raises(CheckFailure, match="expected 'memory', got 'compute'"):
        C.expect_choice("bound", "compute", "memory", ("memory", "compute"))


def test_array_close_uses_dtype_precision_and_points_at_the_first_bad_element():
    ref = np.arange(12.0).reshape(3, 4)
    C.expect_array_close("C", ref.astype(np.float32) * (1 + 1e-5), ref)
    bad = ref.copy()
    bad[1, 2] = -1
    with pytest.raises(CheckFailure, match=r"1 of 12 elements are wrong; first at index \(1, 2\): expected 6, got -1"):
        C.expect_array_close("C", bad, ref)
    with pytest.raises(CheckFailure, match=r"C shape: expected \(3, 4\), got \(4, 3\)"):
        C.expect_array_close("C", ref.T, ref)
    nan = ref.copy()
    nan[0, 0] = np.nan
    with pytest.raises(CheckFailure):
        C.expect_array_close("C", nan, ref)


def _square_problem(hidden_calls: list) -> Problem:
    def hidden(rng):
        hidden_calls.append(1)
        return [Case((int(rng.integers(0, 10**6)),)) for _ in range(5)]

    return Problem(
        name="square",
        spec="square(x) -> x*x",
        reference=lambda x: x * x,
        visible=[Case((3,))],
        hidden=hidden,
        compare=lambda what, got, exp, case: C.expect_int(what, got, exp),
    )


def test_problem_checks_visible_and_hidden_cases(capsys):
    p = _square_problem([])
    p.check(lambda x: x * x)
    p.check(lambda x: x * x, hidden=True)
    out = capsys.readouterr().out
    assert "✓ square: 1 visible case passed" in out and "✓ square: 5 hidden cases passed" in out
    with pytest.raises(CheckFailure, match=r"square\(3\): expected 9, got 6"):
        p.check(lambda x: 2 * x)


def test_hidden_cases_are_seeded_by_name():
    p = _square_problem([])
    assert p.hidden_cases() == p.hidden_cases()
    q = _square_problem([])
    q.name = "cube"
    assert [c.args for c in q.hidden_cases()] != [c.args for c in p.hidden_cases()]


def test_blank_stub_errors_propagate_unchanged():
    p = _square_problem([])

    def stub(x):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError):
        p.check(stub)


def test_student_exceptions_become_clear_failures():
    p = _square_problem([])
    with pytest.raises(CheckFailure, match=r"square\(3\) raised ZeroDivisionError"):
        p.check(lambda x: x / 0)
    with pytest.raises(CheckFailure, match="expected a function"):
        p.check(42)


def test_show_prints_spec_and_example(capsys):
    _square_problem([]).show()
    out = capsys.readouterr().out
    assert "square(x) -> x*x" in out and "Example: square(3)  ->  9" in out


def test_expect_tuple_names_the_values_and_the_count():
    from grader.checks import expect_tuple

    assert expect_tuple("f(2)", [1, 2], "flops, bytes") == (1, 2)
    with pytest.raises(CheckFailure, match=r"expected a tuple \(flops, bytes\), got a tuple of 3"):
        expect_tuple("f(2)", (1, 2, 3), "flops, bytes")
    with pytest.raises(CheckFailure, match=r"got NoneType \(did you forget `return`\?\)"):
        expect_tuple("f(2)", None, "flops, bytes")
    with pytest.raises(CheckFailure, match="got int"):
        expect_tuple("f(2)", 7, "flops, bytes")
