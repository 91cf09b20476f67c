"""Lab 6 — JIT, XLA fusion and the machine code below it: the problems.

What the checks read is what the compiler produced: optimized HLO, XLA's cost analysis and buffer
assignment (``gpucourse.xla``), and SASS disassembled by ``nvdisasm`` (``gpucourse.toolchain``).
Shapes in the hidden cases are random and never multiples of a block size.

This module is the lab's *exercise side* (specs, visible cases, comparisons, structure checks: what
students install). The references and hidden-case generators of every exercise are its answer side,
grader/answers/lab06_xla_sass.py (the instructor's only; grader/DESIGN.md); the visible cases'
expected values ship as data: lab06_xla_sass.expected.json. Exercises whose checker is its own are
observed where the student's code runs and judged in the grader: the jitted functions
(fused_bias_gelu, fixed_scale_tanh) — their values and their compiled program's structure (fusions,
entry ops, XLA's byte counts) as plain data (``_JitProblem.judge``); the kernel — its outputs and
the executor's report as :class:`gpucourse.simt.ReportData`, which carries the per-array traffic and
writers its requirement reads (``KernelProblem.judge``); sass_counts — its counts and the
toolchain's versions (the stored visible counts name the toolchain that computed them);
measure_times — its stand-in workloads travel as their parameters and are rebuilt on one virtual
clock, observed: the timer's result and the counters the judge reads. mma_flops' visible cases are
fixed data (nvdisasm listings saved in lab06_xla_sass.sass, and synthetic SASS), the same with or
without NVIDIA's toolchain.

No installed course code answers exercises 3, 6, 7 and 9 (issue 20): breaking_op's bytes are read
from the breaker's HLO type, which no course helper parses; mma_flops reads the tensor-core shapes
that toolchain.Sass lists but never interprets; fusion_payoff_rows inverts gpucourse.fusion's
forward model (tests/attacks/lab06_xla_sass.py). Nor exercises 5 and 8: the kernel's launch has too
few blocks of rows and its vectors must be read once per thread or per block, not per element (no §5
kernel with its formula changed does that), and measure_times' cases include lab 1's coarse clock,
where the course's timer — even reloaded and pointed at the clock given — times one call per run and
reads 0 or a whole tick. Exercise 2, rows_within, is an inverse (design) question whose forward
model XLA may compute (class B): how many rows fit a byte budget, op by op and fused. XLA's count
is that forward model, so a search over it is the student's own inversion and nothing is locked;
its hints check an answer against a mistake's forward model at that answer and the next row, and
never search.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..checks import (
    CheckFailure,
    expect_array_close,
    expect_choice,
    expect_close,
    expect_int,
    expect_tuple,
    fail,
)
from ..kernels import KernelProblem, Launch
from ..problem import Case, ObservedProblem, Problem, _expected_data, _lab_of, _tracer_hint
from gpucourse.toolchain import (
    ELEMENTWISE_CU,
    WGMMA_CU,
    mixed_fma_cu,
    unrolled_fma_cu,
    wmma_cu,
)  # noqa: F401  (CUDA sources the lab compiles)
from gpucourse import xla as _xla

def _jnp():
    import jax.numpy as jnp

    return jnp


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str = "float32"):
    import jax.numpy as jnp

    return jnp.asarray(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def _compiled(fn: Callable, *args: Any):
    from gpucourse import xla

    try:
        # already jitted (and usually just run): its own executable, not a second compile
        if hasattr(fn, "lower"):
            return xla.of_executable(fn.lower(*args).compile())
        return xla.compiled(fn, *args)
    # not traceable (NumPy on a tracer, Python control flow on values, ...)
    except Exception as exc:
        raise CheckFailure(f"jax.jit could not compile your function: {exc.__class__.__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from None


def on_cpu(*arrays: Any) -> tuple:
    """The arrays committed to the CPU device: what XLA compiles for them (HLO text, cost analysis)
    is then the same on every machine, GPU or not (visible expected values ship as data, computed on
    the instructor's machine)."""
    import jax

    cpu = jax.devices("cpu")[0]
    return tuple(jax.device_put(a, cpu) for a in arrays)


def _nbytes(*arrays: Any) -> int:
    return sum(int(a.size) * a.dtype.itemsize for a in arrays)


# -- one fusion, nothing materialized --------------------------------------------------------------
# Exercises 1 and 4 are observed where the student's code runs (the values of ``jax.jit(fn)`` and
# the compiled program's structure, as plain data: ``_JitProblem.observe``) and judged apart
# (``_JitProblem.judge``: the values against the reference's, the structure against the rules
# below), in the grader or in the student's kernel.


def _compare_values(what: str, got: Any, expected: Any, case: Case) -> None:
    dtype = str(case.args[0].dtype)
    if getattr(got, "dtype", None) is not None and str(got.dtype) != dtype:
        raise CheckFailure(f"{what}: expected dtype {dtype}, got {got.dtype}")
    if dtype == "bfloat16" and got is not None:
        _one_rounding(what, got, expected, case)
        return
    expect_array_close(
        what,
        np.asarray(got, dtype=np.float64) if got is not None else None,
        expected,
        rtol=1e-4,
        atol=4e-4,
    )


# a bfloat16 result computed in float32 and rounded once is off by at most half a bfloat16 step,
# which lies between 2^-9 and 2^-8 of the value: 2^-8 is that worst case (measured 0.003891 against
# 0.003906); the margin is float32's own error on the terms before they cancel (2^-16 of
# |r| + |gelu|). bfloat16 arithmetic throughout (every op on bfloat16 arrays) misses it on about 1
# element in 4.5 (22 %: 56 of the visible case's 256, 439 of 1,944 hidden ones, a reader's 15 seeds)
BF16_ONE_ROUNDING, F32_TERMS = 2.0**-8, 2.0**-16


def _one_rounding(what: str, got: Any, expected: Any, case: Case) -> None:
    """A bfloat16 answer within one rounding of the exact value: the epilogue computed in float32
    and rounded to bfloat16 once, at the end."""
    g = np.asarray(got, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if g.shape != e.shape:
        expect_array_close(what, g, e)  # names the shapes
    r = np.asarray(case.args[2], dtype=np.float64)
    allowed = BF16_ONE_ROUNDING * np.abs(e) + F32_TERMS * (np.abs(r) + np.abs(e - r))
    bad = ~(np.abs(g - e) <= allowed)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckFailure(
            f"{what}: {int(bad.sum()):,} of {g.size:,} elements are more than one bfloat16 rounding"
            f" from the exact value; first at {at}: expected {e[at]:.6g}, got {g[at]:.6g}. Hint:"
            " compute in float32 (x.astype(jnp.float32), …) and round to bfloat16 once, at the"
            " end: bfloat16 arithmetic rounds after every op, and the residual add cancels"
        )


def _compare_gelu(what: str, got: Any, expected: Any, case: Case) -> None:
    """_compare_values, and when the values are wrong but match the exact (erf) GELU, a hint that
    says so."""
    try:
        _compare_values(what, got, expected, case)
    except CheckFailure as exc:
        if str(getattr(got, "dtype", "")) != str(case.args[0].dtype):
            raise  # the dtype is the mistake (the failure says so), whatever the values
        try:
            import math

            x, b, r = (np.asarray(a, dtype=np.float64) for a in case.args[:3])
            u = x + b
            exact = r + 0.5 * u * (1 + np.vectorize(math.erf)(u / math.sqrt(2)))
            g = np.asarray(got, dtype=np.float64)
            if str(case.args[0].dtype) == "bfloat16":  # within one rounding of the erf form
                erf_form = bool(np.all(np.abs(g - exact) <= BF16_ONE_ROUNDING * np.abs(exact)
                                       + F32_TERMS * (np.abs(r) + np.abs(exact - r))))
            else:
                erf_form = np.allclose(g, exact, rtol=1e-4, atol=4e-4)
        except Exception:  # noqa: BLE001 - a hint only
            erf_form = False
        if erf_form:
            first = str(exc).split(". Hint: compute in float32")[0]  # the rounding hint is moot
            raise CheckFailure(
                f"{first}. Hint: your values are the exact GELU, 0.5·u·(1 + erf(u/√2)); the spec's"
                " is the tanh approximation (lab.gelu_tanh(u)), which differs from"
                " it by up to about 5e-4"
            ) from None
        raise


def _in_input_dtype(value: Any, case: Case) -> Any:
    """The example's expected value as .show() prints it: in the dtype of the case's inputs, as the
    function must return it (the reference computes in float64, the exact truth the checks judge
    against)."""
    return np.asarray(value).astype(np.asarray(case.args[0]).dtype)


# ENTRY opcodes a one-kernel program may hold besides its fusion: they launch nothing (a copy does:
# it is a kernel).
ONE_KERNEL_OPS = ("parameter", "constant", "fusion", "tuple", "get-tuple-element", "bitcast")


def structure_facts(c: Any, no_ops: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the structure rules read of a compiled program (:func:`gpucourse.xla.compiled`), as
    plain data: the fusions' kinds, the ENTRY computation's ops, whether each op of ``no_ops`` is in
    the optimized HLO, and XLA's byte counts (cost analysis, buffer assignment)."""
    return {"fusions": list(c.fusions), "entry_ops": _xla.entry_ops(c.hlo),
            "has_op": {op: bool(re.search(rf"\s{op}\(", c.hlo)) for op in no_ops},
            "bytes_accessed": float(c.bytes_accessed), "temp_bytes": int(c.temp_bytes),
            "output_bytes": int(c.output_bytes)}


def judge_structure(what: str, s: Any, input_bytes: int, no_ops: tuple[str, ...] = ()) -> str:
    """The compiled program must be one loop fusion that reads the inputs once and writes once (and
    holds none of ``no_ops``): raise CheckFailure, else return the one-line summary the passing
    check prints."""
    if not isinstance(s, dict) or not {
        "fusions",
        "entry_ops",
        "has_op",
        "bytes_accessed",
        "temp_bytes",
        "output_bytes",
    } <= set(s):
        raise CheckFailure(f"{what}: the compiled program's structure did not come back")
    if len(s["fusions"]) != 1:
        kinds = ", ".join(f"{n} × {k!r}" for k, n in Counter(s["fusions"]).items()) or "none"
        ops = ", ".join(f"{n} × {k}" for k, n in Counter(s["entry_ops"]).items())
        raise CheckFailure(
            f"{what}: expected exactly 1 fusion in the optimized HLO, got {len(s['fusions'])}"
            f" ({kinds}); entry ops: {ops}"
        )
    extra = [op for op in s["entry_ops"] if op not in ONE_KERNEL_OPS]
    if extra:
        raise CheckFailure(
            f"{what}: ops outside the fusion: {extra}; everything must happen in one kernel"
        )
    for op in no_ops:
        if s["has_op"].get(op, True):
            raise CheckFailure(f"{what}: the optimized HLO still contains a `{op}`")
    need = input_bytes + s["output_bytes"]
    if s["bytes_accessed"] != need or s["temp_bytes"] != 0:
        raise CheckFailure(
            f"{what}: XLA's cost analysis reports {s['bytes_accessed']:,.0f} bytes accessed and "
            f"{s['temp_bytes']:,} temporary bytes; a fused kernel reads the inputs once and "
            f"writes the output once: {need:,} bytes, 0 temporary"
        )
    return f"1 {s['fusions'][0]} fusion, {s['bytes_accessed']:,.0f} bytes accessed, 0 temp"


@dataclass
class _JitProblem(ObservedProblem):
    """Checked through ``jax.jit(fn)`` (one compile per shape instead of one per op, as eager JAX
    would), on every case: first the values, then the compiled program's structure
    (:func:`judge_structure`; ``no_ops``: ops that must not be left in the optimized HLO). Observed
    where the student's code runs, judged apart (grader/DESIGN.md, "Observe here, judge there"):
    nothing of the reference is needed to observe."""

    no_ops: tuple[str, ...] = ()

    def observe(
        self, fn: Callable[..., Any], case: Case, limit: float | None = None
    ) -> dict[str, Any]:
        """``jax.jit(fn)`` on ``case`` (answers locked, time-limited) and its compiled structure, as
        plain data: {"value": the result, "structure": :func:`structure_facts`, "input_bytes": bytes
        of the arguments, "error": why there is no value or structure, or None}."""
        import functools

        import jax

        what = case.call_text(self.name)
        seen: dict[str, Any] = {
            "value": None,
            "structure": None,
            "input_bytes": _nbytes(*case.args),
            "error": None,
        }
        if not callable(fn):
            seen["error"] = f"{self.name}: expected a function, got {type(fn).__name__}"
            return seen
        # the structure is read from the jitted function too: jit of a jitted function is the same
        # HLO
        jitted = functools.wraps(fn)(jax.jit(fn))
        try:
            seen["value"] = self.call(jitted, case, limit)
        except NotImplementedError:
            raise
        except CheckFailure as exc:
            seen["error"] = str(exc)
            return seen
        except Exception as exc:
            seen["error"] = f"{what} raised {exc.__class__.__name__}: {exc}{_tracer_hint(exc, fn)}"
            return seen
        try:
            with self.locked(jitted):  # tracing runs the student's code again
                seen["structure"] = structure_facts(_compiled(jitted, *case.args), self.no_ops)
        except CheckFailure as exc:
            seen["error"] = f"{what} compiled: {exc}"
        return seen

    def judge(self, seen: Any, expected: Any, case: Case) -> str:
        """Raise CheckFailure unless ``seen`` (:meth:`observe`'s, decoded, or a live one) is right
        for ``case``: the values equal ``expected`` (the reference's), then the structure rules;
        returns the case's summary."""
        what = case.call_text(self.name)
        if not isinstance(seen, dict):
            raise CheckFailure(f"{what}: no observation of your function came back")
        if seen.get("error"):
            raise CheckFailure(str(seen["error"]))
        self.compared(seen.get("value"), expected, case)
        summary = judge_structure(
            f"{what} compiled", seen.get("structure"), _nbytes(*case.args), self.no_ops
        )
        return f"{tuple(case.args[0].shape)} {case.args[0].dtype}: {summary}"

    def passed_note(self, notes: list[str | None], seconds: float) -> str:
        return "\n  " + "\n  ".join(n or "" for n in notes)


def _gelu_visible() -> list[Case]:
    """Two small cases (float32, bfloat16), then the shape the structure was checked on alone before
    (seed 60)."""
    rng = np.random.default_rng(6)
    cases = [
        Case((_rand(rng, (4, 8)), _rand(rng, (8,)), _rand(rng, (4, 8)))),
        Case(
            (
                _rand(rng, (8, 32), "bfloat16"),
                _rand(rng, (32,), "bfloat16"),
                _rand(rng, (8, 32), "bfloat16"),
            )
        ),
    ]
    rng = np.random.default_rng(60)
    return cases + [Case((_rand(rng, (16, 24)), _rand(rng, (24,)), _rand(rng, (16, 24))))]


def gelu_tanh(u: Any) -> Any:
    """GELU's tanh approximation, 0.5·u·(1 + tanh(√(2/π)·(u + 0.044715·u³))), in u's dtype (JAX
    arrays, traceable): exercise 1's activation, given — the exercise is the precision and the
    fusion around it."""
    import jax.numpy as jnp

    return 0.5 * u * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))


BIAS_GELU = _JitProblem(
    name="fused_bias_gelu",
    spec="""
        fused_bias_gelu(x, b, r) -> r + gelu(x + b), with JAX (jax.numpy), for x, r: (m, n) and
        b: (n,) broadcast over the rows; every array has the same dtype (float32 or bfloat16)
        and so must the result.
        In bfloat16 this is a mixed-precision epilogue: compute in float32 and round the result to
        bfloat16 once, at the end. The check allows that one rounding (2^-8 of the value) plus
        float32's own error; bfloat16 arithmetic throughout (every op on bfloat16 arrays) rounds
        after every op and misses it (under jit XLA may drop a round trip through bfloat16 that
        you write, keeping float32 there).
        gelu is given: lab.gelu_tanh(u), the tanh approximation
        0.5·u·(1 + tanh(√(2/π)·(u + 0.044715·u³))), computed in u's dtype (jax.nn.gelu(u,
        approximate=True) is the same formula). Use either: the exercise is where the arithmetic
        happens and what XLA makes of it, not the formula.
        The checker jits your function and reads the optimized HLO: it must be exactly ONE fusion
        with no other compute op, XLA's bytes accessed must equal inputs read once + output written
        once, and buffer assignment must reserve no temporary memory (no materialized intermediate).
    """,
    visible=_gelu_visible(),
    compare=_compare_gelu,
    shown=_in_input_dtype,
)

# -- how many rows a byte budget holds, run op by op and fused ------------------------------------

OPS = ("mul_row", "add_row", "mul_full", "add_full", "relu", "tanh", "exp")


def _last_that_fits(rows: int, budget: int, traffic: Callable[[int], int]) -> bool:
    """Whether ``rows`` is the largest m ≥ 0 whose ``traffic(m)`` fits ``budget`` (0: not even one
    row fits): a check of an answer against one forward model at rows and rows + 1, no search."""
    return rows >= 0 and (rows == 0 or traffic(rows) <= budget) and traffic(rows + 1) > budget


def _rows_hint(side: int, got: int, expected: tuple[int, int], case: Case) -> str:
    """What a wrong count of rows on ``side`` (0 unfused, 1 fused) most likely came from: each
    mistake's forward model is checked at the student's answer (``_last_that_fits``)."""
    import jax.numpy as jnp

    n, dtype, ops, budget = case.args
    size, rows = jnp.dtype(dtype).itemsize, sum(op.endswith("_row") for op in ops)
    arrays = len([op for op in ops if op.endswith("_full")])  # (m, n) operands: n more a row
    per_row = n * (2 * len(ops) + arrays) if side == 0 else n * (2 + arrays)

    def model(elements: int, once: int, nbytes: int = size):
        return lambda m: nbytes * (elements * m + once)

    if got == expected[1 - side] != expected[side]:
        return ("that is the other side's answer: return (unfused_rows, fused_rows), and count"
                " op by op as one kernel per op (each writes its (m, n) result, the next reads it"
                " back)")
    if rows and _last_that_fits(got, budget, model(per_row + rows * n, 0)):
        return ("that many rows fit if each row vector moves m·n elements; a kernel reads an (n,)"
                " vector once, whatever m: n elements per kernel that reads it, not per row")
    if rows and _last_that_fits(got, budget, model(per_row, 0)):
        return (f"that many rows fit without the row vectors' bytes: each kernel that reads an"
                f" (n,) vector moves its n elements once, whatever m ({rows}·n = {rows * n:,}"
                " elements here), so they count even at m = 1")
    if size != 4 and _last_that_fits(got, budget, model(per_row, rows * n, 4)):
        return (f"that many rows fit at 4 bytes an element, but a {dtype} element is {size} bytes"
                " (jnp.dtype(dtype).itemsize)")
    if got < 0:
        return "when not even one row fits, the answer is 0, never negative"
    if got == expected[side] - 1:
        return (f"one row short: {expected[side]:,} rows fit — a traffic equal to the budget"
                " fits (≤, not <), and a division that rounds down once is enough")
    if got == expected[side] + 1:
        return f"{got:,} rows move more than {budget:,} bytes: the largest m that fits, round down"
    return ("op by op, each op reads its operands (x, and an (n,) vector or an (m, n) array) and"
            " writes an (m, n) result; fused, x and every operand are read once and only the result"
            " is written; bytes = elements · jnp.dtype(dtype).itemsize")


def _compare_rows_within(what: str, got: Any, expected: tuple[int, int], case: Case) -> None:
    answer = expect_tuple(what, got, "unfused_rows, fused_rows")
    for side, value in enumerate(answer):
        whole = isinstance(value, (Real, np.number)) and not isinstance(value, (bool, np.bool_))
        if not (whole and math.isfinite(float(value)) and float(value).is_integer()):
            expect_int(f"{what} → {('unfused', 'fused')[side]} rows", value, expected[side],
                       "a whole number of rows: the largest m that fits, rounded down")
    answer = tuple(int(a) for a in answer)
    if answer != tuple(expected):
        side = 0 if answer[0] != expected[0] else 1
        label = ("unfused rows (op by op, one kernel per op)", "fused rows (one kernel)")[side]
        fail(f"{what} → {label}", tuple(expected), answer,
             _rows_hint(side, answer[side], expected, case))


ROWS_WITHIN = Problem(
    name="rows_within",
    spec="""
        rows_within(n, dtype, ops, budget_bytes) -> (unfused_rows, fused_rows): a DESIGN
        question. A step may move at most budget_bytes through memory: how many rows of a batch
        fit that budget when a chain of elementwise ops runs op by op, and how many when it is
        fused?
        x is an (m, n) array of dtype ('float32', 'bfloat16' or 'float16'); ops is a list applied
        in order to the running result:
          'mul_row', 'add_row'   multiply / add a NEW (n,) vector, broadcast over the rows
          'mul_full', 'add_full' multiply / add a NEW (m, n) array
          'relu', 'tanh', 'exp'  unary, no new operand
        The traffic of m rows is what XLA's cost analysis counts on the CPU (bytes accessed, §6.3):
        unfused = the sum over ops of the bytes one op jitted ALONE accesses (it reads its
        operands and writes an (m, n) result); fused = the bytes the whole chain accesses under
        one jax.jit.
        Return the LARGEST m ≥ 0 whose unfused traffic is ≤ budget_bytes and the largest m ≥ 0
        whose fused traffic is ≤ budget_bytes: a traffic exactly equal to the budget fits; 0 when
        not even one row fits.
        n ≥ 2 (XLA counts relu on a one-element array differently per dtype) and ops holds at
        least one op. Every budget is below 2**24 bytes (XLA's count is a float32: exact up to
        there) and every answer is at most 100,000 rows.
        The forward model is yours to choose: XLA's own count (gc.xla.compiled(f, *args)
        .bytes_accessed, as §6.3 does; jax.ShapeDtypeStruct((m, n), dtype) arguments allocate
        nothing) inside a search over m, or the rule of §6.3 in closed form (a kernel reads each
        operand once and writes its result once, jnp.dtype(dtype).itemsize bytes an element).
        Either way the inversion is yours. Mind the time: a call may take 10 s and the whole
        check 50 s, and one compile with its count takes about 0.1 s (each op alone is one more),
        so trying m one by one with XLA is far too slow, and even a bisection over XLA's count
        (17 halvings cover 100,000, on both sides) comes near the 10 s on a busy machine. The
        traffic is linear in m: XLA's count at two row counts gives its per-row and per-kernel
        terms, and a closed form from them takes milliseconds; with your own formula, even a
        loop over m is fast enough.
    """,
    visible=[
        Case((1024, "float32", ["mul_row", "add_row", "relu"], 4 * 2**20)),
        Case((64, "bfloat16", ["mul_full", "tanh"], 38_400)),
    ],
    compare=_compare_rows_within,
)

# -- what breaks the fusion ------------------------------------------------------------------------


def broken_chain_hlo(breaker: str, m: int, n: int, seed: int = 0, dtype: str = "float32") -> str:
    """Optimized HLO of tanh(breaker(x·y + 1)·y − x) on (m, n) ``dtype``: an elementwise chain split
    by ``breaker``."""
    import jax

    brk = _xla.fusion_breakers()[breaker]
    rng = np.random.default_rng(seed)
    x, y = on_cpu(_rand(rng, (m, n), dtype), _rand(rng, (m, n), dtype))
    return (
        jax.jit(lambda x, y: _jnp().tanh(brk(x * y + 1.0) * y - x)).lower(x, y).compile().as_text()
    )


def twice_broken_chain_hlo(first: str, second: str, m: int, n: int, seed: int = 0) -> str:
    """Optimized HLO of tanh(second(first(x·y + 1)·y) − x): a chain split twice, by two different
    breakers; the answer is ``first``'s opcode, which a function returning the LAST breaker gets
    wrong."""
    import jax

    first_breaker, second_breaker = _xla.fusion_breakers()[first], _xla.fusion_breakers()[second]
    rng = np.random.default_rng(seed)
    x, y = on_cpu(_rand(rng, (m, n)), _rand(rng, (m, n)))
    return (
        jax.jit(lambda x, y: _jnp().tanh(second_breaker(first_breaker(x * y + 1.0) * y) - x))
        .lower(x, y)
        .compile()
        .as_text()
    )


class _Hlo(str):
    """An HLO text that prints as a short tag in messages (a Case shows its arguments)."""

    def __new__(cls, text: str, tag: str):
        obj = super().__new__(cls, text)
        obj.tag = tag
        return obj

    def __repr__(self) -> str:
        return f"<optimized HLO: {self.tag}>"


# the element types of this exercise's HLO texts
ELEMENT_BYTES = {"f32": 4, "s32": 4, "c64": 8, "bf16": 2}


def _compare_breaker(what: str, got: Any, expected: tuple[str, int], case: Case) -> None:
    opcode, nbytes = expect_tuple(what, got, "opcode, nbytes")
    if not isinstance(opcode, str):
        raise CheckFailure(
            f"{what} → opcode: expected an opcode string such as 'sort', got {opcode!r}"
        )
    if opcode != expected[0]:
        entry = str(case.args[0]).split("\nENTRY", 1)[-1]  # the ENTRY computation's lines
        mine, first_breaker = (re.search(rf"\b{re.escape(op)}\(", entry)
                               for op in (opcode, expected[0]))
        first = (" — it is in the ENTRY computation, but after the first breaker: return the"
                 " first op, in the order of the ENTRY's lines, that is not bookkeeping"
                 if mine and first_breaker and first_breaker.start() < mine.start() else "")
        raise CheckFailure(
            f"{what} → opcode: expected {expected[0]!r}, got {opcode!r}{first}. Hint: look only"
            " inside the ENTRY computation (its ROOT line too), and skip parameter, constant,"
            " fusion, tuple, get-tuple-element, copy, bitcast"
        )
    expect_int(
        f"{what} → bytes of the value {expected[0]} produces",
        nbytes,
        expected[1],
        "read the TYPE on that instruction's own line: elements × bytes per element (c64 is 8: a"
        " complex number), every array of a tuple type, and f32[] is one element",
    )


BREAKING_OP = Problem(
    name="breaking_op",
    spec="""
        breaking_op(hlo) -> (opcode, nbytes): the op that splits an elementwise chain into
        several fusions, and the bytes of the value it produces — the intermediate the break
        sends through memory (written by the breaker, read back by the next kernel; fused, it
        would have stayed in registers).
        `hlo` is the optimized HLO text (compiled.as_text(), compiled for the CPU) of a function
        like tanh(BREAK(x*y + 1)*y - x).
        Read the ENTRY computation only (the block that starts with a line beginning 'ENTRY' and
        ends at the matching '}' at the start of a line). Each instruction line looks like
            %name = TYPE opcode(operands), attributes...
        and the last one starts with 'ROOT'. The breaker is the first instruction whose opcode is
        not one of parameter, constant, fusion, tuple, get-tuple-element, copy, bitcast.
        nbytes: the bytes of the breaker's TYPE. An array type is DTYPE[d0,d1,...]{layout}:
        f32[5,7]{1,0} holds 35 elements of 4 bytes, f32[] one element; a tuple type
        '(f32[5,2]{1,0}, s32[5,2]{1,0})' holds the sum of its arrays.
        Bytes per element: f32, s32: 4; c64 (complex64): 8; bf16: 2.
    """,
    visible=[
        Case((_Hlo(broken_chain_hlo("sort", 6, 10), "tanh(sort(x*y + 1)*y - x), 6×10"),)),
        Case(
            (
                _Hlo(
                    broken_chain_hlo("top_k", 5, 7),
                    "tanh((top_k(x*y + 1, 2).sum + x*y + 1)*y - x), 5×7",
                ),
            )
        ),
        Case(
            (
                _Hlo(
                    twice_broken_chain_hlo("sort", "fft", 4, 6),
                    "tanh(fft(sort(x*y + 1)*y) - x), 4×6",
                ),
            )
        ),
        Case((_Hlo(broken_chain_hlo("fft", 3, 9), "tanh(fft(x*y + 1)*y - x), 3×9"),)),
    ],
    compare=_compare_breaker,
)

# -- fix a fusion breaker --------------------------------------------------------------------------

def slow_scale_tanh(x, d, b):
    """What the exercise starts from: scaling columns by a matmul with a diagonal matrix."""
    jnp = _jnp()
    return jnp.tanh(x @ jnp.diag(d) + b)


def _scale_visible() -> list[Case]:
    """A small case with chosen scales, then the shape the structure was checked on alone before
    (seed 40)."""
    jnp, rng = _jnp(), np.random.default_rng(40)
    return [Case((_rand(np.random.default_rng(4), (3, 4)), jnp.asarray([1.0, -2.0, 0.5, 3.0]),
                  jnp.asarray([0.0, 0.1, 0.2, 0.3]))),
            Case((_rand(rng, (8, 12)), _rand(rng, (12,)), _rand(rng, (12,))))]


FIX_SCALE = _JitProblem(
    name="fixed_scale_tanh",
    spec="""
        fixed_scale_tanh(x, d, b) -> the same values as  jnp.tanh(x @ jnp.diag(d) + b)
        (x: (m, n); d, b: (n,); float32), but compiled to ONE fusion: no `dot` anywhere in
        the optimized HLO, inputs read once, output written once, no temporary buffer. (The
        original builds an n×n diagonal matrix — n² float32 elements (4n² bytes), almost all
        zeros — and sends it through a matrix multiply, which XLA does not fuse with the
        elementwise ops around it.)
    """,
    visible=_scale_visible(),
    compare=_compare_values,
    shown=_in_input_dtype,
    no_ops=("dot",),
)

# -- the fused epilogue kernel, on a launch smaller than the array ---------------------------------
# Run by the course's instrumented executor (gpucourse.simt, through grader.kernels.KernelProblem):
# values, races, barrier errors, sectors per warp-wide access, and every element each thread read
# and wrote. The launch covers the columns but only ``rows_of_blocks`` blocks of rows (a case's
# keyword, fewer than the rows need): a 2-D grid-stride loop over rows, the per-column vectors read
# once per thread (registers) or once per block (shared memory), never per element — what an
# epilogue of a fused GEMM does with its bias — and none of it is §5's scale_2d with its formula
# changed.

from gpucourse import simt  # noqa: E402

KERNEL_BLOCK = (32, 4)  # (x, y): one warp = 32 neighbouring columns of one row
# a warp reading 32 consecutive float32: 128 B = 4 sectors (5 when the row start is unaligned)
MAX_SECTORS = 5.0


def _kernel_launch(case: Case) -> Launch:
    x, w, b = case.args
    m, n = x.shape
    grid = (math.ceil(n / KERNEL_BLOCK[0]), int(case.kwargs["rows_of_blocks"]))
    return Launch(
        grid, KERNEL_BLOCK, [x, w, b, np.full((m, n), np.nan, dtype=np.float32)], outputs=[3]
    )


def _xla_bytes(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> int:
    """Bytes XLA's cost model charges the fused jnp version of the same computation."""
    from gpucourse import xla

    jnp = _jnp()
    return int(xla.compiled(lambda x, w, b: jnp.maximum(x * w + b, 0.0), x, w, b).bytes_accessed)


def traffic(report: simt.KernelReport) -> dict[str, dict[str, int]]:
    """Per global argument array: distinct elements read and written, and total reads and writes
    (from the live report or its data form, :class:`gpucourse.simt.ReportData`: ``array_traffic``);
    shared arrays are left out."""
    out = {}
    for name in report.arrays:
        if report.spaces.get(name, "global") != "global":
            continue
        read, written, reads, writes = report.array_traffic(name)
        out[name] = {"read": read, "written": written, "reads": reads, "writes": writes}
    return out


def _kernel_require(r: simt.KernelReport, case: Case, what: str) -> None:
    x, w, b = case.args
    m, n = x.shape
    blocks_y = int(case.kwargs["rows_of_blocks"])
    t = traffic(r)
    xs, ws, bs, outs = list(t)  # the kernel's parameter names, in order
    for name in (xs, outs):
        sectors = r.sectors_per_request(name)
        if sectors > MAX_SECTORS:
            raise CheckFailure(
                f"{what}: each warp-wide access of `{name}` touched {sectors:.1f} 32-byte sectors"
                f" on average (coalesced: at most {MAX_SECTORS:g}). threadIdx.x must walk the"
                " columns, the contiguous axis: cuda.grid(2) returns (x, y) = (column, row)"
            )
    if t[outs]["reads"]:
        raise CheckFailure(
            f"{what}: the kernel reads `{outs}` back {t[outs]['reads']:,} times after writing it —"
            " a round trip through global memory that a fused kernel never makes: compute in"
            " registers, store once"
        )
    if t[outs]["writes"] != x.size or t[xs]["reads"] != x.size:
        raise CheckFailure(
            f"{what}: expected each element of `{xs}` read once and of `{outs}` written once "
            f"({x.size:,} each), got {t[xs]['reads']:,} reads and {t[outs]['writes']:,} writes"
        )
    thread_rows = min(blocks_y * KERNEL_BLOCK[1], m)  # rows of threads that have a row to do
    writers, most = r.writers(outs)
    if writers != thread_rows * n or most != math.ceil(m / (blocks_y * KERNEL_BLOCK[1])):
        raise CheckFailure(
            f"{what}: {writers:,} threads wrote `{outs}`, up to {most:,} elements each; the grid"
            f" has {blocks_y * KERNEL_BLOCK[1]} rows of threads for {m} rows, so in a grid-stride"
            f" loop over the rows (i = y, y + gridsize_y, ...) each of the {thread_rows * n:,}"
            " threads with a column and a first row writes"
            f" {math.ceil(m / (blocks_y * KERNEL_BLOCK[1]))} elements at most: the spec asks for"
            " that order — rows i = y, y + gridsize_y, ... (cuda.gridsize(2) gives the stride) —"
            " not contiguous chunks of rows per thread, which leave some threads idle"
        )
    threads = n * blocks_y * KERNEL_BLOCK[1]  # threads with a column (a row or not)
    for vec in (ws, bs):
        if t[vec]["reads"] > threads:
            raise CheckFailure(
                f"{what}: `{vec}` was read {t[vec]['reads']:,} times from global memory, more than"
                f" once per thread ({threads:,} threads have a column): each thread's column is"
                " fixed for every row it handles, so read its w[j] and b[j] once, before the row"
                " loop (into registers), or stage the block's 32 values in shared memory behind a"
                " cuda.syncthreads() — as an epilogue reads its bias once per tile, not once per"
                " element"
            )
    moved = sum((v["read"] + v["written"]) * r.itemsize[name] for name, v in t.items())
    xla_bytes = _xla_bytes(x, w, b)
    if moved != xla_bytes:
        raise CheckFailure(
            f"{what}: your kernel touches {moved:,} distinct bytes of global memory; XLA's fused "
            f"kernel for the same jnp code moves {xla_bytes:,} (its cost analysis)"
        )


def _kernel_visible() -> list[Case]:
    rng = np.random.default_rng(5)
    m, n = 19, 45
    return [
        Case(
            (
                rng.standard_normal((m, n)).astype(np.float32),
                rng.standard_normal(n).astype(np.float32),
                rng.standard_normal(n).astype(np.float32),
            ),
            {"rows_of_blocks": 2},
        )
    ]


KERNEL = KernelProblem(
    name="scale_bias_relu_kernel",
    spec="""
        A @cuda.jit kernel  scale_bias_relu_kernel(x, w, b, out)  computing, in ONE pass,
            out[i, j] = max(x[i, j] * w[j] + b[j], 0)
        for x, out: (m, n) float32 and w, b: (n,) float32: the epilogue XLA fuses after a matmul
        (scale, bias, activation). The checker launches it with blocks of (32, 4) threads (x, y): x
        covers the COLUMNS, one block per 32 (ceil(n / 32) blocks), but y has a FIXED number G of
        blocks (rows_of_blocks, drawn per case) that is usually too few for the rows:
            scale_bias_relu_kernel[(ceil(n / 32), G), (32, 4)](x, w, b, out)
        so each thread handles rows i = y, y + 4G, y + 8G, ... (a grid-stride loop over the rows;
        cuda.gridsize(2) gives (columns, rows) of threads; this order is required: contiguous
        chunks of rows per thread fail the share rule below). m and n are not multiples of the
        block; out starts full of NaN.
        The checker runs it on the course's instrumented executor and requires:
          - coalescing: the 32 threads of a warp (neighbouring threadIdx.x) access
            neighbouring columns of one row, so each warp-wide access of x and out touches
            at most 5 32-byte sectors;
          - one pass: every x[i, j] read once, every out[i, j] written once, out never
            read back; every thread with a column and a first row does its share (at
            most ceil(m / 4G) elements);
          - the vectors once, not once per element: w and b are read from global memory at most once
            per thread (a thread's column is the same for every row it handles): into registers
            before the row loop, or once per block into shared memory (one row of threads loads the
            block's 32 values into cuda.shared.array(32, np.float32), then cuda.syncthreads() —
            §5.7: no thread reads before the loads are done — then all read them from there);
          - the distinct bytes your kernel touches in global memory equal what XLA's cost
            analysis charges the fused jnp version jnp.maximum(x * w + b, 0) — your kernel is
            that fusion, written by hand.
    """,
    visible=_kernel_visible(),
    compare=lambda *a: None,
    launch=_kernel_launch,
    require=_kernel_require,
)

# -- the tensor-core work in SASS ------------------------------------------------------------------

from gpucourse import toolchain  # noqa: E402  (the lab's SASS comes from here)

# Hopper's tensor-core instructions, by level and data type (nvdisasm's spelling): warp-level
# mma.sync / wmma is HMMA (fp16, bf16, tf32), IMMA (int8) or DMMA (fp64); warpgroup-level wgmma is
# HGMMA (fp16, bf16, tf32), IGMMA (int8) or QGMMA (fp8). The shape is the first modifier.
TENSOR_CORE = ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA")

# the wgmma instruction's two source lines in WGMMA_CU, which the other data types replace
_WGMMA_LINE = (
    '"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"\n'
    '                 " {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\\n}\\n"'
)
assert _WGMMA_LINE in WGMMA_CU, "WGMMA_CU's wgmma line changed: tensor_core_cu would not replace it"

DMMA_CU = r'''
extern "C" __global__ void dmma(const double* a, const double* b, double* c) {
    double d0 = 0, d1 = 0, a0 = a[threadIdx.x], b0 = b[threadIdx.x];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(d0), "+d"(d1) : "d"(a0), "d"(b0));
    c[threadIdx.x] = d0 + d1;
}
'''

IMMA_CU = r'''
extern "C" __global__ void imma(const int* a, const int* b, int* c) {
    int d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    int a0 = a[threadIdx.x], a1 = a[threadIdx.x + 32], b0 = b[threadIdx.x];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32"
                 " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3) : "r"(a0), "r"(a1), "r"(b0));
    int e0 = 0, e1 = 0;  // and an 8-row one: m8n8k16
    asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+r"(e0), "+r"(e1) : "r"(a0), "r"(b0));
    c[threadIdx.x] = d0 + d1 + d2 + d3 + e0 + e1;
}
'''


def tensor_core_cu(kind: str) -> tuple[str, str]:
    """(CUDA C source, target) of a kernel whose tensor-core instruction is of another data type
    than the course's fp16 ones: "fp8 wgmma" (QGMMA, m64n8k32), "int8 wgmma" (IGMMA, m64n8k32) — the
    course's WGMMA_CU with its wgmma line changed, for sm_90a — and "fp64 mma" (DMMA, m8n8k4: one
    mma.sync), "int8 mma" (IMMA, an m16n8k16 and an m8n8k16 mma.sync), sm_90."""
    if kind == "fp8 wgmma":
        return (
            WGMMA_CU.replace(
                _WGMMA_LINE,
                '"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 '
                '{%0, %1, %2, %3}, %4, %5, p, 1, 1;\\n}\\n"',
            ).replace("wgmma_tile", "wgmma_fp8"),
            "sm_90a",
        )
    if kind == "int8 wgmma":
        return (
            WGMMA_CU.replace(
                _WGMMA_LINE,
                '"wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 '
                '{%0, %1, %2, %3}, %4, %5, p;\\n}\\n"',
            )
            .replace(
                '"+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)', '"+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3)'
            )
            .replace(
                "float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;",
                "float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f; int i0 = 0, i1 = 0, i2 = 0, i3 = 0;",
            )
            .replace("c[4 * t + 0] = d0;", "c[4 * t + 0] = d0 + i0 + i1 + i2 + i3;")
            .replace("wgmma_tile", "wgmma_s8"),
            "sm_90a",
        )
    return {"fp64 mma": (DMMA_CU, "sm_90"), "int8 mma": (IMMA_CU, "sm_90")}[kind]


TENSOR_CORE_KINDS = ("fp8 wgmma", "int8 wgmma", "fp64 mma", "int8 mma")

_OPS_POOL = [
    "FFMA",
    "FADD",
    "FMUL",
    "HMMA.16816.F32",
    "HMMA.16816.F32.BF16",
    "HFMA2",
    "DFMA",
    "IMAD",
    "IMAD.WIDE",
    "FFMA.FTZ",
    "LDG.E",
    "STG.E",
    "FMNMX",
    "ISETP.GE.AND",
    "MOV",
    "HMMA.1688.F32.TF32",
    "IMMA.16832.S8.S8",
    "IMMA.8816.S8.S8",
    "DMMA.8x8x4",
    "HGMMA.64x128x16.F32.BF16",
    "HGMMA.64x8x8.F32.TF32",
    "IGMMA.64x32x32.S8.S8",
    "QGMMA.64x64x32.F32.E4M3.E4M3",
    "WARPGROUP.ARRIVE",
    "WARPGROUP.DEPBAR.LE",
    "LDG.E.128.CONSTANT",
    "LDGSTS.E.BYPASS.128",
    "LDSM.16.M88.4",
    "MOVM.16.MT88",
    "FFMA2",
]
_OPERANDS = [
    "R0, R4, R3, R7",
    "R16, R4.reuse, R12, RZ",
    "R2, desc[UR4][R2.64]",
    "P0, PT, R11, UR4, PT",
    "R1, 0x4",
]


def synthetic_sass(
    rng: np.random.Generator,
    lines: int = 60,
    kernel: str = "k",
    must: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
) -> str:
    """SASS-formatted text with random instructions, predicates, labels, a kernel name and a comment
    full of tensor-core opcodes; every instruction of ``must`` appears once (first); no random
    instruction has a base opcode of ``exclude`` (so ``must`` alone decides how many of those there
    are)."""
    pool = [op for op in _OPS_POOL if op.split(".")[0] not in exclude]
    out = [
        f"//--------------------- .text.{kernel}  --------------------------",
        f"        .section  .text.{kernel},\"ax\",@progbits",
        f"        .global  {kernel}",
        f"{kernel}:",
        "        /* FFMA-heavy kernel, HMMA.16816.F32 and HGMMA.64x128x16 in the epilogue */",
    ]
    for i in range(lines):
        if rng.random() < 0.08:
            out.append(f".L_x_{i}:")
        pred = str(rng.choice(["", "", "", "@P0 ", "@!P1 ", "@UP0 "]))
        op = must[i] if i < len(must) else str(rng.choice(pool))
        out.append(
            f"        /*{16 * i:04x}*/                   {pred}{op} {rng.choice(_OPERANDS)} ;"
        )
    out.append(f"        /*{16 * lines:04x}*/                   EXIT ;")
    return "\n".join(out) + "\n"


class _Sass(str):
    """A listing that prints as ``tag`` in messages. ``misread``: what mma_flops' common misreadings
    count on it (the hints of :func:`_compare_mma`): computed by the answer side for a hidden case,
    written down for a visible one (tests/test_lab06_xla_sass.py checks them); a case that travels
    as data is a plain string again and has none."""

    def __new__(cls, text: str, tag: str, misread: dict[str, int] | None = None):
        obj = super().__new__(cls, text)
        obj.tag = tag
        obj.misread = dict(misread or {})
        return obj

    def __repr__(self) -> str:
        return f"<SASS: {self.tag}>"


# real nvdisasm listings, saved (see its header)
SASS_FIXTURE = Path(__file__).with_name("lab06_xla_sass.sass")


def saved_sass() -> dict[str, str]:
    """The SASS listings saved in :data:`SASS_FIXTURE` by name: nvdisasm's output for the course's
    kernels and :func:`tensor_core_cu`'s (the cases are the same everywhere, with NVIDIA's toolchain
    installed or not). The file holds sections ``##### name`` followed by the listing; lines before
    the first section (starting with ``#``) describe it."""
    out: dict[str, list[str]] = {}
    name = None
    for line in SASS_FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("##### "):
            name = line[6:].strip()
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "".join(v) for k, v in out.items()}


# the saved listings: name -> (source, target) that made them (tests/test_lab06_xla_sass.py compiles
# them again)
SAVED_SOURCES = {
    "wmma_cu(1) sm_90": (wmma_cu(1), "sm_90"),
    "ELEMENTWISE_CU sm_90": (ELEMENTWISE_CU, "sm_90"),
    "WGMMA_CU sm_90a": (WGMMA_CU, "sm_90a"),
    **{f"{kind} {tensor_core_cu(kind)[1]}": tensor_core_cu(kind) for kind in TENSOR_CORE_KINDS},
}


def _mma_visible() -> list[Case]:
    """Real listings (saved: :func:`saved_sass`) and synthetic SASS: the same cases with or without
    the toolchain."""
    real = saved_sass()
    rng = np.random.default_rng(7)
    # the misreadings' counts (the hints): two HMMA.16816 read as 16×16×16; both tensor-core lines
    # of the synthetic listing are predicated
    return [
        Case((_Sass(real["wmma_cu(1) sm_90"], "16×16×16 wmma kernel, sm_90",
                    {"n = 16": 16384, "predicated skipped": 8192}),)),
        Case((_Sass(real["ELEMENTWISE_CU sm_90"], "fused_relu, sm_90",
                    {"n = 16": 0, "predicated skipped": 0}),)),
        Case((_Sass(real["WGMMA_CU sm_90a"], "64×8×16 fp16 wgmma kernel, sm_90a",
                    {"n = 16": 16384, "predicated skipped": 16384}),)),
        Case((_Sass(real["fp8 wgmma sm_90a"], "64×8×32 fp8 wgmma kernel, sm_90a",
                    {"n = 16": 32768, "predicated skipped": 32768}),)),
        Case(
            (
                _Sass(
                    synthetic_sass(
                        rng,
                        30,
                        "HMMA_tile",
                        ("HMMA.1688.F32.TF32", "HMMA.16816.F32.BF16"),
                        exclude=TENSOR_CORE,
                    ),
                    "synthetic, 30 lines",
                    {"n = 16": 12288, "predicated skipped": 0},
                ),
            )
        ),
    ]


# what each misreading of the listing gets wrong (the counts: _Sass.misread)
MISREAD_HINTS = {
    "n = 16": (
        "a warp-level shape's n is 8, not 16: HMMA.16816 is m16 n8 k16 (16×8×16), HMMA.1688"
        " 16×8×8, IMMA.8816 8×8×16 — your count is what reading n = 16 gives (a 16×16×16 wmma tile"
        " compiles to two HMMA.16816)"
    ),
    "predicated skipped": (
        "your count leaves out the predicated lines (@P0 HMMA…, @!P1 …): a guard predicate decides"
        " at run time whether the instruction executes, but the line is still an instruction of"
        " the listing, and the count is static — every tensor-core line once, predicated or not"
    ),
}


def _compare_mma(what: str, got: Any, expected: int, case: Case) -> None:
    hint = (
        "every tensor-core opcode of both levels and the spec's data types, 2·m·n·k each, read"
        " from instruction lines only"
    )
    if isinstance(got, int) and not isinstance(got, bool) and got != expected:
        misread = getattr(case.args[0], "misread", {})
        if expected and 2 * got == expected:
            hint = "a multiply-accumulate is 2 operations per product term: 2·m·n·k, not m·n·k"
        else:
            hint = next((MISREAD_HINTS[k] for k, v in misread.items() if v == got), hint)
    expect_int(what, got, expected, hint)


MMA_FLOPS = Problem(
    name="mma_flops",
    spec="""
        mma_flops(sass) -> int: the operations the tensor-core instructions of a SASS listing
        (nvdisasm's output) perform, each instruction counted once: 2·m·n·k for an m×n×k matrix
        multiply-accumulate (a multiply and an add per product term; integer and floating point
        alike). 0 when the kernel never used the tensor cores.
        This is a STATIC count per issuing warp (HMMA, IMMA, DMMA) or warpgroup (HGMMA,
        IGMMA, QGMMA): each line of the listing counted once — not the kernel's work, which
        multiplies it by how many times each line runs (loops) and by how many warps or
        warpgroups the grid launches.
        An instruction line looks like
            /*0160*/                   @!P0 HMMA.16816.F32 R16, R4.reuse, R12, RZ ;
        : an address comment /*hex*/, an optional predicate (@P0, @!P1, @UP0), then the opcode with
        its modifiers after dots. The base opcode (before the first dot) says what unit runs it.
        Hopper's tensor-core opcodes come in two levels and several data types; these are the
        ones the cases use (1-bit BMMA and BGMMA exist too, in no case):
          warp level (mma.sync, wmma):   HMMA (fp16, bf16, tf32), IMMA (int8), DMMA (fp64)
          warpgroup level (wgmma):       HGMMA (fp16, bf16, tf32), IGMMA (int8), QGMMA (fp8)
        The first modifier is the shape: m, n, k joined by 'x' (HGMMA.64x128x16.F32.BF16
        is 64×128×16; DMMA.8x8x4), or, at warp level, written without separators — m
        is 16 or 8, n is 8, k the rest: HMMA.16816 is 16×8×16, HMMA.1688 16×8×8,
        IMMA.16832 16×8×32, IMMA.8816 8×8×16.
        Section headers, labels, comments and kernel names (which may contain 'HMMA'!) are not
        instructions; HFMA2, FFMA, MOVM, LDSM are not tensor-core instructions.
    """,
    visible=_mma_visible(),
    compare=_compare_mma,
)

# -- compile CUDA C to sm_90 and count what it became ----------------------------------------------

KEYS = ("FFMA", "tensor_flops")


class _Src(str):
    """A CUDA C source that prints as its kernel's name in messages (a Case shows its arguments). A
    hidden case's source travels to a sandbox as a plain string and is wrapped again there
    (:meth:`_ToolchainProblem.readable`)."""

    def __repr__(self) -> str:
        m = re.search(r"void (\w+)\(", self)
        return f"<CUDA C: {m.group(1) if m else 'kernel'}>"


def _compare_counts(what: str, got: Any, expected: dict[str, int], case: Case) -> None:
    if not isinstance(got, dict) or set(got) != set(KEYS):
        raise CheckFailure(
            f"{what}: expected a dict with keys 'FFMA' and 'tensor_flops', got {got!r}"
        )
    for key in KEYS:
        arch = case.args[1] if len(case.args) > 1 else "sm_90 (the default)"
        hint = f"compile for {arch}, then count the FFMA instructions and add up your mma_flops"
        kernel = re.search(r"void (\w+)\(", case.args[0])
        if (key == "FFMA" and kernel and "FFMA" in kernel.group(1) and isinstance(got[key], int)
                and got[key] > expected[key]):
            hint = (
                f"count instructions, not text: the kernel's name {kernel.group(1)!r} contains"
                " 'FFMA', and nvdisasm prints the name in the section headers, labels and symbols;"
                " count the instruction lines whose base opcode is FFMA"
                " (toolchain.Sass(text).count('FFMA'))"
            )
        elif (key == "FFMA" and "__hfma2" in case.args[0] and isinstance(got[key], int)
              and got[key] > expected[key]):
            hint = (
                "only FP32 FMAs count: this kernel also has half2 FMAs (HFMA2, also issued as"
                " HFMA2.MMA) and double ones (DFMA); count the instruction lines whose base opcode"
                " is exactly FFMA (toolchain.Sass(text).count('FFMA'))"
            )
        elif key == "tensor_flops" and isinstance(got[key], int) and got[key] != expected[key]:
            hint = (
                "the FFMA count is right; the tensor-core operations are your mma_flops of the"
                " listing: every tensor-core family counts (HMMA, IMMA, DMMA at warp level; HGMMA,"
                " IGMMA, QGMMA at warpgroup level), 2·m·n·k each — check mma_flops on this kernel's"
                " SASS"
            )
        expect_int(f"{what} → {key}", got[key], expected[key], hint)


class _ToolchainProblem(ObservedProblem):
    """Graded where NVIDIA's compiler wheels are installed: the student's function runs where it is
    written (:meth:`observe`: its counts, as data, and the toolchain they came from) and its counts
    are judged against the reference's (:meth:`judge`: in the grader for hidden cases). The visible
    cases' counts ship as data together with the toolchain that computed them (``{"counts": ...,
    "toolchain": toolchain.versions()}``): counts depend on the compiler's version, so where another
    version is installed a visible check that disagrees says so instead of calling the answer wrong.
    Elsewhere the function must at least be written: it must raise ToolchainMissing (then the cells
    are judged in the kernel only: the grader, on the same machine, has no toolchain either)."""

    def check(self, fn: Callable[..., Any], hidden: bool = False) -> None:  # type: ignore[override]
        if not toolchain.available():
            return self._without_toolchain(fn)
        return super().check(fn, hidden)

    def passed_note(self, notes: list[str | None], seconds: float) -> str:
        return f" ({toolchain.versions()})"

    def _without_toolchain(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise CheckFailure(f"{self.name}: expected a function, got {type(fn).__name__}")
        try:
            fn(*self.visible[0].args)
        except toolchain.ToolchainMissing:
            print(
                f"[toolchain missing] {self.name} is graded where the NVIDIA wheels are installed: "
                f"{toolchain.describe()}"
            )
            return
        except NotImplementedError:
            raise
        except Exception as exc:
            raise CheckFailure(f"{self.name} raised {exc.__class__.__name__}: {exc}") from exc
        raise CheckFailure(
            f"{self.name}: this machine has no NVIDIA toolchain, so your function should have"
            " raised ToolchainMissing from gpucourse.toolchain; did it compile anything?"
        )

    @staticmethod
    def readable(case: Case) -> Case:
        """``case`` with its source shown by its kernel's name in messages (a hidden case came as
        plain data)."""
        return Case((_Src(case.args[0]), *case.args[1:]), dict(case.kwargs))

    def what(self, case: Case) -> str:
        return self.readable(case).call_text(self.name)

    @property
    def observe(self) -> Callable[..., dict[str, Any]] | None:
        """What the judge reads, as plain data (runs where the student's code runs): ``{"result":
        the function's answer, "toolchain": the versions it compiled with}``; an error of the
        function propagates. None where NVIDIA's toolchain is missing: then nothing can be counted
        (nor, on the same machine, the reference computed), and the re-check leaves these cells to
        the kernel's verdict (the ToolchainMissing rule)."""
        if not toolchain.available():
            return None

        def observe(
            fn: Callable[..., Any], case: Case, limit: float | None = None
        ) -> dict[str, Any]:
            return {
                "result": self.call(fn, self.readable(case), limit),
                "toolchain": toolchain.versions(),
            }

        return observe

    def judge(self, seen: Any, expected: Any, case: Case) -> None:
        """Raise CheckFailure unless the counts observed (``seen``) are ``expected``: the
        reference's counts, or a visible case's stored ``{"counts", "toolchain"}`` — then, where the
        function ran with another toolchain and the counts differ, the failure says that the
        versions differ rather than that the answer is wrong."""
        what = self.what(case)
        if not isinstance(seen, dict) or "result" not in seen:
            raise CheckFailure(f"{what}: no observation of your function came back")
        made_with = None
        if isinstance(expected, dict) and "counts" in expected:
            expected, made_with = expected["counts"], expected.get("toolchain")
        try:
            _compare_counts(what, seen["result"], expected, case)
        except CheckFailure as exc:
            if made_with is None or seen.get("toolchain") == made_with:
                raise
            raise CheckFailure(
                f"{what}: cannot be judged with this toolchain. The expected counts {expected} were"
                f" computed with {made_with}; your function compiled with {seen.get('toolchain')},"
                " and another compiler version may emit other instructions, so the difference"
                f" ({exc}) may not be your mistake. Install the versions above (or ask your"
                " instructor); when your lab is graded, the grader counts with its own toolchain"
            ) from None

    def visible_expected(self) -> list[Any]:
        """Each visible case's counts with the toolchain that computed them (the data the student
        edition ships: ``python -m grader expected`` writes this); the reference's where the answer
        side is here (it raises ToolchainMissing without the toolchain: no counts are made up)."""
        if self.has_answers():
            made_with = toolchain.versions()
            return [
                {"counts": self.reference(*c.args, **c.kwargs), "toolchain": made_with}
                for c in self.visible
            ]
        return super().visible_expected()

    def show(self) -> None:
        print(f"Exercise: {self.name}\n")
        print(textwrap.dedent(self.spec).strip())
        case = self.visible[0]
        try:
            first = self.visible_expected()[0]
        except toolchain.ToolchainMissing:
            first = _expected_data(_lab_of(self))[self.name][0]
        print(
            f"\nExample: {case.call_text(self.name)}  ->  {first['counts']}  (counted with"
            f" {first['toolchain']})"
        )


SASS_COUNTS = _ToolchainProblem(
    name="sass_counts",
    spec="""
        sass_counts(source, arch) -> {'FFMA': int, 'tensor_flops': int}: compile the CUDA C
        `source` for the Hopper target `arch` ('sm_90', the default when arch is not
        given, or 'sm_90a' for kernels that use wgmma) with gpucourse.toolchain
        (NVRTC → cubin → nvdisasm), and answer "did it use the tensor cores?": the number
        of FP32 fused multiply-adds (base opcode FFMA) in the SASS, and the operations of
        its tensor-core instructions — with your mma_flops. Count instructions, not text: a
        kernel's name (which may contain 'FFMA') is printed in the listing too.
        tensor_flops is mma_flops' static count (per issuing warp or warpgroup, each
        listed instruction once).
        `arch` goes to the compiler as given; it is not graded by itself: a function that always
        compiled for sm_90a would count the same (sm_90a is sm_90 plus its architecture-specific
        instructions: wgmma, setmaxnreg), while compiling a wgmma kernel for sm_90 fails.
        (Without NVIDIA's toolchain wheels the toolchain raises ToolchainMissing: let it propagate.)
    """,
    visible=[
        Case((_Src(ELEMENTWISE_CU), "sm_90")),
        Case((_Src(wmma_cu(1)), "sm_90")),
        Case((_Src(WGMMA_CU), "sm_90a")),
        Case((_Src(tensor_core_cu("fp8 wgmma")[0]), "sm_90a")),
        # a kernel named after what it does: its name is in the listing, an FFMA that is not one
        Case((_Src(unrolled_fma_cu(3, "FFMA_poly")), "sm_90")),
        # float, half2 and double FMAs side by side: HFMA2 (and HFMA2.MMA) and DFMA are not FFMA
        Case((_Src(mixed_fma_cu(3, 2, 2)), "sm_90")),
    ],
    compare=_compare_counts,
)

# -- measure — time two calls the way a GPU (or async JAX) needs -----------------------------------
# Graded by method, deterministically: the two functions are stand-ins that run on a virtual clock.
# A call costs a few microseconds of dispatch and returns at once; its work joins ONE in-order queue
# (as kernels on a CUDA stream, or computations on a JAX device, run one after another) and is done
# only when block_until_ready() is called on the result or on a later one; the first call also
# compiles (on the host); one timed run may be hit by a "load spike". The timer is handed the clock
# (``clock``), as labs 1 and 4's time_call are, and must read it for every measurement: the
# stand-ins' work shows on that clock only (as a GPU's work shows on its device timer, CUDA events,
# not on the host's clock), so a timer reading time.perf_counter — the course's gc.measure and
# gc.fusion.best_run, called, loaded a second time or pasted — measures microseconds of Python. Some
# cases' clock ticks every 2 ms for calls of 20–60 µs (lab 1's coarse clock, grader.virtual_clock):
# one call per timed run — the course's timer's loop, pointed at the clock given by a reloaded copy
# — reads 0 or a whole tick, so the timer batches calls until a batch spans many ticks. Every
# correct method on the given clock — batches of calls synchronized through their last result and
# divided by their size; timeit.Timer(..., timer=clock).autorange — measures the work's duration
# within the tick's share of a batch; each mistake gives a different, recognisable number. (The cell
# after exercise 9 uses your function on real work, with clock=time.perf_counter.)

from dataclasses import dataclass as _dataclass  # noqa: E402

from ..virtual_clock import (
    VirtualClock,
)  # noqa: E402  (the clock a stand-in workload advances, given to the timer)


class Pending:
    """The result of an asynchronous call: ready at ``done_at`` on the virtual clock. Waiting for it
    also means every call queued before it is done (one in-order queue)."""

    def __init__(self, clock: VirtualClock, done_at: float) -> None:
        self.clock, self.done_at = clock, done_at

    def block_until_ready(self) -> "Pending":
        self.clock.now = max(self.clock.now, self.done_at)
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Reading the value on the host waits for it, as ``np.asarray(jax_array)`` does
        (``jax.device_get`` calls this too): the other right way to synchronize."""
        self.block_until_ready()
        return np.zeros(4, dtype or np.float32)

    def __repr__(self) -> str:
        return (
            "<Pending result: jax.block_until_ready(it), np.asarray(it) or jax.device_get(it) waits"
            " for it>"
        )


DISPATCH = 10e-6  # seconds a call takes to return (enqueue only)


@_dataclass(eq=False, repr=False)
class Workload:
    """A stand-in for a jitted JAX function: returns after ``DISPATCH`` seconds, and its work
    (``seconds``) runs on the clock's one in-order queue, after everything queued before it; the
    first call also compiles, on the host (``compile_s``); the calls numbered in ``spikes``
    (1-based, counting after the first call) take ``spike_factor`` times longer, as when another
    process takes the machine.

    It also records how it was timed: ``timed`` counts the calls made after a clock read that
    followed its first call (the timed runs; a batch of N counts N), and ``leftover`` is True when
    that first clock read came while the first call's work was still queued (a warm-up not waited
    for: its work lands in the first timed run). ``reads_at_first`` and ``reads_at_second`` are the
    clock's reads when its first and its second call were made (:meth:`compile_timed`).

    A dataclass of its parameters: a case's workloads travel to a sandbox as these fields
    (grader/pipeline/wire.py) and the check rebuilds them fresh, on one new shared
    :class:`VirtualClock`, each time a timer gets them (:func:`fresh_workloads`); ``clock`` and the
    counters are not fields."""

    name: str
    seconds: float
    compile_s: float = 0.3
    spikes: tuple[int, ...] = ()
    spike_factor: float = 6.0
    # the shared clock's resolution (0: exact): a call shorter than a tick reads 0 or one tick
    tick_s: float = 0.0

    def __post_init__(self) -> None:
        self.spikes = tuple(self.spikes)
        self.clock: VirtualClock | None = None
        self.reset()

    def reset(self) -> None:
        self.calls = self.timed = 0
        self.first: Pending | None = None
        self.reads_at_first, self.reads_at_second, self.leftover = 0, 0, False

    def saw_read(self) -> None:
        """Called by the clock on each of the timer's reads: the first read after the first call
        decides ``leftover``."""
        if self.first is not None and self.clock.reads == self.reads_at_first + 1:
            self.leftover = self.clock.now < self.first.done_at

    def __call__(self, *args: Any) -> Pending:
        self.calls += 1
        if self.calls == 1:
            self.clock.now += self.compile_s  # tracing and compiling block the caller
        elif self.clock.reads > self.reads_at_first:
            self.timed += 1
        if self.calls == 2:
            self.reads_at_second = self.clock.reads
        self.clock.now += DISPATCH
        work = self.seconds * (self.spike_factor if self.calls - 1 in self.spikes else 1.0)
        # in order: after the work queued before it
        start = max(self.clock.now, self.clock.busy_until)
        self.clock.busy_until = start + work
        out = Pending(self.clock, self.clock.busy_until)
        if self.calls == 1:
            self.first, self.reads_at_first = out, self.clock.reads
        return out

    def __repr__(self) -> str:
        # not its seconds: that is what the timer must measure
        tick = f", on a clock that ticks every {self.tick_s * 1e3:g} ms" if self.tick_s else ""
        return (
            f"<{self.name}: a jitted function's stand-in, asynchronous, compiles on its first"
            f" call{tick}>"
        )


def compile_timed(w: dict[str, Any]) -> bool:
    """Whether an observed workload's first call (the one that compiles) sat inside a measurement:
    the clock was read before it, and twice or more between it and the second call — the reading
    that stopped that measurement and the one that started the next (lab 1's
    Workload.first_call_timed, told apart from the reads of the other workload timed before it: a
    waited-for warm-up is followed by one read, the start of the first timed run)."""
    return bool(w.get("reads_at_first")) and w.get("reads_at_second", 0) - w["reads_at_first"] >= 2


def fresh_workloads(*workloads: Workload) -> list[Workload]:
    """New workloads with the parameters of ``workloads`` (their fields: what a case carries, as
    data or not), sharing one new :class:`VirtualClock`: no call made, no clock read."""
    # lab 1's coarse clock where ticked
    clock = VirtualClock(max(getattr(w, "tick_s", 0.0) for w in workloads))
    clock.workloads = [
        Workload(
            w.name, w.seconds, w.compile_s, w.spikes, w.spike_factor, getattr(w, "tick_s", 0.0)
        )
        for w in workloads
    ]
    for w in clock.workloads:
        w.clock = clock
    return clock.workloads


def _workloads(slow_s: float, fast_s: float, **kw: Any) -> tuple[Workload, Workload, Any]:
    """A case's arguments: the two stand-ins (on one shared clock) and the argument they are called
    with."""
    return (*fresh_workloads(Workload("slow", slow_s, **kw), Workload("fast", fast_s, **kw)),
            np.zeros(4, np.float32))


class _MeasureProblem(ObservedProblem):
    """Runs the student's timer with the virtual clock as its ``clock`` (:meth:`observe`, where the
    student's code runs) and judges its call counts, clock reads and both times (±10 %) against the
    true times (:meth:`judge`: in the grader for hidden cases, their true times being the answer
    side's)."""

    def passed_note(self, notes: list[str | None], seconds: float) -> str:
        return (
            " (warm-up, synchronization and a robust statistic checked on stand-in workloads with a"
            " virtual clock)"
        )

    def observe(
        self, fn: Callable[..., Any], case: Case, limit: float | None = None
    ) -> dict[str, Any]:
        """What the judge reads, as plain data (runs where the student's code runs): the case's
        workloads rebuilt fresh on one shared virtual clock, the timer called on them with that
        clock as ``clock`` (answers locked, time limit), then its result, the clock's reads, and per
        workload its calls, timed calls, the clock reads before its first call and whether its
        warm-up's work was left over. An error of ``fn`` propagates."""
        slow, fast = fresh_workloads(*case.args[:2])
        run = Case((slow, fast, *case.args[2:]), {**case.kwargs, "clock": slow.clock})
        got = self.call(fn, run, limit)
        return {
            "result": got,
            "reads": slow.clock.reads,
            "workloads": [
                {
                    "name": w.name,
                    "calls": w.calls,
                    "timed": w.timed,
                    "reads_at_first": w.reads_at_first,
                    "reads_at_second": w.reads_at_second,
                    "leftover": w.leftover,
                }
                for w in (slow, fast)
            ],
        }

    def judge(self, seen: Any, expected: tuple[float, float], case: Case) -> None:
        """Raise CheckFailure unless the observation ``seen`` (:meth:`observe`'s) shows a right
        method and times within 10 % of ``expected`` (the true seconds per call of slow and
        fast)."""
        import math as _math

        what = case.call_text(self.name)
        counters = seen.get("workloads") if isinstance(seen, dict) else None
        if not (
            isinstance(counters, list)
            and len(counters) == 2
            and all(isinstance(c, dict) for c in counters)
            and isinstance(seen.get("reads"), int)
        ):
            raise CheckFailure(f"{what}: no observation of your timer came back")
        t_slow, t_fast = expect_tuple(what, seen.get("result"), "t_slow, t_fast")
        for name, t in (("t_slow", t_slow), ("t_fast", t_fast)):
            if (
                not isinstance(t, (int, float, np.integer, np.floating))
                or not _math.isfinite(t)
                or t < 0
            ):
                raise CheckFailure(
                    f"{what} → {name}: expected seconds (a finite number ≥ 0), got {t!r}"
                )
        slow, fast = ({**c, "name": w.name} for c, w in zip(counters, case.args[:2]))
        if slow["calls"] < 4 or fast["calls"] < 4:
            raise CheckFailure(
                f"{what}: called slow {slow['calls']} and fast {fast['calls']} times; call each at "
                "least 4 times: one warm-up call (it compiles), then 3 or more timed runs"
            )
        if seen["reads"] == 0:
            raise CheckFailure(
                f"{what}: your function never read the clock it was given, and the work shows on"
                " that clock only (not your synchronization): take every reading with clock() (t0"
                " = clock() ... clock() - t0, or timeit with timer=clock) — not"
                " time.perf_counter() or a course timer (gc.measure reads time.perf_counter), as"
                " on a GPU you time the device's work with its own clock (CUDA events)"
            )
        for w in (slow, fast):
            if w["leftover"]:
                raise CheckFailure(
                    f"{what}: when you first read the clock after {w['name']}'s warm-up call, its"
                    " work was still running (the call returns before its work is done): that"
                    " leftover work lands in your first timed run. Wait for the warm-up's result"
                    " (jax.block_until_ready) before you time"
                )
        for w in (slow, fast):
            if w["timed"] == 0 and w["reads_at_first"] > 0:
                raise CheckFailure(
                    f"{what}: the first call of {w['name']} (it compiles) is inside your timing,"
                    " and no call after it is timed on its own: warm up first — call it once and"
                    " wait for the result — then time 3 or more runs"
                )
            if w["timed"] < 3:
                raise CheckFailure(
                    f"{what}: you timed {w['timed']} call{'s' * (w['timed'] != 1)} of {w['name']}"
                    " (calls made after you first read the clock following its warm-up); time at"
                    " least 3 runs and keep the best (or the median): one run alone may be the one"
                    " another process slowed down"
                )
        tick = max(getattr(w, "tick_s", 0.0) for w in case.args[:2])
        for name, w, stand_in, t, true in (
            ("t_slow", slow, case.args[0], t_slow, expected[0]),
            ("t_fast", fast, case.args[1], t_fast, expected[1]),
        ):
            # a call waited for before the next is made also pays its dispatch (DISPATCH: its work
            # starts only then): right, and noticeable only on the coarse clock's calls of tens of
            # µs
            if 0.9 * true <= t <= 1.1 * true + DISPATCH:
                continue
            # no batch grew (all its calls' work is under 0.2 s) and the compile was inside the
            # first measurement: that one looked long enough (lab 1's time_call says the same)
            unwarmed = tick > true and compile_timed(w) and w["calls"] * true < 0.2
            compile_s = getattr(stand_in, "compile_s", 0.0)
            hint = (
                f"the first call compiles (about {compile_s:g} s): timed inside your first batch,"
                " it made that batch look long enough, so your batches stayed at one call each,"
                f" which this clock (it ticks every {tick * 1e3:g} ms) reads as 0 or one tick. Call"
                f" {w['name']} once and wait for it (jax.block_until_ready) before you size or time"
                " any batch"
                if unwarmed
                else
                f"this clock ticks every {tick * 1e3:g} ms and one call's work is far shorter:"
                " timed alone, a call reads as 0 or as one whole tick, however carefully you wait"
                " for it. Time BATCHES of calls that span many ticks (grow the batch until one"
                " takes at least 0.2 s on clock, as timeit's autorange does), wait for each"
                " batch's last result and divide by the batch size"
                if tick > true
                else (
                    "far too short: that is the time to *enqueue* the call — wait for the result"
                    " with jax.block_until_ready before stopping the clock (when you time a batch"
                    " of calls, wait for the last one and divide by the number of calls)"
                    if t < 0.2 * true
                    else (
                        "too long: is the first call (compilation) in your timing, is work left"
                        " over from an earlier call (one not waited for) in it, or did one slow run"
                        " pull a mean up — or is it a single run that another process slowed down?"
                        " Warm up and wait, then keep the best (or the median) of 3 or more runs"
                    )
                )
            )
            raise CheckFailure(
                f"{what} → {name}: expected {true * 1e3:g} ms per call, you measured "
                f"{t * 1e3:.4g} ms — {hint}"
            )


MEASURE = _MeasureProblem(
    name="measure_times",
    spec="""
        measure_times(slow, fast, *args, clock) -> (t_slow, t_fast): seconds of work per call of
        slow(*args) and of fast(*args). Like jitted JAX functions (and CUDA kernel launches), the
        calls return BEFORE the work is done (asynchronous dispatch): the work runs later, in call
        order, one call after another; and the first call compiles. clock() returns the time in
        seconds: read it — and no other clock — for every measurement (the checker passes a clock
        that only the calls' work moves, as a GPU's work shows on its device timer, not on the
        host's; on real work you pass clock=time.perf_counter). The course's timers (gc.measure,
        gc.fusion.best_run) read time.perf_counter: they measure the wrong clock here. Time with
        clock() (or timeit with timer=clock) and:
          - warm up: call each function once before timing (the first call compiles), and wait for
            its result (its work would otherwise still be running when your first timed run starts);
          - synchronize: jax.block_until_ready(result) (or read it: np.asarray(result)) before you
            stop the clock (timing a batch of N calls, waiting for the last result and dividing by N
            is right too: the work runs in order);
          - repeat: several timed runs (or batches) each — 3 or more is safe — and keep the best
            (or the median): any run may be slowed down by another process (never sped up: the
            minimum is the call's time, the median is robust too), a mean lets it pull your number
            up, and one run alone (the last, or a single run after more warm-ups) may be the slow
            one;
          - batch: a clock has a resolution, and some checks hand you one that ticks every 2 ms
            while a call's work takes tens of microseconds: timed alone, a call reads as 0 or as one
            whole tick, however carefully you wait. Let each timed run be a BATCH of calls that
            spans many ticks — grow it (1, 2, 4, ... calls; timeit's autorange: 1, 2, 5, 10, ...)
            until one batch takes at least 0.2 s on clock — wait for its last result and divide by
            the batch size. You do not need to know the tick.
        The checker hands you stand-ins that run on the virtual clock it gives you, so it knows the
        right answer exactly: within 10 % (plus the 10 µs a call takes to dispatch, when you wait
        for each call before the next). Failure modes: no synchronization (far too short: the
        enqueue), no warm-up (the compile is timed, or makes your first batch look long enough),
        an un-waited warm-up (its work is still running when you first read the clock), the mean
        or a single run (a slowed run), another clock (no reading of clock), one call per timed run
        on the coarse clock (0, or a whole tick).
        The cell after exercise 9 runs your function on real work on this machine
        (clock=time.perf_counter).
    """,
    visible=[Case(_workloads(0.040, 0.020)), Case(_workloads(40e-6, 25e-6, tick_s=2e-3))],
    compare=lambda *a: None,
)

# -- design — up to which size fusion saves a given factor -----------------------------------------

TERMS = ("dispatch", "memory", "page faults")


def _compare_rows(what: str, got: Any, expected: tuple[int, str], case: Case) -> None:
    rows, dominant = expect_tuple(what, got, "rows, dominant")
    expect_int(
        f"{what} → rows",
        rows,
        expected[0],
        "ratio(m) falls as m grows: find where ratio(m) = target — both times are linear in m"
        " (dispatch, bytes AND page faults: leave none out), so that is one linear equation — and"
        " take the largest whole m on the right side of it",
    )
    expect_choice(
        f"{what} → dominant term of the unfused time at m = rows",
        dominant,
        expected[1],
        TERMS,
        "compare the three terms of the UNFUSED time at m = rows, with calls_u dispatches:"
        " calls_u·dispatch, rows·row_bytes_u/bandwidth, rows·row_faults_u·fault",
    )


TIME_MODEL = Problem(
    name="fusion_payoff_rows",
    spec="""
        fusion_payoff_rows(calls, row_bytes, row_faults, machine, target) -> (rows, dominant)
        A chain of elementwise ops runs on arrays of m rows. calls, row_bytes, row_faults:
        (unfused, fused) pairs — kernels dispatched per evaluation, bytes moved PER ROW
        (XLA's cost analysis, divided by m), minor page faults PER ROW. machine:
        {"dispatch": seconds per call, "bandwidth": bytes per second,
        "fault": seconds per page fault}. §6.3's model of one side on m rows:
            time(m) = calls·dispatch + m·row_bytes/bandwidth + m·row_faults·fault
        The terms add: the model assumes each call's dispatch waits for the previous call's work (a
        synchronous loop — a host that waits for each result before it dispatches the next, as a
        Python loop that reads each result does). JAX dispatches asynchronously (§0 step 6, §6.3):
        where dispatches run ahead of the work they would overlap it and fusion would pay over fewer
        rows; the cases keep the additive model for every machine.
        Fusion's gain ratio(m) = time_unfused(m) / time_fused(m) starts near calls_u/calls_f (small
        arrays: dispatch) and falls towards the per-row ratio (large arrays: bytes and faults). The
        cases guarantee ratio(1) ≥ target > that large-m limit.
        Return rows = the LARGEST m ≥ 1 with ratio(m) ≥ target (up to which size fusion saves at
        least `target`×), and dominant = the largest of the three terms of the UNFUSED time at
        m = rows: "dispatch", "memory" or "page faults" (the cases never tie). Use the model to
        answer a design question: rows may be tens or hundreds of millions, so solve for m (or
        search by halving); trying m one by one runs out of time.
    """,
    visible=[
        Case(
            (
                (3, 1),
                (36864, 20480),
                (0, 0),
                {"dispatch": 5e-6, "bandwidth": 3e12, "fault": 0.0},
                2.0,
            )
        ),
        # a CPU whose fresh intermediates fault: leaving the faults out answers 34 rows, not 25
        Case(
            (
                (3, 1),
                (36864, 20480),
                (9, 4),
                {"dispatch": 50e-6, "bandwidth": 20e9, "fault": 0.25e-6},
                2.5,
            )
        ),
    ],
    compare=_compare_rows,
)

problems = {
    p.name: p
    for p in (
        BIAS_GELU,
        ROWS_WITHIN,
        BREAKING_OP,
        FIX_SCALE,
        KERNEL,
        MMA_FLOPS,
        SASS_COUNTS,
        MEASURE,
        TIME_MODEL,
    )
}
