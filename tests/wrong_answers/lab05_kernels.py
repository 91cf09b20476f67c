"""Plausible wrong answers to lab 5, one per solution cell: each must score less than full marks."""

# the given halvings loop; PICK: how a thread picks its index i, J: the element it works on
_HALVINGS = '''@cuda.jit
def halvings_regrouped(x, order, out):
    PICK
    if i < x.size:
        v = x[J]
        n = 0
        while v > 1.0:
            v = v * 0.5
            n += 1
        out[J] = n + v
'''

# the solution's register-blocked matmul; the wrong answers below change one thing each
_MATMUL = '''@cuda.jit
def tiled_matmul(A, B, C):
    sA = cuda.shared.array((TM, TK), np.float32)
    sB = cuda.shared.array((TK, TN), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TM
    r0, r1 = row0 + ty, row0 + TM // 2 + ty
    col = cuda.blockIdx.x * TN + tx
    m, k = A.shape
    n = B.shape[1]
    t = ty * TN + tx
    ar, ac = t // TK, t % TK
    acc0 = np.float32(0.0)
    acc1 = np.float32(0.0)
    for p in range(0, k, TK):
        sA[ar, ac] = A[row0 + ar, p + ac] if row0 + ar < m and p + ac < k else np.float32(0.0)
        sB[ty, tx] = B[p + ty, col] if p + ty < k and col < n else np.float32(0.0)
        cuda.syncthreads()  # loaded
        for j in range(TK):
            b = sB[j, tx]
            acc0 += sA[ty, j] * b
            acc1 += sA[TM // 2 + ty, j] * b
        cuda.syncthreads()
    if col < n:
        if r0 < m:
            C[r0, col] = acc0
        if r1 < m:
            C[r1, col] = acc1
'''

WRONG = {
    # forgets the guard: the last block's extra threads index past the end
    "scale_shift": '''@cuda.jit
def scale_shift(x, out, a, b):
    i = cuda.grid(1)
    out[i] = a * x[i] + b
''',
    # takes x as the row (the NumPy habit): right values, but every warp reads down a column — uncoalesced
    "ramp_2d": '''@cuda.jit
def ramp_2d(a, out):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * (r + 1) - c
''',
    "block_sum": [
        # the interleaved tree: correct sums, but every warp diverges at every level
        '''@cuda.jit
def block_sum(x, partial):
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s = cuda.shared.array(BLOCK, np.float64)
    s[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = 1
    while stride < BLOCK:
        if tid % (2 * stride) == 0:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = s[0]
''',
        # no tree: every thread adds its element into one shared accumulator with an atomic (right sums, no
        # divergence to speak of; on a GPU the block's 128 same-address updates are serialised)
        '''@cuda.jit
def block_sum(x, partial):
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s = cuda.shared.array(1, np.float64)
    if tid == 0:
        s[0] = 0.0
    cuda.syncthreads()
    if i < x.size:
        cuda.atomic.add(s, 0, x[i])
    cuda.syncthreads()
    if tid == 0:
        partial[cuda.blockIdx.x] = s[0]
''',
        # thread 0 sums the shared array alone (the eleventh GPU read): no divergence to report, but no tree — the
        # SIMT-efficiency floor
        '''@cuda.jit
def block_sum(x, partial):
    s = cuda.shared.array(BLOCK, np.float64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    if t == 0:
        acc = 0.0
        for j in range(BLOCK):
            acc += s[j]
        partial[cuda.blockIdx.x] = acc
''',
    ],
    "tiled_matmul": [
        # forgets the barrier after loading the slabs: threads read tile elements nobody has written yet
        _MATMUL.replace("        cuda.syncthreads()  # loaded\n", ""),
        # course §5.7's kernel pasted (its TILE with it): square 8×8 tiles, one output per thread
        '''TILE = 8


@cuda.jit
def tiled_matmul(A, B, C):
    sA = cuda.shared.array((TILE, TILE), np.float32)
    sB = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k = A.shape
    acc = np.float32(0.0)
    for t in range((k + TILE - 1) // TILE):
        p = t * TILE
        sA[ty, tx] = A[row, p + tx] if row < m and p + tx < k else np.float32(0.0)
        sB[ty, tx] = B[p + ty, col] if p + ty < k and col < B.shape[1] else np.float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if row < m and col < B.shape[1]:
        C[row, col] = acc
''',
        # two outputs, but sB[j, tx] read from shared memory once per output: 4 shared reads per k, not 3
        _MATMUL.replace("            b = sB[j, tx]\n            acc0 += sA[ty, j] * b\n            acc1 += sA[TM // 2 + ty, j] * b\n",
                        "            acc0 += sA[ty, j] * sB[j, tx]\n            acc1 += sA[TM // 2 + ty, j] * sB[j, tx]\n"),
    ],
    "max_registers": [
        # the per-SM division inverted: all 65,536 registers as one pool, no sub-partitions (32 threads, 21 blocks:
        # 96 registers, where the model holds only 20 blocks; 80 is the answer)
        '''def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    low = gc.occupancy.occupancy(threads_per_block, 1, shared_bytes_per_block, limits, opt_in=opt_in)
    if low.blocks_per_sm < target_blocks:
        return None, low.limiter
    warps = math.ceil(threads_per_block / 32)
    per_warp = limits["registers"] // (target_blocks * warps) // 256 * 256
    regs = min(limits["max_registers_per_thread"], per_warp // 32)
    return regs, gc.occupancy.occupancy(threads_per_block, regs, shared_bytes_per_block, limits, opt_in=opt_in).limiter
''',
        # searches whole granules of 8 registers only: misses the top count, 255, which is not a multiple of 8
        '''def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    def model(r):
        return gc.occupancy.occupancy(threads_per_block, r, shared_bytes_per_block, limits, opt_in=opt_in)
    fits = [r for r in range(8, 256, 8) if model(r).blocks_per_sm >= target_blocks]
    return (max(fits), model(max(fits)).limiter) if fits else (None, model(1).limiter)
''',
        # right count, but the limiter of a target out of reach read at the most registers, not the fewest
        '''def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    top = limits["max_registers_per_thread"]
    def model(r):
        return gc.occupancy.occupancy(threads_per_block, r, shared_bytes_per_block, limits, opt_in=opt_in)
    fits = [r for r in range(1, top + 1) if model(r).blocks_per_sm >= target_blocks]
    best = max(fits) if fits else None
    return best, model(best or top).limiter
''',
    ],
    "halvings_regrouped": [
        # the old parity trick (even warps take the even elements, odd warps the odd ones): it groups alternating
        # inputs, but reads and writes at stride 2 (about 15 sectors per request instead of 8) and does not help
        # on random mixes
        _HALVINGS.replace("PICK", "t = cuda.grid(1)\n    warp, lane = t // 32, t % 32\n"
                          "    i = 2 * ((warp // 2) * 32 + lane) + warp % 2").replace("J", "i"),
        # no fix: the given kernel, order ignored (every warp mixes short and long loops)
        _HALVINGS.replace("PICK", "i = cuda.grid(1)").replace("J", "i"),
        # regroups through global memory: uniform warps, but each warp gathers from the whole 256-element tile
        _HALVINGS.replace("PICK", "i = cuda.grid(1)").replace(
            "J]", "cuda.blockIdx.x * REGROUP_BLOCK + order[i]]"),
    ],
    "wave_prediction": [
        # counts a partial wave with floor + 1: one wave too many when the grid fills whole waves
        '''def wave_prediction(blocks, blocks_per_sm, sms):
    per_wave = sms * blocks_per_sm
    waves = blocks // per_wave + 1
    return waves, waves * per_wave / blocks
''',
        # one block per SM whatever the occupancy
        '''def wave_prediction(blocks, blocks_per_sm, sms):
    waves = math.ceil(blocks / sms)
    return waves, waves * sms / blocks
''',
    ],
}

