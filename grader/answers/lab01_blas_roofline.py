"""Lab 1's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side,
grader/labs/lab01_blas_roofline.py, is the rest of the lab; this module imports it, never the
reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from ..labs.lab01_blas_roofline import (
    COMPLEX_DTYPES,
    DTYPES,
    EXPLANATIONS,
    MAX_BATCH,
    MAX_SIZE,
    ROOFS,
    Workload,
    _Op,
)
from ..problem import Case


def _size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def _axpy_counters(n: int, dtype: str) -> tuple[int, int]:
    # a complex multiply is 6 real FLOPs (4 multiplies, 2 adds), a complex add 2
    flops = 8 * n if np.dtype(dtype).kind == "c" else 2 * n
    return flops, 3 * n * _size(dtype)  # y = a*x + y: read x, read y, write y


def _gemv_counters(m: int, n: int, dtype: str) -> tuple[int, int]:
    return 2 * m * n, (m * n + n + m) * _size(dtype)  # y = A x: read A (m×n) and x (n), write y (m)


def _gemm_counters(m: int, n: int, k: int, dtype: str, accumulate: bool) -> tuple[int, int]:
    c_passes = 2 if accumulate else 1  # C written; with accumulate (β = 1) read first
    return 2 * m * n * k, (m * k + k * n + c_passes * m * n) * _size(dtype)


def _axpy_calls_reference(flops: int, nbytes: int) -> list[tuple[int, str]]:
    """Every dtype tried: n from the FLOPs, then both counters compared (an n that is no whole
    number of elements gives other FLOPs back)."""
    calls = []
    for dtype in DTYPES + COMPLEX_DTYPES:
        n = flops // (8 if np.dtype(dtype).kind == "c" else 2)
        if n >= 1 and _axpy_counters(n, dtype) == (flops, nbytes):
            calls.append((n, dtype))
    return sorted(calls)


def _axpy_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype's counters (a float16 and a float32 call also fit a complex one: k and 4k
    elements), one element, then counters no axpy has: odd FLOPs (with the bytes of half an
    element more in float16), the bytes of x and y without y's write, a gemv's, zero."""
    every = DTYPES + COMPLEX_DTYPES
    cases = [Case(_axpy_counters(int(rng.integers(1, 10**9)), dtype)) for dtype in every]
    k = int(rng.integers(1, 10**8))
    cases += [Case(_axpy_counters(4 * k, "float16")), Case(_axpy_counters(k, "complex128")),
              Case(_axpy_counters(1, str(rng.choice(every))))]
    n = int(rng.integers(1, 10**6))
    k = int(rng.integers(1, 10**6))
    # FLOPs that are no whole number of elements, with the bytes of the rounded-down n (float32,
    # complex64): an answer that checks only the bytes lists a call
    cases += [Case((2 * n + 1, 3 * n * 4)), Case((8 * k + 4, 24 * k))]
    cases += [Case((2 * n + 1, 3 * (2 * n + 1))), Case((2 * n, 2 * n * 4)), Case((0, 0)),
              Case(_gemv_counters(int(rng.integers(2, 500)), int(rng.integers(2, 500)), "float32"))]
    return cases


def _gemv_shapes_reference(flops: int, nbytes: int, dtype: str) -> list[tuple[int, int]]:
    """m·n from the FLOPs, m + n from the bytes: the roots of t² − (m + n)·t + m·n, in integers,
    then both counters compared."""
    product = flops // 2
    total = nbytes // _size(dtype) - product
    disc = total * total - 4 * product
    if disc < 0:
        return []
    small = (total - math.isqrt(disc)) // 2
    large = total - small
    if small < 1 or _gemv_counters(small, large, dtype) != (flops, nbytes):
        return []
    return sorted({(small, large), (large, small)})


