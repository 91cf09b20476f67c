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


def _matmul_order(x, y, bm, bn, bk, order="ijk", interpret=True):
    """The blocked matmul with its grid axes in another order ('kij': the reduction axis first)."""
    m, k = x.shape
    n = y.shape[1]
    sizes = {"i": m // bm, "j": n // bn, "k": k // bk}
    pos = {a: order.index(a) for a in "ijk"}

    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(pos["k"]) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def spec(shape, pick):
        return pl.BlockSpec(shape, lambda *g: tuple(g[pos[a]] for a in pick))

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=tuple(sizes[a] for a in order),
        in_specs=[spec((bm, bk), "ik"), spec((bk, bn), "kj")], out_specs=spec((bm, bn), "ij"),
        interpret=interpret)(x, y)


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
    assert (x.role, x.buffers, x.changes, x.distinct) == ("in", 3, 2, 2)
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


@pytest.mark.parametrize("order, ok", [("ijk", True), ("jik", True), ("kij", False), ("ikj", False)])
def test_output_blocks_must_be_visited_in_one_run(order, ok):
    """An output block visited in one unbroken run of grid steps: changes == distinct blocks. Reduction axis last
    ('ijk', 'jik'): yes; reduction first or in the middle: every output block is left and visited again."""
    m, n, k, bm, bn, bk = 32, 24, 48, 16, 8, 16
    p = pallas_tpu.plan(lambda x, y: _matmul_order(x, y, bm, bn, bk, order), S((m, k), jnp.float32),
                        S((k, n), jnp.float32))
    out = p.operands[2]
    assert out.distinct == (m // bm) * (n // bn)
    assert out.consecutive == ok == p.outputs_consecutive
    assert (out.changes == out.distinct) if ok else (out.changes == p.steps)  # revisits: a new block every step
    # plain interpret mode computes the right numbers either way: it cannot tell
    x = np.arange(m * k, dtype=np.float32).reshape(m, k) / 100
    y = np.ones((k, n), np.float32)
    assert np.allclose(np.asarray(_matmul_order(x, y, bm, bn, bk, order)), x @ y, rtol=1e-5)


@pytest.mark.parametrize("order", ["ijk", "kij"])
def test_consecutive_outputs_agree_with_jax_tpu_interpreter(order):
    """Independent ground truth: JAX's TPU interpret mode (pltpu.InterpretParams) simulates the TPU pipeline and
    refuses a kernel that revisits an output block; plan() must say the same from the BlockSpecs alone."""
    pltpu = pytest.importorskip("jax.experimental.pallas.tpu")
    if not hasattr(pltpu, "InterpretParams"):
        pytest.skip("this JAX has no TPU interpret mode")
    m, n, k, bm, bn, bk = 32, 16, 32, 16, 8, 16
    x, y = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
    p = pallas_tpu.plan(lambda a, b: _matmul_order(a, b, bm, bn, bk, order), x, y)
    try:
        out = _matmul_order(x, y, bm, bn, bk, order, interpret=pltpu.InterpretParams())
        jax.block_until_ready(out)
        refused = None
    except Exception as exc:  # jax.errors.JaxRuntimeError wrapping the interpreter's RuntimeError
        refused = str(exc)
    assert p.outputs_consecutive == (refused is None), refused
    if refused is not None:
        assert "Revisited block" in refused
    else:
        assert np.allclose(np.asarray(out), k)


def test_reach_is_how_far_the_index_maps_go_and_overreach_names_the_first_operand_past_its_array():
    """Block indices reach (max index + 1) · block per dimension; element offsets (i * bm) reach past the array, and
    interpret mode clamps them silently: the plan says which operand and how far."""
    m, n, k, bm, bn, bk = 32, 16, 48, 16, 8, 16
    args = S((m, k), jnp.float32), S((k, n), jnp.float32)
    right = pallas_tpu.plan(lambda x, y: _matmul(x, y, bm, bn, bk), *args)
    assert [op.reach for op in right.operands] == [(m, k), (k, n), (m, n)]
    assert all(op.inside for op in right.operands) and pallas_tpu.overreach(right, ("x", "y", "out")) == ""

    def offsets(x, y):
        return pl.pallas_call(
            _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i * bm, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), interpret=True)(x, y)

    wrong = pallas_tpu.plan(offsets, *args)
    assert wrong.operands[0].reach == ((m // bm - 1) * bm * bm + bm, k) and not wrong.operands[0].inside
    assert pallas_tpu.overreach(wrong, ("x", "y", "out")).startswith(
        f"the index map of x asks for blocks up to element ({(m // bm - 1) * bm * bm + bm}, {k}) of an array of"
        f" shape ({m}, {k})")


def test_outer_primitives_are_what_is_computed_around_the_kernel():
    x, y = S((32, 48), jnp.float32), S((48, 16), jnp.float32)
    assert pallas_tpu.outer_primitives(lambda a, b: _matmul(a, b, 16, 8, 16), x, y) == set()
    assert "max" in pallas_tpu.outer_primitives(lambda a, b: jnp.maximum(_matmul(a, b, 16, 8, 16), 0.0), x, y)


def test_no_pallas_call_is_an_error():
    with pytest.raises(ValueError, match="no pl.pallas_call"):
        pallas_tpu.plan(lambda x: x + 1, S((4,), jnp.float32))