# more slips of the matmul, checked directly by tests/test_lab05_kernels.py (each nbgrader submission costs a whole
# autograde, so WRONG keeps three per exercise at most)
MATMUL_SLIPS = [
    # loads the A slab with the block's own (tx, ty) transposed onto it: a warp reads 16 rows of A, 2 floats each
    _MATMUL.replace("    ar, ac = t // TK, t % TK\n", "    ar, ac = tx, ty\n"),
    # guards the second output with the first one's row: rows past m are written when m % 16 <= 8
    _MATMUL.replace("        if r1 < m:\n", "        if r0 < m:\n"),
    # float64 tiles: right values, twice the shared memory per block
    _MATMUL.replace("np.float32)", "np.float64)"),
    # the tile's first row from cuda.grid(2)'s y, which steps by the block's 8 thread rows, not the tile's 16: the
    # row tiles overlap (right values where they do, rows written twice) and C's last rows are never written — the
    # visible case (m = 20, two row tiles covering rows 0 … 23) has every value right
    _MATMUL.replace("    row0 = cuda.blockIdx.y * TM\n", "    row0 = cuda.grid(2)[1] - ty\n"),
    # the B slab loaded with tx as its k index (the A slab's habit): a warp reads 8 rows of B, 4 floats each
    _MATMUL.replace("        sB[ty, tx] = B[p + ty, col] if p + ty < k and col < n else np.float32(0.0)\n",
                    "        bk, bc = tx % TK, ty + TK * (tx // TK)\n"
                    "        sB[bk, bc] = B[p + bk, cuda.blockIdx.x * TN + bc] "
                    "if p + bk < k and cuda.blockIdx.x * TN + bc < n else np.float32(0.0)\n"),
]

# more slips of the 2-D map, checked directly (tests/test_kernel_observe.py)
RAMP_SLIPS = [
    # right values, column-major walk: thread g of the grid takes element (g % rows, g // rows), so the 16
    # neighbouring threads of a warp read down a column (one sector each): uncoalesced
    '''@cuda.jit
def ramp_2d(a, out):
    x, y = cuda.grid(2)
    rows, cols = a.shape
    g = y * cuda.gridDim.x * cuda.blockDim.x + x
    if g < rows * cols:
        r, c = g % rows, g // rows
        out[r, c] = a[r, c] * (r + 1) - c
''',
]

# The r24 read: thread 0's serial sum spelled with Python's sum() (numba-cuda compiles it as a loop in the calling
# thread): the entry above with its loop replaced
WRONG["block_sum"].append(WRONG["block_sum"][2].replace(
    "        acc = 0.0\n        for j in range(BLOCK):\n            acc += s[j]\n        partial[cuda.blockIdx.x] = acc",
    "        partial[cuda.blockIdx.x] = sum(s)"))
assert "sum(s)" in WRONG["block_sum"][-1], "the r24 entry lost its sum()"
