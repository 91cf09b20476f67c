"""Plausible wrong answers to lab 7, one per solution cell: each must score less than full marks."""

WRONG = {
    # output-stationary by mistake: each PE keeps accumulating its own sum instead of passing it down
    "ex1_pe_step": '''def pe_step(a, p, W, a_in):
    a_new = np.empty(a.shape)
    a_new[:, 0] = a_in
    a_new[:, 1:] = a[:, :-1]
    return a_new, p + a_new * W
''',
    # no skew: row t of A enters all array rows at once, and results are read without de-skewing
    "ex2_systolic_matmul": '''def systolic_matmul(A, W):
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
    # forgets the pipeline fill and drain: M cycles per tile
    "ex3_tiled_gemm": '''def tiled_gemm(M, K, N, rows, cols):
    tiles = -(-K // rows) * -(-N // cols)
    cycles = tiles * M
    return cycles, M * K * N / (cycles * rows * cols)
''',
    # overwrites the output block at every k step instead of accumulating: keeps only the last k block
    "ex4_pallas_matmul": '''def pallas_matmul(x, y, bm, bn, bk):
    m, k = x.shape
    n = y.shape[1]

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        interpret=True,
    )(x, y)
''',
    # only thinks of partial sums: misses the all-gather a replicated output needs
    "ex5_predict_collectives": '''def predict_collectives(a_spec, b_spec, out_spec):
    (a_rows, a_k), (b_k, b_cols) = a_spec, b_spec
    return {"all-reduce"} if a_k is not None else set()
''',
    # mesh distance: forgets the wrap-around links
    "ex6_torus_hops": '''def torus_hops(a, b, dims):
    return sum(abs(x - y) for x, y in zip(a, b))
''',
    # treats the whole torus as one flat bidirectional ring of all chips
    "ex7_torus_allreduce_seconds": '''def torus_allreduce_seconds(nbytes, dims, link_bandwidth, latency):
    p = int(np.prod(dims))
    bw = link_bandwidth if np.isscalar(link_bandwidth) else min(link_bandwidth)
    if p == 1:
        return 0.0
    return 2 * (p - 1) * (latency + nbytes / (p * 2 * bw))
''',
}