def _gemv_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype (m ≠ n almost surely), a square A, a vector A (1 × n), then counters no gemv
    has: y's write left out, the bytes in another dtype, odd FLOPs, no FLOPs."""
    def draw() -> int:
        return int(rng.integers(1, 100_000))

    cases = [Case(_gemv_counters(draw(), draw(), dtype) + (dtype,)) for dtype in DTYPES]
    dtype = str(rng.choice(DTYPES))
    cases += [Case(_gemv_counters(m := draw(), m, dtype) + (dtype,)),
              Case(_gemv_counters(1, draw(), dtype) + (dtype,))]
    m, n = draw(), draw()
    cases += [Case((2 * m * n, (m * n + n) * 4, "float32")),
              Case((2 * m * n, (m * n + n + m) * 2, "float32")),
              Case((2 * m * n + 1, (m * n + n + m) * 8, "float64")),
              Case((0, draw() * 4, "float32"))]
    return cases


def _gemm_k_reference(m: int, n: int, flops: int, nbytes: int,
                      dtype: str) -> tuple[int, bool] | None:
    k = flops // (2 * m * n)  # an inexact division gives other FLOPs back below
    for accumulate in (False, True):
        if k >= 1 and _gemm_counters(m, n, k, dtype, accumulate) == (flops, nbytes):
            return k, accumulate
    return None


