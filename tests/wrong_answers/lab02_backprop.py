"""Plausible wrong answers to lab 2, one or a list per solution cell: each must score less than full marks."""

WRONG = {
    "mlp_backward": [
        # the classic missing transposes: dW2 = G·H and dX = dZ·W1 — shapes only work out when they are square
        '''def mlp_backward(X, W1, W2, G):
    Z = X @ W1
    H = np.maximum(Z, 0.0)
    dW2 = H.T @ G
    dH = G @ W2.T
    dZ = dH * (Z > 0)
    return X.T @ dZ, dW2, dZ @ W1
''',
        # relu'(0) = 1: the mask Z >= 0 lets the gradient through where Z is exactly 0 (a zero example, a dead unit)
        '''def mlp_backward(X, W1, W2, G):
    Z = X @ W1
    H = np.maximum(Z, 0.0)
    dZ = (G @ W2.T) * (Z >= 0)
    return X.T @ dZ, H.T @ G, dZ @ W1.T
''',
    ],
    "step_gemms": [
        # the old answer: every weight trained, nothing recomputed (trainable and recompute ignored)
        '''def step_gemms(batch, widths, trainable, recompute):
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        gemms += 2 + (i > 0)
        fwd += f
        bwd += f * (1 + (i > 0))
    return gemms, fwd, bwd
''',
        # a frozen layer skipped by the backward pass: no dX through it (the gradient cannot reach the trained
        # weights below a frozen layer)
        '''def step_gemms(batch, widths, trainable, recompute):
    first = trainable.index(True)
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        n = (recompute and i >= first) + trainable[i] + (trainable[i] and i > first)
        gemms += 1 + n
        fwd += f
        bwd += n * f
    return gemms, fwd, bwd
''',
        # dX for every layer but the first, as if all were trained: the gradient pushed down into frozen layers
        # that nothing below needs
        '''def step_gemms(batch, widths, trainable, recompute):
    first = trainable.index(True)
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        n = (recompute and i >= first) + trainable[i] + (i > 0)
        gemms += 1 + n
        fwd += f
        bwd += n * f
    return gemms, fwd, bwd
''',
        # recomputation of every layer, also of the frozen ones below the lowest trained weight (never visited)
        '''def step_gemms(batch, widths, trainable, recompute):
    first = trainable.index(True)
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        n = bool(recompute) + trainable[i] + (i > first)
        gemms += 1 + n
        fwd += f
        bwd += n * f
    return gemms, fwd, bwd
''',
        # the recomputed forward GEMMs counted as forward FLOPs
        '''def step_gemms(batch, widths, trainable, recompute):
    first = trainable.index(True)
    gemms = fwd = bwd = 0
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        f = 2 * batch * d_in * d_out
        again = recompute and i >= first
        gemms += 1 + again + trainable[i] + (i > first)
        fwd += f * (1 + again)
        bwd += f * (trainable[i] + (i > first))
    return gemms, fwd, bwd
''',
    ],
    "largest_batch": [
        # the old model (issue 21, G1): every layer's output once, the batch, no loss residual, no gradients in
        # flight — the hand-written minimum, not what JAX keeps; ~3x too optimistic for JAX's 3 arrays per layer
        '''def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    slots = {"sgd": 0, "momentum": 1, "adam": 2}
    if dtype == "mixed-bf16":
        per_param, value = 2 + 2 + 4 + 4 * slots[optimizer], 2
    else:
        value = np.dtype(dtype).itemsize
        per_param = (2 + slots[optimizer]) * value
    fixed = layers * (width * width + width) * per_param
    per_example = (2 + layers) * width * value
    return max(0, (budget_bytes - fixed) // per_example)
''',
        # JAX's 3 arrays per layer always: saved_per_layer ignored
        '''def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    slots = {"sgd": 0, "momentum": 1, "adam": 2}
    if dtype == "mixed-bf16":
        per_param, value = 2 + 2 + 4 + 4 * slots[optimizer], 2
    else:
        value = np.dtype(dtype).itemsize
        per_param = (2 + slots[optimizer]) * value
    fixed = layers * (width * width + width) * per_param
    per_example = (2 + 3 * layers + 1 + 2) * width * value
    return max(0, (budget_bytes - fixed) // per_example)
''',
        # no gradients in flight (the saved activations and the batch only)
        '''def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    slots = {"sgd": 0, "momentum": 1, "adam": 2}
    if dtype == "mixed-bf16":
        per_param, value = 2 + 2 + 4 + 4 * slots[optimizer], 2
    else:
        value = np.dtype(dtype).itemsize
        per_param = (2 + slots[optimizer]) * value
    fixed = layers * (width * width + width) * per_param
    per_example = (2 + saved_per_layer * layers + 1) * width * value
    return max(0, (budget_bytes - fixed) // per_example)
''',
        # mixed precision "halves everything": 16-bit parameters, gradients and optimizer state, no fp32 master
        '''def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    slots = {"sgd": 0, "momentum": 1, "adam": 2}
    value = 2 if dtype == "mixed-bf16" else np.dtype(dtype).itemsize
    per_param = (2 + slots[optimizer]) * value
    fixed = layers * (width * width + width) * per_param
    per_example = (2 + saved_per_layer * layers + 1 + 2) * width * value
    return max(0, (budget_bytes - fixed) // per_example)
''',
        # the weights without their biases
        '''def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    slots = {"sgd": 0, "momentum": 1, "adam": 2}
    if dtype == "mixed-bf16":
        per_param, value = 2 + 2 + 4 + 4 * slots[optimizer], 2
    else:
        value = np.dtype(dtype).itemsize
        per_param = (2 + slots[optimizer]) * value
    fixed = layers * width * width * per_param
    per_example = (2 + saved_per_layer * layers + 1 + 2) * width * value
    return max(0, (budget_bytes - fixed) // per_example)
''',
    ],
    "pick_policy": [
        # budgets only the saved residuals (print_saved_residuals), not XLA's working memory: picks policies that
        # don't fit
        '''def pick_policy(layers, batch, width, budget_bytes):
    from gpucourse import training_memory
    Ws = jnp.zeros((layers, width, width), jnp.float32)
    X = jnp.zeros((batch, width), jnp.float32)
    for name in ("everything", "dots", "nothing"):
        if training_memory.saved_bytes(lab.stack_loss(name), Ws, X) <= budget_bytes:
            return name
    return None
''',
        # a working memory exactly equal to the budget counted as not fitting (< instead of <=)
        '''def pick_policy(layers, batch, width, budget_bytes):
    Ws = jax.ShapeDtypeStruct((layers, width, width), jnp.float32)
    X = jax.ShapeDtypeStruct((batch, width), jnp.float32)
    for name in ("everything", "dots", "nothing"):
        if lab.grad_of(name).lower(Ws, X).compile().memory_analysis().temp_size_in_bytes < budget_bytes:
            return name
    return None
''',
    ],
    "is_correct_backward": [
        # float64's step (eps = 1e-7) on a float32 forward: x + eps*u rounds to x, the difference is noise and right
        # backward passes are rejected
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (1, 4), (4, 4), (6, 1)]:
        x = rng.standard_normal((B, n))
        dy = rng.standard_normal(np.shape(forward(x)))
        u = rng.standard_normal(x.shape)
        eps = 1e-7
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps) + np.vdot(np.abs(dx), np.abs(u))
        if not abs(vjp - jvp) <= 1e-3 * size:
            return False
    return True
