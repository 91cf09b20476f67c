"""Lab 2 — backprop as GEMMs, training FLOPs and training memory: the problems.

Conventions the specs share (the course notebook derives them):
- Row convention: a batch X has shape (B, d_in), a weight W has shape (d_in, d_out), Y = X @ W.
  Then dW = Xᵀ·dY and dX = dY·Wᵀ.
- FLOPs: one multiply-add = 2 FLOPs; a GEMM (m, k)·(k, n) costs 2·m·k·n. Elementwise work is not counted.
- Bytes: ``np.dtype(dtype).itemsize`` per element.

This module is the lab's *exercise side* (specs, visible cases, comparisons, checks, the course helpers the specs
name: what students install); the references and hidden-case generators are its answer side,
grader/answers/lab02_backprop.py (the instructor's only; grader/DESIGN.md). The visible cases' expected values
ship as data: lab02_backprop.expected.json.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..checks import (
    CheckFailure, expect_array_close, expect_choice, expect_equal, expect_int, expect_tuple, expect_type,
)
from ..problem import Case, Problem

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}


# -- Exercise 1: the backward pass of a 2-layer MLP, by hand ----------------------------------------------------------

def _against_jax(fn: Callable[..., Any], hidden: bool) -> str:
    """Run the student's function on one more non-square case and compare with jax.vjp (float32)."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(7 if hidden else 3)
    case = _mlp_case(rng, 6, 5, 8, 3)
    f = lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2  # noqa: E731
    _, vjp = jax.vjp(f, *(jnp.asarray(a, dtype=jnp.float32) for a in case.args[:3]))
    dX, dW1, dW2 = vjp(jnp.asarray(case.args[3], dtype=jnp.float32))
    got = fn(*case.args)
    _compare_mlp("mlp_backward on a (6×5)·(5×8)·(8×3) MLP vs jax.vjp", got, tuple(np.asarray(a) for a in (dW1, dW2, dX)),
                 case, rtol=2e-4)
    return "\n  and agrees with jax.vjp"


def _mlp_case(rng: np.random.Generator, b: int, d_in: int, h: int, d_out: int) -> Case:
    X = rng.standard_normal((b, d_in))
    W1 = rng.standard_normal((d_in, h)) / np.sqrt(d_in)
    W2 = rng.standard_normal((h, d_out)) / np.sqrt(h)
    G = rng.standard_normal((b, d_out))
    return Case((X, W1, W2, G))


def _compare_mlp(what: str, got: Any, expected: tuple[np.ndarray, ...], case: Case, rtol: float = 1e-6) -> None:
    expect_tuple(what, got, "dW1, dW2, dX")
    Z = np.asarray(case.args[0]) @ np.asarray(case.args[1])
    for name, g, e in zip(("dW1", "dW2", "dX"), got, expected):
        try:
            expect_array_close(f"{what} → {name}", g, e, rtol=rtol)
        except CheckFailure as failure:
            raise CheckFailure(f"{failure}{_relu_kink_hint(name, g, e, Z, rtol)}") from None


def _relu_kink_hint(name: str, got: Any, expected: np.ndarray, Z: np.ndarray, rtol: float) -> str:
    """A hint when every wrong element of dX (dW1) lies in a row (column) where Z = X @ W1 is exactly 0 (a zero
    example, a dead hidden unit): there only relu's derivative at 0 decides."""
    try:
        g = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    e = np.asarray(expected, dtype=np.float64)
    if name == "dW2" or g.shape != e.shape or not (Z == 0).any():
        return ""
    atol = rtol * max(1.0, float(np.max(np.abs(e)))) if e.size else 0.0
    bad = ~np.isclose(g, e, rtol=rtol, atol=atol)
    at_zero = (Z == 0).any(axis=1)[:, None] if name == "dX" else (Z == 0).any(axis=0)[None, :]
    if not bad.any() or (bad & ~at_zero).any():
        return ""
    where = "rows of X that are all zeros" if name == "dX" else "hidden units whose column of W1 is all zeros"
    return (f"\n  every wrong element of {name} is where Z = X @ W1 is exactly 0 ({where}): relu'(0) decides "
            "there, and the spec's relu'(0) is 0 (a mask Z > 0; Z >= 0 or np.heaviside(Z, 1) lets the gradient through)")


