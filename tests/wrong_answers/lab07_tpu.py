"""Plausible wrong answers to lab 7, one per solution cell: each must score less than full marks."""

WRONG = {
    # output-stationary by mistake: each PE keeps accumulating its own sum instead of passing it down
    "ex1_pe_step": '''def pe_step(a, p, W, a_in):
    a_new = np.empty(a.shape)
    a_new[:, 0] = a_in
    a_new[:, 1:] = a[:, :-1]
    return a_new, p + a_new * W
''',
    "ex2_systolic_matmul": [
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
    ],
    # lets the array fill and drain for every tile, as if the weights were not double-buffered
    "ex3_tiled_gemm": '''def tiled_gemm(M, K, N, rows, cols):
    tiles = -(-K // rows) * -(-N // cols)
    cycles = tiles * (M + rows + cols - 2)
    return cycles, M * K * N / (cycles * rows * cols)
''',
    # reduction axis first: grid (k, i, j). Interpret mode still gives the right numbers, but every output block is
    # left and revisited — on a TPU the revisit starts from a stale VMEM buffer (Pallas docs, "TPU details")
    "ex4_pallas_matmul": '''def pallas_matmul(x, y, bm, bn, bk):
    m, k = x.shape
    n = y.shape[1]

    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(k // bk, m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda kk, i, j: (i, kk)), pl.BlockSpec((bk, bn), lambda kk, i, j: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda kk, i, j: (i, j)),
        interpret=True,
    )(x, y)
''',
    # only thinks of partial sums: misses the all-gather a replicated output needs
    "ex5_predict_collectives": '''def predict_collectives(a_spec, b_spec, out_spec):
    (a_rows, a_k), (b_k, b_cols) = a_spec, b_spec
    return {"all-reduce"} if a_k is not None else set()
''',
    # "a slice of 64 chips or more is a torus": right on every slice Google lists for v4/v5p, wrong on a non-cube one
    "ex6_slice_hops": '''def slice_hops(a, b, dims, chip):
    n = 1
    for d in dims:
        n *= d
    wraps = [n >= 64] * len(dims) if chip in ("TPU v4", "TPU v5p") else [d == 16 for d in dims]
    return sum(min(abs(x - y), d - abs(x - y)) if w else abs(x - y) for x, y, d, w in zip(a, b, dims, wraps))
''',
    # prices every axis as a ring: forgets that an axis without wraparound is a line
    "ex7_collective_seconds": '''def collective_seconds(kind, nbytes, p, wrap, link_bandwidth, latency):
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
