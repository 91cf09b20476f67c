"""The register-level weight-stationary array (instructor only): every PE's activation and
partial-sum registers, clocked edge by edge with lab 7's exercise-1 rule
(``grader.answers.lab07_tpu.pe_step``), and the skewed matmul loop of exercise 2. The course does
not install it: it writes the runs course/07 shows (§7.1's frames and animation, §7.2's traffic,
§7.5's data-independent schedule) to ``gpucourse/data/systolic_runs.json``, which the course reads
with ``gpucourse.systolic.stored_runs``. ``tests/test_systolic.py`` checks that file is what this
model gives today.

    python -m grader.answers.systolic_course        # rewrite the data file
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from gpucourse.systolic import DATA, Frame, SystolicRun, WeightStationaryArray, cycles

from .lab07_tpu import pe_step


class RegisterArray:
    """A ``rows × cols`` weight-stationary array with its PE registers, clocked by :meth:`tick`."""

    def __init__(
        self, W: Any, rows: int | None = None, cols: int | None = None, record: bool = False
    ):
        # the exercise side's weight load: shapes, checks, padding
        loaded = WeightStationaryArray(W, rows, cols)
        self.rows, self.cols, self.K, self.N, self.W = (
            loaded.rows,
            loaded.cols,
            loaded.K,
            loaded.N,
            loaded.W,
        )
        self.a = np.zeros((self.rows, self.cols))
        self.p = np.zeros((self.rows, self.cols))
        # activation row each PE holds (-1 = bubble)
        self._tag = np.full((self.rows, self.cols), -1)
        self.cycle = 0
        self.useful_macs = 0
        self.activation_loads = 0
        self.record = record
        self.frames: list[Frame] = []

    def tick(self, a_in: np.ndarray, rows_in: np.ndarray) -> np.ndarray:
        col0 = np.zeros(self.rows)
        col0[: self.K] = a_in
        tags_in = np.full(self.rows, -1)
        tags_in[: self.K] = rows_in
        self.activation_loads += int(np.count_nonzero(tags_in >= 0))
        self.a, self.p = pe_step(self.a, self.p, self.W, col0)
        tag = np.empty_like(self._tag)
        tag[:, 0] = tags_in
        tag[:, 1:] = self._tag[:, :-1]
        self._tag = tag
        active = (
            (tag >= 0)
            & (np.arange(self.rows)[:, None] < self.K)
            & (np.arange(self.cols)[None, :] < self.N)
        )
        self.useful_macs += int(active.sum())
        bottom = self.p[self.rows - 1, : self.N].copy()
        # column n's result for activation row m leaves the bottom at cycle m + (rows - 1) + n
        if self.record:
            out = {n: (self.cycle - (self.rows - 1) - n, float(bottom[n])) for n in range(self.N)
                   if self.cycle - (self.rows - 1) - n >= 0}
            self.frames.append(
                Frame(self.cycle, self.a.copy(), self.p.copy(), active, tag.copy(), out)
            )
        self.cycle += 1
        return bottom


def skewed_inputs(A: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The left-edge inputs at cycle t: ``A[t − k, k]`` enters row k (0 outside the matrix) and its
    row index."""
    M, K = A.shape
    m = t - np.arange(K)
    valid = (m >= 0) & (m < M)
    values = np.where(valid, A[np.clip(m, 0, M - 1), np.arange(K)], 0.0)
    return values, np.where(valid, m, -1)


def matmul(
    A: Any, W: Any, rows: int | None = None, cols: int | None = None, record: bool = False
) -> SystolicRun:
    """``A @ W`` on the register-level array, cycle by cycle (a tile in a larger array: ``cycles(M,
    rows, cols)``)."""
    A, W = np.array(A, np.float64), np.array(W, np.float64)  # (M, K) activations, (K, N) weights
    M, K = A.shape
    N = W.shape[1]
    hw = RegisterArray(W, rows, cols, record=record)
    R, n_cols = hw.rows, hw.cols
    total = cycles(M, R, n_cols)
    C = np.zeros((M, N), dtype=np.float64)
    for t in range(total):
        bottom = hw.tick(*skewed_inputs(A, t))
        # column n's result for row m leaves at cycle m + (R - 1) + n
        m = t - (R - 1) - np.arange(N)
        ok = (0 <= m) & (m < M)
        C[m[ok], np.arange(N)[ok]] = bottom[ok]
    for f in hw.frames:  # keep only results of real rows in the frames' output lists
        f.out = {n: v for n, v in f.out.items() if 0 <= v[0] < M}
    err = float(np.max(np.abs(C - A @ W))) if C.size else 0.0
    return SystolicRun(
        C,
        total,
        (M, K, N),
        (R, n_cols),
        hw.useful_macs,
        K * N,
        hw.activation_loads,
        M * N,
        hw.frames,
        A,
        W,
        err,
    )


def _plain(run: SystolicRun, keep: tuple[str, ...], registers: bool = True) -> dict[str, Any]:
    d: dict[str, Any] = {
        "cycles": run.cycles,
        "shape": list(run.shape),
        "array": list(run.array),
        "useful_macs": run.useful_macs,
        "weight_loads": run.weight_loads,
        "activation_loads": run.activation_loads,
        "output_stores": run.output_stores,
        "max_error": run.max_error,
    }
    for name in keep:
        d[name] = getattr(run, name).tolist()
    if run.frames:
        d["frames"] = [
            {
                "cycle": f.cycle,
                "active": f.active.astype(int).tolist(),
                "out": [[n, m, v] for n, (m, v) in sorted(f.out.items())],
                **(
                    {"a": f.a.tolist(), "p": f.p.tolist(), "row_of": f.row_of.tolist()}
                    if registers
                    else {}
                ),
            }
            for f in run.frames
        ]
    return d


def course_data() -> dict[str, Any]:
    """The runs course/07 shows."""
    # §7.1: 4×3 times 3×3
    A = np.array([1, 2, 0, 0, 1, 3, 2, 0, 1, 1, 1, 1], np.float64).reshape(4, 3)
    W = np.array([1, 0, 2, 0, 1, 1, 3, 1, 0], np.float64).reshape(3, 3)
    # §7.2: K = N = 32, batches 1, 16, 128 (the course draws the same matrices)
    rng = np.random.Generator(np.random.PCG64(7))
    traffic = []
    for M in (1, 16, 128):
        # drawn in the course's order: activations, then weights
        A_in = rng.standard_normal((M, 32))
        traffic.append(_plain(matmul(A_in, rng.standard_normal((32, 32))), ()))
    rng = np.random.default_rng(75)  # §7.5: the same 8×8 weights, three very different inputs
    inputs = (np.zeros((12, 8)), rng.standard_normal((12, 8)), 1e6 * rng.standard_normal((12, 8)))
    return {
        "source": (
            "grader/answers/systolic_course.py: the register-level array (PE registers clocked with"
            " lab 7's exercise-1 rule), python -m grader.answers.systolic_course"
        ),
        "runs": {
            "cycle_by_cycle": [_plain(matmul(A, W, record=True), ("C", "A", "W"))],
            "traffic": traffic,
            "data_independent": [
                _plain(matmul(A_in, np.ones((8, 8)), record=True), ("A",), registers=False)
                for A_in in inputs
            ],
        },
    }


def course_data_text() -> str:
    return json.dumps(course_data(), sort_keys=True, separators=(",", ":")) + "\n"


def write_course_data() -> None:
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(course_data_text(), encoding="utf-8")


if __name__ == "__main__":
    write_course_data()
    print(f"wrote {DATA}")
