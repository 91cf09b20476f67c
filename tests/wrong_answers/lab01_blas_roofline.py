"""Plausible wrong answers to lab 1, one or a list per solution cell: each must score less than full marks."""

WRONG = {
    "ex1_axpy_cost": [
        # counts a multiply-add as one FLOP
        '''def axpy_cost(n, dtype):
    size = np.dtype(dtype).itemsize
    return n, 3 * n * size
''',
        # forgets that y is written back (counts x and y read only)
        '''def axpy_cost(n, dtype):
    size = np.dtype(dtype).itemsize
    return 2 * n, 2 * n * size
''',
    ],
    # forgets to read x (counts only A and y)
    "ex1b_gemv_cost": '''def gemv_cost(m, n, dtype):
    size = np.dtype(dtype).itemsize
    return 2 * m * n, (m * n + m) * size
''',
    # bytes assume float32 whatever the dtype
    "ex2_gemm_cost": '''def gemm_cost(m, n, k, dtype):
    return 2 * m * n * k, (m * k + k * n + m * n) * 4
''',
    "ex3_predict_time": [
        # adds the two times instead of taking the slower roof
        '''def predict_time(flops, nbytes, peak_flops, bandwidth):
    compute, memory = flops / peak_flops, nbytes / bandwidth
    return ("compute" if compute >= memory else "memory"), compute + memory
''',
        # a tie goes to 'memory' (the spec says 'compute')
        '''def predict_time(flops, nbytes, peak_flops, bandwidth):
    compute, memory = flops / peak_flops, nbytes / bandwidth
    return ("compute" if compute > memory else "memory"), max(compute, memory)
''',
    ],
    "ex4_min_batch_compute_bound": [
        # forgets that W is read: intensity = 2*B*din*dout / (size*(B*din + B*dout)) never depends on B
        '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    size = np.dtype(dtype).itemsize
    ridge = peak_flops / bandwidth
    for b in range(1, 100000):
        if 2 * b * d_in * d_out / (size * (b * d_in + b * d_out)) >= ridge:
            return b
    return None
''',
        # stops only *past* the ridge (>): at exactly the ridge point the layer is already compute-bound
        '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    size = np.dtype(dtype).itemsize
    ridge = peak_flops / bandwidth
    if 2 * d_in * d_out / (size * (d_in + d_out)) <= ridge:
        return None
    b = 1
    while 2 * b * d_in * d_out / (size * (b * d_in + d_in * d_out + b * d_out)) <= ridge:
        b += 1
    return b
''',
        # the closed form in floating point, never checked against the intensity: at a tie whose ridge point is not
        # exact in binary (494592/995 FLOP/byte) its quotient lands just above the integer and ceil goes one too far
        '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    import math
    size = np.dtype(dtype).itemsize
    ridge = peak_flops / bandwidth
    coef = 2 * d_in * d_out - ridge * size * (d_in + d_out)
    if coef <= 0:
        return None
    return max(1, math.ceil(ridge * size * d_in * d_out / coef))
''',
    ],
    # fused: forgets to write the result
    "ex5_chain_bytes": '''def chain_bytes(n, dtype, arities, fused):
    size = np.dtype(dtype).itemsize
    if not fused:
        return sum((a + 1) * n * size for a in arities)
    return (arities[0] + sum(a - 1 for a in arities[1:])) * n * size
''',
    # drops the remainder tiles: right only when the shapes are multiples of the tile
    "ex6_blocked_matmul": '''def blocked_matmul(A, B, tile):
    xp = gc.array_module(A)
    m, k = A.shape
    n = B.shape[1]
    C = xp.zeros((m, n), dtype=A.dtype)
    for i in range(0, m - tile + 1, tile):
        for j in range(0, n - tile + 1, tile):
            for p in range(0, k - tile + 1, tile):
                C[i:i + tile, j:j + tile] += A[i:i + tile, p:p + tile] @ B[p:p + tile, j:j + tile]
    return C
''',
    # judges against the peak instead of the roof at this intensity
    "ex7_roof_fraction": '''def roof_fraction(flops, nbytes, seconds, peak_flops, bandwidth):
    intensity = flops / nbytes
    bound = "memory" if intensity < peak_flops / bandwidth else "compute"
    return bound, (flops / seconds) / peak_flops
''',
    "ex8_time_call": [
        # stops the clock when the call returns: asynchronous work is not waited for
        '''import time


def time_call(fn, *args, repeat=5):
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))
''',
        # the best run instead of the median: a lucky run (data still in a cache) is faster than the call really is
        '''import time


def time_call(fn, *args, repeat=5):
    gc.block(fn(*args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        gc.block(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)
''',
    ],
    "ex9_explain_point": [
        # "above the roof means cache", whether or not the data fit
        '''def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    intensity = flops / nbytes
    achieved = flops / seconds
    if achieved > min(peak_flops, intensity * bandwidth):
        return "cache"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"
''',
        # never checks the compute roof: a point above the peak is "cache" (if it fits) or "compute-bound"
        '''def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    intensity = flops / nbytes
    achieved = flops / seconds
    if achieved > intensity * bandwidth:
        return "cache" if working_set <= cache_bytes else "impossible"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"
''',
    ],
}
