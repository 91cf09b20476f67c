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
    visible = capsys.readouterr().out
    p.check(lambda x: x * x, hidden=True)
    hidden = capsys.readouterr().out
    assert "✓ square: 1 visible case passed" in visible and "✓ square: 5 hidden cases passed" in hidden
    # a visible check says what it did not prove; the hidden check (run at grading) does not repeat it
    assert "hidden tests with other inputs run when your lab is graded" in visible
    assert "hidden tests" not in hidden
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
    with pytest.raises(CheckFailure, match=r"got None \(did you forget `return`\?\)"):
        expect_tuple("f(2)", None, "flops, bytes")
    with pytest.raises(CheckFailure, match="got int 7$"):
        expect_tuple("f(2)", 7, "flops, bytes")
    with pytest.raises(CheckFailure, match=r"got a tuple of 1: \(1,\)$"):
        expect_tuple("f(2)", (1,), "flops, bytes")


# -- messages that name the real problem (issue 13) ---------------------------------------------------------------

def _message(fn, *args, **kwargs) -> str:
    with pytest.raises(CheckFailure) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_values_that_differ_never_print_the_same():
    # float32 0.3 is not float64 0.3: digits enough to differ, and the dtypes named
    msg = _message(C.expect_equal, "scale", np.float64(0.3), np.float32(0.3))
    assert msg == "scale: expected 0.300000012 (float32), got 0.3 (float64)"
    msg = _message(C.expect_close, "pi", 3.1359612, 3.1359648, rtol=1e-9)
    assert msg.startswith("pi: expected 3.1359648, got 3.1359612 (relative difference 1.1e-06, more than the 1e-09")
    msg = _message(C.expect_close, "t", 999.9996, 1000.0, rtol=1e-9)
    assert "expected 1000, got 999.9996" in msg
    C.expect_equal("n", 1000.0, 1000)  # 1000.0 == 1000 in Python: accepted
    assert _message(C.expect_equal, "n", "1000", 1000) == "n: expected 1,000, got '1000'"


def test_show_pair_digits_and_types():
    assert C.show_pair(0.1 + 0.2, 0.3) == ("0.30000000000000004", "0.3")
    assert C.show_pair(2.0, 2.2) == ("2", "2.2")  # already different: no extra digits
    assert C.show_pair(1000, 1000.0000001) == ("1,000", "1000.0000001")
    assert C.show_pair(np.int32(7), 7.0) == ("7 (int32)", "7.0 (float)")
    # a negative zero prints as 0 (a reader took "expected -0" for a sign to fix), unless the sign is the difference
    assert C.show(-0.0) == "0"
    assert C.show_pair(-0.0, 0.0) == ("-0.0", "0.0")


def test_tuples_of_one_and_thousands_inside_tuples():
    assert C.show((1,)) == "(1,)"
    assert C.show(()) == "()"
    assert C.show((65536, 32768)) == "(65_536, 32_768)"  # a comma would split the numbers
    assert C.show(65536) == "65,536"
    assert C.show(np.zeros((5,), np.float32)) == "array of shape (5,) and dtype float32"
    assert C.show(np.bool_(True)) == "True" and C.show(np.str_("sort")) == "'sort'"


def test_nan_matches_nan_and_infinities_match():
    C.expect_close("x", float("nan"), float("nan"))
    C.expect_equal("x", float("nan"), np.float32("nan"))
    C.expect_close("x", float("inf"), float("inf"))
    assert "expected inf, got -inf" in _message(C.expect_close, "x", float("-inf"), float("inf"))
    ref = np.array([1.0, np.nan, np.inf, -np.inf])
    C.expect_array_close("v", ref.copy(), ref)
    assert "1 of 4 elements are wrong; first at index (1,): expected nan, got 0" in \
        _message(C.expect_array_close, "v", np.array([1.0, 0.0, np.inf, -np.inf]), ref)


