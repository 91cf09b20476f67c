"""Unit tests of gpucourse.training_memory (the residual reader checked against JAX and XLA) and of course §2.7's
memory model, which lives on the answer side (lab 2 exercise 3's reference) and reaches the course as stored data."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import pytest

from gpucourse import training_memory as tm
from grader.answers import lab02_backprop as answer_side


# -- course §2.7's memory model: lab 2 exercise 3's reference (answer side), shown by the course from stored data --

def test_memory_model_terms():
    m = answer_side.training_memory(2, 10, "float32", "adam", 3)
    params = 2 * (10 * 10 + 10)
    assert (m["params"], m["grads"], m["master"], m["optimizer"]) == (4 * params, 4 * params, 0, 8 * params)
    assert (m["batch"], m["activations"], m["workspace"]) == (2 * 10 * 4, (3 * 2 + 1) * 10 * 4, 2 * 10 * 4)
    assert answer_side.training_memory(1, 4, "float16", "sgd", 1)["optimizer"] == 0
    assert answer_side.training_memory(1, 4, "float64", "momentum", 1)["optimizer"] == 8 * 20
    with pytest.raises(KeyError):
        answer_side.training_memory(1, 4, "float32", "lion", 1)


def test_mixed_precision_is_16_bytes_per_parameter_with_adam():
    """ZeRO §3.1: bf16 params (2) + bf16 grads (2) + fp32 master (4) + fp32 m and v (8) = 16 bytes/param — the
    same as plain fp32 Adam; only the activations (and batch, workspace) shrink to 2 bytes per value."""
    fp32 = answer_side._fixed_and_per_example(3, 64, "float32", "adam", 3)
    mixed = answer_side._fixed_and_per_example(3, 64, "mixed-bf16", "adam", 3)
    assert mixed[0] == fp32[0] == 16 * 3 * (64 * 64 + 64) and 2 * mixed[1] == fp32[1]
    assert answer_side._fixed_and_per_example(1, 10, "mixed-bf16", "sgd", 1)[0] == 8 * 110  # 2 + 2 + 4


@pytest.mark.parametrize("budget", [0, 15_999, 28_159, 28_160, 28_161, 10**6, 10**9])
def test_largest_batch_matches_brute_force(budget):
    fixed, per = answer_side._fixed_and_per_example(2, 10, "float32", "adam", 3)  # 3520 + 440 per example
    got = answer_side.largest_batch(2, 10, budget, "float32", "adam", 3)
    fits = [b for b in range(0, 3_000_000) if fixed + b * per <= budget]
    assert got == (fits[-1] if fits else 0)


def test_course_memory_data_is_not_stale():
    """gpucourse/data/training_memory.json (what course §2.7 shows) is what the answer side's model gives now: if
    this fails, run python -c "from grader.answers.lab02_backprop import write_course_memory_data as w; w()"."""
    assert tm.course_memory_data() == json.loads(json.dumps(answer_side.compute_course_memory_data()))


def test_the_course_package_does_not_ship_the_memory_model():
    """Lab 2 exercise 3 is to write it: no installed helper computes it (issue 20)."""
    for name in ("estimate", "largest_batch", "TrainingMemory", "MIXED_BF16", "OPTIMIZER_SLOTS"):
        assert not hasattr(tm, name), name


def _mlp(Ws, X):
    h = X
    for W in Ws:
        h = jnp.tanh(h @ W)
    return jnp.sum(h ** 2)


def test_saved_residuals_match_jax():
    from jax._src.ad_checkpoint import saved_residuals as private  # cross-check the parser against JAX itself

    Ws = [jnp.ones((5, 7)), jnp.ones((7, 3))]
    X = jnp.ones((4, 5))
    got = tm.saved_residuals(_mlp, Ws, X)
    ref = private(_mlp, Ws, X)
    assert [r.shape for r in got] == [tuple(a.shape) for a, _ in ref]
    assert sum(r.is_argument for r in got) == 3
    assert tm.saved_bytes(_mlp, Ws, X) == sum(r.nbytes for r in got if not r.is_argument) > 0
    assert tm.saved_bytes(_mlp, Ws, X, include_arguments=True) == sum(r.nbytes for r in got)


def test_saved_bytes_grow_with_batch_and_checkpointing_cuts_them():
    Ws = jnp.ones((4, 16, 16)) * 0.1

    def stack(policy):
        layer = lambda h, W: (jnp.tanh(h @ W), None)  # noqa: E731
        if policy is not None:
            layer = jax.checkpoint(layer, policy=policy)
        return lambda Ws, X: jnp.sum(jax.lax.scan(layer, X, Ws)[0] ** 2)

    plain = [tm.saved_bytes(stack(None), Ws, jnp.ones((b, 16))) for b in (8, 16)]
    assert plain[1] == 2 * plain[0] - tm.saved_bytes(stack(None), Ws, jnp.ones((0, 16)))
    nothing = tm.saved_bytes(stack(jax.checkpoint_policies.nothing_saveable), Ws, jnp.ones((8, 16)))
    assert nothing < plain[0]


def _plain_stack(Ws, X):
    return jax.lax.scan(lambda h, W: (jnp.tanh(h @ W), None), X, Ws)[0]


def test_tanh_stack_keeps_one_output_per_layer_and_gives_the_same_gradients():
    import numpy as np

    rng = np.random.default_rng(1)
    L, B, d = 5, 7, 12  # nothing square in the batch dimension
    Ws = jnp.asarray(rng.standard_normal((L, d, d)) / np.sqrt(d), jnp.float32)
    X = jnp.asarray(rng.standard_normal((B, d)), jnp.float32)
    plain = lambda Ws, X: jnp.sum(_plain_stack(Ws, X) ** 2)  # noqa: E731
    minimal = lambda Ws, X: jnp.sum(tm.tanh_stack(Ws, X) ** 2)  # noqa: E731
    assert np.allclose(tm.tanh_stack(Ws, X), _plain_stack(Ws, X), atol=1e-6)
    for a, b in zip(jax.grad(plain, argnums=(0, 1))(Ws, X), jax.grad(minimal, argnums=(0, 1))(Ws, X)):
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5)
    kept = [r for r in tm.saved_residuals(minimal, Ws, X) if not r.is_argument]
    assert sorted(r.shape for r in kept) == sorted([(L, B, d), (B, d)])  # y_1..y_L, and 2·y_L for the loss
    default = [r for r in tm.saved_residuals(plain, Ws, X) if not r.is_argument]
    assert sum(r.shape == (L, B, d) for r in default) == 3  # JAX's own choice under scan: three per layer


def test_compile_for_analysis_reads_the_same_buffers_and_flops():
    Ws = jnp.ones((3, 32, 32)) * 0.1
    X = jnp.ones((40, 32))
    f = jax.grad(lambda Ws, X: jnp.sum(_plain_stack(Ws, X) ** 2))
    fast, full = tm.compile_for_analysis(f, Ws, X), jax.jit(f).lower(Ws, X).compile()
    assert fast.memory_analysis().temp_size_in_bytes == full.memory_analysis().temp_size_in_bytes
    assert tm.compiled_flops(fast) == tm.compiled_flops(full) > 0
    assert tm.xla_peak_bytes(fast) == tm.xla_peak_bytes(full)


def test_transformer_formulas():
    s, b, h, a = 128, 2, 64, 4
    kor = tm.transformer_activation_bytes(s, b, h, a)  # Korthikanti et al.: 34·s·b·h + 5·a·s²·b (16-bit)
    assert sum(kor.values()) == 34 * s * b * h + 5 * a * s * s * b
    plain = tm.transformer_activation_bytes(s, b, h, a, value_bytes=4, dropout=False)
    assert sum(plain.values()) == 4 * (16 * s * b * h + a * s * s * b)
    assert tm.transformer_params(h, 3) == 3 * (12 * h * h + 4 * h)
    f = tm.transformer_train_flops(1000, 2, 64, 32, tokens=10)
    assert f == {"6N": 60_000.0, "attention": 12.0 * 2 * 64 * 32 * 10}


def test_transformer_train_flops_match_xla_cost_model():
    import numpy as np

    h, a, b, s = 32, 4, 2, 48
    params = tm.init_transformer_block(h, np.random.default_rng(0))
    assert sum(p.size for p in jax.tree.leaves(params)) == tm.transformer_params(h)
    x = jax.ShapeDtypeStruct((b, s, h), jnp.float32)
    loss = lambda p, x: jnp.sum(tm.transformer_block(p, x, a) ** 2)  # noqa: E731
    xla = tm.compiled_flops(tm.compile_for_analysis(jax.grad(loss), params, x))
    model = sum(tm.transformer_train_flops(tm.transformer_params(h), 1, s, h, b * s).values())
    assert 1.0 <= xla / model < 1.15  # XLA also counts elementwise work (softmax, GELU, LayerNorm): ~10 % at d = 32


def test_xla_peak_bytes_bounds_the_estimate():
    Ws = jnp.ones((3, 64, 64)) * 0.1
    X = jnp.ones((256, 64))
    loss = lambda Ws, X: jnp.sum(jax.lax.scan(lambda h, W: (jnp.tanh(h @ W), None), X, Ws)[0] ** 2)  # noqa: E731
    c = jax.jit(jax.grad(loss)).lower(Ws, X).compile()
    peak = tm.xla_peak_bytes(c)
    saved = tm.saved_bytes(loss, Ws, X)
    args = Ws.nbytes + X.nbytes
    assert peak >= args + Ws.nbytes + saved  # arguments, the gradient and the residuals are all live at once
    assert peak < 2 * (args + Ws.nbytes + saved)


@pytest.mark.gpu
def test_estimate_brackets_xla_buffers_on_the_gpu():
    """On the GPU, XLA's buffer assignment for an SGD step holds at least params + grads, and no more than a
    few times the estimate (activations saved: each layer's input and tanh output per example)."""
    import jax
    import jax.numpy as jnp

    import gpucourse as gc

    dev = gc.get_backend().jax_device
    assert dev.platform == "gpu"
    d, b, layers = 1024, 256, 3
    ws = [jax.device_put(jnp.full((d, d), 1e-3, jnp.float32), dev) for _ in range(layers)]
    x = jax.device_put(jnp.ones((b, d), jnp.float32), dev)

    def loss(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return jnp.sum(x ** 2)

    step = jax.jit(lambda ws, x: [w - 1e-3 * g for w, g in zip(ws, jax.grad(loss)(ws, x))])
    xla = tm.xla_peak_bytes(step.lower(ws, x).compile())
    params_and_grads = 2 * 4 * layers * d * d
    est_total = params_and_grads + 4 * b * (2 * layers * d + d)  # saved: input and tanh output per layer; the batch
    assert params_and_grads <= xla <= 4 * est_total, (xla, est_total)
