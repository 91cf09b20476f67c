"""A cycle-stepped weight-stationary systolic array: the TPU's matrix unit (MXU), one clock at a
time.

The array is a grid of ``rows × cols`` processing elements (PEs). In the *weight-stationary*
dataflow the compiler first loads a weight tile ``W`` (``K × N``, K ≤ rows, N ≤ cols) so that PE
``(k, n)`` holds ``W[k, n]`` for the whole tile. Then, every clock cycle, each PE

1. takes the activation arriving from its left neighbour and the partial sum arriving from above,
2. computes ``psum_out = psum_in + a · w`` (one multiply-accumulate, MAC),
3. passes the activation to its right neighbour and ``psum_out`` to the PE below (registers, no
   memory).

Row ``m`` of the activations ``A`` (``M × K``) enters *skewed*: ``A[m, k]`` enters array row ``k``
at cycle ``m + k``, so it meets the partial sum of output ``(m, n)`` in PE ``(k, n)`` exactly at
cycle ``m + k + n``. ``C[m, n]`` leaves the bottom of column ``n`` at cycle ``m + (K − 1) + n``. The
last result leaves at cycle ``(M − 1) + (K − 1) + (N − 1)``, hence the cycle count :func:`cycles`
``= M + K + N − 2`` (cycles numbered from 0, the first activation entering at cycle 0; weight
loading is counted separately).

What this module installs: the array seen from its edges (:class:`WeightStationaryArray`, a delay
line that lab 7's exercise 2 clocks), the schedule, the tiled array with weight shift chains
(:func:`run_tiled`) and its closed form (:class:`TiledGemm`), and the figures. The PE registers'
clock edge and the skewed matmul loop are lab 7's exercises 1 and 2: their register-level model is
the instructor's, and the course shows its runs as data (:func:`stored_runs`).

This module knows no backend (pure NumPy) and no timing: cycles are the hardware's clock, not
seconds. The real MXU is 128 × 128 (TPU v2–v5) or 256 × 256 (TPU v6e, "Trillium"); see
:mod:`gpucourse.tpu`. A large GEMM is cut into weight tiles that stream through the array with
double-buffered weights (:func:`run_tiled`, checked against the closed form :class:`TiledGemm`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np


def cycles(M: int, K: int, N: int) -> int:
    """Clock cycles from the first activation entering to the last result leaving, for
    ``(M×K)·(K×N)`` on a weight-stationary array exactly ``K × N`` large: fill (K−1) + drain (N−1) +
    stream (M)."""
    return M + K + N - 2


@dataclass
class Frame:
    """The array's state at the end of one cycle (for figures and animations)."""

    cycle: int
    a: np.ndarray  # (K, N) activations in the PEs
    p: np.ndarray  # (K, N) partial sums leaving each PE
    active: np.ndarray  # (K, N) bool: the PE did a useful MAC this cycle
    row_of: np.ndarray  # (K, N) int: which activation row m the PE worked on (-1 = bubble)
    # column n -> (m, C[m, n]) results leaving the bottom this cycle
    out: dict[int, tuple[int, float]]