# JAX's automatic differentiation, which computes a backward pass for you: off limits while mlp_backward runs — the
# public names, and the internals JAX's reverse- and forward-mode paths go through (jax._src.api.vjp and friends),
# those that exist in the installed JAX version
AUTODIFF = ("jax.vjp", "jax.grad", "jax.value_and_grad", "jax.linear_transpose", "jax.jacrev", "jax.jacfwd",
            "jax.linearize", "jax.jvp", "jax.hessian")
AUTODIFF_INTERNALS = tuple(f"jax._src.interpreters.ad.{name}" for name in (
    "linearize", "backward_pass", "backward_pass3", "jvp", "linearize_jaxpr", "vjp")) + tuple(
    # Taylor-mode autodiff (the third independent attack, 2026-12-06: jet over one-hot tangents, vmapped, is a
    # Jacobian): its own interpreter, not ad's
    f"jax.experimental.jet.{name}" for name in ("jet", "jet2", "jet_fun", "jet_subtrace", "JetTrace"))


@dataclass
class ByHand(Problem):
    """A Problem whose ``forbid`` helpers are a library's way of doing the exercise: the lock's message says why
    they are off limits (``why``: the exercise is to write that computation by hand). ``forbid_internals``: more
    names to lock, each only where the installed library has it (a library's internals move between versions)."""

    why: str = ""
    forbid_internals: tuple[str, ...] = ()

    def answer_sites(self) -> list[tuple[Any, str, Any, str]]:
        from ..problem import _resolve_owner

        sites = super().answer_sites()
        if self.__dict__.get("_why_labelled") is not sites:  # labelled once per cache (a test may drop it)
            forbidden = set(self.forbid)
            sites[:] = [(o, a, obj, f"{label} ({self.why})" if label in forbidden else label)
                        for o, a, obj, label in sites]
            for dotted in self.forbid_internals:
                try:
                    owner, attr = _resolve_owner(dotted)
                except (ImportError, AttributeError):
                    continue
                sites.append((owner, attr, getattr(owner, attr), f"{dotted} ({self.why})"))
            self.__dict__["_why_labelled"] = sites
        return sites


MLP_BACKWARD = ByHand(
    name="mlp_backward",
    forbid=AUTODIFF,
    forbid_internals=AUTODIFF_INTERNALS,
    why="automatic differentiation: this exercise is to write the backward pass by hand, two GEMMs per layer and "
        "relu's mask with @ and NumPy",
    spec="""
        mlp_backward(X, W1, W2, G) -> (dW1, dW2, dX)
        A 2-layer MLP without biases, row convention:   Z = X @ W1,   H = relu(Z),   Y = H @ W2.
        X: (B, d_in), W1: (d_in, h), W2: (h, d_out). G = ∂L/∂Y has Y's shape (B, d_out).
        Return ∂L/∂W1, ∂L/∂W2 and ∂L/∂X (NumPy float64 arrays with the shapes of W1, W2, X), computed with
        matrix products (@) and one elementwise mask — by hand: JAX's autodiff (jax.vjp, jax.grad,
        jax.value_and_grad, jax.linear_transpose, jax.jacrev/jacfwd, jax.linearize, jax.jvp, and the Taylor-mode
        jax.experimental.jet) is refused while your function runs. relu'(z) = 1 where z > 0, else 0.
        The checker compares with jax.vjp on shapes that are never square.
    """,
    visible=[_mlp_case(np.random.default_rng(0), 4, 3, 5, 2), _mlp_case(np.random.default_rng(1), 7, 6, 4, 9)],
    compare=_compare_mlp,
    after=_against_jax,
)


