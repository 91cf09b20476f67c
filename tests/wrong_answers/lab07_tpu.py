"""Plausible wrong answers to lab 7, one per solution cell: each must score less than full marks."""

# exercise 5's wrong programs share the solution's frame: the mesh, the specs read, a device's slice; only the body
# (what a device computes and communicates) differs
_SHARDED_HEAD = '''from jax.sharding import PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)
    size = {None: 1, **dict(zip(("x", "y"), mesh_shape))}
    (a_rows, a_k), (_, b_cols), (out_rows, out_cols) = a_spec, b_spec, out_spec

    def mine(block, axis, dim):
        width = block.shape[dim] // size[axis]
        return jax.lax.dynamic_slice_in_dim(block, jax.lax.axis_index(axis) * width, width, axis=dim)
'''
_SHARDED_TAIL = '''
    return jax.shard_map(body, mesh=mesh, in_specs=(P(*a_spec), P(*b_spec)), out_specs=P(*out_spec),
                         check_vma=False)
'''

WRONG = {
    # output-stationary by mistake: each PE keeps accumulating its own sum instead of passing it down
    "pe_step": '''def pe_step(a, p, W, a_in):
    a_new = np.empty(a.shape)
    a_new[:, 0] = a_in
    a_new[:, 1:] = a[:, :-1]
    return a_new, p + a_new * W
''',
    "systolic_matmul": [
        # no skew: row t of A enters all array rows at once, and results are read without de-skewing
        '''def systolic_matmul(A, W):
    M, K = A.shape
    N = W.shape[1]
    hw = systolic.WeightStationaryArray(W)
    C = np.zeros((M, N))
    for t in range(M + K + N - 2):
        a_in = A[t] if t < M else np.zeros(K)
        out = hw.tick(a_in)
        m = t - (K - 1)
        if 0 <= m < M:
            C[m] = out
    return C, hw
''',
        # skewed, but the row index is clipped instead of masked: before and after its rows of A, row k keeps
        # receiving A[0, k] or A[M-1, k]. C is right (what is due never sees those), but the array leaks partial sums
        # of rows that do not exist into the slots of the matmuls streamed next to it
        '''def systolic_matmul(A, W):
    M, K = A.shape
    N = W.shape[1]
    hw = systolic.WeightStationaryArray(W)
    C = np.zeros((M, N))
    for t in range(M + K + N - 2):
        a_in = A[np.clip(t - np.arange(K), 0, M - 1), np.arange(K)]
        out = hw.tick(a_in)
        m_out = t - (K - 1) - np.arange(N)
        done = (m_out >= 0) & (m_out < M)
        C[m_out[done], np.arange(N)[done]] = out[done]
    return C, hw
''',
        # the right schedule (skewed in, exactly M + K + N - 2 cycles, zeros outside it), but C computed in NumPy
        # and the array's outputs ignored: right on a sound array, wrong on the checker's faulty one (one PE's weight
        # stuck at another value), whose C is what the array delivers
        '''def systolic_matmul(A, W, hw=None):
    M, K = A.shape
    N = W.shape[1]
    hw = systolic.WeightStationaryArray(W) if hw is None else hw
    for t in range(M + K + N - 2):
        m_in = t - np.arange(K)
        ok = (m_in >= 0) & (m_in < M)
        hw.tick(np.where(ok, A[np.clip(m_in, 0, M - 1), np.arange(K)], 0.0))
    return A @ W, hw
''',
    ],
    "best_array": [
        # the square array whatever the workload (what TPUs build): wrong for decode and for matrix-vector products
        '''def best_array(M, K, N, pes):
    side = 1
    while side * side < pes:
        side *= 2
    return side, pes // side
''',
        # fewest tiles, i.e. least padding: forgets the weight load (rows cycles per tile) and the fill and drain
        '''def best_array(M, K, N, pes):
    best = None
    r = 1
    while r <= pes:
        c = pes // r
        tiles = -(-K // r) * -(-N // c)
        if best is None or tiles < best[0]:
            best = (tiles, r, c)
        r *= 2
    return best[1], best[2]
''',
        # the model, but ties go to the most rows (the last minimum)
        '''def best_array(M, K, N, pes):
    shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]
    cycles = [systolic.TiledGemm(M, K, N, r, c).cycles for r, c in shapes]
    return shapes[len(cycles) - 1 - cycles[::-1].index(min(cycles))]
''',
    ],
    "fused_dense": [
        # reduction axis first: grid (k, i, j). Interpret mode still gives the right numbers, but every output block
        # is left and revisited — on a TPU the revisit starts from a stale VMEM buffer (Pallas docs, "TPU details")
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
        def _():
            o_ref[...] = jnp.maximum(acc_ref[...] + b_ref[...].astype(jnp.float32), 0.0).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(k // bk, m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda kk, i, j: (i, kk)), pl.BlockSpec((bk, bn), lambda kk, i, j: (kk, j)),
                  pl.BlockSpec((1, bn), lambda kk, i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda kk, i, j: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w, b)
''',
        # the course's float32 kernel with a bf16 output and the epilogue: the running sum lives in the bf16 output
        # block, rounded to 8 bits at every k step (256 + 0.5 stays 256)
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = jnp.maximum(o_ref[...] + b_ref[...], 0).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        interpret=True,
    )(x, w, b)
''',
        # declares the f32 scratch the spec asks for, but never uses it: adds each k block's product into the bf16
        # output block, so the running sum is still rounded to 8 bits at every k step
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = jnp.maximum(o_ref[...] + b_ref[...], 0).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w, b)
''',
        # the epilogue at every k step: the bias is added once per k block, and every partial sum is clamped at 0
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] = jnp.maximum(acc_ref[...] + jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)
                                   + b_ref[...].astype(jnp.float32), 0.0)
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w, b)
''',
        # relu before the bias: relu(x @ w) + b (a negative bias gives negative outputs)
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = (jnp.maximum(acc_ref[...], 0.0) + b_ref[...].astype(jnp.float32)).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w, b)
''',
        # a matmul kernel with the f32 accumulator, and the bias and relu as XLA ops around it (not fused: the
        # product makes a round trip through HBM)
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    acc = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w)
    return jnp.maximum(acc + b.astype(jnp.float32), 0.0).astype(x.dtype)
''',
        # index maps that return element offsets (i * bm), not block indices: interpret mode clamps each copy to the
        # array's edge, so the numbers are wrong; a TPU's DMA would read past it
        '''def fused_dense(x, w, b, bm, bn, bk):
    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = jnp.maximum(acc_ref[...] + b_ref[...].astype(jnp.float32), 0.0).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i * bm, kk * bk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk * bk, j * bn)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j * bn))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i * bm, j * bn)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        interpret=True,
    )(x, w, b)
''',
    ],
    "sharded_matmul": [
        # gathers the rows first and sums the partial products after: the all-reduce carries the whole gathered block
        _SHARDED_HEAD + '''
    def body(a, b):
        if out_rows is not None and a_rows is None:
            a = mine(a, out_rows, 0)
        if out_cols is not None and b_cols is None:
            b = mine(b, out_cols, 1)
        c = jnp.dot(a, b, preferred_element_type=jnp.float32)
        if a_rows is not None and out_rows is None:
            c = jax.lax.all_gather(c, a_rows, axis=0, tiled=True)
        if b_cols is not None and out_cols is None:
            c = jax.lax.all_gather(c, b_cols, axis=1, tiled=True)
        if a_k is not None:
            c = jax.lax.psum(c, a_k)
        return c
''' + _SHARDED_TAIL,
        # multiplies the whole operand and slices the product afterwards: the partial sums it all-reduces are the
        # whole block, not the device's slice of it
        _SHARDED_HEAD + '''
    def body(a, b):
        c = jnp.dot(a, b, preferred_element_type=jnp.float32)
        if a_k is not None:
            c = jax.lax.psum(c, a_k)
        if a_rows is not None and out_rows is None:
            c = jax.lax.all_gather(c, a_rows, axis=0, tiled=True)
        if b_cols is not None and out_cols is None:
            c = jax.lax.all_gather(c, b_cols, axis=1, tiled=True)
        if out_rows is not None and a_rows is None:
            c = mine(c, out_rows, 0)
        if out_cols is not None and b_cols is None:
            c = mine(c, out_cols, 1)
        return c
''' + _SHARDED_TAIL,
        # gathers the operands whole, then every device computes all of C and keeps its block
        _SHARDED_HEAD + '''
    def body(a, b):
        for axis, dim in ((a_rows, 0), (a_k, 1)):
            if axis is not None:
                a = jax.lax.all_gather(a, axis, axis=dim, tiled=True)
        for axis, dim in ((a_k, 0), (b_cols, 1)):
            if axis is not None:
                b = jax.lax.all_gather(b, axis, axis=dim, tiled=True)
        c = jnp.dot(a, b, preferred_element_type=jnp.float32)
        if out_rows is not None:
            c = mine(c, out_rows, 0)
        if out_cols is not None:
            c = mine(c, out_cols, 1)
        return c
''' + _SHARDED_TAIL,
        # forgets that the blocks are partial sums when k is split
        _SHARDED_HEAD + '''
    def body(a, b):
        if out_rows is not None and a_rows is None:
            a = mine(a, out_rows, 0)
        if out_cols is not None and b_cols is None:
            b = mine(b, out_cols, 1)
        c = jnp.dot(a, b, preferred_element_type=jnp.float32)
        if a_rows is not None and out_rows is None:
            c = jax.lax.all_gather(c, a_rows, axis=0, tiled=True)
        if b_cols is not None and out_cols is None:
            c = jax.lax.all_gather(c, b_cols, axis=1, tiled=True)
        return c
''' + _SHARDED_TAIL,
        # jit's automatic partitioning: XLA writes the collectives
        '''from jax.sharding import NamedSharding, PartitionSpec as P


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    return jax.jit(lambda a, b: a @ b, out_shardings=NamedSharding(lab.host_mesh(mesh_shape), P(*out_spec)))
''',
        # the partial sums added round a ring of ppermutes in a fori_loop, the loop hidden in a lax.cond branch
        # (read r14: the jaxpr walk did not enter cond's branches; the HLO's while is read now): (g−1) whole buffers
        _SHARDED_HEAD + '''
    def body(a, b):
        a = mine(a, out_rows, 0) if out_rows is not None and a_rows is None else a
        b = mine(b, out_cols, 1) if out_cols is not None and b_cols is None else b
        c = a @ b
        g = size[a_k]
        if g > 1:  # the ring's sum, the loop behind a cond that always takes it
            ring = [(i, (i + 1) % g) for i in range(g)]

            def add(_, held):
                nxt = jax.lax.ppermute(held[0], a_k, ring)
                return nxt, held[1] + nxt

            c = jax.lax.cond(jnp.all(jnp.isfinite(c)) | True, lambda c: jax.lax.fori_loop(1, g, add, (c, c))[1],
                             lambda c: c, c)
        for axis, dim, wanted in ((a_rows, 0, out_rows), (b_cols, 1, out_cols)):
            if axis is not None and wanted is None:
                c = jax.lax.all_gather(c, axis, axis=dim, tiled=True)
        return c
''' + _SHARDED_TAIL,
        # A and B gathered whole by rings of Pallas remote DMAs inside the shard_map (interpreted on the CPU's
        # devices: Python callbacks in the HLO, no collective), multiplied whole, C sliced (r14)
        '''from jax.sharding import PartitionSpec as P
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def shift(x, axis, g):
    def kernel(x_ref, o_ref, send, recv):
        here = {"x": jax.lax.axis_index("x"), "y": jax.lax.axis_index("y")}
        here[axis] = jax.lax.rem(here[axis] + 1, g)
        cp = pltpu.make_async_remote_copy(src_ref=x_ref, dst_ref=o_ref, send_sem=send, recv_sem=recv,
                                          device_id=(here["x"], here["y"]), device_id_type=pl.DeviceIdType.MESH)
        cp.start()
        cp.wait()
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)], out_specs=pl.BlockSpec(memory_space=pl.ANY),
                          scratch_shapes=[pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
                          interpret=pltpu.InterpretParams())(x)


def sharded_matmul(a_spec, b_spec, out_spec, mesh_shape):
    mesh = lab.host_mesh(mesh_shape)
    size = dict(zip(("x", "y"), mesh_shape))
    (a_rows, a_k), (_, b_cols), (out_rows, out_cols) = a_spec, b_spec, out_spec

    def gather(x, axis, dim):
        g = size[axis]
        if g == 1:
            return x
        me = jax.lax.axis_index(axis)
        pieces, cur = [x], x
        for s in range(1, g):
            cur = shift(cur, axis, g)
            pieces.append(cur)
        st = jnp.stack(pieces)[jnp.argsort((me - jnp.arange(g)) % g)]
        return jnp.concatenate([st[i] for i in range(g)], axis=dim)

    def mine(x, axis, dim):
        w = x.shape[dim] // size[axis]
        return jax.lax.dynamic_slice_in_dim(x, jax.lax.axis_index(axis) * w, w, axis=dim)

    def body(a, b):
        if a_rows is not None:
            a = gather(a, a_rows, 0)
        if a_k is not None:
            a, b = gather(a, a_k, 1), gather(b, a_k, 0)
        if b_cols is not None:
            b = gather(b, b_cols, 1)
        c = a @ b
        if out_rows is not None and size[out_rows] > 1:
            c = mine(c, out_rows, 0)
        if out_cols is not None and size[out_cols] > 1:
            c = mine(c, out_cols, 1)
        return c

    return jax.shard_map(body, mesh=mesh, in_specs=(P(*a_spec), P(*b_spec)), out_specs=P(*out_spec), check_vma=False)
''',
    ],
    # "a slice of 64 chips or more is a torus": right on every slice Google lists for v4/v5p, wrong on a non-cube one
    "slice_hops": '''def slice_hops(a, b, dims, chip):
    n = 1
    for d in dims:
        n *= d
    wraps = [n >= 64] * len(dims) if chip in ("TPU v4", "TPU v5p") else [d == 16 for d in dims]
    return sum(min(abs(x - y), d - abs(x - y)) if w else abs(x - y) for x, y, d, w in zip(a, b, dims, wraps))
''',
    # prices every axis as a ring: forgets that an axis without wraparound is a line
    "collective_seconds": '''def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
    if p <= 1:
        return 0.0
    rounds = p // 2
    if kind == "all-to-all":
        busiest = (p * p / 8 if p % 2 == 0 else (p * p - 1) / 8) * nbytes / p**2
    else:
        busiest = (p - 1) / p * nbytes / 2
        if kind == "all-reduce":
            rounds, busiest = 2 * rounds, 2 * busiest
    return rounds * latency + busiest / link_bandwidth
''',
}