class WeightStationaryArray:
    """A ``rows × cols`` weight-stationary array, clocked by :meth:`tick`: what leaves its bottom
    edge, cycle by cycle.

    Usage (what the compiler's schedule does)::

        hw = WeightStationaryArray(W)  # load a K×N weight tile (K <= rows, N <= cols)
        for t in range(cycles(M, K, N)):
            out = hw.tick(a_in)         # a_in: (K,) activations for the left edge this cycle
            # out: (N,) partial sums leaving the bottom edge this cycle

    This is the array seen from outside, as the compiler sees it: a *delay line*. It keeps what
    entered the left edge and returns, at cycle t, what the PE registers would deliver at the bottom
    of column n — the sum over rows k of ``W[k, n]`` times the activation that entered row k at
    cycle ``t − (rows − 1 − k) − n`` (it reaches column n after n cycles, and its product then
    travels down the remaining rows). It keeps no PE registers: writing the registers' clock edge is
    lab 7's exercise 1 (the course notebook shows the register-level array's frames as data).

    A real array can be faulty: ``stuck=(k, n, w)`` makes PE ``(k, n)``'s weight register stuck at
    ``w`` (it multiplies by ``w`` whatever was loaded; ``W`` still holds what was loaded). What such
    an array delivers is ``A @ W`` with that one weight replaced — the array's result, which only a
    schedule that reads the bottom edge gets (lab 7's checker hands one to ``systolic_matmul``).

    Args:
        W: the weight tile, (K, N) with K <= rows and N <= cols.
        rows, cols: the array's shape (None: the tile's).
        stuck: None, or (k, n, w): PE (k, n) (k < K, n < N) multiplies by w instead of W[k, n].
    """

    # grading sends a clocked array to the grader as its attributes (grader.pipeline.wire)
    __wire__ = "state"

    def __init__(
        self,
        W: Any,
        rows: int | None = None,
        cols: int | None = None,
        stuck: tuple[int, int, float] | None = None,
    ):
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2:
            raise ValueError(f"W must be a matrix, got shape {W.shape}")
        K, N = W.shape
        self.rows, self.cols = rows or K, cols or N
        if K > self.rows or N > self.cols:
            raise ValueError(
                f"a {K}×{N} weight tile does not fit a {self.rows}×{self.cols} array: tile it"
            )
        self.K, self.N = K, N
        self.W = np.zeros((self.rows, self.cols))
        self.W[:K, :N] = W  # unused PEs hold weight 0
        if stuck is not None:
            k, n, w = stuck
            if not (0 <= k < K and 0 <= n < N):
                raise ValueError(f"stuck PE ({k}, {n}) is outside the {K}×{N} weight tile")
            stuck = (int(k), int(n), float(w))
        self.stuck = stuck
        # (rows,) what entered the left edge, one per cycle clocked
        self.entered: list[np.ndarray] = []
        self.cycle = 0
        self.weight_loads = K * N  # weights fetched from memory: once per tile
        # (N,) values that left the bottom edge, one per cycle clocked
        self.outputs: list[np.ndarray] = []

    def tick(self, a_in: Any) -> np.ndarray:
        """Advance one clock cycle. ``a_in``: (K,) activations entering rows 0..K−1 (use 0 for
        bubbles). Returns the (N,) values leaving the bottom of columns 0..N−1."""
        a_in = np.asarray(a_in, dtype=np.float64).reshape(-1)
        if a_in.shape[0] != self.K:
            raise ValueError(
                f"a_in must hold {self.K} values (one per weight row), got {a_in.shape[0]}"
            )
        edge = np.zeros(self.rows)
        edge[: self.K] = a_in
        self.entered.append(edge)
        history = np.vstack([np.zeros((1, self.rows))] + self.entered)  # row 0: nothing entered yet
        k = np.arange(self.rows)[:, None]
        # (rows, cols) entry cycle
        when = self.cycle - (self.rows - 1 - k) - np.arange(self.cols)[None, :]
        seen = history[np.maximum(when, -1) + 1, np.broadcast_to(k, when.shape)]  # 0 before cycle 0
        bottom = (self.wired() * seen).sum(axis=0)[: self.N]
        self.outputs.append(bottom.copy())
        self.cycle += 1
        return bottom

    def wired(self) -> np.ndarray:
        """(rows, cols): the weights the PEs actually multiply by (``W``, but a stuck PE's)."""
        weights = self.W.copy()
        stuck = getattr(self, "stuck", None)
        if stuck is not None:
            weights[stuck[0], stuck[1]] = stuck[2]
        return weights

    def __repr__(self) -> str:
        fault = getattr(self, "stuck", None)
        fault_text = (
            f", PE ({fault[0]}, {fault[1]})'s weight stuck at {fault[2]:g}" if fault else ""
        )
        return (
            f"<WeightStationaryArray: a {self.K}×{self.N} weight tile on {self.rows}×{self.cols}"
            f" PEs{fault_text}, clocked {self.cycle} cycles>"
        )


@dataclass
class SystolicRun:
    """What one weight-stationary matmul did on the register-level array (stored runs:
    :func:`stored_runs`)."""

    C: np.ndarray | None  # (M, N) result (None where only its error was stored)
    cycles: int  # clock cycles used (first input to last output)
    shape: tuple[int, int, int]  # (M, K, N)
    array: tuple[int, int]  # (rows, cols)
    useful_macs: int  # M·K·N
    weight_loads: int  # elements of W fetched from memory
    activation_loads: int  # elements of A fetched from memory
    output_stores: int  # elements of C written to memory
    frames: list[Frame] = field(default_factory=list, repr=False)
    A: np.ndarray | None = None  # (M, K) the activations that streamed through
    W: np.ndarray | None = None  # (K, N) the stationary weights
    max_error: float = 0.0  # max |C − A @ W| (float64 NumPy), computed where the run was made

    @property
    def utilization(self) -> float:
        """Useful MACs over the MACs the whole array could have done in these cycles."""
        return self.useful_macs / (self.cycles * self.array[0] * self.array[1])

    @property
    def memory_traffic(self) -> int:
        """Elements moved between memory and the array (weights + activations + results)."""
        return self.weight_loads + self.activation_loads + self.output_stores


