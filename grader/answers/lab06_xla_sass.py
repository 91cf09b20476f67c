"""Lab 6's answer side: the references and hidden-case generators of the exercises that are judged
by the grader (instructor only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side,
grader/labs/lab06_xla_sass.py, is the rest of the lab; this module imports it, never the reverse
(``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

Every exercise's reference and hidden-case generator is here. The exercises whose checker is its own
are observed where the student's code runs and judged by the grader against the references here: the
jitted exercises (fused_bias_gelu, fixed_scale_tanh: values and the compiled structure as data), the
kernel on the instrumented executor, the toolchain exercise (sass_counts) and the virtual-clock
timer (measure_times).
"""

from __future__ import annotations

import math
import re

import numpy as np

from gpucourse import toolchain
from gpucourse.toolchain import WGMMA_CU, mixed_fma_cu, unrolled_fma_cu, wmma_cu
from gpucourse.xla import entry_ops, fusion_breakers

from ..labs.lab06_xla_sass import (
    ELEMENT_BYTES,
    OPS,
    TENSOR_CORE,
    _Hlo,
    _jnp,
    _rand,
    _Sass,
    _Src,
    _workloads,
    broken_chain_hlo,
    on_cpu,
    saved_sass,
    synthetic_sass,
    tensor_core_cu,
    twice_broken_chain_hlo,
)
from ..problem import Case


# -- one fusion, nothing materialized (observed where the student's code runs, judged here) --------

def _bias_gelu_reference(x, b, r):
    # x, b and r in float64
    xf, bf, rf = (np.asarray(a, dtype=np.float64) for a in (x, b, r))
    u = xf + bf
    return rf + 0.5 * u * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))


def _bias_gelu_cases(rng: np.random.Generator) -> list[Case]:
    """Three random shapes and dtypes, then a bfloat16 37×129 (the structure in bfloat16 on every
    seed)."""
    cases = []
    for _ in range(3):
        m, n = (int(v) for v in rng.integers(3, 300, size=2))
        dtype = str(rng.choice(["float32", "bfloat16"]))
        cases.append(
            Case((_rand(rng, (m, n), dtype), _rand(rng, (n,), dtype), _rand(rng, (m, n), dtype)))
        )
    m, n, d = 37, 129, "bfloat16"
    return cases + [Case((_rand(rng, (m, n), d), _rand(rng, (n,), d), _rand(rng, (m, n), d)))]


# -- how many rows a byte budget holds, run op by op and fused ------------------------------------

def chain_function(ops: list[str]):
    """f(x, *operands) applying ``ops`` in order; *_row ops take a new (n,) vector, *_full a new (m,
    n) array: the chains whose bytes XLA counts (tests/test_lab06_xla_sass.py checks the
    reference's rows against XLA's own count of them)."""
    jnp = _jnp()

    def f(x, *operands):
        rest = iter(operands)
        for op in ops:
            if op in ("mul_row", "mul_full"):
                x = x * next(rest)
            elif op in ("add_row", "add_full"):
                x = x + next(rest)
            elif op == "relu":
                x = jnp.maximum(x, 0)
            else:
                x = getattr(jnp, op)(x)
        return x

    return f


def _chain_args(m: int, n: int, dtype: str, ops: list[str]) -> list:
    jnp = _jnp()
    args = [jnp.ones((m, n), dtype)]
    for op in ops:
        if op.endswith("_row"):
            args.append(jnp.ones((n,), dtype))
        elif op.endswith("_full"):
            args.append(jnp.ones((m, n), dtype))
    return list(on_cpu(*args))


def traffic_xla(m: int, n: int, dtype: str, ops: list[str]) -> tuple[int, int]:
    """(unfused, fused) bytes accessed by m rows according to XLA's cost analysis: each op compiled
    alone vs the chain jitted (the ground truth the tests hold the reference to)."""
    from gpucourse import xla

    args = _chain_args(m, n, dtype, ops)
    unfused, rest = 0, iter(args[1:])
    for op in ops:
        own = [args[0]] + ([next(rest)] if op.endswith(("_row", "_full")) else [])
        unfused += int(xla.compiled(chain_function([op]), *own).bytes_accessed)
    fused = int(xla.compiled(chain_function(ops), *args).bytes_accessed)
    return unfused, fused


