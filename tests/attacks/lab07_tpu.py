"""Attacks on lab07_tpu from the student edition alone: what a determined student assembles from installed code.

best_array (exercise 3) is an exercise in *using* an installed model (gc.systolic.TiledGemm), the spec says so: its
answer is a loop over that model with the tie rule. Its entries here are the shortcuts closest to it (the installed
defaults, the course's own uses of the model); its other plausible shortcuts are wrong answers in
tests/wrong_answers/lab07_tpu.py.
"""

# exercise 5's attacks that keep the solution's frame (the mesh, the specs read, a device's slice) and its ending
# (the output's pieces gathered, the shard_map returned): only the communication in between differs
_FRAME = '''from jax.sharding import PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)
    size = dict(zip(("x", "y"), mesh_shape))
    (a_rows, a_k), (_, b_cols), (out_rows, out_cols) = a_spec, b_spec, out_spec

    def mine(x, axis, dim):
        w = x.shape[dim] // size[axis]
        return jax.lax.dynamic_slice_in_dim(x, jax.lax.axis_index(axis) * w, w, axis=dim)
'''
_GATHER_AND_RETURN = '''        if a_rows is not None and out_rows is None:
            c = jax.lax.all_gather(c, a_rows, axis=0, tiled=True)
        if b_cols is not None and out_cols is None:
            c = jax.lax.all_gather(c, b_cols, axis=1, tiled=True)
        return c

    return jax.shard_map(body, mesh=mesh, in_specs=(P(*a_spec), P(*b_spec)), out_specs=P(*out_spec), check_vma=False)
'''

ATTACKS = {
    "pe_step": [
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
    "systolic_matmul": [
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
    "best_array": [
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
    "fused_dense": [
        # the attack on the old exercise (course §7.6's blocked_matmul with an f32 VMEM scratch, a last-step write and
        # a bf16 out_shape: ≈ 6 changed lines), with the bias and the relu around it as XLA ops: not fused
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, y_ref, out_ref, acc_ref):
        step = pl.program_id(axis=2)

        @pl.when(step == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, acc_ref.dtype)

        acc_ref[...] = acc_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(step == pl.num_programs(2) - 1)
        def _():
            out_ref[...] = acc_ref[...].astype(out_ref.dtype)

    x_spec = pl.BlockSpec((bm, bk), lambda i, j, s: (i, s))
    y_spec = pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))
    out_spec = pl.BlockSpec((bm, bn), lambda i, j, s: (i, j))
    y = pl.pallas_call(kernel, grid=(m // bm, n // bn, k // bk), in_specs=[x_spec, y_spec],
                       out_specs=out_spec, out_shape=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
                       scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)], interpret=True)(x, w)
    return jnp.maximum(y + b, 0).astype(jnp.bfloat16)
''',
        # course §7.6's blocked_matmul called as it is (float32 out), the epilogue as XLA ops after it
        '''def fused_dense(x, w, b, bm, bn, bk):
    def f32_matmul_kernel(x_ref, y_ref, out_ref):
        step = pl.program_id(axis=2)

        @pl.when(step == 0)
        def _():
            out_ref[...] = jnp.zeros(out_ref.shape, out_ref.dtype)

        out_ref[...] = out_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    (m, k), n = x.shape, w.shape[1]
    x_spec = pl.BlockSpec((bm, bk), lambda i, j, s: (i, s))
    y_spec = pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))
    out_spec = pl.BlockSpec((bm, bn), lambda i, j, s: (i, j))
    acc = pl.pallas_call(f32_matmul_kernel, grid=(m // bm, n // bn, k // bk), in_specs=[x_spec, y_spec],
                         out_specs=out_spec, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                         interpret=True)(x, w)
    return jnp.maximum(acc + b.astype(jnp.float32), 0.0).astype(x.dtype)
''',
        # course §7.6's kernel with the bias as a third input and the epilogue added at the end of every step (the
        # shortest edit that puts everything in the kernel): no f32 scratch, the running sum in the bf16 output
        '''def fused_dense(x, w, b, bm, bn, bk):
    def kernel(x_ref, y_ref, b_ref, out_ref):
        step = pl.program_id(axis=2)

        @pl.when(step == 0)
        def _():
            out_ref[...] = jnp.zeros(out_ref.shape, out_ref.dtype)

        out_ref[...] = (out_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
                        ).astype(out_ref.dtype)

        @pl.when(step == pl.num_programs(2) - 1)
        def _():
            out_ref[...] = jnp.maximum(out_ref[...] + b_ref[...], 0).astype(out_ref.dtype)

    (m, k), n = x.shape, w.shape[1]
    x_spec = pl.BlockSpec((bm, bk), lambda i, j, s: (i, s))
    y_spec = pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))
    b_spec = pl.BlockSpec((1, bn), lambda i, j, s: (0, j))
    out_spec = pl.BlockSpec((bm, bn), lambda i, j, s: (i, j))
    return pl.pallas_call(kernel, grid=(m // bm, n // bn, k // bk), in_specs=[x_spec, y_spec, b_spec],
                          out_specs=out_spec, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
                          interpret=True)(x, w, b)
''',
        # XLA's own ops, in bf16 with an f32 accumulation: the right numbers, no Pallas
        '''def fused_dense(x, w, b, bm, bn, bk):
    return jax.nn.relu(jnp.dot(x, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)).astype(x.dtype)
''',
    ],
    "sharded_matmul": [
        # XLA's own program: jit's automatic partitioning with the output sharding asked for
        '''from jax.sharding import NamedSharding, PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)
    return jax.jit(lambda a, b: a @ b, in_shardings=(NamedSharding(mesh, P(*a_spec)), NamedSharding(mesh, P(*b_spec))),
                   out_shardings=NamedSharding(mesh, P(*out_spec)))
