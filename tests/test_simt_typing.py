"""The executor computes in the types numba-cuda infers (issue 22: "float32 as numba-cuda types it").

Ground truth: ``numba.cuda.compile_ptx(f, sig, device=True)`` returns ``(ptx, resty)``, the result type numba-cuda
infers for a device function; it runs without a GPU (an explicit ``cc``). Each corpus expression is compiled that
way and run through the executor inside a kernel (operands loaded from arrays of the given dtypes, or passed as
Python scalar arguments); the executor's result must have numba-cuda's dtype, and its value must be the value
numba computes in those types (numba's CPU ``njit`` of the same function, which shares numba's scalar typing and
lowering: bit for bit, within one ulp for libm/libdevice functions, which no two libraries round alike).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import textwrap

import numpy as np
import pytest

from gpucourse.simt import instrument, run

numba = pytest.importorskip("numba")
ncuda = pytest.importorskip("numba.cuda")
from numba import types as nt  # noqa: E402

# operand kinds: a NumPy dtype loaded from a 1-element array, or a Python scalar argument ("pyf", "pyi")
NT = {"f32": nt.float32, "f64": nt.float64, "i16": nt.int16, "i32": nt.int32, "i64": nt.int64, "u8": nt.uint8,
      "u32": nt.uint32, "pyf": nt.float64, "pyi": nt.int64}
DT = {"f32": np.float32, "f64": np.float64, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
      "u32": np.uint32}
VALUES = {"f32": (0.1, 3.3), "f64": (0.1, 3.3), "i16": (300, -7), "i32": (70000, 70001), "i64": (2**40 + 3, 7),
          "u8": (200, 100), "u32": (3, 5), "pyf": (0.1, 3.3), "pyi": (7, 3)}

# (id, body assigning r from a and b, operand kinds, tolerance in ulps)
CASES = [
    # float32 with float64: literals, arguments, locals
    ("f32_times_float_literal", "r = a * 0.1", ("f32", "f32"), 0),
    ("f32_div_int_literal", "r = a / 3", ("f32", "f32"), 0),
    ("f32_times_f64", "r = a * b", ("f32", "f64"), 0),
    ("f32_times_float_argument", "r = a * b", ("f32", "pyf"), 0),
    ("acc_float_literal_plus_f32", "acc = 0.0\nacc += a\nacc += b\nr = acc", ("f32", "f32"), 0),
    ("acc_np_float32_plus_f32", "acc = np.float32(0)\nacc += a\nacc += b\nr = acc", ("f32", "f32"), 0),
    # a conditional's two sides get one type (round-2 read): float32 with a float or int literal is float64
    # math functions: a float32 argument keeps float32, an int64 (Python int) exponent does not (round-3 read)
    ("math_erf_f32", "r = math.erf(a) + b", ("f32", "f32"), 1),
    ("math_erfc_f32", "r = math.erfc(a) * b", ("f32", "f32"), 1),
    ("math_pow_f32_int_literal", "r = math.pow(a, 2) + b", ("f32", "f32"), 0),
    ("math_pow_f32_f32", "r = math.pow(a, b)", ("f32", "f32"), 1),
    ("math_degrees_f32", "r = math.degrees(a) + b", ("f32", "f32"), 1),
    ("ifexp_f32_else_float_literal", "r = a * b if a > 0 else 0.0", ("f32", "f32"), 0),
    ("ifexp_float_literal_else_f32", "r = 0.0 if a < 0 else a + b", ("f32", "f32"), 0),
    ("ifexp_f32_else_int_literal", "r = a * b if a > 0 else 0", ("f32", "f32"), 0),
    ("ifexp_f32_else_np_float32", "r = a * b if a > 0 else np.float32(0)", ("f32", "f32"), 0),
    ("ifexp_i32_else_int_literal", "r = a * b if a > 0 else 0", ("i32", "i32"), 0),
    # the other side a float64 that is not a bare literal (a reviewer's `else 0.0` variants, lab 5's tiled_matmul)
    ("ifexp_f32_else_negative_zero", "r = a * b if a > 0 else -0.0", ("f32", "f32"), 0),
    ("ifexp_f32_else_float_of_int", "r = a * b if a > 0 else float(0)", ("f32", "f32"), 0),
    ("ifexp_f32_else_float_local", "z = 0.0\nr = a * b if a > 0 else z", ("f32", "f32"), 0),
    ("ifexp_f32_else_f32_local", "z = np.float32(0)\nr = a * b if a > 0 else z", ("f32", "f32"), 0),
    ("ifexp_i32_else_int_local", "z = 0\nr = a * b if a < 0 else z", ("i32", "i32"), 0),
    ("if_else_f32_or_float_literal", "if a > 0:\n    r = a * b\nelse:\n    r = 0.0", ("f32", "f32"), 0),
    ("if_else_float_literal_or_f32", "if a < 0:\n    r = 0.0\nelse:\n    r = a + b", ("f32", "f32"), 0),
    # a literal before an `if` that reassigns the name on one side only: merged (a phi) at the if's end
    ("literal_then_if_f32", "r = 0.0\nif a > 0:\n    r = a * b", ("f32", "f32"), 0),
    ("int_literal_then_if_f32", "r = 0\nif a > 0:\n    r = a * b", ("f32", "f32"), 0),
    ("literal_then_if_else_f32", "r = 0.0\nif a > 0:\n    r = a * b\nelse:\n    r = a", ("f32", "f32"), 0),
    ("literal_then_if_np_float32", "r = np.float32(0)\nif a > 0:\n    r = a * b", ("f32", "f32"), 0),
    # a branch not taken at run time still types the variable (round-7 m4): r is float64 after the if
    ("f32_then_untaken_if_literal", "r = a * b\nif a < 0:\n    r = 0.0", ("f32", "f32"), 0),
    ("f32_then_untaken_else_literal", "if a > 0:\n    r = a * b\nelse:\n    r = 0.0", ("f32", "f32"), 0),
    ("f32_plus_f32", "r = a + b", ("f32", "f32"), 0),
    ("f32_plus_int_literal", "r = a + 1", ("f32", "f32"), 0),
    ("f32_plus_i32", "r = a + b", ("f32", "i32"), 0),
    ("f32_plus_i16", "r = a + b", ("f32", "i16"), 0),
    ("f32_plus_i64", "r = a + b", ("f32", "i64"), 0),
    ("f32_minus_int_argument", "r = a - b", ("f32", "pyi"), 0),
    ("f32_times_np_float32_literal", "r = a * np.float32(2.5)", ("f32", "f32"), 0),
    ("f32_fma_with_float_literal", "r = a * b + 0.5", ("f32", "f32"), 0),
    ("f32_product_times_np_float32", "r = (a * b) * np.float32(0.5)", ("f32", "f32"), 0),
    ("np_float32_cast_of_f64", "r = np.float32(b) * a", ("f32", "f64"), 0),
    ("float_builtin_of_f32", "r = float(a) * b", ("f32", "f32"), 0),
    ("i32_times_f32", "r = a * b", ("i32", "f32"), 0),
    ("u8_times_f32", "r = a * b", ("u8", "f32"), 0),
    # integers: numba promotes to 64 bits
    ("i32_times_i32", "r = a * b", ("i32", "i32"), 0),
    ("u32_minus_u32", "r = a - b", ("u32", "u32"), 0),
    ("i32_shift_left", "r = a << 20", ("i32", "i32"), 0),
    ("u32_shift_right_u32", "r = b >> a", ("u32", "u32"), 0),
    ("u32_and_i32", "r = a & b", ("u32", "i32"), 0),
    ("i32_xor_i32", "r = a ^ b", ("i32", "i32"), 0),
    ("u32_invert", "r = ~a", ("u32", "u32"), 0),
    ("i32_negate", "r = -a", ("i32", "i32"), 0),
    ("u8_negate", "r = -a", ("u8", "u8"), 0),
    ("i32_true_divide", "r = a / b", ("i32", "i32"), 0),
    ("i32_floor_divide_i16", "r = a // b", ("i32", "i16"), 0),
    ("i16_modulo_i16", "r = a % b", ("i16", "i16"), 0),
    ("acc_int_literal_plus_i32", "acc = 0\nacc += a\nacc += b\nr = acc", ("i32", "i32"), 0),
    ("np_int32_casts_added", "r = np.int32(a) + np.int32(b)", ("i64", "i64"), 0),
    ("abs_i16", "r = abs(b)", ("i16", "i16"), 0),
    # math, **, //, %, unary, builtins
    ("exp_f32", "r = math.exp(a)", ("f32", "f32"), 1),
    ("exp_f64", "r = math.exp(a)", ("f64", "f64"), 1),
    ("sqrt_i32", "r = math.sqrt(a)", ("i32", "i32"), 0),
    ("sin_of_promoted_f32", "r = math.sin(a * 0.5)", ("f32", "f32"), 1),
    ("pow_f32_f32", "r = math.pow(a, b)", ("f32", "f32"), 1),
    ("pow_f32_float_literal", "r = math.pow(a, 2.0)", ("f32", "f32"), 0),
    ("floor_f32", "r = math.floor(b)", ("f32", "f32"), 0),
    ("trunc_f32", "r = math.trunc(b)", ("f32", "f32"), 0),
    ("f32_power_int_literal", "r = a ** 3", ("f32", "f32"), 0),
    ("f32_power_f32", "r = a ** b", ("f32", "f32"), 1),
    ("f32_power_half", "r = a ** 0.5", ("f32", "f32"), 0),
    ("f32_floordiv_f32", "r = b // a", ("f32", "f32"), 0),
    ("f32_floordiv_int_literal", "r = b // 2", ("f32", "f32"), 0),
    ("f32_mod_float_literal", "r = b % 3.0", ("f32", "f32"), 0),
    ("f32_negate", "r = -a", ("f32", "f32"), 0),
    ("abs_f32", "r = abs(-b)", ("f32", "f32"), 0),
    ("min_f32_f32", "r = min(a, b)", ("f32", "f32"), 0),
    ("max_f32_float_literal", "r = max(a, 1.0)", ("f32", "f32"), 0),
    ("max_i32_f32", "r = max(a, b)", ("i32", "f32"), 0),
    ("max_u32_i32", "r = max(a, b)", ("u32", "i32"), 0),
    # comparisons: in the promoted type
    ("f32_equals_float_literal", "r = a == 0.1", ("f32", "f32"), 0),
    ("f32_less_than_f64", "r = b < 3.3", ("f32", "f32"), 0),
    ("round_f32", "r = round(b)", ("f32", "f32"), 0),
]


def _module_source() -> str:
    out = ["import math", "import numpy as np", "SINK = []", ""]
    for name, body, kinds, _ in CASES:
        loads = []
        for var, kind in zip("ab", kinds):
            loads.append(f"{var} = {var.upper()}" if kind.startswith("py") else f"{var} = {var.upper()}[0]")
        out.append(f"def k_{name}(A, B):")
        out.extend("    " + line for line in loads + body.splitlines() + ["SINK.append(r)"])
        out.append("")
        out.append(f"def d_{name}(a, b):")
        out.extend("    " + line for line in body.splitlines() + ["return r"])
        out.append("")
    return "\n".join(out)


@contextlib.contextmanager
def _sink_allowed(sink: list):
    """Let the kernels hand their result to the test through the list ``sink`` (numba-cuda refuses a global list in a
    kernel, and so does the executor: this test's channel only, passed through as itself)."""
    original = instrument.replacement
    instrument.replacement = lambda v, *a, **k: v if v is sink else original(v, *a, **k)
    try:
        yield
    finally:
        instrument.replacement = original


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("typing") / "typing_corpus_kernels.py"
    path.write_text(_module_source())
    spec = importlib.util.spec_from_file_location("typing_corpus_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def _operands(kinds):
    host, scalars = [], []
    for pos, kind in enumerate(kinds):
        v = VALUES[kind][pos]
        if kind == "pyf":
            host.append(float(v))
            scalars.append(float(v))
        elif kind == "pyi":
            host.append(int(v))
            scalars.append(int(v))
        else:
            host.append(np.array([v], dtype=DT[kind]))
            scalars.append(DT[kind](v))
    return host, scalars


def _dtype_of(v) -> np.dtype:
    if isinstance(getattr(v, "dtype", None), np.dtype):  # NumPy scalars, and the executor's float32 values
        return v.dtype
    if isinstance(v, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(v, np.generic):
        return v.dtype
    if isinstance(v, int):
        return np.dtype(np.int64)
    if isinstance(v, float):
        return np.dtype(np.float64)
    raise AssertionError(f"unexpected result {v!r} ({type(v).__name__})")


def _numba_dtype(resty) -> np.dtype:
    return np.dtype(np.bool_) if str(resty) == "bool" else np.dtype(str(resty))


def _ulps(x, y, dt: np.dtype) -> int:
    ix = np.array([x], dtype=dt).view(f"i{dt.itemsize}")[0]
    iy = np.array([y], dtype=dt).view(f"i{dt.itemsize}")[0]
    return abs(int(ix) - int(iy))


@pytest.mark.parametrize("name,body,kinds,tol", CASES, ids=[c[0] for c in CASES])
def test_executor_computes_in_numba_cudas_types(corpus, name, body, kinds, tol):
    sig = tuple(NT[k] for k in kinds)
    dev = getattr(corpus, f"d_{name}")
    _, resty = ncuda.compile_ptx(dev, sig, device=True, cc=(8, 0))
    want_dt = _numba_dtype(resty)

    host, scalars = _operands(kinds)
    corpus.SINK.clear()
    with _sink_allowed(corpus.SINK):
        run(getattr(corpus, f"k_{name}"), 1, 1, *host)
    (got,) = corpus.SINK
    assert _dtype_of(got) == want_dt, f"{body!r} on {kinds}: executor gives {_dtype_of(got)}, numba-cuda {resty}"

    expected = numba.njit(resty(*sig))(dev)(*scalars)  # numba's own arithmetic in those types (CPU)
    got_v, want_v = want_dt.type(got), want_dt.type(expected)
    if want_dt.kind == "f":
        assert _ulps(got_v, want_v, want_dt) <= tol, f"{body!r}: executor {got_v!r}, numba {want_v!r}"
    else:
        assert got_v == want_v, f"{body!r}: executor {got_v!r}, numba {want_v!r}"


def test_the_corpus_expressions_differ_from_numpys_rules():
    """The corpus is not vacuous: NumPy's NEP 50 rules give a different dtype for the classic traps."""
    x = np.float32(0.1)
    assert (x * 0.1).dtype == np.float32 and (np.int32(7) * np.int32(7)).dtype == np.int32


# -- float64 arithmetic made from float32 values is reported ---------------------------------------------------------

SRC_REPORT = textwrap.dedent('''
    import numpy as np

    def acc_float_literal(x, out):
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i]
        out[0] = acc

    def acc_float32(x, out):
        acc = np.float32(0)
        for i in range(x.shape[0]):
            acc += x[i]
        out[0] = acc

    def load_or_literal(x, out):
        v = 0.0
        if x.shape[0] > 0:
            v = x[0]
        out[0] = v

    def scale_by_literal(x, out):
        i = 0
        out[i] = x[i] * 0.5
''')


def _line(text: str) -> int:
    return next(n for n, line in enumerate(SRC_REPORT.splitlines(), 1) if line.strip() == text)


@pytest.fixture(scope="module")
def report_kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("typing") / "typing_report_kernels.py"
    path.write_text(SRC_REPORT)
    spec = importlib.util.spec_from_file_location("typing_report_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def test_acc_from_a_float_literal_reports_float64_at_the_plus_equals_line(report_kernels):
    x = (np.arange(8, dtype=np.float32) + np.float32(0.1))
    out = np.zeros(1, np.float32)
    rep = run(report_kernels.acc_float_literal, 1, 1, x, out)
    lines = [op.line for op in rep.float64_ops]
    assert lines == [_line("acc += x[i]")], rep.float64_ops
    assert "acc += x[i]" in rep.float64_ops[0].where and rep.float64_ops[0].count >= 1
    assert "float64" in rep.summary()
    assert rep.to_data().float64_ops == tuple(str(o) for o in rep.float64_ops)  # graders read it from plain data too
    assert out[0] == np.float32(sum(float(v) for v in x))  # summed in float64, rounded once at the store


def test_acc_from_np_float32_reports_nothing(report_kernels):
    x = (np.arange(8, dtype=np.float32) + np.float32(0.1))
    out = np.zeros(1, np.float32)
    rep = run(report_kernels.acc_float32, 1, 1, x, out)
    assert rep.float64_ops == []
    acc = np.float32(0)
    for v in x:
        acc = np.float32(acc + v)
    assert out[0] == acc


def test_float_literal_times_float32_is_reported(report_kernels):
    x = np.ones(1, np.float32)
    out = np.zeros(1, np.float32)
    rep = run(report_kernels.scale_by_literal, 1, 1, x, out)
    assert [op.line for op in rep.float64_ops] == [_line("out[i] = x[i] * 0.5")]


def test_a_float32_load_joined_with_an_earlier_float_literal_is_a_conversion_not_reported(report_kernels):
    """`v = 0.0; if c: v = x[0]`: numba-cuda's phi at the if's end types v as float64 (cvt.f64.f32 on the load,
    cvt.rn.f32.f64 at the store), as `v = x[0] if c else 0.0`: v is a float64, but only converted, not computed with:
    no float64 arithmetic to report (the SASS test below: _k_join_store)."""
    x, out = np.ones(1, np.float32), np.zeros(1, np.float32)
    rep = run(report_kernels.load_or_literal, 1, 1, x, out)
    assert rep.float64_ops == [], rep.float64_ops
    assert out[0] == 1


# -- the remaining differences ---------------------------------------------------------------------------------------

def test_syncthreads_count_truncates_its_predicate_to_int32():
    from gpucourse.simt import cuda

    @cuda.jit
    def count(out):
        i = cuda.threadIdx.x
        c = cuda.syncthreads_count(2**32 if i == 0 else 1)  # int32(int32): 2**32 truncates to 0, false
        a = cuda.syncthreads_and(2**32)
        o = cuda.syncthreads_or(2**32 + 1)
        if i == 0:
            out[0], out[1], out[2] = c, a, o
            out[3] = c * 2**31  # the result is an int32: arithmetic on it is int64, no wrap

    out = np.zeros(4, np.int64)
    run(count, 1, 4, out)
    assert list(out) == [3, 0, 1, 3 * 2**31]


def test_math_trunc_floor_ceil_on_float32_give_float32_as_numba_cuda_types_them():
    import math

    def dev(a):
        return math.trunc(a)

    _, resty = ncuda.compile_ptx(dev, (nt.float32,), device=True, cc=(8, 0))
    assert str(resty) == "float32"  # numba-cuda 0.30 compiles math.trunc(float32): a float32, not an int
    from gpucourse.simt.gpumath import GPU_MATH
    for fn, want in (("trunc", -2.0), ("floor", -3.0), ("ceil", -2.0)):
        r = getattr(GPU_MATH, fn)(np.float32(-2.5))
        assert r.dtype == np.float32 and r == want
        assert getattr(GPU_MATH, fn)(-2.5).dtype == np.float64
    assert GPU_MATH.floor(np.float32(np.inf)) == np.inf  # no OverflowError: libdevice's floorf


# -- the float64 budget against the machine code: what the executor reports is what ptxas emits ----------------

cuda = ncuda  # the kernels below are numba-cuda's (their source is compiled as written)


def _k_add_int(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + 10


def _k_add_f32(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] + np.float32(10)


def _k_axpb_args(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + b


def _k_axpb_f32(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = np.float32(a) * x[i] + np.float32(b)


def _k_sum_literal(x, out):
    acc = 0.0
    for j in range(x.size):
        acc += x[j]
    out[0] = acc


def _k_sum_f32(x, out):
    acc = np.float32(0)
    for j in range(x.size):
        acc += x[j]
    out[0] = acc


def _k_join_store(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * x[i] if i < x.size - 1 else 0.0  # a conversion of the product, then back


def _k_join_then_add(x, out):
    i = cuda.grid(1)
    if i < out.size:
        v = x[i] if i < x.size - 1 else 0.0
        out[i] = v + x[0]  # a float64 with a float32: DADD


def _k_cast_axpb(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = np.float64(x[i]) * a + b  # an explicit cast: FP64 from here on (§5 read, round 9)


def _k_shared_f64_pairs(x, out):
    s = cuda.shared.array(32, np.float64)  # float32 values kept in a float64 shared array
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[t] + s[t ^ 1]


def _k_sum_local_f64(x, out):
    acc = cuda.local.array(2, np.float64)  # a float64 accumulator array (§8 read: accepted before)
    acc[0] = np.float32(0)
    for j in range(x.size):
        acc[0] = acc[0] * np.float32(0.5) + x[j]
    out[0] = acc[0]


def _k_sum_local_f32(x, out):
    acc = cuda.local.array(2, np.float32)
    acc[0] = np.float32(0)
    for j in range(x.size):
        acc[0] = acc[0] * np.float32(0.5) + x[j]
    out[0] = acc[0]


@pytest.mark.slow
def test_the_float64_report_against_the_sass_fp64_instructions():
    """Issue 22: what the executor reports as float64 arithmetic against what numba-cuda, NVVM and ptxas make of the
    kernel for sm_90 (DADD/DMUL/DFMA counted in the SASS, the ground truth). A float64 accumulator (a variable or a
    float64 local array) and a Python float argument times a float32 are FP64 in both; float32 code is FP64 in neither; and one case the executor's typing
    over-reports: a single operation on a float32 and an exact constant, rounded straight back to float32
    (`a[i] + 10`), which NVVM folds into one FADD — why such a report is a note, not a failure, outside lab 5's
    accumulators (grader/kernels.py, KernelProblem.float32_only)."""
    from gpucourse import simt, toolchain

    if not toolchain.available():
        pytest.skip(f"NVIDIA's compiler wheels are missing: {toolchain.describe()}")
    arr = "float32[::1]"
    # (kernel, signature, executor reports float64, SASS has FP64)
    kernels = [(_k_add_int, f"void({arr}, {arr})", True, False), (_k_add_f32, f"void({arr}, {arr})", False, False),
               (_k_axpb_args, f"void({arr}, {arr}, float64, float64)", True, True),
               (_k_axpb_f32, f"void({arr}, {arr}, float64, float64)", False, False),
               (_k_sum_literal, f"void({arr}, {arr})", True, True), (_k_sum_f32, f"void({arr}, {arr})", False, False),
               (_k_sum_local_f64, f"void({arr}, {arr})", True, True),
               (_k_join_store, f"void({arr}, {arr})", False, False),
               (_k_join_then_add, f"void({arr}, {arr})", True, True),
               (_k_cast_axpb, f"void({arr}, {arr}, float64, float64)", True, True),
               (_k_shared_f64_pairs, f"void({arr}, {arr})", True, True),
               (_k_sum_local_f32, f"void({arr}, {arr})", False, False)]
    ptxs = toolchain.numba_ptx_many([(k, sig) for k, sig, *_ in kernels])
    x = np.arange(40, dtype=np.float32)
    for (k, sig, reported, fp64), ptx in zip(kernels, ptxs):
        ops = toolchain.sass_of_ptx(ptx, "sm_90").opcodes()
        in_sass = ops["DADD"] + ops["DMUL"] + ops["DFMA"]
        args = (x, np.zeros_like(x)) + ((2.0, 1.0) if "float64" in sig else ())  # Python floats, as lab 5 passes
        report = simt.run(k, 2, 32, *args)
        assert (in_sass > 0) == fp64, (k.__name__, dict(ops))
        assert bool(report.float64_ops) == reported, (k.__name__, report.float64_ops)
