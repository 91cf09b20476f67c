"""Attacks on lab05_kernels from the student edition alone: what a determined student assembles from installed code.

Exercise 5 asks the inverse of the course's occupancy model (the most registers per thread that keep a target of
resident blocks); the installed model answers the forward question for one register count. A search over it is the
intended way to use it (the spec says so) and is the exercise; what installed code gives without that search is one
forward answer, and each attack below is that, however it is reached. Exercise 7's installed neighbour,
gpucourse.waves.measured_waves, runs a grid on a pool of threads: a measurement, not a prediction, and a grid of
millions of blocks (a hidden case) does not finish within the time limit (nor start inside the grading sandbox's
thread limit). Exercises 1-4 and 6 are kernels observed by the executor; no installed code or course cell holds them.

Exercises 1 and 2 (the first kernels): attack 3 scored with course §5.1's `add_one` and §5.2's `scale_2d`, each
renamed and its one store line changed to the exercise's formula. The course's index-mapping cells now compute
nothing (§5.1 `who_am_i` records each thread's block, thread and global index in a 3 × n table; §5.2 `owner_2d`
records which block and which thread of it reached each element, `stride_owner` which thread of a grid-stride loop
did; §5.6 `copy_rows` copies a matrix as its flat row-major memory): none takes an input array and writes an
output of the exercise's shape. The attacks below are attack 3's edit applied to the nearest of them (renamed, the
exercise's arguments, the store line changed, the rest of the cell kept); they fail. What a passing answer takes
from the course is the indexing idiom (`cuda.grid`, the guard on the array the kernel writes, x → column), which is
the lesson; its operands, guard and formula are the student's.
"""

ATTACKS = {
    # §5.1's who_am_i, renamed, the exercise's arguments in place of the table (its name kept for the first), the store
    # line changed: the guard is the table's (its element axis, shape[1]), a 1-D array has none
    "scale_shift": ['''@cuda.jit
def scale_shift(ids, out, a, b):
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < ids.shape[1]:  # the guard: the last block has threads past the end
        out[i] = a * ids[i] + b
'''],
    # §5.2's owner_2d, renamed, its `thread` store changed to the formula: its first store still writes the block
    # number over the input before the formula reads it
    "ramp_2d": ['''@cuda.jit
def ramp_2d(block, thread):
    c, r = cuda.grid(2)  # x → column, y → row
    if r < thread.shape[0] and c < thread.shape[1]:  # both coordinates guarded
        block[r, c] = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x  # blocks numbered along x first
        thread[r, c] = block[r, c] * (r + 1) - c
'''],
    # the work done behind the executor's back: a device array as a NumPy array inside the kernel (not metered;
    # refused since the second independent attack), with dummy shared accesses for the structure checks
    "block_sum": ['''@cuda.jit
def block_sum(x, partial):
    s = cuda.shared.array(128, np.float64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 128 + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    if t == 0:
        partial[cuda.blockIdx.x] = np.asarray(s).sum()
'''],
    # the fifth attack: the executor's raw array behind a device array (`._a`), unmetered, does the work after one
    # tile load made for show
    "tiled_matmul": ['''@cuda.jit
def tiled_matmul(A, B, C):
    sA = cuda.shared.array((TM, TK), np.float32)
    sB = cuda.shared.array((TK, TN), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0, col = cuda.blockIdx.y * TM, cuda.blockIdx.x * TN + tx
    t = ty * TN + tx
    m, k = A.shape
    n = B.shape[1]
    ar, ac = row0 + t // TK, t % TK
    sA[t // TK, ac] = A[ar, ac] if ar < m and ac < k else np.float32(0.0)
    sB[ty, tx] = B[ty, col] if ty < k and col < n else np.float32(0.0)
    cuda.syncthreads()
    v = sB[ty, tx]
    for rr in (row0 + ty, row0 + ty + TM // 2):
        if rr < m and col < n:
            C[rr, col] = np.dot(A._a[rr], B._a[:, col])
'''],
    "max_registers": [
        # the installed model, called once, at the most registers a thread may have
        '''def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    top = limits["max_registers_per_thread"]
    o = gc.occupancy.occupancy(threads_per_block, top, shared_bytes_per_block, limits, opt_in=opt_in)
    return (top if o.blocks_per_sm >= target_blocks else None), o.limiter
''',
        # the module loaded a second time (a lock on the first copy would not see it), and its register rule asked
        # for the blocks at the register count of the SM's registers divided evenly over the target's warps
        '''import importlib.util
import sys
import gpucourse.occupancy as _installed

_spec = importlib.util.spec_from_file_location("gpucourse.occupancy_copy", _installed.__file__)
occupancy_copy = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(occupancy_copy)


def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    warps = -(-threads_per_block // 32)
    regs = max(1, min(limits["max_registers_per_thread"], limits["registers"] // (target_blocks * warps * 32)))
    o = occupancy_copy.occupancy(threads_per_block, regs, shared_bytes_per_block, limits, opt_in=opt_in)
    return (regs if o.blocks_per_sm >= target_blocks else None), o.limiter
''',
        # the helper's source pasted (register_limit, from gpucourse/occupancy.py) and read for the registers of
        # one block at the target: the per-block check turned into a cap
        '''def _round_up(x, unit):
    return -(-x // unit) * unit


def register_limit(threads_per_block, registers_per_thread, lim):
    warps = -(-threads_per_block // 32)
    per_warp = _round_up(registers_per_thread * 32, lim["register_alloc_unit"])
    per_block = per_warp * warps
    parts = lim["sub_partitions"]
    assumed = per_warp * _round_up(warps, parts)
    if per_block > lim["registers_per_block"] or assumed > lim["registers_per_block"]:
        return 0
    if per_warp == 0:
        return None
    warps_per_part = (lim["registers"] // parts) // per_warp
    return warps_per_part * parts // warps


def max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits, opt_in=False):
    top = limits["max_registers_per_thread"]
    blocks = register_limit(threads_per_block, top, limits)
    if blocks is not None and blocks >= target_blocks:
        return top, "registers"
    regs = top * blocks // target_blocks if blocks else None
    return regs, "registers"
''',
    ],
    "wave_prediction": [
        # measure instead of predict: the grid run on the course's pool of slots, in units of one block's time
        '''from gpucourse import waves


def wave_prediction(blocks, blocks_per_sm, sms):
    n = round(waves.measured_waves(blocks, blocks_per_sm * sms))
    return n, n * blocks_per_sm * sms / blocks
''',
    ],
}