''',
        # a tolerance loose enough for float32, it seems (10 %): the near misses (5 % too large, an extra 0.03·x) pass
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (1, 4), (4, 4), (6, 1)]:
        x = rng.standard_normal((B, n))
        dy = rng.standard_normal(np.shape(forward(x)))
        u = rng.standard_normal(x.shape)
        eps = 1e-3
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps) + np.vdot(np.abs(dx), np.abs(u))
        if not abs(vjp - jvp) <= 0.1 * size:
            return False
    return True
''',
        # all-ones x and dy (B != n): constant rows hide a softmax with the mean of dy, a symmetric dy the Gram
        # matrix's 2·x·dy
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (6, 1)]:
        x = np.ones((B, n))
        dy = np.ones(np.shape(forward(x)))
        u = rng.standard_normal(x.shape)
        eps = 1e-3
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps) + np.vdot(np.abs(dx), np.abs(u))
        if not abs(vjp - jvp) <= 1e-3 * size:
            return False
    return True
''',
        # dy = y, the gradient of L = ½Σy²: for the Gram matrix xᵀx it is symmetric, and 2·x·dy is right there
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (4, 4)]:
        x = rng.standard_normal((B, n))
        dy = np.asarray(forward(x), dtype=np.float64)
        u = rng.standard_normal(x.shape)
        eps = 1e-3
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps) + np.vdot(np.abs(dx), np.abs(u))
        if not abs(vjp - jvp) <= 1e-3 * size:
            return False
    return True
''',
        # a batch of one only: a sum taken over the batch instead of the row is right there
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(1, 5), (1, 3)]:
        x = rng.standard_normal((B, n))
        dy = rng.standard_normal(np.shape(forward(x)))
        u = rng.standard_normal(x.shape)
        eps = 1e-3
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps) + np.vdot(np.abs(dx), np.abs(u))
        if not abs(vjp - jvp) <= 1e-3 * size:
            return False
    return True
''',
        # no term for the outputs' own rounding (a tolerance of 2e-3 of the terms' size alone): a right backward of
        # an output that is large but moves little (softplus(x) + 300, a log-sum-exp of x + 300) is rejected
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (6, 4)] * 5:
        x, u = rng.standard_normal((2, B, n))
        dy = rng.standard_normal(np.shape(forward(x)))
        eps = 1e-3
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps)
        if not abs(vjp - jvp) <= 2e-3 * size:
            return False
    return True
''',
        # tiny inputs (x of size 1e-3, to stay in the linear regime): tanh's 1 − x² is right to 1e-6 there
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in [(3, 5), (4, 2)]:
        x = 1e-3 * rng.standard_normal((B, n))
        dy = rng.standard_normal(np.shape(forward(x)))
        u = rng.standard_normal(x.shape)
        eps = 1e-5
        ahead, behind = (np.asarray(forward(x + s * eps * u), dtype=np.float64) for s in (1, -1))
        jvp = np.vdot(dy, ahead - behind) / (2 * eps)
        try:
            dx = np.asarray(backward(x, dy), dtype=np.float64)
            if dx.shape != x.shape:
                return False
            vjp = np.vdot(dx, u)
        except Exception:
            return False
        size = np.vdot(np.abs(dy), np.abs(ahead - behind)) / (2 * eps) + np.vdot(np.abs(dx), np.abs(u))
        if not abs(vjp - jvp) <= 1e-3 * size:
            return False
    return True
''',
    ],
}
