"""Lab 6's answer side: the references and hidden-case generators of the exercises that are judged by the grader
(instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab06_xla_sass.py, is the rest of the lab; this module imports
it, never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

Not here yet (they stay on the exercise side, see its docstring): the exercises whose checker judges inside the
student's kernel (``check`` overridden: the jitted structure checks; the kernel on the instrumented executor, the
toolchain exercise and the virtual-clock timer are here: observed in the sandbox, judged by the grader) and ``count_opcode`` (its visible cases depend on whether NVIDIA's
toolchain is installed, so their expected values cannot ship as one data file).
"""

from __future__ import annotations

import math

import numpy as np

from gpucourse import toolchain
from gpucourse.toolchain import WGMMA_CU, unrolled_fma_cu, wmma_cu
from gpucourse.xla import BOOKKEEPING, entry_ops, fusion_breakers

from ..labs.lab06_xla_sass import (KEYS, OPS, _Hlo, _jnp, _Src, _workloads, broken_chain_hlo, chain_function,
                                   on_cpu, twice_broken_chain_hlo)
from ..problem import Case


# -- Exercise 2: the bytes fusion saves, as XLA counts them ------------------------------------------------------

def _chain_args(m: int, n: int, dtype: str, ops: list[str]) -> list:
    jnp = _jnp()
    args = [jnp.ones((m, n), dtype)]
    for op in ops:
        if op.endswith("_row"):
            args.append(jnp.ones((n,), dtype))
        elif op.endswith("_full"):
            args.append(jnp.ones((m, n), dtype))
    return list(on_cpu(*args))


def fusion_bytes_xla(m: int, n: int, dtype: str, ops: list[str]) -> tuple[int, int]:
    """(unfused, fused) bytes accessed according to XLA's cost analysis: each op compiled alone vs the chain jitted."""
    from gpucourse import xla

    args = _chain_args(m, n, dtype, ops)
    unfused, it = 0, iter(args[1:])
    for op in ops:
        own = [args[0]] + ([next(it)] if op.endswith(("_row", "_full")) else [])
        unfused += int(xla.compiled(chain_function([op]), *own).bytes_accessed)
    fused = int(xla.compiled(chain_function(ops), *args).bytes_accessed)
    return unfused, fused


def _bytes_cases(rng: np.random.Generator) -> list[Case]:
    """Every op of OPS in some chain (a permutation split over the first three cases) and every dtype (one each);
    a row and a full operand in a 2-byte dtype; a chain of one op; the shapes deliberately: one row, one column,
    square, and general non-square ones."""
    ops = [str(o) for o in rng.permutation(OPS)]
    dtypes = [str(d) for d in rng.permutation(["float32", "bfloat16", "float16"])]
    side = int(rng.integers(3, 300))
    shapes = [(1, int(rng.integers(3, 2000))), (int(rng.integers(3, 2000)), 1), (side, side),
              tuple(int(v) for v in rng.choice(np.arange(2, 2000), size=2, replace=False))]
    # a row vector and a full operand in a 2-byte dtype (an operand built in float32 is caught there); one op alone
    chains = [ops[0:2], ops[2:4], ops[4:7], [str(o) for o in rng.permutation([rng.choice(["mul_row", "add_row"]),
                                                                              rng.choice(["mul_full", "add_full"])])],
              [str(rng.choice(OPS))]]
    dtypes += [str(rng.choice(["bfloat16", "float16"])), str(rng.choice(dtypes))]
    shapes.append(tuple(int(v) for v in rng.choice(np.arange(2, 300), size=2, replace=False)))
    return [Case((m, n, d, c)) for (m, n), d, c in zip(shapes, dtypes, chains)]



# -- Exercise 3: what breaks the fusion ------------------------------------------------------------------------------

def breaking_op(hlo: str) -> str:
    """The first ENTRY instruction that is neither a fusion nor bookkeeping."""
    return next(op for op in entry_ops(hlo) if op not in BOOKKEEPING)


def _breaker_cases(rng: np.random.Generator) -> list[Case]:
    names = list(fusion_breakers())
    order = rng.permutation(len(names))
    cases = [Case((broken_chain_hlo(names[int(i)], int(rng.integers(3, 90)), int(rng.integers(3, 90)), int(i)),))
             for i in order]
    distinct = [nm for nm in names if nm != "top_k"]  # top_k lowers to a custom-call on CPU: not a distinct opcode
    for k in range(2):  # two different breakers: "first" is not "last"
        a, b = (distinct[int(i)] for i in rng.choice(len(distinct), size=2, replace=False))
        cases.append(Case((twice_broken_chain_hlo(a, b, int(rng.integers(3, 40)), int(rng.integers(3, 40)), k),)))
    return cases


def _tagged(rng: np.random.Generator) -> list[Case]:
    return [Case((_Hlo(c.args[0], f"hidden chain {i}"),)) for i, c in enumerate(_breaker_cases(rng))]



# -- Exercise 9: explain — the time ratio from dispatch, bytes and page faults ---------------------------------------

def fusion_time_ratio(calls, nbytes, faults, machine) -> tuple[float, str]:
    def terms(i):
        return {"dispatch": calls[i] * machine["dispatch"], "memory": nbytes[i] / machine["bandwidth"],
                "page faults": faults[i] * machine["fault"]}

    unfused, fused = terms(0), terms(1)
    return sum(unfused.values()) / sum(fused.values()), max(unfused, key=unfused.get)


