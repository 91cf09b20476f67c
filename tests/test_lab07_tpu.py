"""Lab 7's checkers: the references pass, and the plausible wrong models each exercise is about fail — visible or
hidden — with a message that says what was expected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.checks import CheckFailure
from grader.answers import lab07_tpu as answers  # the instructor's side: references, hidden-case generators
from grader.labs import lab07_tpu as lab


def _fails(name, fn):
    """The wrong answer fails the visible or the hidden cases."""
    p = lab.problems[name]
    with pytest.raises(CheckFailure):
        p.check(fn)
        p.check(fn, hidden=True)


def array_ok(M, K, N, pes):
    from gpucourse import systolic

    shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]
    cycles = [systolic.TiledGemm(M, K, N, r, c).cycles for r, c in shapes]
    return shapes[cycles.index(min(cycles))]


def test_best_array_accepts_the_model_and_rejects_its_neighbours():
    from gpucourse import systolic

    lab.problems["best_array"].check(array_ok)
    lab.problems["best_array"].check(array_ok, hidden=True)

    def square(M, K, N, pes):  # the square array whatever the workload
        side = 2 ** (pes.bit_length() // 2)
        return side, pes // side

    def fewest_tiles(M, K, N, pes):  # padding only: forgets the weight load and the fill and drain
        shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]
        return min(shapes, key=lambda s: -(-K // s[0]) * -(-N // s[1]))

    def most_rows_on_ties(M, K, N, pes):
        shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())][::-1]
        cycles = [systolic.TiledGemm(M, K, N, r, c).cycles for r, c in shapes]
        return shapes[cycles.index(min(cycles))]

    def no_weight_load(M, K, N, pes):  # tiles every M cycles: the weight load never limits
        shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]
        cost = [(-(-K // r) * -(-N // c) - 1) * M + M + r + c - 2 for r, c in shapes]
        return shapes[cost.index(min(cost))]

    def single_buffered(M, K, N, pes):  # one weight register per PE
        shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]
        cycles = [systolic.TiledGemm(M, K, N, r, c, buffers=1).cycles for r, c in shapes]
        return shapes[cycles.index(min(cycles))]

    for wrong in (square, fewest_tiles, most_rows_on_ties, no_weight_load, single_buffered):
        _fails("best_array", wrong)
    # the hidden cases reach the ends of the candidates and a tie at the optimum
    cases = [c.args for c in lab.problems["best_array"].hidden_cases()]
    best = [array_ok(*c) for c in cases]
    assert any(r == 1 for r, _ in best) and any(c == 1 for _, c in best) and any(r == c for r, c in best)
    assert any(r < c for r, c in best) and any(r > c > 1 for r, c in best)
    assert any(systolic.TiledGemm(M, K, N, r, c).cycles == systolic.TiledGemm(M, K, N, c, r).cycles and r < c
               for (M, K, N, _), (r, c) in zip(cases, best))


def slice_ok(a, b, dims, chip):
    wraps = [all(d % 4 == 0 for d in dims)] * len(dims) if chip in ("TPU v4", "TPU v5p") else [d == 16 for d in dims]
    return sum(min(abs(x - y), d - abs(x - y)) if w else abs(x - y) for x, y, d, w in zip(a, b, dims, wraps))


def test_slice_hops_needs_the_wraparound_rules():
    lab.problems["slice_hops"].check(slice_ok)
    lab.problems["slice_hops"].check(slice_ok, hidden=True)

    def always_torus(a, b, dims, chip):
        return sum(min(abs(x - y), d - abs(x - y)) for x, y, d in zip(a, b, dims))

    def never_wraps(a, b, dims, chip):
        return sum(abs(x - y) for x, y in zip(a, b))

    def per_axis_multiple_of_4(a, b, dims, chip):  # v4/v5p rule applied axis by axis (2×2×4 would wrap on z)
        wraps = [d % 4 == 0 for d in dims] if chip in ("TPU v4", "TPU v5p") else [d == 16 for d in dims]
        return sum(min(abs(x - y), d - abs(x - y)) if w else abs(x - y) for x, y, d, w in zip(a, b, dims, wraps))

    def both_rules_by_cubes(a, b, dims, chip):  # v5e/v6e treated like v4: 4×4 would wrap
        w = all(d % 4 == 0 for d in dims)
        return sum(min(abs(x - y), d - abs(x - y)) if w else abs(x - y) for x, y, d in zip(a, b, dims))

    def big_slices_are_tori(a, b, dims, chip):  # "64 chips or more is a torus": right on every listed v4/v5p shape
        n = 1
        for d in dims:
            n *= d
        wraps = [n >= 64] * len(dims) if chip in ("TPU v4", "TPU v5p") else [d == 16 for d in dims]
        return sum(min(abs(x - y), d - abs(x - y)) if w else abs(x - y) for x, y, d, w in zip(a, b, dims, wraps))

    for wrong in (always_torus, never_wraps, per_axis_multiple_of_4, both_rules_by_cubes, big_slices_are_tori):
        _fails("slice_hops", wrong)
    with pytest.raises(CheckFailure, match="expected 11, got 3"):  # v5p 2×4×8 corner to corner: a mesh, 1+3+7 hops
        lab.problems["slice_hops"].check(big_slices_are_tori, hidden=True)


def test_slice_hops_says_which_axes_of_the_failed_slice_wrap():
    """Review m4: a wrong wraparound rule is told which axes of the slice it failed on wrap (the answer side's rule,
    carried by the case: written down for the visible ones, which must agree with it)."""
    def always_torus(a, b, dims, chip):
        return sum(min(abs(x - y), d - abs(x - y)) for x, y, d in zip(a, b, dims))

    def never_wraps(a, b, dims, chip):
        return sum(abs(x - y) for x, y in zip(a, b))

    with pytest.raises(CheckFailure, match="in this 2×4×4 TPU v5p slice none of its axes wraps"):
        lab.problems["slice_hops"].check(always_torus)
    with pytest.raises(CheckFailure, match="in this 4×4×8 TPU v4 slice every axis wraps"):
        lab.problems["slice_hops"].check(never_wraps)
    with pytest.raises(CheckFailure, match="slice (every axis wraps|axis 1 wraps, the other does not)"):
        lab.problems["slice_hops"].check(never_wraps, hidden=True)
    for case in lab.problems["slice_hops"].visible + lab.problems["slice_hops"].hidden_cases():
        a, b, dims, chip = case.args
        hypothetical = (chip, tuple(dims)) in lab.HYPOTHETICAL
        assert dims.wraps == answers.wraparound(answers.tpu.TPU_CHIPS[chip], dims, hypothetical), (chip, dims)
    v5e = lab.problems["slice_hops"].visible[2]
    with pytest.raises(CheckFailure, match="in this 8×16 TPU v5e slice axis 1 wraps, the other does not"):
        lab.problems["slice_hops"].compared(0, 1, v5e)


def test_slice_hops_grades_listed_or_declared_hypothetical_slices_only():
    from gpucourse import tpu

    for case in lab.problems["slice_hops"].hidden_cases() + lab.problems["slice_hops"].visible:
        a, b, dims, chip = case.args
        c = tpu.TPU_CHIPS[chip]
        assert c.listed(dims) or (chip, tuple(dims)) in lab.HYPOTHETICAL, (chip, dims)
        assert not c.torus_disputed(dims), (chip, dims)
        c.check_slice(dims, hypothetical=(chip, tuple(dims)) in lab.HYPOTHETICAL)  # within the largest slice


def _fused(order, bias_each_step=False):
    """The fused dense layer (f32 scratch accumulator, epilogue at the last k step) with its grid in another order:
    'ijk' (reduction last) or 'kij' (reduction first); ``bias_each_step``: the bias added into the accumulator at
    every k step."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def fused_dense(x, w, b, bm, bn, bk):
        m, k = x.shape
        n = w.shape[1]
        sizes = {"i": m // bm, "j": n // bn, "k": k // bk}
        pos = {a: order.index(a) for a in "ijk"}

        def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
            @pl.when(pl.program_id(pos["k"]) == 0)
            def _():
                acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

            acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)
            if bias_each_step:
                acc_ref[...] += b_ref[...].astype(jnp.float32)
                o_ref[...] = jnp.maximum(acc_ref[...], 0.0).astype(o_ref.dtype)
            else:  # every step: the last one's value stays
                o_ref[...] = jnp.maximum(acc_ref[...] + b_ref[...].astype(jnp.float32), 0.0).astype(o_ref.dtype)

        def spec(shape, pick):
            return pl.BlockSpec(shape, lambda *g: tuple(g[pos[a]] if a in pos else 0 for a in pick))

        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
                              grid=tuple(sizes[a] for a in order),
                              in_specs=[spec((bm, bk), "ik"), spec((bk, bn), "kj"), spec((1, bn), "0j")],
                              out_specs=spec((bm, bn), "ij"),
                              scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)], interpret=True)(x, w, b)

    return fused_dense


