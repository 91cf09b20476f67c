"""A grading run on the GPU path (issue 25): each lab's solution notebook executed cell by cell in a Jupyter kernel,
as nbgrader's autograde executes a submission (``NBGRADER_EXECUTION=autograde``), with the GPU libraries stubbed at their boundary
(``tests/gpu_stub.py``: CuPy, numba-cuda's launch, JAX's GPU devices), installed by one cell put first. Every graded
test cell is then read as the grader reads it (``grader.pipeline.verdict.cell_messages``: an error, or anything on
stderr, scores a test cell 0 in nbgrader) and must be clean, and the GPU path must really have been taken (the
backend is the GPU's; kernel labs launched through numba-cuda's dispatcher).

``tests/test_gpu_stubbed.py`` calls each GPU branch and each kernel check in-process; this is the whole notebook,
every exercise and every course cell of the lab between them, in a kernel of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.pipeline.lab import nbgrader_meta
from grader.pipeline.verdict import cell_messages

ROOT = Path(__file__).resolve().parents[1]
KERNEL_LABS = {"lab05_kernels", "lab05b_kernel_puzzles", "lab06_xla_sass", "lab08_attention"}

INSTALL = f"""\
# (not part of the lab) the GPU libraries stubbed at their boundary: tests/gpu_stub.py
import sys, warnings
sys.path.insert(0, {str(ROOT)!r})
import pytest
from tests import gpu_stub
_stub_patch = pytest.MonkeyPatch()
with warnings.catch_warnings():
    _stub_backend = gpu_stub.install(_stub_patch)
"""

REPORT = """\
# (not part of the lab) what ran on the stubbed GPU
import json
from gpucourse import backend as _b
print(json.dumps({"backend": _b.get_backend().name,
                  "numba_launches": sum(e[0] == "numba kernel" for e in gpu_stub.LOG)}))
"""


def _graded(nb: dict) -> list[str]:
    return [nbgrader_meta(c)["grade_id"] for c in nb["cells"]
            if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")]


@pytest.mark.slow
@pytest.mark.parametrize("lab", course.labs())
def test_a_grading_run_on_the_stubbed_gpu_is_clean(lab, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # as nbgrader sets it: the lab's own-machine cells skip
    src = ROOT / "solutions" / lab / f"{lab}.ipynb"
    nb = nbformat.read(src, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(INSTALL))
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    NotebookClient(nb, kernel_name="python3", timeout=900, allow_errors=True,
                   resources={"metadata": {"path": str(src.parent)}}).execute()
    out = tmp_path / f"{lab}.ipynb"
    nbformat.write(nb, out)

    errors = [(i, o.get("ename"), o.get("evalue")) for i, c in enumerate(nb.cells) for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{lab}: cells raised on the stubbed GPU: {errors}"
    tests = _graded(nb)
    assert tests, f"{lab}: no graded test cell"
    messages = {gid: m for gid, m in cell_messages(out).items() if gid in tests}
    assert not messages, f"{lab}: graded test cells not clean on the stubbed GPU: {messages}"
    (report,) = [o for o in nb.cells[-1].outputs if o.get("name") == "stdout"]
    ran = json.loads(report["text"].strip().splitlines()[-1])
    assert ran["backend"] == "gpu", ran
    if lab in KERNEL_LABS:
        assert ran["numba_launches"] > 0, f"{lab}: no kernel went through numba-cuda's dispatcher: {ran}"
