"""Lab 5's divergence exercise: the checker grades the result, SIMT efficiency and sectors per request; the given
kernel's loop is a real branch in sm_90 SASS, where the old parity if/else compiled to a branch-free select."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import simt
from grader.checks import CheckFailure
from grader.answers import lab05_kernels as answers
from grader.labs import lab05_kernels as lab
from tests.wrong_answers.lab05_kernels import WRONG

gc.quiet_warnings()
cuda = gc.get_backend().cuda
REGROUP = lab.REGROUP


def _cells() -> dict[str, str]:
    from grader.course import ROOT
    from grader.scratch import load_notebook, solution_cells

    return solution_cells(load_notebook(ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.ipynb"))


def _kernel(source: str, name: str = "halvings_regrouped"):
    """A kernel defined as the notebook defines it (not a copy of the solution): its cell, the lab's constants."""
    from grader.kernels import load_kernel

    return load_kernel(source, name, {"np": np, "REGROUP_BLOCK": lab.REGROUP_BLOCK}, cuda)


STRIDE2, NO_FIX, GLOBAL_GATHER = WRONG["halvings_regrouped"]


def test_halvings_reference_matches_the_loop():
    x = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 1e4])
    n = lab.halvings(x)
    assert n.tolist() == [0, 0, 1, 1, 2, 14]
    np.testing.assert_allclose(answers.halvings_reference(x, None), n + x / 2.0 ** n)


def test_tile_order_sorts_each_tile_locally_and_classes_have_their_trip_counts():
    rng = np.random.default_rng(0)
    mask = rng.random(600) < 0.5
    x = lab._classes(rng, mask)
    trips = lab.halvings(x)
    assert (trips[mask] >= lab.LONG[0]).all() and (trips[mask] <= lab.LONG[1]).all()
    assert (trips[~mask] >= lab.SHORT[0]).all() and (trips[~mask] <= lab.SHORT[1]).all()
    order = lab.tile_order(x)
    for start in range(0, x.size, lab.REGROUP_BLOCK):
        local = order[start:start + lab.REGROUP_BLOCK]
        assert sorted(local.tolist()) == list(range(local.size))
        assert (np.diff(trips[start + local]) <= 0).all()  # longest first: a partial last warp gets short loops


