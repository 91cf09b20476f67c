"""The one GPU command (``python -m gpucourse.gpu_check``) and the records it gathers.

Without a GPU the command must refuse, say why and run nothing. Its parts that need no GPU — recording numbers
from a notebook's kernel through the environment, picking out GPU-only cells, writing the report — are tested
here on the CPU with a small notebook of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import gpucourse as gc
from gpucourse import gpu_check, records

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(gc.gpu_available(), reason="this machine has a GPU: the command would run")
def test_without_a_gpu_the_command_refuses_and_runs_nothing(tmp_path):
    out = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if k != "GPUCOURSE_BACKEND"}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpucourse.gpu_check", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == gpu_check.NO_GPU_STATUS != 0
    assert "no usable NVIDIA GPU" in done.stderr and "nothing was run" in done.stderr
    assert not out.exists(), "it wrote a report without running anything"
    assert "passed" not in done.stdout and time.perf_counter() - t0 < 60


def test_record_keeps_numbers_and_appends_to_the_file(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv(records.RECORD_ENV, str(path))
    monkeypatch.setenv(records.NOTEBOOK_ENV, "course/99_test.ipynb")
    assert gc.record("§9 test roof", 1.5e12, "B/s", note="unit test") == 1.5e12
    got = records.load(path)
    assert [(r.name, r.value, r.unit, r.notebook, r.backend) for r in got] == [
        ("§9 test roof", 1.5e12, "B/s", "course/99_test.ipynb", gc.get_backend().name)]
    assert records.recorded()[-1].name == "§9 test roof"
    assert "§9 test roof" in records.table(got) and "1.5e+12" in records.table(got)
    with pytest.raises(ValueError, match="unit"):
        gc.record("no unit", 1.0, "")
    with pytest.raises(ValueError, match="finite"):
        gc.record("§9 nan", float("nan"), "s")
    path.write_text(path.read_text() + '{"cut off by a killed kern\n')
    assert len(records.load(path)) == 1  # a broken line is skipped, not fatal


def _notebook(cells: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_a_notebook_run_records_its_numbers_and_keeps_gpu_cell_outputs(tmp_path):
    """The machinery the command uses, on the CPU: env reaches the kernel, records land in the file, GPU-only
    cells (guarded by require_gpu or branching on be.is_gpu) are picked out with their output."""
    nb = _notebook([
        "import gpucourse as gc\nbe = gc.setup(verbose=False)",
        "x = 2 + 2\nprint('not a GPU cell', x)",
        "if gc.require_gpu('time something'):\n    pass\ngc.record('§9 measured', 42.0, 'GB/s')",
        "print('fast path' if be.is_gpu else 'slow path')",
    ])
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    rec = tmp_path / "records.jsonl"
    env = {**os.environ, "GPUCOURSE_BACKEND": "cpu", records.RECORD_ENV: str(rec),
           records.NOTEBOOK_ENV: "course/nb.ipynb", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    run = gpu_check.execute(path, tmp_path, env, timeout=120)
    assert run.ok, run.error
    assert [c["index"] for c in run.gpu_cells] == [2, 3]
    assert "[GPU only] skipped" in run.gpu_cells[0]["output"] and run.gpu_cells[1]["output"] == "slow path"
    got = records.load(rec)
    assert [(r.name, r.value, r.notebook, r.backend) for r in got] == [("§9 measured", 42.0, "course/nb.ipynb", "cpu")]

    failing = _notebook(["raise RuntimeError('boom')"])
    nbformat.write(failing, tmp_path / "bad.ipynb")
    bad = gpu_check.execute(tmp_path / "bad.ipynb", tmp_path, env, timeout=60)
    assert not bad.ok and "boom" in bad.error


def test_report_holds_provenance_numbers_and_outputs():
    prov = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "date (UTC)": "2026-12-03 10:00",
            "libraries": "jax 0.10.2, cupy-cuda12x 13.4"}
    recs = [records.Record("§1 HBM roof", 3.1e12, "B/s", "read stream", "gpu", "course/01_blas_roofline.ipynb")]
    runs = [gpu_check.NotebookRun("course/01_blas_roofline.ipynb", 12.3, True, "",
                                  [{"index": 7, "first_line": "if gc.require_gpu('x'):", "output": "3.1 TB/s"}]),
            gpu_check.NotebookRun("course/05_grids_blocks_warps.ipynb", 4.0, False, "AssertionError: no")]
    tests = {"passed": 9, "failures": 0, "errors": 0, "skipped": 1, "seconds": 30.0}
    text = gpu_check.render(prov, tests, runs, recs, 200.0)
    for needle in ("NVIDIA H100 80GB HBM3", "550.54.15", "jax 0.10.2", "| §1 HBM roof | 3.1e+12 | B/s |",
                   "9 passed", "```\n3.1 TB/s\n```", "FAILED: AssertionError: no", "budget 480 s"):
        assert needle in text, needle
    assert gpu_check.slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"


def test_notebook_list_is_course_then_solutions():
    found = [str(p.relative_to(ROOT)) for p in gpu_check.notebooks(ROOT)]
    course = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "course").glob("*.ipynb"))
    solutions = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "solutions").glob("*/*.ipynb"))
    assert found[0].startswith("course/00") and found == course + solutions  # every lab's, the newest last
    assert len(found) == len(list((ROOT / "course").glob("*.ipynb"))) + len(list((ROOT / "solutions").glob("*/*.ipynb")))
    assert gpu_check.notebooks(ROOT, ["course/01"]) == [ROOT / "course" / "01_blas_roofline.ipynb"]


def test_every_gpu_only_cell_of_my_sections_records_what_it_measures():
    """§1 and §5: a GPU-only cell that times something passes its numbers through gc.record."""
    for name in ("course/01_blas_roofline.py", "course/05_grids_blocks_warps.py"):
        text = (ROOT / name).read_text(encoding="utf-8")
        cells = text.split("# %%")
        for cell in cells:
            if gpu_check.GPU_CELL.search(cell) and "gc.measure(" in cell:
                assert "gc.record(" in cell, f"{name}: a GPU cell measures without gc.record:\n{cell[:300]}"
