"""Lab 5b — kernel puzzles: a progression of ``@cuda.jit`` kernels, each with a budget the executor
enforces.

The set covers GPU-Puzzles' fourteen (map, zip, guard, map 2-D, broadcast, blocks, blocks 2-D,
shared, pooling, dot product, 1-D convolution, prefix sum, axis sum; the tiled matmul is lab 5's
exercise 4) and what it lacks: a transpose through padded shared memory (coalescing and bank
conflicts), a warp reduction with shuffles, a stream compaction with ``ballot_sync``, a histogram
with atomics (contention), a softmax row kernel. Every puzzle is a
:class:`grader.kernels.KernelProblem` with a :class:`grader.kernels.Budget` (stated in its spec);
hidden cases draw sizes that are not multiples of the block (one element, exactly one block, many
blocks, square and not) and adversarial values (all equal, negative, huge, −inf). Written for this
course after srush/GPU-Puzzles' list of puzzles; no code of it is used.

This module is the lab's *exercise side* (grader/DESIGN.md): specs, launches, budgets, visible
cases. The references and hidden-case generators are in grader/answers/lab05b_kernel_puzzles.py
(instructor only); the visible cases' expected outputs ship as data
(lab05b_kernel_puzzles.expected.json). A kernel is observed where it runs (its outputs and the
executor's report as data) and judged by the grader (``KernelProblem.judge``).
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable

import numpy as np

# not_written: the notebook's machine-code cell calls lab.not_written
from ..kernels import Budget, KernelProblem, Launch, budgeted, not_written  # noqa: F401
from ..problem import Case

F32 = np.float32
BLOCK_1D = 32  # threads per block of the 1-D multi-block puzzles
BLOCK_2D_SMALL = (8, 4)  # (x, y) threads per block of the small 2-D puzzles
MAXK = 4  # the longest convolution kernel
TILE = 32  # transpose tile edge (a warp is one tile row)
# the transpose block is (TILE, TILE_ROWS): each thread moves TILE / TILE_ROWS elements
TILE_ROWS = 8
TILE_PAD = TILE + 1  # a padded tile row: a tile column spreads over the 32 banks
HIST_BINS = 8
# shared-array shapes must be compile-time constants for numba-cuda: a global int or a literal, not
# `SHARED_BLOCK + 2`


def _blocks(n: int, b: int) -> int:
    return -(-n // b)


def puzzle(name: str, spec: str, launch: Callable, visible: list[Case], budget: Budget,
           extra: Callable | None = None, float32_only: bool = False) -> KernelProblem:
    """A puzzle of the exercise side: its reference and hidden-case generator live in
    grader/answers/lab05b_kernel_puzzles.py (instructor only), bound by ``Problem.has_answers``."""
    shown = textwrap.dedent(spec).strip() + "\n" + budget.text()
    return KernelProblem(name=name, spec=shown, visible=visible, compare=lambda *a: None,
                         launch=launch, require=budgeted(budget, extra), float32_only=float32_only)


def _idle_threads_idle(r, case, what):
    """map_guard: a thread with no element (i >= a.size) makes no global access at all."""
    from ..checks import CheckFailure

    n, c = case.args[0].size, r.counts
    busy = [t for t in range(n, c.shape[0]) if c[t, 0] or c[t, 1]]
    if busy:
        t = busy[0]
        raise CheckFailure(
            f"{what}: thread {t} has no element (i = {t} >= a.size = {n}) but made {int(c[t, 0])}"
            f" global read(s) and {int(c[t, 1])} write(s), as did {len(busy) - 1} more idle"
            " thread(s): guard the read too, not only the write — an idle thread does nothing"
        )


def _uses_shared(r, case, what):
    if r.total("shared", "w") == 0:
        from ..checks import CheckFailure

        raise CheckFailure(
            f"{what}: the kernel never wrote shared memory: this puzzle is about cuda.shared.array"
        )


def _one_write_per_warp(r, case, what):
    """warp_sum: one global write per warp that owns an element (lane 0's). Thirty-two lanes storing
    the same sum to out[w] is 32 writes of one word: a race under CUDA's memory model (§5b's intro),
    whatever the values."""
    (a,) = case.args
    owners = -(-a.size // 32)
    spaces = dict(r.spaces)
    writes = r.total("global", "w") + sum(r.atomic_updates(x) for x in r.arrays
                                          if spaces.get(x) == "global")
    if writes > owners:
        from ..checks import CheckFailure

        raise CheckFailure(
            f"{what}: your kernel wrote global memory {writes} times for the {owners} warps that"
            f" own elements; the budget is one write per such warp ({owners} in total),"
            f" {writes - owners} over: only lane 0 stores the warp's sum (every lane storing the"
            " same value to out[w] is still a race under CUDA's memory model)"
        )


def _compact_rules(r, case, what):
    """compact: no atomics, and count[w] written once per warp (lane 0's)."""
    _no_atomics(r, case, what)
    (a,) = case.args
    warps = -(-a.size // 32)
    arrays = [x for x, space in dict(r.spaces).items() if space == "global"]
    count = arrays[2] if len(arrays) == 3 else None  # a, out, count: the launch's order
    if count is not None and r.array_traffic(count)[3] > warps:
        from ..checks import CheckFailure

        raise CheckFailure(
            f"{what}: your kernel wrote count {r.array_traffic(count)[3]:,} times for {warps}"
            " warps; the budget is one write per warp: lane 0 stores the warp's count (every lane"
            " storing the same value is still a race under CUDA's memory model)"
        )


def _no_atomics(r, case, what):
    if r.atomics:
        from ..checks import CheckFailure

        raise CheckFailure(
            f"{what}: {r.atomics} atomic updates: a slot taken with cuda.atomic.add comes in an"
            " order CUDA does not define (this executor happens to run a warp's atomics in lane"
            " order; a GPU need not), so the kept values would not stay in order — use ballot_sync"
            " and popc, as the spec says"
        )


# -- map -------------------------------------------------------------------------------------------

def _one_block_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(1, a.size, [a, np.zeros_like(a)], outputs=[1])


MAP_ADD = puzzle(
    "map_add", """
        map_add(a, out): out[i] = a[i] + 10 for a float32 array a of n ≤ 64 elements.
        Launched with ONE block of exactly n threads:  map_add[1, n](a, out)  — thread i
        handles element i.
        Example: a = [0, 1, 2] (float32)  ->  out = [10, 11, 12] (float32).
    """,
    _one_block_launch,
    [Case((np.arange(4, dtype=F32),))],
    Budget(reads=1, writes=1, shared=0))

# -- zip -------------------------------------------------------------------------------------------


def _zip_launch(case: Case) -> Launch:
    a, b = case.args
    return Launch(1, a.size, [a, b, np.zeros_like(a)], outputs=[2])


ZIP_ADD = puzzle(
    "zip_add", """
        zip_add(a, b, out): out[i] = a[i] + b[i] for float32 arrays of n ≤ 64 elements.
        Launched as  zip_add[1, n](a, b, out): thread i handles element i.
        Example: a = [0, 1], b = [5, 5] (float32)  ->  out = [5, 6].
    """,
    _zip_launch,
    [Case((np.arange(4, dtype=F32), np.arange(4, dtype=F32) * 2))],
    Budget(reads=2, writes=1, shared=0))

# -- guard -----------------------------------------------------------------------------------------


def _guard_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(1, 64, [a, np.zeros_like(a)], outputs=[1])


MAP_GUARD = puzzle(
    "map_guard", """
        map_guard(a, out): out[i] = a[i] + 10, but launched with MORE threads than elements:
            map_guard[1, 64](a, out)   for n ≤ 64 elements
        Threads with i >= a.size must do nothing (no read, no write).
        Example: a = [0, 1, 2] (float32), 64 threads  ->  out = [10, 11, 12]; threads 3..63 idle.
    """,
    _guard_launch,
    [Case((np.arange(5, dtype=F32),))],
    Budget(reads=1, writes=1, shared=0), extra=_idle_threads_idle)

# -- map 2-D ---------------------------------------------------------------------------------------


def _map2d_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(1, BLOCK_2D_SMALL, [a, np.zeros_like(a)], outputs=[1])


MAP_2D = puzzle(
    "map_2d", f"""
        map_2d(a, out): out[r, c] = a[r, c] + 10 for a float32 array of shape
        (rows ≤ {BLOCK_2D_SMALL[1]}, cols ≤ {BLOCK_2D_SMALL[0]}), not necessarily square. Launched
        with ONE 2-D block of {BLOCK_2D_SMALL} threads (x, y):
            map_2d[1, {BLOCK_2D_SMALL}](a, out)
        x runs along the columns (the contiguous axis), y along the rows; guard both.
        Example: a = [[0, 1, 2], [3, 4, 5]] (float32, shape (2, 3))  ->
        out = [[10, 11, 12], [13, 14, 15]].
    """,
    _map2d_launch,
    # more columns (6) than the block has rows (4): a kernel mapping x to the row leaves columns
    # 4 and 5 unwritten
    [Case((np.arange(18, dtype=F32).reshape(3, 6),))],
    Budget(reads=1, writes=1, shared=0))

# -- broadcast -------------------------------------------------------------------------------------


def _bcast_launch(case: Case) -> Launch:
    a, b = case.args
    return Launch(1, BLOCK_2D_SMALL, [a, b, np.zeros((a.size, b.size), F32)], outputs=[2])


BROADCAST_ADD = puzzle(
    "broadcast_add", f"""
        broadcast_add(a, b, out): out[r, c] = a[r] + b[c] for float32 vectors
        a (rows ≤ {BLOCK_2D_SMALL[1]}) and b (cols ≤ {BLOCK_2D_SMALL[0]});
        out has shape (rows, cols).
        Launched as  broadcast_add[1, {BLOCK_2D_SMALL}](a, b, out)  with x along the columns and
        y along the rows.
        Example: a = [0, 10], b = [1, 2, 3] (float32)  ->  out = [[1, 2, 3], [11, 12, 13]].
    """,
    _bcast_launch,
    [Case((np.array([0, 10], F32), np.array([1, 2, 3], F32)))],
    Budget(reads=2, writes=1, shared=0))

# -- blocks ----------------------------------------------------------------------------------------


def _blocks_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(_blocks(a.size, BLOCK_1D), BLOCK_1D, [a, np.zeros_like(a)], outputs=[1])


MAP_BLOCKS = puzzle(
    "map_blocks", f"""
        map_blocks(a, out): out[i] = a[i] + 10 for any n, with blocks of {BLOCK_1D} threads —
        fewer threads per block
        than elements, so several blocks:  map_blocks[ceil(n / {BLOCK_1D}), {BLOCK_1D}](a, out).
        Element i belongs to thread threadIdx.x of block blockIdx.x with
        i = blockIdx.x * blockDim.x + threadIdx.x.
        Example: n = 40 (float32): 2 blocks; block 1's threads 8..31 have no element.
        A warp's 32 threads then read 32 neighbouring float32s: 128 bytes, 4 sectors of 32 bytes
        (coalesced) — the checker counts them.
    """,
    _blocks_launch,
    [Case((np.arange(40, dtype=F32),))],
    Budget(reads=1, writes=1, shared=0, sectors=4.0))

# -- blocks 2-D (coalesced) ------------------------------------------------------------------------
BLOCK_2D = (16, 4)  # a warp is 16 columns × 2 rows
MAP_BLOCKS_2D_LAUNCH = (f"map_blocks_2d[(ceil(cols / {BLOCK_2D[0]}), ceil(rows / {BLOCK_2D[1]})),"
                        f" {BLOCK_2D}](a, out)")


def _blocks2d_launch(case: Case) -> Launch:
    (a,) = case.args
    rows, cols = a.shape
    return Launch(
        (_blocks(cols, BLOCK_2D[0]), _blocks(rows, BLOCK_2D[1])),
        BLOCK_2D,
        [a, np.zeros_like(a)],
        outputs=[1],
    )


MAP_BLOCKS_2D = puzzle(
    "map_blocks_2d", f"""
        map_blocks_2d(a, out): out[r, c] = a[r, c] * 2 - r for a float32 array of
        any shape (rows, cols).
        Launched with 2-D blocks of {BLOCK_2D} threads (x, y) on a 2-D grid:
            {MAP_BLOCKS_2D_LAUNCH}
        A warp is {BLOCK_2D[0]} neighbouring x by 2 y: map x to the column so that it reads
        neighbouring addresses.
        2 and r are int64, and numba-cuda computes a float32 with an int64 in float64:
        np.float32(2) and np.float32(r) keep it in float32 (float64 arithmetic fails this check).
        Example: a = ones((2, 3), float32)  ->  out = [[2, 2, 2], [1, 1, 1]].
    """,
    _blocks2d_launch,
    # grid (3, 4): not square, so a swapped blockIdx shows
    [Case((np.arange(13 * 37, dtype=F32).reshape(13, 37) / 7,))],
    Budget(reads=1, writes=1, shared=0, sectors=6.0), float32_only=True)

# -- shared ----------------------------------------------------------------------------------------
SHARED_BLOCK = 8  # threads per block of the shared-memory puzzles
POOL_SLOTS = SHARED_BLOCK + 2  # the pooling block's elements and its 2-element halo


def _shared_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(_blocks(a.size, SHARED_BLOCK), SHARED_BLOCK, [a, np.zeros_like(a)], outputs=[1])


SHARED_FIRST = puzzle(
    "shared_first", f"""
        shared_first(a, out): out[i] = a[i] + a[f], where f is the first
        element of i's block (f = blockIdx.x * {SHARED_BLOCK}). Launched as
        shared_first[ceil(n / {SHARED_BLOCK}), {SHARED_BLOCK}](a, out).
        Each thread reads ONE element of a into a block-wide
        cuda.shared.array({SHARED_BLOCK}, float32); after cuda.syncthreads() every thread reads the
        block's first element from shared memory, not from a.
        Example: a = [1, 2, 3, ..., 9, 10] (float32, n = 10)  ->  out = [2, 3, ..., 9, 18, 19].
    """,
    _shared_launch,
    [Case((np.arange(1, 11, dtype=F32),))],
    Budget(reads=1, writes=1, shared=SHARED_BLOCK * 4), extra=_uses_shared, float32_only=True)

# -- pooling ---------------------------------------------------------------------------------------


POOL3 = puzzle(
    "pool3", f"""
        pool3(a, out): out[i] = a[i-2] + a[i-1] + a[i] (terms with a negative
        index count as 0), float32, launched as
        pool3[ceil(n / {SHARED_BLOCK}), {SHARED_BLOCK}](a, out). Each block stages
        its {SHARED_BLOCK} elements plus the 2 before them in ONE
        cuda.shared.array(POOL_SLOTS, float32), POOL_SLOTS = {SHARED_BLOCK + 2};
        the first two threads also load that 2-element halo. Then the block waits,
        and each thread sums from shared memory.
        Example: a = [1, 2, 3, 4] (float32)  ->  out = [1, 3, 6, 9].
    """,
    _shared_launch,
    [Case((np.arange(1, 12, dtype=F32),))],
    Budget(reads=2, writes=1, shared=(SHARED_BLOCK + 2) * 4), extra=_uses_shared,
    float32_only=True)

# -- dot product -----------------------------------------------------------------------------------
DOT_THREADS = 64


def _dot_launch(case: Case) -> Launch:
    a, b = case.args
    return Launch(1, DOT_THREADS, [a, b, np.zeros(1, F32)], outputs=[2])


DOT = puzzle(
    "dot", f"""
        dot(a, b, out): out[0] = sum(a * b) for float32 vectors of n ≤ {DOT_THREADS}
        elements, launched with one
        block of {DOT_THREADS} threads:  dot[1, {DOT_THREADS}](a, b, out).
        Each thread multiplies at most one pair into a cuda.shared.array({DOT_THREADS}, float32) (0
        past n), then the block reduces it as a tree (one thread summing the 64 alone leaves the
        rest idle: the SIMT budget below); exactly ONE thread writes out[0]. Every thread must reach
        every cuda.syncthreads() (a barrier inside `if i < n`, which the other threads skip and then
        go on to the reduction, is barrier divergence).
        Example: a = [1, 2, 3], b = [4, 5, 6] (float32)  ->  out = [32].
    """,
    _dot_launch,
    [Case((np.arange(1, 21, dtype=F32), np.full(20, 0.5, F32)))],
    Budget(reads=2, total_writes=1, shared=DOT_THREADS * 4, efficiency=0.5, shared_atomics=0),
    extra=_uses_shared, float32_only=True)

# -- 1-D convolution -------------------------------------------------------------------------------
CONV_BLOCK = 16  # threads per block of the convolution
CONV_SLOTS = CONV_BLOCK + MAXK - 1  # the convolution block's elements and its right halo


def _conv_launch(case: Case) -> Launch:
    a, k = case.args
    return Launch(_blocks(a.size, CONV_BLOCK), CONV_BLOCK, [a, k, np.zeros_like(a)], outputs=[2])


CONV1D = puzzle(
    "conv1d", f"""
        conv1d(a, k, out): out[i] = sum_j a[i + j] * k[j] over j < k.size (≤ {MAXK}), terms with
        i + j >= a.size count as 0; float32. Launched as
            conv1d[ceil(n / {CONV_BLOCK}), {CONV_BLOCK}](a, k, out)
        Stage the block's {CONV_BLOCK} elements of a plus the next {MAXK - 1} (the halo) in a
        cuda.shared.array(CONV_SLOTS, float32), CONV_SLOTS = {CONV_BLOCK + MAXK - 1}, and k in a
        cuda.shared.array({MAXK}, float32); then each thread computes its output from shared memory
        only.
        Example: a = [1, 2, 3, 4], k = [1, 10] (float32)  ->  out = [21, 32, 43, 4].
    """,
    _conv_launch,
    [Case((np.arange(1, 21, dtype=F32), np.array([1, 10, 100], F32)))],
    Budget(reads=3, writes=1, shared=(CONV_BLOCK + MAXK - 1 + MAXK) * 4), extra=_uses_shared,
    float32_only=True)

# -- prefix sum ------------------------------------------------------------------------------------
SCAN_BLOCK = 16  # threads per block of the scan


def _scan_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(_blocks(a.size, SCAN_BLOCK), SCAN_BLOCK, [a, np.zeros_like(a)], outputs=[1])


BLOCK_SCAN = puzzle(
    "block_scan", f"""
        block_scan(a, out): the inclusive prefix sum of each block's {SCAN_BLOCK} elements of
        the float32 array a: out[i] = a[s] + a[s+1] + ... + a[i] with s = the first element of
        i's block. Launched as
            block_scan[ceil(n / {SCAN_BLOCK}), {SCAN_BLOCK}](a, out)
        Load once into shared memory, then log2({SCAN_BLOCK}) = 4 steps: at step d each thread adds
        the value d = 1, 2, 4, 8 places to its left. Read, barrier, write, barrier: a thread must
        not overwrite a value its neighbour has not read yet (the checker reports that race). Every
        thread works at every step: one thread adding the block up alone is serial (the SIMT budget
        below; blocks of {SCAN_BLOCK} threads allow at most 50 %).
        Example: a = [1, 1, 1, 1, 1] (float32)  ->  out = [1, 2, 3, 4, 5].
    """,
    _scan_launch,
    [Case((np.ones(20, F32),))],
    # shared reads: a step reads s[t - d] and s[t] (2), log2(SCAN_BLOCK) steps, and the result once:
    # 9 for the tree; summing the block's prefix in every thread (sum(s[:t + 1])) reads up to
    # SCAN_BLOCK
    Budget(reads=1, writes=1, shared=2 * SCAN_BLOCK * 4, efficiency=0.3,
           shared_reads=3 * (SCAN_BLOCK.bit_length() - 1)), extra=_uses_shared,
    float32_only=True)

# -- axis sum --------------------------------------------------------------------------------------
ROW_SUM_BLOCK = 64  # threads per block of the row sum: two warps
ROW_SUM_BRANCHES = 8  # most divergent branches per block (see the budget below)


def _axis_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(a.shape[0], ROW_SUM_BLOCK, [a, np.zeros(a.shape[0], F32)], outputs=[1])


ROW_SUM = puzzle(
    "row_sum",
    f"""
        row_sum(a, out): out[r] = sum of row r of a float32 array of shape
        (rows, cols ≤ {ROW_SUM_BLOCK}), one block of {ROW_SUM_BLOCK} threads per row:
            row_sum[rows, {ROW_SUM_BLOCK}](a, out)
        Thread t loads a[r, t] (0 past cols) into shared memory; the block reduces it as a tree
        with a barrier per level; thread 0 writes out[r].
        Pick the working threads so that, while the stride is 32 or more, whole warps work or rest
        and warps split only where they must (the divergent-branches budget).
        Example: a = [[1, 2, 3], [4, 5, 6]] (float32)  ->  out = [6, 15].
    """,
    _axis_launch,
    [Case((np.arange(3 * 50, dtype=F32).reshape(3, 50) / 10,))],
    # divergent branches per block: the stride-halving tree splits warp 0 at strides 16…1 (5 in all:
    # the load guard is a select, not a branch, and thread 0's write joins the stride-1 level's run
    # of the same lanes); the interleaved tree (t % (2*stride)) splits both warps at nearly every
    # level (11). SIMT efficiency ≥ 80 %: every tree passes (93 % with a one-line add, 85 % with
    # three lines: efficiency counts statements, so it cannot tell the trees apart); one thread
    # summing the row alone does not
    Budget(reads=1, writes=1, shared=ROW_SUM_BLOCK * 4, efficiency=0.80, branches=ROW_SUM_BRANCHES,
           atomics=0, shared_atomics=0),
    extra=_uses_shared, float32_only=True,
)

# -- transpose through shared memory ---------------------------------------------------------------


def _tr_launch(case: Case) -> Launch:
    (a,) = case.args
    rows, cols = a.shape
    return Launch(
        (_blocks(cols, TILE), _blocks(rows, TILE)),
        (TILE, TILE_ROWS),
        [a, np.zeros((cols, rows), F32)],
        outputs=[1],
    )


TRANSPOSE = puzzle(
    "transpose",
    f"""
        transpose(a, out): out[c, r] = a[r, c] for a float32 array of any shape (rows, cols);
        out is (cols, rows).
        Launched with blocks of ({TILE}, {TILE_ROWS}) threads on a ({TILE}×{TILE})-tile grid:
            transpose[(ceil(cols / {TILE}), ceil(rows / {TILE})), ({TILE}, {TILE_ROWS})](a, out)
        Each thread moves {TILE // TILE_ROWS} elements (rows ty, ty + {TILE_ROWS}, ...). Both the
        read of a and the write of out must be coalesced (a warp touches one row of 32 neighbouring
        float32s): read a tile of a into shared memory by rows, barrier, write it to out by rows of
        out (columns of the tile). A column of a {TILE}×{TILE} float32 tile lies in one bank: pad
        the tile to (TILE, TILE_PAD) = ({TILE}, {TILE + 1}).
        (numba-cuda needs shared-array shapes as constants: TILE_PAD, not TILE + 1.)
    """,
    _tr_launch,
    [Case((np.arange(20 * 40, dtype=F32).reshape(20, 40),))],
    Budget(
        reads=TILE // TILE_ROWS,
        writes=TILE // TILE_ROWS,
        shared=TILE * (TILE + 1) * 4,
        # 4 sectors per warp-wide row of 32 floats, a little more where cols is not a multiple of
        # 8 and rows start off a sector boundary (up to 4.51 over the hidden shapes): 5 holds any
        # coalesced copy, the naive transpose's 20 does not
        sectors=5.0,
        conflicts=1.0,
    ),
)

# -- warp reduction with shuffles ------------------------------------------------------------------
WARP_BLOCK = 64  # threads per block: two warps


def _warp_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(
        _blocks(a.size, WARP_BLOCK),
        WARP_BLOCK,
        [a, np.zeros(_blocks(a.size, 32), F32)],
        outputs=[1],
    )


WARP_SUM = puzzle(
    "warp_sum", f"""
        warp_sum(a, out): out[w] = the sum of a[32w : 32w + 32] (0 past the end), float32, for every
        warp w of the launch  warp_sum[ceil(n / {WARP_BLOCK}), {WARP_BLOCK}](a, out)  (w = global
        thread index // 32).
        No shared memory: each lane loads one value into a register and the warp adds them
        with cuda.shfl_down_sync(0xFFFFFFFF, v, offset) for offset = 16, 8, 4, 2, 1; lane 0
        writes. EVERY lane of the warp takes part in every shuffle (the full mask), including
        the lanes past the end of a.
        Only warps that own at least one element write, one write each (lane 0's).
    """,
    _warp_launch,
    [Case((np.arange(70, dtype=F32),))],
    Budget(reads=1, writes=1, shared=0, atomics=0), extra=_one_write_per_warp, float32_only=True)

# -- stream compaction with ballot -----------------------------------------------------------------


def _compact_launch(case: Case) -> Launch:
    (a,) = case.args
    w = _blocks(a.size, 32)
    return Launch(
        _blocks(a.size, WARP_BLOCK),
        WARP_BLOCK,
        [a, np.zeros(w * 32, F32), np.zeros(w, np.int32)],
        outputs=[1, 2],
    )


COMPACT = puzzle(
    "compact", f"""
        compact(a, out, count): for every warp w, copy its positive elements of a[32w : 32w + 32]
        in order to out[32w :], and count[w] = how many there were (int32); the rest of out stays
        0. Launched as
            compact[ceil(n / {WARP_BLOCK}), {WARP_BLOCK}](a, out, count)
        Use mask = cuda.ballot_sync(0xFFFFFFFF, keep): bit j says lane j keeps its value; lane l's
        place is the number of keeping lanes below it, cuda.popc(mask & ((1 << l) - 1)); count is
        cuda.popc(mask); lane 0 writes count[w] (one write per warp: every lane storing the same
        count is still a race). Every lane that has not exited calls ballot_sync (lanes past the
        end with keep = False, or exited before it). No atomics: an atomic slot's order is
        undefined.
        Example: a = [3, -1, 0, 5] (float32)  ->  out[:32] = [3, 5, 0, ...], count = [2].
    """,
    _compact_launch,
    [Case((np.array([3, -1, 0, 5] * 10, F32),))],
    Budget(reads=1, writes=2, shared=0), extra=_compact_rules)

# -- histogram with atomics ------------------------------------------------------------------------
HIST_BLOCK = 64  # threads per block of the histogram


def _hist_launch(case: Case) -> Launch:
    (x,) = case.args
    return Launch(
        _blocks(x.size, HIST_BLOCK), HIST_BLOCK, [x, np.zeros(HIST_BINS, np.int32)], outputs=[1]
    )


HISTOGRAM = puzzle(
    "histogram", f"""
        histogram(x, counts): counts[b] = how many elements of the int32 array x equal
        b, for {HIST_BINS} bins (0 ≤ x < {HIST_BINS}). Launched as
        histogram[ceil(n / {HIST_BLOCK}), {HIST_BLOCK}](x, counts)  with counts zeroed.
        Many threads add to the same bin: `counts[b] += 1` is a race (read, add, write).
        Use cuda.atomic.add. All {HIST_BLOCK} threads of a block hitting {HIST_BINS}
        global counters serialise on them (contention): count into a block-private
        cuda.shared.array({HIST_BINS}, int32) with shared atomics, then add it to global
        counts once per bin per block.
    """,
    _hist_launch,
    [Case((np.arange(100, dtype=np.int32) % HIST_BINS,))],
    Budget(reads=1, shared=HIST_BINS * 4, atomics=HIST_BINS), extra=_uses_shared)


def _flush_is_atomic(require: Callable) -> Callable:
    """Before the budget: a plain read of `counts` is a non-atomic flush (`counts[b] += s[b]`). With
    one block nothing else writes counts, so no race shows and the read would only surface as a
    second global read per thread against the budget's 1: say what it is instead."""
    def check(r, case, what):
        n_read, first = r.elements_accessed("counts", "r")  # plain loads only (atomics are not "r")
        if n_read:
            from ..checks import CheckFailure

            more = f" (and {n_read - 1} more bin{'s' * (n_read != 2)})" if n_read > 1 else ""
            raise CheckFailure(
                f"{what}: your kernel read counts[{first}]{more} with a plain load: `counts[b] +="
                " ...` is a non-atomic read-add-write of a global counter. In this launch of"
                f" {r.n_blocks} block{'s' * (r.n_blocks != 1)} "
                + (
                    "nothing else wrote that bin in between, so no race shows, but with two or more"
                    " blocks their read-add-writes race with each other"
                    if r.n_blocks == 1
                    else "it races with the other blocks' read-add-writes"
                )
                + ": add with "
                "cuda.atomic.add — once per bin per block, from a count kept in shared memory"
            )
        require(r, case, what)
    check.budget = getattr(require, "budget", None)  # the passing line prints what the budget held
    return check


HISTOGRAM.require = _flush_is_atomic(HISTOGRAM.require)

# -- softmax rows ----------------------------------------------------------------------------------


def _softmax_launch(case: Case) -> Launch:
    (a,) = case.args
    return Launch(a.shape[0], 32, [a, np.zeros_like(a)], outputs=[1])


SOFTMAX_ROWS = puzzle(
    "softmax_rows", """
        softmax_rows(a, out): out[r, c] = exp(a[r, c] - m) / sum_c' exp(a[r, c'] - m),
        m = max of row r, for a
        float32 array of shape (rows, cols ≤ 32); one warp per row:  softmax_rows[rows, 32](a, out).
        Lane c loads a[r, c] once (-inf past cols: it then adds exp(-inf) = 0). The warp finds the
        max with cuda.shfl_xor_sync (offsets 16, 8, 4, 2, 1: afterwards every lane holds it), then
        the sum of math.exp(v - m) the same way, then lane c < cols writes its value. Subtracting
        the max is required: rows of values near 1000 overflow exp otherwise; -inf entries (masked
        positions) must give 0.
        Example: a = [[0, 0], [0, ln 3]] (float32)  ->  out = [[0.5, 0.5], [0.25, 0.75]].
    """,
    _softmax_launch,
    # the third row is near 1000 (exp overflows float32 without the max subtracted) with a masked
    # position: the visible case shows both rules of the spec
    [Case((np.array([[0, 0, 0], [0, 1, 2], [1000, 999, -np.inf]], F32),))],
    Budget(reads=1, writes=1, shared=0), float32_only=True)

# the largest float32 whose exp is finite (exp(88.73) overflows float32)
EXP_F32_MAX = float(np.log(np.finfo(F32).max))
LANE_MAX_CAUSE = (
    "a lane that does not hold the row's max — after a cuda.shfl_down_sync reduction only lane 0"
    " holds it, so the lanes past cols (a = -inf there) compute exp(-inf - (-inf)) = exp(NaN) ="
    " NaN, and the sum that adds their NaN is NaN too; cuda.shfl_xor_sync (offsets 16, 8, 4, 2, 1)"
    " leaves the max, then the sum, in every lane (or broadcast lane 0's with cuda.shfl_sync)"
)


def _softmax_nonfinite(case: Case, wrong: np.ndarray) -> str:
    """NaN/inf in softmax_rows' output: blame a missing max subtraction only where a wrong row has a
    value whose exp overflows float32 — otherwise the max was subtracted, but in a lane that did not
    hold it."""
    (a,) = case.args
    rows = np.flatnonzero(np.asarray(wrong).reshape(a.shape).any(axis=1))
    small = [r for r in rows if not (np.isfinite(a[r]) & (a[r] > EXP_F32_MAX)).any()]
    if not small:  # every such row holds a value whose exp overflows
        return (
            "an overflow (exp of a large value: subtract the row's max first), or "
            + LANE_MAX_CAUSE
        )
    return (
        f"not an overflow (row {small[0]} has no value above {EXP_F32_MAX:.1f}, so even exp(a) is"
        f" finite there): {LANE_MAX_CAUSE}"
    )


SOFTMAX_ROWS.nonfinite_hint = _softmax_nonfinite

# the puzzles in notebook order, each named as its exercise
ORDER = (
    MAP_ADD,
    ZIP_ADD,
    MAP_GUARD,
    MAP_2D,
    BROADCAST_ADD,
    MAP_BLOCKS,
    MAP_BLOCKS_2D,
    SHARED_FIRST,
    POOL3,
    DOT,
    CONV1D,
    BLOCK_SCAN,
    ROW_SUM,
    TRANSPOSE,
    WARP_SUM,
    COMPACT,
    HISTOGRAM,
    SOFTMAX_ROWS,
)
problems: dict[str, Any] = {p.name: p for p in ORDER}


# -- what the compiler made of the student's kernels (ungraded; numba-cuda -> PTX -> ptxas ->
# nvdisasm, sm_90) ------

TRANSPOSE_SIG = "void(float32[:, ::1], float32[:, ::1])"
WARP_SUM_SIG = "void(float32[::1], float32[::1])"
# the tile's row stride is the constant multiplier of the shared-memory index: IMAD Rd, row, 0x21
# (33 floats), col (0x20 for 32 floats; other IMADs multiply by 0x4, the bytes of a float, or are
# 64-bit global address arithmetic)
TILE_STRIDE = r"IMAD(?:\.U32)? R\d+, R\d+, (0x2[01]), R\d+ ;"


def machine_code(transpose: Callable, warp_sum: Callable) -> dict[str, tuple[str, Any]]:
    """(PTX, SASS) of the student's ``transpose`` compiled with the padded tile (``TILE_PAD = TILE +
    1``) and with ``TILE_PAD = TILE`` (the bank-conflicting tile), and of ``warp_sum``: three
    kernels, one child process (:func:`gpucourse.toolchain.numba_ptx_many`), then ptxas and nvdisasm
    for sm_90."""
    from gpucourse import toolchain

    const = {"TILE": TILE, "TILE_ROWS": TILE_ROWS}
    jobs = {
        "transpose, TILE_PAD = TILE + 1": (
            transpose,
            TRANSPOSE_SIG,
            {**const, "TILE_PAD": TILE + 1},
        ),
        "transpose, TILE_PAD = TILE": (transpose, TRANSPOSE_SIG, {**const, "TILE_PAD": TILE}),
        "warp_sum": (warp_sum, WARP_SUM_SIG, {}),
    }
    ptxs = toolchain.numba_ptx_many(list(jobs.values()))
    return {name: (ptx, toolchain.sass_of_ptx(ptx, "sm_90")) for name, ptx in zip(jobs, ptxs)}
