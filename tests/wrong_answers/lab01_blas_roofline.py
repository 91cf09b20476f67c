"""Plausible wrong answers to lab 1, one or a list per solution cell: each must score less than full marks."""

WRONG = {
    "axpy_calls": [
        # one call only: the first dtype that fits (the complex call with the same counters is missed)
        '''def axpy_calls(flops, nbytes):
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        per = 8 if np.dtype(dtype).kind == "c" else 2
        n = flops // per
        if n >= 1 and per * n == flops and 3 * n * np.dtype(dtype).itemsize == nbytes:
            return [(n, dtype)]
    return []
''',
        # a complex element counted as 2 FLOPs, as a real one
        '''def axpy_calls(flops, nbytes):
    out = []
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        n = flops // 2
        if n >= 1 and 2 * n == flops and 3 * n * np.dtype(dtype).itemsize == nbytes:
            out.append((n, dtype))
    return sorted(out)
''',
        # y's write forgotten: x and y read only (2·n elements)
        '''def axpy_calls(flops, nbytes):
    out = []
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        per = 8 if np.dtype(dtype).kind == "c" else 2
        n = flops // per
        if n >= 1 and per * n == flops and 2 * n * np.dtype(dtype).itemsize == nbytes:
            out.append((n, dtype))
    return sorted(out)
''',
        # n taken from the FLOPs, the bytes never compared: every dtype is listed
        '''def axpy_calls(flops, nbytes):
    out = []
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        per = 8 if np.dtype(dtype).kind == "c" else 2
        if flops % per == 0 and flops > 0 and nbytes % (3 * np.dtype(dtype).itemsize) == 0:
            out.append((flops // per, dtype))
    return sorted(out)
''',
        # n rounded down from the FLOPs, only the bytes checked: FLOPs that are no whole number of elements pass
        '''def axpy_calls(flops, nbytes):
    out = []
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        n = flops // (8 if np.dtype(dtype).kind == "c" else 2)
        if n >= 1 and 3 * n * np.dtype(dtype).itemsize == nbytes:
            out.append((n, dtype))
    return sorted(out)
''',
    ],
    "gemv_shapes": [
        # one shape only: the transpose is missed
        '''def gemv_shapes(flops, nbytes, dtype):
    import math
    s = np.dtype(dtype).itemsize
    if flops % 2 or nbytes % s:
        return []
    p, t = flops // 2, nbytes // s - flops // 2
    d = t * t - 4 * p
    if d < 0 or math.isqrt(d) ** 2 != d or (t - math.isqrt(d)) % 2 or t - math.isqrt(d) < 2:
        return []
    return [((t - math.isqrt(d)) // 2, (t + math.isqrt(d)) // 2)]
''',
        # y's write forgotten: A and x only, so m + n is read as n
        '''def gemv_shapes(flops, nbytes, dtype):
    s = np.dtype(dtype).itemsize
    if flops % 2 or nbytes % s:
        return []
    p = flops // 2
    n = nbytes // s - p
    if n < 1 or p % n:
        return []
    return [(p // n, n)]
''',
        # a multiply-add counted as one FLOP: m·n read as the FLOPs themselves
        '''def gemv_shapes(flops, nbytes, dtype):
    import math
    s = np.dtype(dtype).itemsize
    if nbytes % s:
        return []
    p, t = flops, nbytes // s - flops
    d = t * t - 4 * p
    if d < 0 or math.isqrt(d) ** 2 != d or (t - math.isqrt(d)) % 2 or t - math.isqrt(d) < 2:
        return []
    a, b = (t - math.isqrt(d)) // 2, (t + math.isqrt(d)) // 2
    return sorted({(a, b), (b, a)})
''',
    ],
    "gemm_k": [
        # accumulate never considered: C written once only
        '''def gemm_k(m, n, flops, nbytes, dtype):
    s = np.dtype(dtype).itemsize
    k, r = divmod(flops, 2 * m * n)
    if r == 0 and k >= 1 and (m * k + k * n + m * n) * s == nbytes:
        return k, False
    return None
''',
        # a multiply-add counted as one FLOP
        '''def gemm_k(m, n, flops, nbytes, dtype):
    s = np.dtype(dtype).itemsize
    k, r = divmod(flops, m * n)
    if r or k < 1:
        return None
    for acc, c in ((False, 1), (True, 2)):
        if (m * k + k * n + c * m * n) * s == nbytes:
            return k, acc
    return None
''',
        # whatever is not a plain gemm's bytes is taken for an accumulating one
        '''def gemm_k(m, n, flops, nbytes, dtype):
    s = np.dtype(dtype).itemsize
    k, r = divmod(flops, 2 * m * n)
    if r or k < 1:
        return None
    return k, (m * k + k * n + m * n) * s != nbytes
''',
    ],
    "max_batch_within": [
        # forgets the weight matrix: the memory time then starts at zero and grows with B alone
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize

    def seconds(b):
        return 2 * b * d_in * d_out / peak_flops, size * (b * d_in + b * d_out) / bandwidth

    if max(seconds(1)) > budget_s:
        return None
    b = 1
    while max(seconds(b + 1)) <= budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute >= memory else "memory")
''',
        # adds the two times instead of taking the slower roof
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize

    def seconds(b):
        return 2 * b * d_in * d_out / peak_flops, (size * (b * d_in + b * d_out) + w * d_in * d_out) / bandwidth

    if sum(seconds(1)) > budget_s:
        return None
    b = 1
    while sum(seconds(b + 1)) <= budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute >= memory else "memory")
''',
        # the budget is missed at equality (<): a call that takes exactly the budget meets it
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize

    def seconds(b):
        return 2 * b * d_in * d_out / peak_flops, (size * (b * d_in + b * d_out) + w * d_in * d_out) / bandwidth

    if max(seconds(1)) >= budget_s:
        return None
    b = 1
    while max(seconds(b + 1)) < budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute >= memory else "memory")
