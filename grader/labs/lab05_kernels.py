"""Lab 5 — grids, blocks, warps and the SM: the problems and their references.

Kernel exercises are graded by running the student's ``@cuda.jit`` kernel on the instrumented SIMT
executor (``gpucourse.simt``) on every backend: the result must be right, and the executor's report
(memory traffic per thread, SIMT efficiency, divergent steps, races, coalescing) must meet the
exercise's requirement. On a GPU the kernel also runs on the device and must give the same result
there.

This module is the lab's *exercise side* (grader/DESIGN.md): specs, launches, requirements, visible
cases and the helpers the notebook uses. The references and hidden-case generators are in
grader/answers/lab05_kernels.py (instructor only); the visible cases' expected values ship as data
(lab05_kernels.expected.json). A kernel is observed where it runs (its outputs and the executor's
report as :class:`gpucourse.simt.ReportData`: every requirement below reads only what that carries)
and judged by the grader (``KernelProblem.judge``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from gpucourse import hardware, simt
from gpucourse import occupancy as occ

from ..checks import CheckFailure, expect_choice, expect_close, expect_int, expect_tuple, fail
# not_written: the notebook's machine-code cell calls lab.not_written
from ..kernels import KernelProblem, Launch, not_written  # noqa: F401
from ..problem import Case, Problem

# (x, y) threads: x runs along columns (the contiguous axis of a row-major array)
BLOCK_2D = (16, 8)
REDUCE_BLOCK = 128  # threads per block of the reduction


def _blocks(n: int, b: int) -> int:
    return -(-n // b)


# -- a map with a guard ----------------------------------------------------------------------------


def _map_launch(case: Case) -> Launch:
    x, a, b, block = case.args
    return Launch(_blocks(x.size, block), block, [x, np.zeros_like(x), a, b], outputs=[1])


def _map_require(r: simt.KernelReport, case: Case, what: str) -> None:
    g = r.per_thread("global")
    if g["max_reads"] > 1 or g["max_writes"] > 1:
        raise CheckFailure(
            f"{what}: a thread made {g['max_reads']} global reads and {g['max_writes']} writes; "
            "one element per thread needs one read of x and one write of out"
        )


MAP = KernelProblem(
    name="scale_shift",
    spec="""
        scale_shift(x, out, a, b): a kernel computing  out[i] = a * x[i] + b  for every element of
        the 1-D arrays x and out. One thread per element. It is launched as
            scale_shift[ceil(n / block), block](x, out, a, b)
        so the last block has threads with no element: guard them (their index is >= x.size).
        a and b are Python floats (float64 in a kernel: np.float32(a) keeps the arithmetic in
        float32; float64 arithmetic on the float32 data fails this check); block is the number
        of threads per block the checker launches with (32, 64 or 128; the kernel does not
        receive it: cuda.grid(1) already counts blocks of that size). x and out are float32
        arrays of n elements.
    """,
    visible=[Case((np.arange(70, dtype=np.float32), 2.0, 1.0, 32)),
             Case((np.linspace(-1, 1, 100).astype(np.float32), -0.5, 3.0, 64))],
    compare=lambda *a: None,
    launch=_map_launch,
    require=_map_require,
    float32_only=True,
)

# -- 2-D indexing, coalesced -----------------------------------------------------------------------


def _ramp_launch(case: Case) -> Launch:
    (a,) = case.args
    rows, cols = a.shape
    grid = (_blocks(cols, BLOCK_2D[0]), _blocks(rows, BLOCK_2D[1]))
    return Launch(grid, BLOCK_2D, [a, np.zeros_like(a)], outputs=[1])


# a warp of 16×2 threads reading float32 along rows touches 4–6 sectors; along columns ~16
MAX_SECTORS = 8.0


def _ramp_require(r: simt.KernelReport, case: Case, what: str) -> None:
    s = r.sectors_per_request("a")
    if s > MAX_SECTORS:
        raise CheckFailure(
            f"{what}: each warp-wide read of `a` touched {s:.1f} 32-byte sectors on average"
            f" (coalesced: at most {MAX_SECTORS:g}). Hint: threadIdx.x must run along the columns"
            " (the contiguous axis), as cuda.grid(2) returns (x, y) = (column, row)"
        )


RAMP = KernelProblem(
    name="ramp_2d",
    spec="""
        ramp_2d(a, out): a kernel computing  out[r, c] = a[r, c] * (r + 1) - c  for a 2-D float32
        array of shape (rows, cols) — not square, not a multiple of the block. It is launched
        with 2-D blocks of (16, 8) threads (x, y) and a 2-D grid (ceil(cols / 16), ceil(rows / 8)):
            ramp_2d[(ceil(cols/16), ceil(rows/8)), (16, 8)](a, out)
        Map x to the column and y to the row so that the 16 neighbouring threads of a warp
        read neighbouring addresses (coalesced). The checker counts the 32-byte sectors each
        warp's read of `a` touches: at most 8 per request.
        r and c are int64 in a kernel, and numba-cuda computes a float32 times an int64 in float64:
        np.float32(r + 1) keeps the arithmetic in float32 (float64 arithmetic fails this check).
    """,
    visible=[Case((np.arange(13 * 21, dtype=np.float32).reshape(13, 21) / 10,)),
             Case((np.ones((5, 37), dtype=np.float32),))],
    compare=lambda *a: None,
    launch=_ramp_launch,
    require=_ramp_require,
    float32_only=True,
)

# -- a block-level reduction in shared memory ------------------------------------------------------


def _sum_launch(case: Case) -> Launch:
    (x,) = case.args
    blocks = _blocks(x.size, REDUCE_BLOCK)
    return Launch(blocks, REDUCE_BLOCK, [x, np.zeros(blocks, dtype=np.float64)], outputs=[1])


# divergent branches: sequential addressing 5 per block; interleaved (tid % (2*stride)) 23 (counted
# once per warp split, however many lines its body has: report.divergent_branches)
MAX_DIVERGENT_PER_BLOCK = 10


MIN_SUM_EFFICIENCY = 0.5  # the stride-halving tree runs at ~97 %, one thread summing alone at ~11 %


def _sum_require(r: simt.KernelReport, case: Case, what: str) -> None:
    (x,) = case.args
    if r.atomics:
        raise CheckFailure(
            f"{what}: {r.atomics:,} atomic updates (cuda.atomic.*): an atomic add is not a tree."
            " All the threads of a block adding into one address (shared or global) are serialised,"
            " one update after another, and the float sum depends on the order the hardware happens"
            " to pick."
            " Reduce without atomics: halve the stride at each level, threads tid < stride adding"
            " s[tid + stride] into s[tid], cuda.syncthreads() between levels"
        )
    if r.total("shared", "w") == 0:
        raise CheckFailure(
            f"{what}: the kernel never wrote shared memory: reduce in a cuda.shared.array"
        )
    if r.total("global", "r") != x.size:
        raise CheckFailure(
            f"{what}: expected {x.size:,} global reads of x in total (each element once, the rest"
            f" in shared memory), got {r.total('global', 'r'):,}"
        )
    if r.total("global", "w") != r.n_blocks:
        raise CheckFailure(
            f"{what}: {r.total('global', 'w'):,} global writes for {r.n_blocks} blocks: one thread"
            " per block writes its sum, once (after the last barrier every thread sees s[0]; let"
            " thread 0 store it)"
        )
    # one thread summing the block alone: no divergence, no tree
    if r.simt_efficiency < MIN_SUM_EFFICIENCY:
        raise CheckFailure(
            f"{what}: SIMT efficiency {r.simt_efficiency:.1%} (at least {MIN_SUM_EFFICIENCY:.0%}):"
            " most lanes idle while few threads add — a tree has every thread of the lower half"
            " add at each level (stride halving), not one thread summing the shared array alone"
        )
    per_block = r.divergent_branches / r.n_blocks
    if per_block > MAX_DIVERGENT_PER_BLOCK:
        raise CheckFailure(
            f"{what}: {per_block:.1f} divergent branches per block (allowed:"
            f" {MAX_DIVERGENT_PER_BLOCK}); SIMT efficiency {r.simt_efficiency:.1%}. Hint: let"
            " threads tid < stride do the adds (stride halving), so whole warps are either all"
            " active or all idle until stride < 32"
        )


BLOCK_SUM = KernelProblem(
    name="block_sum",
    spec=f"""
        block_sum(x, partial): each block of {REDUCE_BLOCK} threads sums its {REDUCE_BLOCK}
        elements of the float64 array x into partial[blockIdx.x] (elements past the end of x
        count as 0). Launched as
            block_sum[ceil(n / {REDUCE_BLOCK}), {REDUCE_BLOCK}](x, partial)
        Each thread loads ONE element into a shared array of {REDUCE_BLOCK} float64s, then the
        block reduces it in shared memory as a tree, with cuda.syncthreads() between levels;
        thread 0 writes the result.
        Requirements: x read once per element; no races; SIMT efficiency at least
        {MIN_SUM_EFFICIENCY:.0%} (not one thread summing alone); no atomics (cuda.atomic.add into
        one shared address serialises the block's {REDUCE_BLOCK} updates: the opposite of a tree);
        at most {MAX_DIVERGENT_PER_BLOCK} divergent branches per block — times a warp's threads
        split at an if or a loop, each split counted once however many lines its body has (pick
        which threads work at each level so that, while the stride is 32 or more, whole warps work
        or idle; below 32 a split is unavoidable).
    """,
    # + 0.1: no element, and no block's sum, is a float32 (a float32 shared array fails visibly)
    visible=[Case((np.arange(300, dtype=np.float64) + 0.1,))],
    compare=lambda *a: None,
    launch=_sum_launch,
    require=_sum_require,
)

# -- a register-blocked matmul with rectangular shared-memory tiles --------------------------------
#
# Course §5.7 tiles C in TILE×TILE squares, one output per thread, and reads sA and sB once per
# product. The next step real GEMM kernels take: a block owns a TILE_M × TILE_N tile of C with half
# as many threads, each thread keeps TWO outputs in registers and reuses every sB value it loads
# from shared memory for both (register blocking: 3 shared reads per 2 products instead of 4), and
# the k axis is cut into TILE_K-wide slabs, so the A tile (TILE_M × TILE_K) has another shape than
# the thread block and must be loaded with its own index mapping.

TILE_M, TILE_N, TILE_K = 16, 16, 8  # rows and columns of C per block, k per shared-memory step
# (x, y) = (16, 8) threads: each computes rows ty and ty + 8 of its column
MM_BLOCK = (TILE_N, TILE_M // 2)
# the two float32 tiles: 1,024 bytes per block
MM_SHARED_BYTES = (TILE_M * TILE_K + TILE_K * TILE_N) * 4
# a warp's tile load: A as 4 rows × 8 floats (4–8 sectors), B as 2 rows × 16 (4–6, fewer at C's
# edge); A read down its columns (sA[tx, ty] = A[row0 + tx, p + ty]) touches 16 or more
MM_SECTORS = 8.0


def _mm_launch(case: Case) -> Launch:
    A, B = case.args
    m, n = A.shape[0], B.shape[1]
    return Launch(
        (_blocks(n, TILE_N), _blocks(m, TILE_M)),
        MM_BLOCK,
        [A, B, np.zeros((m, n), np.float32)],
        outputs=[2],
    )


def _mm_require(r: simt.KernelReport, case: Case, what: str) -> None:
    A, _ = case.args
    steps = _blocks(A.shape[1], TILE_K)
    shared = [name for name, space in r.spaces.items() if space == "shared"]
    if not shared or r.total("shared", "r") == 0:
        raise CheckFailure(
            f"{what}: no shared-memory reads: stage the tiles in cuda.shared.array and compute from"
            " them"
        )
    wide = [
        f"{name} ({r.itemsize[name]}-byte elements)" for name in shared if r.itemsize[name] != 4
    ]
    if wide:
        raise CheckFailure(
            f"{what}: shared array {', '.join(wide)}: A and B are float32; declare the tiles"
            " cuda.shared.array(shape, np.float32) — wider elements double the shared memory per"
            " block and the bytes every LDS moves"
        )
    m, n = A.shape[0], case.args[1].shape[1]
    if r.total("global", "w") != m * n:
        raise CheckFailure(
            f"{what}: {r.total('global', 'w'):,} writes to C for its {m * n:,} elements: each"
            f" element is written once, by the one block whose {TILE_M}×{TILE_N} tile holds it."
            f" Block (bx, by) starts at row by * {TILE_M}: row0 = cuda.blockIdx.y * {TILE_M}, not"
            f" cuda.grid(2)'s y, which steps by the block's {MM_BLOCK[1]} rows of threads, so"
            " neighbouring blocks' tiles overlap (rows written twice) and the last rows of C are"
            " left out"
        )
    limits = (
        (
            "global",
            0,
            2 * steps,
            "global reads",
            (
                f"one element of A and one of B per TILE_K step ({steps} "
                "steps): each element of a tile is loaded by exactly one thread"
            ),
        ),
        ("global", 1, 2, "global writes", "its two outputs, each written once"),
        (
            "shared",
            0,
            3 * TILE_K * steps,
            "shared reads",
            (
                f"3 per k in each step (sA for both rows, sB once): read sB[j, tx] into a register"
                f" and use it for both outputs — reading it again for the second row is 4 per k."
                f" The executor counts the reads your code asks for: here the compiler"
                f" (numba-cuda's NVVM, then ptxas) happens to merge the two loads of one address"
                f" (nothing stores to sB between them), but register blocking means writing the"
                f" reuse yourself, as the compiler cannot once a store or a barrier sits between"
                f" the uses"
            ),
        ),
    )
    c = r.counts
    for space, col, most, label, fix in limits:
        col += 2 if space == "shared" else 0
        got = int(c[:, col].max())
        if got > most:
            raise CheckFailure(
                f"{what}: a thread made {got} {label}; the budget is {most} ({got - most} over):"
                f" {fix}"
            )
    if r.shared_bytes + r.dynamic_shared_bytes > MM_SHARED_BYTES:
        raise CheckFailure(
            f"{what}: {r.shared_bytes + r.dynamic_shared_bytes} bytes of shared memory per block; "
            f"the budget is {MM_SHARED_BYTES} (a ({TILE_M}, {TILE_K}) and a ({TILE_K}, {TILE_N}) "
            "float32 tile)"
        )
    fixes = {
        "A": (
            f"number the block's threads t = ty * {TILE_N} + tx and give thread t the tile element "
            f"(t // {TILE_K}, t % {TILE_K}) of A"
        ),
        "B": (
            f"the ({TILE_K}, {TILE_N}) slab of B has the block's shape: thread (tx, ty) loads B[p +"
            " ty, col], tx along the row"
        ),
    }
    for array in ("A", "B"):
        s = r.sectors_per_request(array)
        if s > MM_SECTORS:
            raise CheckFailure(
                f"{what}: each warp-wide load of `{array}` touched {s:.1f} 32-byte sectors on"
                f" average (budget {MM_SECTORS:g}): neighbouring threads must load neighbouring"
                f" elements of a row — {fixes[array]}"
            )


MATMUL = KernelProblem(
    name="tiled_matmul",
    spec=f"""
        tiled_matmul(A, B, C): C = A @ B for float32 A (m, k) and B (k, n); m, k, n are any sizes
        (not multiples of the tiles). Launched as
            tiled_matmul[(ceil(n/{TILE_N}), ceil(m/{TILE_M})), {MM_BLOCK}](A, B, C)
        Block (bx, by) owns the {TILE_M}×{TILE_N} tile of C at rows by*{TILE_M} …, columns
        bx*{TILE_N} …, with {MM_BLOCK[0]}×{MM_BLOCK[1]} threads: thread (tx, ty) computes TWO
        outputs, kept in two registers:
            C[by*{TILE_M} + ty, bx*{TILE_N} + tx]  and
            C[by*{TILE_M} + ty + {TILE_M // 2}, bx*{TILE_N} + tx]
        k is walked in steps of TILE_K = {TILE_K}. Each step: the block stages A's ({TILE_M},
        {TILE_K}) slab and B's ({TILE_K}, {TILE_N}) slab in two float32 shared arrays
        (np.float32(0) outside the matrices), each thread loading ONE element of each; all threads
        wait; each thread accumulates its {TILE_K} × 2 products; all wait again.
        Budget per thread (checked by the executor): global reads ≤ 2 per step, global writes ≤ 2
        (and each element of C written once in all, by the block whose tile holds it), shared
        reads ≤ 3 per k (sA[ty, j], sA[ty + {TILE_M // 2}, j] and sB[j, tx] read once, used for
        both outputs — the budget counts your source's reads: ptxas would merge a second read
        of sB[j, tx] into one LDS here, but register blocking is writing it once); shared memory
        ≤ {MM_SHARED_BYTES} bytes per block (float32 tiles); loads of A and B coalesced
        (≤ {MM_SECTORS:g} sectors per warp-wide load); no races; float32 arithmetic only
        (accumulators start at np.float32(0): `acc = 0.0` is a float64 accumulator, FP64 on the
        GPU for every product).
    """,
    visible=[Case((np.arange(20 * 13, dtype=np.float32).reshape(20, 13) / 50,
                   np.linspace(-1, 1, 13 * 18, dtype=np.float32).reshape(13, 18)))],
    compare=lambda *a: None,
    launch=_mm_launch,
    require=_mm_require,
    float32_only=True,
)

# -- the register budget of an occupancy target (the inverse of the occupancy model) ---------------
# gpucourse.occupancy.occupancy (course §5.3; it follows NVIDIA's cuda_occupancy.h rule by rule,
# which tests/test_occupancy_header.py checks) answers "how many blocks fit with r registers per
# thread?". The exercise asks the question it does not answer: the most registers a thread may use
# while the SM keeps a target number of blocks — what `__launch_bounds__(threads, min_blocks)` asks
# the compiler for. Using the model is the point (the spec says so); the hidden cases make a single
# forward call, a per-SM register division, a count one granule off and a missing "no register count
# reaches it" wrong (tests/test_occupancy_header.py checks every case against the header).

class _Limits(dict):
    """One SM's limits that print as their name (``lab.LIMITS["H100"]``) in a case's call text, not
    as ~700 characters of dict."""

    def __init__(self, key: str, limits: dict):
        super().__init__(limits)
        self.key = key

    def __repr__(self) -> str:
        return f'lab.LIMITS["{self.key}"]'


LIMITS = {"H100": _Limits("H100", occ.sm_limits(hardware.H100_SXM)),
          "A100": _Limits("A100", occ.sm_limits(hardware.A100_SXM))}


def _model_at(case: Case, registers: int) -> occ.Occupancy:
    """The course's model for the case's kernel with ``registers`` per thread (the hints'
    arithmetic)."""
    threads, smem, _, limits = case.args
    return occ.occupancy(
        threads, registers, smem, limits, opt_in=bool(case.kwargs.get("opt_in", False))
    )


def _blocks_text(n: int) -> str:
    return f"{n} block{'' if n == 1 else 's'}"


def _registers_hint(case: Case, got: Any, expected: int | None) -> str:
    threads, _, target, limits = case.args
    top = limits["max_registers_per_thread"]
    if expected is None:
        low = _model_at(case, 1)
        return (
            f"even at 1 register per thread the SM holds {_blocks_text(low.blocks_per_sm)} (limited"
            f" by {low.limiter}), fewer than {target}: no register count reaches the target, so the"
            " answer is None"
        )
    if got is None:
        threads, smem = case.args[:2]
        if (
            case.kwargs.get("opt_in")
            and occ.occupancy(threads, expected, smem, limits).blocks_per_sm < target
        ):
            return (
                "this kernel opted in: shared memory up to"
                f" {limits['shared_per_block_optin'] // 1024} KiB per block (opt_in=True), so"
                f" {_blocks_text(target)} fit where 48 KiB would not"
            )
        return (
            f"some register count in 1 … {top} keeps {_blocks_text(target)}: search them all before"
            " giving up"
        )
    if not isinstance(got, (int, np.integer)) or isinstance(got, bool) or not 1 <= got <= top:
        return (
            f"a register count is a whole number in 1 … {top} (limits['max_registers_per_thread'])"
        )
    there = _model_at(case, int(got))
    if there.blocks_per_sm < target:
        return (
            f"at {got} registers per thread the model gives {_blocks_text(there.blocks_per_sm)} per"
            f" SM, fewer than {target}"
            + (
                ": that is where occupancy drops, one past the answer"
                if got == expected + 1
                else (
                    " (registers are split among the SM's 4 sub-partitions: dividing the whole SM's"
                    " registers over-counts)"
                )
            )
        )
    above = _model_at(case, int(got) + 1) if got < top else None
    if above is not None and above.blocks_per_sm >= target:
        return (
            f"{got + 1} registers per thread still keep {_blocks_text(above.blocks_per_sm)}:"
            " registers are granted per warp in units of 256 (8 per thread), so every count of one"
            " granule gives the same blocks"
            + (
                f" — and the largest count allowed is {top}, not a multiple of 8"
                if expected == top
                else ""
            )
        )
    return ""


def _compare_max_registers(what: str, got: Any, expected: tuple, case: Case) -> None:
    expect_tuple(what, got, "registers_per_thread, limiter")
    regs, want = got[0], expected[0]
    if want is None or regs is None:
        if regs is not want:
            fail(f"{what} → registers_per_thread", want, regs, _registers_hint(case, regs, want))
    else:
        expect_int(f"{what} → registers_per_thread", regs, want, _registers_hint(case, regs, want))
    expect_choice(
        f"{what} → limiter",
        got[1],
        expected[1],
        occ.LIMITERS,
        "the model's .limiter at that register count (at 1 register per thread when no count"
        " reaches the target): the resource giving the fewest blocks, ties to the earlier of warps,"
        " registers, shared_memory, blocks",
    )


MAX_REGISTERS = Problem(
    name="max_registers",
    spec="""
        max_registers(threads_per_block, shared_bytes_per_block, target_blocks, limits,
                      opt_in=False) -> (registers_per_thread, limiter)
        A kernel of `threads_per_block` threads using `shared_bytes_per_block` bytes of
        shared memory per block (`opt_in`: it raised its dynamic shared-memory limit above 48
        KiB) must keep at least `target_blocks` blocks resident per SM — what
        `__launch_bounds__(threads, target_blocks)` asks the compiler for. How many registers
        may each thread use?
        - registers_per_thread: the LARGEST count r in 1 … limits["max_registers_per_thread"]
          (255) at which the SM still holds >= target_blocks blocks; None when even 1 register
          per thread gives fewer (then no register cap helps: warps, shared memory or the block
          limit stand in the way).
        - limiter: what limits the resident blocks at that count (at 1 register per thread when
          None): 'warps', 'registers', 'shared_memory' or 'blocks', as the occupancy model's
          .limiter names it. On a tie (two or more resources allow the same fewest blocks; the
          model's .limiters lists them all, as NVIDIA's cuda_occupancy.h does) name the FIRST of
          warps, registers, shared_memory, blocks.
        `limits` is one SM's limits: lab.LIMITS["H100"] (sm_90) or lab.LIMITS["A100"] (sm_80).
        This exercise is about USING the course's occupancy model (§5.3) for the question it does
        not answer: gc.occupancy.occupancy(threads, registers, shared_bytes, limits, opt_in=...)
        gives the blocks for ONE register count; you find the count. Its rules decide the answer:
        registers are granted per warp in units of 256 (8 per thread) and split among the SM's 4
        sub-partitions, shared memory per block is capped at 48 KiB without the opt-in (which only
        dynamic shared memory can use: static __shared__ arrays stay within 48 KiB), and an SM holds
        at most 64 warps and 32 blocks.
    """,
    visible=[Case((256, 0, 2, LIMITS["H100"])), Case((32, 0, 21, LIMITS["H100"])),
             Case((64, 0, 1, LIMITS["H100"])), Case((128, 40 * 1024, 5, LIMITS["A100"]))],
    compare=_compare_max_registers,
)

# -- regroup data-dependent loops so each warp's lanes run alike -----------------------------------
#
# A loop whose trip count depends on the element's value cannot be if-converted into predicated
# FSEL/SEL code (as a short if/else is on sm_90): the warp keeps issuing the loop body until its
# LAST active lane is done, the finished lanes masked off (BSSY/BSYNC reconverge them on sm_70+).
# The fix keeps every global access contiguous — the tile is loaded and stored coalesced — and
# regroups the WORK inside the block, in shared memory, in an order that puts elements with similar
# trip counts in the same warp (the "sort by work, then process" of ray tracers and sparse kernels).

# threads per block (and elements per tile) of the divergence exercise: 8 warps per tile
REGROUP_BLOCK = 256
# the given kernel: 52–55 % on the mixed cases (53.5 % on the visible one, as the notebook
# prints), 79 % when every loop is long, 86 % when all are short; the regrouped solution 87–96 %
# (public seed)
MIN_EFFICIENCY = 0.80
# loop trip counts (halvings) of the two classes of element the hidden cases mix
SHORT, LONG = (1, 3), (12, 16)


def halvings(x: np.ndarray) -> np.ndarray:
    """Trip count of the loop `while v > 1: v *= 0.5` for each element (0 for v <= 1): ceil(log2
    v)."""
    n = np.zeros(x.shape, dtype=np.int64)
    v = np.asarray(x, dtype=np.float64).copy()
    while (m := v > 1.0).any():
        v[m] *= 0.5
        n[m] += 1
    return n


def tile_order(x: np.ndarray, tile: int = REGROUP_BLOCK) -> np.ndarray:
    """For each tile of ``tile`` consecutive elements, the tile's LOCAL indices (0 … tile-1) sorted
    by loop trip count, longest first (stable); the last, partial tile lists only its own elements.
    int32, same length as x.

    Longest first, so that a tile's last warp — partly empty when the tile is (n not a multiple of
    32) — gets the tile's shortest loops: its few lanes then idle through 0–3 trips, not 16
    (ascending order put the tile's longest loop on a lone lane and cost a right regrouping up to 3
    points of SIMT efficiency, under the budget)."""
    work = halvings(x)
    order = np.empty(x.size, dtype=np.int32)
    for start in range(0, x.size, tile):
        order[start:start + tile] = np.argsort(-work[start:start + tile], kind="stable")
    return order


def contiguous_sectors(n: int, itemsize: int) -> float:
    """Mean 32-byte sectors per warp-wide access when warp w's lanes read elements 32w … 32w+31 of
    an n-element array (the given kernel's x[i] and out[i]): the budget the fix must meet."""
    per_warp = [
        len({(i * itemsize) // 32 for i in range(w, min(w + 32, n))}) for w in range(0, n, 32)
    ]
    return float(np.mean(per_warp))


def _regroup_launch(case: Case) -> Launch:
    x, order = case.args
    return Launch(
        _blocks(x.size, REGROUP_BLOCK), REGROUP_BLOCK, [x, order, np.zeros_like(x)], outputs=[2]
    )


def _regroup_require(r: simt.KernelReport, case: Case, what: str) -> None:
    x, _ = case.args
    if r.total("global", "w") != x.size:
        raise CheckFailure(f"{what}: expected each of the {x.size:,} outputs written once, got "
                           f"{r.total('global', 'w'):,} writes")
    for array in ("x", "out"):
        budget = contiguous_sectors(x.size, x.itemsize)
        got = r.sectors_per_request(array)
        if got > budget + 1e-9:
            raise CheckFailure(
                f"{what}: each warp-wide access of `{array}` touched {got:.1f} 32-byte sectors on"
                f" average; budget {budget:.1f} (the given kernel's contiguous access),"
                f" {got - budget:.1f} over. Regrouping through global memory scatters a warp's"
                " addresses: load and store the tile contiguously, regroup on chip"
            )
    if r.simt_efficiency < MIN_EFFICIENCY:
        raise CheckFailure(
            f"{what}: SIMT efficiency {r.simt_efficiency:.1%} is below the budget"
            f" {MIN_EFFICIENCY:.0%} ({MIN_EFFICIENCY - r.simt_efficiency:.1%} short;"
            f" {r.divergent_steps} divergent warp steps). Lanes of one warp still run loops of very"
            " different lengths: give each warp elements of similar work"
        )


def _data_dependent(loop: Any) -> bool:
    """A while loop whose condition reads a variable its body assigns (``while v > 1: v = v *
    0.5``): not ``while False: pass``, nor a loop whose test its body never changes."""
    import ast

    tested = {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)}
    assigned = {n.id for stmt in loop.body for n in ast.walk(stmt)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return bool(tested & assigned)


def _keeps_the_loop(fn: Any, hidden: bool) -> str:
    """The spec keeps the data-dependent while loop: a closed form (ceil(log2 v), frexp) has no
    divergence to regroup and skips what the exercise teaches (kernel review, finding 3). Read from
    the kernel's own source."""
    import ast
    import inspect
    import textwrap

    def has_while(function: Any, depth: int = 0) -> bool | None:
        """A while loop in ``function``'s source or in a device function it calls (None: no source
        to read, e.g. built from a string)."""
        python_function = getattr(function, "py_func", function)
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(python_function)))
        except (OSError, TypeError, SyntaxError):
            return None
        if any(_data_dependent(node) for node in ast.walk(tree) if isinstance(node, ast.While)):
            return True
        scope = getattr(python_function, "__globals__", {})
        called = {node.func.id for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        return depth < 3 and any(has_while(scope[name], depth + 1) for name in called
                                 if hasattr(scope.get(name), "py_func"))

    found = has_while(fn)
    if found is None:  # the executor's checks above still hold
        return ""
    if not found:
        raise CheckFailure(
            "halvings_regrouped: your kernel has no data-dependent while loop (one whose condition"
            " reads a value its body changes): keep the given kernel's loop (halve until v <= 1) —"
            " the exercise regroups that work, it does not replace it"
        )
    return ""


def _regroup_case(x: np.ndarray) -> Case:
    return Case((x, tile_order(x)))


def _classes(rng: np.random.Generator, long_mask: np.ndarray) -> np.ndarray:
    """Values whose loop runs SHORT trips where long_mask is False and LONG trips where True."""
    trips = np.where(long_mask, rng.integers(LONG[0], LONG[1] + 1, long_mask.size),
                     rng.integers(SHORT[0], SHORT[1] + 1, long_mask.size))
    return 2.0 ** (trips - 1) * rng.uniform(1.01, 1.99, long_mask.size)  # ceil(log2 v) == trips


REGROUP = KernelProblem(
    name="halvings_regrouped",
    spec=f"""
        halvings_regrouped(x, order, out): the same result as the given kernel
        `halvings_divergent` —
            out[i] = k + v, where v starts at x[i] and is halved k times until v <= 1
            (x: float64, n elements)
        — launched as
            halvings_regrouped[ceil(n / {REGROUP_BLOCK}), {REGROUP_BLOCK}](x, order, out),
        with
          * SIMT efficiency of at least {MIN_EFFICIENCY:.0%} (the given kernel is far below
            on mixed inputs), and
          * no more 32-byte sectors per warp-wide access of x and of out than the given
            kernel's contiguous x[i] / out[i] (a failing check prints what it measured, the
            budget and the excess), and
          * each out[i] written once.
        Keep the data-dependent while loop (that is the divergence a compiler cannot remove).
        Each block owns one tile of {REGROUP_BLOCK} consecutive elements; `order` (int32, from
        lab.tile_order(x)) lists, tile by tile, the tile's local indices 0 … {REGROUP_BLOCK - 1}
        from the longest loop to the shortest (a partial last tile lists only its own elements).
        Which thread computes which element is yours to choose.
    """,
    visible=[
        _regroup_case(
            _classes(np.random.default_rng(5), np.random.default_rng(6).random(600) < 0.5)
        )
    ],
    compare=lambda *a: None,
    launch=_regroup_launch,
    require=_regroup_require,
    after=_keeps_the_loop,
)

# -- predict wave quantization ---------------------------------------------------------------------
#
# The block scheduler keeps at most sms × blocks_per_sm blocks resident; a grid larger than that
# runs in waves, and a last wave that fills only part of the GPU costs a whole wave's time (the
# "tail effect", NVIDIA's "wave quantization" in its Matrix Multiplication Background guide). Model:
# every block takes the same time and resident blocks do not slow each other down.

H100_SMS = hardware.H100_SXM.sm_count  # 132


def _compare_waves(what: str, got: Any, expected: tuple, case: Case) -> None:
    expect_tuple(what, got, "waves, slowdown")
    blocks, per_sm, sms = case.args
    expect_int(
        f"{what} → waves",
        got[0],
        expected[0],
        f"one wave holds sms × blocks_per_sm = {sms * per_sm} blocks; a partial last wave still"
        " counts",
    )
    expect_close(
        f"{what} → slowdown",
        got[1],
        expected[1],
        rtol=1e-9,
        hint="waves taken / (blocks / blocks per wave): 1.0 when the grid fills every wave",
    )


WAVES = Problem(
    name="wave_prediction",
    spec=f"""
        wave_prediction(blocks, blocks_per_sm, sms) -> (waves, slowdown)
        A grid of `blocks` equal blocks runs on a GPU of `sms` SMs (H100 SXM: {H100_SMS}) that holds
        `blocks_per_sm` of them resident per SM (the occupancy model of §5.3 and exercise 5). Every
        block takes the same time, and resident blocks do not slow each other down.
        - waves:    how many rounds of resident blocks the grid needs (an int — an integral float
                    such as 2.0 is accepted too; the last round may be partial).
        - slowdown: under this model, the time the grid takes divided by the time the same work
                    would take if it could be split evenly over every slot (blocks / blocks-per-wave
                    waves): 1.0 when nothing is idle. A grid smaller than one wave takes 1 wave and
                    its slowdown is blocks-per-wave / blocks (10.8 for 10 blocks on an A100's 108
                    SMs at 1 per SM): the share of slots left idle, not time this grid could win
                    back — its blocks cannot finish sooner than one block time; only a grid of more,
                    smaller blocks would use the idle slots.
    """,
    visible=[Case((264, 1, H100_SMS)), Case((133, 1, H100_SMS)), Case((1000, 4, H100_SMS))],
    compare=_compare_waves,
)

problems = {p.name: p for p in (MAP, RAMP, BLOCK_SUM, MATMUL, MAX_REGISTERS, REGROUP, WAVES)}

# -- What the compiler made of the kernels (not graded; the notebook's last cell) ------------------

MATMUL_SIG = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
HALVINGS_SIG = "void(float64[::1], int32[::1], float64[::1])"
PARITY_SIG = "void(float64[::1], float64[::1])"

# course §5.7's kernel (barriers always on): one output per thread, 8×8 tiles, a float32 accumulator
SQUARE_MATMUL = '''
def matmul_square(A, B, C):
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
'''
# the same kernel written with Python's habit, `acc = 0.0` and loads ending `else 0.0`: float64
# literals, so numba types the accumulator float64 (the trap §5.7 avoids)
SQUARE_MATMUL_F64 = SQUARE_MATMUL.replace("np.float32(0.0)", "0.0").replace(
    "matmul_square(", "matmul_square_f64("
)

# a short if/else on the thread index: both sides are cheap, so the compiler computes both and
# selects (FSEL)
PARITY_IF_ELSE = '''
def parity_divergent(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if i % 2 == 0:
            v = v * v
            v = v + 1.0
            v = v * 0.5
        else:
            v = -v
            v = v * 3.0
            v = v - 2.0
        out[i] = v
'''


def machine_code(
    tiled_matmul: Callable, halvings_divergent: Callable, halvings_regrouped: Callable
) -> dict:
    """SASS (sm_90) of the student's ``tiled_matmul``, of §5.7's one-output kernel (and of it with
    ``acc = 0.0``), of the given divergent loop, of the student's regrouped kernel and of a short
    if/else: numba-cuda's ``compile_ptx`` in one child process
    (:func:`gpucourse.toolchain.numba_ptx_many`), then ptxas and nvdisasm."""
    from gpucourse import toolchain

    jobs = {
        "tiled_matmul (yours)": (
            tiled_matmul,
            MATMUL_SIG,
            {"TM": TILE_M, "TN": TILE_N, "TK": TILE_K},
        ),
        "§5.7 one output per thread": (SQUARE_MATMUL, MATMUL_SIG, {"TILE": 8}),
        "§5.7 with acc = 0.0": (SQUARE_MATMUL_F64, MATMUL_SIG, {"TILE": 8}),
        "halvings_divergent (given)": (halvings_divergent, HALVINGS_SIG, {}),
        "halvings_regrouped (yours)": (
            halvings_regrouped,
            HALVINGS_SIG,
            {"REGROUP_BLOCK": REGROUP_BLOCK},
        ),
        "parity if/else": (PARITY_IF_ELSE, PARITY_SIG, {}),
    }
    return dict(zip(jobs, toolchain.numba_sass_many(list(jobs.values()))))


def inner_loop(sass: Any) -> dict[str, int]:
    """Shared loads (by width), multiply-adds and the float64 path's instructions of a matmul's
    SASS: with a constant tile the j loop is unrolled, and the k loop (a run-time trip count) is
    not, so these are one k step's — or a few steps', where the compiler copies the k loop's body
    (§5.7's float32 kernel: a multiple of 8 products)."""
    lds = sass.variants("LDS")
    out = {
        "LDS (32-bit)": lds.get("LDS", 0),
        "LDS.64": lds.get("LDS.64", 0),
        "LDS.128": lds.get("LDS.128", 0),
    }
    out.update({op: sass.count(op) for op in ("FFMA", "FMUL", "DADD", "DFMA")})
    out["F2F.F64.F32"] = sass.variants("F2F").get("F2F.F64.F32", 0)
    return out
