"""Lab 2 — backprop as GEMMs, training FLOPs and training memory: the problems and their references.

Conventions the specs share (the course notebook derives them):
- Row convention: a batch X has shape (B, d_in), a weight W has shape (d_in, d_out), Y = X @ W.
  Then dW = Xᵀ·dY and dX = dY·Wᵀ.
- FLOPs: one multiply-add = 2 FLOPs; a GEMM (m, k)·(k, n) costs 2·m·k·n. Elementwise work is not counted.
- Bytes: ``np.dtype(dtype).itemsize`` per element.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..checks import (
    CheckFailure, expect_array_close, expect_choice, expect_equal, expect_int, expect_tuple, expect_type,
)
from ..problem import Case, Problem

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}


# -- Exercise 1: the backward pass of a 2-layer MLP, by hand ----------------------------------------------------------

def _mlp_reference(X, W1, W2, G):
    """∂L/∂W1, ∂L/∂W2, ∂L/∂X by the chain rule (the ``after`` check also holds the answer against jax.vjp)."""
    Z = X @ W1
    dZ = (G @ W2.T) * (Z > 0)
    return X.T @ dZ, np.maximum(Z, 0.0).T @ G, dZ @ W1.T


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


def _mlp_hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_mlp_case(rng, *(int(v) for v in rng.integers(1, 40, size=4))) for _ in range(6)]
    # Z = 0 exactly, where relu'(0) = 0 decides (the spec's rule; a mask Z >= 0 lets the gradient through):
    # an all-zero example (a padding row of X: its row of dX) and a dead hidden unit (a zero column of W1: its
    # column of dW1)
    b, d_in, h, d_out = (int(v) for v in rng.integers(2, 12, size=4))
    padded = _mlp_case(rng, b, d_in, h, d_out)
    padded.args[0][int(rng.integers(b))] = 0.0
    dead = _mlp_case(rng, b, d_in, h, d_out)
    dead.args[1][:, int(rng.integers(h))] = 0.0
    return cases + [padded, dead]


def _compare_mlp(what: str, got: Any, expected: tuple[np.ndarray, ...], case: Case, rtol: float = 1e-6) -> None:
    expect_tuple(what, got, "dW1, dW2, dX")
    for name, g, e in zip(("dW1", "dW2", "dX"), got, expected):
        expect_array_close(f"{what} → {name}", g, e, rtol=rtol)


MLP_BACKWARD = Problem(
    name="mlp_backward",
    spec="""
        mlp_backward(X, W1, W2, G) -> (dW1, dW2, dX)
        A 2-layer MLP without biases, row convention:   Z = X @ W1,   H = relu(Z),   Y = H @ W2.
        X: (B, d_in), W1: (d_in, h), W2: (h, d_out). G = ∂L/∂Y has Y's shape (B, d_out).
        Return ∂L/∂W1, ∂L/∂W2 and ∂L/∂X (NumPy float64 arrays with the shapes of W1, W2, X), computed with
        matrix products (@) and one elementwise mask — no JAX. relu'(z) = 1 where z > 0, else 0.
        The checker compares with jax.vjp on shapes that are never square.
    """,
    reference=_mlp_reference,
    visible=[_mlp_case(np.random.default_rng(0), 4, 3, 5, 2), _mlp_case(np.random.default_rng(1), 7, 6, 4, 9)],
    hidden=_mlp_hidden,
    compare=_compare_mlp,
    after=_against_jax,
)


# -- Exercise 2: GEMMs and FLOPs of one training step -----------------------------------------------------------------

def step_gemms(batch: int, widths: list[int]) -> tuple[int, int, int]:
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        gemms += 1 + 1 + (i > 0)  # forward; dW; dX unless the layer's input is the data
        fwd += f
        bwd += f * (1 + (i > 0))
    return gemms, fwd, bwd


def _gemm_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(7):
        widths = [int(w) for w in rng.integers(1, 5000, size=int(rng.integers(2, 9)))]
        cases.append(Case((int(rng.integers(1, 4096)), widths)))
    return cases


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
    reference=step_gemms,
    visible=[Case((32, [784, 256, 10])), Case((5, [3, 4])), Case((64, [10, 20, 30, 40]))],
    hidden=_gemm_hidden,
    compare=_compare_gemms,
)


# -- Exercise 3: the largest batch that fits ------------------------------------------------------------------------
# The memory model counts every array once (course §2.5's minimum): the batch's input row X and target row, and
# each layer's output. A layer's input is not counted again — the first layer's input IS X, every other layer's is
# the previous layer's output. (Counting X a second time as "layer 0's saved input" was this exercise's old
# reference; it is now the plausible wrong answer.)

DTYPES = ("float16", "float32", "float64", "mixed-bf16")
# mixed-bf16: bf16 params and grads, fp32 master params and fp32 optimizer state (ZeRO §3.1), bf16 activations
_MIXED = {"params": 2, "grads": 2, "master": 4, "optimizer": 4, "activations": 2}


def _sizes(dtype: str) -> dict[str, int]:
    if dtype == "mixed-bf16":
        return _MIXED
    s = np.dtype(dtype).itemsize
    return {"params": s, "grads": s, "master": 0, "optimizer": s, "activations": s}


def _fixed_and_per_example(widths: list[int], dtype: str, optimizer: str) -> tuple[int, int]:
    """(bytes independent of the batch, bytes per example) of the exercise's memory model."""
    size = _sizes(dtype)
    params = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    fixed = params * (size["params"] + size["grads"] + size["master"] + OPTIMIZER_SLOTS[optimizer] * size["optimizer"])
    values = widths[0] + widths[-1] + sum(widths[1:])  # X, target, every layer's output
    return fixed, values * size["activations"]