# -- Exercise 2: GEMMs and FLOPs of one training step -----------------------------------------------------------------

def _compare_gemms(what: str, got: Any, expected: tuple[int, int, int], case: Case) -> None:
    expect_tuple(what, got, "gemms, forward_flops, backward_flops")
    expect_int(f"{what} → number of GEMMs", got[0], expected[0],
               "each layer: 1 forward GEMM, 1 for dW, 1 for dX — but nobody needs ∂L/∂(input data)")
    expect_int(f"{what} → forward FLOPs", got[1], expected[1], "2·B·d_in·d_out per layer")
    expect_int(f"{what} → backward FLOPs", got[2], expected[2],
               "dW and dX are each as large as the forward GEMM; the first layer has no dX")


STEP_GEMMS = Problem(
    name="step_gemms",
    spec="""
        step_gemms(batch, widths) -> (gemms, forward_flops, backward_flops)
        An MLP of dense layers widths[0] → widths[1] → … → widths[-1] (no biases; elementwise work ignored),
        trained on a batch of `batch` examples: one forward pass and one backward pass that computes every
        ∂L/∂W. Count the GEMMs of the step and the FLOPs of each pass (2 FLOPs per multiply-add).
        The data X is an input, not a parameter: its gradient is never computed.
    """,
    visible=[Case((32, [784, 256, 10])), Case((5, [3, 4])), Case((64, [10, 20, 30, 40]))],
    compare=_compare_gemms,
)


# -- Exercise 3: the largest batch that fits ------------------------------------------------------------------------
# The memory model of course §2.7, the one it checks against XLA's buffer assignment: the student writes it (the
# course teaches it in prose and a table and shows its numbers from stored data; no installed helper computes it).

DTYPES = ("float16", "float32", "float64", "mixed-bf16")  # mixed-bf16: see the spec


LARGEST_BATCH = Problem(
    name="largest_batch",
    spec="""
        largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer) -> int
        Course §2.7's network: `layers` tanh layers of width `width`, each with a weight (width × width) and a bias
        (width), stacked with lax.scan, a mean-squared-error loss against a target of width `width`, trained with
        `optimizer` ('sgd', 'momentum' or 'adam'). §2.7's memory model, the one it checks against XLA:
          fixed:       parameters + their gradients + optimizer state (sgd: none, momentum: 1 copy, adam: 2).
          per example: the batch: input row + target row (width values each);
                       the saved activations: `saved_per_layer` arrays of width values per layer, plus one for
                       the loss (its gradient 2·(y − target), saved in the forward pass);
                       the working gradients in flight in the backward pass: 2 arrays of width values.
        saved_per_layer is what the backward pass keeps per layer: 3 for JAX's reverse mode under lax.scan
        (§2.5 prints them: the layer's input, its tanh output and 1 − y), 1 for a hand-written backward pass
        (tm.tanh_stack: the minimum), other values for other choices.
        dtype 'float16', 'float32' or 'float64': everything is stored in dtype (np.dtype(dtype).itemsize bytes).
        dtype 'mixed-bf16' (mixed precision): parameters and gradients in bf16 (2 bytes each), plus an fp32 master
          copy of the parameters (4 bytes) and fp32 optimizer state (4 bytes per slot); per-example values in
          bf16 (2 bytes).
        Return the largest batch size whose total fits in budget_bytes (a total equal to the budget fits; 0 if
        not even one example fits).
    """,
    visible=[Case((6, 512, 256 * 2**20, "float32", "adam", 3)),
             Case((6, 512, 256 * 2**20, "float32", "adam", 1)),
             Case((8, 1024, 512 * 2**20, "mixed-bf16", "momentum", 3)),
             Case((2, 10, 5000, "float32", "adam", 3))],
    compare=lambda what, got, expected, case: expect_int(
        what, got, expected,
        "fixed = params · (bytes of param + grad (+ fp32 master) + optimizer slots); per example = (input and "
        "target rows + saved_per_layer·layers + 1 saved arrays + 2 working gradients) · width · bytes per value"),
)


