"""Plausible wrong answers to lab 2, one or a list per solution cell: each must score less than full marks."""

WRONG = {
    "ex1_mlp_backward": [
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
    # computes dX for the first layer too: 3 GEMMs per layer, exactly 3x the forward FLOPs
    "ex2_step_gemms": '''def step_gemms(batch, widths):
    gemms = fwd = 0
    for d_in, d_out in zip(widths[:-1], widths[1:]):
        gemms += 3
        fwd += 2 * batch * d_in * d_out
    return gemms, fwd, 2 * fwd
''',
    "ex3_largest_batch": [
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
    "ex4_pick_policy": [
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
    "ex5_is_correct_backward": [
        # tests with one random example and a square W: a mean over the batch and a lost batch sum slip through
        '''def is_correct_backward(backward):
    rng = np.random.default_rng(0)
    X, W, dY = rng.standard_normal((1, 3)), rng.standard_normal((3, 3)), rng.standard_normal((1, 3))
    try:
        dW, dX = backward(X, W, dY)
    except Exception:
        return False
    return np.allclose(dW, X.T @ dY) and np.allclose(dX, dY @ W.T)
''',
        # the right shapes (B, d_in, d_out all different), but a tolerance loose enough "for float32": near misses
        # (an L2 term 0.01·W in dW, dX 11 % too large) pass
        '''def is_correct_backward(backward):
    rng = np.random.default_rng(0)
    X, W, dY = rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    try:
        dW, dX = backward(X, W, dY)
        if np.shape(dW) != W.shape or np.shape(dX) != X.shape:
            return False
    except Exception:
        return False
    return bool(np.allclose(dW, X.T @ dY, rtol=0.2, atol=0.1) and np.allclose(dX, dY @ W.T, rtol=0.2, atol=0.1))
''',
        # the right shapes (B, d_in, d_out all different) and a tight tolerance, but all-ones values: every row of
        # the batch alike, so misaligned rows and the product of the batch sums slip through
        '''def is_correct_backward(backward):
    X, W, dY = np.ones((5, 3)), np.ones((3, 4)), np.ones((5, 4))
    try:
        dW, dX = backward(X, W, dY)
        if np.shape(dW) != W.shape or np.shape(dX) != X.shape:
            return False
    except Exception:
        return False
    return bool(np.allclose(dW, X.T @ dY) and np.allclose(dX, dY @ W.T))
''',
        # random values, B, d_in and d_out all different, but exact equality of floats: a right backward that sums
        # in another order (einsum, transposed products) differs in the last bits and is judged wrong
        '''def is_correct_backward(backward):
    rng = np.random.default_rng(0)
    X, W, dY = rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    try:
        dW, dX = backward(X, W, dY)
        if np.shape(dW) != W.shape or np.shape(dX) != X.shape:
            return False
    except Exception:
        return False
    return bool(np.array_equal(dW, X.T @ dY) and np.array_equal(dX, dY @ W.T))
''',
    ],
}
