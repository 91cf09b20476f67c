"""Lab 6's answer side: the references and hidden-case generators of the exercises that are judged by the grader
(instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides ``grader/answers``):
the student edition (``python -m grader student-edition``) leaves it out and checks that none of its source is
in what it ships. The exercise side, grader/labs/lab06_xla_sass.py, is the rest of the lab; this module imports
it, never the reverse (``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

Every exercise's reference and hidden-case generator is here. The exercises whose checker is its own are observed
where the student's code runs and judged by the grader against the references here: the jitted exercises
(fused_bias_gelu, fixed_scale_tanh: values and the compiled structure as data), the kernel on the instrumented
executor, the toolchain exercise (sass_counts) and the virtual-clock timer (measure_times).
"""

from __future__ import annotations

import math
import re

import numpy as np

from gpucourse import toolchain
from gpucourse.toolchain import WGMMA_CU, unrolled_fma_cu, wmma_cu
from gpucourse.xla import BOOKKEEPING, entry_ops, fusion_breakers

from ..labs.lab06_xla_sass import (KEYS, OPS, _Hlo, _jnp, _prefix_case, _rand, _Sass, _Src, _workloads,
                                   broken_chain_hlo, chain_function, on_cpu, saved_sass, synthetic_sass,
                                   twice_broken_chain_hlo)
from ..problem import Case


# -- Exercise 1: one fusion, nothing materialized (observed where the student's code runs, judged here) ----------

def _bias_gelu_reference(x, b, r):
    xf, bf, rf = (np.asarray(a, dtype=np.float64) for a in (x, b, r))
    u = xf + bf
    return rf + 0.5 * u * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))


def _bias_gelu_cases(rng: np.random.Generator) -> list[Case]:
    """Three random shapes and dtypes, then a bfloat16 37×129 (the structure in bfloat16 on every seed)."""
    cases = []
    for _ in range(3):
        m, n = (int(v) for v in rng.integers(3, 300, size=2))
        dtype = str(rng.choice(["float32", "bfloat16"]))
        cases.append(Case((_rand(rng, (m, n), dtype), _rand(rng, (n,), dtype), _rand(rng, (m, n), dtype))))
    m, n, d = 37, 129, "bfloat16"
    return cases + [Case((_rand(rng, (m, n), d), _rand(rng, (n,), d), _rand(rng, (m, n), d)))]


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
    # bookkeeping before the breaker: a bitcast, with the breaker itself the ROOT line (sort and custom-call return
    # one array), and a copy; a reader that skips neither, or misses the ROOT line, answers wrong
    root = str(rng.choice(["sort", "custom-call"]))
    cases.append(Case((bookkeeping_first_hlo(root, "bitcast", int(rng.integers(3, 40)), int(rng.integers(3, 40))),)))
    other = str(rng.choice(distinct))
    cases.append(Case((bookkeeping_first_hlo(other, "copy", int(rng.integers(3, 40)), int(rng.integers(3, 40))),)))
    return cases


def bookkeeping_first_hlo(breaker: str, kind: str, m: int, n: int) -> str:
    """Optimized HLO whose ENTRY holds bookkeeping before ``breaker``: ``"bitcast"`` — the breaker applied to a
    reshaped parameter (XLA reshapes by a bitcast); ``"copy"`` — a parameter returned beside the broken chain (XLA
    copies it into the output)."""
    import jax

    brk = fusion_breakers()[breaker]
    x, y = on_cpu(_rand(np.random.default_rng(m * n), (m, n)), _rand(np.random.default_rng(m + n), (m, n)))
    f = (lambda x, y: brk(x.reshape(n, m))) if kind == "bitcast" else (lambda x, y: (y, brk(x * y + 1.0)))
    hlo = jax.jit(f).lower(x, y).compile().as_text()
    ops = entry_ops(hlo)
    assert kind in ops[:ops.index(breaking_op(hlo))], (kind, ops)  # the bookkeeping comes first, as built for
    return hlo


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


# -- Exercise 4: fix a fusion breaker (observed where the student's code runs, judged here) -----------------------

def _scale_reference(x, d, b):
    return np.tanh(np.asarray(x, np.float64) * np.asarray(d, np.float64) + np.asarray(b, np.float64))


def _scale_cases(rng: np.random.Generator) -> list[Case]:
    """Three random shapes, then 33×65 and a wide 2×300 (the structure on shapes that are not multiples of a
    block)."""
    out = []
    for _ in range(3):
        m, n = (int(v) for v in rng.integers(2, 200, size=2))
        out.append(Case((_rand(rng, (m, n)), _rand(rng, (n,)), _rand(rng, (n,)))))
    return out + [Case((_rand(rng, (m, n)), _rand(rng, (n,)), _rand(rng, (n,)))) for m, n in ((33, 65), (2, 300))]


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


