"""Lab 2's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side,
grader/labs/lab02_backprop.py, is the rest of the lab; this module imports it, never the reverse
(``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

is_correct_backward's cases are a black-box forward pass and a candidate backward pass: on the
exercise side they are plain data (``BlackBox(op, name)``: which operation of OPS;
``Candidate(source, name)``: the candidate's code), so they travel to a sandbox as data. The hidden
pool of candidates — right and wrong backward passes of every operation — lives here alone
(``FORMS``, ``VERDICT``, ``WHY``): the edition installs no right backward pass of an operation a
hidden case uses.
"""

from __future__ import annotations

import numpy as np

import inspect
import textwrap

from ..labs.lab02_backprop import (
    DTYPES,
    OPTIMIZER_SLOTS,
    POLICIES,
    VISIBLE_CANDIDATES,
    BlackBox,
    Candidate,
    _deep_case,
    _mlp_case,
    _probs,
    _standardized,
    grad_of,
    pair,
)
from ..problem import Case


# -- the backward pass of a 2-layer MLP, by hand ---------------------------------------------------

def _mlp_reference(X, W1, W2, G):
    """∂L/∂W1, ∂L/∂W2, ∂L/∂X by the chain rule (the ``after`` check also holds the answer against
    jax.vjp)."""
    Z = X @ W1
    dZ = (G @ W2.T) * (Z > 0)
    return X.T @ dZ, np.maximum(Z, 0.0).T @ G, dZ @ W1.T


def _mlp_hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_mlp_case(rng, *(int(v) for v in rng.integers(1, 40, size=4))) for _ in range(6)]
    # Z = 0 exactly, where relu'(0) = 0 decides (the spec's rule; a mask Z >= 0 lets the gradient
    # through): an all-zero example (a padding row of X: its row of dX) and a dead hidden unit (a
    # zero column of W1: its column of dW1)
    b, d_in, h, d_out = (int(v) for v in rng.integers(2, 12, size=4))
    padded = _mlp_case(rng, b, d_in, h, d_out)
    padded.args[0][int(rng.integers(b))] = 0.0
    dead = _mlp_case(rng, b, d_in, h, d_out)
    dead.args[1][:, int(rng.integers(h))] = 0.0
    return cases + [padded, dead]


# -- GEMMs and FLOPs of one training step, predicted -----------------------------------------------
# tests/test_lab02_backprop.py holds this reference against JAX's own program (the dot_generals of
# make_jaxpr of jax.grad, frozen weights closed over, jax.checkpoint(nothing_saveable) per layer)
# and, without recomputation, against XLA's compiled program (its dots and cost_analysis's FLOPs).


def step_gemms(
    batch: int, widths: list[int], trainable: list[bool], recompute: bool
) -> tuple[int, int, int]:
    # the backward pass starts at the top and stops at the lowest trained weight
    first = trainable.index(True)
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        # recomputed forward; dW; dX
        backward = (recompute and i >= first) + bool(trainable[i]) + (i > first)
        gemms += 1 + backward
        fwd += f
        bwd += backward * f
    return gemms, fwd, bwd


def _gemm_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    # small networks, each pattern of frozen weights: all trained, fine-tuning (the bottom frozen),
    # frozen in the middle, only the top, only the bottom; with and without recomputation
    patterns = (
        "all",
        "bottom frozen",
        "middle frozen",
        "bottom and middle frozen",
        "top only",
        "bottom only",
        "random",
    )
    for k, pattern in enumerate(patterns * 2):
        layers = int(rng.integers(3, 9))
        widths = [int(w) for w in rng.integers(1, 5000, size=layers + 1)]
        cut = int(rng.integers(1, layers - 1))
        trainable = {"all": [True] * layers,
                     "bottom frozen": [i >= cut for i in range(layers)],
                     "middle frozen": [i != cut for i in range(layers)],
                     "bottom and middle frozen": [i >= cut and i != cut + 1 for i in range(layers)],
                     "top only": [i == layers - 1 for i in range(layers)],
                     "bottom only": [i == 0 for i in range(layers)],
                     "random": [bool(t) for t in rng.random(layers) < 0.5]}[pattern]
        if not any(trainable):
            trainable[int(rng.integers(layers))] = True
        cases.append(Case((int(rng.integers(1, 4096)), widths, trainable, k >= len(patterns))))
    # one layer: one forward GEMM and its dW (the data is never differentiated)
    cases.append(
        Case(
            (
                int(rng.integers(1, 4096)),
                [int(w) for w in rng.integers(1, 5000, size=2)],
                [True],
                bool(rng.integers(2)),
            )
        )
    )
    # deep networks: tracing their backward pass takes longer than the time limit
    cases += [_deep_case(rng, int(rng.integers(6000, 9000)), int(rng.integers(1, 4096)), recompute)
              for recompute in (False, True)]
    return cases