def _machine(kind: str, rng: np.random.Generator) -> dict[str, float]:
    if kind == "gpu":  # launch a few µs, HBM TB/s, a caching allocator: no page faults
        return {"dispatch": float(rng.uniform(3e-6, 8e-6)), "bandwidth": float(rng.uniform(2e12, 4.8e12)),
                "fault": 0.0}
    if kind == "cpu, costly faults":  # page faults dominate on every draw (3x the memory term or more)
        return {"dispatch": float(rng.uniform(8e-6, 30e-6)), "bandwidth": float(rng.uniform(30e9, 40e9)),
                "fault": float(rng.uniform(3e-6, 4e-6))}
    return {"dispatch": float(rng.uniform(8e-6, 30e-6)), "bandwidth": float(rng.uniform(8e9, 40e9)),
            "fault": float(rng.uniform(0.2e-6, 4e-6))}


def _time_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, elements, k, faults in (("gpu", 1 << 26, 3, 0), ("gpu", 1 << 10, 3, 0), ("cpu", 1 << 22, 4, 3),
                                      ("cpu", 1 << 20, 2, 0), ("cpu", 1 << 8, 5, 0),
                                      ("cpu, costly faults", 1 << 22, 4, 3)):
        e = int(elements * rng.uniform(0.8, 1.2))
        per_array = 4 * e
        unf_bytes, fused_bytes = (3 * k - 1) * per_array, (k + 1) * per_array  # k binary ops on fresh operands
        pages = math.ceil(per_array / 4096)
        cases.append(Case(((k, 1), (unf_bytes, fused_bytes), (faults * pages, 0), _machine(kind, rng))))
    # exact ties (powers of two: no rounding) — the first of the tied terms in the order of TERMS is the answer
    k, e = int(rng.integers(2, 6)), int(rng.integers(14, 18))
    tie = {"dispatch": 2.0**-e, "bandwidth": 2.0**34, "fault": 2.0**-22}  # dispatch == memory, faults below
    cases.append(Case(((k, 1), (k * 2**(34 - e), 2**(33 - e)), (3, 0), tie)))
    tie = {"dispatch": 2.0**-19, "bandwidth": 2.0**33, "fault": 2.0**-18}  # memory == page faults > dispatch
    cases.append(Case(((k, 1), (k * 2**20, 2**18), (k * 32, 0), tie)))
    return cases


# -- Exercise 5: the fused kernel (observed on the instrumented executor, judged here) --

def scale_bias_relu_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(x.astype(np.float64) * w + b, 0.0)


def _kernel_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    def not_multiple(lo: int, hi: int, of: int) -> int:
        return int(of * rng.integers(lo, hi) + rng.integers(1, of))

    # one row; fewer columns than a warp; wide; square — rows never a multiple of 4, columns never of 32
    for m, n in [(1, not_multiple(1, 2, 32)), (not_multiple(1, 4, 4), int(rng.integers(3, 30))),
                 (not_multiple(2, 4, 4), not_multiple(2, 3, 32)), (37, 37)]:
        x = rng.standard_normal((m, n)).astype(np.float32)
        cases.append(Case((x, rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32))))
    return cases


# -- Exercise 7: compile CUDA C to sm_90 and count what it became (observed where the student's code runs) ------

def sass_counts(source: str, arch: str = "sm_90") -> dict[str, int]:
    """The counts in the SASS that NVRTC and nvdisasm make of ``source`` (raises ToolchainMissing without them)."""
    s = toolchain.sass_of(source, arch=arch)
    return {k: s.count(k) for k in KEYS}


def _counts_hidden(rng: np.random.Generator) -> list[Case]:
    """A Horner polynomial and a wmma GEMM of random sizes, the wgmma kernel for sm_90a, and one call that leaves
    ``arch`` at its default ('sm_90')."""
    t, k, t2 = int(rng.integers(4, 16)), int(rng.integers(2, 6)), int(rng.integers(3, 12))
    return [Case((_Src(unrolled_fma_cu(t)), "sm_90")), Case((_Src(wmma_cu(k)), "sm_90")),
            Case((_Src(WGMMA_CU), "sm_90a")), Case((_Src(unrolled_fma_cu(t2)),))]


# -- Exercise 8: measure — the true times of the stand-in workloads (observed where the timer runs, judged here) --

def _true_times(slow, fast, a) -> tuple[float, float]:
    """The seconds of work per call of each stand-in: what a right timer measures on the virtual clock."""
    return slow.seconds, fast.seconds


def _measure_hidden(rng: np.random.Generator) -> list[Case]:
    """One load spike on timed run 3, 4, 5 and 6 (one case each, on every seed: the last of 3 to 6 runs is hit,
    while the best or the median of 3 or more runs or batches never is: one spike per case); a long compile with
    close times; a milder spike on the first timed run (sizes drawn)."""
    ms = lambda lo, hi: float(rng.integers(lo, hi + 1)) / 1e3  # noqa: E731
    return [*(Case(_workloads(ms(12, 40), ms(4, 15), spikes=(run,))) for run in (3, 4, 5, 6)),
            Case(_workloads(ms(7, 9), ms(5, 6), compile_s=1.0)),
            Case(_workloads(ms(200, 300), ms(40, 60), spikes=(1,), spike_factor=3.0))]


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "fusion_bytes": (fusion_bytes_xla, _bytes_cases),
    "breaking_op": (breaking_op, _tagged),
    "fusion_time_ratio": (fusion_time_ratio, _time_cases),
    "scale_bias_relu_kernel": (scale_bias_relu_reference, _kernel_cases),
    "sass_counts": (sass_counts, _counts_hidden),
    "measure_times": (_true_times, _measure_hidden),
}
