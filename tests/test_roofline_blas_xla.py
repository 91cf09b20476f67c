"""Section 1's helpers: the roofline model, the counted triple loop, XLA introspection, the plot style."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from gpucourse.roofline import Roofline


def test_roofline_ridge_and_attainable():
    r = Roofline("toy", peak_flops=100e9, bandwidth=10e9)
    assert r.ridge == 10.0
    assert r.attainable(1.0) == pytest.approx(10e9)
    assert r.attainable(1000.0) == pytest.approx(100e9)
    assert r.bound(9.99) == "memory" and r.bound(10.0) == "compute"
    assert np.allclose(r.attainable([0.5, 20]), [5e9, 100e9])


def test_measured_roofs_are_plausible():
    bw, t = gc.roofline.measure_bandwidth(nbytes=8 * 2**20, repeat=3)
    assert 1e8 < bw < 1e13 and t.median > 0
    peak, _ = gc.roofline.measure_peak_flops(n=256, repeat=3)
    assert 1e8 < peak < 1e15


def test_triple_loop_counts_match_the_formulas():
    rng = np.random.default_rng(1)
    for m, k, n in [(1, 1, 1), (3, 4, 5), (7, 2, 3)]:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        c, counts = gc.blas.triple_loop_matmul(a, b)
        assert np.allclose(c, a @ b)
        assert counts.flops == 2 * m * n * k and counts.loads == 2 * m * n * k and counts.stores == m * n
        assert counts.distinct_elements == m * k + k * n + m * n
    with pytest.raises(ValueError, match="inner dimensions"):
        gc.blas.triple_loop_matmul(np.ones((2, 3)), np.ones((2, 3)))


def test_xla_reports_one_fusion_and_bytes_for_the_article_chain():
    import jax.numpy as jnp

    x = jnp.ones(1000, jnp.float32)
    c = gc.xla.compiled(lambda x, y, z: jnp.maximum(x * y + z, 0.0), x, x, x)
    assert c.fusions == ["kLoop"]
    assert c.bytes_accessed == 4 * 1000 * 4
    assert c.argument_bytes == 3 * 4000 and c.output_bytes == 4000
    assert "fusion(" in c.excerpt() and "metadata" not in c.excerpt()


def test_xla_sees_a_matmul_and_its_epilogue():
    import jax.numpy as jnp

    a = jnp.ones((32, 32), jnp.float32)
    c = gc.xla.compiled(lambda a, b: jnp.tanh(a @ b), a, a)
    assert c.flops >= 2 * 32**3
    g = c.gemm  # whatever this backend made of it: a dot, a library call or a GEMM fusion
    assert (g.lhs_contracting, g.rhs_contracting) == ((1,), (0,)) and g.how in (
        "dot", "library call", "library fusion", "generated fusion")


def test_plot_axes_require_units():
    ax = gc.plotting.axes("size [bytes]", "time [µs]", "t")
    assert ax.get_xlabel() == "size [bytes]"
    with pytest.raises(ValueError, match="unit"):
        gc.plotting.axes("size", "time [µs]")
    import matplotlib.pyplot as plt

    plt.close("all")


def test_roofline_plot_draws_roofs_and_points():
    import matplotlib.pyplot as plt

    t = gc.measure(lambda: None, repeat=3)
    point = gc.roofline.OpPoint("noop", flops=1e6, bytes=1e6, timing=t)
    ax = gc.plotting.axes("x [-]", "y [-]")
    gc.roofline.plot(ax, [Roofline("toy", 1e11, 1e10)], [point])
    assert len(ax.lines) >= 2 and len(ax.collections) == 1
    assert ax.get_xlabel().startswith("arithmetic intensity")
    plt.close("all")


def test_published_figures_have_sources():
    for acc in gc.hardware.ACCELERATORS.values():
        assert acc.source and acc.memory_bandwidth > 1e12
    assert gc.hardware.H100_SXM.per_sm["register_file_bytes"] == 256 * 1024
