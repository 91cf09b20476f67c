"""While a student's function is checked, the lab's reference answers and the course helpers that would do the
exercise are locked: calling one, or holding one, fails with a clear message; everything is restored after."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from grader.answers import lab01_blas_roofline as answers1
from grader.checks import CheckFailure
from grader.labs import lab01_blas_roofline as lab1
from grader.labs import lab05_kernels as lab5
from grader.labs import lab07_tpu as lab7

LOCKED = "does this exercise for you"
assert all(p.has_answers() for p in lab1.problems.values())  # lab 1 is split: bind its answer side (references)


def own_gemm_cost(m, n, k, dtype, accumulate=False):
    return 2 * m * n * k, (m * k + k * n + (2 if accumulate else 1) * m * n) * np.dtype(dtype).itemsize


def test_an_honest_answer_passes_and_nothing_stays_locked():
    p = lab1.problems["gemm_cost"]
    reference, module_fn, compiled = p.reference, answers1.gemm_cost, gc.xla.compiled
    p.check(own_gemm_cost)
    p.check(own_gemm_cost, hidden=True)
    assert p.reference is reference and answers1.gemm_cost is module_fn and gc.xla.compiled is compiled


def test_calling_the_lab_reference_fails():
    def through_module(m, n, k, dtype):
        return answers1.gemm_cost(m, n, k, dtype)

    def through_problem(m, n, k, dtype):
        return lab1.problems["gemm_cost"].reference(m, n, k, dtype)

    def through_another_exercise(n, dtype):  # another exercise's reference is an answer too
        return lab1.problems["gemm_cost"].reference(1, n, 1, dtype)

    for fn in (through_module, through_problem):
        with pytest.raises(CheckFailure, match=f"gemm_cost calls .*{LOCKED}"):
            lab1.problems["gemm_cost"].check(fn)
    with pytest.raises(CheckFailure, match=LOCKED):
        lab1.problems["axpy_cost"].check(through_another_exercise)
    assert answers1.gemm_cost(1, 1, 1, "float32") == (2, 12)  # restored after a failure


def test_holding_the_reference_fails_before_anything_runs():
    answer = answers1.gemm_cost

    def alias(m, n, k, dtype):
        return answer(m, n, k, dtype)

    def default(m, n, k, dtype, f=lab1.problems["gemm_cost"].reference):
        return f(m, n, k, dtype)

    def helper(m, n, k, dtype):
        return alias(m, n, k, dtype)

    for fn in (alias, default, helper):
        with pytest.raises(CheckFailure, match=f"keeps a reference to .*gemm_cost.*{LOCKED}"):
            lab1.problems["gemm_cost"].check(fn)


def test_course_helpers_that_do_the_exercise_are_locked():
    """Lab 1's counts are locked against XLA's analyses (lab 6's exercise 2 no longer is: it became an inverse question
    whose forward model XLA may compute, tests/test_lab06_xla_sass.py)."""
    compiled = gc.xla.compiled

    def gemm_cost(m, n, k, dtype, accumulate=False):
        return gc.xla.compiled(lambda a, b: a @ b, np.zeros((m, k), dtype), np.zeros((k, n), dtype))

    with pytest.raises(CheckFailure, match=rf"gpucourse.xla.compiled \(counted for you: .*\), which {LOCKED}"):
        lab1.problems["gemm_cost"].check(gemm_cost)
    assert gc.xla.compiled is compiled  # restored


def test_every_forbidden_name_exists():
    """A typo in a lab's ``forbid`` would lock nothing: every name must resolve."""
    from grader.labs import lab02_backprop, lab03_datapath, lab04_streams, lab06_xla_sass

    for lab in (lab1, lab02_backprop, lab03_datapath, lab04_streams, lab5, lab06_xla_sass, lab7):
        for p in lab.problems.values():
            sites = p.answer_sites()
            assert len(sites) >= len(lab.problems) + len(p.forbid)


def test_odd_objects_in_the_students_globals_do_not_break_the_check():
    class Weird:
        def __getattr__(self, name):
            raise RuntimeError("no attributes here")

    weird = Weird()
    numba = pytest.importorskip("numba")

    @numba.njit
    def jitted_gemm(m, n, k, size, c_passes):
        return 2 * m * n * k, (m * k + k * n + c_passes * m * n) * size

    def gemm_cost(m, n, k, dtype, accumulate=False):
        assert weird is not None
        return jitted_gemm(m, n, k, np.dtype(dtype).itemsize, 2 if accumulate else 1)

    lab1.problems["gemm_cost"].check(gemm_cost)

    answer = answers1.gemm_cost

    @numba.njit
    def sneaky(m, n, k):
        return 0

    def through_numba_helper(m, n, k, dtype):
        return sneaky(m, n, k), answer

    with pytest.raises(CheckFailure, match="keeps a reference"):
        lab1.problems["gemm_cost"].check(through_numba_helper)