def _overwrites_each_k_step(x, w, b, bm, bn, bk):  # keeps only the last k block's product
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    m, k = x.shape
    n = w.shape[1]

    def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
        acc_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)
        o_ref[...] = jnp.maximum(acc_ref[...] + b_ref[...].astype(jnp.float32), 0.0).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)], interpret=True)(x, w, b)


def _wrong_fused(marker):
    """The wrong answer of tests/wrong_answers/lab07_tpu.py whose source holds ``marker``, run as a notebook cell
    would."""
    import importlib.util

    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    path = Path(__file__).parent / "wrong_answers" / "lab07_tpu.py"
    spec = importlib.util.spec_from_file_location("wrong_lab07", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (source,) = [c for c in module.WRONG["fused_dense"] if all(m in c for m in marker)]
    namespace = {"jax": jax, "jnp": jnp, "pl": pl, "pltpu": pltpu}
    exec(compile(source, "<student cell>", "exec"), namespace)
    return namespace["fused_dense"]


def _scratch_unused():
    """Declares the f32 scratch, but accumulates into the bf16 output."""
    return _wrong_fused(("o_ref[...] += jnp.dot", "scratch_shapes"))


def test_fused_dense_visible_case_catches_an_unused_scratch():
    """A kernel that declares the f32 scratch but accumulates in the bf16 output passes the structure check; the
    visible case whose first k block gives ±256 and the seven others less than half a bf16 unit each must fail it,
    naming the mistake, and so must the hidden cases."""
    p = lab.problems["fused_dense"]
    p.after(_scratch_unused(), False)  # the structure alone cannot tell
    with pytest.raises(CheckFailure, match=r"expected -?2[56]\d(\.\d+)?, got -?25\d.*accumulate in the f32 scratch, "
                                           r"write o_ref once at the last k step"):
        p.check(_scratch_unused())
    with pytest.raises(CheckFailure, match="accumulate in the f32 scratch"):
        p.check(_scratch_unused(), hidden=True)


def test_fused_dense_element_offsets_in_the_index_maps_are_named_where_the_numbers_fail():
    """Index maps returning element offsets (i * bm) instead of block indices: interpret mode clamps each copy to the
    array's edge, so the numbers are wrong before the structure check runs. The failure names the index map (visible
    and hidden), and so does the structure check itself."""
    p = lab.problems["fused_dense"]
    fn = _wrong_fused(("lambda i, j, kk: (i * bm, kk * bk)",))
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match=r"wrong.*Hint: the index map of x asks for blocks up to element"
                                               r".*counts blocks, not elements"):
            p.check(fn, hidden=hidden)
        with pytest.raises(CheckFailure, match="the index map of x asks for blocks"):
            p.after(fn, hidden)


