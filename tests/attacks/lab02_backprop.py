"""Attacks on lab02_backprop from the student edition alone: what a determined student assembles from installed code.

pick_policy is not here: it is an exercise in *using* an installed measurement (lab.grad_of, XLA's
memory_analysis), the spec says so, and its answer is a loop over that measurement with the budget's tie rule and
the policies' order (its plausible shortcuts are wrong answers in tests/wrong_answers/lab02_backprop.py).
is_correct_backward is not here either: no installed code gives a verdict (the verdicts are the answer side's); the
installed pool of forms and jax.vjp give the truth to test against, which the exercise allows.
"""

ATTACKS = {
    "ex1_mlp_backward": [
        # the third independent attack (2026-12-06): Taylor-mode autodiff, one forward derivative per weight entry
        '''def mlp_backward(X, W1, W2, G):
    from jax.experimental.jet import jet
    with jax.enable_x64(True):
        p = [jnp.asarray(a, jnp.float64) for a in (X, W1, W2)]
        Gj = jnp.asarray(G, jnp.float64)
        L = lambda X, W1, W2: jnp.sum(jnp.where(X @ W1 > 0, X @ W1, 0.0) @ W2 * Gj)
        outs = []
        for k in range(3):
            shp, n = p[k].shape, p[k].size

            def d(e, k=k, shp=shp):
                t = [jnp.zeros_like(q) for q in p]
                t[k] = e.reshape(shp)
                return jet(L, tuple(p), tuple((q,) for q in t))[1][0]

            f = jax.jit(jax.vmap(d))
            chunk = max(1, min(n, 2**22 // n))
            g = np.concatenate([np.asarray(f(jax.nn.one_hot(jnp.arange(i, min(i + chunk, n)), n, dtype=jnp.float64)))
                                for i in range(0, n, chunk)])
            outs.append(g.reshape(shp))
        return outs[1], outs[2], outs[0]
''',
        # JAX's reverse mode does the exercise: jax.vjp
        '''def mlp_backward(X, W1, W2, G):
    _, pull = jax.vjp(lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2, X, W1, W2)
    dX, dW1, dW2 = pull(G)
    return np.asarray(dW1, np.float64), np.asarray(dW2, np.float64), np.asarray(dX, np.float64)
''',
        # the same function reached through JAX's internals (past the public name)
        '''import jax._src.api
def mlp_backward(X, W1, W2, G):
    _, pull = jax._src.api.vjp(lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2, X, W1, W2)
    dX, dW1, dW2 = pull(G)
    return np.asarray(dW1, np.float64), np.asarray(dW2, np.float64), np.asarray(dX, np.float64)
''',
        # jax.grad of the scalar <Y, G>
        '''def mlp_backward(X, W1, W2, G):
    L = lambda W1, W2, X: jnp.sum((jnp.maximum(X @ W1, 0.0) @ W2) * G)
    dW1, dW2, dX = jax.grad(L, argnums=(0, 1, 2))(W1, W2, X)
    return np.asarray(dW1, np.float64), np.asarray(dW2, np.float64), np.asarray(dX, np.float64)
''',
        # the full Jacobians (jax.jacrev), contracted with G
        '''def mlp_backward(X, W1, W2, G):
    f = lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2
    JX, J1, J2 = jax.jacrev(f, argnums=(0, 1, 2))(X, W1, W2)
    c = lambda J: np.tensordot(G, np.asarray(J, np.float64), axes=([0, 1], [0, 1]))
    return c(J1), c(J2), c(JX)
''',
        # forward mode, one column at a time (jax.linearize, then the transpose of the linear map)
        '''def mlp_backward(X, W1, W2, G):
    f = lambda X, W1, W2: jnp.maximum(X @ W1, 0.0) @ W2
    _, lin = jax.linearize(f, X, W1, W2)
    dX, dW1, dW2 = jax.linear_transpose(lin, X, W1, W2)(G)
    return np.asarray(dW1, np.float64), np.asarray(dW2, np.float64), np.asarray(dX, np.float64)
''',
    ],
    "ex2_step_gemms": [
        # ask XLA: the course's compile-only helpers (§2.4), the GEMMs of the backward program and its FLOPs
        '''import re
from gpucourse import training_memory as tm
def step_gemms(batch, widths):
    Ws = [jax.ShapeDtypeStruct((a, b), jnp.float32) for a, b in zip(widths[:-1], widths[1:])]
    X = jax.ShapeDtypeStruct((batch, widths[0]), jnp.float32)
    G = jax.ShapeDtypeStruct((batch, widths[-1]), jnp.float32)
    def fwd(Ws, X):
        for W in Ws:
            X = X @ W
        return X
    def bwd(Ws, X, G):
        return jax.vjp(lambda Ws: fwd(Ws, X), Ws)[1](G)
    f, g = tm.compile_for_analysis(fwd, Ws, X), tm.compile_for_analysis(bwd, Ws, X, G)
    n = len(re.findall(r" dot[(]", f.as_text())) + len(re.findall(r" dot[(]", g.as_text()))
    return n, int(tm.compiled_flops(f)), int(tm.compiled_flops(g))
''',
        # the same, the step's GEMMs counted in the gradient's program alone, the backward's FLOPs by difference
        '''import re
from gpucourse import training_memory as tm
def step_gemms(batch, widths):
    Ws = [jax.ShapeDtypeStruct((a, b), jnp.float32) for a, b in zip(widths[:-1], widths[1:])]
    X = jax.ShapeDtypeStruct((batch, widths[0]), jnp.float32)
    G = jax.ShapeDtypeStruct((batch, widths[-1]), jnp.float32)
    def fwd(Ws, X):
        for W in Ws:
            X = X @ W
        return X
    def bwd(Ws, X, G):
        return jax.vjp(lambda Ws: fwd(Ws, X), Ws)[1](G)
    f, g = tm.compile_for_analysis(fwd, Ws, X), tm.compile_for_analysis(bwd, Ws, X, G)
    n = len(re.findall(r" dot[(]", g.as_text()))
    return n, int(tm.compiled_flops(f)), int(tm.compiled_flops(g) - tm.compiled_flops(f))
''',
    ],
    "ex3_largest_batch": [
        # the course package's memory model and batch search (gone from the edition: lab 2 has you write them)
        '''from gpucourse import training_memory as tm
def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    n = layers * (width * width + width)
    at = lambda B: tm.estimate(n, (saved_per_layer * layers + 1) * width, B, dtype="float32" if dtype == "mixed-bf16" else dtype,
                               optimizer=optimizer, io_elems_per_example=2 * width,
                               workspace_elems_per_example=2 * width, mixed=dtype == "mixed-bf16")
    return tm.largest_batch(budget_bytes, at)
''',
        # ask XLA instead: compile the course's Adam step (§2.7) and invert its buffer assignment, linear in B
        '''from gpucourse import training_memory as tm
def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    def loss(params, X, Y):
        def layer(h, p):
            return jnp.tanh(h @ p[0] + p[1]), None
        h, _ = jax.lax.scan(layer, X, params)
        return jnp.mean((h - Y) ** 2)
    def step(params, m, v, X, Y):
        g = jax.grad(loss)(params, X, Y)
        m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        return jax.tree.map(lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), params, m, v), m, v
    P = (jax.ShapeDtypeStruct((layers, width, width), jnp.float32), jax.ShapeDtypeStruct((layers, width), jnp.float32))
    peak = []
    for B in (1, 2):
        XY = jax.ShapeDtypeStruct((B, width), jnp.float32)
        peak.append(tm.xla_peak_bytes(tm.compile_for_analysis(step, P, P, P, XY, XY, donate_argnums=(0, 1, 2))))
    per = peak[1] - peak[0]
    return max(0, int((budget_bytes - (peak[0] - per)) // per))
''',
        # the course's stored model (§2.7's networks), scaled to the case's network by its width and layer count
        '''from gpucourse import training_memory as tm
def largest_batch(layers, width, budget_bytes, dtype, optimizer, saved_per_layer):
    net = tm.course_memory_data()["tanh 6x512, fp32"]
    scale = layers * (width * width + width) / net["n_params"]
    fixed = (net["params"] + net["grads"] + net["optimizer"]) * scale
    per = (net["batch per example"] + net["activations per example"] + net["workspace per example"]) * width / 512
    return max(0, int((budget_bytes - fixed) // per))
''',
    ],
}