def _gemm_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype, accumulating and not (m, n, k drawn apart), a square one, k = 1; then counters
    no gemm of that m, n has: C read twice, FLOPs of one multiply-add per step, FLOPs that are no
    multiple of 2·m·n."""
    def draw() -> int:
        return int(rng.integers(1, 20_000))

    cases = []
    for i, dtype in enumerate(DTYPES + DTYPES):
        m, n = draw(), draw()
        cases.append(Case((m, n) + _gemm_counters(m, n, draw(), dtype, i >= len(DTYPES))
                          + (dtype,)))
    dtype = str(rng.choice(DTYPES))
    cases += [Case((m := draw(), m) + _gemm_counters(m, m, m, dtype, bool(rng.integers(2)))
                   + (dtype,)),
              Case((m := draw(), n := draw()) + _gemm_counters(m, n, 1, dtype, True) + (dtype,))]
    m, n, k, size = draw(), draw(), draw(), _size(dtype)
    even = n + (m + n) % 2  # m + even is even: k + 1/2 steps give whole bytes
    cases += [
        Case((m, n, 2 * m * n * k, (m * k + k * n + 3 * m * n) * size, dtype)),
        # k + 1/2 steps: FLOPs and bytes both whole, k not
        Case((m, even, m * even * (2 * k + 1), ((2 * k + 1) * (m + even) // 2 + m * even) * size,
              dtype)),
        Case((m, n, 2 * m * n * k + 2, (m * k + k * n + m * n) * size, dtype)),
        Case((m, n, 0, m * n * size, dtype)),  # no FLOPs, C's bytes alone: k = 0 is no gemm
    ]
    return cases


def max_batch_within(
    d_in: int,
    d_out: int,
    act_dtype: str,
    weight_dtype: str,
    peak_flops: float,
    bandwidth: float,
    budget_s: float,
) -> tuple[int, str] | None:
    """The largest B whose layer's roofline time max(2·B·d_in·d_out / peak, s·(B·d_in + d_in·d_out +
    B·d_out) / bw) is at most the budget (s: act_dtype's size for X and Y, weight_dtype's for W),
    and the roof that limits it there; None when B = 1 is over. Exact rational arithmetic: both
    times are linear in B, so each gives a bound, and the answer is the floor of the smaller."""
    s, w = _size(act_dtype), _size(weight_dtype)
    peak, bw, budget = Fraction(peak_flops), Fraction(bandwidth), Fraction(budget_s)
    by_compute = budget * peak / (2 * d_in * d_out)
    by_memory = (budget * bw - w * d_in * d_out) / (s * (d_in + d_out))
    b = math.floor(min(by_compute, by_memory))
    if b < 1:
        return None
    compute = Fraction(2 * b * d_in * d_out) / peak
    memory = Fraction(s * (b * d_in + b * d_out) + w * d_in * d_out) / bw
    return b, ("compute" if compute >= memory else "memory")


def _layer_time(d_in: int, d_out: int, s: int, w: int, peak: float, bw: float, b: float) -> float:
    return max(2 * b * d_in * d_out / peak, (s * (b * d_in + b * d_out) + w * d_in * d_out) / bw)


def _budget_cases(rng: np.random.Generator) -> list[Case]:
    """Random layers on random machines, each budget strictly between the times of two consecutive
    batches (no tie by rounding): answers limited by the memory roof, by the compute roof, and None;
    then ties exact in binary floating point."""
    cases: list[Case] = []
    want = ["memory", "memory", "compute", "compute", "compute", None]
    while want:
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        d_in, d_out = (int(2 ** rng.uniform(7, 14)) for _ in range(2))
        act = str(rng.choice(["float16", "float32"]))
        # weight-only quantized, or not
        weight = str(rng.choice(["int8", act])) if len(want) % 2 else "int8"
        s, w = _size(act), _size(weight)
        if want[0] is None:
            budget = _layer_time(d_in, d_out, s, w, peak, bw, 1) * float(rng.uniform(0.3, 0.95))
        else:
            b = int(10 ** rng.uniform(0, 5))
            budget = _layer_time(d_in, d_out, s, w, peak, bw, b + float(rng.uniform(0.1, 0.9)))
        case = Case((d_in, d_out, act, weight, peak, bw, budget))
        got = max_batch_within(*case.args)
        if (got is None) == (want[0] is None) and (
            got is None or (got[1] == want[0] and got[0] <= MAX_BATCH)
        ):
            cases.append(case)
            want.pop(0)
    # the memory time exactly the budget at B = 512: (512·2^12 + 2^21) / 2^30 = 2^-8 — "at most"
    # includes it
    cases.append(Case((1024, 1024, "float16", "float16", 2.0**40, 2.0**30, 2.0**-8)))
    # int8 weights, float16 activations: (B·2^12 + 2^20) / 2^30 = 2^-8 at B = 768 (float16 weights:
    # 512)
    cases.append(Case((1024, 1024, "float16", "int8", 2.0**40, 2.0**30, 2.0**-8)))
    # the compute time exactly the budget at B = 64: 2·64·2^20 / 2^32 = 2^-5 (the memory time far
    # below)
    cases.append(Case((1024, 1024, "float16", "float16", 2.0**32, 2.0**30, 2.0**-5)))
    # both times exactly the budget at B = 3: 2·3·4 / (3·2^32) = (3·4 + 4) / 2^33 = 2^-29 —
    # 'compute' on a tie
    cases.append(Case((2, 2, "int8", "int8", 3 * 2.0**32, 2.0**33, 2.0**-29)))
    # one input feature, 1024 outputs: the activations' traffic dominates, memory-bound at B = 100
    # (2050·100 + 1024 bytes), its FLOPs (2048·100) just below at a ridge of 1 FLOP/byte; the budget
    # 1000 bytes' time past that
    cases.append(Case((1, 1024, "float16", "int8", 2.0**30, 2.0**30, 207_024 * 2.0**-30)))
    # a budget B = 1 meets exactly (memory: (4 + 4) / 2^33 = 2^-30; compute 8 / 2^36 below)
    cases.append(Case((2, 2, "int8", "int8", 2.0**36, 2.0**33, 2.0**-30)))
    rng.shuffle(cases)
    return cases


def min_batch_compute_bound(
    d_in: int, d_out: int, dtype: str, peak_flops: float, bandwidth: float
) -> int | None:
    """Smallest batch B making (B×d_in)·(d_in×d_out) compute-bound; None when no batch can.
    Exact rational arithmetic: a tie (intensity == ridge point) is decided by no rounding.
    intensity(B) = 2·B·d_in·d_out / (s·(B·d_in + d_in·d_out + B·d_out)) >= ridge
               <=>  B · (2·d_in·d_out − ridge·s·(d_in + d_out)) >= ridge·s·d_in·d_out"""
    s, ridge = _size(dtype), Fraction(peak_flops) / Fraction(bandwidth)
    coef = 2 * d_in * d_out - ridge * s * (d_in + d_out)
    # even B → ∞ (intensity → 2·d_in·d_out / (s·(d_in + d_out))) stays below the ridge
    if coef <= 0:
        return None
    return math.ceil(ridge * s * d_in * d_out / coef)  # >= 1: the quotient is positive


def _within_max_batch(case: Case) -> bool:
    """The spec's promise, decided without the reference (exact arithmetic): no batch reaches the
    ridge (the limit 2·d_in·d_out / (s·(d_in + d_out)) as B → ∞ is at or below it), or B = MAX_BATCH
    already does (intensity grows with B, so the answer is at most MAX_BATCH)."""
    d_in, d_out, dtype, peak, bw = case.args
    s, ridge = _size(dtype), Fraction(peak) / Fraction(bw)
    never = Fraction(2 * d_in * d_out, s * (d_in + d_out)) <= ridge
    return never or Fraction(2 * MAX_BATCH * d_in * d_out,
                             s * (MAX_BATCH * d_in + d_in * d_out + MAX_BATCH * d_out)) >= ridge


def _batch_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    # random layers on random machines, answers kept within the spec's MAX_BATCH
    while len(cases) < 7:
        peak, bw = ROOFS[int(rng.integers(len(ROOFS) - 1))]
        d_in, d_out = (int(2 ** rng.uniform(8, 14)) for _ in range(2))
        case = Case((d_in, d_out, str(rng.choice(["float16", "float32"])), peak, bw))
        if _within_max_batch(case):
            cases.append(case)
    cases.append(Case((256, 256, "float32", 989.4e12, 3.35e12)))  # never compute-bound
    # exactly at the ridge, in binary floating point: B = 512 gives 2·512·1024² / (2·(512·1024 +
    # 1024² + 512·1024)) = 256 FLOP/byte = 256e12 / 1e12 — "reaches" includes equality (B = 513 if
    # it did not)
    cases.append(Case((1024, 1024, "float16", 256e12, 1e12)))
    # the limit itself: as B grows, intensity -> 2·1024² / (2·2048) = 512 FLOP/byte but never
    # reaches it: None
    cases.append(Case((1024, 1024, "float16", 512e12, 1e12)))
    # a ridge below 1 FLOP/byte: the smallest batch, B = 1, is already compute-bound (intensity ≈ 1
    # >= 0.5)
    cases.append(Case((4096, 4096, "float16", 2.0**39, 2.0**40)))
    # a layer that only just can: the limit 2·2·2 / (1·4) = 2 FLOP/byte is barely above the ridge
    # 1.875, and B = 15 lands exactly on it (2·15·4 / (15·2 + 4 + 15·2) = 120/64 = 1.875, exact in
    # binary floating point)
    cases.append(Case((2, 2, "int8", 1.875e12, 1e12)))
    # a tie that is NOT exact in binary: B = 966 gives 2·966·3072·1536 / (2·(966·3072 + 3072·1536 +
    # 966·1536)) = 494592/995 FLOP/byte = peak / bandwidth exactly. The intensity and the ridge each
    # round to the same double, so comparing them finds 966; the closed form evaluated in floating
    # point lands just above 966 and its ceil on 967
    cases.append(Case((3072, 1536, "float16", 494.592e12, 0.995e12)))
    return cases


def _chain_bytes(n: int, size: int, arity: int, length: int, fused: bool) -> int:
    if not fused:  # every op reads all its operands from memory and writes its result back
        return length * (arity + 1) * n * size
    # each later op takes the previous result + new inputs; the result written once
    return 0 if length == 0 else (arity + (length - 1) * (arity - 1) + 1) * n * size


def _longest_chain_reference(n: int, dtype: str, arity: int,
                             budget_bytes: int) -> tuple[int, int | None]:
    """Integer division for each: the unfused chain grows (arity + 1)·n elements an op; the fused
    one starts at (arity + 1)·n and grows (arity − 1)·n an op (not at all for unary ops)."""
    op_bytes = (arity + 1) * n * _size(dtype)  # one op alone, fused or not
    unfused = budget_bytes // op_bytes
    if budget_bytes < op_bytes:
        return unfused, 0
    if arity == 1:
        return unfused, None
    return unfused, 1 + (budget_bytes - op_bytes) // ((arity - 1) * n * _size(dtype))


def _chain_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype and arity; budgets exactly at a length's bytes (ties), one byte short of it,
    not a whole number of elements, too small for one op; unary chains, fused without limit and
    too small even for one op."""
    cases = []
    for i in range(8):
        dtype, arity = DTYPES[i % len(DTYPES)], 1 + i % 4
        n, size = int(rng.integers(1, 10**6)), _size(DTYPES[i % len(DTYPES)])
        length = int(rng.integers(1, 2_000))
        tie = _chain_bytes(n, size, arity, length, bool(i % 2))
        cases.append(Case((n, dtype, arity, tie - (i % 3 == 2))))  # a tie, or one byte short
    n = int(rng.integers(1, 10**6))
    cases += [
        Case((n, "float32", int(rng.integers(2, 5)), 3 * n * 4 - 1)),  # no op fits
        Case((n, "float64", 1, 2 * n * 8 + int(rng.integers(0, 10**6)))),  # unary, unbounded
        Case((n, "float16", 1, 2 * n * 2 - 1)),  # unary, not even one op
        Case((n, "float32", 3, 4 * n * 4 * 7 + 5)),  # not a whole number of elements
        Case((n, "float16", int(rng.integers(2, 5)), 0)),  # nothing fits
    ]
    arity = int(rng.integers(1, 5))
    cases.append(Case((n, "float64", arity, (arity + 1) * n * 8)))  # one op, exactly
    return cases