def largest_batch(widths: list[int], budget_bytes: int, dtype: str, optimizer: str) -> int:
    fixed, per_example = _fixed_and_per_example(widths, dtype, optimizer)
    return max(0, (budget_bytes - fixed) // per_example)


def _batch_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for k in range(12):
        n_layers = int(rng.integers(1, 6))
        widths = [int(w) for w in rng.integers(8, 8192, size=n_layers + 1)]
        if k % 3 == 0:  # a wide input and narrow layers: counting X twice is far off
            widths[0] = int(rng.integers(4096, 16384))
        dtype, opt = DTYPES[k % len(DTYPES)], tuple(OPTIMIZER_SLOTS)[k % len(OPTIMIZER_SLOTS)]
        fixed, per = _fixed_and_per_example(widths, dtype, opt)
        b = int(rng.integers(2, 5000))
        budget = {0: fixed + b * per,  # exactly b examples fit: a tie
                  1: fixed + b * per - 1,  # one byte short of b
                  2: fixed + per - 1,  # not even one example
                  3: int(fixed * rng.uniform(0.3, 0.99)),  # the model alone does not fit
                  }.get(k % 6, int(fixed + per * rng.uniform(1, 20_000)))
        cases.append(Case((widths, int(budget), dtype, opt)))
    return cases


LARGEST_BATCH = Problem(
    name="largest_batch",
    forbid=("gpucourse.training_memory.largest_batch", "gpucourse.training_memory.estimate"),
    spec="""
        largest_batch(widths, budget_bytes, dtype, optimizer) -> int
        An MLP of dense layers widths[0] → … → widths[-1], each with a weight (d_in × d_out) and a bias (d_out),
        trained with `optimizer` ('sgd', 'momentum' or 'adam'). Memory model, counting every array once:
          fixed:       parameters + their gradients + optimizer state (sgd: none, momentum: 1 copy, adam: 2).
          per example: the batch's input row (widths[0] values) and target row (widths[-1] values), plus what
                       the backward pass needs: every layer's output (d_out values; its activation function's
                       derivative comes from the output, like tanh's 1 − y²). A layer's input is not counted
                       again: the first layer's input is the input row, every other layer's is the previous
                       layer's output.
        dtype 'float16', 'float32' or 'float64': everything is stored in dtype (np.dtype(dtype).itemsize bytes).
        dtype 'mixed-bf16' (mixed precision): parameters and gradients in bf16 (2 bytes each), plus an fp32 master
          copy of the parameters (4 bytes) and fp32 optimizer state (4 bytes per slot); per-example values in
          bf16 (2 bytes).
        Return the largest batch size whose total fits in budget_bytes (a total equal to the budget fits; 0 if
        not even one example fits).
    """,
    reference=largest_batch,
    visible=[Case(([784, 512, 10], 10_000_000, "float32", "adam")),
             Case(([4096, 4096, 4096], 80 * 2**20, "float16", "sgd")),
             Case(([1024, 256, 256, 10], 64 * 2**20, "mixed-bf16", "adam")),
             Case(([10, 10], 100, "float32", "adam"))],
    hidden=_batch_hidden,
    compare=lambda what, got, expected, case: expect_int(
        what, got, expected,
        "fixed = params · (bytes of param + grad (+ fp32 master) + optimizer slots); per example = (input row + "
        "target row + every layer's output) · bytes per value — each array once"),
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


def grad_temp_bytes(policy_name: str, layers: int, batch: int, width: int) -> int:
    """temp_size_in_bytes of grad_of(policy_name) compiled for these shapes (float32)."""
    import jax
    import jax.numpy as jnp

    Ws = jax.ShapeDtypeStruct((layers, width, width), jnp.float32)
    X = jax.ShapeDtypeStruct((batch, width), jnp.float32)
    return int(grad_of(policy_name).lower(Ws, X).compile().memory_analysis().temp_size_in_bytes)


def pick_policy(layers: int, batch: int, width: int, budget_bytes: int) -> str | None:
    for name in POLICIES:
        if grad_temp_bytes(name, layers, batch, width) <= budget_bytes:
            return name
    return None


def _policy_case(rng: np.random.Generator, layers: int, batch: int, width: int, between: str) -> Case:
    t = [grad_temp_bytes(p, layers, batch, width) for p in POLICIES]
    lo, hi = {"everything": (t[0], t[0] * 1.5), "dots": (t[1], t[0] - 1), "nothing": (t[2], t[1] - 1),
              "none": (t[2] // 2, t[2] - 1)}[between]
    return Case((layers, batch, width, int(rng.uniform(lo, hi))))


def _policy_hidden(rng: np.random.Generator) -> list[Case]:
    # one random shape (compiling is the slow part), budgets in every gap between the policies' needs
    layers, batch, width = int(rng.integers(2, 7)), int(rng.integers(20, 300)), int(rng.integers(8, 64))
    cases = [_policy_case(rng, layers, batch, width, between) for between in ("nothing", "dots", "none", "everything")]
    # ties: a budget exactly equal to a policy's working memory fits it (the spec: "at most budget_bytes")
    need = {p: grad_temp_bytes(p, layers, batch, width) for p in POLICIES}
    return cases + [Case((layers, batch, width, need["dots"])), Case((layers, batch, width, need["nothing"]))]


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
        (jax.ShapeDtypeStruct((…), jnp.float32) lets you compile without making arrays.)
    """,
    reference=pick_policy,
    visible=[Case((4, 128, 32, 10**9)), Case((4, 128, 32, 200_000)), Case((4, 128, 32, 1_000))],
    hidden=_policy_hidden,
    compare=_compare_policy,
)


# -- Exercise 5: diagnose — a gradient test that catches transposes -------------------------------------------------
# Candidate backward passes of a linear layer Y = X @ W: each returns (dW, dX) given (X, W, dY).

def textbook(X, W, dY):
    return X.T @ dY, dY @ W.T


def transposed_products(X, W, dY):  # correct, written the other way round: (dYᵀ X)ᵀ = Xᵀ dY
    return (dY.T @ X).T, (W @ dY.T).T


def einsum_form(X, W, dY):  # correct
    return np.einsum("bi,bo->io", X, dY), np.einsum("bo,io->bi", dY, W)


def forgot_transpose_of_W(X, W, dY):  # right only when W is square and symmetric
    return X.T @ dY, dY @ W


def transposed_dW(X, W, dY):  # shape (d_out, d_in): right only when W is square and Xᵀ·dY symmetric
    return dY.T @ X, dY @ W.T


def mean_not_sum(X, W, dY):  # divides by the batch: right only for a batch of one
    return X.T @ dY / X.shape[0], dY @ W.T


def first_example_only(X, W, dY):  # forgets to sum over the batch: right only for a batch of one
    return np.outer(X[0], dY[0]), dY @ W.T


def swapped_outputs(X, W, dY):  # returns (dX, dW): right only when X and W have the same shape and values
    return dY @ W.T, X.T @ dY


def weight_decay_in_dW(X, W, dY):  # adds an L2 penalty's gradient 0.01·W to dW: another loss's gradient, off by a
    return X.T @ dY + 0.01 * W, dY @ W.T  # little (|error| ≈ 0.01, below a loose test's tolerance)


def dropout_scale_in_dX(X, W, dY):  # divides dX by the keep probability 0.9 of a dropout layer that is not there:
    return X.T @ dY, dY @ W.T / 0.9  # 11 % too large everywhere


CORRECT = (textbook, transposed_products, einsum_form)
# near misses too (right shapes, values off by a little): a test whose tolerance is loose passes them
BUGGY = (forgot_transpose_of_W, transposed_dW, mean_not_sum, first_example_only, swapped_outputs, weight_decay_in_dW,
         dropout_scale_in_dX)


_TRUTH: dict[Callable[..., Any], bool] = {}


def candidate(fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """A fresh function that runs ``fn``; hidden cases get neutral names so that the verdict must be tested."""

    def backward(X, W, dY):
        return fn(X, W, dY)

    backward.__name__ = backward.__qualname__ = name or fn.__name__
    _TRUTH[backward] = fn in CORRECT
    return backward


def is_correct_backward(backward: Callable[..., Any]) -> bool:
    return _TRUTH[backward]


def _diagnose_hidden(rng: np.random.Generator) -> list[Case]:
    pool = list(CORRECT + BUGGY)
    order = rng.permutation(len(pool))
    return [Case((candidate(pool[int(i)], f"candidate_{k}"),)) for k, i in enumerate(order)]


def _compare_verdict(what: str, got: Any, expected: bool, case: Case) -> None:
    expect_type(what, got, (bool, np.bool_), "True or False")
    expect_equal(what, bool(got), expected,
                 "test on random inputs with B, d_in and d_out all different, against jax.vjp (or the shapes "
                 "and values the chain rule gives)")


IS_CORRECT_BACKWARD = Problem(
    name="is_correct_backward",
    spec="""
        is_correct_backward(backward) -> bool
        `backward(X, W, dY) -> (dW, dX)` claims to be the backward pass of the linear layer Y = X @ W
        (X: (B, d_in), W: (d_in, d_out), dY = ∂L/∂Y). Decide whether it is right: return True when its dW and
        dX equal ∂L/∂W and ∂L/∂X for every input, False otherwise. Some wrong ones give the right answer on
        square, symmetric or batch-of-one inputs — your test must not be fooled. Never raise: a candidate that
        crashes or returns the wrong shape is simply wrong.
    """,
    reference=is_correct_backward,
    visible=[Case((candidate(textbook),)), Case((candidate(forgot_transpose_of_W),)), Case((candidate(mean_not_sum),))],
    hidden=_diagnose_hidden,
    compare=_compare_verdict,
)

problems = {p.name: p for p in (MLP_BACKWARD, STEP_GEMMS, LARGEST_BATCH, PICK_POLICY, IS_CORRECT_BACKWARD)}
