"""Plausible wrong answers to lab 6, one per solution cell: each must score less than full marks."""

WRONG = {
    "fused_bias_gelu": [
        # correct values, but a loop over rows (jax.lax.map): a while loop and two fusions instead of one
        '''def fused_bias_gelu(x, b, r):
    f32 = jnp.float32
    def row(xr):
        u = xr.astype(f32) + b.astype(f32)
        return 0.5 * u * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))
    return (r.astype(f32) + jax.lax.map(row, x)).astype(x.dtype)
''',
        # one fusion, but bfloat16 arithmetic throughout: a rounding after every op
        '''def fused_bias_gelu(x, b, r):
    return r + jax.nn.gelu(x + b, approximate=True)
''',
    ],
    "rows_within": [
        # the fused kernel charged each row vector as an m×n array (it reads an (n,) vector once, whatever m)
        '''def rows_within(n, dtype, ops, budget_bytes):
    size = jnp.dtype(dtype).itemsize
    vectors = sum(n for op in ops if op.endswith("_row"))
    unfused_row, fused_row = 0, 2 * n
    for op in ops:
        unfused_row += 3 * n if op.endswith("_full") else 2 * n
        fused_row += 0 if op in ("relu", "tanh", "exp") else n
    elements = budget_bytes // size
    return max((elements - vectors) // unfused_row, 0), max(elements // fused_row, 0)
''',
        # a search that stops at traffic < budget: a row whose traffic equals the budget exactly is left out
        '''def rows_within(n, dtype, ops, budget_bytes):
    size = jnp.dtype(dtype).itemsize
    once = sum(n for op in ops if op.endswith("_row"))
    per_row = [sum(3 * n if op.endswith("_full") else 2 * n for op in ops),
               2 * n + sum(n for op in ops if op.endswith("_full"))]
    answer = []
    for row in per_row:
        m = 0
        while size * (row * (m + 1) + once) < budget_bytes:
            m += 1
        answer.append(m)
    return tuple(answer)
''',
        # the row vectors' n elements per kernel left out: only what grows with m is counted
        '''def rows_within(n, dtype, ops, budget_bytes):
    size = jnp.dtype(dtype).itemsize
    full = sum(op.endswith("_full") for op in ops)
    unfused = (2 * len(ops) + full) * n * size
    fused = (2 + full) * n * size
    return budget_bytes // unfused, budget_bytes // fused
''',
    ],
    "breaking_op": [
        # the right opcode, but the bytes of the INPUTS' dtype (4 bytes, float32) times its elements: an FFT writes
        # complex64 (8 bytes), and a bfloat16 chain's callback writes 2 bytes per element
        r"""def breaking_op(hlo):
    import re
    skip = {"parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast"}
    entry = hlo[hlo.index("\nENTRY"):]
    for m in re.finditer(r"=\s*(\(.*?\)|\S+)\s+([\w\-]+)\(", entry):
        if m.group(2) not in skip:
            return m.group(2), sum(4 * math.prod(int(d) for d in dims.split(",") if d)
                                   for dims in re.findall(r"\[([\d,]*)\]", m.group(1)))
""",
        # returns the first op that is not a fusion, forgetting parameters and the other bookkeeping
        r"""def breaking_op(hlo):
    import re
    sizes = {"f32": 4, "s32": 4, "c64": 8, "bf16": 2}
    entry = hlo[hlo.index("ENTRY"):]
    for m in re.finditer(r"=\s*(\(.*?\)|\S+)\s+([\w\-]+)\(", entry):
        if m.group(2) != "fusion":
            return m.group(2), sum(sizes[t] * math.prod(int(d) for d in dims.split(",") if d)
                                   for t, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)))
""",
        # reads only the first array of the type: a tuple's other arrays (top_k's int32 indices) are left out
        r"""def breaking_op(hlo):
    import re
    sizes = {"f32": 4, "s32": 4, "c64": 8, "bf16": 2}
    skip = {"parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast"}
    lines = hlo.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY"))
    for line in lines[start + 1:]:
        m = re.match(r"\s*(?:ROOT\s+)?\S+\s*=\s*(\(.*?\)|\S+)\s+([\w\-]+)\(", line)
        if m and m.group(2) not in skip:
            t, dims = re.search(r"(\w+)\[([\d,]*)\]", m.group(1)).groups()
            return m.group(2), sizes[t] * math.prod(int(d) for d in dims.split(",") if d)
""",
        # reads only lines that start with an instruction's %name: the ROOT line is never read (a breaker that is
        # the program's result, on a bitcast parameter, goes unseen)
        r"""def breaking_op(hlo):
    import re
    sizes = {"f32": 4, "s32": 4, "c64": 8, "bf16": 2}
    skip = {"parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast"}
    lines = hlo.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY"))
    for line in lines[start + 1:]:
        if line.startswith("}"):
            break
        m = re.match(r"\s*%\S+\s*=\s*(\(.*?\)|\S+)\s+([\w\-]+)\(", line)
        if m and m.group(2) not in skip:
            return m.group(2), sum(sizes[t] * math.prod(int(d) for d in dims.split(",") if d)
                                   for t, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)))
""",
    ],
    # same values, but an einsum against the diagonal matrix is still a dot
    "fixed_scale_tanh": '''def fixed_scale_tanh(x, d, b):
    return jnp.tanh(jnp.einsum("ij,jk->ik", x, jnp.diag(d)) + b)
''',
    "scale_bias_relu_kernel": [
        # one thread per element (§5.2's scale_2d, its formula changed): the grid's few blocks of rows leave the
        # rest of `out` NaN
        '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = max(x[i, j] * w[j] + b[j], np.float32(0.0))
''',
        # a grid-stride loop over the rows, but w[j] and b[j] read from global memory for every element
        '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    j, i0 = cuda.grid(2)
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = max(x[i, j] * w[j] + b[j], np.float32(0.0))
''',
        # staged in shared memory, but no barrier: the other rows of threads may read before the loads land
        '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    j, i0 = cuda.grid(2)
    tx = cuda.threadIdx.x
    sw = cuda.shared.array(32, np.float32)
    sb = cuda.shared.array(32, np.float32)
    if cuda.threadIdx.y == 0 and j < out.shape[1]:
        sw[tx] = w[j]
        sb[tx] = b[j]
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.gridsize(2)[1]):
            out[i, j] = max(x[i, j] * sw[tx] + sb[tx], np.float32(0.0))
''',
        # the stride is the block's height, not the grid's: with G > 1 blocks of rows, every row is done G times
        '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    j, i0 = cuda.grid(2)
    tx = cuda.threadIdx.x
    sw = cuda.shared.array(32, np.float32)
    sb = cuda.shared.array(32, np.float32)
    if cuda.threadIdx.y == 0 and j < out.shape[1]:
        sw[tx] = w[j]
        sb[tx] = b[j]
    cuda.syncthreads()
    if j < out.shape[1]:
        for i in range(i0, out.shape[0], cuda.blockDim.y):
            out[i, j] = max(x[i, j] * sw[tx] + sb[tx], np.float32(0.0))
''',
    ],
    "mma_flops": [
        # the tensor cores as the course's first examples show them: HMMA and HGMMA only (fp8 QGMMA, int8 IMMA and
        # IGMMA, fp64 DMMA are missed)
        r"""def mma_flops(sass):
    import re
    total = 0
    for base, shape in re.findall(r"/\*[0-9a-f]+\*/\s+(?:@!?\w+\s+)?([A-Z][A-Z0-9_]*)\.(\w+)", sass):
        if base in ("HMMA", "HGMMA"):
            dims = [int(v) for v in shape.split("x")] if "x" in shape else [16, 8, int(shape[3:])]
            total += 2 * math.prod(dims)
    return total
""",
        # m·n·k multiply-accumulates, not 2·m·n·k operations
        r"""def mma_flops(sass):
    import re
    total = 0
    for base, shape in re.findall(r"/\*[0-9a-f]+\*/\s+(?:@!?\w+\s+)?([A-Z][A-Z0-9_]*)\.(\w+)", sass):
        if base in ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA"):
            if "x" in shape:
                dims = [int(v) for v in shape.split("x")]
            else:
                dims = [16, 8, int(shape[3:])] if shape.startswith("16") else [8, 8, int(shape[2:])]
            total += math.prod(dims)
    return total
""",
        # reads every warp-level shape as m = 16: IMMA.8816 (8×8×16) becomes 16×8×6
        r"""def mma_flops(sass):
    import re
    total = 0
    for base, shape in re.findall(r"/\*[0-9a-f]+\*/\s+(?:@!?\w+\s+)?([A-Z][A-Z0-9_]*)\.(\w+)", sass):
        if base in ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA"):
            dims = [int(v) for v in shape.split("x")] if "x" in shape else [16, 8, int(shape[3:])]
            total += 2 * math.prod(dims)
    return total
""",
        # HMMA.16816 read as 16×16×16 (the wmma tile's shape): every warp-level shape with n = 16, twice the work
        r"""def mma_flops(sass):
    import re
    total = 0
    for base, shape in re.findall(r"/\*[0-9a-f]+\*/\s+(?:@!?\w+\s+)?([A-Z][A-Z0-9_]*)\.(\w+)", sass):
        if base in ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA"):
            if "x" in shape:
                dims = [int(v) for v in shape.split("x")]
            else:
                dims = [16, 16, int(shape[3:])] if shape.startswith("16") else [8, 16, int(shape[2:])]
            total += 2 * math.prod(dims)
    return total
""",
        # the predicated lines (@P0 HMMA…) skipped, as if a guarded instruction were not one: the pattern has no
        # room for a predicate
        r"""def mma_flops(sass):
    import re
    total = 0
    for base, shape in re.findall(r"/\*[0-9a-f]+\*/\s+([A-Z][A-Z0-9_]*)\.(\w+)", sass):
        if base in ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA"):
            if "x" in shape:
                dims = [int(v) for v in shape.split("x")]
            else:
                dims = [16, 8, int(shape[3:])] if shape.startswith("16") else [8, 8, int(shape[2:])]
            total += 2 * math.prod(dims)
    return total
""",
        # searches the whole text: the kernel's name and the comments that mention HMMA.16816 count too
        r"""def mma_flops(sass):
    import re
    total = 0
    for base, shape in re.findall(r"\b(HMMA|IMMA|DMMA|HGMMA|IGMMA|QGMMA)\.(\w+)", sass):
        if "x" in shape:
            dims = [int(v) for v in shape.split("x")]
        else:
            dims = [16, 8, int(shape[3:])] if shape.startswith("16") else [8, 8, int(shape[2:])]
        total += 2 * math.prod(dims)
    return total
""",
    ],
    # fixed work per HMMA (16×8×16) and per HGMMA (64×8×16) counted with the course's Sass: other shapes and the
    # other tensor-core opcodes are wrong
    "sass_counts": [
        r"""def sass_counts(source, arch="sm_90"):
    s = toolchain.Sass(toolchain.disassemble(toolchain.compile_cuda(source, arch=arch)))
    return {"FFMA": s.count("FFMA"), "tensor_flops": 4096 * s.count("HMMA") + 16384 * s.count("HGMMA")}
""",
        # 'FFMA' counted in the listing's text: a kernel whose name contains FFMA counts its name too
        r"""def sass_counts(source, arch="sm_90"):
    sass = toolchain.disassemble(toolchain.compile_cuda(source, arch=arch))
    return {"FFMA": sass.count("FFMA"), "tensor_flops": mma_flops(sass)}
""",
        # every fused multiply-add counted: HFMA2 (half2) and DFMA (double) are not FP32 FMAs
        r"""def sass_counts(source, arch="sm_90"):
    sass = toolchain.disassemble(toolchain.compile_cuda(source, arch=arch))
    fmas = [ln for ln in sass.splitlines() if ln.strip().startswith("/*") and "FMA" in ln.split("*/")[-1]]
    return {"FFMA": len(fmas), "tensor_flops": mma_flops(sass)}
""",
    ],
    "measure_times": [
        # times the call without waiting for the result: it measures the enqueue (dispatch), not the work
        '''def measure_times(slow, fast, *args, clock):
    def best(fn):
        fn(*args)
        runs = []
        for _ in range(5):
            t0 = clock()
            fn(*args)
            runs.append(clock() - t0)
        return min(runs)

    return best(slow), best(fast)
''',
        # warms up and waits, times 4 runs, but returns the last one: a load spike on it goes straight into the
        # answer (passes the visible case, fails the hidden ones on every seed)
        '''def measure_times(slow, fast, *args, clock):
    def last(fn):
        jax.block_until_ready(fn(*args))
        for _ in range(4):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            t = clock() - t0
        return t

    return last(slow), last(fast)
''',
        # the warm-up is never waited for: its work is still running when the first timed run starts
        '''def measure_times(slow, fast, *args, clock):
    def best(fn):
        fn(*args)
        runs = []
        for _ in range(5):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            runs.append(clock() - t0)
        return min(runs)

    return best(slow), best(fast)
''',
        # gc.measure on the given functions: the course's timer reads time.perf_counter, not the clock given
        '''def measure_times(slow, fast, *args, clock):
    return gc.measure(slow, *args).best, gc.measure(fast, *args).best
''',
        # right on an exact clock (warm-up waited for, best of 5 waited-for runs), but one call per run: on the
        # 2 ms clock a call of tens of µs reads 0 or a whole tick
        '''def measure_times(slow, fast, *args, clock):
    def best(fn):
        jax.block_until_ready(fn(*args))
        runs = []
        for _ in range(5):
            t0 = clock()
            jax.block_until_ready(fn(*args))
            runs.append(clock() - t0)
        return min(runs)

    return best(slow), best(fast)
''',
        # batches grown until one spans 0.2 s, synchronized, best of 3 — but no warm-up: the first call's compile
        # (0.3 s) lands in the first batch, which then looks long enough, so every batch stays at one call and the
        # 2 ms clock reads 0
        '''def measure_times(slow, fast, *args, clock):
    def best(fn):
        def run(k):
            t0 = clock()
            for _ in range(k):
                out = fn(*args)
            jax.block_until_ready(out)
            return clock() - t0

        k = 1
        while run(k) < 0.2:
            k *= 2
        return min(run(k) / k for _ in range(3))

    return best(slow), best(fast)
''',
        # batches, but of a fixed 8 calls: 0.3 ms of work spans no tick of a 2 ms clock
        '''def measure_times(slow, fast, *args, clock):
    def per_call(fn, n=8):
        jax.block_until_ready(fn(*args))
        runs = []
        for _ in range(3):
            t0 = clock()
            for _ in range(n):
                out = fn(*args)
            jax.block_until_ready(out)
            runs.append((clock() - t0) / n)
        return min(runs)

    return per_call(slow), per_call(fast)
''',
    ],
    "fusion_payoff_rows": [
        # one past the answer: the smallest m at which fusion no longer saves the target (ceil, not floor)
        r"""def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    d, bw, f = machine["dispatch"], machine["bandwidth"], machine["fault"]
    per_row = [row_bytes[i] / bw + row_faults[i] * f for i in (0, 1)]
    rows = math.ceil((calls[0] - target * calls[1]) * d / (target * per_row[1] - per_row[0]))
    unfused = {"dispatch": calls[0] * d, "memory": rows * row_bytes[0] / bw, "page faults": rows * row_faults[0] * f}
    return rows, max(unfused, key=unfused.get)
""",
        # bytes only: page faults are left out of the per-row time (right on a GPU, wrong on a CPU)
        r"""def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    d, bw = machine["dispatch"], machine["bandwidth"]
    rows = math.floor((calls[0] - target * calls[1]) * d / ((target * row_bytes[1] - row_bytes[0]) / bw))
    unfused = {"dispatch": calls[0] * d, "memory": rows * row_bytes[0] / bw,
               "page faults": rows * row_faults[0] * machine["fault"]}
    return rows, max(unfused, key=unfused.get)
""",
        # the fused side as one kernel always: a chain a breaker splits into two fused kernels is wrong
        r"""def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    d, bw, f = machine["dispatch"], machine["bandwidth"], machine["fault"]
    per_row = [row_bytes[i] / bw + row_faults[i] * f for i in (0, 1)]
    rows = math.floor((calls[0] - target) * d / (target * per_row[1] - per_row[0]))
    unfused = {"dispatch": calls[0] * d, "memory": rows * row_bytes[0] / bw, "page faults": rows * row_faults[0] * f}
    return rows, max(unfused, key=unfused.get)
""",
        # the dominant term of one row's unfused time, not of the unfused time at m = rows
        r"""def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    d, bw, f = machine["dispatch"], machine["bandwidth"], machine["fault"]
    per_row = [row_bytes[i] / bw + row_faults[i] * f for i in (0, 1)]
    rows = math.floor((calls[0] - target * calls[1]) * d / (target * per_row[1] - per_row[0]))
    unfused = {"dispatch": calls[0] * d, "memory": row_bytes[0] / bw, "page faults": row_faults[0] * f}
    return rows, max(unfused, key=unfused.get)
""",
    ],
}
