"""Lab 2's references checked against independent implementations (never against themselves)."""

from __future__ import annotations

import numpy as np

from gpucourse import training_memory as tm
from grader.answers import lab02_backprop as answer_side
from grader.labs import lab02_backprop as lab


def _via_course_estimate(widths, budget, dtype, optimizer):
    """The same memory model, assembled from gpucourse.training_memory (written separately from the lab)."""
    n_params = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    mixed = dtype == "mixed-bf16"
    at = lambda b: tm.estimate(n_params, sum(widths[1:]), b, dtype="float32" if mixed else dtype,  # noqa: E731
                               optimizer=optimizer, io_elems_per_example=widths[0] + widths[-1], mixed=mixed)
    return tm.largest_batch(budget, at)


def _x_twice(widths, budget, dtype, optimizer):
    fixed, per = answer_side._fixed_and_per_example(widths, dtype, optimizer)
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
            sum(answer_side._fixed_and_per_example(c.args[0], c.args[2], c.args[3])) + (b - 1) *
            answer_side._fixed_and_per_example(c.args[0], c.args[2], c.args[3])[1] == c.args[1]]
    assert ties, "a budget that is met exactly (a total equal to the budget fits)"
    differs = sum(_x_twice(*c.args) != b for c, b in zip(cases, answers))
    assert differs >= 6, f"counting X twice must fail many hidden cases, fails {differs}"
    assert P.hidden_cases()[0].args == cases[0].args  # seeded: the same cases every time


# -- is_correct_backward: the verdicts (answer side) against jax.vjp; each wrong form's trap -------------------------

def _vjp_truth(X, W, dY):
    """(dW, dX) of Y = X @ W by jax.vjp (float64 inputs, float32 math: compared with a float32 tolerance)."""
    import jax
    import jax.numpy as jnp

    _, vjp = jax.vjp(lambda X, W: X @ W, jnp.asarray(X, jnp.float32), jnp.asarray(W, jnp.float32))
    dX, dW = vjp(jnp.asarray(dY, jnp.float32))
    return np.asarray(dW), np.asarray(dX)


def _agrees(candidate, X, W, dY) -> bool:
    truth = _vjp_truth(X, W, dY)
    try:
        got = candidate(X, W, dY)
    except Exception:  # noqa: BLE001 - a candidate whose products do not fit these shapes is wrong here
        return False
    return all(np.shape(g) == t.shape and np.allclose(g, t, rtol=1e-4, atol=1e-5) for g, t in zip(got, truth))


def test_every_candidate_verdict_agrees_with_jax_vjp_on_non_square_inputs():
    rng = np.random.default_rng(11)
    verdicts = {}
    for form in sorted(lab.FORMS):
        c = lab.Candidate(form)
        right = all(_agrees(c, rng.standard_normal((b, i)), rng.standard_normal((i, o)), rng.standard_normal((b, o)))
                    for b, i, o in [(5, 3, 4), (7, 9, 2), (3, 6, 11)])  # B, d_in, d_out all different
        assert answer_side.is_correct_backward(c) == right, (form, answer_side.WHY[form])
        verdicts[form] = right
    assert sum(verdicts.values()) == 3 and len(verdicts) == 10 == len(answer_side.WHY)
    assert answer_side.VERDICT == verdicts and set(answer_side.CORRECT) == {f for f, ok in verdicts.items() if ok}


def test_every_wrong_candidate_is_right_on_the_inputs_its_trap_names():
    """The traps the spec warns of: square + symmetric, a batch of one, same shapes and values, loose tolerance."""
    rng = np.random.default_rng(12)
    S = rng.standard_normal((4, 4))
    sym = S + S.T  # W square and symmetric; with X = I and dY = W, Xᵀ·dY = W is symmetric too
    one = (rng.standard_normal((1, 3)), rng.standard_normal((3, 5)), rng.standard_normal((1, 5)))
    traps = {"f": (np.eye(4), sym, sym), "b": (np.eye(4), sym, sym), "j": one, "c": one,
             "g": (sym, sym, sym)}  # swapped (dX, dW): right when dY·Wᵀ = Xᵀ·dY, as for X = W = dY symmetric
    for form in sorted(set(lab.FORMS) - set(answer_side.CORRECT)):
        c = lab.Candidate(form)
        if form in traps:
            X, W, dY = traps[form]
            assert _agrees(c, X, W, dY), (form, answer_side.WHY[form])
        else:  # the near misses: within 2 % of the truth's scale (e), or 11 % (i), but not within 1e-4
            X, W, dY = rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
            got, truth = c(X, W, dY), _vjp_truth(X, W, dY)
            err = max(np.max(np.abs(g - t)) / np.max(np.abs(t)) for g, t in zip(got, truth))
            assert 1e-3 < err < 0.2, (form, err)
