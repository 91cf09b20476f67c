"""Lab 2's references checked against independent implementations (never against themselves)."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import training_memory as tm
from grader.answers import lab02_backprop as answer_side
from grader.labs import lab02_backprop as lab


# -- largest_batch: course §2.7's model, checked against XLA's buffer assignment (issue 21, G1) ----------------------

def _stack_with_bias(params, X, Y):
    """Course §2.7's network: a lax.scan of tanh layers with biases, mean-squared-error loss."""
    import jax
    import jax.numpy as jnp

    def layer(h, p):
        W, b = p
        return jnp.tanh(h @ W + b), None

    h, _ = jax.lax.scan(layer, X, params)
    return jnp.mean((h - Y) ** 2)


def _adam_step(params, m, v, X, Y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    import jax
    import jax.numpy as jnp

    loss, grads = jax.value_and_grad(_stack_with_bias)(params, X, Y)
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    params = jax.tree.map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + eps), params, m, v)
    return params, m, v, loss


def _xla_largest_batch(layers, width, budget):
    """The largest batch XLA's buffer assignment of a donated fp32 Adam step fits in ``budget`` (linear in B)."""
    import jax
    import jax.numpy as jnp

    shapes = (jax.ShapeDtypeStruct((layers, width, width), jnp.float32), jax.ShapeDtypeStruct((layers, width), jnp.float32))
    peaks = []
    for b in (256, 2048):
        xy = jax.ShapeDtypeStruct((b, width), jnp.float32)
        c = tm.compile_for_analysis(_adam_step, shapes, shapes, shapes, xy, xy, donate_argnums=(0, 1, 2))
        peaks.append(tm.xla_peak_bytes(c))
    slope = (peaks[1] - peaks[0]) / (2048 - 256)
    return int((budget - (peaks[0] - 256 * slope)) // slope)


def test_largest_batch_reference_is_the_model_xla_confirms():
    """The graded model with JAX's 3 saved arrays per layer predicts XLA's largest batch for §2.7's network within
    15 % (the course asserts the same on its own network); the old graded model (each activation once, no
    gradients in flight: the hand-written minimum) is off by more than 1.8×."""
    P = lab.problems["largest_batch"]
    P.has_answers()
    for layers, width, budget in [(6, 512, 256 * 2**20), (3, 256, 64 * 2**20), (10, 384, 300 * 2**20)]:
        xla = _xla_largest_batch(layers, width, budget)
        ref = P.reference(layers, width, budget, "float32", "adam", 3)
        assert abs(ref / xla - 1) < 0.15, (layers, width, ref, xla)
        fixed, _ = answer_side._fixed_and_per_example(layers, width, "float32", "adam", 3)
        old = (budget - fixed) // ((2 + layers) * width * 4)
        assert old > 1.8 * xla, (layers, width, old, xla)
    # the case of the review (issue 21, G1): 5,163 by the model, 5,141 by XLA; the old model gave 14,845
    assert P.reference(6, 512, 256 * 2**20, "float32", "adam", 3) == 5163


def test_largest_batch_hidden_cases_cover_the_spec():
    P = lab.problems["largest_batch"]
    cases = P.hidden_cases()
    assert {c.args[3] for c in cases} == set(lab.DTYPES)
    assert {c.args[4] for c in cases} == set(lab.OPTIMIZER_SLOTS)
    assert {c.args[5] for c in cases} >= {1, 2, 3, 4}
    answers = [P.reference(*c.args) for c in cases]
    assert 0 in answers and sum(a > 0 for a in answers) >= 6
    parts = [answer_side._fixed_and_per_example(c.args[0], c.args[1], *c.args[3:]) for c in cases]
    assert any(b > 0 and f + b * p == c.args[2] for c, b, (f, p) in zip(cases, answers, parts)), "a tie"
    assert P.hidden_cases()[0].args == cases[0].args  # seeded: the same cases every time


# -- mlp_backward: by hand, JAX's autodiff refused while it runs -----------------------------------------------------

def test_mlp_backward_refuses_autodiff_and_says_why():
    import jax
    import jax.numpy as jnp

    from grader.checks import CheckFailure

    P = lab.problems["mlp_backward"]
    f = lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2  # noqa: E731

    def by_vjp(X, W1, W2, G):
        _, pull = jax.vjp(f, X, W1, W2)
        dX, dW1, dW2 = pull(G)
        return np.asarray(dW1), np.asarray(dW2), np.asarray(dX)

    def by_internal_vjp(X, W1, W2, G):
        _, pull = jax._src.api.vjp(f, X, W1, W2)
        dX, dW1, dW2 = pull(G)
        return np.asarray(dW1), np.asarray(dW2), np.asarray(dX)

    def by_grad(X, W1, W2, G):
        return tuple(np.asarray(g) for g in jax.grad(lambda W1, W2, X: jnp.sum(f(X, W1, W2) * G),
                                                     argnums=(0, 1, 2))(X, W1, W2))

    for fn in (by_vjp, by_internal_vjp, by_grad):
        with pytest.raises(CheckFailure, match="write the backward pass by hand"):
            P.check(fn)
    assert jax.vjp.__module__.startswith("jax")  # the lock put JAX back


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
    assert sum(verdicts.values()) == 3 and len(verdicts) == 13 == len(answer_side.WHY)
    assert answer_side.VERDICT == verdicts and set(answer_side.CORRECT) == {f for f, ok in verdicts.items() if ok}
    # the lab's intro: random values alone catch every wrong form, even square with a batch above one (shapes
    # matter only when the values are not random)
    square = {form: _agrees(lab.Candidate(form), rng.standard_normal((6, 6)), rng.standard_normal((6, 6)),
                            rng.standard_normal((6, 6))) for form in sorted(lab.FORMS)}
    assert square == verdicts


def test_every_wrong_candidate_is_right_on_the_inputs_its_trap_names():
    """The traps the spec warns of: square + symmetric, a batch of one, same shapes and values, constant inputs of
    any shapes, loose tolerance."""
    rng = np.random.default_rng(12)
    S = rng.standard_normal((4, 4))
    sym = S + S.T  # W square and symmetric; with X = I and dY = W, Xᵀ·dY = W is symmetric too
    one = (rng.standard_normal((1, 3)), rng.standard_normal((3, 5)), rng.standard_normal((1, 5)))
    traps = {"f": (np.eye(4), sym, sym), "b": (np.eye(4), sym, sym), "j": one, "c": one,
             "g": (sym, sym, sym),  # swapped (dX, dW): right when dY·Wᵀ = Xᵀ·dY, as for X = W = dY symmetric
             # misaligned batch rows, the product of the batch sums: right on all-ones inputs, B, d_in, d_out all
             # different (the review's test that passed every other wrong form on shape or value alone)
             **{form: (np.ones((5, 3)), np.ones((3, 4)), np.ones((5, 4))) for form in "klm"}}
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


def test_a_constant_input_tester_fails_visible_and_hidden():
    """Review finding: a tester run once on non-square all-ones inputs must not pass (the visible cases include a
    form right on constant inputs, the hidden ones all three)."""
    from grader.checks import CheckFailure

    def all_ones_tester(backward):
        X, W, dY = np.ones((5, 3)), np.ones((3, 4)), np.ones((5, 4))
        try:
            dW, dX = backward(X, W, dY)
            return bool(np.shape(dW) == W.shape and np.shape(dX) == X.shape
                        and np.allclose(dW, X.T @ dY) and np.allclose(dX, dY @ W.T))
        except Exception:  # noqa: BLE001 - a candidate that crashes is wrong
            return False

    P = lab.problems["is_correct_backward"]
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="not ones or another constant"):
            P.check(all_ones_tester, hidden=hidden)