''',
        # one dtype for everything: the weights read in the activations' dtype (quantized weights ignored)
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size = np.dtype(act_dtype).itemsize

    def seconds(b):
        return 2 * b * d_in * d_out / peak_flops, size * (b * d_in + d_in * d_out + b * d_out) / bandwidth

    if max(seconds(1)) > budget_s:
        return None
    b = 1
    while max(seconds(b + 1)) <= budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute >= memory else "memory")
''',
        # only the memory roof: "a layer is memory-bound", whatever the batch
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize
    b = int((budget_s * bandwidth - w * d_in * d_out) // (size * (d_in + d_out)))
    return (b, "memory") if b >= 1 else None
''',
        # one more than fits: the first batch over the budget
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize

    def seconds(b):
        return 2 * b * d_in * d_out / peak_flops, (size * (b * d_in + b * d_out) + w * d_in * d_out) / bandwidth

    if max(seconds(1)) > budget_s:
        return None
    b = 1
    while max(seconds(b)) <= budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute >= memory else "memory")
''',
        # a tie between the roofs goes to 'memory' (the spec says 'compute')
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    size, w = np.dtype(act_dtype).itemsize, np.dtype(weight_dtype).itemsize

    def seconds(b):
        return 2 * b * d_in * d_out / peak_flops, (size * (b * d_in + b * d_out) + w * d_in * d_out) / bandwidth

    if max(seconds(1)) > budget_s:
        return None
    b = 1
    while max(seconds(b + 1)) <= budget_s:
        b += 1
    compute, memory = seconds(b)
    return b, ("compute" if compute > memory else "memory")
''',
    ],
    "min_batch_compute_bound": [
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
    "longest_chain": [
        # the fused chain charged its intermediates too (arity + 1 elements an op, as unfused)
        '''def longest_chain(n, dtype, arity, budget_bytes):
    s = np.dtype(dtype).itemsize
    u = budget_bytes // ((arity + 1) * n * s)
    return u, u
''',
        # a unary fused chain given a length anyway (the first op's bytes, then every later op 0: divides by 0 → the
        # unfused length)
        '''def longest_chain(n, dtype, arity, budget_bytes):
    s = np.dtype(dtype).itemsize
    u = budget_bytes // ((arity + 1) * n * s)
    first = (arity + 1) * n * s
    if budget_bytes < first:
        return u, 0
    return u, 1 + (budget_bytes - first) // (max(arity - 1, 1) * n * s)
''',
        # a tie does not count (strictly under the budget)
        '''def longest_chain(n, dtype, arity, budget_bytes):
    s = np.dtype(dtype).itemsize
    u = (budget_bytes - 1) // ((arity + 1) * n * s)
    first = (arity + 1) * n * s
    if budget_bytes <= first:
        return u, 0
    if arity == 1:
        return u, None
    return u, 1 + (budget_bytes - 1 - first) // ((arity - 1) * n * s)
''',
    ],
    "blocked_matmul": [
        # drops the remainder tiles: right only when the shapes are multiples of the tile
        '''def blocked_matmul(A, B, tile):
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
        # the naive triple loop with 1×1 "tiles" (the eighth GPU read): every product tile-sized, no reuse at all
        '''def blocked_matmul(A, B, tile):
    xp = gc.array_module(A)
    m, k = A.shape
    n = B.shape[1]
    C = xp.zeros((m, n), dtype=A.dtype)
    for i in range(m):
        for j in range(n):
            for p in range(k):
                C[i:i + 1, j:j + 1] += A[i:i + 1, p:p + 1] @ B[p:p + 1, j:j + 1]
    return C
''',
        # a row of A by a tile of B (gemv-style): k cut into tiles, but each A row re-read for every C tile
        '''def blocked_matmul(A, B, tile):
    xp = gc.array_module(A)
    m, k = A.shape
    n = B.shape[1]
    C = xp.zeros((m, n), dtype=A.dtype)
    for i in range(m):
        for j in range(0, n, tile):
            for p in range(0, k, tile):
                C[i:i + 1, j:j + tile] += A[i:i + 1, p:p + tile] @ B[p:p + tile, j:j + tile]
    return C
''',
        # C accumulated in float64 (np.zeros' default) for float32 inputs: more precise, but not A's dtype
        '''def blocked_matmul(A, B, tile):
    xp = gc.array_module(A)
    m, k = A.shape
    n = B.shape[1]
    C = xp.zeros((m, n))
    for i in range(0, m, tile):
        for j in range(0, n, tile):
            for p in range(0, k, tile):
                C[i:i + tile, j:j + tile] += A[i:i + tile, p:p + tile] @ B[p:p + tile, j:j + tile]
    return C
''',
    ],
    "min_size_for_fraction": [
        # the gemv's bytes counted as n² elements (x and y dropped): 8,682 instead of 8,681 on the visible case
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    size = np.dtype(dtype).itemsize
    n = 1
    while True:
        flops, elements = (2 * n * n, n * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        t = max(flops / peak_flops, elements * size / bandwidth)
        if t / (overhead_s + t) >= fraction:
            return n
        n += 1
''',
        # judges against the peak instead of the roof at its intensity: a gemv never gets there
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    size = np.dtype(dtype).itemsize
    for n in range(1, 200_000):
        flops, elements = (2 * n * n, n * n + 2 * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        t = max(flops / peak_flops, elements * size / bandwidth)
        if flops / (overhead_s + t) >= fraction * peak_flops:
            return n
    return None
''',
        # the memory time only: a large GEMM is compute-bound, its roofline time is its FLOPs'
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    size = np.dtype(dtype).itemsize
    n = 1
    while True:
        elements = n * n + 2 * n if op == "gemv" else 3 * n * n
        t = elements * size / bandwidth
        if t / (overhead_s + t) >= fraction:
            return n
        n += 1
''',
        # strictly above the fraction (>): reaching it exactly counts
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    size = np.dtype(dtype).itemsize
    n = 1
    while True:
        flops, elements = (2 * n * n, n * n + 2 * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        t = max(flops / peak_flops, elements * size / bandwidth)
        if t / (overhead_s + t) > fraction:
            return n
        n += 1
''',
        # the overhead as a fraction of the roofline time instead of the total: t / overhead >= fraction
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    size = np.dtype(dtype).itemsize
    n = 1
    while True:
        flops, elements = (2 * n * n, n * n + 2 * n) if op == "gemv" else (2 * n**3, 3 * n * n)
        t = max(flops / peak_flops, elements * size / bandwidth)
        if t / overhead_s >= fraction:
            return n
        n += 1
''',
    ],
    "time_call": [
        # stops the clock when the call returns: asynchronous work is not waited for
        '''def time_call(fn, *args, clock, repeat=5):
    fn(*args)
    times = []
    for _ in range(repeat):
        start = clock()
        fn(*args)
        times.append(clock() - start)
    return float(np.median(times))
''',
        # the warm-up is never waited for: its work is still running when the first timed run starts
        '''def time_call(fn, *args, clock, repeat=5):
    fn(*args)
    times = []
    for _ in range(repeat):
        start = clock()
        gc.block(fn(*args))
        times.append(clock() - start)
    return float(np.median(times))
''',
        # the mean: one run slowed by another program pulls it up
        '''def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    times = []
    for _ in range(repeat):
        start = clock()
        gc.block(fn(*args))
        times.append(clock() - start)
    return sum(times) / len(times)
''',
        # no warm-up: the first timed call compiles
        '''def time_call(fn, *args, clock, repeat=5):
    times = []
    for _ in range(repeat):
        start = clock()
        gc.block(fn(*args))
        times.append(clock() - start)
    return float(np.median(times))
''',
        # the right method on the host's wall clock instead of the clock it is given: the work never shows
        '''import time


def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        gc.block(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))
''',
        # gc.measure on the given functions: the course's timer reads time.perf_counter, not the clock given
        '''def time_call(fn, *args, clock, repeat=5):
    return gc.measure(fn, *args, warmup=1, repeat=repeat).median
''',
        # batches of a fixed 10 calls: 10 short calls still span less than one tick of a coarse clock
        '''def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))
    times = []
    for _ in range(repeat):
        start = clock()
        for _ in range(10):
            out = fn(*args)
        gc.block(out)
        times.append((clock() - start) / 10)
    return float(np.median(times))
