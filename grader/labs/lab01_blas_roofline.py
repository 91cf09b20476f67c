"""Lab 1 — BLAS levels, arithmetic intensity and the roofline: the problems and their references.

Conventions the specs share (the course notebook derives them):
- FLOPs count multiplies and adds separately: one multiply-add = 2 FLOPs.
- Bytes are the *compulsory* traffic: every input element read once from memory, every output
  written once.
- ``dtype`` is a NumPy dtype name: 'float16', 'float32', 'float64' or 'int8'.

This module is the lab's *exercise side* (specs, visible cases, comparisons, the tiling and
timing-method checks: what students install); the references and hidden-case generators are its
answer side, grader/answers/lab01_blas_roofline.py (the instructor's only; grader/DESIGN.md). The
visible cases' expected values ship as data: lab01_blas_roofline.expected.json.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..checks import (
    CheckFailure, expect_array_close, expect_choice, expect_int, expect_tuple, fail, show,
)
from ..problem import Case, Problem
from ..virtual_clock import (
    DISPATCH,
    Pending,
    Workload,
)  # noqa: F401  (shared with lab 4's time_call)

DTYPES = ("float16", "float32", "float64", "int8")
# BLAS's caxpy / zaxpy: a complex multiply-add is 8 real FLOPs (axpy only)
COMPLEX_DTYPES = ("complex64", "complex128")
ROOFS = [  # (peak FLOP/s, bytes/s): H100 bf16, H100 fp32, A100 bf16, H200 bf16, a laptop CPU
    (989.4e12, 3.35e12), (67e12, 3.35e12), (312e12, 2.039e12), (989.4e12, 4.8e12), (0.6e12, 60e9),
]

# The counting exercises are asked backwards — from a profiler's counters to the call, from a
# budget to a length — so that a forward count (XLA's cost analysis, §1's square_gemm_counts) is a
# model the student may search with, not the answer (grader/DESIGN.md, "Lab 1 and lab 6: counts
# asked backwards"). Nothing is locked.


def _pairs(what: str, got: Any, names: str) -> list[tuple]:
    """A list answer whose items are tuples of ``names``: returned as a list of tuples."""
    if not isinstance(got, (list, tuple)):
        hint = " (did you forget `return`?)" if got is None else ""
        raise CheckFailure(
            f"{what}: expected a list of ({names}) tuples, got {type(got).__name__}"
            f" {show(got)}{hint}"
        )
    return [tuple(expect_tuple(f"{what} → item {i}", item, names)) for i, item in enumerate(got)]


def _compare_list(hint_for: Callable[[list, list, Case], str]):
    """Compare a list of tuples exactly, in order (a count returned as an integral float or a NumPy
    integer counts, as in expect_int); ``hint_for(expected, got, case)`` explains."""

    def compare(what: str, got: Any, expected: list, case: Case) -> None:
        names = "n, dtype" if case.args and len(case.args) == 2 else "m, n"
        items = _pairs(what, got, names)
        plain = [tuple(int(v) if isinstance(v, (int, np.integer)) else v for v in item)
                 for item in items]
        if plain != [tuple(e) for e in expected]:
            fail(what, [tuple(e) for e in expected], plain,
                 hint_for([tuple(e) for e in expected], plain, case))

    return compare


# -- Level 1 and Level 2, from a profiler's counters back to the call -----------------------------


def _zero_or_order(expected: list, got: list, counts: str) -> str | None:
    """The hint for a list that holds a call of no elements, or the right calls out of order."""
    if any(v == 0 for item in got for v in item[:2] if isinstance(v, (int, np.integer))):
        return (
            f"a call has at least one element ({counts} ≥ 1): a count of 0 gives 0 FLOPs and 0"
            " bytes for its part, which is no call"
        )
    if got != expected and sorted(got, key=str) == sorted(expected, key=str):
        return "the right calls, in another order: sort them"
    return None


def _axpy_hint(expected: list, got: list, case: Case) -> str:
    if (hint := _zero_or_order(expected, got, "n")) is not None:
        return hint
    flops = case.args[0]
    for n, dtype in got:  # a listed call that does not give back the FLOPs
        if dtype in DTYPES + COMPLEX_DTYPES and (8 if "complex" in dtype else 2) * n != flops:
            return (
                f"({n}, {dtype!r}) does {(8 if 'complex' in dtype else 2) * n:,} FLOPs, not"
                f" {flops:,}: n is a whole number of elements that gives back both counters"
                " exactly (check the FLOPs too, not only the bytes)"
            )
    if len(expected) == 2 and len(got) == 1 and got[0] in expected:
        return (
            "these counters fit two calls: a complex axpy does 8 real FLOPs per element, so it has"
            " a quarter of the elements of a real one with the same FLOPs — and at 4× the element"
            " size, the same bytes. List every call"
        )
    if expected and not got:
        return (
            "n follows from the FLOPs (2 per element; 8 for a complex element), then the element"
            " size from the bytes: x and y read, y written — 3·n elements"
        )
    if got and not expected:
        return (
            "no axpy has exactly these counters: check that n and the element size you found give"
            " back both counters (x, y read and y written: 3·n elements)"
        )
    return (
        "FLOPs: 2 per element (8 for complex: 4 multiplies + 2 adds, then 2 adds); bytes: 3·n"
        " elements at the dtype's size; sorted by n"
    )


AXPY = Problem(
    name="axpy_calls",
    spec="""
        axpy_calls(flops, nbytes) -> list of (n, dtype)
        A profiler reports a BLAS Level 1 call  y ← a·x + y  on vectors of n elements: its FLOPs
        and its bytes. Return every (n, dtype) whose axpy has exactly these two counters, sorted
        by n; [] when no axpy has them.
        dtype is one of 'int8', 'float16', 'float32', 'float64', 'complex64', 'complex128' (BLAS's
        caxpy and zaxpy are the complex ones); n ≥ 1.
        Count as §1 does: one multiply and one add per element; x and y are read, y is written,
        each element at its dtype's size (np.dtype(dtype).itemsize); `a` is a scalar (ignore it).
        FLOPs count real operations: a complex multiply is 4 real multiplies and 2 real adds, a
        complex add 2 real adds (LAPACK's and cuBLAS's convention).
        The same counters can fit more than one call: list every one.
    """,
    visible=[Case((2000, 12000)), Case((80, 240)), Case((2000, 1000))],
    compare=_compare_list(_axpy_hint),
)


def _gemv_hint(expected: list, got: list, case: Case) -> str:
    if (hint := _zero_or_order(expected, got, "m, n")) is not None:
        return hint
    if len(got) != len(set(got)):
        return "a shape is listed twice: a square A (m = n) is one shape, its own transpose"
    if len(expected) == 2 and len(got) == 1 and got[0] in expected:
        return (
            "the counters cannot tell A (m×n) from its transpose (n×m): both do m·n"
            " multiply-adds and move m·n + m + n elements. List both"
        )
    return (
        "FLOPs = 2·m·n; bytes = (m·n + n + m) elements (A and x read, y written): that gives"
        " m·n and m + n, so m and n are the roots of a quadratic (use integers: math.isqrt)"
    )


GEMV = Problem(
    name="gemv_shapes",
    spec="""
        gemv_shapes(flops, nbytes, dtype) -> list of (m, n)
        A profiler reports a BLAS Level 2 call  y ← A·x  in `dtype`: its FLOPs and its bytes.
        Return every shape (m, n) of A (m rows, n columns, both ≥ 1) whose gemv has exactly
        these counters, sorted; [] when none has.
        Each of the m outputs is a dot product of length n (n multiplies, n adds); A and x are
        read once, y is written once.
        On every test case m and n are at most 100,000: do not loop over every pair.
    """,
    visible=[Case((24, 76, "float32")), Case((2048, 2176, "float16")),
             Case((24, 64, "float32"))],
    compare=_compare_list(_gemv_hint),
)

# -- Level 3 ---------------------------------------------------------------------------------------


def _compare_gemm(what: str, got: Any, expected: tuple[int, bool] | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(
                f"{what}: expected None (no k gives both counters: the bytes are neither A, B and"
                f" C written, nor that plus C read), got {show(got)}"
            )
        return
    if got is None:
        raise CheckFailure(
            f"{what}: expected {show(expected)}, got None. Hint: k follows from the FLOPs"
            " (2·m·n·k) — accumulating into C adds no FLOPs (C's old value is where the k"
            " multiply-adds start, β·C folded into the FMA); then the bytes, every element at the"
            " dtype's size (np.dtype(dtype).itemsize), say whether C was read as well as written"
        )
    expect_tuple(what, got, "k, accumulate")
    expect_int(f"{what} → k", got[0], expected[0],
               "2·m·n·k FLOPs: each of the m·n outputs is a length-k dot product, a multiply and"
               " an add per step")
    if not isinstance(got[1], (bool, np.bool_)):
        raise CheckFailure(f"{what} → accumulate: expected {expected[1]!r} (a bool), got"
                           f" {type(got[1]).__name__} {show(got[1])}")
    if bool(got[1]) != expected[1]:
        raise CheckFailure(
            f"{what} → accumulate: expected {expected[1]!r}, got {bool(got[1])!r}. Hint: A (m×k)"
            " and B (k×n) are read and C (m×n) written; accumulating (β = 1) reads C too, and"
            " adds no FLOPs"
        )


GEMM = Problem(
    name="gemm_k",
    spec="""
        gemm_k(m, n, flops, nbytes, dtype) -> (k, accumulate) or None
        A weight-gradient GEMM  C ← A·B (+ C),  A: (m, k), B: (k, n), C: (m, n), in `dtype`: you
        know the layer's m and n; a profiler reports the call's FLOPs and bytes.
        Return the inner dimension k ≥ 1 and whether the call accumulated into C; None when no
        gemm of this m, n and dtype has these counters.
        Compulsory traffic: A and B read once, C written once. accumulate=False: C starts empty
        (β = 0). accumulate=True: C ← A·B + C (β = 1, as when a layer's gradient is summed over
        micro-batches): C is read once too; each output's k multiply-adds start from C's old
        value instead of 0, so the FLOPs do not change.
    """,
    visible=[Case((64, 32, 65536, 14336, "float32")), Case((5, 7, 210, 212, "float16")),
             Case((5, 7, 210, 178, "float16"))],
    compare=_compare_gemm,
)

# -- predict with the roofline: the largest batch within a latency budget --------------------------


def _compare_budget(what: str, got: Any, expected: tuple[int, str] | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(
                f"{what}: expected None (even a batch of 1 takes longer than the budget), got"
                f" {got!r}"
            )
        return
    if got is None:
        raise CheckFailure(
            f"{what}: expected {expected!r}, got None. Hint: a batch of 1 fits the budget here: "
            "predict its time with the roofline, max(FLOPs / peak, bytes / bandwidth)"
        )
    expect_tuple(what, got, "batch, bound")
    expect_int(
        f"{what} → batch",
        got[0],
        expected[0],
        "the roofline's time of the layer is max(FLOPs / peak, bytes / bandwidth), and both grow"
        " with B; W is read once per call whatever B is, in weight_dtype, X and Y in act_dtype; the"
        " budget is met when the time is at most budget_s",
    )
    expect_choice(
        f"{what} → bound",
        got[1],
        expected[1],
        ("memory", "compute"),
        "at that batch, which of FLOPs / peak and bytes / bandwidth is the larger ('compute' on a"
        " tie)?",
    )


# the spec's bound on a test case's answer (a loop over B is fast enough)
MAX_BATCH = 100_000

BUDGET = Problem(
    name="max_batch_within",
    spec=f"""
        max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s)
            -> (batch, bound) or None
        A dense layer Y = X·W, X: (B, d_in), W: (d_in, d_out), Y: (B, d_out), runs as one GEMM
        per call. X and Y are act_dtype; W is weight_dtype — served weight-only quantized (say
        int8 weights, float16 activations), it is read in its own, smaller dtype (the FLOPs
        stay 2·B·d_in·d_out). Serving the layer, every call must finish within budget_s seconds.
        Predict a call's time with the roofline — the larger of FLOPs / peak_flops and
        bytes / bandwidth (compulsory traffic as in exercise 2: X and W read once, Y written once,
        each in its own dtype) — and return the LARGEST batch B ≥ 1 whose predicted time is at
        most budget_s, with the roof that limits the call at that batch: 'memory' or 'compute'
        ('compute' when the two times are equal).
        Return None when even B = 1 takes longer than the budget.
        This exercise is about using the model: you may loop over B (on every test case the answer
        is None or at most {MAX_BATCH:,}), or solve the two linear inequalities.
    """,
    # W alone takes 40 µs: HBM limits
    visible=[Case((8192, 8192, "float16", "float16", 989.4e12, 3.35e12, 42e-6)),
             # int8 W: 20 µs, room for more
             Case((8192, 8192, "float16", "int8", 989.4e12, 3.35e12, 42e-6)),
             # a laptop CPU: its compute roof limits
             Case((1024, 1024, "float32", "float32", 0.6e12, 60e9, 1e-2)),
             # W alone over 30 µs: None
             Case((8192, 8192, "float16", "float16", 989.4e12, 3.35e12, 30e-6)),
             # exactly the budget at B = 512
             Case((1024, 1024, "float16", "float16", 2.0**40, 2.0**30, 2.0**-8))],
    compare=_compare_budget,
)

# -- the ridge point and batch size ----------------------------------------------------------------


def _compare_batch(what: str, got: Any, expected: int | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(
                f"{what}: expected None (no batch size reaches the ridge point), got {got!r}"
            )
        return
    hint = "intensity = 2·B·d_in·d_out / (bytes of X, W and Y); W is read once per batch"
    # one past: B = expected already reaches the ridge
    if isinstance(got, int) and got == expected + 1:
        hint = (
            f"one too many: B = {expected} already reaches the ridge point — if its intensity"
            " equals the ridge exactly, that is a tie, and a tie counts (≥, not >): a strict"
            " comparison skips it, and so does a closed form that rounds up past it in floating"
            " point. Decide with the intensity itself, ≥ the ridge (or with integers)"
        )
    expect_int(what, got, expected, hint)


# MAX_BATCH (exercise 3) bounds this exercise's answers too: the notebook's solution (a loop over B,
# about 1 µs a step) takes a fraction of a second; unbounded random draws ran past 10^7 on about 1
# case in 100,000 (a correct loop timed out)

MIN_BATCH = Problem(
    name="min_batch_compute_bound",
    spec=f"""
        min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth) -> int or None
        A dense layer Y = X·W with X: (B, d_in), W: (d_in, d_out) is one GEMM. Return the
        smallest batch size B ≥ 1 whose arithmetic intensity reaches the machine's ridge point
        (peak_flops / bandwidth), so that the layer is compute-bound; return None if no batch
        size ever reaches it. Compulsory traffic as in exercise 2 (β = 0).
        A tie counts: an intensity exactly equal to the ridge point reaches it. (Decide with the
        intensity itself: a closed form evaluated in floating point can land one above the answer
        at such a tie.) On every test case the answer is None or at most {MAX_BATCH:,}: a loop
        over B is fast enough.
    """,
    visible=[
        Case((8192, 8192, "float16", 989.4e12, 3.35e12)),
        Case((4096, 1024, "float32", 67e12, 3.35e12)),
        Case((128, 128, "float16", 989.4e12, 3.35e12)),
        Case((2048, 2048, "float16", 512e12, 1e12)),
    ],  # exactly at the ridge with B = 1024
    compare=_compare_batch,
)

# -- fusion saves bytes ----------------------------------------------------------------------------


def _compare_chain(what: str, got: Any, expected: tuple[int, int | None], case: Case) -> None:
    expect_tuple(what, got, "unfused_ops, fused_ops")
    expect_int(
        f"{what} → unfused_ops",
        got[0],
        expected[0],
        "unfused, every op is a kernel of its own: it reads its arity operands and writes one"
        " result, (arity + 1)·n elements per op; a tie counts (≤ budget_bytes)",
    )
    arity = case.args[2]
    if expected[1] is None:
        if got[1] is not None:
            raise CheckFailure(
                f"{what} → fused_ops: expected None, got {show(got[1])}. Hint: with arity"
                f" {arity} no later op brings a new input, so the fused chain reads x once and"
                " writes once however long it is: no length is too long"
            )
        return
    if got[1] is None:
        hint = (
            "not even one op fits: op 0 alone reads its arity inputs and writes its result,"
            " (arity + 1)·n elements, fused or not" if expected[1] == 0 else
            f"with arity {arity}, every later op reads {arity - 1} new input array(s), so the"
            " fused traffic grows with the length"
        )
        raise CheckFailure(
            f"{what} → fused_ops: expected {show(expected[1])}, got None. Hint: {hint}"
        )
    expect_int(
        f"{what} → fused_ops",
        got[1],
        expected[1],
        "fused, one kernel reads every input array once (arity for op 0, arity − 1 for each"
        " later op) and writes only the final result; intermediates stay in registers",
    )


# the spec's bound on a test case's answers (a loop over the length is fast enough)
MAX_CHAIN = 100_000

CHAIN = Problem(
    name="longest_chain",
    spec=f"""
        longest_chain(n, dtype, arity, budget_bytes) -> (unfused_ops, fused_ops)
        A chain of L elementwise ops over n-element arrays of `dtype`, every op of the same
        `arity` (1 to 4): op 0 takes `arity` input arrays; every later op takes the previous op's
        result plus (arity − 1) new input arrays. (The source article's  relu(x*y + z)  has
        arities 2, 2, 1.)
        Unfused: each op is its own kernel that reads all its operands from memory and writes its
        result to memory. Fused: one kernel reads every input array once, keeps intermediates in
        registers and writes only the final result.
        A step may move at most budget_bytes. Return the largest L ≥ 0 whose unfused chain moves
        at most budget_bytes, and the largest whose fused chain does — or None for the fused one
        when no length is too long. A tie counts: exactly budget_bytes fits.
        On every test case each answer is None or at most {MAX_CHAIN:,}.
    """,
    visible=[
        Case((1000, "float32", 2, 36_000)),
        Case((1000, "float32", 1, 8_000)),
        Case((10, "float64", 3, 100)),
    ],
    compare=_compare_chain,
)

# -- a blocked matmul ------------------------------------------------------------------------------

class TileTracker(np.ndarray):
    """A NumPy array that records the operand shapes of every matrix product it takes part in."""

    log: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.log = getattr(obj, "log", None)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        log = next((x.log for x in inputs if isinstance(x, TileTracker)), None)
        if ufunc is np.matmul and log is not None:
            log.append(tuple(tuple(np.shape(x)) for x in inputs[:2]))
        plain = [x.view(np.ndarray) if isinstance(x, TileTracker) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(
                o.view(np.ndarray) if isinstance(o, TileTracker) else o for o in kwargs["out"]
            )
        return getattr(ufunc, method)(*plain, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        log = next((x.log for x in args if isinstance(x, TileTracker)), None)
        if (
            func in (np.dot, np.tensordot, np.einsum, np.inner, np.vdot, np.outer)
            and log is not None
        ):
            log.append(tuple(tuple(np.shape(x)) for x in args if hasattr(x, "shape"))[:2])
        plain = tuple(a.view(np.ndarray) if isinstance(a, TileTracker) else a for a in args)
        out = (
            func._implementation(*plain, **kwargs)
            if hasattr(func, "_implementation")
            else func(*plain, **kwargs)
        )
        if func is np.copy and log is not None:
            return track(out, log)  # a tile staged in memory of its own is still a tile of A or B
        return out

    def dot(self, b: Any, out: Any = None) -> Any:  # the method, as np.dot
        return np.dot(self, b) if out is None else np.dot(self, b, out=out)


def track(a: np.ndarray, log: list) -> TileTracker:
    t = np.asarray(a).view(TileTracker)
    t.log = log
    return t


def _compare_matmul(what: str, got: Any, expected: np.ndarray, case: Case) -> None:
    # the spec: C in A's dtype
    expect_array_close(what, got, expected, dtype=np.dtype(case.args[0].dtype))


def _tiling(fn: Callable[..., Any], hidden: bool) -> str:
    """Re-run the student's function on tracked NumPy inputs: every product must be tile-sized, and
    the number of tile products must cover the whole matrix."""
    rng = np.random.default_rng(1 if hidden else 0)
    shapes = [(10, 7, 13, 4)] if not hidden else [(19, 11, 23, 5), (9, 17, 6, 8)]
    report = []
    for m, k, n, tile in shapes:
        log: list = []
        A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        C = fn(track(A, log), track(B, log), tile)
        expect_array_close(f"blocked_matmul on tracked ({m}×{k})·({k}×{n}), tile={tile}",
                           np.asarray(C).view(np.ndarray), A @ B)
        if not log:
            raise CheckFailure(
                f"blocked_matmul(({m}×{k}), ({k}×{n}), tile={tile}) computed no tile product the"
                " checker could see: it follows slices of A and B (and their .copy() or np.copy)"
                " into @, np.matmul, np.dot or .dot — not np.ascontiguousarray or np.array copies,"
                " not a buffer you allocate and fill (a padded tile: make the edge tiles smaller"
                " instead; padding would count as loads), not element by element"
            )
        for a_shape, b_shape in log:
            if max(a_shape + b_shape) > tile:
                raise CheckFailure(
                    f"blocked_matmul(({m}×{k}), ({k}×{n}), tile={tile}) multiplied a {a_shape}"
                    f" block by a {b_shape} block: every block must be at most {tile}×{tile}"
                )
        need = math.ceil(m / tile) * math.ceil(n / tile) * math.ceil(k / tile)
        if len(log) < need:
            raise CheckFailure(
                f"blocked_matmul(({m}×{k}), ({k}×{n}), tile={tile}): expected at least {need} tile"
                f" products, got {len(log)}"
            )
        loaded = sum(math.prod(a) + math.prod(b) for a, b in log)
        # output tiles of tile×tile, k in steps of tile: each A tile is read once per column of C
        # tiles and each B tile once per row of C tiles, whatever the loop order
        tiled = math.ceil(n / tile) * m * k + math.ceil(m / tile) * k * n
        if loaded > tiled:
            raise CheckFailure(
                f"blocked_matmul(({m}×{k}), ({k}×{n}), tile={tile}): your tile products read"
                f" {loaded:,} elements of A and B (the naive loop's count is {2 * m * n * k:,});"
                f" tiling reads {tiled:,}: each product must multiply a whole tile of A (up to"
                f" {tile}×{tile}) by a whole tile of B, so that every element loaded is used by a"
                " whole tile of C, not by one row, one column or one element"
            )
        report.append(
            f"({m}×{k})·({k}×{n}) tile {tile}: {len(log)} tile products, {loaded:,} elements loaded"
            f" (distinct: {m * k + k * n:,}; naive loop: {2 * m * n * k:,})"
        )
    return "\n  " + "\n  ".join(report)


BLOCKED = Problem(
    name="blocked_matmul",
    spec="""
        blocked_matmul(A, B, tile) -> C = A @ B, computed tile by tile.
        A: (m, k), B: (k, n), in the backend's array module (NumPy on CPU, CuPy on a GPU: get it
        with gc.array_module(A)). Loop over output tiles C[i:i+tile, j:j+tile] and over k in steps
        of tile; accumulate the product of an A tile and a B tile (with @) into each C tile.
        Shapes need not be multiples of tile: the last tiles are smaller (not padded). Every
        product you take must be at most tile × tile, and the elements your products read must be
        no more than tiling reads (whole tiles, each used for a whole C tile); the checker
        watches: it follows slices of A and B into @ (np.matmul, np.dot, .dot), and through
        .copy() or np.copy if you stage a tile in memory of its own — np.ascontiguousarray and
        np.array hand back plain arrays it cannot follow, so stage with .copy(). Return C with
        A's dtype.
    """,
    visible=[
        Case((np.arange(64.0).reshape(8, 8), np.eye(8), 4)),
        Case(
            (np.arange(70.0, dtype=np.float32).reshape(10, 7) / 70, np.ones((7, 13), np.float32), 4)
        ),
    ],
    compare=_compare_matmul,
    after=_tiling,
)

# -- how large must an op be to reach a fraction of its roof? --------------------------------------


class _Op(str):
    """An op's name ('gemv', 'gemm') that carries ``n_squared``: the answer a gemv counted as n²
    elements (x and y dropped) gives on its case (the hint of :func:`_compare_size`): computed by
    the answer side for a hidden case, written down for a visible one
    (tests/test_lab01_roofline_hints.py checks it); a case that travels as data is a plain string
    again and has none."""

    def __new__(cls, op: str, n_squared: int | None = None) -> "_Op":
        obj = super().__new__(cls, op)
        obj.n_squared = n_squared
        return obj


def _compare_size(what: str, got: Any, expected: int, case: Case) -> None:
    hint = (
        "a call takes overhead_s + its roofline time t, so it reaches t / (overhead_s + t) of its"
        " roof — the roof at its own intensity, not the peak; find the smallest n where that is at"
        " least `fraction`"
    )
    n_squared = getattr(case.args[0], "n_squared", None)
    if n_squared not in (None, expected) and isinstance(got, int) and got == n_squared:
        hint = (
            "count the gemv's bytes as in exercise 1: n² + 2n elements (A, x and y), not n² — your"
            " answer is what dropping x and y gives"
        )
    expect_int(what, got, expected, hint)


# the spec's bound on a test case's answer (a loop over n is fast enough)
MAX_SIZE = 100_000

SIZE_FOR_FRACTION = Problem(
    name="min_size_for_fraction",
    spec=f"""
        min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction) -> int
        op is 'gemv' (y ← A·x, A: n×n) or 'gemm' (C ← A·B, all n×n), counted as in exercises 1
        and 2. Every call costs a fixed overhead_s seconds (launch, dispatch, set-up) on top of
        its roofline time t(n) = max(FLOPs / peak_flops, bytes / bandwidth). Its achieved FLOP/s
        are FLOPs / (overhead_s + t(n)), and the roofline allows FLOPs / t(n) at its intensity: so
        it reaches t(n) / (overhead_s + t(n)) of its roof. Return the smallest n ≥ 1 at which that
        fraction is at least `fraction` (0 < fraction < 1; a tie counts). A gemv is judged against
        the memory roof it sits under, not against the peak it never nears.
        This exercise is about using the model: count as in exercises 1 and 2 (§1's
        gc.roofline.gemv_op / gemm_op hold the same counts, but they build the n×n operands:
        far too slow to call inside a loop), then loop over n (on every test case the
        answer is at most {MAX_SIZE:,}), or solve for t and then for n.
    """,
    # an H100 gemv: 45 µs of traffic
    # the gemv's n_squared: 8,682 (its bytes counted as n² elements)
    visible=[Case((_Op("gemv", n_squared=8682), "float16", 989.4e12, 3.35e12, 5e-6, 0.9)),
             Case(("gemm", "float16", 989.4e12, 3.35e12, 5e-6, 0.9)),  # compute-bound by then
             Case(("gemm", "float32", 2.0**40, 2.0**30, 3 * 2.0**-16, 0.5))],  # a tie at n = 64
    compare=_compare_size,
)

# -- measure — a timing function you can trust -----------------------------------------------------
# The timer is handed its clock (``clock``: a function returning seconds), as lab 4's time_call is,
# and must read it for every measurement — on a GPU the clock that sees the device's work is the
# device's own (CUDA events), not the host's. The stand-ins' work shows on that clock only: a timer
# that reads time.perf_counter (the course's gc.measure among them, called, loaded a second time or
# pasted) measures microseconds of Python and fails. On the student's machine the same function gets
# clock=time.perf_counter (the "Your machine" cell).

def with_clock(case: Case) -> Case:
    """The case as the student's function is called on it: its workload reset (no call made, a fresh
    virtual clock) and that clock passed as ``clock``."""
    w = case.args[0]
    w.reset()
    return Case(case.args, {**case.kwargs, "clock": w.clock})


class _TimingProblem(Problem):
    """time_call's Problem: every call of the student's function gets its workload afresh (its first
    call compiling again, no calls counted) and that workload's clock as ``clock=``, however often
    the check cell is re-run — the visible cases are made once."""

    def call(self, fn: Callable[..., Any], case: Case, limit: float | None = None) -> Any:
        return super().call(fn, with_clock(case), limit)


# measured / true: on the virtual clock a right method measures the true time plus dispatch (10 µs a
# call), with the median or the minimum alike (nothing runs faster than its work); the band
# tolerates a spike the median meets among few runs (SLACK_S: the dispatch). A warm-up not waited
# for leaves its work in the first timed run: the method check rejects it (Workload.leftover), as
# labs 4 and 6 do. The wrong methods (no wait, no warm-up, the mean over 20× spikes, dividing by
# repeat + 1, another clock than the one given) land far outside the band.
#
# BAND: no right method measures less than the true time; dividing by repeat + 1 (≤ 5/6) lands below
BAND = (0.9, 2.0)
SLACK_S = 1e-3


def _compare_timing(what: str, got: Any, expected: float, case: Case) -> None:
    w = case.args[0]
    # no slack on a coarse clock's cases (no spikes there): a batch that crossed one tick by luck,
    # read as one tick over too few calls, lands far above the true time
    lo, hi = BAND[0] * expected, BAND[1] * expected + (0.0 if w.tick_s else SLACK_S)
    if isinstance(got, (int, float)) and not isinstance(got, bool) and lo <= got <= hi:
        return
    hint = (
        "time `repeat` calls after one waited-for warm-up call, wait for each result, return the"
        " median or the minimum"
    )
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        if w.calls and not w.clock.reads:  # judged where the call ran: its clock saw no read
            hint = CLOCK_HINT
        elif w.tick_s and w.work_s < w.tick_s and w.first_s and got < lo and w.first_call_timed:
            hint = (
                f"the first call compiles (about {show(w.first_s)} s): timed inside your first"
                " batch, it made that batch look long enough, so your batches stayed at one call"
                " each, which this clock reads as 0 or one tick. Call fn once and wait for it"
                " before you size or time any batch"
            )
        elif w.tick_s and w.work_s < w.tick_s:
            hint = (
                f"this clock ticks every {show(w.tick_s)} s and one call takes about"
                f" {show(w.work_s)} s: timed alone, a call reads as 0 or as one whole tick. Time"
                " batches of calls that span many ticks (grow the batch until it takes at least"
                " 0.2 s on clock) and divide by the batch size"
            )
        elif got < lo and w.calls and not (w.unwaited() or w.leftover):
            # judged where the call ran: every result was waited for, so the count is off
            hint = (
                "every result was waited for, yet your time is below the call's own: divide each"
                " measurement by the number of calls it timed (not by one more)"
            )
        elif got < lo and w.asynchronous:
            hint = (
                "the call returned before its work was done: wait for the result (gc.block(out))"
                " before you stop the clock"
            )
        elif got > hi and w.first_s and len(case.args) and case.kwargs.get("repeat", 5) <= 2:
            hint = (
                "the first call includes compilation: call fn once before timing, and don't time"
                " that call"
            )
        elif got > hi and w.spikes:
            hint = (
                "a few runs were slowed by other programs: the median or the minimum ignores them,"
                " the mean does not"
            )
        elif got > hi and w.first_s:
            hint = (
                "the first call includes compilation: call fn once before timing, and don't time"
                " that call"
            )
    raise CheckFailure(
        f"{what}: expected about {show(expected)} s (between {show(lo)} and {show(hi)}), "
        f"got {show(got)}. Hint: {hint}"
    )


CLOCK_HINT = (
    "you never read the clock you were given, and the work shows on that clock only: take every"
    " reading with clock() (start = clock() ... clock() - start, or timeit with timer=clock) — not"
    " time.perf_counter() or a course timer (gc.measure reads time.perf_counter), as on a GPU you"
    " time the device's work with the device's clock (CUDA events), not the host's"
)


def _timing_method(fn: Callable[..., Any], hidden: bool) -> str:
    """By method: on a fresh asynchronous workload, one warm-up call plus at least `repeat` timed
    calls, and every result waited for — itself, or through a later result of the same in-order
    queue (a batch of calls timed together and waited for once is a correct method too)."""
    repeat = 4 if hidden else 3
    w = Workload(0.004, first_s=0.02, asynchronous=True)
    with TIME_CALL.locked(fn):
        fn(w, clock=w.clock, repeat=repeat)
    if w.calls < repeat + 1:
        raise CheckFailure(
            f"time_call(..., repeat={repeat}) called fn {w.calls} times: expected one warm-up call "
            f"plus {repeat} timed calls ({repeat + 1})"
        )
    # a start and a stop at least (this runs where the function runs: in the re-check too)
    if w.clock.reads < 2:
        raise CheckFailure(
            f"time_call(..., repeat={repeat}) read the clock it was given {w.clock.reads} times: "
            f"{CLOCK_HINT}"
        )
    if w.leftover:  # labs 4 and 6 reject it too
        raise CheckFailure(
            f"time_call(..., repeat={repeat}): when you first read the clock after the warm-up"
            " call, its work was still running (the call returns before its work is done): that"
            " leftover work lands in your first timed run. Wait for the warm-up's result"
            " (gc.block(out)) before you start timing"
        )
    # results neither waited for nor queued before one that was (the queue runs in order)
    if w.first_call_timed:
        raise CheckFailure(
            f"time_call(..., repeat={repeat}) read the clock before the first call (the one that"
            " compiles) and again after it: the compile lands in a timed run or sizes your batch."
            " Call fn once and wait for its result (the warm-up) before you read the clock"
        )
    if w.unwaited():
        raise CheckFailure(
            f"time_call(..., repeat={repeat}) never waited for {w.unwaited()} of the {w.calls}"
            " results (nor for any result queued after them): wait for the result (gc.block(out))"
            " before stopping the clock"
        )
    # repeat's default is 5: called without it, fn must make the calls time_call(..., repeat=5)
    # makes
    if hidden:
        default, five = Workload(0.002, asynchronous=True), Workload(0.002, asynchronous=True)
        with TIME_CALL.locked(fn):
            fn(default, clock=default.clock)
        with TIME_CALL.locked(fn):
            fn(five, clock=five.clock, repeat=5)
        if default.calls != five.calls:
            raise CheckFailure(
                f"time_call(fn) called fn {default.calls} times, time_call(fn, repeat=5)"
                f" {five.calls} times: repeat's default is 5"
            )
    return (
        f"\n  method: {w.calls} calls (a warm-up, then {repeat} timed measurements), the warm-up"
        " and every result waited for"
    )


TIME_CALL = _TimingProblem(
    name="time_call",
    spec="""
        time_call(fn, *args, clock, repeat=5) -> seconds for one call of fn(*args)
        clock() returns the time in seconds: read it — and no other clock — for every
        measurement (the checks pass a clock that only the calls' work moves, as a
        GPU's work shows on the device's timer, not the host's; your machine passes
        clock=time.perf_counter). The course's gc.measure reads time.perf_counter: it
        measures the wrong clock here. Write the method yourself:
        1. call fn(*args) once, wait for its result (step 2) and discard it (warm-up: compilation,
           caches, first-touch allocation) — a warm-up not waited for is still running when your
           first timed run starts, and its leftover work lands in that run;
        2. time `repeat` calls (start = clock(); ...; clock() - start, or timeit with
           timer=clock), and stop each clock only after the result exists: JAX, CuPy (and the test
           workloads) return *before* the work is done — gc.block(out) waits for it (JAX arrays,
           CuPy's queued kernels, anything with a block_until_ready() method). The work runs in
           call order, one call after another (as on a GPU stream): each of the `repeat` times may
           also be a batch of calls, timed together, waited for through its LAST result and
           divided by the batch size;
        3. return the median or the minimum of the `repeat` times. Other programs only ever slow a
           run down, never speed one up, so the minimum is the call's time (timeit's documentation
           recommends it); the median is robust too. The mean is not: one slowed run pulls it up.
           Each has its failure mode on real machines: the minimum trusts the luckiest run (wrong
           when runs differ for real, e.g. when only some find their data in a cache); the median is
           wrong when more than half the runs were slowed.
        4. a clock has a resolution: time.time() on Windows before Python 3.13 moved in steps of
           about 16 ms, a GPU's event timer in half-microseconds, and some checks hand you a clock
           that ticks every 2 ms. A call shorter than one tick reads as 0 or as one whole tick,
           however carefully you wait for it. So let each of the `repeat` measurements be a BATCH of
           calls long enough to span many ticks, and divide by the batch size: grow the batch (1, 2,
           5, 10, 20, 50, ... calls, as timeit's autorange does) until one batch takes at least 0.2
           s on `clock`, then time `repeat` batches of that size. You do not need to know the tick.
        Graded on calls whose true duration is known: asynchronous ones, ones whose first call
        compiles, ones slowed by load spikes, ones far shorter than the clock's tick — your answer
        must land within a band around the true time, and your function must read the clock it is
        given, warm up once, and wait for the warm-up and for every timed result. Failure modes: no
        wait (far too short), no warm-up (the compile is timed), an un-waited warm-up (its work is
        still running when you first read the clock), the mean (pulled up by a slowed run), another
        clock (no reading of clock: the work never shows), one call per measurement on a coarse
        clock (0, or a whole tick).
    """,
    visible=[Case((Workload(0.01, asynchronous=True),), {"repeat": 3}),
             Case((Workload(0.01, first_s=0.25),), {"repeat": 2}),
             Case((Workload(0.01, spikes=(2, 4)),), {"repeat": 5}),
             Case((Workload(3e-5, asynchronous=True, tick_s=2e-3),), {"repeat": 3})],
    compare=_compare_timing,
    after=_timing_method,
)

# -- explain — a point above its roof --------------------------------------------------------------

EXPLANATIONS = ("memory-bound", "compute-bound", "cache", "impossible")


EXPLAIN = Problem(
    name="explain_point",
    spec="""
        explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes)
            -> str
        A measured op did `flops` FLOPs on `nbytes` bytes of compulsory traffic (every input
        read once, every output written once: what DRAM moves when nothing is cached) in
        `seconds`, touching `working_set` bytes in all, on a machine whose roofs are peak_flops
        (FLOP/s) and bandwidth (DRAM bytes/s) and whose last-level cache holds cache_bytes.
        Explain where its point sits:
          'impossible'    — faster than the compute roof (nothing computes faster), or above the
                            DRAM roof by more than a cache can explain (below): the timing (did it
                            wait for the result?) or the count is wrong;
          'cache'         — above the DRAM roof (achieved FLOP/s > intensity × bandwidth) by no
                            more than a cache can explain: its bytes came (in part) from the
                            cache, which is faster than DRAM;
          'memory-bound'  — on or under the roofline, intensity below the ridge point
                            (peak_flops / bandwidth);
          'compute-bound' — on or under the roofline, intensity at or above the ridge point.
        What a cache can explain: a working set that fits (working_set <= cache_bytes) may come
        from the cache entirely — any point above the DRAM roof (this model gives the cache no
        bandwidth of its own: a point far above any real cache's bandwidth, say 300× HBM's, still
        reads 'cache' here; only the compute roof bounds it). A larger one cannot all be there: at
        best cache_bytes of it are still cached when the op starts, so DRAM delivers at least
        (1 − cache_bytes / working_set) of its bytes and the point can beat the DRAM roof by at
        most a factor 1 / (1 − cache_bytes / working_set) (a tie counts as explained). Why not
        "does not fit ⇒ impossible": a strict LRU cache swept in order keeps none of a working set
        larger than itself, but real last-level caches are not strict LRU (adaptive insertion
        keeps part of it), so a working set a little larger than the cache can still beat the
        roof — by much near the cache size, by little at several times it. (Ampere's and Hopper's
        L2 compute data compression can cut DRAM bytes further, but only for memory allocated as
        compressible — an opt-in through cuMemCreate's allocation flags, not ordinary cudaMalloc'd
        arrays; this rule ignores it.)
    """,
    # a gemv at 72 % of HBM: memory-bound
    visible=[
        Case((2e9, 12e9, 5e-3, 989.4e12, 3.35e12, 12e9, 50e6)),
        Case((2e12, 1e9, 4e-3, 989.4e12, 3.35e12, 1e9, 50e6)),  # a big GEMM at half the peak
        # in-cache gemv
        Case((2 * 1024**2, 4 * 1024**2, 2e-5, 0.6e12, 60e9, 4 * 1024**2, 32 * 1024**2)),
        # 335 GB/s: no wait
        Case((2 * 4096**2, 4 * 4096**2, 2e-4, 0.6e12, 60e9, 4 * 4096**2, 32 * 1024**2)),
        # 36 MiB against a 32 MiB cache, at 2× the DRAM roof: up to 9× is explained (1 / (1 −
        # 32/36))
        Case((2 * 3072**2, 4 * 3072**2, 3.2e-4, 0.6e12, 60e9, 4 * 3072**2, 32 * 1024**2)),
    ],
    compare=lambda what, got, expected, case: _compare_explain(what, got, expected, case),
)


def _compare_explain(what: str, got: Any, expected: str, case: Case) -> None:
    from fractions import Fraction

    hint = (
        "compare achieved FLOP/s (flops / seconds) with the compute roof and with intensity ×"
        " bandwidth; above the DRAM roof, a cache explains at most a factor 1 / (1 − cache_bytes /"
        " working_set) — any factor when the working set fits"
    )
    flops, nbytes, _, peak_flops, bandwidth = case.args[:5]
    at_ridge = Fraction(flops) / Fraction(nbytes) == Fraction(peak_flops) / Fraction(bandwidth)
    if (got, expected) == ("memory-bound", "compute-bound") and at_ridge:
        hint = (
            "this op's intensity (flops / nbytes) is exactly the ridge point (peak_flops /"
            " bandwidth), and the tie rule is: at or above the ridge, compute-bound; below it,"
            " memory-bound"
        )
    seconds = case.args[2]
    faster_than_compute = Fraction(flops) / Fraction(seconds) > Fraction(peak_flops)
    if (got, expected) == ("cache", "impossible") and faster_than_compute:
        hint = (
            "this point is faster than the compute roof (flops / seconds > peak_flops): no cache"
            " lifts a point above it, so test the compute roof before the DRAM roof"
        )
    expect_choice(what, got, expected, EXPLANATIONS, hint)


problems = {
    p.name: p
    for p in (
        AXPY,
        GEMV,
        GEMM,
        BUDGET,
        MIN_BATCH,
        CHAIN,
        BLOCKED,
        SIZE_FOR_FRACTION,
        TIME_CALL,
        EXPLAIN,
    )
}
