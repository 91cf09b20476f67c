"""Where a training step's memory goes: parameters, gradients, optimizer state, saved activations.

Section 2 of the course uses this to explain *why a GPU runs out of memory at a certain batch size*:
the first terms are fixed by the model, the activations saved for the backward pass grow linearly
with the batch. The memory model itself (params + grads (+ fp32 master weights) + optimizer state +
activations + batch + gradients in flight) is lab 2's exercise 3: the course teaches it in prose and
shows its numbers from stored data (``gpucourse/data/training_memory.json``), and checks them
against XLA's own buffer assignment (``memory_analysis``) with the helpers here.

- ``saved_residuals`` / ``saved_bytes``: what JAX's reverse mode really keeps
  (``print_saved_residuals``);
- ``tanh_stack``: a stack of tanh layers whose backward pass keeps the *minimum* (each layer's
  output, once);
- ``transformer_block``, ``transformer_activation_bytes`` (Korthikanti et al. 2022) and
  ``transformer_train_flops`` (6·N per token plus the attention term 12·L·s·d, PaLM appendix B);
- ``compile_for_analysis``: compile only to read XLA's buffer assignment and cost model.

Units: bytes everywhere; element counts are called ``*_elems``. Nothing here touches a device.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable

import numpy as np

def course_memory_data() -> dict[str, dict[str, int]]:
    """The numbers of course §2.7's memory model for the networks it sizes, term by term (bytes; the
    terms that grow with the batch per example), as stored in
    ``gpucourse/data/training_memory.json`` (computed by the instructor's reference of lab 2's
    exercise 3)."""
    import json

    return json.loads(
        resources.files("gpucourse")
        .joinpath("data/training_memory.json")
        .read_text(encoding="utf-8")
    )


# -- what JAX saves for the backward pass ----------------------------------------------------------

_SHAPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[\d,\s]*)\]\s+(?P<why>.*)$")
# bytes per element of the dtype codes JAX prints (f32[8,7] ...)
_ITEMSIZE = {
    "bool": 1,
    "i8": 1,
    "u8": 1,
    "f16": 2,
    "bf16": 2,
    "i16": 2,
    "f32": 4,
    "i32": 4,
    "u32": 4,
    "f64": 8,
    "i64": 8,
    "u64": 8,
}


@dataclass(frozen=True)
class Residual:
    """One array the forward pass keeps for the backward pass."""

    shape: tuple[int, ...]
    itemsize: int
    why: str  # JAX's description: "from the argument x", "output of tanh from ...", ...

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def is_argument(self) -> bool:
        return self.why.startswith("from the argument")


def saved_residuals(f: Callable[..., Any], *args: Any) -> list[Residual]:
    """What ``jax.grad(f)`` keeps from the forward pass, as printed by
    ``jax.ad_checkpoint.print_saved_residuals``.

    Parsed from the public printer's text (one line per residual: ``f32[8,7] output of tanh from
    ...``).
    """
    from jax.ad_checkpoint import print_saved_residuals

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_saved_residuals(f, *args)
    out = []
    for line in buf.getvalue().splitlines():
        m = _SHAPE.match(line.strip())
        if not m:
            continue
        shape = tuple(int(v) for v in m["shape"].replace(" ", "").split(",") if v)
        out.append(Residual(shape, _ITEMSIZE.get(m["dtype"], 4), m["why"]))
    return out


def saved_bytes(f: Callable[..., Any], *args: Any, include_arguments: bool = False) -> int:
    """Bytes of the residuals ``jax.grad(f)`` saves; arguments (kept alive anyway) excluded by
    default."""
    return sum(
        r.nbytes for r in saved_residuals(f, *args) if include_arguments or not r.is_argument
    )


def xla_peak_bytes(compiled: Any) -> int:
    """Bytes XLA's buffer assignment reserves for one call of a compiled function:
    arguments + outputs − outputs aliased onto donated arguments + temporaries."""
    m = compiled.memory_analysis()
    return int(
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        - m.alias_size_in_bytes
        + m.temp_size_in_bytes
    )


def compile_for_analysis(f: Callable[..., Any], *args: Any, **jit_kwargs: Any) -> Any:
    """``jax.jit(f, **jit_kwargs).lower(*args).compile()`` for *reading* XLA's buffer assignment and
    cost model, never for running: on the CPU, LLVM's code optimisation is switched off
    (``xla_backend_optimization_level = 0``), which compiles 2–3× faster and leaves
    ``memory_analysis()`` and ``cost_analysis()`` unchanged — both are computed on the optimized HLO
    before code generation. ``args`` may be ``jax.ShapeDtypeStruct``s."""
    import jax

    lowered = jax.jit(f, **jit_kwargs).lower(*args)
    if jax.default_backend() == "cpu":
        with contextlib.suppress(Exception):  # an XLA without this option: compile normally below
            return lowered.compile(compiler_options={"xla_backend_optimization_level": 0})
    return lowered.compile()


def compiled_flops(compiled: Any) -> float:
    """FLOPs of one call, from XLA's cost model (``cost_analysis()``; older JAX returns a list of
    dicts)."""
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return float((cost or {}).get("flops", 0.0))


# -- the minimum a stack of tanh layers must save --------------------------------------------------
#
# Layer l computes y_l = tanh(y_{l-1} · W_l) with y_0 = X. Its backward pass needs
#   dZ_l = dY_l ⊙ (1 − y_l²)     (tanh' = 1 − tanh², so y_l alone gives the derivative)
#   dW_l = y_{l-1}ᵀ · dZ_l,  dY_{l-1} = dZ_l · W_lᵀ i.e. only y_{l-1} and y_l — and y_{l-1} is the
#   previous layer's output. The minimum to keep is one array per layer: y_1 … y_L (X is an
#   argument, alive anyway). JAX's reverse mode keeps more: each primitive's rule chooses its own
#   residuals (tanh's keeps y and 1 − y), and under lax.scan the carry entering layer l and the
#   output of layer l − 1 are stacked as two separate residuals. `tanh_stack` writes the backward
#   pass by hand (jax.custom_vjp) and keeps exactly y_1 … y_L.

def _tanh_stack_forward(Ws: Any, X: Any) -> tuple[Any, tuple[Any, Any, Any]]:
    from jax import lax
    import jax.numpy as jnp

    def layer(h, W):  # h: (B, d_in), W: (d_in, d_out)
        y = jnp.tanh(h @ W)
        return y, y

    out, ys = lax.scan(layer, X, Ws)  # ys: (L, B, d): every layer's output, the only residual
    return out, (Ws, X, ys)


def _tanh_stack_backward(res: tuple[Any, Any, Any], g: Any) -> tuple[Any, Any]:
    from jax import lax
    import jax.numpy as jnp

    # the forward pass's weights, input and layer outputs (saved for the backward pass)
    Ws, X, ys = res

    def layer_back(dy, inputs):  # dy: (B, d) gradient w.r.t. this layer's output
        W, l = inputs
        y = ys[l]
        # the layer's input: X or the previous output
        h = jnp.where(l == 0, X, ys[jnp.maximum(l - 1, 0)])
        dz = dy * (1 - y * y)  # tanh' from the saved output
        return dz @ W.T, h.T @ dz  # (dX of this layer, dW)

    dX, dWs = lax.scan(layer_back, g, (Ws, jnp.arange(Ws.shape[0])), reverse=True)
    return dWs, dX


def _make_tanh_stack() -> Callable[[Any, Any], Any]:
    import jax

    @jax.custom_vjp
    def tanh_stack(Ws: Any, X: Any) -> Any:
        """Output of L tanh layers (Ws: (L, d, d), X: (B, d)); its backward pass saves only each
        layer's output."""
        return _tanh_stack_forward(Ws, X)[0]

    tanh_stack.defvjp(_tanh_stack_forward, _tanh_stack_backward)
    return tanh_stack