def test_fused_dense_needs_an_f32_accumulator_a_fused_epilogue_and_legal_blocks():
    """Accumulating into the bf16 output (no scratch) fails the structure check; the bias and relu as XLA ops after
    the kernel fail it too; the epilogue run at every k step fails on the numbers. Every graded block is legal on a
    TPU: last two dimensions multiples of (8, 128), or the whole array dimension."""
    p = lab.problems["fused_dense"]
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="scratch"):
            p.after(_wrong_fused(("o_ref[...] += jnp.dot", "def kernel(x_ref, w_ref, b_ref, o_ref):")), hidden)
        with pytest.raises(CheckFailure, match="outside the kernel your function computes"):
            p.after(_wrong_fused(("return jnp.maximum(acc + b",)), hidden)
    with pytest.raises(CheckFailure, match="wrong"):
        p.check(_wrong_fused(("acc_ref[...] = jnp.maximum(acc_ref[...] + jnp.dot",)))
    for c in p.visible + p.hidden_cases():
        x, w, b, bm, bn, bk = c.args
        (m, k), n = x.shape, w.shape[1]
        assert b.shape == (1, n)
        for block, full in (((bm, bk), (m, k)), ((bk, bn), (k, n)), ((1, bn), (1, n)), ((bm, bn), (m, n))):
            assert (block[0] % 8 == 0 or block[0] == full[0]) and (block[1] % 128 == 0 or block[1] == full[1])
        assert str(x.dtype) == str(w.dtype) == str(b.dtype) == "bfloat16"