def _matmul_reference(A: Any, B: Any, tile: int) -> np.ndarray:
    from ..checks import to_host

    return to_host(A).astype(np.float64) @ to_host(B).astype(np.float64)


def _matmul_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(5):
        tile = int(rng.choice([3, 4, 5, 8, 16]))
        # never multiples
        m, k, n = (int(tile * rng.integers(1, 4) + rng.integers(1, tile)) for _ in range(3))
        dtype = str(rng.choice(("float32", "float64")))
        cases.append(Case((_rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype), tile)))
    side = int(rng.integers(5, 12))  # square, not a multiple of the tile
    cases.append(
        Case((_rand(rng, (side, side), "float64"), _rand(rng, (side, side), "float64"), 4))
    )
    return cases


def _rand(rng: np.random.Generator, shape: tuple[int, int], dtype: str) -> Any:
    a = rng.standard_normal(shape).astype(dtype)
    try:  # on the GPU backend the inputs live in device memory
        from gpucourse import get_backend

        return get_backend().to_device(a)
    except Exception:
        return a


_GEMV_GEMM = {  # op -> (FLOPs, elements of compulsory traffic) of its n-sized square instance
    "gemv": lambda n: (2 * n * n, n * n + 2 * n),
    "gemm": lambda n: (2 * n**3, 3 * n * n),
}