# -- Exercise 4: pick a checkpointing policy ------------------------------------------------------------------------

POLICIES = ("everything", "dots", "nothing")  # least recompute first


def policy(name: str) -> Callable[..., Any]:
    """The jax.checkpoint policy behind each name."""
    import jax

    return {"everything": jax.checkpoint_policies.everything_saveable,
            "dots": jax.checkpoint_policies.dots_saveable,
            "nothing": jax.checkpoint_policies.nothing_saveable}[name]


@functools.lru_cache(maxsize=None)
def stack_loss(policy_name: str) -> Callable[..., Any]:
    """loss(Ws, X) of a stack of tanh layers run with lax.scan (Ws: (L, d, d), X: (B, d)), each layer wrapped in
    jax.checkpoint with the named policy — the shape of a real deep model."""
    import jax
    import jax.numpy as jnp

    def layer(h, W):
        return jnp.tanh(h @ W), None

    layer = jax.checkpoint(layer, policy=policy(policy_name))

    def loss(Ws, X):
        h, _ = jax.lax.scan(layer, X, Ws)
        return jnp.sum(h ** 2)

    return loss


@functools.lru_cache(maxsize=None)
def grad_of(policy_name: str) -> Callable[..., Any]:
    """jax.jit(jax.grad(stack_loss(policy_name))), one object per policy: compiling it twice for the same shapes
    costs nothing the second time (JAX caches the executable on the jitted function)."""
    import jax

    return jax.jit(jax.grad(stack_loss(policy_name)))


