"""Plausible wrong answers to lab 5b, a list per puzzle: one per budget kind or misconception; each must
score less than full marks (tests/test_grading_pipeline.py: the k-th wrong submission holds every puzzle's k-th)."""

WRONG = {
    "map_add": [
        # writes the output twice (once unscaled): writes budget
        '''@cuda.jit
def map_add(a, out):
    i = cuda.threadIdx.x
    v = a[i]
    out[i] = v
    out[i] = v + 10
''',
        # reads out back from global memory: reads budget
        '''@cuda.jit
def map_add(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i]
    out[i] = out[i] + 10
''',
    ],
    "zip_add": [
        # adds b[0] to every element: values
        '''@cuda.jit
def zip_add(a, b, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + b[0]
''',
    ],
    "map_guard": [
        # no guard: out-of-bounds read reported
        '''@cuda.jit
def map_guard(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10
''',
    ],
    "map_2d": [
        # guards the column with the row count: elements missing on non-square shapes
        '''@cuda.jit
def map_2d(a, out):
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[0]:
        out[r, c] = a[r, c] + 10
''',
    ],
    "broadcast_add": [
        # swaps a and b: out of bounds on non-square
        '''@cuda.jit
def broadcast_add(a, b, out):
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    if r < a.size and c < b.size:
        out[r, c] = a[c] + b[r]
''',
    ],
    "map_blocks": [
        # <= instead of <: one thread past the end
        '''@cuda.jit
def map_blocks(a, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i <= a.size:
        out[i] = a[i] + 10
''',
    ],
    "map_blocks_2d": [
        # column-major thread order: right values, uncoalesced (sectors budget)
        '''@cuda.jit
def map_blocks_2d(a, out):
    rows, cols = a.shape
    x, y = cuda.grid(2)
    t = y * cuda.gridsize(2)[0] + x  # linear thread id, then column-major: r varies fastest
    r, c = t % rows, t // rows
    if c < cols:
        out[r, c] = a[r, c] * 2 - r
''',
        # x taken as the row: wrong/missing elements
        '''@cuda.jit
def map_blocks_2d(a, out):
    r = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    c = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * 2 - r
''',
        # blockIdx.x and blockIdx.y swapped (the r22 read): on a square grid the visible case could not tell
        '''@cuda.jit
def map_blocks_2d(a, out):
    c = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.x * cuda.blockDim.y + cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * 2 - r
''',
    ],
    "shared_first": [
        # shared array of 64 floats: shared-memory budget
        '''@cuda.jit
def shared_first(a, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SHARED_BLOCK + t
    s = cuda.shared.array(64, np.float32)
    if i < a.size:
        s[t] = a[i]
    cuda.syncthreads()
    if i < a.size:
        out[i] = s[t] + s[0]
''',
        # no barrier: race
        '''@cuda.jit
def shared_first(a, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SHARED_BLOCK + t
    s = cuda.shared.array(SHARED_BLOCK, np.float32)
    if i < a.size:
        s[t] = a[i]
    if i < a.size:
        out[i] = s[t] + s[0]
''',
    ],
    "pool3": [
        # reads all three inputs from global: reads budget
        '''@cuda.jit
def pool3(a, out):
    i = cuda.grid(1)
    if i < a.size:
        acc = a[i]
        if i >= 1:
            acc += a[i - 1]
        if i >= 2:
            acc += a[i - 2]
        out[i] = acc
''',
        # no halo load: uninitialised shared reads
        '''@cuda.jit
def pool3(a, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SHARED_BLOCK + t
    s = cuda.shared.array(POOL_SLOTS, np.float32)
    s[t + 2] = a[i] if i < a.size else 0.0
    cuda.syncthreads()
    if i < a.size:
        out[i] = s[t] + s[t + 1] + s[t + 2]
''',
    ],
    "dot": [
        # barrier inside `if t < n`: barrier divergence
        '''@cuda.jit
def dot(a, b, out):
    t = cuda.threadIdx.x
    s = cuda.shared.array(DOT_THREADS, np.float32)
    if t < a.size:
        s[t] = a[t] * b[t]
        cuda.syncthreads()
    if t == 0:
        acc = 0.0
        for j in range(a.size):
            acc += s[j]
        out[0] = acc
''',
        # thread 0 accumulates into out[0]: writes/reads budget
        '''@cuda.jit
def dot(a, b, out):
    t = cuda.threadIdx.x
    s = cuda.shared.array(DOT_THREADS, np.float32)
    s[t] = a[t] * b[t] if t < a.size else 0.0
    cuda.syncthreads()
    if t == 0:
        out[0] = 0.0
        for j in range(DOT_THREADS):
            out[0] += s[j]
''',
        # thread 0 sums the shared products alone (one write, but no tree): the SIMT-efficiency budget
        '''@cuda.jit
def dot(a, b, out):
    t = cuda.threadIdx.x
    s = cuda.shared.array(DOT_THREADS, np.float32)
    s[t] = a[t] * b[t] if t < a.size else np.float32(0)
    cuda.syncthreads()
    if t == 0:
        acc = np.float32(0)
        for j in range(DOT_THREADS):
            acc += s[j]
        out[0] = acc
''',
    ],
    "conv1d": [
        # reads a from global in the loop: reads budget
        '''@cuda.jit
def conv1d(a, k, out):
    i = cuda.grid(1)
    sk = cuda.shared.array(MAXK, np.float32)
    if cuda.threadIdx.x < k.size:
        sk[cuda.threadIdx.x] = k[cuda.threadIdx.x]
    cuda.syncthreads()
    if i < a.size:
        acc = 0.0
        for j in range(k.size):
            if i + j < a.size:
                acc += a[i + j] * sk[j]
        out[i] = acc
''',
        # no right halo: uninitialised shared reads
        '''@cuda.jit
def conv1d(a, k, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * CONV_BLOCK + t
    sa = cuda.shared.array(CONV_SLOTS, np.float32)
    sk = cuda.shared.array(MAXK, np.float32)
    sa[t] = a[i] if i < a.size else 0.0
    if t < MAXK:
        sk[t] = k[t] if t < k.size else 0.0
    cuda.syncthreads()
    if i < a.size:
        acc = 0.0
        for j in range(k.size):
            acc += sa[t + j] * sk[j]
        out[i] = acc
''',
    ],
    "block_scan": [
        # reads and writes in one step without a barrier between: race
        '''@cuda.jit
def block_scan(a, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SCAN_BLOCK + t
    s = cuda.shared.array(SCAN_BLOCK, np.float32)
    s[t] = a[i] if i < a.size else 0.0
    cuda.syncthreads()
    d = 1
    while d < SCAN_BLOCK:
        if t >= d:
            s[t] += s[t - d]
        cuda.syncthreads()
        d *= 2
    if i < a.size:
        out[i] = s[t]
''',
        # thread 0 scans the block alone (the eleventh GPU read): right values, serial — the SIMT budget
        '''@cuda.jit
def block_scan(a, out):
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SCAN_BLOCK + t
    s = cuda.shared.array(SCAN_BLOCK, np.float32)
    s[t] = a[i] if i < a.size else np.float32(0)
    cuda.syncthreads()
    if t == 0:
        for j in range(1, SCAN_BLOCK):
            s[j] += s[j - 1]
    cuda.syncthreads()
    if i < a.size:
        out[i] = s[t]
''',
    ],
    "row_sum": [
        # interleaved tree tid % (2*stride): divergent-branches budget
        '''@cuda.jit
def row_sum(a, out):
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = cuda.shared.array(ROW_SUM_BLOCK, np.float32)
    s[t] = a[r, t] if t < a.shape[1] else 0.0
    cuda.syncthreads()
    stride = 1
    while stride < ROW_SUM_BLOCK:
        if t % (2 * stride) == 0:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        out[r] = s[0]
''',
        # one thread sums the whole row: right, but 63 of 64 threads idle — SIMT efficiency budget
        '''@cuda.jit
def row_sum(a, out):
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    s = cuda.shared.array(ROW_SUM_BLOCK, np.float32)
    s[t] = a[r, t] if t < a.shape[1] else 0.0
    cuda.syncthreads()
    if t == 0:
        acc = 0.0
        for j in range(ROW_SUM_BLOCK):
            acc += s[j]
        out[r] = acc
''',
    ],
    "transpose": [
        # unpadded tile: bank-conflict budget
        '''@cuda.jit
def transpose(a, out):
    tile = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    rows, cols = a.shape
    for j in range(ty, TILE, TILE_ROWS):
        if by + j < rows and bx + tx < cols:
            tile[j, tx] = a[by + j, bx + tx]
    cuda.syncthreads()
    for j in range(ty, TILE, TILE_ROWS):
        if bx + j < cols and by + tx < rows:
            out[bx + j, by + tx] = tile[tx, j]
''',
        # no shared memory: uncoalesced write (sectors budget)
        '''@cuda.jit
def transpose(a, out):
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    for j in range(ty, TILE, TILE_ROWS):
        if by + j < a.shape[0] and bx + tx < a.shape[1]:
            out[bx + tx, by + j] = a[by + j, bx + tx]
''',
    ],
    "warp_sum": [
        # shuffle inside the guard: lanes past the end exit, shuffle from an inactive lane
        '''@cuda.jit
def warp_sum(a, out):
    i = cuda.grid(1)
    if i < a.size:
        v = a[i]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if i % 32 == 0:
            out[i // 32] = v
''',
    ],
    "compact": [
        # place counted from the wrong end of the mask: wrong order / race
        '''@cuda.jit
def compact(a, out, count):
    i = cuda.grid(1)
    lane = i % 32
    v = a[i] if i < a.size else np.float32(0)
    keep = v > 0
    mask = cuda.ballot_sync(0xFFFFFFFF, keep)
    if keep:
        out[i - lane + cuda.popc(mask >> lane) - 1] = v
    if lane == 0 and i < a.size:
        count[i // 32] = cuda.popc(mask)
''',
        # each keeping lane takes its slot with an atomic add (the twelfth GPU read): in lane order on this
        # executor, in no defined order on a GPU
        '''@cuda.jit
def compact(a, out, count):
    i = cuda.grid(1)
    w = i // 32
    v = a[i] if i < a.size else np.float32(0)
    if v > 0:
        slot = cuda.atomic.add(count, w, 1)
        out[32 * w + slot] = v
''',
    ],
    "histogram": [
        # counts[x] += 1: race
        '''@cuda.jit
def histogram(x, counts):
    i = cuda.grid(1)
    if i < x.size:
        counts[x[i]] += 1
''',
        # global atomics only: atomics (contention) budget
        '''@cuda.jit
def histogram(x, counts):
    i = cuda.grid(1)
    h = cuda.shared.array(HIST_BINS, np.int32)
    if i < x.size:
        cuda.atomic.add(counts, x[i], 1)
''',
    ],
    "softmax_rows": [
        # no max subtraction: exp overflows on large rows
        '''@cuda.jit
def softmax_rows(a, out):
    r = cuda.blockIdx.x
    c = cuda.threadIdx.x
    e = math.exp(a[r, c]) if c < a.shape[1] else 0.0
    s = e
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_xor_sync(0xFFFFFFFF, s, off)
    if c < a.shape[1]:
        out[r, c] = e / s
''',
    ],
}

# The r24 read: a serial loop spelled with Python's sum() (numba-cuda compiles it as a loop in the calling thread).
# Each is an entry above with its loop replaced: thread 0's register sum of dot's products, and a prefix per thread.
WRONG["dot"].append(WRONG["dot"][2].replace(
    "        acc = np.float32(0)\n        for j in range(DOT_THREADS):\n            acc += s[j]\n        out[0] = acc",
    "        out[0] = sum(s)"))
WRONG["block_scan"].append(WRONG["block_scan"][0].replace(
    "    d = 1\n    while d < SCAN_BLOCK:\n        if t >= d:\n            s[t] += s[t - d]\n        cuda.syncthreads()\n"
    "        d *= 2\n    if i < a.size:\n        out[i] = s[t]", "    if i < a.size:\n        out[i] = sum(s[:t + 1])"))
WRONG["row_sum"].append(WRONG["row_sum"][1].replace(
    "        acc = 0.0\n        for j in range(ROW_SUM_BLOCK):\n            acc += s[j]\n        out[r] = acc",
    "        out[r] = sum(s)"))
assert all("sum(s" in WRONG[k][-1] for k in ("dot", "block_scan", "row_sum")), "the r24 entries lost their sum()"