def _roof_time(op: str, n: int, dtype: str, peak: float, bw: float) -> float:
    flops, elements = _GEMV_GEMM[op](n)
    return max(flops / peak, elements * _size(dtype) / bw)


def min_size_for_fraction(
    op: str,
    dtype: str,
    peak_flops: float,
    bandwidth: float,
    overhead_s: float,
    fraction: float,
    _counts: dict[str, Callable[[int], tuple[int, int]]] = _GEMV_GEMM,
) -> int:
    """The smallest n with t(n) / (overhead + t(n)) >= fraction, t(n) the roofline time max(FLOPs /
    peak, bytes / bandwidth): t(n)·(1 − fraction) >= fraction·overhead, i.e. FLOPs >=
    fraction·overhead·peak / (1 − fraction) or bytes >= fraction·overhead·bandwidth / (1 −
    fraction). Exact rational arithmetic; both grow with n, so a scan from n = 1 finds it (integers
    against two fixed fractions: fast)."""
    # t0: the per-call overhead in seconds (not a clock reading)
    f, t0 = Fraction(fraction), Fraction(overhead_s)
    need = f * t0 / (1 - f)  # seconds of roofline time that amortise the overhead
    by_flops, by_bytes = need * Fraction(peak_flops), need * Fraction(bandwidth)
    s = _size(dtype)
    n = 1
    while _counts[op](n)[0] < by_flops and _counts[op](n)[1] * s < by_bytes:
        n += 1
    return n


