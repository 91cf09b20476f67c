"""Attacks on lab05b_kernel_puzzles from the student edition alone.

Every exercise is a CUDA kernel, judged on its outputs *and* on the executor's report of how it got them (reads,
writes, barriers, shared memory, divergence budgets). Nothing installed writes a kernel: gpucourse.simt runs and
measures the student's kernel, the exercise side holds specs, launches and budgets, and no course notebook defines a
puzzle's kernel (python -m grader solution-leaks). What installed code *could* do is the work itself, behind the
executor's back: the second independent attack of issue 20 turned a device array into a NumPy array inside the
kernel (np.asarray, np.dot, np.bincount), whose reads and writes the executor did not meter, and passed with a
dummy shared-memory access. A device array now refuses to become a NumPy array inside a kernel (as numba-cuda
compiles no such thing), so each of these fails.

Puzzles 1-7 (map, zip, guard, map 2-D, broadcast, blocks, blocks 2-D): attack 3 scored with course §5.1's
`add_one` and §5.2's `scale_2d`, renamed and their one store line changed. Those cells are gone: §5.1's `who_am_i`
records block, thread and global index in a 3 × n table, §5.2's `owner_2d` records which block and which thread of
it reached each element of a matrix, `stride_owner` which thread of a grid-stride loop handled each element, §5.6's
`copy_rows` copies a matrix as its flat row-major memory; none maps an input array onto an output of a puzzle's
shape. The attacks below are attack 3's edit applied to the nearest of them (renamed, the puzzle's arguments, the
store line changed, the rest kept) and fail: the guard is the table's or the first store overwrites the input. What
a passing answer takes from the course is the indexing idiom, which is the lesson."""

ATTACKS = {
    # §5.1's who_am_i, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "map_add": [
        # the sixth attack: the executor's raw arrays through the garbage collector (an import inside the kernel),
        # the answer in NumPy, nothing metered
        '''@cuda.jit
def map_add(a, out):
    import gc as g
    R = [[x for x in g.get_referents(v) if isinstance(x, np.ndarray)][0] for v in (a, out)]
    R[1][:] = R[0] + 10
''',
        # the same work in a plain Python function reached through a default argument
        '''def _helper(a, out):
    import gc as g
    R = [[x for x in g.get_referents(v) if isinstance(x, np.ndarray)][0] for v in (a, out)]
    R[1][:] = R[0] + 10


@cuda.jit
def map_add(a, out, h=_helper):
    h(a, out)
''',
        # ... and through a callable global that is not a function
        '''import functools


def _helper(a, out):
    import gc as g
    R = [[x for x in g.get_referents(v) if isinstance(x, np.ndarray)][0] for v in (a, out)]
    R[1][:] = R[0] + 10


H = functools.partial(_helper)


@cuda.jit
def map_add(a, out):
    H(a, out)
''','''@cuda.jit
def map_add(ids, out):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < ids.shape[1]:  # the guard: the last block has threads past the end
        out[i] = ids[i] + 10
'''],
    # §5.1's who_am_i, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "zip_add": ['''@cuda.jit
def zip_add(ids, b, out):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < ids.shape[1]:  # the guard: the last block has threads past the end
        out[i] = ids[i] + b[i]
'''],
    # §5.1's who_am_i, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "map_guard": ['''@cuda.jit
def map_guard(ids, out):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < ids.shape[1]:  # the guard: the last block has threads past the end
        out[i] = ids[i] + 10
'''],
    # §5.2's owner_2d, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "map_2d": ['''@cuda.jit
def map_2d(block, thread):
    c, r = cuda.grid(2)  # x → column, y → row
    if r < thread.shape[0] and c < thread.shape[1]:  # both coordinates guarded
        block[r, c] = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x  # blocks numbered along x first
        thread[r, c] = block[r, c] + 10
'''],
    # §5.2's owner_2d, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "broadcast_add": ['''@cuda.jit
def broadcast_add(block, thread, out):
    c, r = cuda.grid(2)  # x → column, y → row
    if r < thread.shape[0] and c < thread.shape[1]:  # both coordinates guarded
        block[r, c] = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x  # blocks numbered along x first
        out[r, c] = block[r] + thread[c]
'''],
    # §5.1's who_am_i, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "map_blocks": ['''@cuda.jit
def map_blocks(ids, out):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < ids.shape[1]:  # the guard: the last block has threads past the end
        out[i] = ids[i] + 10
'''],
    # §5.2's owner_2d, renamed, the puzzle's arguments, the store line changed (attack 3's edit)
    "map_blocks_2d": ['''@cuda.jit
def map_blocks_2d(block, thread):
    c, r = cuda.grid(2)  # x → column, y → row
    if r < thread.shape[0] and c < thread.shape[1]:  # both coordinates guarded
        block[r, c] = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x  # blocks numbered along x first
        thread[r, c] = block[r, c] * 2 - r
'''],
    "dot": [
        # the fifth attack: the executor's raw array behind a device array (`._a`), unmetered, does the work
        '''@cuda.jit
def dot(a, b, out):
    s = cuda.shared.array(DOT_THREADS, np.float32)
    i = cuda.threadIdx.x
    s[i] = a[i] * b[i] if i < a.size else np.float32(0.0)
    cuda.syncthreads()
    if i == 0:
        out[0] = np.dot(a._a, b._a)
''', '''@cuda.jit
def dot(a, b, out):
    """out[0] = sum(a * b), one block."""
    s = cuda.shared.array(64, np.float32)
    s[cuda.threadIdx.x] = 0.0
    if cuda.threadIdx.x == 0:
        out[0] = np.dot(np.asarray(a), np.asarray(b))
'''],
    # the fifth attack: the executor's raw array behind a device array (`._a`), unmetered, does the work
    "block_scan": ['''@cuda.jit
def block_scan(a, out):
    s = cuda.shared.array(SCAN_BLOCK, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < a.size:
        s[t] = a[i]
        out[i] = np.cumsum(a._a[i - t:i + 1], dtype=np.float32)[-1]
'''],
    "transpose": ['''@cuda.jit
def transpose(a, out):
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * TILE, cuda.blockIdx.x * TILE
    for j in range(ty, TILE, TILE_ROWS):
        if c0 + j < a.shape[1] and r0 + tx < a.shape[0]:
            out[c0 + j, r0 + tx] = getattr(a, "_a")[r0 + tx, c0 + j]
'''],
    "histogram": ['''@cuda.jit
def histogram(x, counts):
    s = cuda.shared.array(8, np.int32)
    if cuda.threadIdx.x < 8:
        s[cuda.threadIdx.x] = 0
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        h = np.bincount(np.asarray(x), minlength=8)
        for b in range(8):
            cuda.atomic.add(counts, b, h[b])
'''],
    "softmax_rows": ['''@cuda.jit
def softmax_rows(a, out):
    r = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        v = np.asarray(a)[r]
        e = np.exp(v - v.max())
        np.asarray(out)[r] = e / e.sum()
'''],
}
