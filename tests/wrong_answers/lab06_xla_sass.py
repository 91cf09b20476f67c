"""Plausible wrong answers to lab 6, one per solution cell: each must score less than full marks."""

WRONG = {
    # correct values, but a loop over rows (jax.lax.map): a while loop and two fusions instead of one
    "ex1_fused_bias_gelu": '''def fused_bias_gelu(x, b, r):
    def row(xr):
        u = xr + b
        return 0.5 * u * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))
    return r + jax.lax.map(row, x)
''',
    # the fused kernel re-reads the row vectors for every row (m*n instead of n)
    "ex2_fusion_bytes": '''def fusion_bytes(m, n, dtype, ops):
    size = jnp.dtype(dtype).itemsize
    full = m * n
    unfused, fused = 0, 2 * full
    for op in ops:
        if op.endswith("_row"):
            unfused += 2 * full + n
            fused += full
        elif op.endswith("_full"):
            unfused += 3 * full
            fused += full
        else:
            unfused += 2 * full
    return unfused * size, fused * size
''',
    "ex3_breaking_op": [
        # returns the first op that is not a fusion, forgetting parameters and the other bookkeeping
        '''def breaking_op(hlo):
    import re
    entry = hlo[hlo.index("ENTRY"):]
    for op in re.findall(r"=\\s*\\S+\\s+([\\w\\-]+)\\(", entry):
        if op != "fusion":
            return op
''',
        # reads only lines that start with an instruction's %name: the ROOT line is never read (a breaker that is
        # the program's result, on a bitcast parameter, goes unseen)
        '''def breaking_op(hlo):
    import re
    skip = {"parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast"}
    lines = hlo.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY"))
    for line in lines[start + 1:]:
        if line.startswith("}"):
            break
        m = re.match(r"\\s*%\\S+\\s*=\\s*(?:\\(.*?\\)|\\S+)\\s+([\\w\\-]+)\\(", line)
        if m and m.group(1) not in skip:
            return m.group(1)
''',
    ],
    # same values, but an einsum against the diagonal matrix is still a dot
    "ex4_fixed_scale_tanh": '''def fixed_scale_tanh(x, d, b):
    return jnp.tanh(jnp.einsum("ij,jk->ik", x, jnp.diag(d)) + b)
''',
    # right values, coalesced, but two passes: out is written, read back and written again (a round trip
    # through global memory that the fused kernel never makes)
    "ex5_scale_bias_relu_kernel": '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * w[j] + b[j]
        out[i, j] = max(out[i, j], 0.0)
''',
    # counts substrings: kernel names, comments and HFMA2/DFMA-like spellings all count
    "ex6_count_opcode": '''def count_opcode(sass, opcode):
    return sass.count(opcode)
''',
    # counts in the PTX instead of the SASS: one wmma.mma.sync there becomes two HMMA.16816 in the machine code
    "ex7_sass_counts": '''def sass_counts(source, arch="sm_90"):
    ptx = toolchain.compile_cuda(source, arch=arch.replace("sm_", "compute_"), output="ptx").decode()
    return {"FFMA": ptx.count("fma.rn.f32"), "HMMA": ptx.count("mma.sync"), "HGMMA": ptx.count("wgmma.mma_async")}
''',
    "ex8_measure_times": [
        # times the call without waiting for the result: it measures the enqueue (dispatch), not the work
        '''import time


def measure_times(slow, fast, *args):
    def best(fn):
        fn(*args)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn(*args)
            runs.append(time.perf_counter() - t0)
        return min(runs)

    return best(slow), best(fast)
''',
        # warms up and waits, times 4 runs, but returns the last one: a load spike on it goes straight into the
        # answer (passes the visible case, fails the hidden ones on every seed)
        '''import time


def measure_times(slow, fast, *args):
    def last(fn):
        jax.block_until_ready(fn(*args))
        for _ in range(4):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*args))
            t = time.perf_counter() - t0
        return t

    return last(slow), last(fast)
''',
    ],
    # the byte ratio alone: forgets dispatch and page faults, and calls memory dominant whatever the sizes
    "ex9_fusion_time_ratio": '''def fusion_time_ratio(calls, nbytes, faults, machine):
    return nbytes[0] / nbytes[1], "memory"
''',
}