# the gemv counted as n² elements (x and y dropped): the mistake _compare_size names
_GEMV_N_SQUARED = {"gemv": lambda n: (2 * n * n, n * n)}


def _with_n2(case: Case) -> Case:
    """A gemv ``case`` with its op carrying what counting n² elements gives (for the hint)."""
    op, *rest = case.args
    if op != "gemv":
        return case
    n_squared = min_size_for_fraction("gemv", *rest, _counts=_GEMV_N_SQUARED)
    return Case((_Op("gemv", n_squared=n_squared), *rest))


def _size_cases(rng: np.random.Generator) -> list[Case]:
    """gemv and gemm on random machines, overheads and fractions, answers kept within MAX_SIZE and
    off ties (the fraction drawn between those of two consecutive sizes); then exact ties in binary
    floating point."""
    cases: list[Case] = []
    ops = ["gemv", "gemv", "gemv", "gemm", "gemm", "gemm"]
    while ops:
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        dtype = str(rng.choice(DTYPES))
        # t0: a per-call overhead in seconds (not a clock reading)
        t0 = float(10 ** rng.uniform(-6, -4))
        n = int(10 ** rng.uniform(1, 4.5))
        lo, hi = (_roof_time(ops[0], k, dtype, peak, bw) for k in (n - 1, n))
        frac_lo, frac_hi = lo / (t0 + lo), hi / (t0 + hi)
        if not 0.3 < frac_hi < 0.99 or frac_hi - frac_lo < 1e-9:
            continue
        case = Case(
            (
                ops[0],
                dtype,
                peak,
                bw,
                t0,
                frac_lo + (frac_hi - frac_lo) * float(rng.uniform(0.2, 0.8)),
            )
        )
        if min_size_for_fraction(*case.args) <= MAX_SIZE:
            cases.append(case)
            ops.pop(0)
    # ties: the roofline time exactly t0·fraction / (1 − fraction) at the answer
    # 3·2^-16 at n = 64 (memory-bound)
    cases.append(Case(("gemm", "float32", 2.0**40, 2.0**30, 2.0**-16, 0.75)))
    cases.append(Case(("gemv", "float32", 2.0**40, 2.0**30, 4_008_000 * 2.0**-30, 0.5)))  # n = 1000
    # compute-bound: 2·64³ / 2^30 = 2^-11
    cases.append(Case(("gemm", "int8", 2.0**30, 2.0**40, 2.0**-11, 0.5)))
    # a negligible overhead: n = 1
    cases.append(Case(("gemv", "float16", 2.0**40, 2.0**30, 1e-12, 0.5)))
    rng.shuffle(cases)
    return [_with_n2(c) for c in cases]