def _rows_within_reference(n, dtype, ops, budget_bytes):
    """§6.3's rule inverted in integers: m rows move size·(per_row·m + once) bytes, where once is
    the row vectors (n elements each, read once per kernel, whatever m); the largest m ≥ 0 within
    the budget, 0 when not even one row fits."""
    size = _jnp().dtype(dtype).itemsize
    once = size * n * sum(op.endswith("_row") for op in ops)
    full = sum(op.endswith("_full") for op in ops)
    # op by op: every op reads x and writes a result (2 elements a row), a full operand one more;
    # fused: x read and the result written once, each full operand read once
    per_row = (size * n * (2 * len(ops) + full), size * n * (2 + full))
    return tuple(max(0, (budget_bytes - once) // row) for row in per_row)


# XLA's count is a float32: every budget stays below 2**24 bytes, where it is exact
BUDGET_LIMIT = 2**24 - 1
MAX_ROWS = 100_000  # the spec's bound on every answer


def _traffic_rule(n: int, dtype: str, ops: list[str], m: int) -> tuple[int, int]:
    """(unfused, fused) bytes of m rows by §6.3's rule (forward: the budgets are built with it)."""
    size = _jnp().dtype(dtype).itemsize
    operand = [n if op.endswith("_row") else m * n if op.endswith("_full") else 0 for op in ops]
    return size * sum(2 * m * n + e for e in operand), size * (2 * m * n + sum(operand))


def _rows_cases(rng: np.random.Generator) -> list[Case]:
    """Every op of OPS in some chain and every dtype; budgets that are exactly the traffic of some m
    (ties, fused and unfused), just below a row (0 rows, and 0 op by op with fused rows left),
    answers up to MAX_ROWS (a unary chain on narrow rows), row vectors whose n elements decide the
    answer (one byte below a fused row count, a budget that holds the vectors but no row, and one
    that holds less than the vectors alone)."""
    ops = [str(o) for o in rng.permutation(OPS)]
    dtypes = [str(d) for d in rng.permutation(["float32", "bfloat16", "float16"])]
    row, full = str(rng.choice(["mul_row", "add_row"])), str(rng.choice(["mul_full", "add_full"]))
    unary = [str(o) for o in rng.permutation(["relu", "tanh", "exp"])[: int(rng.integers(2, 4))]]
    rows_only = [str(o) for o in rng.permutation(["mul_row", "add_row"])]
    cases = []

    def case(n: int, dtype: str, chain: list[str], budget: int) -> None:
        top = min(BUDGET_LIMIT, _traffic_rule(n, dtype, chain, MAX_ROWS)[1])
        assert 0 <= budget <= top, (n, dtype, chain, budget)
        cases.append(Case((int(n), dtype, chain, int(budget))))

    def rows_up_to(n: int, dtype: str, chain: list[str], side: int) -> int:
        """The most rows one side may be asked about: answers ≤ MAX_ROWS, budgets ≤ the limit."""
        top = min(BUDGET_LIMIT, _traffic_rule(n, dtype, chain, MAX_ROWS)[1])
        return _rows_within_reference(n, dtype, chain, top)[side]

    def width(lo: int, hi: int) -> int:
        return int(rng.integers(lo, hi + 1))

    # a tie on the fused side, then on the unfused side
    n, chain = width(100, 2000), ops[0:2]
    case(n, dtypes[0], chain, _traffic_rule(n, dtypes[0], chain, width(2, rows_up_to(
        n, dtypes[0], chain, 1)))[1])
    n, chain = width(2, 300), ops[2:4]
    case(n, dtypes[1], chain, _traffic_rule(n, dtypes[1], chain, width(2, rows_up_to(
        n, dtypes[1], chain, 0)))[0])
    # anywhere between one fused row and the most rows
    n, chain = width(2, 2000), ops[4:7]
    low, high = (_traffic_rule(n, dtypes[2], chain, m)[1] for m in (1, rows_up_to(
        n, dtypes[2], chain, 1)))
    case(n, dtypes[2], chain, width(low, high))
    # not one row, in a 2-byte dtype with a row vector and a full operand
    n, chain = width(2, 2000), [str(o) for o in rng.permutation([row, full])]
    dtype = str(rng.choice(["bfloat16", "float16"]))
    case(n, dtype, chain, _traffic_rule(n, dtype, chain, 1)[1] - 1)
    # one fused row or more, no row op by op
    n, chain = width(2, 2000), ops[4:7]
    one = _traffic_rule(n, dtypes[0], chain, 1)
    case(n, dtypes[0], chain, width(one[1], one[0] - 1))
    # many rows: a unary chain on narrow rows
    n, dtype = width(2, 9), str(rng.choice(dtypes))
    m = width(rows_up_to(n, dtype, unary, 1) // 2, rows_up_to(n, dtype, unary, 1))
    low = _traffic_rule(n, dtype, unary, m)[1]
    case(n, dtype, unary, width(low, min(low + 2 * n * 4 - 1, _traffic_rule(
        n, dtype, unary, MAX_ROWS)[1], BUDGET_LIMIT)))
    # row vectors: one byte short of a fused row count, and room for the vectors but not a row
    n, chain = width(2, 2000), rows_only + [str(rng.choice(unary))]
    case(n, dtypes[1], chain, _traffic_rule(n, dtypes[1], chain, width(1, 50))[1] - 1)
    n, chain, dtype = width(2, 2000), [row], str(rng.choice(dtypes))
    vectors = _traffic_rule(n, dtype, chain, 0)[1]
    case(n, dtype, chain, width(vectors, _traffic_rule(n, dtype, chain, 1)[1] - 1))
    # less than the row vectors alone: still 0 rows, never a negative count
    n, chain = width(2, 2000), [row, str(rng.choice(unary))]
    case(n, dtypes[2], chain, width(1, _traffic_rule(n, dtypes[2], chain, 0)[1] - 1))
    # one op alone
    n, chain, dtype = width(2, 2000), [str(rng.choice(OPS))], str(rng.choice(dtypes))
    case(n, dtype, chain, width(_traffic_rule(n, dtype, chain, 1)[1], _traffic_rule(
        n, dtype, chain, rows_up_to(n, dtype, chain, 1))[1]))
    return cases


# -- what breaks the fusion ------------------------------------------------------------------------

# Opcodes that move or name data but compute nothing (answer side only: with gpucourse.xla.entry_ops
# it would give exercise 3's opcode in one line).
BOOKKEEPING = ("parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\([^=]*?\)|\S+)\s+([\w\-]+)\(")
_ARRAY_TYPE = re.compile(r"([a-z][a-z0-9]*)\[([\d,]*)\]")


def breaking_op(hlo: str) -> tuple[str, int]:
    """The first ENTRY instruction that is neither a fusion nor bookkeeping, and the bytes of its
    result type."""
    entry = re.search(r"^ENTRY .*?^}", hlo, re.S | re.M).group(0)
    m = next(
        m
        for m in map(_INSTRUCTION.match, entry.splitlines())
        if m and m.group(2) not in BOOKKEEPING
    )
    return m.group(2), sum(
        ELEMENT_BYTES[dtype] * math.prod(int(d) for d in re.findall(r"\d+", dims))
        for dtype, dims in _ARRAY_TYPE.findall(m.group(1))
    )


def _breaker_cases(rng: np.random.Generator) -> list[Case]:
    names = list(fusion_breakers())
    order = rng.permutation(len(names))
    cases = [
        Case(
            (
                broken_chain_hlo(
                    names[int(i)], int(rng.integers(3, 90)), int(rng.integers(3, 90)), int(i)
                ),
            )
        )
        for i in order
    ]
    # top_k lowers to a custom-call on CPU: not a distinct opcode
    distinct = [nm for nm in names if nm != "top_k"]
    for k in range(2):  # two different breakers: "first" is not "last"
        a, b = (distinct[int(i)] for i in rng.choice(len(distinct), size=2, replace=False))
        cases.append(
            Case(
                (
                    twice_broken_chain_hlo(
                        a, b, int(rng.integers(3, 40)), int(rng.integers(3, 40)), k
                    ),
                )
            )
        )
    # bookkeeping before the breaker: a bitcast, with the breaker itself the ROOT line (sort and
    # custom-call return one array), and a copy; a reader that skips neither, or misses the ROOT
    # line, answers wrong
    root = str(rng.choice(["sort", "custom-call"]))
    cases.append(Case((bookkeeping_first_hlo(root, "bitcast", *_two_sizes(rng)),)))
    other = str(rng.choice(distinct))
    cases.append(
        Case(
            (
                bookkeeping_first_hlo(
                    other, "copy", int(rng.integers(3, 40)), int(rng.integers(3, 40))
                ),
            )
        )
    )
    # bfloat16 chains: XLA:CPU sorts in float32 (the breaker's TYPE, not the inputs' dtype, says
    # what it writes), while a host callback or a conditional keeps bfloat16
    for brk in ("sort", str(rng.choice(["custom-call", "conditional"]))):
        cases.append(
            Case(
                (
                    broken_chain_hlo(
                        brk, int(rng.integers(3, 40)), int(rng.integers(3, 40)), 9, "bfloat16"
                    ),
                )
            )
        )
    return cases


def _two_sizes(rng: np.random.Generator) -> tuple[int, int]:
    """m ≠ n in [3, 40): reshaping (m, n) to (n, m) moves no element when m = n, and XLA then emits
    no bitcast (a grading run seeded for one student in 37 drew m = n and stopped with an error
    before this)."""
    m, n = (int(v) for v in rng.choice(np.arange(3, 40), size=2, replace=False))
    return m, n


def bookkeeping_first_hlo(breaker: str, kind: str, m: int, n: int) -> str:
    """Optimized HLO whose ENTRY holds bookkeeping before ``breaker``: ``"bitcast"`` — the breaker
    applied to a reshaped parameter (XLA reshapes by a bitcast); ``"copy"`` — a parameter returned
    beside the broken chain (XLA copies it into the output)."""
    import jax

    brk = fusion_breakers()[breaker]
    x, y = on_cpu(
        _rand(np.random.default_rng(m * n), (m, n)), _rand(np.random.default_rng(m + n), (m, n))
    )
    f = (
        (lambda x, y: brk(x.reshape(n, m)))
        if kind == "bitcast"
        else (lambda x, y: (y, brk(x * y + 1.0)))
    )
    hlo = jax.jit(f).lower(x, y).compile().as_text()
    ops = entry_ops(hlo)
    # the bookkeeping comes first, as built for
    assert kind in ops[:ops.index(breaking_op(hlo)[0])], (kind, ops)
    return hlo


def _tagged(rng: np.random.Generator) -> list[Case]:
    return [
        Case((_Hlo(c.args[0], f"hidden chain {i}"),)) for i, c in enumerate(_breaker_cases(rng))
    ]


# -- design — up to which size fusion saves a given factor -----------------------------------------

def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target) -> tuple[int, str]:
    d, bw, f = machine["dispatch"], machine["bandwidth"], machine["fault"]
    unfused_row, fused_row = (row_bytes[i] / bw + row_faults[i] * f for i in (0, 1))
    rows = math.floor((calls[0] - target * calls[1]) * d / (target * fused_row - unfused_row))
    terms = {
        "dispatch": calls[0] * d,
        "memory": rows * row_bytes[0] / bw,
        "page faults": rows * row_faults[0] * f,
    }
    return rows, max(terms, key=terms.get)


def _machine(kind: str, rng: np.random.Generator) -> dict[str, float]:
    if kind == "gpu":  # launch a few µs, HBM TB/s, a caching allocator: no page faults
        return {
            "dispatch": float(rng.uniform(3e-6, 8e-6)),
            "bandwidth": float(rng.uniform(2e12, 4.8e12)),
            "fault": 0.0,
        }
    # page faults dominate the per-row time (3x the memory term or more)
    if kind == "cpu, costly faults":
        return {
            "dispatch": float(rng.uniform(8e-6, 30e-6)),
            "bandwidth": float(rng.uniform(30e9, 40e9)),
            "fault": float(rng.uniform(3e-6, 4e-6)),
        }
    return {"dispatch": float(rng.uniform(8e-6, 30e-6)), "bandwidth": float(rng.uniform(8e9, 40e9)),
            "fault": float(rng.uniform(0.2e-6, 4e-6))}


def _payoff_case(
    rng: np.random.Generator, kind: str, k: int, breaks: int, faults: bool, where: float
) -> Case:
    """k binary ops on fresh (m, n) float32 operands: unfused k kernels, each reading 2 rows and
    writing 1; fused 1 + ``breaks`` kernels (a breaker splits the chain: each split writes and reads
    back one more row); on a CPU (``faults``) every fresh output row of 4n bytes takes 4n/4096 page
    faults. The target lies ``where`` (0..1) of the way from the large-m limit up to ratio(1)."""
    n = int(rng.integers(16, 2048))
    row = 4 * n
    calls = (k, 1 + breaks)
    row_bytes = (3 * k * row, (k + 2 + 2 * breaks) * row)
    pages = row / 4096
    row_faults = (k * pages, (1 + breaks) * pages) if faults else (0, 0)
    machine = _machine(kind, rng)
    time = lambda i, m: (
        calls[i] * machine["dispatch"]
        + m * row_bytes[i] / machine["bandwidth"]  # noqa: E731
        + m * row_faults[i] * machine["fault"]
    )
    low, high = time(0, 1e12) / time(1, 1e12), time(0, 1) / time(1, 1)
    assert high > low, (kind, k, breaks)
    return Case((calls, row_bytes, row_faults, machine, float(low + where * (high - low))))


def _narrow_dispatch_case(rng: np.random.Generator) -> Case:
    """A GPU case where dispatch dominates the unfused time at rows by less than the number of
    unfused kernels: the memory term lies between the fused side's dispatch and the unfused side's
    (a dominant term computed with the wrong side's kernel count gets it wrong)."""
    while True:
        case = _payoff_case(
            rng, "gpu", int(rng.integers(3, 6)), 0, False, float(rng.uniform(0.2, 0.9))
        )
        calls, row_bytes, _, machine, _ = case.args
        rows = fusion_payoff_rows(*case.args)[0]
        if (
            calls[1] * machine["dispatch"]
            < rows * row_bytes[0] / machine["bandwidth"]
            < calls[0] * machine["dispatch"]
        ):
            return case


def _time_cases(rng: np.random.Generator) -> list[Case]:
    """On a GPU a target near the dispatch ratio (few rows: dispatch dominates) and near the byte
    ratio (hundreds of millions of rows: memory dominates; a loop over m, one at a time, runs out of
    time); a chain that a breaker splits into 2 fused kernels; CPUs with cheap and with costly page
    faults (memory, page faults dominate)."""
    u = lambda lo, hi: float(rng.uniform(lo, hi))  # noqa: E731
    return [
        _payoff_case(rng, "gpu", int(rng.integers(2, 6)), 0, False, u(0.9, 0.97)),
        _payoff_case(rng, "gpu", int(rng.integers(2, 6)), 0, False, u(2e-6, 5e-6)),
        _payoff_case(rng, "gpu", int(rng.integers(5, 8)), 1, False, u(0.05, 0.5)),
        _payoff_case(rng, "cpu", int(rng.integers(2, 6)), 0, True, u(0.02, 0.3)),
        _payoff_case(rng, "cpu, costly faults", int(rng.integers(3, 6)), 0, True, u(0.02, 0.3)),
        _payoff_case(rng, "cpu", int(rng.integers(5, 8)), 1, True, u(0.3, 0.8)),
        _narrow_dispatch_case(rng),
    ]


# -- fix a fusion breaker (observed where the student's code runs, judged here) --------------------

def _scale_reference(x, d, b):
    return np.tanh(
        np.asarray(x, np.float64) * np.asarray(d, np.float64) + np.asarray(b, np.float64)
    )


def _scale_cases(rng: np.random.Generator) -> list[Case]:
    """Three random shapes, then 33×65 and a wide 2×300 (the structure on shapes that are not
    multiples of a block)."""
    out = []
    for _ in range(3):
        m, n = (int(v) for v in rng.integers(2, 200, size=2))
        out.append(Case((_rand(rng, (m, n)), _rand(rng, (n,)), _rand(rng, (n,)))))
    return out + [
        Case((_rand(rng, (m, n)), _rand(rng, (n,)), _rand(rng, (n,))))
        for m, n in ((33, 65), (2, 300))
    ]


# -- the fused epilogue kernel on a launch smaller than the array (observed on the executor, judged
# here)


def scale_bias_relu_reference(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, **launch: int
) -> np.ndarray:
    """The values; the launch (``rows_of_blocks``) changes how the kernel covers them, not what they
    are."""
    return np.maximum(x * w + b, np.float32(0.0))  # float32 throughout, as the kernel computes


def _kernel_cases(rng: np.random.Generator) -> list[Case]:
    """Columns never a multiple of 32 (one row; fewer columns than a warp; wide; square), and G
    blocks of rows that need 1 to 6 rows per thread, rows never a multiple of 4G: one row with G = 1
    (3 rows of threads idle), more rows of threads than rows (G·4 > m: idle threads that must still
    reach the barrier), a thread doing 5 or 6 rows, and a square case with 3 blocks of rows."""
    # `of` times a number in [lo, hi), plus 1 to of - 1: never a multiple of `of`
    def not_multiple(lo: int, hi: int, of: int) -> int:
        return int(of * rng.integers(lo, hi) + rng.integers(1, of))

    g = int(rng.integers(1, 3))
    shapes = [
        (1, not_multiple(1, 2, 32), 1),
        (int(rng.integers(5, 8)), int(rng.integers(3, 30)), 2),
        (not_multiple(5, 6, 4 * g), not_multiple(2, 3, 32), g),
        (37, 37, 3),
    ]
    cases = []
    for m, n, blocks_y in shapes:
        x = rng.standard_normal((m, n)).astype(np.float32)
        cases.append(
            Case(
                (
                    x,
                    rng.standard_normal(n).astype(np.float32),
                    rng.standard_normal(n).astype(np.float32),
                ),
                {"rows_of_blocks": blocks_y},
            )
        )
    return cases


# -- the tensor-core work in SASS ------------------------------------------------------------------
# Written from the syntax of nvdisasm's listing (NVIDIA, CUDA Binary Utilities): an instruction line
# is the address as a comment, /*0160*/; an optional guard predicate, @P0…@P6, @PT, @UP0…@UP6 or
# @UPT, negated with "!"; the opcode; its modifiers after dots (.16816, .64x128x16, .F32); the
# operands; ";". Anything else — section headers, directives, labels (.L_x_0:), the kernel's name,
# comments such as /* 0x… */ encodings — is not an instruction.

SASS_INSTRUCTION = re.compile(
    r"^[ \t]*/\*[0-9a-f]+\*/[ \t]+(?:@!?U?P(?:[0-6]|T)[ \t]+)?([A-Z][A-Z0-9_]*)((?:\.\w+)*)", re.M
)


def mma_flops_reference(sass: str) -> int:
    """2·m·n·k summed over the tensor-core instructions of ``sass`` (every level and data type),
    each once."""
    total = 0
    for base, modifiers in SASS_INSTRUCTION.findall(sass):
        if base in TENSOR_CORE:
            shape = modifiers.split(".")[1]
            if "x" in shape:
                mnk = [int(v) for v in shape.split("x")]
            elif shape.startswith("16"):  # warp level, run together: m is 16 or 8, n is 8
                mnk = [16, 8, int(shape[3:])]
            else:
                mnk = [8, 8, int(shape[2:])]
            total += 2 * math.prod(mnk)
    return total


def mma_flops_misread(sass: str) -> dict[str, int]:
    """What two misreadings of the listing count (the check's hints, in the exercise side's
    ``_compare_mma``): "n = 16", every warp-level shape read with n = 16 (HMMA.16816 as 16×16×16,
    the wmma tile's shape: twice the work); "predicated skipped", the lines with a guard predicate
    (@P0, @!P1, @UP0) left out."""
    n16 = unpredicated = 0
    for line in sass.splitlines():
        flops = mma_flops_reference(line)
        if not flops:
            continue
        shape = SASS_INSTRUCTION.match(line).group(2).split(".")[1]
        n16 += flops if "x" in shape else 2 * flops
        unpredicated += 0 if re.match(r"[ \t]*/\*[0-9a-f]+\*/[ \t]+@", line) else flops
    return {"n = 16": n16, "predicated skipped": unpredicated}


def _misread(case: Case) -> Case:
    """``case`` with its listing carrying what the misreadings count (for the hints)."""
    sass = case.args[0]
    return Case((_Sass(sass, sass.tag, mma_flops_misread(sass)),))


def _mma_hidden(rng: np.random.Generator) -> list[Case]:
    """Synthetic kernels (kernel names and comments full of opcodes) with every family member in
    random numbers; one kernel per tensor-core opcode alone (a function that misses one of the
    family gets it wrong), an 8-row IMMA.8816 and a 16-row IMMA.16832 beside each other; no
    tensor-core instruction at all; the saved real listings of the other data types (fp64 DMMA, int8
    IMMA and IGMMA); and where the grader has NVIDIA's toolchain, wmma kernels of random sizes
    compiled now."""
    cases = []
    for i in range(3):
        name = str(rng.choice(["FFMA_loop", "HMMA_gemm", "QGMMA_fp8", "k"]))
        cases.append(
            Case(
                (
                    _Sass(
                        synthetic_sass(rng, int(rng.integers(40, 120)), name),
                        f"synthetic kernel {i}",
                    ),
                )
            )
        )
    for op in (
        "DMMA.8x8x4",
        "IGMMA.64x32x32.S8.S8",
        "QGMMA.64x64x32.F32.E4M3.E4M3",
        "HGMMA.64x8x8.F32.TF32",
    ):
        text = synthetic_sass(
            rng, int(rng.integers(20, 60)), "k", (op,) * int(rng.integers(1, 4)), TENSOR_CORE
        )
        cases.append(Case((_Sass(text, f"synthetic, {op.split('.')[0]} only"),)))
    text = synthetic_sass(
        rng,
        int(rng.integers(20, 60)),
        "IMMA_s8",
        ("IMMA.8816.S8.S8", "IMMA.16832.S8.S8"),
        TENSOR_CORE,
    )
    cases.append(Case((_Sass(text, "synthetic, IMMA.8816 and IMMA.16832"),)))
    none = synthetic_sass(
        rng, int(rng.integers(20, 60)), "HMMA_kernel", ("HFMA2", "MOVM.16.MT88"), TENSOR_CORE
    )
    cases.append(Case((_Sass(none, "synthetic, no tensor-core instruction"),)))
    saved = saved_sass()
    for kind in ("fp64 mma", "int8 mma", "int8 wgmma"):
        cases.append(Case((_Sass(saved[f"{kind} {tensor_core_cu(kind)[1]}"], f"{kind} kernel"),)))
    if toolchain.available():
        k = int(rng.integers(2, 5))
        cases.append(
            Case((_Sass(toolchain.sass_of(wmma_cu(k)).text, f"wmma, k_steps={k}, sm_90"),))
        )
    return [_misread(case) for case in cases]


# -- compile CUDA C to sm_90 and count what it became (observed where the student's code runs) -----

def sass_counts(source: str, arch: str = "sm_90") -> dict[str, int]:
    """The FFMA count and the tensor-core operations in the SASS that NVRTC and nvdisasm make of
    ``source`` (raises ToolchainMissing without them)."""
    s = toolchain.sass_of(source, arch=arch)
    return {"FFMA": s.count("FFMA"), "tensor_flops": mma_flops_reference(s.text)}


def _counts_hidden(rng: np.random.Generator) -> list[Case]:
    """A Horner polynomial and a wmma GEMM of random sizes, the fp16 wgmma kernel and the int8 one
    for sm_90a, the fp64 and int8 mma.sync kernels, one call that leaves ``arch`` at its default
    ('sm_90'), a polynomial whose kernel's name contains 'FFMA' (a count of the text's 'FFMA'
    is too high), and float, half2 and double FMAs in one kernel (HFMA2 and DFMA are not FFMA)."""
    # t, t2, t3: FMA terms of three polynomials; k: wmma tiles
    t, k, t2 = int(rng.integers(4, 16)), int(rng.integers(2, 6)), int(rng.integers(3, 12))
    t3 = int(rng.integers(2, 9))  # FMA terms of the polynomial in the kernel named horner_FFMA
    # float, half2 and double FMA terms of a kernel that mixes them
    mixed = [int(v) for v in rng.integers(2, 7, size=3)]
    return [
        Case((_Src(unrolled_fma_cu(t)), "sm_90")),
        Case((_Src(wmma_cu(k)), "sm_90")),
        Case((_Src(WGMMA_CU), "sm_90a")),
        Case((_Src(tensor_core_cu("int8 wgmma")[0]), "sm_90a")),
        Case((_Src(tensor_core_cu("fp64 mma")[0]), "sm_90")),
        Case((_Src(tensor_core_cu("int8 mma")[0]), "sm_90")),
        Case((_Src(unrolled_fma_cu(t2)),)),
        Case((_Src(unrolled_fma_cu(t3, "horner_FFMA")), "sm_90")),
        Case((_Src(mixed_fma_cu(*mixed)), "sm_90")),
    ]


# -- measure — the true times of the stand-in workloads (observed where the timer runs, judged here)

def _true_times(slow, fast, a) -> tuple[float, float]:
    """The seconds of work per call of each stand-in: what a right timer measures on the virtual
    clock."""
    return slow.seconds, fast.seconds


def _spike_in_a_batch(slow_s: float, fast_s: float) -> Case:
    """One load spike (×6) on a call that a timer growing its batches by doubling until one spans
    0.2 s makes in its first timed batch: the worst of the batches is slowed, the best or the median
    of 3 or more is not (any right method meets one spike at most, in one run or batch)."""
    n, calls = 1, 0
    # the doubling's batches: 1, 2, 4, ... calls, the last one spanning 0.2 s
    while n * slow_s < 0.2:
        calls, n = calls + n, 2 * n
    return Case(_workloads(slow_s, fast_s, spikes=(calls + n + n // 2,)))


def _measure_hidden(rng: np.random.Generator) -> list[Case]:
    """One load spike on timed run 3, 4, 5 and 6 (one case each, on every seed: the last of 3 to 6
    runs is hit, while the best or the median of 3 or more runs or batches never is: one spike per
    case); a long compile with close times; a milder spike on the first timed run (sizes drawn);
    then lab 1's coarse clock: calls of 20–60 µs on a clock that ticks every 2 ms (one call per
    timed run reads 0 or a whole tick: the timer must batch), one of them with a long compile and a
    spike."""
    ms = lambda lo, hi: float(rng.integers(lo, hi + 1)) / 1e3  # noqa: E731
    us = lambda lo, hi: float(rng.integers(lo, hi + 1)) / 1e6  # noqa: E731
    return [*(Case(_workloads(ms(12, 40), ms(4, 15), spikes=(run,))) for run in (3, 4, 5, 6)),
            Case(_workloads(ms(7, 9), ms(5, 6), compile_s=1.0)),
            Case(_workloads(ms(200, 300), ms(40, 60), spikes=(1,), spike_factor=3.0)),
            _spike_in_a_batch(ms(20, 30), ms(5, 9)),
            Case(_workloads(us(40, 60), us(20, 35), tick_s=2e-3)),
            Case(_workloads(us(45, 60), us(20, 30), tick_s=2e-3, compile_s=1.0, spikes=(2,)))]


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "mma_flops": (mma_flops_reference, _mma_hidden),
    "fused_bias_gelu": (_bias_gelu_reference, _bias_gelu_cases),
    "fixed_scale_tanh": (_scale_reference, _scale_cases),
    "rows_within": (_rows_within_reference, _rows_cases),
    "breaking_op": (breaking_op, _tagged),
    "fusion_payoff_rows": (fusion_payoff_rows, _time_cases),
    "scale_bias_relu_kernel": (scale_bias_relu_reference, _kernel_cases),
    "sass_counts": (sass_counts, _counts_hidden),
    "measure_times": (_true_times, _measure_hidden),
}