def test_relu_derivative_at_zero_is_named_in_the_message():
    """Review finding: relu'(0) = 1 fails hidden on the padded-row and dead-unit cases; the message says that every
    wrong element is where Z = X @ W1 is exactly 0, not only which elements are wrong."""
    from grader.checks import CheckFailure

    def heaviside_at_zero(X, W1, W2, G):
        Z = X @ W1
        dZ = (G @ W2.T) * np.heaviside(Z, 1)
        return X.T @ dZ, np.maximum(Z, 0.0).T @ G, dZ @ W1.T

    P = lab.problems["mlp_backward"]
    P.check(heaviside_at_zero)  # the visible cases have no exact zero in Z
    cases = answer_side._mlp_hidden(np.random.default_rng(5))
    padded, dead = cases[-2:]
    for case, name in ((padded, "dX"), (dead, "dW1")):
        with pytest.raises(CheckFailure, match=rf"{name}: .*\n.*relu'\(0\)"):
            lab._compare_mlp("mlp_backward", heaviside_at_zero(*case.args), answer_side._mlp_reference(*case.args),
                             case)
    truth = answer_side._mlp_reference(*padded.args)
    with pytest.raises(CheckFailure) as elsewhere:  # wrong everywhere, not only where Z = 0: no relu'(0) hint
        lab._compare_mlp("mlp_backward", (truth[0], truth[1], 1.1 * truth[2]), truth, padded)
    assert "relu'(0)" not in str(elsewhere.value)
