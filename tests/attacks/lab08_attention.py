"""Attacks on lab08_attention from the student edition alone: what a student assembles from course/08's code.

Course §8 holds what the lab builds on and nothing it asks: the scalar (max, sum) normaliser stream
(`online_logsumexp`), JAX's own Pallas `mha` as a library call, the naive three kernels (`scores_kernel`, `softmax_kernel`, `pv_kernel`), naive attention's
bytes and the ideal lower bound (`naive_bytes`, `ideal_bytes`), the KV cache's bytes per token and a decode step's
attention intensity at batch 1 (`decode_intensity`). Each attack pastes the nearest of them with the least edit
that makes it run, and scores less than full: the output accumulator, the tiles in shared memory, K and V re-read
per query tile, the weights shared by the batch and what the backward saves are the exercises."""

ATTACKS = {
    # §8.2's online_logsumexp, vectorised over rows and extended to the output without the rescaling the course
    # never shows
    "online_softmax_step": '''def online_softmax_step(m, l, acc, s, v):
    m_new = np.maximum(m, s.max(axis=1))
    ref = np.where(np.isfinite(m_new), m_new, 0.0)
    l_new = l * np.exp(m - ref) + np.exp(s - ref[:, None]).sum(axis=1)
    return m_new, l_new, acc + np.exp(s - ref[:, None]) @ v
''',
    # §8.1's softmax_kernel and pv_kernel merged into one thread per query row: right values, every key read from
    # global memory by every thread (no tiles in shared memory)
    "fused_attention": '''@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    h = cuda.blockIdx.y
    i = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    s, d = q.shape[1], q.shape[2]
    if i < s:
        last = min(s, kv_len[h])
        if causal:
            last = min(last, i + 1)
        scale = np.float32(1 / math.sqrt(d))
        m = np.float32(-math.inf)
        for j in range(last):
            acc = np.float32(0.0)
            for c in range(d):
                acc += q[h, i, c] * k[h, j, c]
            m = max(m, acc * scale)
        total = np.float32(0.0)
        for j in range(last):
            acc = np.float32(0.0)
            for c in range(d):
                acc += q[h, i, c] * k[h, j, c]
            total += math.exp(acc * scale - m)
        for c in range(d):
            o = np.float32(0.0)
            for j in range(last):
                acc = np.float32(0.0)
                for e in range(d):
                    acc += q[h, i, e] * k[h, j, e]
                o += math.exp(acc * scale - m) / total * v[h, j, c]
            out[h, i, c] = o
        lse[h, i] = m + math.log(total)
''',
    # §8.4's library call: JAX's own Pallas flash attention (a kernel of another shape: its key loop inside one grid
    # step, the whole K in one block), its layout changed around it
    "pallas_attention": '''from jax.experimental.pallas.ops.gpu import attention as jax_attention


def pallas_attention(q, k, v, bq, bk):
    seq_first = [a.transpose(1, 0, 2)[None] for a in (q, k, v)]  # (1, s, heads, d)
    out = jax_attention.mha(*seq_first, None, sm_scale=1 / math.sqrt(q.shape[2]), interpret=True,
                            block_sizes=jax_attention.BlockSizes(block_q=bq, block_k=bk))
    return out[0].transpose(1, 0, 2)
''',
    # §8.1's ideal_bytes (Q, K, V once, O once) plus the log-sum-exp
    "fused_bytes": '''def fused_bytes(batch, heads, s, d, block_q, block_k, causal, itemsize):
    return itemsize * batch * heads * 4 * s * d + 4 * batch * heads * s
''',
    # §8.5's decode_intensity (attention only, batch 1) held against the ridge, weights left out
    "decode_crossover": '''def decode_crossover(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    head_dim = d_model // heads
    intensity = 4 * context * head_dim / (itemsize * (2 * context * head_dim + 2 * head_dim))
    return 1 if intensity >= peak_flops / bandwidth else None
''',
    # §8.1's fit-on-the-device model (the s × s matrices of one layer's forward) solved for s
    "longest_context": '''def longest_context(budget, batch, heads, d, layers, itemsize, fused):
    return math.isqrt(budget // (batch * heads * itemsize))
''',
}
