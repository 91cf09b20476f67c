"""Plausible wrong answers to lab 8, one list per solution cell: each must score less than full marks."""

WRONG = {
    "online_softmax_step": [
        # the accumulator is not rescaled when the max grows
        '''def online_softmax_step(m, l, acc, s, v):
    """(m_new, l_new, acc_new): the running state after one more block of keys."""
    # roughly 7 lines
    m_new = np.maximum(m, s.max(axis=1))  # (rows,)
    # the max the terms are taken relative to: 0 for a row that has seen nothing yet
    # (exp(-inf - 0) = 0 then, where exp(-inf - (-inf)) would be NaN)
    ref = np.where(np.isfinite(m_new), m_new, 0.0)
    alpha = np.exp(m - ref)  # (rows,): rescales what was summed relative to the old max
    p = np.exp(s - ref[:, None])  # (rows, bk)
    return m_new, alpha * l + p.sum(axis=1), acc + p @ v
''',
        # rows with no score yet: exp(-inf - (-inf)) is NaN
        '''def online_softmax_step(m, l, acc, s, v):
    """(m_new, l_new, acc_new): the running state after one more block of keys."""
    # roughly 7 lines
    m_new = np.maximum(m, s.max(axis=1))  # (rows,)
    # the max the terms are taken relative to: 0 for a row that has seen nothing yet
    # (exp(-inf - 0) = 0 then, where exp(-inf - (-inf)) would be NaN)
    ref = m_new
    alpha = np.exp(m - ref)  # (rows,): rescales what was summed relative to the old max
    p = np.exp(s - ref[:, None])  # (rows, bk)
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ v
''',
    ],
    "fused_attention": [
        # no barrier after a tile is used: the next tile's loads race with its reads
        '''@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    """out[h, i] = softmax(q[h, i] · k[h]ᵀ / √d, masked) @ v[h]; lse[h, i] its log-sum-exp."""
    # roughly 40 lines
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * TILE + t  # this thread's query row
    s, d = q.shape[1], q.shape[2]
    k_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)  # one K tile, shared by the block
    v_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)
    qi = cuda.local.array(HEAD_DIM, np.float32)  # registers: the scaled query row
    acc = cuda.local.array(HEAD_DIM, np.float32)  # registers: the running output
    scale = np.float32(1.0 / math.sqrt(d))
    for c in range(d):
        qi[c] = q[h, i, c] * scale if i < s else np.float32(0)
        acc[c] = np.float32(0)
    m = np.float32(-math.inf)  # running max
    l = np.float32(0)  # running sum of exp(score - m)
    last = min(s, kv_len[h])  # keys past kv_len are padding
    if causal:  # no key after the block's last row: skip the tiles above the diagonal
        last = min(last, (cuda.blockIdx.x + 1) * TILE)
    for j0 in range(0, last, TILE):  # the same trip count for every thread of the block
        if j0 + t < last:
            for c in range(d):
                k_tile[t, c] = k[h, j0 + t, c]
                v_tile[t, c] = v[h, j0 + t, c]
        cuda.syncthreads()  # the tile is loaded
        for jj in range(min(TILE, last - j0)):
            j = j0 + jj
            if i < s and not (causal and j > i):
                score = np.float32(0)
                for c in range(d):
                    score += qi[c] * k_tile[jj, c]
                m_new = max(m, score)
                alpha = math.exp(m - m_new)
                p = math.exp(score - m_new)
                l = l * alpha + p
                for c in range(d):
                    acc[c] = acc[c] * alpha + p * v_tile[jj, c]
                m = m_new
    if i < s:
        for c in range(d):
            out[h, i, c] = acc[c] / l if l > 0 else np.float32(0)
        lse[h, i] = m + math.log(l) if l > 0 else np.float32(-math.inf)
''',
        # a float64 accumulator (score = 0.0)
        '''@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    """out[h, i] = softmax(q[h, i] · k[h]ᵀ / √d, masked) @ v[h]; lse[h, i] its log-sum-exp."""
    # roughly 40 lines
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * TILE + t  # this thread's query row
    s, d = q.shape[1], q.shape[2]
    k_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)  # one K tile, shared by the block
    v_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)
    qi = cuda.local.array(HEAD_DIM, np.float32)  # registers: the scaled query row
    acc = cuda.local.array(HEAD_DIM, np.float32)  # registers: the running output
    scale = np.float32(1.0 / math.sqrt(d))
    for c in range(d):
        qi[c] = q[h, i, c] * scale if i < s else np.float32(0)
        acc[c] = np.float32(0)
    m = np.float32(-math.inf)  # running max
    l = np.float32(0)  # running sum of exp(score - m)
    last = min(s, kv_len[h])  # keys past kv_len are padding
    if causal:  # no key after the block's last row: skip the tiles above the diagonal
        last = min(last, (cuda.blockIdx.x + 1) * TILE)
    for j0 in range(0, last, TILE):  # the same trip count for every thread of the block
        if j0 + t < last:
            for c in range(d):
                k_tile[t, c] = k[h, j0 + t, c]
                v_tile[t, c] = v[h, j0 + t, c]
        cuda.syncthreads()  # the tile is loaded
        for jj in range(min(TILE, last - j0)):
            j = j0 + jj
            if i < s and not (causal and j > i):
                score = 0.0
                for c in range(d):
                    score += qi[c] * k_tile[jj, c]
                m_new = max(m, score)
                alpha = math.exp(m - m_new)
                p = math.exp(score - m_new)
                l = l * alpha + p
                for c in range(d):
                    acc[c] = acc[c] * alpha + p * v_tile[jj, c]
                m = m_new
        cuda.syncthreads()  # everyone is done with the tile before it is overwritten
    if i < s:
        for c in range(d):
            out[h, i, c] = acc[c] / l if l > 0 else np.float32(0)
        lse[h, i] = m + math.log(l) if l > 0 else np.float32(-math.inf)
''',
        # causal masking forgotten
        '''@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    """out[h, i] = softmax(q[h, i] · k[h]ᵀ / √d, masked) @ v[h]; lse[h, i] its log-sum-exp."""
    # roughly 40 lines
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * TILE + t  # this thread's query row
    s, d = q.shape[1], q.shape[2]
    k_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)  # one K tile, shared by the block
    v_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)
    qi = cuda.local.array(HEAD_DIM, np.float32)  # registers: the scaled query row
    acc = cuda.local.array(HEAD_DIM, np.float32)  # registers: the running output
    scale = np.float32(1.0 / math.sqrt(d))
    for c in range(d):
        qi[c] = q[h, i, c] * scale if i < s else np.float32(0)
        acc[c] = np.float32(0)
    m = np.float32(-math.inf)  # running max
    l = np.float32(0)  # running sum of exp(score - m)
    last = min(s, kv_len[h])  # keys past kv_len are padding
    if causal:  # no key after the block's last row: skip the tiles above the diagonal
        last = min(last, (cuda.blockIdx.x + 1) * TILE)
    for j0 in range(0, last, TILE):  # the same trip count for every thread of the block
        if j0 + t < last:
            for c in range(d):
                k_tile[t, c] = k[h, j0 + t, c]
                v_tile[t, c] = v[h, j0 + t, c]
        cuda.syncthreads()  # the tile is loaded
        for jj in range(min(TILE, last - j0)):
            j = j0 + jj
            if i < s:
                score = np.float32(0)
                for c in range(d):
                    score += qi[c] * k_tile[jj, c]
                m_new = max(m, score)
                alpha = math.exp(m - m_new)
                p = math.exp(score - m_new)
                l = l * alpha + p
                for c in range(d):
                    acc[c] = acc[c] * alpha + p * v_tile[jj, c]
                m = m_new
        cuda.syncthreads()  # everyone is done with the tile before it is overwritten
    if i < s:
        for c in range(d):
            out[h, i, c] = acc[c] / l if l > 0 else np.float32(0)
        lse[h, i] = m + math.log(l) if l > 0 else np.float32(-math.inf)
''',
        # every thread reads K from global memory itself (over the read budget)
        '''@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    """out[h, i] = softmax(q[h, i] · k[h]ᵀ / √d, masked) @ v[h]; lse[h, i] its log-sum-exp."""
    # roughly 40 lines
    h = cuda.blockIdx.y
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * TILE + t  # this thread's query row
    s, d = q.shape[1], q.shape[2]
    k_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)  # one K tile, shared by the block
    v_tile = cuda.shared.array((TILE, HEAD_DIM), np.float32)
    qi = cuda.local.array(HEAD_DIM, np.float32)  # registers: the scaled query row
    acc = cuda.local.array(HEAD_DIM, np.float32)  # registers: the running output
    scale = np.float32(1.0 / math.sqrt(d))
    for c in range(d):
        qi[c] = q[h, i, c] * scale if i < s else np.float32(0)
        acc[c] = np.float32(0)
    m = np.float32(-math.inf)  # running max
    l = np.float32(0)  # running sum of exp(score - m)
    last = min(s, kv_len[h])  # keys past kv_len are padding
    if causal:  # no key after the block's last row: skip the tiles above the diagonal
        last = min(last, (cuda.blockIdx.x + 1) * TILE)
    for j0 in range(0, last, TILE):  # the same trip count for every thread of the block
        if j0 + t < last:
            for c in range(d):
                k_tile[t, c] = k[h, j0 + t, c]
                v_tile[t, c] = v[h, j0 + t, c]
        cuda.syncthreads()  # the tile is loaded
        for jj in range(min(TILE, last - j0)):
            j = j0 + jj
            if i < s and not (causal and j > i):
                score = np.float32(0)
                for c in range(d):
                    score += qi[c] * k[h, j, c]
                m_new = max(m, score)
                alpha = math.exp(m - m_new)
                p = math.exp(score - m_new)
                l = l * alpha + p
                for c in range(d):
                    acc[c] = acc[c] * alpha + p * v_tile[jj, c]
                m = m_new
        cuda.syncthreads()  # everyone is done with the tile before it is overwritten
    if i < s:
        for c in range(d):
            out[h, i, c] = acc[c] / l if l > 0 else np.float32(0)
        lse[h, i] = m + math.log(l) if l > 0 else np.float32(-math.inf)
''',
    ],
    "pallas_attention": [
        # the accumulator is not rescaled when a later key block raises the max
        '''def pallas_attention(q, k, v, bq, bk):
    """softmax(q kᵀ / √d) v as one pallas_call over (head, query block, key block), an online softmax in VMEM."""
    heads, s, d = q.shape
    # roughly 30 lines
    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        j = pl.program_id(2)  # the key block: the grid's last axis, so one query block's steps run in a row

        @pl.when(j == 0)  # a new query block: empty running state
        def _():
            m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
            l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        # (bq, bk) scores of this query block against this key block
        scores = jnp.dot(q_ref[0], k_ref[0].T, preferred_element_type=jnp.float32) / math.sqrt(d)
        m_new = jnp.maximum(m_ref[...], scores.max(axis=1, keepdims=True))  # (bq, 1)
        alpha = jnp.exp(m_ref[...] - m_new)  # rescales what was summed relative to the old max
        p = jnp.exp(scores - m_new)  # (bq, bk)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        acc_ref[...] = acc_ref[...] + jnp.dot(p, v_ref[0], preferred_element_type=jnp.float32)
        m_ref[...] = m_new

        @pl.when(j == pl.num_programs(2) - 1)  # the last key block: normalise once, write the block
        def _():
            o_ref[0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(heads, s // bq, s // bk),
        in_specs=[pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i, 0)),
                  pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j, 0)),
                  pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j, 0))],
        out_specs=pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i, 0)),
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        interpret=True,
    )(q, k, v)
''',
        # the key blocks on the grid's middle axis: each output block is visited in separate runs
        '''def pallas_attention(q, k, v, bq, bk):
    """softmax(q kᵀ / √d) v as one pallas_call over (head, query block, key block), an online softmax in VMEM."""
    heads, s, d = q.shape
    # roughly 30 lines
    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        j = pl.program_id(1)  # the key block: the grid's last axis, so one query block's steps run in a row

        @pl.when(j == 0)  # a new query block: empty running state
        def _():
            m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
            l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        # (bq, bk) scores of this query block against this key block
        scores = jnp.dot(q_ref[0], k_ref[0].T, preferred_element_type=jnp.float32) / math.sqrt(d)
        m_new = jnp.maximum(m_ref[...], scores.max(axis=1, keepdims=True))  # (bq, 1)
        alpha = jnp.exp(m_ref[...] - m_new)  # rescales what was summed relative to the old max
        p = jnp.exp(scores - m_new)  # (bq, bk)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p, v_ref[0], preferred_element_type=jnp.float32)
        m_ref[...] = m_new

        @pl.when(j == pl.num_programs(1) - 1)  # the last key block: normalise once, write the block
        def _():
            o_ref[0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(heads, s // bk, s // bq),
        in_specs=[pl.BlockSpec((1, bq, d), lambda h, j, i: (h, i, 0)),
                  pl.BlockSpec((1, bk, d), lambda h, j, i: (h, j, 0)),
                  pl.BlockSpec((1, bk, d), lambda h, j, i: (h, j, 0))],
        out_specs=pl.BlockSpec((1, bq, d), lambda h, j, i: (h, i, 0)),
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        interpret=True,
    )(q, k, v)
''',
        # index maps that return element offsets (i * bq), not block indices: interpret mode clamps the copy
        '''def pallas_attention(q, k, v, bq, bk):
    """softmax(q kᵀ / √d) v as one pallas_call over (head, query block, key block), an online softmax in VMEM."""
    heads, s, d = q.shape
    # roughly 30 lines
    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        j = pl.program_id(2)  # the key block: the grid's last axis, so one query block's steps run in a row

        @pl.when(j == 0)  # a new query block: empty running state
        def _():
            m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
            l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        # (bq, bk) scores of this query block against this key block
        scores = jnp.dot(q_ref[0], k_ref[0].T, preferred_element_type=jnp.float32) / math.sqrt(d)
        m_new = jnp.maximum(m_ref[...], scores.max(axis=1, keepdims=True))  # (bq, 1)
        alpha = jnp.exp(m_ref[...] - m_new)  # rescales what was summed relative to the old max
        p = jnp.exp(scores - m_new)  # (bq, bk)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p, v_ref[0], preferred_element_type=jnp.float32)
        m_ref[...] = m_new

        @pl.when(j == pl.num_programs(2) - 1)  # the last key block: normalise once, write the block
        def _():
            o_ref[0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(heads, s // bq, s // bk),
        in_specs=[pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i * bq, 0)),
                  pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j * bk, 0)),
                  pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j * bk, 0))],
        out_specs=pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i * bq, 0)),
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        interpret=True,
    )(q, k, v)
''',
    ],
    "fused_bytes": [
        # K and V read once (the ideal, not the tiled kernel)
        '''def fused_bytes(batch, heads, s, d, block_q, block_k, causal, itemsize):
    """Bytes a fused attention forward reads and writes in device memory."""
    # roughly 8 lines
    total = 0  # bytes of one head
    for start in range(0, s, block_q):  # one block per query tile
        rows = min(block_q, s - start)  # the last tile may be partial
        # causal: key tiles up to the one holding the block's last row (a partial tile at the end)
        keys = rows
        # q rows in, out rows back; K and V tiles in; one float32 log-sum-exp per row back
        total += 2 * rows * d * itemsize + 2 * keys * d * itemsize + 4 * rows
    return batch * heads * total
''',
        # the log-sum-exp write forgotten
        '''def fused_bytes(batch, heads, s, d, block_q, block_k, causal, itemsize):
    """Bytes a fused attention forward reads and writes in device memory."""
    # roughly 8 lines
    total = 0  # bytes of one head
    for start in range(0, s, block_q):  # one block per query tile
        rows = min(block_q, s - start)  # the last tile may be partial
        # causal: key tiles up to the one holding the block's last row (a partial tile at the end)
        keys = min(s, (start + rows - 1) // block_k * block_k + block_k) if causal else s
        # q rows in, out rows back; K and V tiles in; one float32 log-sum-exp per row back
        total += 2 * rows * d * itemsize + 2 * keys * d * itemsize
    return batch * heads * total
''',
    ],
    "decode_crossover": [
        # the KV cache forgotten (weights only)
        '''def decode_crossover(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    """The smallest batch whose decode step is compute-bound, or None."""
    # roughly 9 lines
    hd = d_model // heads
    params = 2 * d_model**2 + 2 * d_model * kv_heads * hd + 2 * d_model * d_ff
    flops = 2 * params + 4 * heads * hd * context  # per sequence (one new token)
    kv = 0  # per sequence: its cached K and V
    ridge = peak_flops / bandwidth  # FLOPs per byte
    # compute-bound when batch · flops >= ridge · (params · itemsize + batch · kv)
    if flops <= ridge * kv:  # the intensity levels off at flops / kv, below the ridge
        return None
    return max(1, math.ceil(ridge * params * itemsize / (flops - ridge * kv)))
''',
        # grouped-query attention ignored: a KV head per query head
        '''def decode_crossover(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    """The smallest batch whose decode step is compute-bound, or None."""
    # roughly 9 lines
    hd = d_model // heads
    params = 2 * d_model**2 + 2 * d_model * kv_heads * hd + 2 * d_model * d_ff
    flops = 2 * params + 4 * heads * hd * context  # per sequence (one new token)
    kv = 2 * context * heads * hd * itemsize  # per sequence: its cached K and V
    ridge = peak_flops / bandwidth  # FLOPs per byte
    # compute-bound when batch · flops >= ridge · (params · itemsize + batch · kv)
    if flops <= ridge * kv:  # the intensity levels off at flops / kv, below the ridge
        return None
    return max(1, math.ceil(ridge * params * itemsize / (flops - ridge * kv)))
''',
    ],
    "longest_context": [
        # P counted in float32 whatever the dtype
        '''def longest_context(budget, batch, heads, d, layers, itemsize, fused):
    """The longest sequence whose saved attention activations fit in budget bytes."""
    # roughly 10 lines
    def saved(s):  # bytes: q, k, v, o, then the log-sum-exp (float32) or P
        return layers * batch * heads * (4 * s * d * itemsize + (4 * s if fused else s * s * 4))
    if saved(1) > budget:
        return 0
    lo, hi = 1, 2  # exact integers: grow, then bisect (saved(lo) fits, saved(hi) does not)
    while saved(hi) <= budget:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if saved(mid) <= budget else (lo, mid)
    return lo
''',
        # the output o is not counted
        '''def longest_context(budget, batch, heads, d, layers, itemsize, fused):
    """The longest sequence whose saved attention activations fit in budget bytes."""
    # roughly 10 lines
    def saved(s):  # bytes: q, k, v, o, then the log-sum-exp (float32) or P
        return layers * batch * heads * (3 * s * d * itemsize + (4 * s if fused else s * s * itemsize))
    if saved(1) > budget:
        return 0
    lo, hi = 1, 2  # exact integers: grow, then bisect (saved(lo) fits, saved(hi) does not)
    while saved(hi) <= budget:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if saved(mid) <= budget else (lo, mid)
    return lo
''',
    ],
}