UNLOCK = '''
def mlp_backward(X, W1, W2, G):
    import gc
    for g in gc.get_objects():  # the suspended lock keeps its originals in its frame: put them back
        if type(g).__name__ == "generator" and g.gi_code.co_name == "locked" and g.gi_frame:
            for owner, attr, old in g.gi_frame.f_locals.get("saved", []):
                if callable(old):
                    setattr(owner, attr, old)
    f = lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2
    _, pullback = jax.vjp(f, X, W1, W2)
    dX, dW1, dW2 = pullback(jnp.asarray(G))
    return np.asarray(dW1), np.asarray(dW2), np.asarray(dX)
'''


def test_a_lock_switched_off_while_the_function_runs_fails_the_check_and_is_flagged():
    """The independent attack of issue 20: the lock's originals, found through the garbage collector in the
    suspended ``locked`` generator's frame, put back from inside the student's call so that jax.vjp works again.
    The lock notices that its tripwires are gone when the call returns, and the preflight flags the cell."""
    import jax
    import jax.numpy as jnp

    from grader.labs import lab02_backprop
    from grader.pipeline.preflight import review_flags

    ns = {"np": np, "jax": jax, "jnp": jnp}
    exec(UNLOCK, ns)
    # the callables put back, jax.vjp trips on the still-locked derivative-rule tables (not callable: left locked)
    with pytest.raises(CheckFailure, match="unlocked|calls jax._src.interpreters.ad.primitive"):
        lab02_backprop.problems["mlp_backward"].check(ns["mlp_backward"])
    nb = {"cells": [{"cell_type": "code", "source": UNLOCK, "metadata": {"nbgrader": {
        "grade_id": "mlp_backward", "solution": True, "grade": False, "locked": False}}}]}
    flags = review_flags(nb)
    assert any("reach into the grading process" in f and "mlp_backward" in f for f in flags), flags


def test_a_tester_that_reads_which_candidate_it_was_given_is_flagged():
    """lab 2's is_correct_backward: a candidate says which form of the pool it runs (it travels as data); an answer
    that reads that instead of testing the candidate is flagged REVIEW for the instructor."""
    from grader.pipeline.preflight import review_flags

    code = 'def is_correct_backward(backward):\n    return getattr(backward, "form", None) in ("a", "d")\n'
    cell = {"cell_type": "code", "source": code.replace('getattr(backward, "form", None)', "backward.form"),
            "metadata": {"nbgrader": {"grade_id": "is_correct_backward", "solution": True}}}
    for source in (cell["source"], code):  # read as an attribute, or by name
        flags = review_flags({"cells": [{**cell, "source": source}]})
        assert any("grader's own objects" in f and "is_correct_backward" in f for f in flags), (source, flags)


def test_reaching_for_the_locks_originals_through_the_problem_is_flagged():
    """The second independent attack: the originals read from ``problems[name].answer_sites()`` (through
    ``sys.modules``) and put back for the call. Flagged REVIEW (a lock is a last resort, section 3 of DESIGN.md)."""
    from grader.pipeline.preflight import review_flags

    code = ('def mlp_backward(X, W1, W2, G):\n    import sys\n'
            '    P = sys.modules["grader.labs.lab02_backprop"].problems["mlp_backward"]\n'
            '    sites = P.answer_sites()\n')
    cell = {"cell_type": "code", "source": code.replace('.problems["mlp_backward"]', ".problems.get('mlp_backward')"),
            "metadata": {"nbgrader": {"grade_id": "mlp_backward", "solution": True}}}
    flags = review_flags({"cells": [cell]})
    assert any("grader's own objects" in f and "mlp_backward" in f for f in flags), flags


def test_a_rule_table_copied_before_the_lock_is_still_locked():
    """The thirteenth attack copied JAX's transpose rules (dict(ad.primitive_transposes)) when its cell ran and
    called them inside mlp_backward: the table's tripwire never saw a lookup, but the call watch knows each rule's
    code."""
    import jax.numpy as jnp
    import numpy as np
    from jax._src.interpreters import ad

    from grader.labs import lab02_backprop as lab

    rules = dict(ad.primitive_transposes)
    p = lab.problems["mlp_backward"]

    def mlp_backward(X, W1, W2, dY):
        import jax

        transpose = rules[jax.lax.dot_general_p]
        ct = np.asarray(transpose(jnp.asarray(dY), ad.UndefinedPrimal(jax.core.ShapedArray(X.shape, X.dtype)),
                                  jnp.asarray(W2), dimension_numbers=(((1,), (0,)), ((), ())), precision=None,
                                  preferred_element_type=None, out_sharding=None)[0])
        return ct, ct, ct

    with pytest.raises(CheckFailure, match="primitive_transposes"):
        p.check(mlp_backward)