DATA = Path(__file__).parent / "data" / "systolic_runs.json"


def _run(d: dict[str, Any]) -> SystolicRun:
    arr = lambda v: None if v is None else np.asarray(v, dtype=np.float64)  # noqa: E731
    frames = [
        Frame(
            f["cycle"],
            arr(f.get("a")),
            arr(f.get("p")),
            np.asarray(f["active"], dtype=bool),
            None if f.get("row_of") is None else np.asarray(f["row_of"], dtype=int),
            {int(n): (int(m), float(v)) for n, m, v in f["out"]},
        )
        for f in d.get("frames", [])
    ]
    return SystolicRun(
        arr(d.get("C")),
        int(d["cycles"]),
        tuple(d["shape"]),
        tuple(d["array"]),
        int(d["useful_macs"]),
        int(d["weight_loads"]),
        int(d["activation_loads"]),
        int(d["output_stores"]),
        frames,
        arr(d.get("A")),
        arr(d.get("W")),
        float(d["max_error"]),
    )


def stored_runs(path: Path = DATA) -> dict[str, list[SystolicRun]]:
    """The register-level array's runs the course notebook shows (§7.1, §7.2, §7.5), as data.

    They were computed by the instructor's register-level model (every PE's activation and
    partial-sum registers, clocked edge by edge: the rule lab 7's exercise 1 asks for), which the
    course does not install; a test checks that this file is what that model gives today. Returns
    ``{name: [run, ...]}``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: [_run(d) for d in runs] for name, runs in data["runs"].items()}


def schedule(M: int, K: int, N: int) -> np.ndarray:
    """The static schedule, known before any data exists: ``S[m, k, n]`` = the cycle at which PE (k,
    n) performs the MAC of output (m, n) — always ``m + k + n``."""
    m, k, n = np.meshgrid(np.arange(M), np.arange(K), np.arange(N), indexing="ij")
    return m + k + n


# -- tiling a large GEMM onto a fixed array: double-buffered weights, cycle by cycle ---------------
#
# A layer's K×N weight matrix is cut into rows×cols tiles (edge tiles padded with zeros). Each PE
# has a weight
# *shift register* (the column's weight load chain) and `buffers` weight registers. Loading a tile
# shifts its rows down every column's chain, `k = weight_rows_per_cycle` rows per cycle, so a tile
# needs L = ceil(rows/k) cycles of the column's weight port; column n runs n cycles behind column 0,
# like the activations of row k run k cycles behind row 0. When the chain holds the whole tile, the
# column *latches* it into one weight register. Every activation carries the number of the tile it
# belongs to and multiplies by the register holding that tile: the new weights "take effect with the
# advancing wave alongside the first data of a new block" (Jouppi et al., ISCA 2017).
#
# The load rate is a parameter of this model, not a published figure. k = 1 (L = rows) is TPU v1's
# mechanism: "the 256 cycles it takes to shift a tile in" on its 256-wide array (same paper). Google
# has not published the weight path of the MXUs of TPU v2-v6; the JAX scaling book says that with
# weights in VMEM an arithmetic intensity of "only 10-20" reaches peak, which a 128-cycle load per
# tile cannot give (course §7.3 shows both).
#
# Constraints of a schedule (E_t: cycle at which column 0 latches tile t, column n at E_t + n; S_t:
# cycle at which tile t's first activation row enters array row 0; a latch at cycle c is seen by
# MACs from cycle c + 1):
#   weight port   E_t ≥ E_{t−1} + L             (a column's chain shifts one tile at a time)
#   activations   S_t ≥ S_{t−1} + M             (the left edge takes one activation row per cycle)
#   latched       S_t ≥ E_t + 1                 (PE (0, n) first uses tile t at S_t + n)
#   register free E_t ≥ S_{t−B} + M + rows − 2  (tile t − B, in the same register, has left every
#   row of the
#                                                column: a column latches all its rows at once) In
#                                                steady state a tile costs max(M, L, (M + rows −
#                                                1)/B) cycles: the stream, the weight load, or the
#                                                weight registers. With k = 1 and B = 2 that is
#                                                max(M, rows) — the weight load when M < rows, the
#                                                stream otherwise — and only the pipeline fill and
#                                                drain of the last tile (rows + cols − 2) is paid on
#                                                top. With B = 1 the latch must wait for the
#                                                previous tile to drain out of the column: M + rows
#                                                − 1 per tile. A fast weight load (large k) with few
#                                                registers is bound by the registers: a column
#                                                cannot latch tile t until tile t − B has drained
#                                                out of it.


class ScheduleHazard(RuntimeError):
    """The cycle-stepped array caught a schedule that would compute a wrong result (weights not yet
    latched, overwritten while still in use, or two things wanting the same port in the same
    cycle)."""


@dataclass(frozen=True)
class TileTimes:
    """When one weight tile is latched and streamed (cycles; column n latches at ``latch + n``)."""

    latch: int  # E_t: cycle at which column 0 latches the tile into its weight register
    start: int  # S_t: cycle at which the tile's first activation row enters array row 0


def tile_schedule(
    M: int, tiles: int, rows: int, buffers: int = 2, weight_rows_per_cycle: int = 1
) -> list[TileTimes]:
    """The earliest legal schedule of ``tiles`` weight tiles (see the constraints above). The first
    tile is latched one cycle before its first activation reaches each column (``latch = −1``:
    column n at cycle n − 1); its weights were shifted in while the previous layer finished, so its
    load is not counted."""
    if min(M, tiles, rows, buffers, weight_rows_per_cycle) < 1:
        raise ValueError("M, tiles, rows, buffers and weight_rows_per_cycle must be positive, got "
                         f"{(M, tiles, rows, buffers, weight_rows_per_cycle)}")
    load = math.ceil(rows / weight_rows_per_cycle)  # L: cycles of a column's weight port per tile
    out = [TileTimes(-1, 0)]
    for t in range(1, tiles):
        latch = out[-1].latch + load
        if t >= buffers:
            latch = max(latch, out[t - buffers].start + M + rows - 2)
        out.append(TileTimes(latch, max(out[-1].start + M, latch + 1)))
    return out


def weight_tiles(K: int, N: int, rows: int, cols: int) -> list[tuple[slice, slice]]:
    """The (k-slice, n-slice) of W in each weight tile, in the order the array runs them (n outer, k
    inner)."""
    return [(slice(k, min(k + rows, K)), slice(n, min(n + cols, N)))
            for n in range(0, N, cols) for k in range(0, K, rows)]


@dataclass
class TiledRun:
    """What a tiled GEMM did on the cycle-stepped array."""

    C: np.ndarray  # (M, N) result
    cycles: int  # from cycle 0 (first activation enters) to the last result leaving, inclusive
    shape: tuple[int, int, int]  # (M, K, N)
    array: tuple[int, int]  # (rows, cols)
    buffers: int
    schedule: list[TileTimes]
    useful_macs: int
    busy: np.ndarray  # (cycles,) useful MACs in each cycle

    @property
    def utilization(self) -> float:
        return self.useful_macs / (self.cycles * self.array[0] * self.array[1])


def _pick(slot: np.ndarray, stack: np.ndarray) -> np.ndarray:
    """stack[slot[r, n], r, n] for every PE (which weight register each PE reads this cycle)."""
    if len(stack) == 1:
        return stack[0]
    if len(stack) == 2:
        return np.where(slot == 0, stack[0], stack[1])
    return np.choose(slot, stack)


def run_tiled(A: Any, W: Any, rows: int, cols: int, buffers: int = 2,
              schedule: list[TileTimes] | None = None, weight_rows_per_cycle: int = 1) -> TiledRun:
    """``A @ W`` tiled onto a ``rows × cols`` weight-stationary array with weight shift chains
    (``weight_rows_per_cycle`` rows shift in per cycle) and ``buffers`` weight registers per PE,
    clocked cycle by cycle. ``schedule`` defaults to :func:`tile_schedule`; any schedule that breaks
    a constraint raises :class:`ScheduleHazard` at the cycle where the array would go wrong."""
    A = np.asarray(A, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    M, K = A.shape
    if W.ndim != 2 or W.shape[0] != K:
        raise ValueError(f"inner dimensions differ: A is {A.shape}, W is {W.shape}")
    N = W.shape[1]
    R, n_cols = int(rows), int(cols)
    parts = weight_tiles(K, N, R, n_cols)
    T = len(parts)
    kw = int(weight_rows_per_cycle)  # rows of weights a column's port takes per cycle
    L = math.ceil(R / kw)  # cycles to shift one tile into a column
    sched = schedule if schedule is not None else tile_schedule(M, T, R, buffers, kw)
    if len(sched) != T:
        raise ValueError(f"the schedule has {len(sched)} entries for {T} tiles")
    padded = np.zeros((T, R, n_cols))  # weight tiles, zero-padded at the edges
    for t, (k_slice, n_slice) in enumerate(parts):
        padded[t, : k_slice.stop - k_slice.start, : n_slice.stop - n_slice.start] = W[
            k_slice, n_slice
        ]
    # real rows of each tile
    k_len = np.array([k_slice.stop - k_slice.start for k_slice, _ in parts])
    n_len = np.array([n_slice.stop - n_slice.start for _, n_slice in parts])  # real columns
    n_start = np.array([n_slice.start for _, n_slice in parts])

    r_idx, n_idx = np.arange(R)[:, None], np.arange(n_cols)[None, :]
    chain = np.zeros((R, n_cols))  # weight shift registers
    regs = np.zeros((buffers, R, n_cols))  # weight registers
    held = np.full((buffers, R, n_cols), -1)  # which tile each weight register holds
    a = np.zeros((R, n_cols))  # activation registers
    a_tile = np.full((R, n_cols), -1)  # tile of the activation each PE holds (-1: bubble)
    a_row = np.full((R, n_cols), -1)  # its row m
    # the products of the last R cycles (ring buffer, by cycle mod R)
    macs = np.zeros((R, R, n_cols))
    rows_up = np.arange(R)
    C = np.zeros((M, N))
    last = sched[-1].start + (M - 1) + (R - 1) + (n_cols - 1)
    # the first tile's weights shift in before cycle 0
    first = min(0, min(s.latch for s in sched) - L + 1)
    busy = np.zeros(last + 1, dtype=np.int64)
    useful = 0
    for c in range(first, last + 1):
        # left edge: row k receives A[m, k] of tile t when c = S_t + m + k
        col0, tile0, row0 = np.zeros(R), np.full(R, -1), np.full(R, -1)
        for t, s in enumerate(sched):
            m = c - s.start - np.arange(R)
            ok = (m >= 0) & (m < M)
            if ok.any():
                if (tile0[ok] >= 0).any():
                    raise ScheduleHazard(
                        f"cycle {c}: two tiles want the left edge of the same array row"
                    )
                k_slice = parts[t][0]
                k_rows = np.arange(R)[ok]
                col0[ok] = np.where(
                    k_rows < k_slice.stop - k_slice.start,
                    A[m[ok], np.minimum(k_slice.start + k_rows, K - 1)],
                    0.0,
                )
                tile0[ok], row0[ok] = t, m[ok]
        # MACs (with the weight registers as they were at the start of the cycle): first,
        # everything moves one PE to the right
        for reg, edge in ((a, col0), (a_tile, tile0), (a_row, row0)):
            reg[:, 1:] = reg[:, :-1].copy()
            reg[:, 0] = edge
        live = a_tile >= 0
        slot = np.where(live, a_tile % buffers, 0)
        have = _pick(slot, held)
        wrong = live & (have != a_tile)
        if wrong.any():
            r, n = (int(v[0]) for v in np.nonzero(wrong))
            t, h = int(a_tile[r, n]), int(have[r, n])
            why = (
                "is not latched yet"
                if h < t
                else f"was overwritten by tile {h} before tile {t}'s last activation passed"
            )
            raise ScheduleHazard(f"cycle {c}: PE ({r}, {n}) needs tile {t}'s weight, which {why}")
        # every PE's product this cycle; what leaves the bottom of column n at cycle c is the sum,
        # over array rows k, of the product PE (k, n) made at cycle c − (R − 1 − k) (the array seen
        # from its edges, as a delay line)
        macs[c % R] = a * _pick(slot, regs)
        leaving = macs[(c - (R - 1) + rows_up) % R, rows_up].sum(axis=0)
        if c >= 0:
            tile_of = np.where(live, a_tile, 0)
            useful_now = live & (r_idx < k_len[tile_of]) & (n_idx < n_len[tile_of])
            busy[c] = int(useful_now.sum())
            useful += busy[c]
            # results leaving the bottom row: accumulate into C (K tiles of the same N tile add up)
            bottom_row = a_tile[R - 1]
            out = (bottom_row >= 0) & (np.arange(n_cols) < n_len[np.maximum(bottom_row, 0)])
            np.add.at(
                C,
                (a_row[R - 1][out], n_start[bottom_row[out]] + np.arange(n_cols)[out]),
                leaving[out],
            )
        # weight chains shift down kw rows; the top kw take the group of rows the column's port
        # feeds this cycle
        feed = np.zeros((kw, n_cols))
        fed = np.zeros(n_cols, bool)
        for t, s in enumerate(sched):
            # column n feeds row group g (rows g·kw …) at cycle E_t + n − g
            g = s.latch + np.arange(n_cols) - c
            ok = (g >= 0) & (g < L)
            if ok.any():
                if fed[ok].any():
                    raise ScheduleHazard(
                        f"cycle {c}: two tiles want the weight port of the same column"
                    )
                for i in range(kw):
                    r = g * kw + i
                    okr = ok & (r < R)
                    feed[i, okr] = padded[t, r[okr], np.arange(n_cols)[okr]]
                fed |= ok
        chain[kw:] = chain[:-kw].copy()
        chain[:kw] = feed[: min(kw, R)]
        for t, s in enumerate(sched):  # column n latches tile t at cycle E_t + n
            n = c - s.latch
            if 0 <= n < n_cols:
                regs[t % buffers, :, n] = chain[:, n]
                held[t % buffers, :, n] = t
    return TiledRun(C, last + 1, (M, K, N), (R, n_cols), buffers, sched, useful, busy)


@dataclass(frozen=True)
class TiledGemm:
    """Cycles of a ``(M×K)·(K×N)`` GEMM on a ``rows × cols`` weight-stationary array with
    ``buffers`` weight registers per PE (2: double-buffered; 1: a single register) and a weight port
    that shifts ``weight_rows_per_cycle`` rows of a tile into a column per cycle (1: TPU v1's
    mechanism, a ``rows``-cycle load). Checked against :func:`run_tiled` cycle by cycle
    (tests/test_systolic.py).

    The cycle count is that of the earliest legal schedule (:func:`tile_schedule`). With one row per
    cycle and two registers it has a closed form: ``ceil(K/rows)·ceil(N/cols)`` tiles start ``max(M,
    rows)`` cycles apart — the ``rows``-cycle weight load when M < rows, the M-row stream otherwise
    — and the last tile's rows still need ``rows + cols − 2`` cycles to fill and drain the array:

        cycles = (tiles − 1) · max(M, rows) + M + rows + cols − 2

    Args:
        M, K, N: the GEMM ``(M×K)·(K×N)``.
        rows, cols: the array's shape.
        buffers: weight registers per PE.
        weight_rows_per_cycle: rows the weight port shifts per cycle.
    """

    M: int
    K: int
    N: int
    rows: int = 128
    cols: int = 128
    buffers: int = 2
    weight_rows_per_cycle: int = 1

    def __post_init__(self) -> None:
        if (
            min(
                self.M,
                self.K,
                self.N,
                self.rows,
                self.cols,
                self.buffers,
                self.weight_rows_per_cycle,
            )
            < 1
        ):
            raise ValueError(
                f"positive sizes, buffers and weight_rows_per_cycle needed, got {self}"
            )

    @property
    def tiles(self) -> int:
        return math.ceil(self.K / self.rows) * math.ceil(self.N / self.cols)

    @property
    def weight_load_cycles(self) -> int:
        """L: cycles a column's weight port needs to shift one tile in."""
        return math.ceil(self.rows / self.weight_rows_per_cycle)

    @property
    def period(self) -> float:
        """Cycles per tile in steady state: the stream (M), the weight load (L) or the weight
        registers (a column latches tile t only after tile t − buffers has drained out of it: (M +
        rows − 1)/buffers)."""
        p = max(self.M, self.weight_load_cycles, (self.M + self.rows - 1) / self.buffers)
        return int(p) if float(p).is_integer() else p

    @property
    def limit(self) -> str:
        """What sets the period: 'stream', 'weight load' or 'weight registers' (ties go to the
        first)."""
        terms = {"stream": self.M, "weight load": self.weight_load_cycles,
                 "weight registers": (self.M + self.rows - 1) / self.buffers}
        return max(terms, key=terms.get)

    @cached_property
    def schedule(self) -> list[TileTimes]:
        return tile_schedule(
            self.M, self.tiles, self.rows, self.buffers, self.weight_rows_per_cycle
        )

    @property
    def cycles(self) -> int:
        """From cycle 0 (the first activation enters) to the last result leaving the array,
        inclusive."""
        steady = max(self.M, self.weight_load_cycles)
        # the registers never bind: tile t starts at t · steady
        if self.buffers * steady >= self.M + self.rows - 1:
            return (self.tiles - 1) * steady + cycles(self.M, self.rows, self.cols)
        return self.schedule[-1].start + cycles(self.M, self.rows, self.cols)

    @property
    def useful_macs(self) -> int:
        return self.M * self.K * self.N

    @property
    def utilization(self) -> float:
        """Useful MACs / (cycles × rows × cols) = spatial (padding) × temporal."""
        return self.useful_macs / (self.cycles * self.rows * self.cols)

    @property
    def spatial(self) -> float:
        """Fraction of the PEs holding real weights, averaged over tiles."""
        return (self.K * self.N) / (self.tiles * self.rows * self.cols)

    @property
    def temporal(self) -> float:
        """Fraction of the cycles in which an activation row enters the array (M per tile)."""
        return self.M * self.tiles / self.cycles

    @property
    def weight_load_bound(self) -> bool:
        """True when a tile's weight load outlasts both its stream and the weight registers'
        turnaround."""
        return self.limit == "weight load" and self.M < self.weight_load_cycles

    def seconds(self, clock_hz: float) -> float:
        return self.cycles / clock_hz


