"""Lab 3's answer side: the reference of every exercise and its hidden-case generator (instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab03_datapath.py, is the rest of the lab; this module imports it,
never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

chunked_map's reference is fn(x) (the spec's "exactly fn(x)"); its hidden cases are plain data (x, a ``Device``, a
``DeviceFn`` by name, copies), and its check observes the device's counters where the student's code runs and
judges them with the rest (``DeviceProblem``, exercise side). ``min_chunks`` stays on the exercise side: the spec
gives its formula, and the visible check needs it where the answer side is absent.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..labs.lab03_datapath import (CPUS, DECISION_TIE, DECISION_TIE_NO_OUTPUT, GPUS, KERNELS, LINKS, TIE_GPU, WARP,
                                   _BODIES, Device, DeviceFn, _chunk_case, transfer_series)
from ..problem import Case


def _roofline(flops: float, nbytes: float, proc: dict) -> float:
    return max(flops / proc["flops"], nbytes / proc["bandwidth"])


def _copy(nbytes: float, link: dict) -> float:
    return link["latency"] + nbytes / link["bandwidth"]


def offload_decision(flops: float, bytes_in: float, bytes_out: float, cpu: dict, gpu: dict, link: dict):
    cpu_s = _roofline(flops, bytes_in + bytes_out, cpu)
    gpu_s = _copy(bytes_in, link) + _roofline(flops, bytes_in + bytes_out, gpu) + _copy(bytes_out, link)
    return cpu_s, gpu_s, ("gpu" if gpu_s < cpu_s else "cpu")


# the same with a 3× longer latency: tie at 3·2^15
BREAK_EVEN_TIE_3 = Case((1.0, 8.0, 0.0, {"flops": 2.0**40, "bandwidth": 2.0**33}, TIE_GPU,
                         {"bandwidth": 2.0**35, "latency": 285.0 * 2**-23}))


def _decision_cases(rng: np.random.Generator) -> list[Case]:
    """The exact ties, a streaming workload that writes as much as it reads (memory-bound on both processors: the
    output bytes count in both roofline times and in the copy back), then random draws."""
    n = float(10 ** rng.uniform(5, 8))
    cpu, gpu, link = (x[int(rng.integers(len(x)))] for x in (CPUS, GPUS, LINKS))
    cases = [DECISION_TIE, DECISION_TIE_NO_OUTPUT, Case((n / 8, 4 * n, 4 * n, cpu, gpu, link))]
    for _ in range(10):
        n = float(10 ** rng.uniform(2, 9))
        intensity = float(2 ** rng.uniform(-3, 11))  # FLOP per byte read
        bytes_in = n * 4
        bytes_out = float(n * 4 * rng.choice([0.0, 0.25, 1.0]))
        cpu, gpu, link = (x[int(rng.integers(len(x)))] for x in (CPUS, GPUS, LINKS))
        cases.append(Case((bytes_in * intensity, bytes_in, bytes_out, cpu, gpu, link)))
    return cases


def break_even_elements(flops_per_element: float, in_per_element: float, out_per_element: float,
                        cpu: dict, gpu: dict, link: dict) -> int | None:
    traffic = in_per_element + out_per_element
    a = _roofline(flops_per_element, traffic, cpu)  # CPU seconds per element
    b = traffic / link["bandwidth"] + _roofline(flops_per_element, traffic, gpu)  # GPU seconds per element
    if b >= a:  # per element the GPU path is no faster: 2·latency is never recovered
        return None
    # n·a > 2·latency + n·b  <=>  n > 2·latency / (a − b): exact in floating point on every case the spec allows
    # (no n has its two times within 1e-12 of each other unless they are exactly equal; _clear_of_ties)
    return math.floor(2 * link["latency"] / (a - b)) + 1


def _exact_times(n: int, case: Case) -> tuple[Fraction, Fraction]:
    """CPU and GPU seconds of n elements in exact arithmetic (the spec's formulas on the floats as given)."""
    fpe, ipe, ope, cpu, gpu, link = (({k: Fraction(v) for k, v in x.items()} if isinstance(x, dict) else Fraction(x))
                                     for x in case.args)
    traffic = n * (ipe + ope)
    cpu_s = max(n * fpe / cpu["flops"], traffic / cpu["bandwidth"])
    gpu_s = (2 * link["latency"] + traffic / link["bandwidth"]
             + max(n * fpe / gpu["flops"], traffic / gpu["bandwidth"]))
    return cpu_s, gpu_s


def _clear_of_ties(case: Case, rtol: float = 1e-12) -> bool:
    """A random draw keeps the spec's promise: per element, and at the answer n and the n before it, the two times
    are more than ``rtol`` apart in exact arithmetic (on the floats as given), and the reference's answer is the
    exact one. Exact ties are left to the deliberate cases, whose numbers are powers of two: a draw with round
    decimal rates can tie exactly in rational arithmetic where floating point cannot represent the tie, and then
    rounding — the order a correct answer adds in — would decide (1.5 % of the draws did, before this filter)."""
    a, gpu_one = _exact_times(1, case)
    b = gpu_one - 2 * Fraction(case.args[5]["latency"])  # per element: CPU a, GPU path b (copies' bytes included)
    if abs(a - b) <= rtol * a:
        return False
    n = break_even_elements(*case.args)
    if b > a:
        return n is None
    if n != math.floor(2 * Fraction(case.args[5]["latency"]) / (a - b)) + 1:
        return False
    for k in (n, n - 1):
        cpu_s, gpu_s = _exact_times(k, case) if k >= 1 else (1, 0)
        if abs(cpu_s - gpu_s) <= rtol * max(cpu_s, gpu_s):
            return False
    return True


# Per element the GPU path costs exactly what the CPU does (2^-30 s: memory-bound on both, 8 B at 2^33 B/s on the
# CPU; 8 B over a 2^34 B/s link plus 8 B at 2^34 B/s on the GPU): offloading never pays, it only adds 2·latency
BREAK_EVEN_PER_ELEMENT_TIE = Case((1.0, 8.0, 0.0, {"flops": 2.0**40, "bandwidth": 2.0**33},
                                   {"flops": 2.0**50, "bandwidth": 2.0**34}, {"bandwidth": 2.0**34, "latency": 1e-5}))


def _break_even_cases(rng: np.random.Generator) -> list[Case]:
    """Deliberate boundaries first: an exact tie at an integer n (the answer is the next n), an exact tie per
    element (never pays), workloads that write outputs and pay (the outputs' bytes count on every side), one that
    pays from n = 1; then random draws kept clear of ties (the spec's promise)."""
    cases = [BREAK_EVEN_TIE_3, BREAK_EVEN_PER_ELEMENT_TIE]
    # compute-heavy with outputs (an H100 over PCIe 5), memory-bound with outputs over NVLink 4 (pays only because
    # the link beats the CPU's memory), and a large FLOP count with no latency worth a copy (pays at once)
    paying = [(float(2 ** rng.uniform(8, 12)), 8.0, 4.0, CPUS[0], GPUS[1], LINKS[1]),
              (0.25, 8.0, 8.0, CPUS[0], GPUS[3], LINKS[2]),
              (float(2 ** rng.uniform(14, 15)), 4.0, 2.0, CPUS[int(rng.integers(len(CPUS)))], GPUS[1],
               {"bandwidth": LINKS[2]["bandwidth"], "latency": 1e-9})]
    cases += [Case(args) for args in paying]
    while len(cases) < 14:
        dtype_bytes = int(rng.choice([2, 4, 8]))
        cpu, gpu, link = (x[int(rng.integers(len(x)))] for x in (CPUS, GPUS, LINKS))
        case = Case((float(2 ** rng.uniform(-1, 13)), 2 * dtype_bytes, float(dtype_bytes * rng.choice([0, 1])),
                     cpu, gpu, link))
        if _clear_of_ties(case):
            cases.append(case)
    return cases


def _chunked_reference(x: np.ndarray, device: Device, fn: DeviceFn, copies: int) -> np.ndarray:
    return _BODIES[fn.name](x)  # fn itself refuses host arrays


def _chunked_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(6):
        fn = KERNELS[int(rng.integers(len(KERNELS)))]
        cases.append(_chunk_case(rng, int(rng.integers(3_000, 150_000)), str(rng.choice(["float32", "float64"])),
                                 float(rng.uniform(0.05, 1.5)), fn))
    return cases


def warp_execution(cond: np.ndarray, cost_if: int, cost_else: int) -> tuple[int, float]:
    cond = np.array(cond, dtype=bool)
    issued = useful = 0
    for start in range(0, len(cond), WARP):
        w = cond[start:start + WARP]
        issued += cost_if * bool(w.any()) + cost_else * bool((~w).any())
        useful += cost_if * int(w.sum()) + cost_else * int((~w).sum())
    return issued, useful / (WARP * issued)


def _warp_cases(rng: np.random.Generator) -> list[Case]:
    """Deliberate classes first: whole warps only and a partial last warp, each all True, all False and mixed
    (one lane of the last warp off); a single thread; then random patterns."""
    whole, partial = 32 * int(rng.integers(1, 5)), 32 * int(rng.integers(0, 4)) + int(rng.integers(1, 32))
    cost = lambda: int(rng.integers(1, 30))  # noqa: E731
    cases = [Case((np.ones(whole, bool), cost(), cost())), Case((np.zeros(whole, bool), cost(), cost())),
             Case((np.ones(partial, bool), cost(), cost())), Case((np.zeros(partial, bool), cost(), cost())),
             Case((np.arange(partial) != partial - 1, cost(), cost())), Case((np.array([bool(rng.integers(2))]), cost(), cost()))]
    for kind in ("random", "modulo", "threshold", "aligned", "random", "modulo", "threshold"):
        n = int(rng.integers(1, 400))
        tid = np.arange(n)
        if kind == "random":
            cond = rng.random(n) < rng.uniform(0.02, 0.98)
        elif kind == "modulo":
            cond = tid % int(rng.integers(2, 70)) == 0
        elif kind == "threshold":
            cond = tid < int(rng.integers(0, n + 1))
        else:
            cond = (tid // 32) % 2 == 0
        cases.append(Case((cond, int(rng.integers(1, 30)), int(rng.integers(1, 30)))))
    return cases


def _huber_reference(pred: np.ndarray, target: np.ndarray, delta: float) -> np.ndarray:
    r = pred.astype(np.float64) - target.astype(np.float64)
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _huber_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(6):
        n = int(rng.integers(1, 5000))
        dt = str(rng.choice(["float32", "float64"]))
        scale = float(10 ** rng.uniform(-1, 1))
        pred, target = ((scale * rng.standard_normal(n)).astype(dt) for _ in range(2))
        cases.append(Case((pred, target, float(rng.uniform(0.05, 3.0) * scale))))
    return cases


def fit_transfer(sizes: np.ndarray, seconds: np.ndarray) -> tuple[float, float]:
    """Least squares on the relative errors: each residual divided by its own time (weights 1/t)."""
    sizes, seconds = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    slope, intercept = np.polyfit(sizes, seconds, 1, w=1.0 / seconds)
    return float(intercept), float(1.0 / slope)


def _fit_cases(rng: np.random.Generator) -> list[Case]:
    cases = [transfer_series(rng, float(rng.uniform(2e-6, 30e-6)), float(rng.uniform(5e9, 60e9)),
                             (int(rng.integers(8, 14)), int(rng.integers(24, 31)))) for _ in range(6)]
    # the hard corners: few small copies (latency barely resolved) with the largest sizes, and a fast, low-latency link
    cases.append(transfer_series(rng, 2e-6, 5e9, (13, 31)))
    cases.append(transfer_series(rng, 2e-6, 60e9, (8, 31)))
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "offload_decision": (offload_decision, _decision_cases),
    "break_even_elements": (break_even_elements, _break_even_cases),
    "chunked_map": (_chunked_reference, _chunked_hidden),
    "warp_execution": (warp_execution, _warp_cases),
    "huber_vectorized": (_huber_reference, _huber_cases),
    "fit_transfer": (fit_transfer, _fit_cases),
}
