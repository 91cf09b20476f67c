"""Lab 2 — backprop as GEMMs, training FLOPs and training memory: the problems.

Conventions the specs share (the course notebook derives them):
- Row convention: a batch X has shape (B, d_in), a weight W has shape (d_in, d_out), Y = X @ W.
  Then dW = Xᵀ·dY and dX = dY·Wᵀ.
- FLOPs: one multiply-add = 2 FLOPs; a GEMM (m, k)·(k, n) costs 2·m·k·n. Elementwise work is not
  counted.
- Bytes: ``np.dtype(dtype).itemsize`` per element.

This module is the lab's *exercise side* (specs, visible cases, comparisons, checks, the course
helpers the specs name: what students install); the references and hidden-case generators are its
answer side, grader/answers/lab02_backprop.py (the instructor's only; grader/DESIGN.md). The visible
cases' expected values ship as data: lab02_backprop.expected.json.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..checks import (
    CheckFailure,
    expect_array_close,
    expect_choice,
    expect_equal,
    expect_int,
    expect_tuple,
    expect_type,
)
from ..problem import Case, Problem

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}


# -- the backward pass of a 2-layer MLP, by hand ---------------------------------------------------

def _against_jax(fn: Callable[..., Any], hidden: bool) -> str:
    """Run the student's function on one more non-square case and compare with jax.vjp (float32)."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(7 if hidden else 3)
    case = _mlp_case(rng, 6, 5, 8, 3)
    # relu as the spec defines it (relu'(0) = 0, as jax.nn.relu): jnp.maximum(z, 0)'s derivative at
    # 0 is ½
    f = lambda X, W1, W2: jax.nn.relu(X @ W1) @ W2  # noqa: E731
    _, vjp = jax.vjp(f, *(jnp.asarray(a, dtype=jnp.float32) for a in case.args[:3]))
    dX, dW1, dW2 = vjp(jnp.asarray(case.args[3], dtype=jnp.float32))
    got = fn(*case.args)
    _compare_mlp(
        "mlp_backward on a (6×5)·(5×8)·(8×3) MLP vs jax.vjp",
        got,
        tuple(np.asarray(a) for a in (dW1, dW2, dX)),
        case,
        rtol=2e-4,
    )
    return "\n  and agrees with jax.vjp of the same MLP (relu as jax.nn.relu: derivative 0 at 0)"


def _mlp_case(rng: np.random.Generator, b: int, d_in: int, h: int, d_out: int) -> Case:
    X = rng.standard_normal((b, d_in))
    W1 = rng.standard_normal((d_in, h)) / np.sqrt(d_in)
    W2 = rng.standard_normal((h, d_out)) / np.sqrt(h)
    G = rng.standard_normal((b, d_out))
    return Case((X, W1, W2, G))


def _compare_mlp(
    what: str, got: Any, expected: tuple[np.ndarray, ...], case: Case, rtol: float = 1e-6
) -> None:
    expect_tuple(what, got, "dW1, dW2, dX")
    Z = np.asarray(case.args[0]) @ np.asarray(case.args[1])
    failures: dict[str, CheckFailure] = {}
    for name, g, e in zip(("dW1", "dW2", "dX"), got, expected):
        try:
            expect_array_close(f"{what} → {name}", g, e, rtol=rtol)
        except CheckFailure as failure:
            failures[name] = failure
    if not failures:
        return
    name = next(n for n in ("dW1", "dW2", "dX") if n in failures)  # the first wrong one, reported
    g, e = got[("dW1", "dW2", "dX").index(name)], expected[("dW1", "dW2", "dX").index(name)]
    kind = getattr(g, "dtype", None)
    narrow = (f". Your {name} is {kind}: the spec asks for float64 or float32 (a 16-bit"
              " result keeps about 3 digits)"
              if kind is not None and np.dtype(kind).itemsize < 4 else "")
    kink = _relu_kink_hint(name, g, e, Z, rtol)
    where = ""
    if not kink and not narrow:  # which path the right and wrong gradients point at (all compared)
        if "dW2" not in failures and "dW1" in failures:
            where = ("\n  dW2 is right, so the mistake is on the way back through relu: the"
                     " gradient reaching Z is G @ W2ᵀ times relu'(Z) (1 where Z > 0, else 0), and"
                     " dW1 and dX are both built from it")
        elif set(failures) == {"dX"}:
            where = ("\n  dW1 and dW2 are right, so the gradient reaching Z is too: the mistake is"
                     " in the last step, dX = (that gradient) @ W1ᵀ")
    raise CheckFailure(f"{failures[name]}{narrow}{kink}{where}") from None