# -- figures ---------------------------------------------------------------------------------------

def draw_frame(ax: Any, frame: Frame, W: np.ndarray, title: str | None = None) -> None:
    """Draw the array at the end of one cycle: weights in the PEs, activations (orange) and partial
    sums (blue)."""
    from .plotting import PALETTE

    K, N = W.shape
    ax.clear()
    ax.set_xlim(-1.0, N + 0.1)
    ax.set_ylim(K + 0.9, -0.8)
    ax.set_aspect("equal")
    ax.axis("off")
    for k in range(K):
        for n in range(N):
            busy = bool(frame.active[k, n])
            ax.add_patch(_rect((n, k), busy, PALETTE))
            ax.text(
                n + 0.5,
                k + 0.22,
                f"w={W[k, n]:g}",
                ha="center",
                va="center",
                fontsize=7,
                color="#444444",
            )
            if frame.row_of[k, n] >= 0:
                ax.text(
                    n + 0.5,
                    k + 0.5,
                    f"a={frame.a[k, n]:g}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=PALETTE[1],
                    fontweight="bold",
                )
                ax.text(
                    n + 0.5,
                    k + 0.78,
                    f"Σ={frame.p[k, n]:g}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=PALETTE[0],
                )
    for n, (m, value) in frame.out.items():
        ax.text(n + 0.5, K + 0.45, f"C[{m},{n}]\n={value:g}", ha="center", va="center", fontsize=7,
                color=PALETTE[2], fontweight="bold")
    for k in range(K):  # activations enter every row from the left ...
        ax.annotate("", xy=(-0.05, k + 0.5), xytext=(-0.9, k + 0.5),
                    arrowprops=dict(arrowstyle="->", color=PALETTE[1], lw=1.2))
    for n in range(N):  # ... and partial sums flow down every column
        ax.annotate("", xy=(n + 0.5, -0.05), xytext=(n + 0.5, -0.7),
                    arrowprops=dict(arrowstyle="->", color=PALETTE[0], lw=1.2))
    ax.set_title(title if title is not None else f"cycle {frame.cycle}", fontsize=10)


