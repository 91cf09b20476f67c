"""Lab 1's answer side: the reference of every exercise and its hidden-case generator (instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab01_blas_roofline.py, is the rest of the lab; this module imports
it, never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from ..labs.lab01_blas_roofline import DTYPES, EXPLANATIONS, MAX_BATCH, ROOFS, Workload
from ..problem import Case


def _size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def axpy_cost(n: int, dtype: str) -> tuple[int, int]:
    return 2 * n, 3 * n * _size(dtype)  # y = a*x + y: read x, read y, write y


def gemv_cost(m: int, n: int, dtype: str) -> tuple[int, int]:
    return 2 * m * n, (m * n + n + m) * _size(dtype)  # y = A x: read A (m×n) and x (n), write y (m)


def gemm_cost(m: int, n: int, k: int, dtype: str) -> tuple[int, int]:
    return 2 * m * n * k, (m * k + k * n + m * n) * _size(dtype)


def _axpy_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype, two more at random, and one element."""
    return ([Case((int(rng.integers(1, 10**9)), dtype)) for dtype in DTYPES]
            + [Case((int(rng.integers(1, 10**9)), str(rng.choice(DTYPES)))) for _ in range(2)]
            + [Case((1, str(rng.choice(DTYPES))))])


def _gemv_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype (m ≠ n almost surely), one more at random, then a square A."""
    return ([Case((int(rng.integers(1, 50_000)), int(rng.integers(1, 50_000)), dtype)) for dtype in DTYPES]
            + [Case((int(rng.integers(1, 50_000)), int(rng.integers(1, 50_000)), str(rng.choice(DTYPES)))),
               Case((m := int(rng.integers(1, 50_000)), m, str(rng.choice(DTYPES))))])


def _gemm_cases(rng: np.random.Generator) -> list[Case]:
    """Every dtype with m, n, k drawn apart, one more at random, then all three equal (square)."""
    return ([Case(tuple(int(v) for v in rng.integers(1, 20_000, size=3)) + (dtype,)) for dtype in DTYPES]
            + [Case(tuple(int(v) for v in rng.integers(1, 20_000, size=3)) + (str(rng.choice(DTYPES)),)),
               Case((m := int(rng.integers(1, 20_000)), m, m, str(rng.choice(DTYPES))))])


def predict_time(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> tuple[str, float]:
    compute, memory = flops / peak_flops, nbytes / bandwidth
    return ("compute" if compute >= memory else "memory"), max(compute, memory)


def _prediction_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(8):
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        nbytes = float(10 ** rng.uniform(3, 10))
        intensity = float(2 ** rng.uniform(-3, 10))
        cases.append(Case((nbytes * intensity, nbytes, peak, bw)))
    # a compute-bound case on every seed (the time is the FLOPs', not the bytes')
    peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
    nbytes = float(10 ** rng.uniform(3, 10))
    cases.append(Case((nbytes * peak / bw * float(rng.uniform(2, 50)), nbytes, peak, bw)))
    # a tie, exact in binary floating point: both roofs take 2^-10 s (the spec says 'compute')
    cases.append(Case((2.0**30, 2.0**20, 2.0**40, 2.0**30)))
    return cases


def min_batch_compute_bound(d_in: int, d_out: int, dtype: str, peak_flops: float, bandwidth: float) -> int | None:
    """Smallest batch B making (B×d_in)·(d_in×d_out) compute-bound; None when no batch can. Exact rational
    arithmetic: a tie (intensity == ridge point) is decided by no rounding.
    intensity(B) = 2·B·d_in·d_out / (s·(B·d_in + d_in·d_out + B·d_out)) >= ridge
               <=>  B · (2·d_in·d_out − ridge·s·(d_in + d_out)) >= ridge·s·d_in·d_out"""
    s, ridge = _size(dtype), Fraction(peak_flops) / Fraction(bandwidth)
    coef = 2 * d_in * d_out - ridge * s * (d_in + d_out)
    if coef <= 0:  # even B → ∞ (intensity → 2·d_in·d_out / (s·(d_in + d_out))) stays below the ridge
        return None
    return math.ceil(ridge * s * d_in * d_out / coef)  # >= 1: the quotient is positive


def _within_max_batch(case: Case) -> bool:
    """The spec's promise, decided without the reference (exact arithmetic): no batch reaches the ridge (the limit
    2·d_in·d_out / (s·(d_in + d_out)) as B → ∞ is at or below it), or B = MAX_BATCH already does (intensity grows
    with B, so the answer is at most MAX_BATCH)."""
    d_in, d_out, dtype, peak, bw = case.args
    s, ridge = _size(dtype), Fraction(peak) / Fraction(bw)
    never = Fraction(2 * d_in * d_out, s * (d_in + d_out)) <= ridge
    return never or Fraction(2 * MAX_BATCH * d_in * d_out,
                             s * (MAX_BATCH * d_in + d_in * d_out + MAX_BATCH * d_out)) >= ridge


def _batch_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    while len(cases) < 7:  # random layers on random machines, answers kept within the spec's MAX_BATCH
        peak, bw = ROOFS[int(rng.integers(len(ROOFS) - 1))]
        d_in, d_out = (int(2 ** rng.uniform(8, 14)) for _ in range(2))
        case = Case((d_in, d_out, str(rng.choice(["float16", "float32"])), peak, bw))
        if _within_max_batch(case):
            cases.append(case)
    cases.append(Case((256, 256, "float32", 989.4e12, 3.35e12)))  # never compute-bound
    # exactly at the ridge, in binary floating point: B = 512 gives 2·512·1024² / (2·(512·1024 + 1024² + 512·1024))
    # = 256 FLOP/byte = 256e12 / 1e12 — "reaches" includes equality (B = 513 if it did not)
    cases.append(Case((1024, 1024, "float16", 256e12, 1e12)))
    # the limit itself: as B grows, intensity -> 2·1024² / (2·2048) = 512 FLOP/byte but never reaches it: None
    cases.append(Case((1024, 1024, "float16", 512e12, 1e12)))
    # a ridge below 1 FLOP/byte: the smallest batch, B = 1, is already compute-bound (intensity ≈ 1 >= 0.5)
    cases.append(Case((4096, 4096, "float16", 2.0**39, 2.0**40)))
    # a layer that only just can: the limit 2·2·2 / (1·4) = 2 FLOP/byte is barely above the ridge 1.875, and B = 15
    # lands exactly on it (2·15·4 / (15·2 + 4 + 15·2) = 120/64 = 1.875, exact in binary floating point)
    cases.append(Case((2, 2, "int8", 1.875e12, 1e12)))
    # a tie that is NOT exact in binary: B = 966 gives 2·966·3072·1536 / (2·(966·3072 + 3072·1536 + 966·1536)) =
    # 494592/995 FLOP/byte = peak / bandwidth exactly. The intensity and the ridge each round to the same double, so
    # comparing them finds 966; the closed form evaluated in floating point lands just above 966 and its ceil on 967
    cases.append(Case((3072, 1536, "float16", 494.592e12, 0.995e12)))
    return cases


def chain_bytes(n: int, dtype: str, arities: list[int], fused: bool) -> int:
    s = _size(dtype)
    if not fused:  # every op reads all its operands from memory and writes its result back
        return sum((a + 1) * n * s for a in arities)
    inputs = arities[0] + sum(a - 1 for a in arities[1:])  # each later op takes the previous result + new inputs
    return (inputs + 1) * n * s


def _chain_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for k in range(8):  # every dtype, fused and not
        arities = [int(a) for a in rng.integers(1, 4, size=int(rng.integers(1, 7)))]
        cases.append(Case((int(rng.integers(1, 10**8)), DTYPES[k % len(DTYPES)], arities, bool(k % 2))))
    # float32, and a chain whose every later op (the second included) takes new inputs, fused and not
    n = int(rng.integers(1, 10**8))
    cases += [Case((n, "float32", [2, 3, 2, 1], True)), Case((n, "float32", [2, 3, 2, 1], False))]
    return cases


def _matmul_reference(A: Any, B: Any, tile: int) -> np.ndarray:
    from ..checks import to_host

    return to_host(A).astype(np.float64) @ to_host(B).astype(np.float64)


def _matmul_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(5):
        tile = int(rng.choice([3, 4, 5, 8, 16]))
        m, k, n = (int(tile * rng.integers(1, 4) + rng.integers(1, tile)) for _ in range(3))  # never multiples
        dtype = str(rng.choice(("float32", "float64")))
        cases.append(Case((_rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype), tile)))
    side = int(rng.integers(5, 12))  # square, not a multiple of the tile
    cases.append(Case((_rand(rng, (side, side), "float64"), _rand(rng, (side, side), "float64"), 4)))
    return cases


def _rand(rng: np.random.Generator, shape: tuple[int, int], dtype: str) -> Any:
    a = rng.standard_normal(shape).astype(dtype)
    try:  # on the GPU backend the inputs live in device memory
        from gpucourse import get_backend

        return get_backend().to_device(a)
    except Exception:
        return a


def roof_fraction(flops: float, nbytes: float, seconds: float, peak_flops: float, bandwidth: float) -> tuple[str, float]:
    intensity = flops / nbytes
    attainable = min(peak_flops, intensity * bandwidth)
    return ("memory" if intensity < peak_flops / bandwidth else "compute"), (flops / seconds) / attainable


def _fraction_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(8):
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        nbytes = float(10 ** rng.uniform(4, 10))
        flops = nbytes * float(2 ** rng.uniform(-3, 10))
        ideal = max(flops / peak, nbytes / bw)
        cases.append(Case((flops, nbytes, ideal / float(rng.uniform(0.05, 1.0)), peak, bw)))
    cases.append(Case((2.0**36, 2.0**30, 2.0**-1, 2.0**40, 2.0**34)))  # exactly at the ridge (64 FLOP/B): 'compute'
    return cases


def time_call_reference(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """The spec's answer, for a Workload: the time one call of its work takes, whatever ``repeat`` is."""
    return fn.work_s