# -- the largest batch that fits -------------------------------------------------------------------
# Course §2.7's memory model (the one its cell checks against XLA's buffer assignment, within 12 %):
# fixed bytes (params, grads, fp32 master, optimizer state) and bytes per example (the batch's input
# and target rows; the saved activations, ``saved_per_layer`` arrays per layer plus the loss's one;
# two working gradients). This is the only implementation of the model: the course shows its numbers
# from gpucourse/data/training_memory.json, written by ``compute_course_memory_data`` below
# (tests/test_training_memory.py fails when the file is stale).

# mixed-bf16: bf16 params and grads, fp32 master params and fp32 optimizer state (ZeRO §3.1), bf16
# activations
_MIXED = {"params": 2, "grads": 2, "master": 4, "optimizer": 4, "activations": 2}


def _sizes(dtype: str) -> dict[str, int]:
    if dtype == "mixed-bf16":
        return _MIXED
    per_value = np.dtype(dtype).itemsize
    return {
        "params": per_value,
        "grads": per_value,
        "master": 0,
        "optimizer": per_value,
        "activations": per_value,
    }


def training_memory(
    layers: int, width: int, dtype: str, optimizer: str, saved_per_layer: int
) -> dict[str, int]:
    """§2.7's model of one training step of the tanh stack, term by term: the fixed terms in bytes,
    the terms that grow with the batch in bytes *per example*."""
    size = _sizes(dtype)
    params = layers * (width * width + width)
    value = size["activations"]
    return {
        "params": params * size["params"],
        "grads": params * size["grads"],
        "master": params * size["master"],
        "optimizer": OPTIMIZER_SLOTS[optimizer] * params * size["optimizer"],
        "batch": 2 * width * value,  # input and target rows
        # + the loss's 2·(y − target)
        "activations": (saved_per_layer * layers + 1) * width * value,
        "workspace": 2 * width * value,
    }  # the gradients in flight


FIXED_TERMS = ("params", "grads", "master", "optimizer")
PER_EXAMPLE_TERMS = ("batch", "activations", "workspace")


def _fixed_and_per_example(
    layers: int, width: int, dtype: str, optimizer: str, saved_per_layer: int
) -> tuple[int, int]:
    """(bytes independent of the batch, bytes per example) of the exercise's memory model."""
    m = training_memory(layers, width, dtype, optimizer, saved_per_layer)
    return sum(m[k] for k in FIXED_TERMS), sum(m[k] for k in PER_EXAMPLE_TERMS)


