"""The executor against kernels no one here wrote (tests/simt_corpus: numba-cuda's tests and documentation
examples, GPU-Puzzles' 14 puzzles): it must give numba's CUDA simulator's answer on every kernel both run (the
simulator in a child process, NUMBA_ENABLE_CUDASIM=1), the answer the source states where it states one, and no
false report (race, barrier divergence, use of uninitialised memory) on any of them — while the same kernels with
a bug planted are reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpucourse import simt
from tests.simt_corpus import kernels as K

MM_TPB, TPB = K.MM_TPB, K.TPB  # shapes of shared arrays are plain names: numba-cuda refuses `K.TPB` there

ROOT = Path(__file__).resolve().parent.parent
cuda = simt.cuda


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Every simulator-capable case's outputs from numba's CUDA simulator (one child process)."""
    out = tmp_path_factory.mktemp("corpus") / "sim.npz"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "tests.simt_corpus.runner", str(out)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


def _executor(case: K.Case) -> tuple[list, simt.KernelReport]:
    args = case.args()
    case.launch(args)
    kernel = case.kernel if isinstance(case.kernel, simt.Kernel) else K.compute_totals
    return args, kernel.last_report


IDS = [c.name for c in K.CASES]


def test_the_corpus_covers_the_sources():
    sources = {c.source.split(" ")[0] for c in K.CASES}
    assert sources == {"srush/GPU-Puzzles", "NVIDIA/numba-cuda"}
    puzzles = {c.source.split("Puzzle ")[1].split(",")[0] for c in K.CASES if "Puzzle" in c.source}
    assert puzzles == {str(n) for n in range(1, 15)}, "all 14 GPU-Puzzles"
    assert len(K.CASES) >= 40 and sum(c.sim for c in K.CASES) >= 34


@pytest.mark.parametrize("k", range(len(K.CASES)), ids=IDS)
def test_case_agrees_and_is_reported_clean(k, simulated):
    case = K.CASES[k]
    args, report = _executor(case)
    assert report.ok, f"{case.name} ({case.source}): false report {report.problems()}"
    if case.expect is not None:
        for j, want in zip(case.outputs, case.expect(*case.args())):
            np.testing.assert_allclose(np.asarray(args[j], dtype=np.float64), np.asarray(want, dtype=np.float64),
                                       rtol=1e-5, atol=1e-6, err_msg=f"{case.name}: output {j} vs the source")
    if case.sim:
        assert f"{k}:error" not in simulated, f"numba's simulator failed on {case.name}: {simulated[f'{k}:error']}"
        for j in case.outputs:
            np.testing.assert_allclose(np.asarray(args[j], dtype=np.float64),
                                       np.asarray(simulated[f"{k}:{j}"], dtype=np.float64), rtol=1e-6, atol=0,
                                       err_msg=f"{case.name}: output {j}, executor vs numba's simulator")


# -- the same kernels with a bug planted: each must be reported -----------------------------------------------------

@cuda.jit
def matmul_no_sync(out, a, b, size):  # puzzle 14 without its barriers
    a_shared = cuda.shared.array((MM_TPB, MM_TPB), np.float32)
    b_shared = cuda.shared.array((MM_TPB, MM_TPB), np.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    local_i, local_j = cuda.threadIdx.x, cuda.threadIdx.y
    acc = 0.0
    for k in range(0, size, K.MM_TPB):
        if i < size and k + local_j < size:
            a_shared[local_i, local_j] = a[i, k + local_j]
        if j < size and k + local_i < size:
            b_shared[local_i, local_j] = b[k + local_i, j]
        for local_k in range(min(K.MM_TPB, size - k)):
            acc += a_shared[local_i, local_k] * b_shared[local_k, local_j]
    if i < size and j < size:
        out[i, j] = acc


@cuda.jit
def block_sum_sync_in_branch(out, a, size):  # puzzle 12 with the barrier inside the branch
    cache = cuda.shared.array(TPB, np.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    cache[local_i] = a[i] if i < size else 0.0
    cuda.syncthreads()
    step = 1
    while step < K.TPB:
        if local_i % (2 * step) == 0:
            cache[local_i] += cache[local_i + step]
            cuda.syncthreads()
        step *= 2
    if local_i == 0:
        out[cuda.blockIdx.x] = cache[0]


@cuda.jit
def pool_unguarded_tile(out, a, size):  # puzzle 9 that forgets to load the last elements, then uses them
    shared = cuda.shared.array(TPB, np.float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    local_i = cuda.threadIdx.x
    if i < size - 2:
        shared[local_i] = a[i]
    cuda.syncthreads()
    if i < size:
        out[i] = shared[local_i] + (shared[local_i - 1] if local_i >= 1 else 0.0)


def test_planted_bugs_are_reported():
    n = 8
    r = simt.run(matmul_no_sync, (3, 3), (K.MM_TPB, K.MM_TPB), np.zeros((n, n)), np.arange(n * n).reshape(n, n),
                 np.arange(n * n).reshape(n, n).T.copy(), n)
    assert r.race_count > 0 and r.races[0].space == "shared"
    r = simt.run(block_sum_sync_in_branch, 2, K.TPB, np.zeros(2), np.arange(15), 15)
    assert r.sync_errors and r.sync_errors[0].kind == "barrier divergence"
    r = simt.run(pool_unguarded_tile, 1, K.TPB, np.zeros(8), np.arange(8), 8)
    assert r.uninitialized_count == 2 and "shared[6]" in str(r.uninitialized[0])