def test_int_answers_name_type_overflow_and_float_precision():
    assert _message(C.expect_int, "n", "6", 6) == "n: expected the integer 6, got str '6'"
    assert _message(C.expect_int, "n", (6, 2), 6) == "n: expected the integer 6, got tuple (6, 2)"
    big = 10**20 + 1
    msg = _message(C.expect_int, "bytes", float(big), big)
    assert "expected 100,000,000,000,000,000,001, got 1e+20" in msg and "2**53" in msg and "//" in msg
    with np.errstate(over="ignore"):
        wrapped = np.int64(2**62) * np.int64(4)  # NumPy wraps around
    msg = _message(C.expect_int, "flops", wrapped, 2**64)
    assert "does not fit in int64" in msg and "expected 18,446,744,073,709,551,616, got 0" in msg


def test_array_failures_say_how_many_which_first_and_worst():
    ref = np.arange(12.0).reshape(3, 4)
    bad = ref.copy()
    bad[0, 1] += 0.5
    bad[2, 3] = -100
    msg = _message(C.expect_array_close, "C", bad, ref)
    assert msg == ("C: 2 of 12 elements are wrong; first at index (0, 1): expected 1, got 1.5; "
                   "largest error at index (2, 3): expected 11, got -100")
    # values that differ in the 7th digit are shown with the digits that differ
    close = ref.copy()
    close[1, 1] = 5.0000004
    assert "expected 5, got 5.0000004" in _message(C.expect_array_close, "C", close, ref, rtol=1e-9, atol=0)
    assert "Hint: is it transposed?" in _message(C.expect_array_close, "C", ref.T.copy(), ref)
    msg = _message(C.expect_array_close, "C", ref.astype(np.float64), ref.astype(np.float32), dtype="float32")
    assert msg == "C: expected dtype float32, got float64 (the shape (3, 4) is right)"
    msg = _message(C.expect_array_close, "v", np.zeros(5), np.zeros(4), dtype="float32")
    assert msg == "v shape: expected (4,), got (5,) (and dtype float64, expected float32)"
    mask = np.array([True, False, True])
    C.expect_array_close("m", mask.copy(), mask)
    assert "1 of 3 elements are wrong; first at index (1,): expected False, got True" in \
        _message(C.expect_array_close, "m", np.array([True, True, True]), mask)


def test_a_comparison_that_chokes_is_a_clear_failure():
    p = _square_problem([])
    p.compare = lambda what, got, exp, case: C.expect_int(what, got + 0, exp)  # `+` fails on a str
    msg = _message(p.check, lambda x: "nine")
    assert msg.startswith("square(3): your answer could not be compared with the expected 9 (TypeError")
    assert msg.endswith("you returned str 'nine'")


# -- time limits (issue 13: a visible check must end by itself) ---------------------------------------------------

def _looping_problem(limit: float, budget: float = 50.0) -> Problem:
    p = _square_problem([])
    p.time_limit, p.check_budget = limit, budget
    return p


def _spin(x):
    while True:
        pass


def _swallow(x):  # catches every Exception and goes on looping: the time limit's BaseException gets through
    while True:
        try:
            while True:
                pass
        except Exception:
            pass


@pytest.mark.parametrize("fn", [_spin, _swallow, lambda x: __import__("time").sleep(30)], ids=["spin", "swallow", "sleep"])
def test_a_call_that_never_returns_is_stopped_with_the_case(fn):
    import time

    from grader.problem import CallTimedOut

    start = time.monotonic()
    with pytest.raises(CallTimedOut) as info:
        _looping_problem(0.5).check(fn)
    assert time.monotonic() - start < 5
    assert str(info.value) == ("square did not return within 0.5 s on case square(3); "
                               "does its work grow much faster with the input than it needs to, or is there an "
                               "input where your loop never ends?")