def _relu_kink_hint(name: str, got: Any, expected: np.ndarray, Z: np.ndarray, rtol: float) -> str:
    """A hint when every wrong element of dX (dW1) lies in a row (column) where Z = X @ W1 is
    exactly 0 (a zero example, a dead hidden unit): there only relu's derivative at 0 decides."""
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
    where = (
        "rows of X that are all zeros"
        if name == "dX"
        else "hidden units whose column of W1 is all zeros"
    )
    return (
        f"\n  every wrong element of {name} is where Z = X @ W1 is exactly 0 ({where}): relu'(0)"
        " decides there, and the spec's relu'(0) is 0 (a mask Z > 0; Z >= 0 or np.heaviside(Z, 1)"
        " lets the gradient through)"
    )


# JAX's automatic differentiation, which computes a backward pass for you: off limits while
# mlp_backward runs — the public names, and the internals JAX's reverse- and forward-mode paths go
# through (jax._src.api.vjp and friends), those that exist in the installed JAX version
AUTODIFF = (
    "jax.vjp",
    "jax.grad",
    "jax.value_and_grad",
    "jax.linear_transpose",
    "jax.jacrev",
    "jax.jacfwd",
    "jax.linearize",
    "jax.jvp",
    "jax.hessian",
)
AUTODIFF_INTERNALS = (
    tuple(
        f"jax._src.interpreters.ad.{name}"
        for name in (
            "linearize",
            "backward_pass",
            "backward_pass3",
            "jvp",
            "linearize_jaxpr",
            "vjp",
        )
    )
    + tuple(
        # Taylor-mode autodiff (the third independent attack, 2026-12-06: jet over one-hot tangents,
        # vmapped, is a Jacobian): its own interpreter, not ad's
        f"jax.experimental.jet.{name}"
        for name in ("jet", "jet2", "jet_fun", "jet_subtrace", "JetTrace")
    )
    + tuple(
        # the per-primitive derivative rules themselves (the fifth attack: a 20-line
        # forward-mode interpreter over primitive_jvps, vmapped over one-hot tangents), under
        # both the private and the public module
        f"{module}.{table}"
        for module in ("jax._src.interpreters.ad", "jax.interpreters.ad")
        for table in ("primitive_jvps", "primitive_transposes", "fancy_transposes")
    )
    + (
        # a backward pass JAX differentiated when the cell ran (no lock then), serialised with
        # symbolic shapes and only replayed by the function (the sixth attack): calling an
        # exported program is refused while it runs
        "jax._src.export._export.Exported.call",
        "jax._src.export._export.call_exported",
    )
)