def largest_batch(
    layers: int, width: int, budget_bytes: int, dtype: str, optimizer: str, saved_per_layer: int
) -> int:
    fixed, per_example = _fixed_and_per_example(layers, width, dtype, optimizer, saved_per_layer)
    return max(0, (budget_bytes - fixed) // per_example)


def _batch_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for k in range(12):
        layers, width = int(rng.integers(1, 49)), int(rng.integers(8, 8192))
        saved = (3, 1, 2, 4)[k % 4] if k < 8 else int(rng.integers(1, 6))
        dtype, opt = DTYPES[k % len(DTYPES)], tuple(OPTIMIZER_SLOTS)[k % len(OPTIMIZER_SLOTS)]
        fixed, per = _fixed_and_per_example(layers, width, dtype, opt, saved)
        b = int(rng.integers(2, 5000))
        budget = {0: fixed + b * per,  # exactly b examples fit: a tie
                  1: fixed + b * per - 1,  # one byte short of b
                  2: fixed + per - 1,  # not even one example
                  3: int(fixed * rng.uniform(0.3, 0.99)),  # the model alone does not fit
                  }.get(k % 6, int(fixed + per * rng.uniform(1, 20_000)))
        cases.append(Case((layers, width, int(budget), dtype, opt, saved)))
    return cases


def compute_course_memory_data() -> dict[str, dict[str, int]]:
    """The numbers course §2.7 shows (gpucourse/data/training_memory.json): §2.7's model, term by
    term, of each network the section sizes, fp32 or mixed-precision Adam with JAX's 3 saved arrays
    per layer."""
    nets = {
        "tanh 6x512, fp32": (6, 512, "float32"),
        "tanh 6x512, mixed bf16": (6, 512, "mixed-bf16"),
        "tanh 8x4096, fp32": (8, 4096, "float32"),
        "tanh 32x8192, fp32": (32, 8192, "float32"),
    }
    out = {}
    for name, (layers, width, dtype) in nets.items():
        terms = training_memory(layers, width, dtype, "adam", 3)
        out[name] = {
            "layers": layers,
            "width": width,
            "n_params": layers * (width * width + width),
            "saved_elems_per_example": (3 * layers + 1) * width,
            **{f"{k} per example" if k in PER_EXAMPLE_TERMS else k: v for k, v in terms.items()},
        }
    return out


def write_course_memory_data(path=None):
    """Write compute_course_memory_data() as JSON (default: gpucourse/data/training_memory.json);
    returns the path."""
    import json
    from pathlib import Path

    path = (
        Path(path)
        if path
        else Path(__file__).resolve().parents[2] / "gpucourse" / "data" / "training_memory.json"
    )
    path.parent.mkdir(exist_ok=True, parents=True)
    path.write_text(
        json.dumps(compute_course_memory_data(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return path


# -- pick a checkpointing policy -------------------------------------------------------------------

def grad_temp_bytes(policy_name: str, layers: int, batch: int, width: int) -> int:
    """temp_size_in_bytes of grad_of(policy_name) compiled for these shapes (float32)."""
    import jax
    import jax.numpy as jnp

    weights = jax.ShapeDtypeStruct((layers, width, width), jnp.float32)
    inputs = jax.ShapeDtypeStruct((batch, width), jnp.float32)
    return int(
        grad_of(policy_name).lower(weights, inputs).compile().memory_analysis().temp_size_in_bytes
    )


def pick_policy(layers: int, batch: int, width: int, budget_bytes: int) -> str | None:
    for name in POLICIES:
        if grad_temp_bytes(name, layers, batch, width) <= budget_bytes:
            return name
    return None


def _policy_case(
    rng: np.random.Generator, layers: int, batch: int, width: int, between: str
) -> Case:
    t = [grad_temp_bytes(p, layers, batch, width) for p in POLICIES]
    lo, hi = {
        "everything": (t[0], t[0] * 1.5),
        "dots": (t[1], t[0] - 1),
        "nothing": (t[2], t[1] - 1),
        "none": (t[2] // 2, t[2] - 1),
    }[between]
    return Case((layers, batch, width, int(rng.uniform(lo, hi))))


def _policy_hidden(rng: np.random.Generator) -> list[Case]:
    # one random shape (compiling is the slow part), budgets in every gap between the policies'
    # needs
    layers, batch, width = (
        int(rng.integers(2, 7)),
        int(rng.integers(20, 300)),
        int(rng.integers(8, 64)),
    )
    cases = [
        _policy_case(rng, layers, batch, width, between)
        for between in ("nothing", "dots", "none", "everything")
    ]
    # ties: a budget exactly equal to a policy's working memory fits it (the spec: "at most
    # budget_bytes")
    need = {p: grad_temp_bytes(p, layers, batch, width) for p in POLICIES}
    return cases + [
        Case((layers, batch, width, need["dots"])),
        Case((layers, batch, width, need["nothing"])),
    ]


# -- diagnose — test a backward pass against a black box -------------------------------------------
# The pool: a candidate backward pass per neutral letter, right or wrong, for one operation of the
# exercise side's OPS (p softmax over rows, q standardize rows, r xᵀx, s cumsum along rows, t tanh,
# u logsumexp, x tanh − 64, y sin(10x), z logsumexp of x + 300; v and w are the visible cases').
# tests/test_lab02_backprop.py holds every verdict against jax.vjp of a JAX twin of
# each operation, and each wrong one against the inputs it is right on. A candidate travels as its
# source (``Candidate.source``).

def _form_a(x, dy):
    y = _probs(x)
    return y * (dy - (dy * y).sum(axis=1, keepdims=True))


def _form_b(x, dy):
    y = _probs(x)
    jac = np.einsum("bi,ij->bij", y, np.eye(y.shape[1])) - np.einsum("bi,bj->bij", y, y)
    return np.einsum("bij,bi->bj", jac, dy)


def _form_c(x, dy):
    y = _probs(x)
    return y * (dy - dy.mean(axis=1, keepdims=True))


def _form_d(x, dy):
    y = _probs(x)
    return y * (dy - (dy * y).sum())


def _form_e(x, dy):
    x_hat, s = _standardized(x)
    return (
        dy - dy.mean(axis=1, keepdims=True) - x_hat * (dy * x_hat).mean(axis=1, keepdims=True)
    ) / s


def _form_f(x, dy):
    _, s = _standardized(x)
    return dy / s


def _form_g(x, dy):
    x_hat, s = _standardized(x)
    return (
        (dy - dy.mean(axis=1, keepdims=True) - x_hat * (dy * x_hat).mean(axis=1, keepdims=True))
        / s
        / 0.95
    )


def _form_h(x, dy):
    return np.asarray(x) @ (dy + dy.T)


def _form_i(x, dy):
    return (dy.T @ np.asarray(x).T).T + np.asarray(x) @ dy.T


def _form_j(x, dy):
    return 2 * np.asarray(x) @ dy


def _form_k(x, dy):
    return np.cumsum(dy[:, ::-1], axis=1)[:, ::-1]


def _form_l(x, dy):
    return np.cumsum(dy, axis=1)


def _form_m(x, dy):
    return dy * (1 - np.tanh(np.asarray(x, dtype=np.float64)) ** 2)


def _form_n(x, dy):
    return dy * (1 - np.asarray(x, dtype=np.float64) ** 2)


def _form_z(x, dy):
    return dy * (np.tanh(np.asarray(x, dtype=np.float64)) ** 2 - 1)


def _form_o(x, dy):
    x64 = np.asarray(x, dtype=np.float64)
    return dy * (1 - np.tanh(x64) ** 2) + 0.03 * x64


def _form_v(x, dy):
    return _probs(x) * np.asarray(dy)[:, None]


def _form_w(x, dy):
    return _probs(x) * dy


def _form_x(x, dy):
    return np.exp(np.asarray(x, dtype=np.float64)) * np.asarray(dy)[:, None]


def _form_y(x, dy):
    return (_probs(x) * np.asarray(dy)[:, None]).ravel()


def _form_p(x, dy):
    return dy * (1 - np.tanh(np.asarray(x, dtype=np.float64)) ** 2)


def _form_q(x, dy):
    return 10 * dy * np.cos(10 * np.asarray(x, dtype=np.float64))


def _form_r(x, dy):
    p = _probs(x)  # softmax is the same for x and x + 300
    return p * np.asarray(dy, dtype=np.float64)[:, None]


_FORM_OPS = {
    "a": "p",
    "b": "p",
    "c": "p",
    "d": "p",
    "e": "q",
    "f": "q",
    "g": "q",
    "h": "r",
    "i": "r",
    "j": "r",
    "k": "s",
    "l": "s",
    "m": "t",
    "n": "t",
    "o": "t",
    "z": "t",
    "v": "u",
    "w": "u",
    "x": "u",
    "y": "u",
    "p": "x",
    "q": "y",
    "r": "z",
}


def _source(fn) -> str:
    """A form's code as a candidate's source: ``def backward(x, dy): ...`` (it calls _probs /
    _standardized, which the exercise side puts in reach)."""
    return textwrap.dedent(inspect.getsource(fn)).replace(f"def {fn.__name__}(", "def backward(", 1)


FORMS: dict[str, tuple[str, str]] = {
    f: (op, _source(globals()[f"_form_{f}"])) for f, op in _FORM_OPS.items()
}
VERDICT = {
    "a": True,
    "b": True,
    "c": False,
    "d": False,
    "e": True,
    "f": False,
    "g": False,
    "h": True,
    "i": True,
    "j": False,
    "k": True,
    "l": False,
    "m": True,
    "n": False,
    "o": False,
    "v": True,
    "w": False,
    "x": False,
    "y": False,
    "z": False,
    "p": True,
    "q": True,
    "r": True,
}
CORRECT = tuple(form for form, right in VERDICT.items() if right)
WHY = {  # what each form is
    "a": "softmax: y·(dy − Σ dy·y)",
    "b": "softmax through its explicit Jacobian diag(y) − y·yᵀ (einsum)",
    "c": (
        "softmax with the mean of dy for Σ dy·y: right only when y is uniform (constant rows of x)"
    ),
    "d": (
        "softmax with Σ dy·y summed over the whole batch, not per row: right only for a batch"
        " of one"
    ),
    "e": "standardize: (dy − mean dy − x̂·mean(dy·x̂)) / σ",
    "f": "standardize, dy / σ: no chain through the mean and the variance",
    "g": (
        "standardize, right formula / 0.95 (a dropout rescale that is not there): 5 % too large"
        " everywhere"
    ),
    "h": "gram: x·(dy + dyᵀ)",
    "i": "gram, (dyᵀ·xᵀ)ᵀ + x·dyᵀ: the same products another way round",
    "j": "gram, 2·x·dy: right only for a symmetric dy (dy = ones, dy = y of L = ½Σy²)",
    "k": "cumsum: the reversed cumsum of dy",
    "l": "cumsum, the cumsum of dy: right only for one column",
    "m": "tanh: dy·(1 − tanh²x)",
    "n": "tanh, dy·(1 − x²): right only as x → 0 (tiny test inputs)",
    "o": (
        "tanh + 0.03·x, an L2 penalty's gradient (another loss's): off by a few per cent, below a"
        " loose tolerance"
    ),
    "z": "tanh, dy·(tanh²x − 1): the sign flipped (the gradient of −L)",
    "v": "logsumexp: softmax(x)·dy[:, None]",
    "w": (
        "logsumexp, softmax(x)·dy: dy broadcast along the rows; runs only when B = n, right then"
        " only for a constant dy"
    ),
    "x": "logsumexp, exp(x)·dy[:, None]: the softmax's normalisation forgotten",
    "y": (
        "logsumexp, the right numbers flattened: shape (B·n,), not x's (a dot product of the"
        " flattened arrays cannot tell)"
    ),
    "p": (
        "tanh − 64: dy·(1 − tanh²x), right; float32 rounds its outputs near 64 to 2^-17, most of a"
        " 1e-3 step's change: a tolerance without the outputs' own rounding rejects it"
    ),
    "q": (
        "sin(10x): 10·dy·cos(10x), right; curved, so a step's truncation error is larger than"
        " float32's rounding: a tolerance of the rounding alone rejects it"
    ),
    "r": (
        "logsumexp of x + 300: softmax(x)·dy[:, None], right; float32 rounds its outputs near 300"
        " to 2^-16, a few per cent of a 1e-3 step's change: a tolerance without the outputs' own"
        " rounding rejects it"
    ),
}
VISIBLE_VERDICT = {
    "squash": True,
    "squash_4_percent_high": False,
    "standardize_no_chain_through_mean": False,
    "gram_2x_dy": False,
    "softplus_plus_300": True,
}
# the hidden pool: every form whose code the edition does not already show (the visible cases show f
# and j)
HIDDEN_FORMS = tuple(
    f for f in sorted(FORMS) if FORMS[f][1] not in {src for _, src in VISIBLE_CANDIDATES.values()}
)
_BY_SOURCE = {**{src: VERDICT[f] for f, (_, src) in FORMS.items()},
              **{VISIBLE_CANDIDATES[n][1]: v for n, v in VISIBLE_VERDICT.items()}}


def candidate(form: str, name: str = "") -> tuple[BlackBox, Candidate]:
    """The case arguments of a form of the pool."""
    op, src = FORMS[form]
    return pair(op, src, name)


def is_correct_backward(forward: BlackBox, backward: Candidate) -> bool:
    # a lookup, with nothing to mutate: mutation testing mutates the notebook's solution instead
    # (grader/strength)
    return _BY_SOURCE[backward.source]


def _diagnose_hidden(rng: np.random.Generator) -> list[Case]:
    order = rng.permutation(len(HIDDEN_FORMS))
    return [Case(candidate(HIDDEN_FORMS[int(i)], f"candidate_{k}")) for k, i in enumerate(order)]


ANSWERS = {
    "mlp_backward": (_mlp_reference, _mlp_hidden),
    "step_gemms": (step_gemms, _gemm_hidden),
    "largest_batch": (largest_batch, _batch_hidden),
    "pick_policy": (pick_policy, _policy_hidden),
    "is_correct_backward": (is_correct_backward, _diagnose_hidden),
}