def time_call_reference(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """The spec's answer, for a Workload: the time one call of its work takes, whatever ``repeat``
    is."""
    return fn.work_s


def _timing_cases(rng: np.random.Generator) -> list[Case]:
    def ms(lo: int, hi: int) -> float:
        return float(rng.integers(lo, hi + 1)) / 1e3

    spike = int(rng.integers(1, 4))
    cases = [
        Case((Workload(ms(8, 12), asynchronous=True),), {"repeat": int(rng.integers(3, 6))}),
        # one timed run: the warm-up must go
        Case((Workload(ms(8, 12), first_s=ms(200, 300)),), {"repeat": 1}),
        Case((Workload(ms(8, 12), first_s=ms(200, 300), asynchronous=True),), {"repeat": 2}),
        Case((Workload(ms(8, 12), spikes=(2, 4)),), {"repeat": 5}),
        # one spike among 4 (the median of the other three, or the minimum, is the true time)
        Case((Workload(ms(8, 12), asynchronous=True, spikes=(spike,)),), {"repeat": 4}),
        Case(
            (Workload(ms(10, 15), first_s=ms(200, 300), asynchronous=True, spikes=(3,)),),
            {"repeat": 3},
        ),
        # calls far shorter than the clock's 2 ms tick: one call per measurement reads 0 or a whole
        # tick
        Case(
            (Workload(float(rng.integers(20, 60)) / 1e6, asynchronous=True, tick_s=2e-3),),
            {"repeat": int(rng.integers(3, 6))},
        ),
        Case(
            (Workload(float(rng.integers(20, 60)) / 1e6, first_s=ms(200, 300), tick_s=2e-3),),
            {"repeat": 3},
        ),
    ]
    rng.shuffle(cases)
    return cases


def explain_point(flops: float, nbytes: float, seconds: float, peak_flops: float, bandwidth: float,
                  working_set: float, cache_bytes: float) -> str:
    """Exact rational arithmetic. Above the DRAM roof, a working set larger than the cache is
    explained up to a factor 1 / (1 − cache / working_set): whatever the replacement policy (LRU or
    not), at most cache_bytes of it can still be cached when the op starts, so DRAM delivers at
    least the rest — a margin near the cache size (non-LRU retention) where a hard cut at the cache
    size would call a right measurement impossible."""
    flops_, nbytes_, seconds_ = Fraction(flops), Fraction(nbytes), Fraction(seconds)
    intensity, achieved = flops_ / nbytes_, flops_ / seconds_
    if achieved > Fraction(peak_flops):
        return "impossible"  # nothing computes faster than the compute roof
    dram = intensity * Fraction(bandwidth)
    if achieved > dram:  # above the DRAM roof (only possible left of the ridge)
        # DRAM delivers at least (1 − cache / working set) of the bytes (nothing, when it fits: the
        # factor is <= 0)
        if achieved * (1 - Fraction(cache_bytes) / Fraction(working_set)) <= dram:
            return "cache"
        return "impossible"
    return (
        "memory-bound"
        if intensity < Fraction(peak_flops) / Fraction(bandwidth)
        else "compute-bound"
    )


def _explain_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for k, kind in enumerate(EXPLANATIONS * 2):
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        ridge = peak / bw
        cache = float(2 ** int(rng.integers(20, 27)))  # 1 MiB … 64 MiB
        nbytes = float(10 ** rng.uniform(6, 9))
        if kind == "compute-bound":
            intensity = ridge * float(rng.uniform(1.5, 50))
        else:
            intensity = ridge * float(rng.uniform(0.01, 0.1))
        flops = nbytes * intensity
        attainable = min(peak, intensity * bw)
        fits = bool(rng.integers(2))
        working_set = cache * (
            float(rng.uniform(0.1, 0.9)) if fits else float(rng.uniform(1.2, 20))
        )
        if kind in ("memory-bound", "compute-bound"):
            achieved = attainable * float(rng.uniform(0.05, 0.99))
        elif kind == "cache":
            if k < len(EXPLANATIONS):  # fits: any factor above the DRAM roof
                working_set = cache * float(rng.uniform(0.1, 0.95))
                factor = float(rng.uniform(1.2, 4.0))
            else:  # does not fit, but by little: under the bound 1 / (1 − cache / ws)
                working_set = cache * float(rng.uniform(1.1, 2.5))
                factor = 1 + (1 / (1 - cache / working_set) - 1) * float(rng.uniform(0.2, 0.9))
            achieved = intensity * bw * factor
        # above the bound without fitting (the first time), above the compute roof (the second)
        else:
            if k < len(EXPLANATIONS):
                working_set = cache * float(rng.uniform(1.1, 3.0))
                achieved = intensity * bw / (1 - cache / working_set) * float(rng.uniform(1.1, 2.0))
            else:
                achieved = peak * float(rng.uniform(1.1, 3.0))
        cases.append(Case((flops, nbytes, flops / achieved, peak, bw, working_set, cache)))
    # above the compute roof with a working set that fits, at a memory-bound and at a compute-bound
    # intensity: only the peak check says 'impossible' (testing the DRAM roof first says 'cache' for
    # the first; testing only the DRAM roof says 'compute-bound' for the second)
    for factor in (0.25, 8.0):
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        cache = float(2 ** int(rng.integers(20, 27)))
        nbytes = float(10 ** rng.uniform(6, 9))
        flops = nbytes * peak / bw * factor
        cases.append(Case((flops, nbytes, flops / (peak * float(rng.uniform(1.1, 3.0))), peak, bw,
                           cache * float(rng.uniform(0.1, 0.9)), cache)))
    # a working set 4× the cache at 2× the DRAM roof: above the bound 4/3, 'impossible'; one 1.25×
    # the cache at 3× the DRAM roof: under the bound 5, 'cache' (a fixed margin — "within 1.5× or 2×
    # of the cache" — gets one wrong)
    cases.append(Case((2.0**33, 2.0**30, 0.5, 2.0**36, 2.0**30, 2.0**27, 2.0**25)))
    cases.append(Case((2.0**33, 2.0**30, 1 / 3, 2.0**36, 2.0**30, 5 * 2.0**23, 2.0**25)))
    # boundaries, exact in binary floating point: working set == cache (fits), intensity == ridge
    # (compute-bound)
    # 2× the DRAM roof: cache
    cases.append(Case((2.0**33, 2.0**30, 0.5, 2.0**36, 2.0**30, 2.0**25, 2.0**25)))
    # at the ridge, under
    cases.append(Case((2.0**33, 2.0**30, 2.0**-2, 2.0**36, 2.0**33, 2.0**31, 2.0**25)))
    # exactly at the peak: on it
    cases.append(Case((2.0**36, 2.0**26, 1.0, 2.0**36, 2.0**30, 2.0**20, 2.0**25)))
    # exactly on the DRAM roof
    cases.append(Case((2.0**33, 2.0**30, 1.0, 2.0**36, 2.0**30, 2.0**31, 2.0**25)))
    # working set 2× the cache: the bound is exactly 2×; at exactly 2× the DRAM roof: explained (a
    # tie counts)
    cases.append(Case((2.0**33, 2.0**30, 0.5, 2.0**36, 2.0**30, 2.0**26, 2.0**25)))
    # the same a hair above 2×: impossible
    cases.append(Case((2.0**33, 2.0**30, 0.5 * (1 - 2.0**-20), 2.0**36, 2.0**30, 2.0**26, 2.0**25)))
    rng.shuffle(cases)
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "axpy_calls": (_axpy_calls_reference, _axpy_cases),
    "gemv_shapes": (_gemv_shapes_reference, _gemv_cases),
    "gemm_k": (_gemm_k_reference, _gemm_cases),
    "max_batch_within": (max_batch_within, _budget_cases),
    "min_batch_compute_bound": (min_batch_compute_bound, _batch_cases),
    "longest_chain": (_longest_chain_reference, _chain_cases),
    "blocked_matmul": (_matmul_reference, _matmul_cases),
    "min_size_for_fraction": (min_size_for_fraction, _size_cases),
    "time_call": (time_call_reference, _timing_cases),
    "explain_point": (explain_point, _explain_cases),
}