_TANH_STACK: Callable[[Any, Any], Any] | None = None


def tanh_stack(Ws: Any, X: Any) -> Any:
    """``y_L`` of the stack y_l = tanh(y_{l-1} · Ws[l]), y_0 = X, with a hand-written backward pass
    that keeps the minimum: every layer's output once, (L, B, d) in all. Same values and gradients
    as the plain ``lax.scan``."""
    global _TANH_STACK
    if _TANH_STACK is None:  # built on first use: importing this module must not import JAX
        _TANH_STACK = _make_tanh_stack()
    return _TANH_STACK(Ws, X)


# -- a transformer layer: parameters, FLOPs, activations -------------------------------------------

def layer_norm(x: Any, gain: Any, bias: Any, eps: float = 1e-5) -> Any:
    import jax.numpy as jnp
    from jax import lax

    row_mean = x.mean(-1, keepdims=True)
    var = ((x - row_mean) ** 2).mean(-1, keepdims=True)
    return (x - row_mean) * lax.rsqrt(var + eps) * gain + bias


def init_transformer_block(
    d_model: int, rng: np.random.Generator, dtype: Any = "float32"
) -> dict[str, Any]:
    """Parameters of one pre-LayerNorm GPT block of width ``d_model`` (MLP 4×wider, no biases in the
    matmuls): 12·d² + 4·d parameters."""
    import jax.numpy as jnp

    h = d_model

    def dense(n_in: int, n_out: int) -> Any:
        return jnp.asarray(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in), dtype)

    return {
        "ln1_gain": jnp.ones(h, dtype),
        "ln1_bias": jnp.zeros(h, dtype),
        "w_qkv": dense(h, 3 * h),
        "w_out": dense(h, h),
        "ln2_gain": jnp.ones(h, dtype),
        "ln2_bias": jnp.zeros(h, dtype),
        "w_up": dense(h, 4 * h),
        "w_down": dense(4 * h, h),
    }