''',
        # a shard_map in name: both operands declared replicated, so XLA reshards them at the boundary (its own
        # all-gathers), then each device multiplies everything and keeps its block
        '''from jax.sharding import PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)
    size = dict(zip(("x", "y"), mesh_shape))

    def body(a, b):
        c = a @ b
        for dim, axis in enumerate(out_spec):
            if axis is not None:
                w = c.shape[dim] // size[axis]
                c = jax.lax.dynamic_slice_in_dim(c, jax.lax.axis_index(axis) * w, w, axis=dim)
        return c

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P()), out_specs=P(*out_spec), check_vma=False)
''',
        # a shard_map manual over 'y' only (axis_names={'y'}): the automatic partitioner handles 'x' inside it
        '''from jax.sharding import PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)
    only_y = lambda spec: P(*[a if a == "y" else None for a in spec])

    def body(a, b):
        c = a @ b
        return jax.lax.psum(c, "y") if a_spec[1] == "y" else c

    return jax.shard_map(body, mesh=mesh, in_specs=(only_y(a_spec), only_y(b_spec)), out_specs=only_y(out_spec),
                         axis_names={"y"}, check_vma=False)
''',
        # the partial sums added round a ring in a fori_loop of ppermutes, (g−1) whole buffers where a ring
        # all-reduce receives 2(g−1)/g of one: the listing shows one collective-permute inside the loop
        _FRAME + '''
    def body(a, b):
        if out_rows is not None and a_rows is None:
            a = mine(a, out_rows, 0)
        if out_cols is not None and b_cols is None:
            b = mine(b, out_cols, 1)
        c = a @ b
        if a_k is not None and size[a_k] > 1:
            ring = [(i, (i + 1) % size[a_k]) for i in range(size[a_k])]

            def step(_, carry):
                passed, total = carry
                passed = jax.lax.ppermute(passed, a_k, ring)
                return passed, total + passed

            _, c = jax.lax.fori_loop(1, size[a_k], step, (c, c))
''' + _GATHER_AND_RETURN,
        # "psum everything, then cut my piece", its psum on a tuple of four row pieces: one all-reduce with four
        # results, twice the bytes of XLA's where the output splits a dimension the operand holds whole
        _FRAME + '''
    def body(a, b):
        c = a @ b
        if a_k is not None:
            r = c.shape[0] // 4 if c.shape[0] % 4 == 0 else c.shape[0]
            c = jnp.concatenate(jax.lax.psum(tuple(c[i:i + r] for i in range(0, c.shape[0], r)), a_k))
        if out_rows is not None and a_rows is None:
            c = mine(c, out_rows, 0)
        if out_cols is not None and b_cols is None:
            c = mine(c, out_cols, 1)
''' + _GATHER_AND_RETURN,
        # the blocks handed to the host and multiplied there with NumPy (a callback inside the shard_map)
        '''from jax.sharding import PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)

    def body(a, b):
        shape = jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)
        c = jax.pure_callback(lambda u, v: np.asarray(u) @ np.asarray(v), shape, a, b)
        return jax.lax.psum(c, a_spec[1]) if a_spec[1] is not None else c

    return jax.shard_map(body, mesh=mesh, in_specs=(P(*a_spec), P(*b_spec)), out_specs=P(*out_spec), check_vma=False)
''',
    ],
    "slice_hops": [
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
    "collective_seconds": [
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
