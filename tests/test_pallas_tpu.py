"""A pallas_call's VMEM per grid step and HBM traffic, read from its own BlockSpecs."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

from gpucourse import pallas_tpu  # noqa: E402


def _kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def _matmul(x, y, bm, bn, bk, x_buffers=None):
    m, k = x.shape
    n = y.shape[1]
    extra = {} if x_buffers is None else {"pipeline_mode": pl.Buffered(x_buffers)}
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk), **extra),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), interpret=True)(x, y)


S = jax.ShapeDtypeStruct


@pytest.mark.parametrize("b", [32, 128, 512])
def test_square_blocks_match_the_blocked_matmul_formulas(b):
    m = n = k = 2048
    p = pallas_tpu.plan(lambda x, y: _matmul(x, y, b, b, b), S((m, k), jnp.float32), S((k, n), jnp.float32))
    assert p.grid == (m // b, n // b, k // b)
    assert p.vmem_bytes == 2 * 3 * b * b * 4  # x, y and out blocks, each double-buffered
    assert p.hbm_bytes == 4 * (m * k * (n // b) + k * n * (m // b) + m * n)


def test_buffer_count_and_unchanged_blocks_are_respected():
    # bk = k: x's block stays the same across j, so Pallas copies it once per i; x asks for 3 buffers
    p = pallas_tpu.plan(lambda x, y: _matmul(x, y, 32, 16, 96, x_buffers=3), S((64, 96), jnp.float32),
                        S((96, 32), jnp.float32))
    x, y, out = p.operands
    assert (x.role, x.buffers, x.changes) == ("in", 3, 2)
    assert (y.buffers, y.changes, out.role, out.changes) == (2, 4, "out", 4)
    assert p.vmem_bytes == 4 * (3 * 32 * 96 + 2 * 96 * 16 + 2 * 32 * 16)


def test_plan_counts_like_a_brute_force_walk_of_the_grid():
    m, n, k, bm, bn, bk = 48, 32, 40, 16, 8, 8
    p = pallas_tpu.plan(lambda x, y: _matmul(x, y, bm, bn, bk), S((m, k), jnp.float32), S((k, n), jnp.float32))
    walk = [(i, j, kk) for i in range(m // bm) for j in range(n // bn) for kk in range(k // bk)]
    for op, index in zip(p.operands, (lambda i, j, kk: (i, kk), lambda i, j, kk: (kk, j), lambda i, j, kk: (i, j))):
        blocks = [index(*g) for g in walk]
        assert op.changes == 1 + sum(a != b for a, b in zip(blocks[1:], blocks[:-1]))
    out = _matmul(np.ones((m, k), np.float32), np.ones((k, n), np.float32), bm, bn, bk)
    assert np.allclose(np.asarray(out), k)


def test_no_pallas_call_is_an_error():
    with pytest.raises(ValueError, match="no pl.pallas_call"):
        pallas_tpu.plan(lambda x: x + 1, S((4,), jnp.float32))