def _rect(corner: tuple[int, int], busy: bool, palette: list[str]):
    from matplotlib.patches import Rectangle

    return Rectangle(corner, 0.94, 0.94, facecolor="#FDF0D5" if busy else "#F2F2F2",
                     edgecolor=palette[3] if busy else "#AAAAAA", linewidth=1.6 if busy else 0.8)


def frame_grid(run: SystolicRun, W: np.ndarray, ncols: int = 4):
    """A figure with one panel per cycle (a static, printable version of the animation)."""
    import matplotlib.pyplot as plt

    n = len(run.frames)
    nrows = math.ceil(n / ncols)
    fig, axs = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 3.0 * nrows))
    axs = np.atleast_1d(axs).ravel()
    for ax, frame in zip(axs, run.frames):
        draw_frame(ax, frame, np.asarray(W))
    for ax in axs[n:]:
        ax.axis("off")
    fig.suptitle(f"Weight-stationary {run.shape[1]}×{run.shape[2]} array, M = {run.shape[0]}: "
                 f"{run.cycles} cycles (orange: busy PE; a → right, Σ ↓ down)", fontsize=11)
    fig.tight_layout()
    return fig


def animate(run: SystolicRun, W: np.ndarray, interval_ms: int = 900):
    """A matplotlib animation of the run, one frame per cycle (``.to_jshtml()`` plays it
    offline)."""
    import matplotlib.pyplot as plt
    from matplotlib import animation

    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    W = np.asarray(W)

    def update(i: int):
        draw_frame(ax, run.frames[i], W)
        return []

    anim = animation.FuncAnimation(
        fig, update, frames=len(run.frames), interval=interval_ms, blit=False
    )
    plt.close(fig)  # show the animation, not a stray static copy of its last frame
    return anim