# -- Exercise 6: count instructions in SASS ---------------------------------------------------------------------------
# Written from the syntax of nvdisasm's listing (NVIDIA, CUDA Binary Utilities), not from the course's Sass.count
# (which the lab forbids and which this reference is tested against: tests/test_lab06_xla_sass.py). An instruction
# line: the address as a comment, /*0160*/; an optional guard predicate, @P0…@P6, @PT, @UP0…@UP6 or @UPT, negated
# with "!"; the opcode; its modifiers after dots (.F32, .64x128x16); the operands; ";". Anything else — section
# headers, directives, labels (.L_x_0:), the kernel's name, comments such as /* 0x… */ encodings — is not an
# instruction. (Pre-Volta listings mark dual-issued pairs with braces; the sm_90 listings of this lab have none, and
# the exercise's spec does not ask for them.)

SASS_INSTRUCTION = re.compile(r"^[ \t]*/\*[0-9a-f]+\*/[ \t]+(?:@!?U?P(?:[0-6]|T)[ \t]+)?([A-Z][A-Z0-9_]*)[.\s;]",
                              re.M)


def count_opcode_reference(sass: str, opcode: str) -> int:
    """How many instructions of ``sass`` have the base opcode ``opcode`` (the name before the first dot)."""
    return sum(base == opcode for base in SASS_INSTRUCTION.findall(sass))


def _count_hidden(rng: np.random.Generator) -> list[Case]:
    """Synthetic kernels (kernel names and comments full of opcodes), an opcode that begins another one in the same
    text (LDG/LDGSTS, FFMA/FFMA2, MOV/MOVM), exactly one HGMMA and no HMMA at all; a saved real listing; and where
    the grader has NVIDIA's toolchain, kernels of random sizes compiled now."""
    cases = []
    for i in range(4):
        name = str(rng.choice(["FFMA_loop", "HMMA_gemm", "dfma_IMAD", "k"]))
        text = synthetic_sass(rng, int(rng.integers(20, 120)), name)
        cases.append(Case((_Sass(text, f"synthetic kernel {i}"),
                           str(rng.choice(["FFMA", "HMMA", "IMAD", "DFMA", "HGMMA", "WARPGROUP"])))))
    for short in ("LDG", "FFMA", "MOV"):  # an opcode that is a prefix of another one in the same text
        cases.append(_prefix_case(rng, short))
    # exactly one HGMMA (beside WARPGROUP.*, in a kernel named after it), and an opcode that is absent: 1 and 0
    one = synthetic_sass(rng, int(rng.integers(20, 60)), "HGMMA_tile", ("HGMMA.64x128x16.F32.BF16",
                                                                         "WARPGROUP.ARRIVE"), exclude="HGMMA")
    cases.append(Case((_Sass(one, "synthetic, one HGMMA"), "HGMMA")))
    none = synthetic_sass(rng, int(rng.integers(20, 60)), "DFMA_kernel", ("DFMA",), exclude="HMMA")
    cases.append(Case((_Sass(none, "synthetic, no HMMA"), "HMMA")))
    name, text = sorted(saved_sass().items())[int(rng.integers(0, 3))]
    cases.append(Case((_Sass(text, name), str(rng.choice(["IMAD", "MOV", "LDG", "STG", "EXIT"])))))
    if toolchain.available():
        t = int(rng.integers(3, 12))
        cases.append(Case((_Sass(toolchain.sass_of(unrolled_fma_cu(t)).text, f"Horner, {t} terms, sm_90"), "FFMA")))
        k = int(rng.integers(2, 5))
        cases.append(Case((_Sass(toolchain.sass_of(wmma_cu(k)).text, f"wmma, k_steps={k}, sm_90"), "HMMA")))
        cases.append(Case((_Sass(toolchain.sass_of(WGMMA_CU, arch="sm_90a").text, "64×8×16 wgmma kernel, sm_90a"),
                           "HGMMA")))
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
    "count_opcode": (count_opcode_reference, _count_hidden),
    "fused_bias_gelu": (_bias_gelu_reference, _bias_gelu_cases),
    "fixed_scale_tanh": (_scale_reference, _scale_cases),
    "fusion_bytes": (fusion_bytes_xla, _bytes_cases),
    "breaking_op": (breaking_op, _tagged),
    "fusion_time_ratio": (fusion_time_ratio, _time_cases),
    "scale_bias_relu_kernel": (scale_bias_relu_reference, _kernel_cases),
    "sass_counts": (sass_counts, _counts_hidden),
    "measure_times": (_true_times, _measure_hidden),
}
