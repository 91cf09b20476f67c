"""Float intrinsics with the GPU's rounding (review of the executor, finding 5).

``cuda.fma`` compiles to llvm.fma → PTX ``fma.rn.f32/f64``: a * b + c computed exactly and rounded once (PTX ISA,
"Floating Point Instructions: fma"). Computing a * b in float64 and then adding c rounds twice: the classic
error-free TwoProduct, ``fma(a, b, -(a * b))``, then gives 0 instead of the rounding error of the product.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

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