def _timing_cases(rng: np.random.Generator) -> list[Case]:
    def ms(lo: int, hi: int) -> float:
        return float(rng.integers(lo, hi + 1)) / 1e3

    spike = int(rng.integers(1, 4))
    cases = [
        # one lucky run among >= 3 timed ones (calls 1..repeat; 0 is the warm-up): the median stays the true time,
        # the minimum lands on the lucky one
        Case((Workload(ms(8, 12), asynchronous=True, lucky=(int(rng.integers(1, 4)),)),),
             {"repeat": int(rng.integers(3, 6))}),
        Case((Workload(ms(8, 12), first_s=ms(200, 300)),), {"repeat": 1}),  # one timed run: the warm-up must go
        Case((Workload(ms(8, 12), first_s=ms(200, 300), asynchronous=True),), {"repeat": 2}),
        Case((Workload(ms(8, 12), spikes=(2, 4), lucky=(int(rng.choice([1, 3, 5])),)),), {"repeat": 5}),
        # one spike and one lucky run among 4: the middle two are true
        Case((Workload(ms(8, 12), asynchronous=True, spikes=(spike,), lucky=(spike + 1,)),), {"repeat": 4}),
        Case((Workload(ms(10, 15), first_s=ms(200, 300), asynchronous=True, spikes=(3,)),), {"repeat": 3}),
    ]
    rng.shuffle(cases)
    return cases


