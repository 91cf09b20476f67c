"""Lab 5's divergence exercise: the checker grades the result, SIMT efficiency and sectors per request; the given
kernel's loop is a real branch in sm_90 SASS, where the old parity if/else compiled to a branch-free select."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import simt
from grader.checks import CheckFailure
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


STRIDE2, NO_FIX, GLOBAL_GATHER = WRONG["ex6_halvings_regrouped"]


def test_halvings_reference_matches_the_loop():
    x = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 1e4])
    n = lab.halvings(x)
    assert n.tolist() == [0, 0, 1, 1, 2, 14]
    np.testing.assert_allclose(lab.halvings_reference(x, None), n + x / 2.0 ** n)


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
        assert (np.diff(trips[start + local]) >= 0).all()


def test_sector_budget_is_the_divergent_kernels_measured_contiguous_access():
    """The budget is computed, not trusted: it equals what the executor measures for the given kernel."""
    for case in REGROUP.visible + REGROUP.hidden(np.random.default_rng(3)):
        x, order = case.args
        r = simt.run(_kernel(NO_FIX), -(-x.size // lab.REGROUP_BLOCK), lab.REGROUP_BLOCK, x, order, np.zeros_like(x))
        for array in ("x", "out"):
            assert r.sectors_per_request(array) == pytest.approx(lab.contiguous_sectors(x.size, 8))
    assert lab.contiguous_sectors(64, 8) == 8.0 and lab.contiguous_sectors(33, 8) == 4.5  # (8 + 1) / 2


def test_hidden_cases_are_odd_sized_and_include_the_adversarial_mixes():
    cases = REGROUP.hidden(np.random.default_rng(1))
    assert all(c.args[0].size % 32 for c in cases)
    long = [lab.halvings(c.args[0]) >= lab.LONG[0] for c in cases]
    assert any(m.all() for m in long) and any((~m).all() for m in long)
    assert any((m == (np.arange(m.size) % 2 == 1)).all() for m in long)  # alternating classes


def test_solution_passes_and_each_wrong_answer_fails_for_its_own_reason():
    REGROUP.check(_kernel(_cells()["ex6_halvings_regrouped"]))
    REGROUP.check(_kernel(_cells()["ex6_halvings_regrouped"]), hidden=True)
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
                 if c["metadata"].get("nbgrader", {}).get("grade_id") == "ex6_given")
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

    with pytest.raises(CheckFailure, match="no while loop"):
        lab.problems["halvings_regrouped"].check(halvings_regrouped)