@dataclass
class ByHand(Problem):
    """A Problem whose ``forbid`` helpers are a library's way of doing the exercise: the lock's
    message says why they are off limits (``why``: the exercise is to write that computation by
    hand). ``forbid_internals``: more names to lock, each only where the installed library has it (a
    library's internals move between versions)."""

    why: str = ""
    forbid_internals: tuple[str, ...] = ()

    def answer_sites(self) -> list[tuple[Any, str, Any, str]]:
        from ..problem import _resolve_owner

        sites = super().answer_sites()
        # labelled once per cache (a test may drop it)
        if self.__dict__.get("_why_labelled") is not sites:
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
    why=(
        "automatic differentiation: this exercise is to write the backward pass by hand, two GEMMs"
        " per layer and relu's mask with @ and NumPy"
    ),
    spec="""
        mlp_backward(X, W1, W2, G) -> (dW1, dW2, dX)
        A 2-layer MLP without biases, row convention:   Z = X @ W1,   H = relu(Z),   Y = H @ W2.
        X: (B, d_in), W1: (d_in, h), W2: (h, d_out). G = ∂L/∂Y has Y's shape (B, d_out).
        Return ∂L/∂W1, ∂L/∂W2 and ∂L/∂X (NumPy arrays with the shapes of W1, W2, X; float64 or
        float32, compared within float32's rounding), computed with matrix products (@) and one
        elementwise mask — by hand: JAX's autodiff (jax.vjp, jax.grad, jax.value_and_grad,
        jax.linear_transpose, jax.jacrev/jacfwd, jax.linearize, jax.jvp, and the Taylor-mode
        jax.experimental.jet) is refused while your function runs. relu'(z) = 1 where z > 0, else 0.
        The checker compares with jax.vjp on shapes that are never square.
    """,
    visible=[
        _mlp_case(np.random.default_rng(0), 4, 3, 5, 2),
        _mlp_case(np.random.default_rng(1), 7, 6, 4, 9),
    ],
    compare=_compare_mlp,
    after=_against_jax,
)


# -- GEMMs and FLOPs of one training step, predicted -----------------------------------------------
# The network is data (widths, which weights train, whether activations are recomputed), deep enough
# in the hidden cases that tracing JAX's backward pass of it does not fit the time limit: the
# student predicts the step's GEMMs from the chain rule. tests/test_lab02_backprop.py holds the
# reference against JAX's program (make_jaxpr of jax.grad) and XLA's cost model on small networks.