def test_the_time_limit_works_outside_the_main_thread():
    import threading

    from grader.problem import CallTimedOut

    caught = []

    def run():
        try:
            _looping_problem(0.5).check(_spin)
        except CallTimedOut as exc:
            caught.append(str(exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive() and caught and "did not return within 0.5 s" in caught[0]
    # nothing is left behind: cancelling a scheduled exception with NULL once left CPython's eval breaker set,
    # and a traced loop (the SIMT executor's way of running a kernel) then never finished
    import sys
    import time

    start = time.monotonic()
    sys.settrace(lambda frame, event, arg: None)
    try:
        sum(i for i in range(200_000))
    finally:
        sys.settrace(None)
    assert time.monotonic() - start < 10


def test_all_calls_of_one_check_share_a_budget():
    import time

    from grader.problem import CallTimedOut

    p = _looping_problem(limit=0.4, budget=1.0)  # each call alone is within its limit; together they are not
    p.hidden = lambda rng: [Case((i,)) for i in range(10)]
    with pytest.raises(CallTimedOut, match=r"this check's calls took more than 1 s in all"):
        p.check(lambda x: time.sleep(0.3) or x * x, hidden=True)


def test_an_enclosing_alarm_keeps_its_deadline():
    """The grader's re-check worker runs each step under its own SIGALRM; a call's limit nests inside it."""
    import signal
    import time

    signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("step")))
    try:
        signal.alarm(1)
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            _looping_problem(5).call(_spin, Case((3,)))  # the step's 1 s comes first
        assert time.monotonic() - start < 3
        signal.alarm(4)
        _looping_problem(0.2).call(lambda x: x, Case((3,)))
        assert 3 < signal.getitimer(signal.ITIMER_REAL)[0] <= 4  # re-armed with what it had left
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def test_answers_stay_locked_and_restored_around_a_stopped_call():
    from grader.problem import CallTimedOut

    p = _looping_problem(0.3)
    reference = p.reference
    with pytest.raises(CallTimedOut):
        p.check(_swallow)
    assert p.reference is reference  # the lock put the reference back after the timer was off


# -- what the student sees in a notebook: the message, their frames, never the grader's ---------------------------

def test_failure_renders_as_its_message_without_grader_frames():
    from grader import feedback

    p = _square_problem([])
    with pytest.raises(CheckFailure) as info:
        p.check(lambda x: 2 * x)
    lines = info.value._render_traceback_()
    assert len(lines) == 1 and "square(3): expected 9, got 6" in lines[0] and lines[0].startswith(feedback.RED)
    # a long message is wrapped (Validate's dialog does not wrap), the whole of it kept
    long = CheckFailure("f(1): expected 2, got 3. Hint: " + "word " * 60)
    text = "\n".join(long._render_traceback_())
    plain = [line for line in text.replace(feedback.RED, "").replace(feedback.BOLD, "").replace(feedback.RESET, "")
             .splitlines()]
    assert len(plain) > 2 and all(len(line) <= feedback.WIDTH for line in plain)
    assert " ".join(line.strip() for line in plain) == "CheckFailure: " + str(long).strip()


def _student_bug(x):
    table = {1: 1}
    return table[x]  # KeyError for 3


def test_a_student_exception_shows_their_frames_not_the_graders():
    p = _square_problem([])
    with pytest.raises(CheckFailure) as info:
        p.check(_student_bug)
    text = "\n".join(info.value._render_traceback_())
    assert text.splitlines()[0].endswith("square(3) raised KeyError: 3\x1b[0m")
    assert "in _student_bug\n    return table[x]  # KeyError for 3" in text and "KeyError\x1b[0m: 3" in text
    assert "grader/problem.py" not in text and "grader/timelimit.py" not in text and "in check" not in text


def test_a_stopped_call_shows_where_the_loop_was():
    p = _looping_problem(0.3)
    with pytest.raises(CheckFailure) as info:
        p.check(_spin)
    text = "\n".join(info.value._render_traceback_())
    assert "Your code was running here when it was stopped:" in text and "in _spin\n    while True:" in text
    assert "problem.py" not in text


def test_blank_stub_says_it_is_not_written_yet():
    p = _square_problem([])

    def square(x):
        # YOUR CODE HERE
        raise NotImplementedError()

    with pytest.raises(NotImplementedError) as info:
        p.check(square)
    (line,) = info.value._render_traceback_()
    assert "square is not written yet: replace `raise NotImplementedError()`" in line


def test_a_case_reads_as_the_call_it_makes():
    """Arguments print as Python would accept them: 37_125, not 37,125 (which reads as two arguments)."""
    case = Case((37125, 2529, "int8", np.zeros((3, 4), np.float32), (8,), 2.5e12), {"tile": 1000})
    assert case.call_text("gemv_cost") == \
        "gemv_cost(37_125, 2_529, 'int8', <float32 array (3, 4)>, (8,), 2.5e+12, tile=1_000)"
    assert Case((np.float32(0.5),)).call_text("f") == "f(0.5)"