def test_sector_budget_is_the_divergent_kernels_measured_contiguous_access():
    """The budget is computed, not trusted: it equals what the executor measures for the given kernel."""
    for case in REGROUP.visible + answers._regroup_cases(np.random.default_rng(3)):
        x, order = case.args
        r = simt.run(_kernel(NO_FIX), -(-x.size // lab.REGROUP_BLOCK), lab.REGROUP_BLOCK, x, order, np.zeros_like(x))
        for array in ("x", "out"):
            assert r.sectors_per_request(array) == pytest.approx(lab.contiguous_sectors(x.size, 8))
    assert lab.contiguous_sectors(64, 8) == 8.0 and lab.contiguous_sectors(33, 8) == 4.5  # (8 + 1) / 2


def test_hidden_cases_are_odd_sized_and_include_the_adversarial_mixes():
    cases = answers._regroup_cases(np.random.default_rng(1))
    assert all(c.args[0].size % 32 for c in cases)
    long = [lab.halvings(c.args[0]) >= lab.LONG[0] for c in cases]
    assert any(m.all() for m in long) and any((~m).all() for m in long)
    assert any((m == (np.arange(m.size) % 2 == 1)).all() for m in long)  # alternating classes


def test_solution_passes_and_each_wrong_answer_fails_for_its_own_reason():
    REGROUP.check(_kernel(_cells()["halvings_regrouped"]))
    REGROUP.check(_kernel(_cells()["halvings_regrouped"]), hidden=True)
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match=r"sectors on average; budget .* over"):
            REGROUP.check(_kernel(STRIDE2), hidden=hidden)
        with pytest.raises(CheckFailure, match=r"SIMT efficiency .* below the budget 80%"):
            REGROUP.check(_kernel(NO_FIX), hidden=hidden)
        with pytest.raises(CheckFailure, match=r"`x` touched .* sectors on average; budget"):
            REGROUP.check(_kernel(GLOBAL_GATHER), hidden=hidden)


PARITY_IF_ELSE = '''
def parity_divergent(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if i % 2 == 0:
            v = v * v
            v = v + 1.0
            v = v * 0.5
        else:
            v = -v
            v = v * 3.0
            v = v - 2.0
        out[i] = v
'''


def test_sass_data_dependent_loop_branches_where_a_short_if_else_is_predicated():
    """numba-cuda -> PTX -> ptxas -> nvdisasm (sm_90). The old exercise's if/else has no branch besides the bounds
    check's exit: both sides are computed and one is selected (FSEL). The loop of the given kernel keeps a backward
    branch (BRA) to its body, and its exit reconverges at BSYNC after a BSSY (sm_70+ reconvergence)."""
    from gpucourse import toolchain

    if not toolchain.available():
        pytest.skip(f"NVIDIA toolchain wheels missing: {toolchain.describe()}")
    sig_parity = "void(float64[::1], float64[::1])"
    sig_loop = "void(float64[::1], int32[::1], float64[::1])"
    parity = toolchain.numba_sass(PARITY_IF_ELSE, sig_parity)
    from grader.course import ROOT
    from grader.scratch import load_notebook

    nb = load_notebook(ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.ipynb")
    given = next("".join(c["source"]) for c in nb["cells"]
                 if c["metadata"].get("nbgrader", {}).get("grade_id") == "halvings_regrouped_given")
    loop = toolchain.numba_sass(given.split("\n\n\nx_demo")[0], sig_loop)
    assert parity.count("FSEL") + parity.count("SEL") >= 1, parity.excerpt()
    assert parity.count("BSSY") == 0 and parity.count("BSYNC") == 0, parity.excerpt()
    assert parity.count("BRA") == 1, parity.excerpt()  # only the self-branch after EXIT: no branch in the code
    assert loop.count("BRA") >= 2, loop.excerpt()  # the loop's back edge besides the final self-branch
    assert loop.count("BSSY") >= 1 and loop.count("BSYNC") >= 1, loop.excerpt()


def test_a_closed_form_that_drops_the_loop_fails_the_regroup_exercise():
    """Kernel review, finding 3: ceil(log2 v) gives the right numbers without the loop the exercise regroups."""
    import math

    cuda = gc.get_backend().cuda

    @cuda.jit
    def halvings_regrouped(x, order, out):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            n = 0
            if v > 1.0:
                n = int(math.ceil(math.log2(v)))
            out[i] = n + v / 2.0 ** n

    with pytest.raises(CheckFailure, match="no data-dependent while loop"):
        lab.problems["halvings_regrouped"].check(halvings_regrouped)


# -- exercise 4: the register-blocked matmul -----------------------------------------------------------------------

MATMUL = lab.MATMUL


def _matmul(source: str):
    from grader.kernels import load_kernel

    ns = {"np": np, "TM": lab.TILE_M, "TN": lab.TILE_N, "TK": lab.TILE_K}
    return load_kernel(source, "tiled_matmul", ns, cuda)


def test_matmul_hidden_cases_draw_the_boundaries():
    """k % TILE_K == 1 (a last slab of one column), a last row tile with and without its second half (rows ty + 8),
    and a matrix smaller than one tile; never a multiple of a tile."""
    for seed in range(5):
        shapes = [(c.args[0].shape[0], c.args[0].shape[1], c.args[1].shape[1])
                  for c in answers._mm_cases(np.random.default_rng(seed))]
        assert any(k % lab.TILE_K == 1 for _, k, _ in shapes)
        assert any(0 < m % lab.TILE_M <= lab.TILE_M // 2 and m > lab.TILE_M for m, _, _ in shapes)
        assert any(m % lab.TILE_M > lab.TILE_M // 2 for m, _, _ in shapes)
        assert any(m < lab.TILE_M and k < lab.TILE_K and n < lab.TILE_N for m, k, n in shapes)
        assert all(m % lab.TILE_M and k % lab.TILE_K and n % lab.TILE_N for m, k, n in shapes)


def test_matmul_reference_is_numpys_float64_product():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    np.testing.assert_allclose(answers.matmul_reference(A, B), A.astype(np.float64) @ B.astype(np.float64), rtol=0)
    ref = np.array([[sum(float(A[i, p]) * float(B[p, j]) for p in range(7)) for j in range(3)] for i in range(5)])
    np.testing.assert_allclose(answers.matmul_reference(A, B), ref, rtol=1e-12)


def test_block_sum_rejects_shared_atomics_and_says_why():
    """Review r2 finding 2: a shared-memory atomic "reduction" gives right sums with no divergence; the spec asks for a
    tree with barriers, and the check names the mistake on the visible and the hidden cases."""
    from grader.kernels import load_kernel

    interleaved, atomic, _serial, _serial_sum = WRONG["block_sum"]
    block_sum = lab.problems["block_sum"]
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match=r"atomic updates \(cuda\.atomic\.\*\): an atomic add is not a tree"):
            block_sum.check(load_kernel(atomic, "block_sum", {"np": np, "BLOCK": lab.REDUCE_BLOCK}, cuda), hidden=hidden)
    solution = load_kernel(_cells()["block_sum"], "block_sum", {"np": np, "BLOCK": lab.REDUCE_BLOCK}, cuda)
    block_sum.check(solution)
    block_sum.check(solution, hidden=True)


def test_matmul_solution_meets_every_budget_exactly():
    """The budgets are what the solution's register blocking needs, measured: 2 global reads per slab, 3 shared
    reads per k, 1,024 bytes of float32 tiles."""
    k = _matmul(_cells()["tiled_matmul"])
    MATMUL.check(k)
    MATMUL.check(k, hidden=True)
    for case in MATMUL.visible + answers._mm_cases(np.random.default_rng(0)):
        r = MATMUL.run_case(k, case)
        steps = -(-case.args[0].shape[1] // lab.TILE_K)
        assert r.counts[:, 0].max() == 2 * steps and r.counts[:, 2].max() == 3 * lab.TILE_K * steps
        assert r.shared_bytes == lab.MM_SHARED_BYTES == 1024
        assert r.sectors_per_request("A") <= lab.MM_SECTORS and r.sectors_per_request("B") <= lab.MM_SECTORS


def test_matmul_wrong_answers_fail_for_their_own_reasons():
    from tests.wrong_answers.lab05_kernels import _MATMUL, MATMUL_SLIPS

    no_sync, course_57, no_reuse = WRONG["tiled_matmul"]
    transposed, one_guard, wide, grid_row, b_by_k = MATMUL_SLIPS
    assert all(source != _MATMUL for source in (no_sync, no_reuse, *MATMUL_SLIPS))  # each .replace() took
    reasons = [(no_sync, r"data races"),
               (course_57, r"sA\[0, 8\] is out of bounds for shape \(8, 8\)"),  # §5.7 verbatim does not fit the spec
               (no_reuse, r"64 shared reads; the budget is 48 \(16 over\)"),
               (transposed, r"load of `A` touched .* sectors on average \(budget 8\).*\(t // 8, t % 8\) of A"),
               (one_guard, r"C\[\d+, \d+\] is out of bounds"),
               (wide, r"shared array sA \(8-byte elements\), sB \(8-byte elements\)"),
               # visible: every value right (the overlapping tiles agree), caught by the count of writes to C
               (grid_row, r"\d+ writes to C for its \d+ elements|elements are wrong"),
               (b_by_k, r"load of `B` touched .* sectors on average \(budget 8\).*loads B\[p \+ ty, col\]")]
    for source, reason in reasons:
        for hidden in (False, True):
            with pytest.raises(CheckFailure, match=reason):
                MATMUL.check(_matmul(source), hidden=hidden)


def test_matmul_exercise_is_not_the_course_kernel():
    """Kernel review: "none is solved by copying a cell of the course notebook" — §5.7's matmul_tiled, as the
    course defines it (barriers on), fails the exercise."""
    import re

    from grader.course import ROOT

    src = (ROOT / "course" / "05_grids_blocks_warps.py").read_text()
    body = re.search(r"(@cuda\.jit\ndef matmul_tiled\(A, B, C, barriers\):\n(?:    .*\n|\n)+?)\n\n", src).group(1)
    body = body.replace("(A, B, C, barriers)", "(A, B, C)").replace("if barriers:\n            ", "")
    from grader.kernels import load_kernel

    with pytest.raises(CheckFailure, match="out of bounds"):
        MATMUL.check(load_kernel(body, "matmul_tiled", {"np": np, "TILE": 8}, cuda))


def test_matmul_sass_register_blocking_and_the_float64_accumulator():
    """The notebook's machine-code cell, as a test: the solution's unrolled k step is 16 FFMA fed by 8 LDS + 4 LDS.128
    (24 words, the executor's 3 shared reads per k); §5.7's (float32 accumulator) is FFMA only, 2 words per product;
    the same kernel with acc = 0.0 (a float64 in numba) is 8 FMUL + 8 DADD fed by 8 LDS + 2 LDS.128 (16 words)."""
    from gpucourse import toolchain

    if not toolchain.available():
        pytest.skip(f"NVIDIA toolchain wheels missing: {toolchain.describe()}")
    from tests.wrong_answers.lab05_kernels import WRONG as _WRONG

    tiles = {"TM": lab.TILE_M, "TN": lab.TILE_N, "TK": lab.TILE_K}
    no_reuse = _WRONG["tiled_matmul"][2]  # sB[j, tx] read once per output in the source: 4 shared reads per k
    mine, square32, square, twice = toolchain.numba_sass_many([
        (_cells()["tiled_matmul"], lab.MATMUL_SIG, tiles),
        (lab.SQUARE_MATMUL, lab.MATMUL_SIG, {"TILE": 8}),
        (lab.SQUARE_MATMUL_F64, lab.MATMUL_SIG, {"TILE": 8}),
        (no_reuse, lab.MATMUL_SIG, tiles)])
    m, s = lab.inner_loop(mine), lab.inner_loop(square)
    # §5.7 as the course writes it (review r2 finding 4): np.float32(0.0) everywhere, so no float64 path at all
    s32 = lab.inner_loop(square32)
    assert s32["FFMA"] > 0 and s32["FFMA"] % 8 == 0 and (s32["FMUL"], s32["DADD"], s32["F2F.F64.F32"]) == (0, 0, 0), s32
    assert not square32.variants("F2F"), square32.variants("F2F")
    assert s32["LDS (32-bit)"] + 2 * s32["LDS.64"] + 4 * s32["LDS.128"] == 2 * s32["FFMA"], s32
    assert (m["FFMA"], m["FMUL"], m["DADD"]) == (2 * lab.TILE_K, 0, 0), m
    # the budget's failure message says so: the compiler merges the source's second load of sB[j, tx] (no store between)
    assert lab.inner_loop(twice) == m
    # the solution's loads end `else np.float32(0.0)` (review finding 12): no conversion at all; §5.7's kernel written
    # with `else 0.0` (a float64 literal), which widens and narrows each loaded float once per step, on top of one
    # conversion per product
    assert m["F2F.F64.F32"] == 0 and mine.variants("F2F").get("F2F.F32.F64", 0) == 0, (m, mine.variants("F2F"))
    # (whole kernel: the 2 loads' narrowings, and 1 for the float64 accumulator stored into float32 C)
    assert s["F2F.F64.F32"] == 8 + 2 and square.variants("F2F").get("F2F.F32.F64") == 2 + 1, s
    assert m["LDS (32-bit)"] + 2 * m["LDS.64"] + 4 * m["LDS.128"] == 3 * lab.TILE_K, m
    assert (s["FFMA"], s["FMUL"], s["DADD"]) == (0, 8, 8) and s["F2F.F64.F32"] >= 8, s
    assert s["LDS (32-bit)"] + 2 * s["LDS.64"] + 4 * s["LDS.128"] == 16, s


# -- exercise 5: the register budget of an occupancy target ------------------------------------------------------------

MAX_REGISTERS = lab.problems["max_registers"]


def _function(source: str, name: str = "max_registers"):
    """A function defined as the notebook defines it: its cell, run after the setup cell's imports."""
    import math

    namespace = {"math": math, "np": np, "gc": gc, "simt": simt, "lab": lab}
    exec(source, namespace)
    return namespace[name]


def test_max_registers_solution_passes_and_each_wrong_answer_fails_for_its_own_reason():
    solution = _function(_cells()["max_registers"])
    MAX_REGISTERS.check(solution)
    MAX_REGISTERS.check(solution, hidden=True)
    per_sm, granules, limiter_at_top = (_function(src) for src in WRONG["max_registers"])
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match=r"registers_per_thread: expected \d+, got \d+\. Hint: at \d+ registers "
                                               r"per thread the model gives \d+ blocks? per SM, fewer than \d+ \(regis"):
            MAX_REGISTERS.check(per_sm, hidden=hidden)
        with pytest.raises(CheckFailure, match=r"expected 255, got 248\. Hint: 249 registers per thread still keep .* "
                                               r"the largest count allowed is 255"):
            MAX_REGISTERS.check(granules, hidden=hidden)
        with pytest.raises(CheckFailure, match=r"limiter: expected 'shared_memory', got 'registers'"):
            MAX_REGISTERS.check(limiter_at_top, hidden=hidden)


def test_max_registers_one_past_and_one_granule_below_are_named():
    def shifted(by):
        solution = _function(_cells()["max_registers"])

        def max_registers(*args, **kwargs):
            regs, limiter = solution(*args, **kwargs)
            return (regs + by if regs is not None and regs < 255 else regs), limiter
        return max_registers

    with pytest.raises(CheckFailure, match=r"expected 128, got 129\. Hint: .* where occupancy drops, one past"):
        MAX_REGISTERS.check(shifted(1))
    with pytest.raises(CheckFailure, match=r"expected 128, got 121\. Hint: 122 registers .* units of 256 \(8 per "
                                           r"thread\)[^—]*$"):
        MAX_REGISTERS.check(shifted(-7))


def test_max_registers_is_not_one_call_of_an_installed_helper():
    """tests/attacks/lab05_kernels.py: the installed model once, loaded a second time, or its source pasted — each
    gives one forward answer, and each fails (the search over the model is the exercise)."""
    from tests.attacks.lab05_kernels import ATTACKS

    for source in ATTACKS["max_registers"]:
        fn = _function(source)
        failed = 0
        for hidden in (False, True):
            try:
                MAX_REGISTERS.check(fn, hidden=hidden)
            except CheckFailure:
                failed += 1
        assert failed, source


def test_review_max_registers_messages_name_the_limits_and_the_opt_in():
    """Review findings 5 and 6: a case prints its limits as lab.LIMITS["H100"] / ["A100"] (not ~700 characters of
    dict); an answer ignoring opt_in is told the kernel opted in (227 KiB per block on an H100); the spec states the
    tie rule."""
    from grader.case import Case

    text = Case((128, 100 * 1024, 2, lab.LIMITS["H100"]), {"opt_in": True}).call_text("max_registers")
    assert 'lab.LIMITS["H100"]' in text and "shared_carveouts" not in text
    assert repr(lab.LIMITS["A100"]) == 'lab.LIMITS["A100"]' and lab.LIMITS["A100"] == dict(lab.LIMITS["A100"])

    def ignores_opt_in(threads, smem, target, limits, opt_in=False):
        return answers.max_registers_reference(threads, smem, target, limits)

    case = Case((128, 100 * 1024, 2, lab.LIMITS["H100"]), {"opt_in": True})
    want = answers.max_registers_reference(*case.args, **case.kwargs)
    assert want[0] is not None and ignores_opt_in(*case.args)[0] is None
    with pytest.raises(CheckFailure, match="this kernel opted in: shared memory up to 227 KiB per block"):
        lab.MAX_REGISTERS.compare("max_registers", ignores_opt_in(*case.args), want, case)
    assert "name the FIRST of warps, registers, shared_memory, blocks" in " ".join(lab.MAX_REGISTERS.spec.split())


def test_review_wave_cell_prints_the_students_values_not_the_answer():
    """Review findings 3 and 14: the measure cell after exercise 7 prints the student's own wave_prediction for
    133 and 10 blocks and computes no slowdown itself; the text states no answer; the spec's worked example is
    another case (an A100) and says an integral float is accepted."""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "solutions/lab05_kernels/lab05_kernels.py").read_text("utf-8")
    cell = src[src.index('"grade_id": "wave_prediction_measure"'):src.index('"grade_id": "wave_prediction_explain"')]
    assert "wave_prediction(n, 1, H100)" in cell and "ceil(133" not in cell and "/ 133" not in cell
    explain = src[src.index('"grade_id": "wave_prediction_explain"'):src.index('"grade_id": "pictures_intro"')]
    assert "1.985" not in explain and "13.2" not in explain
    assert "10.8 for 10 blocks on an A100" in " ".join(lab.WAVES.spec.split()) and "13.2" not in lab.WAVES.spec
    assert "integral float" in lab.WAVES.spec


def test_the_sector_picture_of_exercise_2_is_what_the_executor_counts():
    """Exercise 2's intro states the sectors per warp request of both mappings with (16, 8) blocks: 4 along rows, 16
    down columns (the warp's 2 y-lanes share a row's sector: not 32; review 2026-12-06, M1)."""
    from grader.kernels import load_kernel

    wrong = WRONG["ramp_2d"]
    right = wrong.replace("r, c = cuda.grid(2)", "c, r = cuda.grid(2)")
    a = np.ones((64, 64), np.float32)
    counted = [simt.run(load_kernel(src, "ramp_2d", {"np": np}, cuda), (4, 8), lab.BLOCK_2D, a, np.zeros_like(a))
               .sectors_per_request("a") for src in (right, wrong)]
    assert counted == [4.0, 16.0]
    intro = next(c for c in _intro_cells() if "Exercise 2 — 2-D indexing" in c)
    prose = " ".join(line.lstrip("# ") for line in intro.split("\n"))  # line breaks are not content
    assert "4 32-byte sectors per request" in " ".join(prose.split()) and "16 sectors per request" in prose


def _intro_cells() -> list[str]:
    from grader.course import ROOT

    text = (ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.py").read_text()
    return text.split("# %% [markdown]")


@pytest.mark.parametrize("notebook", ["00_overview", "01_blas_roofline", "05_grids_blocks_warps", "06_jit_xla_sass"])
def test_gpu_timings_use_random_data_and_unrecorded_gpu_claims_say_so(notebook):
    """A GPU-only cell that times a kernel does it on random data (constant data flatters a GPU: §0, §1; review
    2026-12-06, B2): `ones` only for a cache flush or a few elements. And while `course/gpu_runs/` holds no recorded
    run, a notebook with GPU-only cells says that their asserts are what they check, not reported results (review
    r2, finding 9)."""
    import re

    from grader.course import ROOT

    text = (ROOT / "course" / f"{notebook}.py").read_text()
    cells = text.split("# %%")
    for cell in cells:
        if "require_gpu(" in cell and "measure(" in cell:
            for line in cell.splitlines():
                if ".ones(" in line and "flush" not in line:
                    size = re.search(r"\.ones\((\d+)[,)]", line)
                    assert size and int(size.group(1)) <= 16, f"{notebook}: a timed GPU cell on constant data: {line}"
    recorded = [p for p in (ROOT / "course" / "gpu_runs").glob("*.md") if p.name != "README.md"]
    if not recorded and "require_gpu(" in text:
        prose = re.sub(r"\s*\n#\s*", " ", text)  # markdown lines joined
        assert "not a reported result" in prose, f"{notebook}: GPU-only claims read as results, yet no run is recorded"