def _deep_case(rng: np.random.Generator, layers: int, batch: int, recompute: bool) -> Case:
    """A network of ``layers`` dense layers with random widths and a random set of frozen weights
    (the first ones frozen, as in fine-tuning, and some above): far too deep to trace its backward
    pass within the time limit."""
    widths = [int(w) for w in rng.integers(1, 4096, size=layers + 1)]
    first = int(rng.integers(0, layers // 2))
    trainable = [bool(i >= first and rng.random() < 0.7) or i == first for i in range(layers)]
    return Case((batch, widths, trainable, recompute))


def _compare_gemms(what: str, got: Any, expected: tuple[int, int, int], case: Case) -> None:
    expect_tuple(what, got, "gemms, forward_flops, backward_flops")
    expect_int(
        f"{what} → number of GEMMs",
        got[0],
        expected[0],
        "per layer: 1 forward GEMM; dW only for a trained weight; dX only where a trained weight"
        " lies below (not for the first trained layer, not below it); with recompute, the forward"
        " GEMM again for every layer the backward pass goes through",
    )
    expect_int(
        f"{what} → forward FLOPs", got[1], expected[1], "2·batch·d_in·d_out per layer, every layer"
    )
    expect_int(
        f"{what} → backward FLOPs",
        got[2],
        expected[2],
        "each backward GEMM (dW, dX, a recomputed forward) costs as much as the layer's forward"
        " GEMM; the recomputation belongs to the backward pass",
    )


@dataclass
class _DeepNetworks(Problem):
    """A Problem whose messages shorten a deep network's lists: the first and last few entries and
    the length."""

    def what(self, case: Case) -> str:
        from ..case import _short

        def short(v: Any) -> str:
            if isinstance(v, list) and len(v) > 12:
                head, tail = ", ".join(map(str, v[:4])), ", ".join(map(str, v[-2:]))
                return f"[{head}, …, {tail}] ({len(v)} entries)"
            return _short(v)

        return f"{self.name}({', '.join(map(short, case.args))})"


STEP_GEMMS = _DeepNetworks(
    name="step_gemms",
    spec="""
        step_gemms(batch, widths, trainable, recompute) -> (gemms, forward_flops, backward_flops)
        A stack of dense layers widths[0] → widths[1] → … → widths[-1], layer i: h = tanh(h @ W_i)
        with W_i of shape (widths[i], widths[i+1]), no biases, a scalar loss on the last h;
        elementwise work is not counted.
        One training step on a batch of `batch` examples: a forward pass, then a backward pass that
        computes ∂L/∂W_i for every layer with trainable[i] True and nothing it does not need: a
        frozen weight gets no gradient, and the data X is an input, never differentiated. At least
        one layer is trainable.
        recompute: False — the forward pass saves what the backward needs; True — activation
        checkpointing of every layer (jax.checkpoint with nothing_saveable: only each layer's
        input is kept), so the backward pass recomputes a layer's forward GEMM before it goes
        back through that layer.
        Return the number of GEMMs of the step (forward and backward), and the FLOPs of each pass (2
        FLOPs per multiply-add; a recomputed forward GEMM counts in backward_flops).
        Predict it from the chain rule: the hidden networks have thousands of layers, and tracing
        JAX's backward pass of one (jax.make_jaxpr of jax.grad, or XLA's cost analysis) takes
        longer than the time limit. To check a small case, count the dot_general equations of
        jax.make_jaxpr(jax.grad(...)), inner jaxprs included: it counts the recomputed GEMMs too.
        XLA's cost analysis does not, for these straight-line networks with recompute=True: XLA:CPU
        merges the recomputed GEMMs back into the forward ones.
    """,
    visible=[Case((32, [784, 256, 10], [True, True], False)),
             Case((5, [3, 4], [True], False)),
             Case((64, [10, 20, 30, 40], [False, True, True], False)),
             Case((16, [12, 24, 8, 16, 4], [False, True, False, True], True)),
             _deep_case(np.random.default_rng(2), 3000, 128, False)],
    compare=_compare_gemms,
)


# -- the largest batch that fits -------------------------------------------------------------------
# The memory model of course §2.7, the one it checks against XLA's buffer assignment: the student
# writes it (the course teaches it in prose and a table and shows its numbers from stored data; no
# installed helper computes it).

DTYPES = ("float16", "float32", "float64", "mixed-bf16")  # mixed-bf16: see the spec


LARGEST_BATCH = Problem(
    name="largest_batch",
    spec="""
        largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer) -> int
        Course §2.7's network: `layers` tanh layers of width `width`, each with a weight
        (width × width) and a bias (width), stacked with lax.scan, a mean-squared-error loss against
        a target of width `width`, trained with `optimizer` ('sgd', 'momentum' or 'adam'). §2.7's
        memory model, the one it checks against XLA:
          fixed:       parameters + their gradients + optimizer state (sgd: none,
                       momentum: 1 copy, adam: 2).
          per example: the batch: input row + target row (width values each); the saved activations:
                       `saved_per_layer` arrays of width values per layer, plus one for the loss
                       (its gradient 2·(y − target), saved in the forward pass); the working
                       gradients in flight in the backward pass: 2 arrays of width values.
        saved_per_layer is what the backward pass keeps per layer: 3 for JAX's reverse mode
        under lax.scan (§2.5 prints them: the layer's input, its tanh output and 1 − y), 1 for a
        hand-written backward pass (tm.tanh_stack: the minimum), other values for other choices.
        dtype 'float16', 'float32' or 'float64': everything is stored in dtype
        (np.dtype(dtype).itemsize bytes).
        dtype 'mixed-bf16' (mixed precision): parameters and gradients in bf16 (2 bytes each),
          plus an fp32 master copy of the parameters (4 bytes) and fp32 optimizer state
          (4 bytes per slot); per-example values in bf16 (2 bytes).
        Return the largest batch size whose total fits in budget_bytes (a total equal to the budget
        fits; 0 if not even one example fits).
    """,
    visible=[
        Case((6, 512, 256 * 2**20, "float32", "adam", 3)),
        Case((6, 512, 256 * 2**20, "float32", "adam", 1)),
        Case((8, 1024, 512 * 2**20, "mixed-bf16", "momentum", 3)),
        Case((2, 10, 5000, "float32", "adam", 3)),
    ],
    compare=lambda what, got, expected, case: expect_int(
        what,
        got,
        expected,
        "fixed = params · (bytes of param + grad (+ fp32 master) + optimizer slots), params ="
        " layers · (width² weights + width biases); per example ="
        " (input and target rows + saved_per_layer·layers + 1 saved arrays + 2 working gradients) ·"
        " width · bytes per value",
    ),
)


# -- pick a checkpointing policy -------------------------------------------------------------------

POLICIES = ("everything", "dots", "nothing")  # least recompute first


def policy(name: str) -> Callable[..., Any]:
    """The jax.checkpoint policy behind each name."""
    import jax

    return {"everything": jax.checkpoint_policies.everything_saveable,
            "dots": jax.checkpoint_policies.dots_saveable,
            "nothing": jax.checkpoint_policies.nothing_saveable}[name]


@functools.lru_cache(maxsize=None)
def stack_loss(policy_name: str) -> Callable[..., Any]:
    """loss(Ws, X) of a stack of tanh layers run with lax.scan (Ws: (L, d, d), X: (B, d)), each
    layer wrapped in jax.checkpoint with the named policy — the shape of a real deep model."""
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
    """jax.jit(jax.grad(stack_loss(policy_name))), compiled for the host CPU on any runtime (its
    arguments and result placed on the CPU device: a GPU's XLA sizes its temporaries otherwise, and
    the expected answers are XLA:CPU's). Compiling it twice for the same shapes costs nothing the
    second time (JAX caches the executable)."""
    import jax

    cpu = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
    return jax.jit(jax.grad(stack_loss(policy_name)), in_shardings=(cpu, cpu), out_shardings=cpu)


def _tie_hint(expected: str, case: Case) -> str:
    """The hint for a budget exactly equal to the expected policy's working memory (a strict
    comparison rejects the policy that fits); "" for any other budget."""
    import jax
    import jax.numpy as jnp

    layers, batch, width, budget = case.args
    try:
        Ws = jax.ShapeDtypeStruct((layers, width, width), jnp.float32)
        X = jax.ShapeDtypeStruct((batch, width), jnp.float32)
        need = grad_of(expected).lower(Ws, X).compile().memory_analysis().temp_size_in_bytes
    except Exception:  # noqa: BLE001 - only a hint: without the measurement, the general one
        return ""
    if need != budget:
        return ""
    return (
        f"the budget, {need} bytes, is exactly the working memory of {expected!r}: a working"
        " memory equal to the budget fits (≤, not <) — a strict comparison skips the policy that"
        " fits"
    )


def _compare_policy(what: str, got: Any, expected: str | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(f"{what}: expected None (no policy fits the budget), got {got!r}")
        return
    hint = (
        "compile lab.grad_of(name) and compare memory_analysis().temp_size_in_bytes (the"
        " temporaries alone, not arguments or outputs) with the budget; prefer the policy that"
        " recomputes least"
    )
    # a policy that recomputes more than the expected one (or none): a strict comparison at a tie?
    if got is None or (isinstance(got, str) and got in POLICIES[POLICIES.index(expected) + 1:]):
        hint = _tie_hint(expected, case) or hint
    if got is None:
        raise CheckFailure(
            f"{what}: expected {expected!r} (its working memory fits the budget), got None. "
            f"Hint: {hint}"
        )
    expect_choice(what, got, expected, POLICIES, hint)


PICK_POLICY = Problem(
    name="pick_policy",
    spec="""
        pick_policy(layers, batch, width, budget_bytes) -> 'everything' | 'dots' | 'nothing' | None
        lab.stack_loss(name) is loss(Ws, X) of `layers` tanh layers (Ws: (layers, width, width), X:
        (batch, width), float32) with each layer under jax.checkpoint(policy=…): 'everything' saves
        every intermediate (no recompute), 'dots' saves only matmul outputs (recomputes the tanh),
        'nothing' saves only each layer's input (recomputes the matmul too). lab.grad_of(name) is
        jax.jit(jax.grad(lab.stack_loss(name))), compiled for the host CPU on any runtime (the
        expected answers are XLA:CPU's).
        The gradient's working memory is what XLA reserves for temporaries:
        lab.grad_of(name).lower(Ws, X).compile().memory_analysis().temp_size_in_bytes.
        Return the policy that recomputes least among those whose working memory fits budget_bytes
        (at most budget_bytes: a working memory equal to the budget fits), or None.
        This exercise is about using the compiler's measurement: compile, read, decide.
        (jax.ShapeDtypeStruct((…), jnp.float32) lets you compile without making arrays.)
    """,
    visible=[Case((4, 128, 32, 10**9)), Case((4, 128, 32, 200_000)), Case((4, 128, 32, 1_000))],
    compare=_compare_policy,
    # a right answer compiles up to three gradients a case (0.4-0.6 s each on an idle 2-core
    # machine): 10 s a call was missed at load 5 (the grading command beside a test run)
    time_limit=30.0,
)


# -- diagnose — test a backward pass against a black box -------------------------------------------
# A pool of operations given only as black-box forward passes (NumPy, computed in float32: nothing
# an autodiff library can trace), each with a candidate backward pass (its vector-Jacobian product),
# under neutral letters. Some candidates are right and some are not: telling them apart — finite
# differences, the dot-product test, a tolerance fit for float32 — is the exercise (the verdicts are
# the answer side's).

def _f32(x: Any) -> np.ndarray:
    return np.array(x, dtype=np.float32)  # a copy: the operations below work in place on it


# Each operation writes into arrays it owns (out=, slice stores), as a NumPy kernel would: what a
# tracer cannot follow, so neither jax.vjp of it nor its code re-bound to jax.numpy gives a verdict.

def _op_p(x):  # rows to probability vectors
    y = _f32(x)
    np.subtract(y, y.max(axis=1, keepdims=True), out=y)
    np.exp(y, out=y)
    np.divide(y, y.sum(axis=1, keepdims=True), out=y)
    return y


def _op_q(x):  # rows to zero mean, unit variance
    c = _f32(x)
    np.subtract(c, c.mean(axis=1, keepdims=True), out=c)
    v = np.empty((c.shape[0], 1), np.float32)
    v[:, 0] = (c * c).mean(axis=1)
    np.divide(c, np.sqrt(v + np.float32(1e-5)), out=c)
    return c


def _op_r(x):  # the Gram matrix of the columns
    x = _f32(x)
    g = np.empty((x.shape[1], x.shape[1]), np.float32)
    np.matmul(x.T, x, out=g)
    return g


def _op_s(x):  # running sums along each row
    x = _f32(x)
    np.cumsum(x, axis=1, out=x)
    return x


def _op_t(x):  # elementwise
    x = _f32(x)
    np.tanh(x, out=x)
    return x


def _op_u(x):  # one number per row
    x = _f32(x)
    m = x.max(axis=1)
    np.subtract(x, m[:, None], out=x)
    np.exp(x, out=x)
    y = np.empty(x.shape[0], np.float32)
    y[:] = m + np.log(x.sum(axis=1))
    return y


# elementwise, squashed into (0, 1) (the visible cases' own operation: no hidden case uses it)
def _op_w(x):
    x = _f32(x)
    np.negative(x, out=x)
    np.exp(x, out=x)
    np.add(x, np.float32(1), out=x)
    np.reciprocal(x, out=x)
    return x


# elementwise, far from zero: tanh shifted down by 64 (float32 keeps 2^-17 of 64: a small step's
# change
def _op_x(x):
    x = _f32(x)  # is mostly its rounding)
    np.tanh(x, out=x)
    np.subtract(x, np.float32(64), out=x)
    return x


def _op_y(x):  # elementwise and curved: sin(10x)
    x = _f32(x)
    np.multiply(x, np.float32(10), out=x)
    np.sin(x, out=x)
    return x


# elementwise, large but moving little: softplus(x) + 300 (the visible cases' own operation: no
# hidden case uses it). float32 keeps 2^-15 of 300: a 1e-3 step's change, at most 1e-3, is rounded
# to a few per cent, so a tolerance without the outputs' own rounding rejects its right backward
def _op_v(x):
    x = _f32(x)
    np.logaddexp(x, np.float32(0), out=x)
    np.add(x, np.float32(300), out=x)
    return x


def _op_z(x):  # one number per row, large but moving little: log Σ exp(x + 300) along the row
    x = _f32(x)
    np.add(x, np.float32(300), out=x)
    m = x.max(axis=1)
    np.subtract(x, m[:, None], out=x)
    np.exp(x, out=x)
    y = np.empty(x.shape[0], np.float32)
    y[:] = m + np.log(x.sum(axis=1))
    return y


OPS: dict[str, Callable[[Any], np.ndarray]] = {
    f.__name__[-1]: f
    for f in (_op_p, _op_q, _op_r, _op_s, _op_t, _op_u, _op_v, _op_w, _op_x, _op_y, _op_z)
}


def _probs(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def _standardized(x):
    x = np.asarray(x, dtype=np.float64)
    c = x - x.mean(axis=1, keepdims=True)
    s = np.sqrt((c * c).mean(axis=1, keepdims=True) + 1e-5)
    return c / s, s


# The visible cases' candidates, as source (a hidden case's candidate arrives the same way, from the
# answer side: the exercise side holds no right backward pass of an operation the hidden cases use).
# Each defines backward(x, dy) with np, _probs and _standardized in reach.
VISIBLE_CANDIDATES = {
    "squash": ("w", """def backward(x, dy):
    s = 1 / (1 + np.exp(-np.asarray(x, dtype=np.float64)))
    return dy * s * (1 - s)
"""),
    "squash_4_percent_high": ("w", """def backward(x, dy):
    s = 1 / (1 + np.exp(-np.asarray(x, dtype=np.float64)))
    return 1.04 * dy * s * (1 - s)
"""),
    "standardize_no_chain_through_mean": ("q", """def backward(x, dy):
    _, s = _standardized(x)
    return dy / s
"""),
    "gram_2x_dy": ("r", """def backward(x, dy):
    return 2 * np.asarray(x) @ dy
"""),
    # right: softplus' derivative is the sigmoid; its outputs near 300 are rounded to 2^-16, most of
    # a small step's change (a test needs the outputs' own rounding in its tolerance)
    "softplus_plus_300": ("v", """def backward(x, dy):
    return dy / (1 + np.exp(-np.asarray(x, dtype=np.float64)))
"""),
}
_BUILT: dict[str, Callable[..., Any]] = {}


def _built(source: str) -> Callable[..., Any]:
    """The backward(x, dy) a candidate's source defines (built once per source)."""
    fn = _BUILT.get(source)
    if fn is None:
        space: dict[str, Any] = {"np": np, "_probs": _probs, "_standardized": _standardized}
        exec(
            compile(source, "<candidate backward pass>", "exec"), space
        )  # noqa: S102 - the grader's own cases
        fn = _BUILT[source] = space["backward"]
    return fn


@dataclass(frozen=True)
class BlackBox:
    """The forward pass of one case of is_correct_backward: call it as ``forward(x) -> y`` with x a
    2-D array (any shape (B, n)); it computes in float32. Plain data — which operation of OPS it
    runs — so that a case travels to a grading sandbox as data (grader/pipeline/wire.py)."""

    op: str
    name: str = field(default="", compare=False)

    def __call__(self, x: Any) -> np.ndarray:
        return OPS[self.op](x)

    def __repr__(self) -> str:
        return f"<forward {self.name or self.op}>"


@dataclass(frozen=True)
class Candidate:
    """A candidate backward pass, the other half of a case of is_correct_backward: call it as
    ``backward(x, dy) -> dx``. Plain data (its source), like BlackBox; the same source is the same
    candidate."""

    source: str
    name: str = field(default="", compare=False)

    def __call__(self, x: Any, dy: Any) -> Any:
        return _built(self.source)(x, dy)

    def __repr__(self) -> str:
        return f"<backward {self.name or '?'}>"


def pair(op: str, source: str, name: str = "") -> tuple[BlackBox, Candidate]:
    """One case's arguments: the black-box forward pass of operation ``op`` and the candidate
    backward pass that ``source`` defines."""
    return BlackBox(op, name), Candidate(source, name)


def _compare_verdict(what: str, got: Any, expected: bool, case: Case) -> None:
    expect_type(what, got, (bool, np.bool_), "True or False")
    # a right backward judged wrong: most often a test too strict for float32, or a crash of yours
    if expected:
        hint = (
            "this backward is right: the forward computes in float32, so a finite difference with a"
            " tiny step (1e-6, 1e-8: float64's habits) is rounding noise — take a step near 1e-3,"
            " and a tolerance of two terms: 1e-3 of the size of the terms the dot product sums"
            " (⟨|dy|, |f(x+εu) − f(x−εu)|⟩ / 2ε) PLUS the outputs' own rounding, a few times"
            " 2^-23·⟨|dy|, |f(x+εu)| + |f(x−εu)|⟩ / 2ε (without it a right backward of an op whose"
            " outputs are large but move little can fail); test on a few small shapes with B > 1;"
            " the forward cannot be traced by JAX (jax.vjp/jax.grad of it raise), and a crash or a"
            " wrong shape of yours would also reject it"
        )
    else:
        hint = (
            "compare ⟨dy, J·u⟩ (a central difference of the forward along a random direction u)"
            " with ⟨backward(x, dy), u⟩ on random x and dy (not ones, not dy = y, not tiny values)"
            " with B > 1; check that backward returns x's shape (np.vdot flattens its arguments:"
            " the right numbers in the wrong shape pass a dot-product test); a tolerance near 1e-3,"
            " not 5 %: some wrong ones are off by a few per cent — and several random directions,"
            " since one may land where the error cancels; and a step near 1e-3, not 1e-6: in"
            " float32 a tiny step makes the rounding term (2^-23·⟨|dy|, |f|⟩ / 2ε) so large that"
            " your tolerance lets a wrong backward through"
        )
    expect_equal(what, bool(got), expected, hint)


# JAX's own gradient tests do the dot-product test for you (the seventh attack: check_vjp on the
# black boxes, with NumPy callables): off limits while is_correct_backward runs
GRADIENT_TESTS = ("jax.test_util.check_grads", "jax.test_util.check_jvp", "jax.test_util.check_vjp")
GRADIENT_TEST_INTERNALS = tuple(f"jax._src.public_test_util.{name}" for name in (
    "check_grads", "check_jvp", "check_vjp", "numerical_jvp", "check_close"))

IS_CORRECT_BACKWARD = ByHand(
    name="is_correct_backward",
    forbid=GRADIENT_TESTS,
    forbid_internals=GRADIENT_TEST_INTERNALS,
    why=(
        "JAX's gradient test: this exercise is to write the dot-product test with finite"
        " differences yourself"
    ),
    spec="""
        is_correct_backward(forward, backward) -> bool
        forward(x) -> y is an operation given only as a black box: a NumPy function that takes a 2-D
        array x of any shape (B, n), computes in float32 and returns a float32 array (y's shape
        depends on the operation).
        JAX cannot trace it: no jax.vjp or jax.grad of it. backward(x, dy) -> dx claims to
        be its backward pass: dx = ∂L/∂x given dy = ∂L/∂y, i.e. the vector-Jacobian product
        Jᵀ·dy, with x's shape.
        Decide whether it is right: return True when backward(x, dy) equals Jᵀ·dy for every x and
        dy (up to float32's rounding), False otherwise. Test it with finite differences of the
        forward — the dot-product test ⟨dy, J·u⟩ ≈ ⟨dy, (forward(x + εu) − forward(x − εu)) / 2ε⟩
        against ⟨backward(x, dy), u⟩ — and pick ε and the tolerance for float32. Some wrong ones
        are right on a batch of one, on constant or tiny inputs, or for a symmetric dy, and some
        are off by only a few per cent; your test must not be fooled.
        Never raise: a candidate that crashes or returns the wrong shape is simply wrong.
    """,
    visible=[Case(pair(*VISIBLE_CANDIDATES[name], name)) for name in VISIBLE_CANDIDATES],
    compare=_compare_verdict,
)

problems = {
    p.name: p for p in (MLP_BACKWARD, STEP_GEMMS, LARGEST_BATCH, PICK_POLICY, IS_CORRECT_BACKWARD)
}
