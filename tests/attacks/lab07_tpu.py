"""Attacks on lab07_tpu from the student edition alone: what a determined student assembles from installed code.

best_array (exercise 3) is an exercise in *using* an installed model (gc.systolic.TiledGemm), the spec says so: its
answer is a loop over that model with the tie rule. Its entries here are the shortcuts closest to it (the installed
defaults, the course's own uses of the model); its other plausible shortcuts are wrong answers in
tests/wrong_answers/lab07_tpu.py.
"""

ATTACKS = {
    "ex1_pe_step": [
        # the installed array's clock edge, as it used to be installed
        '''from gpucourse.systolic import pe_step
''',
        # the installed array, its registers set and clocked once
        '''def pe_step(a, p, W, a_in):
    hw = systolic.WeightStationaryArray(W)
    hw.a, hw.p = np.array(a, dtype=float), np.array(p, dtype=float)
    hw.tick(a_in)
    return hw.a, hw.p
''',
        # the same module loaded a second time, past any lock
        '''import importlib.util, sys
_spec = importlib.util.spec_from_file_location("systolic_again", systolic.__file__)
_again = importlib.util.module_from_spec(_spec)
sys.modules["systolic_again"] = _again
_spec.loader.exec_module(_again)
pe_step = _again.pe_step
''',
        # the installed array seen from its edges, read back one row at a time: what leaves the bottom of a one-row
        # array fed a_in is a_in[0] · W[0] — the product of the first row, and nothing of the partial sums above
        '''def pe_step(a, p, W, a_in):
    a_new = np.empty_like(a)
    a_new[:, 0] = a_in
    a_new[:, 1:] = a[:, :-1]
    p_new = np.empty_like(p)
    for k in range(W.shape[0]):
        hw = systolic.WeightStationaryArray(W[k:k + 1])
        hw.tick(a_new[k:k + 1, 0])
        p_new[k] = p[k] + a_new[k] * W[k]
    return a_new, p_new
''',
    ],
    "ex2_systolic_matmul": [
        # the register-level matmul, as it used to be installed
        '''def systolic_matmul(A, W):
    run = systolic.matmul(A, W)
    return run.C, systolic.WeightStationaryArray(W)
''',
        # the installed tiled array computes C (one tile); the array returned is clocked for the right number of cycles
        '''def systolic_matmul(A, W):
    M, K = A.shape
    N = W.shape[1]
    run = systolic.run_tiled(A, W, K, N)
    hw = systolic.WeightStationaryArray(W)
    for t in range(systolic.cycles(M, K, N)):
        hw.tick(A[t] if t < M else np.zeros(K))
    return run.C, hw
''',
        # the course's stored runs of the register-level array: C for the one product it stored
        '''def systolic_matmul(A, W):
    run = systolic.stored_runs()["cycle_by_cycle"][0]
    hw = systolic.WeightStationaryArray(W)
    M, K = A.shape
    for t in range(systolic.cycles(M, K, W.shape[1])):
        hw.tick(np.zeros(K))
    return (run.C if run.C.shape == (M, W.shape[1]) else A @ W), hw
''',
    ],
    "ex3_best_array": [
        # the installed model's default array: the MXU's 128 × 128 (or the square one of pes PEs)
        '''def best_array(M, K, N, pes):
    t = systolic.TiledGemm(M, K, N)
    return (t.rows, t.cols) if t.rows * t.cols == pes else (int(pes ** 0.5), pes // int(pes ** 0.5))
''',
        # the course's criterion (§7.3): the largest utilization, scanning square-first
        '''def best_array(M, K, N, pes):
    side = 1
    while side * side < pes:
        side *= 2
    shapes = [(side, pes // side)] + [(2**i, pes // 2**i) for i in range(pes.bit_length())]
    return max(shapes, key=lambda s: systolic.TiledGemm(M, K, N, *s).utilization)
''',
    ],
    "ex4_pallas_matmul": [
        # the course's float32 kernel (§7.6), called as it is
        '''def pallas_matmul(x, y, bm, bn, bk):
    def f32_matmul_kernel(x_ref, y_ref, out_ref):
        step = pl.program_id(axis=2)

        @pl.when(step == 0)
        def _():
            out_ref[...] = jnp.zeros(out_ref.shape, out_ref.dtype)

        out_ref[...] = out_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    (m, k), n = x.shape, y.shape[1]
    x_spec = pl.BlockSpec((bm, bk), lambda i, j, s: (i, s))
    y_spec = pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))
    out_spec = pl.BlockSpec((bm, bn), lambda i, j, s: (i, j))
    return pl.pallas_call(f32_matmul_kernel, grid=(m // bm, n // bn, k // bk), in_specs=[x_spec, y_spec],
                          out_specs=out_spec, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          interpret=True)(x, y)
''',
        # the course's kernel with the output dtype changed to bf16 (the shortest edit toward the spec)
        '''def pallas_matmul(x, y, bm, bn, bk):
    def f32_matmul_kernel(x_ref, y_ref, out_ref):
        step = pl.program_id(axis=2)

        @pl.when(step == 0)
        def _():
            out_ref[...] = jnp.zeros(out_ref.shape, out_ref.dtype)

        out_ref[...] = (out_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
                        ).astype(out_ref.dtype)

    (m, k), n = x.shape, y.shape[1]
    x_spec = pl.BlockSpec((bm, bk), lambda i, j, s: (i, s))
    y_spec = pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))
    out_spec = pl.BlockSpec((bm, bn), lambda i, j, s: (i, j))
    return pl.pallas_call(f32_matmul_kernel, grid=(m // bm, n // bn, k // bk), in_specs=[x_spec, y_spec],
                          out_specs=out_spec, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
                          interpret=True)(x, y)
''',
        # XLA's own dot, in bf16 with an f32 accumulation: the right numbers, no Pallas
        '''def pallas_matmul(x, y, bm, bn, bk):
    return jnp.dot(x, y, preferred_element_type=jnp.float32).astype(x.dtype)
''',
    ],
    "ex5_predict_collectives": [
        # the exercise side's old case classifier (the second independent attack): it moved to the answer side
        '''def predict_collectives(a_spec, b_spec, out_spec, mesh_shape):
    size = dict(zip(("x", "y"), mesh_shape))
    one = lambda s: tuple(a if a is not None and size[a] > 1 else None for a in s)
    partial, join_m, join_n, _ = lab.sharding_class((one(a_spec), one(b_spec), one(out_spec)))
    return {c for c, on in (("all-reduce", partial), ("all-gather", join_m or join_n)) if on}
''',
        # the helper the lab used to install (it compiled the case on the 2×4 mesh): gone from the exercise side
        '''def predict_collectives(a_spec, b_spec, out_spec, mesh_shape):
    return set(lab.compiled_collectives(a_spec, b_spec, out_spec))
''',
        # the course's §7.9 cell pasted: compile on a mesh of that shape and read the HLO. The grader's meshes have
        # up to 16 devices; this machine has 8
        '''import re
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

def predict_collectives(a_spec, b_spec, out_spec, mesh_shape):
    mesh = Mesh(np.array(jax.devices()[:mesh_shape[0] * mesh_shape[1]]).reshape(mesh_shape), ("x", "y"))
    a = jax.ShapeDtypeStruct((64, 32), jnp.float32, sharding=NamedSharding(mesh, P(*a_spec)))
    b = jax.ShapeDtypeStruct((32, 16), jnp.float32, sharding=NamedSharding(mesh, P(*b_spec)))
    f = jax.jit(lambda u, v: u @ v, out_shardings=NamedSharding(mesh, P(*out_spec)))
    COLL = r"\\s(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\\("
    return set(re.findall(COLL, f.lower(a, b).compile().as_text()))
''',
        # the same, always on the course's 2×4 mesh (the axis names are what matter, isn't it?)
        '''import re
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

def predict_collectives(a_spec, b_spec, out_spec, mesh_shape):
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
    a = jax.ShapeDtypeStruct((64, 32), jnp.float32, sharding=NamedSharding(mesh, P(*a_spec)))
    b = jax.ShapeDtypeStruct((32, 16), jnp.float32, sharding=NamedSharding(mesh, P(*b_spec)))
    f = jax.jit(lambda u, v: u @ v, out_shardings=NamedSharding(mesh, P(*out_spec)))
    COLL = r"\\s(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\\("
    return set(re.findall(COLL, f.lower(a, b).compile().as_text()))
''',
    ],
    "ex6_slice_hops": [
        # the hop count and the wraparound rule the course used to install
        '''from gpucourse import tpu

def slice_hops(a, b, dims, chip):
    wrap = tpu.TPU_CHIPS[chip].wraparound(dims, hypothetical=True)
    return interconnect.Torus(dims, wrap).hops(a, b)
''',
        # the installed grid, searched breadth first over its links (the wraparound flags from the course's stored
        # table where it has the slice, else none)
        '''from collections import deque

def slice_hops(a, b, dims, chip):
    key = "x".join(map(str, dims))
    wraps = interconnect.stored()["wraps"].get(chip, {}).get(key, [False] * len(dims))
    t = interconnect.Torus(dims, wraps)
    seen, todo = {tuple(a): 0}, deque([tuple(a)])
    while todo:
        c = todo.popleft()
        for axis, (d, w) in enumerate(zip(t.dims, t.wrap)):
            for step in (-1, 1):
                x = c[axis] + step
                if not w and not 0 <= x < d:
                    continue
                n = c[:axis] + (x % d,) + c[axis + 1:]
                if n not in seen:
                    seen[n] = seen[c] + 1
                    todo.append(n)
    return seen[tuple(b)]
''',
        # the course's stored grids: the corner-to-corner hops of the slices it shows, else the open-mesh distance
        '''def slice_hops(a, b, dims, chip):
    grids = interconnect.stored()["grids"]
    key = "x".join(map(str, dims))
    for name in (key, key + " torus"):
        if name in grids and all(x == 0 for x in a) and all(y == d - 1 for y, d in zip(b, dims)):
            return grids[name]["corner_hops"]
    return sum(abs(x - y) for x, y in zip(a, b))
''',
    ],
    "ex7_collective_seconds": [
        # the α–β model the course used to install
        '''def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
    return interconnect.collective_seconds(kind, nbytes, interconnect.Axis(p, wrap, link_bandwidth), latency)
''',
        # the installed textbook ring all-reduce, run small and scaled: its rounds and bytes per link for an
        # all-reduce, half of each for the other collectives
        '''def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
    if p <= 1:
        return 0.0
    tr = interconnect.simulate_ring_allreduce([np.ones(p) for _ in range(p)])
    rounds, per_link = tr.steps, tr.sent_elements[0] / p * nbytes
    if kind != "all-reduce":
        rounds, per_link = rounds // 2, per_link / 2
    return rounds * latency + per_link / link_bandwidth
''',
        # the course's stored 8-chip table (§7.8), taken as the fractions of V for every p
        '''def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
    if p <= 1:
        return 0.0
    row = interconnect.stored()["p8"][f"{kind} {'ring' if wrap and p >= 3 else 'line'}"]
    return row["rounds"] * p / 8 * latency + row["busiest_over_V"] * nbytes / link_bandwidth
''',
    ],
}