def transformer_block(params: dict[str, Any], x: Any, heads: int) -> Any:
    """One pre-LN GPT block: x + attention(LN(x)), then + MLP(LN(·)), causal, no dropout. x: (b, s,
    h)."""
    import jax
    import jax.numpy as jnp

    b, s, h = x.shape
    head_dim = h // heads

    def split_heads(t):  # (b, s, h) -> (b, a, s, h/a)
        return t.reshape(b, s, heads, head_dim).transpose(0, 2, 1, 3)

    q, k, v = (
        split_heads(t)
        for t in jnp.split(
            layer_norm(x, params["ln1_gain"], params["ln1_bias"]) @ params["w_qkv"], 3, axis=-1
        )
    )
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim)  # (b, a, s, s): the attention matrix
    scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    x = x + (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h) @ params["w_out"]
    # (b, s, 4h)
    up = jax.nn.gelu(layer_norm(x, params["ln2_gain"], params["ln2_bias"]) @ params["w_up"])
    return x + up @ params["w_down"]


def transformer_activation_bytes(
    seq: int, batch: int, d_model: int, heads: int, *, value_bytes: int = 2, dropout: bool = True
) -> dict[str, int]:
    """Activation bytes one transformer layer keeps for its backward pass, term by term, after
    Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4.1
    (no recomputation, no parallelism). With 16-bit values and dropout the total is s·b·h·34 +
    5·a·s²·b bytes.

    Values are ``value_bytes`` each; dropout masks are 1 byte per element. Without dropout the masks
    and the dropout output that attention over V reads disappear: 16·s·b·h + a·s²·b values."""
    sbh, as2b, v = seq * batch * d_model, heads * seq * seq * batch, value_bytes
    terms = {
        "QKV matmul input": v * sbh,
        "Q and K (for QKᵀ)": 2 * v * sbh,
        "softmax output": v * as2b,
        "V": v * sbh,
        "attention-output projection input": v * sbh,
        "MLP up-projection input": v * sbh,
        "GELU input": 4 * v * sbh,
        "MLP down-projection input": 4 * v * sbh,
        "two LayerNorm inputs": 2 * v * sbh,
    }
    if dropout:
        terms.update({"attention dropout mask": as2b, "attention dropout output": v * as2b,
                      "two residual dropout masks": 2 * sbh})
    return terms


def transformer_params(d_model: int, layers: int = 1) -> int:
    """Parameters of ``layers`` blocks of ``init_transformer_block``: 12·d² + 4·d each."""
    return layers * (12 * d_model * d_model + 4 * d_model)


def transformer_train_flops(
    n_params: int, layers: int, seq: int, d_model: int, tokens: int
) -> dict[str, float]:
    """FLOPs of one training step (forward + backward) over ``tokens`` tokens of context ``seq``:
    6·N per token for the parameter GEMMs (2 forward + 4 backward per multiply-add of a weight) plus
    the attention GEMMs QKᵀ and P·V, 2·2·s·d forward per token and layer, ×3 for training: 12·L·s·d
    per token (Chowdhery et al. 2022, PaLM, appendix B; causal masking is not subtracted — a dense
    kernel computes the whole s×s matrix)."""
    return {"6N": 6.0 * n_params * tokens, "attention": 12.0 * layers * seq * d_model * tokens}