# -- the contrast: order fixed by the compiler vs order picked at run time, under the same memory --
#
# Both models run the same work — n items, each one load from memory followed by `compute_cycles`
# instructions that need it — issue one instruction per cycle, and draw every load's latency from
# the same distribution. Neither has a cache the other lacks. The difference is only who decides the
# order.


@dataclass(frozen=True)
class IssueTrace:
    """What one run of a scheduler issued."""

    cycles: int  # finish time: the last instruction's cycle + 1
    # who issued, in issue order (warp numbers, or the static program's instruction labels)
    order: tuple
    stall_cycles: int  # cycles in which nothing could issue


def warp_schedule(n_warps: int, loads_per_warp: int, compute_cycles: int, latency: Any,
                  rng: np.random.Generator) -> IssueTrace:
    """A GPU-style SM scheduler: each cycle it issues from *any* ready warp, decided at run time.

    Every warp repeats ``loads_per_warp`` times: issue a load (latency ``latency(rng)`` cycles),
    then ``compute_cycles`` instructions that use it. A warp waiting on memory is skipped at no
    cost; the scheduler picks the lowest-numbered ready warp. ``order`` is the warp that issued in
    each busy cycle.
    """
    ready_at = np.zeros(n_warps)  # cycle at which each warp can issue again
    loads_left = [loads_per_warp] * n_warps
    work_left = [0] * n_warps  # compute instructions left in the warp's current phase
    order: list[int] = []
    t = stalls = 0
    while any(loads_left) or any(work_left):
        waiting = [w for w in range(n_warps) if loads_left[w] or work_left[w]]
        ready = [w for w in waiting if ready_at[w] <= t]
        if not ready:
            nxt = int(math.ceil(min(ready_at[w] for w in waiting)))
            stalls += nxt - t
            t = nxt
            continue
        w = ready[0]
        if work_left[w]:
            work_left[w] -= 1
            ready_at[w] = t + 1
        else:  # issue a load; the warp's next instructions wait for it
            loads_left[w] -= 1
            ready_at[w] = t + 1 + float(latency(rng))
            work_left[w] = compute_cycles
        order.append(w)
        t += 1
    return IssueTrace(t, tuple(order), stalls)