def test_fused_dense_epilogue_mistakes_are_named():
    """The bias added at every k step, or the relu applied to every partial sum, each alone: the message says so."""
    p = lab.problems["fused_dense"]
    for case in p.visible[:1] + p.hidden_cases()[:2]:
        with pytest.raises(CheckFailure, match="bias once per k block"):
            p.compare("x", p.call(_fused("ijk", bias_each_step=True), case), p.reference(*case.args), case)


def test_fused_dense_must_visit_each_output_block_in_one_run():
    """Reduction axis first (grid (k, i, j), zeroing at program_id(0) == 0): on a TPU every output block would be
    left and revisited with a stale buffer. It must fail, and the structure check says why; the kernel with the
    reduction last passes."""
    p = lab.problems["fused_dense"]
    p.check(_fused("ijk"))
    p.check(_fused("ijk"), hidden=True)
    _fails("fused_dense", _overwrites_each_k_step)
    for order in ("kij", "ikj"):  # with a scratch accumulator shared by the grid, interpret mode gets wrong numbers too
        with pytest.raises(CheckFailure):
            p.check(_fused(order))
        with pytest.raises(CheckFailure):
            p.check(_fused(order), hidden=True)
        for hidden in (False, True):  # and the structure check says why a TPU would
            with pytest.raises(CheckFailure, match="consecutive"):
                p.after(_fused(order), hidden)


