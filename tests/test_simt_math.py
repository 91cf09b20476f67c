"""Float intrinsics with the GPU's rounding (review of the executor, finding 5).

``cuda.fma`` compiles to llvm.fma → PTX ``fma.rn.f32/f64``: a * b + c computed exactly and rounded once (PTX ISA,
"Floating Point Instructions: fma"). Computing a * b in float64 and then adding c rounds twice: the classic
error-free TwoProduct, ``fma(a, b, -(a * b))``, then gives 0 instead of the rounding error of the product.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gpucourse import simt

cuda = simt.cuda


@cuda.jit
def product_error(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        p = a[i] * b[i]
        out[i] = cuda.fma(a[i], b[i], -p)  # the exact rounding error of the product (TwoProduct)


def test_fma_gives_the_rounding_error_of_a_float64_product():
    a = np.array([1 + 2.0**-30, 3.0, 0.1])
    b = np.array([1 + 2.0**-29, 5.0, 0.1])
    out = np.zeros(3)
    simt.run(product_error, 1, 32, a, b, out)
    assert out[0] == 2.0**-59  # (1 + 2^-30)(1 + 2^-29) = 1 + 3·2^-30 + 2^-59: the last term is rounded off
    assert out[1] == 0.0  # 15 is exact
    assert out[2] == float(Fraction(0.1) * Fraction(0.1) - Fraction(0.1 * 0.1))  # exact product minus rounded


@cuda.jit
def fused(a, b, c, out):
    out[0] = cuda.fma(a[0], b[0], c[0])


def test_float32_fma_rounds_once_not_through_float64():
    # a·b + c = 1 + 2^-24 + 2^-70 exactly: just above the midpoint between float32 1 and 1 + 2^-23, so it rounds up.
    # Through float64 it becomes 1 + 2^-24, the midpoint itself, which rounds to even: 1.0 (two roundings).
    a = np.array([2.0**-12 * (1 + 2.0**-23)], np.float32)
    b = np.array([-(2.0**-12) * (1 - 2.0**-23)], np.float32)
    c = np.array([1 + 2.0**-23], np.float32)
    out = np.zeros(1, np.float32)
    simt.run(fused, 1, 1, a, b, c, out)
    assert out[0] == np.float32(1 + 2.0**-23)
    assert np.float32(float(a[0]) * float(b[0]) + float(c[0])) == np.float32(1.0)  # the double rounding avoided


@cuda.jit
def cube_roots(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = cuda.cbrt(x[i])


def test_cbrt_is_exact_on_perfect_cubes():
    for dtype in (np.float32, np.float64):
        x = np.array([27.0, 64.0, -8.0, 1000.0, 0.0, 2.0], dtype)
        out = np.zeros_like(x)
        simt.run(cube_roots, 1, 8, x, out)
        np.testing.assert_array_equal(out[:5], np.array([3.0, 4.0, -2.0, 10.0, 0.0], dtype))
        assert abs(float(out[5]) - 2 ** (1 / 3)) <= float(np.spacing(dtype(1.26)))


# -- math functions: the GPU's IEEE special values, not CPython's exceptions ---------------------------------------

import math  # noqa: E402

from gpucourse.simt import gpumath  # noqa: E402


@cuda.jit
def exp_of(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.exp(x[i])


def test_exp_overflows_to_inf_as_on_a_gpu_not_an_exception():
    """CPython's math.exp(1000.0) raises OverflowError; libdevice's __nv_exp and __nv_expf return inf (IEEE 754:
    overflow rounds to inf in round-to-nearest). numba-cuda types math.exp(float32) as float32 (cudamath.py:
    float32(float32), i.e. expf), so a float32 overflows past ln(FLT_MAX) ≈ 88.72 where float64 does not."""
    for dtype, big in ((np.float64, 710.0), (np.float32, 89.0)):
        x = np.array([1.0, big, 1000.0, -1000.0], dtype)
        out = np.zeros_like(x)
        r = simt.run(exp_of, 1, 32, x, out)
        assert r.ok, r.problems()
        assert out[0] == dtype(math.e) and np.isinf(out[1]) and np.isinf(out[2]) and out[3] == 0.0
    with pytest.raises(OverflowError):
        math.exp(710.0)  # what the executor used to pass on
    assert math.exp(89.0) > float(np.finfo(np.float32).max) and math.exp(89.0) < 1e39  # finite in float64 only


@cuda.jit
def specials(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = math.log(v)
        out[i, 1] = math.sqrt(v)
        out[i, 2] = math.cosh(v)
        out[i, 3] = math.pow(v, 400.0)
        out[i, 4] = math.sin(v)


def test_domain_errors_give_nan_or_inf_as_libdevice_does():
    """log(0) = -inf, log(-1) = sqrt(-1) = nan, cosh(1000) = inf, pow(10, 400) = inf, sin(inf) = nan (CUDA Math API,
    special cases; CPython raises ValueError or OverflowError for each)."""
    x = np.array([0.0, -1.0, 1000.0, 10.0, np.inf])
    out = np.zeros((5, 5))
    r = simt.run(specials, 1, 32, x, out)
    assert r.ok, r.problems()
    assert out[0, 0] == -np.inf and np.isnan(out[1, 0]) and np.isnan(out[1, 1])
    assert out[2, 2] == np.inf and out[3, 3] == np.inf and np.isnan(out[4, 4])
    assert out[3, 0] == math.log(10.0) and out[3, 1] == math.sqrt(10.0)  # ordinary values unchanged


def test_result_types_follow_numba_cuda_signatures():
    m = gpumath.GPU_MATH
    # a float32 result is the executor's float32 kernel value (gpucourse.simt.numbatypes.F32): dtype float32
    assert m.exp(np.float32(1.0)).dtype == np.float32 and isinstance(m.exp(1.0), np.float64)
    assert isinstance(m.exp(np.int64(1)), np.float64) and m.pow(np.float32(2.0), np.int32(3)).dtype == np.float32
    # a Python int exponent is an int64 to numba-cuda: pow(float32, int64) takes the float64 signature
    # (tests/test_simt_typing.py's math_pow_f32_int_literal, judged by compile_ptx)
    assert m.pow(np.float32(2.0), 3).dtype == np.float64
    assert m.gamma(0.0) == np.inf and np.isnan(m.gamma(-2.0)) and m.lgamma(-2.0) == np.inf
    assert m.gamma(200.0) == np.inf and m.ldexp(1.0, 2000) == np.inf
    assert m.floor(2.5) == 2 and m.pi == math.pi  # the rest is math's own
    assert gpumath.replace(math) is m and gpumath.replace(math.exp) is m.exp and gpumath.replace(np.exp) is np.exp


@cuda.jit
def untyped_shared(x, out):
    s = cuda.shared.array(32, None)
    s[cuda.threadIdx.x] = x[cuda.threadIdx.x]
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]


def test_a_shared_array_without_an_element_type_does_not_compile():
    """np.dtype(None) is float64, but numba-cuda's cuda.shared.array(shape, None) fails typing: no dtype, no kernel."""
    with pytest.raises(simt.KernelError, match="needs an element type"):
        simt.run(untyped_shared, 1, 32, np.ones(32), np.zeros(32))