def warp_schedule_cycles(n_warps: int, loads_per_warp: int, compute_cycles: int, latency: Any,
                         rng: np.random.Generator) -> int:
    """Finish time of :func:`warp_schedule`."""
    return warp_schedule(n_warps, loads_per_warp, compute_cycles, latency, rng).cycles


def static_schedule(n_items: int, compute_cycles: int, latency: Any, rng: np.random.Generator,
                    buffers: int) -> IssueTrace:
    """A TPU-style in-order core running the program a compiler fixed: software pipelining over
    ``buffers`` VMEM buffers, so up to ``buffers`` loads are in flight.

    The program starts loads 0 … buffers−1; then for every item i it waits for load i, runs
    ``compute_cycles`` instructions on it and starts load i + buffers into the buffer item i has
    freed. The *order* never changes; when a load is slower than the pipeline covers, the core
    stalls in place (a TPU's scalar unit waits on a DMA semaphore).
    """
    if buffers < 1:
        raise ValueError("buffers must be at least 1 (the one the item being computed sits in)")
    done_at: dict[int, float] = {}
    order: list[str] = []
    t = stalls = 0

    def load(i: int) -> None:
        nonlocal t
        done_at[i] = t + 1 + float(latency(rng))
        order.append(f"load {i}")
        t += 1

    for i in range(min(buffers, n_items)):
        load(i)
    for i in range(n_items):
        if done_at[i] > t:  # wait: nothing else may issue before it, the order is fixed
            stalls += int(math.ceil(done_at[i] - t))
            t = int(math.ceil(done_at[i]))
        order.extend([f"compute {i}"] * compute_cycles)
        t += compute_cycles
        if i + buffers < n_items:
            load(i + buffers)
    return IssueTrace(t, tuple(order), stalls)