def _compare_policy(what: str, got: Any, expected: str | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(f"{what}: expected None (no policy fits the budget), got {got!r}")
        return
    expect_choice(what, got, expected, POLICIES,
                  "compile lab.grad_of(name) and compare memory_analysis().temp_size_in_bytes with "
                  "the budget; prefer the policy that recomputes least")


PICK_POLICY = Problem(
    name="pick_policy",
    spec="""
        pick_policy(layers, batch, width, budget_bytes) -> 'everything' | 'dots' | 'nothing' | None
        lab.stack_loss(name) is loss(Ws, X) of `layers` tanh layers (Ws: (layers, width, width), X: (batch, width),
        float32) with each layer under jax.checkpoint(policy=…): 'everything' saves every intermediate (no
        recompute), 'dots' saves only matmul outputs (recomputes the tanh), 'nothing' saves only each layer's
        input (recomputes the matmul too). lab.grad_of(name) is jax.jit(jax.grad(lab.stack_loss(name))).
        The gradient's working memory is what XLA reserves for temporaries:
        lab.grad_of(name).lower(Ws, X).compile().memory_analysis().temp_size_in_bytes.
        Return the policy that recomputes least among those whose working memory fits budget_bytes (at most
        budget_bytes: a working memory equal to the budget fits), or None.
        This exercise is about using the compiler's measurement: compile, read, decide.
        (jax.ShapeDtypeStruct((…), jnp.float32) lets you compile without making arrays.)
    """,
    visible=[Case((4, 128, 32, 10**9)), Case((4, 128, 32, 200_000)), Case((4, 128, 32, 1_000))],
    compare=_compare_policy,
)


# -- Exercise 5: diagnose — a gradient test that catches transposes -------------------------------------------------
# A pool of candidate backward passes of a linear layer Y = X @ W, each (X, W, dY) -> (dW, dX), under neutral
# letters. Some are right and some are not: telling them apart is the exercise (the verdicts are the answer
# side's).

def _form_a(X, W, dY):
    return np.einsum("bi,bo->io", X, dY), np.einsum("bo,io->bi", dY, W)


def _form_b(X, W, dY):
    return dY.T @ X, dY @ W.T


def _form_c(X, W, dY):
    return np.outer(X[0], dY[0]), dY @ W.T


def _form_d(X, W, dY):
    return X.T @ dY, dY @ W.T


def _form_e(X, W, dY):
    return X.T @ dY + 0.01 * W, dY @ W.T


def _form_f(X, W, dY):
    return X.T @ dY, dY @ W


def _form_g(X, W, dY):
    return dY @ W.T, X.T @ dY


def _form_h(X, W, dY):
    return (dY.T @ X).T, (W @ dY.T).T


def _form_i(X, W, dY):
    return X.T @ dY, dY @ W.T / 0.9


def _form_j(X, W, dY):
    return X.T @ dY / X.shape[0], dY @ W.T


def _form_k(X, W, dY):
    return X.T @ dY[::-1], dY @ W.T


def _form_l(X, W, dY):
    return np.outer(X.sum(axis=0), dY.sum(axis=0)) / X.shape[0], dY @ W.T


def _form_m(X, W, dY):
    return X.T @ dY, dY[::-1] @ W.T


FORMS: dict[str, Callable[..., Any]] = {f.__name__[-1]: f for f in (
    _form_a, _form_b, _form_c, _form_d, _form_e, _form_f, _form_g, _form_h, _form_i, _form_j, _form_k, _form_l,
    _form_m)}


@dataclass(frozen=True)
class Candidate:
    """A candidate backward pass, one case of is_correct_backward: call it as ``backward(X, W, dY) -> (dW, dX)``.
    Plain data — which form of the pool it runs, and the name messages show — so that a hidden case travels to a
    grading sandbox as data (grader/pipeline/wire.py). Two candidates of the same form are the same candidate."""

    form: str
    name: str = field(default="", compare=False)

    def __call__(self, X: Any, W: Any, dY: Any) -> Any:
        return FORMS[self.form](X, W, dY)

    def __repr__(self) -> str:
        return f"<backward {self.name or self.form}>"


def _compare_verdict(what: str, got: Any, expected: bool, case: Case) -> None:
    expect_type(what, got, (bool, np.bool_), "True or False")
    if expected:  # a right backward judged wrong: most often an exact comparison of floats
        hint = ("this backward is right: computed in another order (einsum, transposed products) its values differ "
                "from yours in the last bits, so compare with a tolerance (np.allclose), not exact equality "
                "(np.array_equal, ==); a crash or a wrong shape of yours would also reject it")
    else:
        hint = ("test on random values (not ones or another constant: a batch whose rows are all alike hides "
                "misaligned rows and sums taken in the wrong order) with B, d_in and d_out all different, against "
                "jax.vjp (or the shapes and values the chain rule gives)")
    expect_equal(what, bool(got), expected, hint)


IS_CORRECT_BACKWARD = Problem(
    name="is_correct_backward",
    spec="""
        is_correct_backward(backward) -> bool
        `backward(X, W, dY) -> (dW, dX)` claims to be the backward pass of the linear layer Y = X @ W
        (X: (B, d_in), W: (d_in, d_out), dY = ∂L/∂Y). Decide whether it is right: return True when its dW and
        dX equal ∂L/∂W and ∂L/∂X for every input, False otherwise. Some wrong ones give the right answer on
        square, symmetric or batch-of-one inputs, and some on any constant input (all ones, say) whatever the
        shapes — your test must not be fooled. Never raise: a candidate that crashes or returns the wrong shape is
        simply wrong.
    """,
    visible=[Case((Candidate("d", "textbook"),)), Case((Candidate("f", "forgot_transpose_of_W"),)),
             Case((Candidate("j", "mean_not_sum"),)), Case((Candidate("l", "product_of_batch_sums"),))],
    compare=_compare_verdict,
)

problems = {p.name: p for p in (MLP_BACKWARD, STEP_GEMMS, LARGEST_BATCH, PICK_POLICY, IS_CORRECT_BACKWARD)}