''',
        # autorange, but the batch's time is returned, not divided by the batch size
        '''def time_call(fn, *args, clock, repeat=5):
    gc.block(fn(*args))

    def batch(k):
        start = clock()
        for _ in range(k):
            out = fn(*args)
        gc.block(out)
        return clock() - start

    k = 1
    while batch(k) < 0.2:
        k *= 2
    return float(np.median([batch(k) for _ in range(repeat)]))
''',
    ],
    "explain_point": [
        # an intensity exactly at the ridge called memory-bound (the tie is compute-bound): a hidden case
        '''def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    intensity, achieved = flops / nbytes, flops / seconds
    if achieved > peak_flops:
        return "impossible"
    dram = intensity * bandwidth
    if achieved > dram:
        if working_set <= cache_bytes or achieved * (1 - cache_bytes / working_set) <= dram:
            return "cache"
        return "impossible"
    return "memory-bound" if intensity <= peak_flops / bandwidth else "compute-bound"
''',
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
        return "cache" if working_set <= cache_bytes or achieved * (1 - cache_bytes / working_set) <= intensity * bandwidth else "impossible"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"
''',
        # the hard cut at the cache size: a working set a little larger than the cache is "impossible" above the roof
        '''def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    intensity = flops / nbytes
    achieved = flops / seconds
    if achieved > peak_flops:
        return "impossible"
    if achieved > intensity * bandwidth:
        return "cache" if working_set <= cache_bytes else "impossible"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"
''',
        # a fixed margin near the cache size instead of the bound the cache's size sets
        '''def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    intensity = flops / nbytes
    achieved = flops / seconds
    if achieved > peak_flops:
        return "impossible"
    if achieved > intensity * bandwidth:
        return "cache" if working_set <= 2 * cache_bytes else "impossible"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"
''',
    ],
}