def collective_ok(kind, nbytes, p, wrap, link_bandwidth, latency):
    if p <= 1:
        return 0.0
    ring = wrap and p >= 3
    rounds = p // 2 if ring else p - 1
    if kind == "all-to-all":
        hops = (p * p / 8 if p % 2 == 0 else (p * p - 1) / 8) if ring else (p // 2) * ((p + 1) // 2)
        busiest = hops * nbytes / p**2
    else:
        busiest = (p - 1) / p * nbytes / (2 if ring else 1)
        if kind == "all-reduce":
            rounds, busiest = 2 * rounds, 2 * busiest
    return rounds * latency + busiest / link_bandwidth


def test_collective_seconds_accepts_the_model_and_rejects_its_neighbours():
    lab.problems["collective_seconds"].check(collective_ok)
    lab.problems["collective_seconds"].check(collective_ok, hidden=True)

    def one_direction(kind, nbytes, p, wrap, bw, lat):  # the textbook ring: only one direction of each link
        return collective_ok(kind, nbytes, p, False, bw, lat) if wrap and p >= 3 else collective_ok(kind, nbytes, p, wrap, bw, lat)

    def two_chip_ring(kind, nbytes, p, wrap, bw, lat):  # a 2-chip axis is no ring
        return collective_ok(kind, nbytes, p, wrap, 2 * bw, lat) if wrap and p == 2 else collective_ok(kind, nbytes, p, wrap, bw, lat)

    def a2a_like_gather(kind, nbytes, p, wrap, bw, lat):
        return collective_ok("all-gather" if kind == "all-to-all" else kind, nbytes, p, wrap, bw, lat)

    def odd_ring_like_even(kind, nbytes, p, wrap, bw, lat):  # p²/8 for every p
        if kind == "all-to-all" and wrap and p >= 3 and p % 2:
            return (p // 2) * lat + p * p / 8 * nbytes / p**2 / bw
        return collective_ok(kind, nbytes, p, wrap, bw, lat)

    def allreduce_once(kind, nbytes, p, wrap, bw, lat):  # all-reduce priced like one all-gather
        return collective_ok("all-gather" if kind == "all-reduce" else kind, nbytes, p, wrap, bw, lat)

    for wrong in (one_direction, two_chip_ring, a2a_like_gather, odd_ring_like_even, allreduce_once):
        _fails("collective_seconds", wrong)
    # the hidden cases price a wrapped 2-chip axis (two_chip_ring fails on them): the spec says that case is
    # hypothetical (no slice in the course has one; physically it would be two links) and priced as a line
    spec = " ".join(lab.problems["collective_seconds"].spec.split())
    assert "p = 2 with wrap is hypothetical" in spec and "priced as a line" in spec


def test_reference_agrees_with_the_message_level_simulation():
    """The lab's reference is the answer side's model; the model is checked against real arrays in
    test_interconnect, and here once more on the lab's own visible cases scaled down to simulable sizes."""
    from grader.answers import ici as ic

    for kind, p, wrap in (("all-gather", 16, True), ("all-reduce", 4, False), ("all-to-all", 8, True)):
        n = 8 if kind == "all-gather" else 8 * p
        bufs = [np.ones(n) for _ in range(p)]
        V = 8 * n * (p if kind in ("all-gather", "all-to-all") else 1)
        trace = ic.simulate_collective(kind, bufs, (p,), wrap)
        assert trace.seconds(1e-6, 50e9) == pytest.approx(lab.problems["collective_seconds"].reference(
            kind, V, p, wrap, 50e9, 1e-6))


@pytest.mark.parametrize("seed", range(20))
def test_hidden_cases_hold_every_boundary_family_for_any_student(seed):
    """Per-student seeds vary the cases, never the families (issue 13): every array class, a stream 2+ rows shorter
    than the array, non-square Pallas operands, one configuration of every sharding class, and on the torus a tie
    and a one-hop wraparound."""
    rng = np.random.default_rng(seed)
    shapes = [c.args[1].shape for c in answers._systolic_cases(rng)]  # W: (K, N)
    assert {(K == 1, N == 1, K == N, K > N) for K, N in shapes} >= {
        (True, True, True, False), (True, False, False, False), (False, True, False, True),
        (False, False, True, False), (False, False, False, False), (False, False, False, True)}
    assert any(A.shape[0] <= W.shape[0] - 2 for A, W in (c.args for c in answers._systolic_cases(
        np.random.default_rng(seed))))
    fused = [c.args for c in answers._fused_cases(np.random.default_rng(seed))]
    for x, w, b, *_ in fused:
        assert x.shape[0] != x.shape[1] and w.shape[0] != w.shape[1]
    assert any(x.shape[1] // bk >= 3 and (b < 0).any() and (b > 0).any() for x, w, b, bm, bn, bk in fused)
    cases = [c.args for c in answers._sharded_cases(np.random.default_rng(seed))]
    from grader.answers.lab07_tpu import sharding_class
    assert {sharding_class(c[:3]) for c in cases if min(c[3]) > 1} == {sharding_class(f) for f in lab.sharding_family()}
    assert all(np.prod(c[3]) <= 8 for c in cases), "every mesh runs on the notebook's 8 CPU devices"
    ones = [c for c in cases if min(c[3]) == 1]  # a 1-device axis that changes the collectives, on every such mesh
    assert {c[3] for c in ones} == {m for m in lab.MESHES if min(m) == 1}
    assert all(set(answers._collectives_reference(*c[:3], c[3], c[4], 4))
               != set(answers._collectives_reference(*c[:3], (2, 4), c[4], 4)) for c in ones)
    assert all(len(set(c[4])) == 3 for c in cases)
    hops = [c.args for c in answers._slice_cases(np.random.default_rng(seed))]
    assert any(2 * abs(x - y) == d for a, b, dims, _ in hops for x, y, d in zip(a, b, dims) if x != y)
    assert {0, 1} <= {answers._hops_reference(*args) for args in hops}  # the same chip; one hop over the wraparound
    # the course's stored wrap flags (ici.json, the slices §7.7 shows) answer only part: on slices it does not hold, a
    # torus (v4/v5p whole cubes, v5e/v6e 16-chip axes) must be told from a mesh by the rule
    from gpucourse import interconnect

    table = interconnect.stored()["wraps"]
    assert any("x".join(map(str, dims)) not in table.get(chip, {}) and answers._hops_reference(a, b, dims, chip)
               != sum(abs(x - y) for x, y in zip(a, b)) for a, b, dims, chip in hops)


_COMPILE_FAMILY = """
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=16"  # 16: the rule is checked beyond the cases' meshes
from grader.answers.lab07_tpu import compiled_traffic
from grader.labs.lab07_tpu import MESHES, sharding_family
out = {}
for mesh_shape in MESHES + ((4, 4), (2, 8), (1, 16)):
    for case in sharding_family():
        for mkn in ((64, 32, 16), (48, 96, 80)):
            out[repr((case, mesh_shape, mkn))] = compiled_traffic(*case, mesh_shape, mkn, 4)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_sharded_matmul_bound_is_what_xla_compiles():
    """Exercise 5's bound (the bytes XLA's own program receives) is a rule on the answer side; XLA is the truth: every
    sharding of the family on every mesh the cases use, and on three 16-device meshes (a subprocess), at two sets of
    matrix sizes, compiles with jit's automatic partitioning to exactly the rule's collectives, and the bytes one
    device receives in them (read from each collective's result shape and replica groups) are the rule's."""
    import ast
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _COMPILE_FAMILY], capture_output=True, text=True, timeout=900,
                         check=True)
    compiled = json.loads(run.stdout.splitlines()[-1])
    assert len(compiled) == 2 * (len(lab.MESHES) + 3) * len(lab.sharding_family())
    wrong = {}
    for key, got in compiled.items():
        case, mesh_shape, mkn = ast.literal_eval(key)
        want = answers._collectives_reference(*case, mesh_shape, mkn, 4)
        if set(got) != set(want) or any(got[c] != pytest.approx(want[c], rel=1e-12) for c in want):
            wrong[key] = (got, want)
    assert not wrong
    assert any(got for got in compiled.values()) and any(len(got) == 2 for got in compiled.values())
    for case in lab.problems["sharded_matmul"].visible:  # the visible cases' shardings and meshes too
        assert repr((case.args[:3], case.args[3], (64, 32, 16))) in compiled


def _fused_variant(grid_of):
    """The solution's fused_dense with another grid (``grid_of(m, n, k, bm, bn, bk)`` -> (grid, axis of k))."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def fused_dense(x, w, b, bm, bn, bk):
        m, k = x.shape
        n = w.shape[1]
        grid, kax = grid_of(m, n, k, bm, bn, bk)
        other = [a for a in range(3) if a != kax]

        def kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
            kk = pl.program_id(kax)

            @pl.when(kk == 0)
            def _():
                acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

            acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

            @pl.when(kk == pl.num_programs(kax) - 1)
            def _():
                o_ref[...] = jnp.maximum(acc_ref[...] + b_ref[...].astype(jnp.float32), 0.0).astype(o_ref.dtype)

        def ij(*g):
            return g[other[0]], g[other[1]], g[kax]

        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=grid,
            in_specs=[pl.BlockSpec((bm, bk), lambda *g: (ij(*g)[0], ij(*g)[2])),
                      pl.BlockSpec((bk, bn), lambda *g: (ij(*g)[2], ij(*g)[1])),
                      pl.BlockSpec((1, bn), lambda *g: (0, ij(*g)[1]))],
            out_specs=pl.BlockSpec((bm, bn), lambda *g: (ij(*g)[0], ij(*g)[1])),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)], interpret=True)(x, w, b)

    return fused_dense


