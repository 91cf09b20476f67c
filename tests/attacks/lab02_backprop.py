"""Attacks on lab02_backprop from the student edition alone: what a determined student assembles from installed code.

pick_policy is not here: it is an exercise in *using* an installed measurement (lab.grad_of, XLA's
memory_analysis), the spec says so, and its answer is a loop over that measurement with the budget's tie rule and
the policies' order (its plausible shortcuts are wrong answers in tests/wrong_answers/lab02_backprop.py).
is_correct_backward's attacks are JAX's autodiff used as the oracle (the third independent attack's answer): its
forward passes are NumPy black boxes computing in float32 now, which JAX cannot trace; no installed code gives a
verdict (the verdicts are the answer side's). step_gemms' attacks trace or compile the network: right on small
networks, too slow for the hidden ones (thousands of layers).
"""

ATTACKS = {
    "mlp_backward": [
        # the sixth attack: jax.vjp run when the cell runs (no lock then), frozen by jax.export with symbolic shapes;
        # the function only replays it
        '''# JAX's autodiff runs NOW, when this cell runs (no lock yet): jax.export serialises the vjp program with symbolic
# shapes; the function below only replays it.
from jax import export

def _bwd(X, W1, W2, G):
    _, vjp = jax.vjp(lambda X, W1, W2: jax.nn.relu(X @ W1) @ W2, X, W1, W2)
    dX, dW1, dW2 = vjp(G)
    return dW1, dW2, dX

_b, _i, _h, _o = export.symbolic_shape("b, i, h, o")
_S = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)
BWD = export.export(jax.jit(_bwd))(_S(_b, _i), _S(_i, _h), _S(_h, _o), _S(_b, _o))


def mlp_backward(X, W1, W2, G):
    """(dW1, dW2, dX) of Y = relu(X @ W1) @ W2, given G = dL/dY."""
    return tuple(np.asarray(a, np.float64) for a in BWD.call(*(jnp.asarray(a, jnp.float32) for a in (X, W1, W2, G))))
''',

        # the fifth attack: JAX's per-primitive derivative rules (ad.primitive_jvps) in a forward-mode interpreter
        '''# forward-mode JAX via its per-primitive JVP rules (float32 variant)
def mlp_backward(X, W1, W2, G):
    from jax._src.interpreters.ad import primitive_jvps, Zero
    from jax._src import core
    f = lambda X, W1, W2: jnp.where(X @ W1 > 0, X @ W1, 0.0) @ W2
    args = [np.asarray(a, np.float32) for a in (X, W1, W2)]
    cj = jax.make_jaxpr(f)(*args)
    def jvp_eval(jaxpr, consts, primals, tangents):
        env = {}
        for v, x in zip(jaxpr.constvars, consts): env[v] = (x, jnp.zeros_like(x))
        for v, x, t in zip(jaxpr.invars, primals, tangents): env[v] = (x, t)
        read = lambda v: (v.val, jnp.zeros_like(v.val)) if isinstance(v, core.Literal) else env[v]
        for e in jaxpr.eqns:
            ps, ts = zip(*[read(v) for v in e.invars])
            if e.primitive.name in ("pjit", "jit"):
                inner = e.params["jaxpr"]; o, to = jvp_eval(inner.jaxpr, inner.consts, ps, ts)
            else:
                o, to = primitive_jvps[e.primitive](ps, ts, **e.params)
                if not e.primitive.multiple_results: o, to = [o], [to]
            to = [jnp.zeros_like(x) if type(t).__name__ == "Zero" else t for x, t in zip(o, to)]
            for v, x, t in zip(e.outvars, o, to): env[v] = (x, t)
        outs = [read(v) for v in jaxpr.outvars]
        return [x for x, _ in outs], [t for _, t in outs]
    res = []
    for i, a in enumerate(args):
        def jvp_dir(t):
            ts = [jnp.zeros_like(b) for b in args]; ts[i] = t.reshape(a.shape)
            return jvp_eval(cj.jaxpr, cj.consts, args, ts)[1][0]
        J = np.asarray(jax.vmap(jvp_dir)(jnp.eye(a.size, dtype=jnp.float32)), np.float64)   # (a.size, B, d_out)
        res.append(np.einsum("kbo,bo->k", J, np.asarray(G, np.float64)).reshape(a.shape))
    dX, dW1, dW2 = res
    return dW1, dW2, dX
''',

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
    "step_gemms": [
        # the third independent attack's answer, adapted to the network as data: JAX builds the step (frozen weights
        # closed over, jax.checkpoint per layer), make_jaxpr traces it, the dot_generals are counted. Right on small
        # networks; the hidden ones have thousands of layers and the trace does not return within the time limit
        '''import math
def step_gemms(batch, widths, trainable, recompute):
    layer = lambda h, W: jnp.tanh(h @ W)
    if recompute:
        layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)
    def loss(train, frozen, X):
        t, f = iter(train), iter(frozen)
        h = X
        for tr in trainable:
            h = layer(h, next(t) if tr else next(f))
        return jnp.sum(h ** 2)
    S = jax.ShapeDtypeStruct
    Ws = [S((int(a), int(b)), jnp.float32) for a, b in zip(widths[:-1], widths[1:])]
    train = [W for W, tr in zip(Ws, trainable) if tr]
    frozen = [W for W, tr in zip(Ws, trainable) if not tr]
    X = S((int(batch), int(widths[0])), jnp.float32)
    def dots(jaxpr):
        out = []
        for e in jaxpr.eqns:
            if e.primitive.name == "dot_general":
                (lc, _), _ = e.params["dimension_numbers"]
                out.append(2 * math.prod(e.outvars[0].aval.shape) * math.prod(e.invars[0].aval.shape[d] for d in lc))
            for p in e.params.values():
                for sub in (p if isinstance(p, (list, tuple)) else [p]):
                    if hasattr(sub, "jaxpr"):
                        out += dots(sub.jaxpr)
                    elif hasattr(sub, "eqns"):
                        out += dots(sub)
        return out
    f = dots(jax.make_jaxpr(loss)(train, frozen, X).jaxpr)
    g = dots(jax.make_jaxpr(jax.grad(loss))(train, frozen, X).jaxpr)
    return len(g), sum(f), sum(g) - sum(f)
''',
        # ask XLA: the course's compile-only helpers (§2.4), the GEMMs of the compiled gradient and its FLOPs
        '''import re
from gpucourse import training_memory as tm
def step_gemms(batch, widths, trainable, recompute):
    layer = lambda h, W: jnp.tanh(h @ W)
    if recompute:
        layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)
    def loss(train, frozen, X):
        t, f = iter(train), iter(frozen)
        h = X
        for tr in trainable:
            h = layer(h, next(t) if tr else next(f))
        return jnp.sum(h ** 2)
    S = jax.ShapeDtypeStruct
    Ws = [S((int(a), int(b)), jnp.float32) for a, b in zip(widths[:-1], widths[1:])]
    train = [W for W, tr in zip(Ws, trainable) if tr]
    frozen = [W for W, tr in zip(Ws, trainable) if not tr]
    X = S((int(batch), int(widths[0])), jnp.float32)
    f = tm.compile_for_analysis(loss, train, frozen, X)
    g = tm.compile_for_analysis(jax.grad(loss), train, frozen, X)
    n = len(re.findall(r"\\sdot[(]", g.as_text()))
    return n, int(tm.compiled_flops(f)), int(tm.compiled_flops(g) - tm.compiled_flops(f))
''',
    ],
    "is_correct_backward": [
        # the third independent attack's answer, adapted: jax.vjp of the forward as the oracle. The forward is a
        # NumPy black box computing in float32: JAX cannot trace it, every right candidate is rejected
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(12345)
    for B, n in ((3, 5), (7, 4), (1, 6), (5, 2)):
        x = rng.standard_normal((B, n))
        try:
            y, vjp = jax.vjp(forward, jnp.asarray(x))
            dy = rng.standard_normal(y.shape)
            (dx_ref,) = vjp(jnp.asarray(dy, y.dtype))
            dx = np.asarray(backward(x, dy), dtype=np.float64)
        except Exception:
            return False
        if dx.shape != x.shape or not np.allclose(dx, np.asarray(dx_ref), rtol=1e-3, atol=1e-4):
            return False
    return True
''',
        # forward mode instead (jax.jacfwd: the whole Jacobian), contracted with dy: the same wall
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    for B, n in ((3, 5), (1, 4), (4, 4)):
        x = rng.standard_normal((B, n))
        try:
            J = np.asarray(jax.jacfwd(forward)(jnp.asarray(x, jnp.float32)), dtype=np.float64)
            y = np.asarray(forward(x))
            dy = rng.standard_normal(y.shape)
            dx = np.asarray(backward(x, dy), dtype=np.float64)
        except Exception:
            return False
        truth = np.tensordot(dy, J, axes=dy.ndim)
        if dx.shape != x.shape or not np.allclose(dx, truth, rtol=1e-3, atol=1e-4):
            return False
    return True
''',
        # the fourth independent attack (2026-12-06): the black box's own NumPy code re-bound to jax.numpy (float64)
        # and differentiated by jax.vjp, an exact oracle; the operations now store with out= and into slices,
        # which jax.numpy refuses, so every candidate is judged wrong
        '''import types


def is_correct_backward(forward, backward):
    try:
        with jax.enable_x64(True):
            return _icb(forward, backward)
    except Exception:
        return False


def _traceable(forward):
    op = lab.OPS[forward.op]
    g = dict(op.__globals__)
    g["np"] = jnp
    g["_f32"] = lambda x: jnp.asarray(x, jnp.float64)
    return types.FunctionType(op.__code__, g)


def _icb(forward, backward):
    f = _traceable(forward)
    rng = np.random.default_rng(7)
    for B, n in ((5, 7), (7, 4), (3, 9)):
        x = rng.standard_normal((B, n))
        y, vjp = jax.vjp(f, jnp.asarray(x))
        dy = rng.standard_normal(y.shape)
        (ref,) = vjp(jnp.asarray(dy))
        try:
            got = np.asarray(backward(x.copy(), dy.copy()), dtype=np.float64)
        except Exception:
            return False
        if got.shape != x.shape or not np.allclose(got, np.asarray(ref), rtol=1e-6, atol=1e-9):
            return False
    return True
''',
        # the fifth independent attack (2026-12-06): which operation the black box runs (probed against lab.OPS),
        # then the candidate compared with the edition's own right backward pass of that operation; the hidden
        # pool's right backward passes now live on the answer side only (lab._form_* and FORMS are gone)
        '''def is_correct_backward(forward, backward):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7))
    y = forward(x)
    op = next(k for k, f in lab.OPS.items() if np.shape(f(x)) == np.shape(y) and np.allclose(f(x), y))
    right = {"p": lab._form_a, "q": lab._form_e, "r": lab._form_h, "s": lab._form_k, "t": lab._form_m,
             "u": lab._form_v}[op]
    dy = rng.standard_normal(np.shape(y))
    try:
        got = np.asarray(backward(x, dy), dtype=np.float64)
    except Exception:
        return False
    want = right(x, dy)
    return bool(got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-9))
''',
    ],
    "largest_batch": [
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
