"""Lab 5's divergence checker: a warp-uniform fix passes; hiding the split on one source line does not."""

from __future__ import annotations

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import simt
from grader.checks import CheckFailure
from grader.labs.lab05_kernels import FIX_BLOCK, PARITY

gc.quiet_warnings()
cuda = gc.get_backend().cuda


def _solution_kernel(grade_id: str, name: str):
    """The solution notebook's own kernel (not a copy of it): its answer cell, defined as the notebook does."""
    from grader.course import ROOT
    from grader.kernels import load_kernel
    from grader.scratch import load_notebook, solution_cells

    nb = load_notebook(ROOT / "solutions" / "lab05_kernels" / "lab05_kernels.ipynb")
    return load_kernel(solution_cells(nb)[grade_id], name, {"np": np}, cuda)


parity_by_warp = _solution_kernel("ex6_parity_fixed", "parity_fixed")


@cuda.jit
def parity_one_line(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = (x[i] * x[i] + 1.0) * 0.5 if i % 2 == 0 else -x[i] * 3.0 - 2.0


def test_one_line_ternary_looks_efficient_to_the_line_count():
    """Why the checker also reads what each warp wrote: per source line, the split is invisible."""
    x = np.linspace(-2, 2, 500)
    r = simt.run(parity_one_line, -(-x.size // FIX_BLOCK), FIX_BLOCK, x, np.zeros_like(x))
    assert r.simt_efficiency > 0.85


def test_parity_checker_accepts_warp_uniform_branches_and_rejects_the_one_liner():
    PARITY.check(parity_by_warp)
    PARITY.check(parity_by_warp, hidden=True)
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="both even and odd"):
            PARITY.check(parity_one_line, hidden=hidden)