def test_fused_dense_wrong_numbers_from_a_k_first_grid_get_the_grid_order_hint():
    """The seventh ML read: with one f32 scratch block, a k-first grid gives wrong numbers, and the grid-order
    diagnosis (which the structure check gives only once the numbers pass) is named with them."""
    from grader.checks import CheckFailure
    from grader.labs import lab07_tpu as lab7

    right = _fused_variant(lambda m, n, k, bm, bn, bk: ((m // bm, n // bn, k // bk), 2))
    lab7.problems["fused_dense"].check(right)
    k_first = _fused_variant(lambda m, n, k, bm, bn, bk: ((k // bk, m // bm, n // bn), 0))
    with pytest.raises(CheckFailure) as info:
        lab7.problems["fused_dense"].check(k_first)
    assert "elements are wrong" in str(info.value) and "Put the reduction (k) axis last" in str(info.value)


def test_fused_dense_grid_order_hint_names_the_failing_case_grid():
    """Review finding: the grid-order hint re-traced a fixed 32×512×256 probe without saying so, and named its grid
    ((4, 2, 2), 16 runs) under a failing case whose grid is (3, 2, 2) with 12 runs. The hint is the failing case's
    own plan, visible and hidden alike."""
    import re

    from grader.labs import lab07_tpu as lab7

    k_first = _fused_variant(lambda m, n, k, bm, bn, bk: ((k // bk, m // bm, n // bn), 0))
    for hidden in (False, True):
        with pytest.raises(CheckFailure) as info:
            lab7.problems["fused_dense"].check(k_first, hidden=hidden)
        message = str(info.value)
        case = re.match(r"fused_dense\(<bfloat16 array \((\d+), (\d+)\)>, <bfloat16 array \((\d+), (\d+)\)>, "
                        r"<bfloat16 array \(1, \d+\)>, (\d+), (\d+), (\d+)\)", message)
        assert case, message[:300]
        m, k, _, n, bm, bn, bk = (int(v) for v in case.groups())
        grid = (k // bk, m // bm, n // bn)
        blocks = grid[1] * grid[2]
        assert blocks > 1 and grid[0] > 1, "a case where the k-first grid interleaves the output blocks"
        # k outermost: every step moves to another output block
        assert f"your grid {grid} visits the {blocks} output blocks in {grid[0] * blocks} separate runs" in message, (
            message)


_HLO_WITH_A_LOOP = """HloModule jit_body

%wrapped_add (p0: f32[4,2], p1: f32[4,2]) -> f32[4,2] {
  ROOT %add = f32[4,2]{1,0} add(f32[4,2]{1,0} %p0, f32[4,2]{1,0} %p1)
}

%step (param: (s32[], f32[4,2])) -> (s32[], f32[4,2]) {
  %cp = f32[4,2]{1,0} collective-permute(f32[4,2]{1,0} %x), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %sum = f32[4,2]{1,0} fusion(%cp, %x), kind=kLoop, calls=%wrapped_add
}

%cond (param.1: (s32[], f32[4,2])) -> pred[] {
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}

ENTRY %main (param.3: f32[4,2]) -> f32[4,2] {
  %ar = f32[4,2]{1,0} all-reduce(f32[4,2]{1,0} %param.3), replica_groups={{0,1}}, to_apply=%wrapped_add
  %w = (s32[], f32[4,2]{1,0}) while(%t), condition=%cond, body=%step, metadata={op_name="cond/branch_1_fun/while"}
}
"""


def test_collectives_a_while_runs_are_found_in_the_compiled_program():
    """The HLO backstop of "no collective inside a loop" (read r14: a fori_loop inside a lax.cond branch escaped the
    jaxpr walk): a collective in a while's body counts, one outside any loop does not."""
    assert lab.hlo_looped_collectives(_HLO_WITH_A_LOOP) == ["collective-permute"]
    assert lab.hlo_looped_collectives(_HLO_WITH_A_LOOP.replace("while(", "tuple(")) == []


def test_a_function_that_writes_into_its_inputs_fails_and_leaves_the_visible_cases_as_they_were():
    """pe_step updating its registers in place fails by name; the visible cases (shared by every check of the session)
    are put back, so the right answer checked afterwards still passes."""
    import contextlib
    import io

    def right(a, p, W, a_in):
        a_new = np.empty_like(a)
        a_new[:, 1:], a_new[:, 0] = a[:, :-1], a_in
        p_new = np.empty_like(p)
        p_new[0], p_new[1:] = a_new[0] * W[0], p[:-1] + a_new[1:] * W[1:]
        return a_new, p_new

    def in_place(a, p, W, a_in):
        a_new, p_new = right(a, p, W, a_in)
        a[:], p[:] = a_new, p_new
        return a, p

    with contextlib.redirect_stdout(io.StringIO()):
        lab.problems["pe_step"].check(right)
        with pytest.raises(CheckFailure, match="modified its input argument a in place"):
            lab.problems["pe_step"].check(in_place)
        lab.problems["pe_step"].check(right)