def explain_point(flops: float, nbytes: float, seconds: float, peak_flops: float, bandwidth: float,
                  working_set: float, cache_bytes: float) -> str:
    intensity, achieved = flops / nbytes, flops / seconds
    if achieved > peak_flops:
        return "impossible"  # nothing computes faster than the compute roof
    if achieved > intensity * bandwidth:  # above the DRAM roof (only possible left of the ridge)
        return "cache" if working_set <= cache_bytes else "impossible"
    return "memory-bound" if intensity < peak_flops / bandwidth else "compute-bound"


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
            intensity = ridge * float(rng.uniform(0.01, 0.7))
        flops = nbytes * intensity
        attainable = min(peak, intensity * bw)
        fits = bool(rng.integers(2))
        ws = cache * (float(rng.uniform(0.1, 0.9)) if fits else float(rng.uniform(1.2, 20)))
        if kind in ("memory-bound", "compute-bound"):
            achieved = attainable * float(rng.uniform(0.05, 0.99))
        elif kind == "cache":
            ws = cache * float(rng.uniform(0.1, 0.95))
            achieved = min(intensity * bw * float(rng.uniform(1.2, 4.0)), peak * 0.99)
        else:  # above the DRAM roof without fitting (the first time), above the compute roof (the second)
            if k < len(EXPLANATIONS):
                ws = cache * float(rng.uniform(1.5, 20))
                achieved = min(intensity * bw * float(rng.uniform(1.2, 4.0)), peak * 0.99)
            else:
                achieved = peak * float(rng.uniform(1.1, 3.0))
        cases.append(Case((flops, nbytes, flops / achieved, peak, bw, ws, cache)))
    # above the compute roof with a working set that fits, at a memory-bound and at a compute-bound intensity: only
    # the peak check says 'impossible' (testing the DRAM roof first says 'cache' for the first; testing only the DRAM
    # roof says 'compute-bound' for the second)
    for factor in (0.25, 8.0):
        peak, bw = ROOFS[int(rng.integers(len(ROOFS)))]
        cache = float(2 ** int(rng.integers(20, 27)))
        nbytes = float(10 ** rng.uniform(6, 9))
        flops = nbytes * peak / bw * factor
        cases.append(Case((flops, nbytes, flops / (peak * float(rng.uniform(1.1, 3.0))), peak, bw,
                           cache * float(rng.uniform(0.1, 0.9)), cache)))
    # boundaries, exact in binary floating point: working set == cache (fits), intensity == ridge (compute-bound)
    cases.append(Case((2.0**33, 2.0**30, 0.5, 2.0**36, 2.0**30, 2.0**25, 2.0**25)))  # 2× the DRAM roof: cache
    cases.append(Case((2.0**33, 2.0**30, 2.0**-2, 2.0**36, 2.0**33, 2.0**31, 2.0**25)))  # at the ridge, under
    cases.append(Case((2.0**36, 2.0**26, 1.0, 2.0**36, 2.0**30, 2.0**20, 2.0**25)))  # exactly at the peak: on it
    cases.append(Case((2.0**33, 2.0**30, 1.0, 2.0**36, 2.0**30, 2.0**31, 2.0**25)))  # exactly on the DRAM roof
    rng.shuffle(cases)
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "axpy_cost": (axpy_cost, _axpy_cases),
    "gemv_cost": (gemv_cost, _gemv_cases),
    "gemm_cost": (gemm_cost, _gemm_cases),
    "predict_time": (predict_time, _prediction_cases),
    "min_batch_compute_bound": (min_batch_compute_bound, _batch_cases),
    "chain_bytes": (chain_bytes, _chain_cases),
    "blocked_matmul": (_matmul_reference, _matmul_cases),
    "roof_fraction": (roof_fraction, _fraction_cases),
    "time_call": (time_call_reference, _timing_cases),
    "explain_point": (explain_point, _explain_cases),
}
