"""The kernel executor's speed, measured (prints numbers; asserts nothing — machines here are
noisy).

    python3 -m grader.benchmark_simt              # matmul: executor vs numba's simulator; each
                                                  # kernel check
    python3 -m grader.benchmark_simt --no-simulator

1. A 64×64 tiled matmul (16×16 tiles, 16 blocks of 256 threads) on the course's SIMT executor and on
   numba's CUDA simulator, on the same machine in the same run (the simulator in a child process:
   numba decides once per process which ``numba.cuda`` it is). Wall and CPU seconds, and the OS
   threads each started.
2. Every kernel exercise's visible and hidden checks (labs 5 and 6), with the solution notebook's
   own kernel. Budget (issue 15): a puzzle's visible + hidden checks in at most 2 s on this 2-core
   machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import threading
import time
from typing import Any
from pathlib import Path

import numpy as np

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # the child process: numba's CUDA simulator
    from numba import cuda
else:
    from gpucourse.simt import cuda

CHECK_BUDGET_S = 2.0
N, TILE = 64, 16


@cuda.jit
def tiled_matmul(A, B, C):
    sA = cuda.shared.array((TILE, TILE), np.float32)
    sB = cuda.shared.array((TILE, TILE), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    acc = 0.0
    for t in range((A.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sA[ty, tx] = A[row, k + tx] if row < A.shape[0] and k + tx < A.shape[1] else 0.0
        sB[ty, tx] = B[k + ty, col] if k + ty < B.shape[0] and col < B.shape[1] else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def matmul_once() -> dict:
    """One launch of the 64×64 tiled matmul here: wall s, CPU s, OS threads started, max error vs
    NumPy."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((N, N)).astype(np.float32)
    B = rng.standard_normal((N, N)).astype(np.float32)
    C = np.zeros((N, N), np.float32)
    started = []
    real_start = threading.Thread.start

    def counting_start(self):  # every OS thread the launch starts
        started.append(self)
        return real_start(self)

    threading.Thread.start = counting_start
    try:
        grid = (math.ceil(N / TILE), math.ceil(N / TILE))
        t0, cpu0 = time.perf_counter(), time.process_time()
        tiled_matmul[grid, (TILE, TILE)](A, B, C)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        threading.Thread.start = real_start
    return {
        "wall": wall,
        "cpu": cpu,
        "threads": len(started),
        "error": float(np.abs(C - A @ B).max()),
    }


def simulator_matmul() -> dict:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-m", "grader.benchmark_simt", "--child"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=900,
    )
    if out.returncode != 0:
        raise RuntimeError(f"numba's simulator failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def solution_kernels() -> dict[str, object]:
    """The solution notebooks' own kernels (labs 5 and 6), defined as a notebook cell defines
    them."""
    from grader import kernels
    from grader.course import ROOT
    from grader.labs import lab05_kernels as lab5
    from grader.scratch import load_notebook, solution_cells

    out = {}
    for lab, names in (("lab05_kernels", ("scale_shift", "ramp_2d", "block_sum", "tiled_matmul",
                                          "halvings_regrouped")),
                       ("lab06_xla_sass", ("scale_bias_relu_kernel",))):
        cells = solution_cells(load_notebook(ROOT / "solutions" / lab / f"{lab}.ipynb"))
        ns = {
            "np": np,
            "math": math,
            "BLOCK": lab5.REDUCE_BLOCK,
            "TM": lab5.TILE_M,
            "TN": lab5.TILE_N,
            "TK": lab5.TILE_K,
            "REGROUP_BLOCK": lab5.REGROUP_BLOCK,
        }
        for name in names:  # a solution cell's grade_id is its exercise's name
            if name in cells:
                out[name] = kernels.load_kernel(cells[name], name, ns, cuda)
    out.update(puzzle_kernels())
    return out


def puzzle_kernels(jit: Any = None) -> dict[str, object]:
    """Lab 5b's solution kernels (every puzzle's solution cell has the puzzle's name as grade_id),
    with the lab's constants in scope, compiled by ``jit`` (a ``cuda`` module: the executor's by
    default, numba's on a GPU)."""
    from grader import kernels
    from grader.course import ROOT
    from grader.labs import lab05b_kernel_puzzles as lab5b
    from grader.scratch import load_notebook, solution_cells

    lab = "lab05b_kernel_puzzles"
    cells = solution_cells(load_notebook(ROOT / "solutions" / lab / f"{lab}.ipynb"))
    ns = {"np": np, "math": math, **{k: getattr(lab5b, k) for k in dir(lab5b) if k.isupper()}}
    return {
        p.name: kernels.load_kernel(cells[p.name], p.name, ns, jit or cuda) for p in lab5b.ORDER
    }


def check_times() -> list[tuple[str, float, float]]:
    """(exercise, visible s, hidden s) for every kernel exercise, checked with its solution
    kernel."""
    from grader.labs import lab05_kernels as lab5
    from grader.labs import lab05b_kernel_puzzles as lab5b
    from grader.labs import lab06_xla_sass as lab6

    problems = {p.name: p for lab in (lab5, lab5b, lab6) for p in lab.problems.values()}
    rows = []
    for name, kernel in solution_kernels().items():
        p = problems[name]
        times = []
        for hidden in (False, True):
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                p.check(kernel, hidden=hidden)
            times.append(time.perf_counter() - t0)
        rows.append((name, *times))
    return rows


def report(simulator: bool = True) -> None:
    print(
        f"{'64×64 tiled matmul (16×16 tiles, 4,096 threads)':50} {'wall s':>8} {'CPU s':>8}"
        f" {'OS threads':>11}"
    )
    mine = matmul_once()
    print(f"{'  course SIMT executor (gpucourse.simt)':50} {mine['wall']:8.2f} {mine['cpu']:8.2f} "
          f"{mine['threads']:11d}", flush=True)
    if simulator:
        sim = simulator_matmul()
        print(
            f"{'  numba CUDA simulator (same machine, same run)':50} {sim['wall']:8.2f}"
            f" {sim['cpu']:8.2f} {sim['threads']:11d}"
        )
        print(f"  executor / simulator wall time: {mine['wall'] / sim['wall']:.2f}×"
              f"{'  SLOWER THAN THE SIMULATOR' if mine['wall'] > sim['wall'] else ''}")
    print(
        f"\n{'kernel exercise (solution kernel)':50} {'visible s':>9} {'hidden s':>9}"
        f" {'total s':>8}"
    )
    for name, vis, hid in check_times():
        flag = "  OVER BUDGET" if vis + hid > CHECK_BUDGET_S else ""
        print(f"  {name:48} {vis:9.2f} {hid:9.2f} {vis + hid:8.2f}{flag}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.benchmark_simt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--no-simulator", action="store_true", help="skip numba's simulator (it takes ~10 s)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(matmul_once()))
        return 0
    report(simulator=not args.no_simulator)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
