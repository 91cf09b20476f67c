"""A cycle-stepped weight-stationary systolic array: the TPU's matrix unit (MXU), one clock at a time.

The array is a grid of ``rows × cols`` processing elements (PEs). In the *weight-stationary* dataflow the
compiler first loads a weight tile ``W`` (``K × N``, K ≤ rows, N ≤ cols) so that PE ``(k, n)`` holds
``W[k, n]`` for the whole tile. Then, every clock cycle, each PE

1. takes the activation arriving from its left neighbour and the partial sum arriving from above,
2. computes ``psum_out = psum_in + a · w`` (one multiply-accumulate, MAC),
3. passes the activation to its right neighbour and ``psum_out`` to the PE below (registers, no memory).

Row ``m`` of the activations ``A`` (``M × K``) enters *skewed*: ``A[m, k]`` enters array row ``k`` at cycle
``m + k``, so it meets the partial sum of output ``(m, n)`` in PE ``(k, n)`` exactly at cycle ``m + k + n``.
``C[m, n]`` leaves the bottom of column ``n`` at cycle ``m + (K − 1) + n``. The last result leaves at cycle
``(M − 1) + (K − 1) + (N − 1)``, hence the cycle count :func:`cycles` ``= M + K + N − 2`` (cycles numbered
from 0, the first activation entering at cycle 0; weight loading is counted separately).

This module knows no backend (pure NumPy) and no timing: cycles are the hardware's clock, not seconds.
The real MXU is 128 × 128 (TPU v2–v5) or 256 × 256 (TPU v6e, "Trillium"); see :data:`MXU`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Published MXU shapes (Google Cloud TPU system-architecture documentation; Jouppi et al., ISCA 2017 for v1).
MXU = {
    "TPU v1": (256, 256),  # 8-bit MACs, inference only (Jouppi et al., "In-Datacenter Performance Analysis ...", 2017)
    "TPU v4": (128, 128),  # 4 MXUs per TensorCore, 2 TensorCores per chip
    "TPU v5e": (128, 128),  # 4 MXUs per TensorCore, 1 TensorCore per chip
    "TPU v6e": (256, 256),  # Trillium: 2 MXUs of 256 × 256 per TensorCore
}


def cycles(M: int, K: int, N: int) -> int:
    """Clock cycles from the first activation entering to the last result leaving, for ``(M×K)·(K×N)``
    on a weight-stationary array exactly ``K × N`` large: fill (K−1) + drain (N−1) + stream (M)."""
    return M + K + N - 2


def pe_step(a: np.ndarray, p: np.ndarray, W: np.ndarray, a_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One clock edge of the whole array: the PE registers after this cycle.

    a:    (K, N) activation register of each PE (the value it received last cycle)
    p:    (K, N) partial-sum register of each PE (what it sent down last cycle)
    W:    (K, N) stationary weights
    a_in: (K,)   activations entering at the left edge this cycle (0 where no row is valid)

    Every PE at once: take the activation from the left (``a_in`` for column 0), the partial sum from above
    (0 for row 0), multiply-accumulate with its own weight. Returns ``(a_new, p_new)``; the bottom row of
    ``p_new`` is what leaves the array this cycle.
    """
    a_new = np.empty_like(a)
    a_new[:, 0] = a_in
    a_new[:, 1:] = a[:, :-1]  # activations move one PE to the right
    p_above = np.zeros_like(p)
    p_above[1:, :] = p[:-1, :]  # partial sums move one PE down
    p_new = p_above + a_new * W  # K·N MACs in one cycle
    return a_new, p_new


@dataclass
class Frame:
    """The array's state at the end of one cycle (for figures and animations)."""

    cycle: int
    a: np.ndarray  # (K, N) activations in the PEs
    p: np.ndarray  # (K, N) partial sums leaving each PE
    active: np.ndarray  # (K, N) bool: the PE did a useful MAC this cycle
    row_of: np.ndarray  # (K, N) int: which activation row m the PE worked on (-1 = bubble)
    out: dict[int, tuple[int, float]]  # column n -> (m, C[m, n]) results leaving the bottom this cycle


class WeightStationaryArray:
    """A ``rows × cols`` weight-stationary array, clocked by :meth:`tick`.

    Usage (what the compiler's schedule does)::

        hw = WeightStationaryArray(W)          # load a K×N weight tile (K <= rows, N <= cols)
        for t in range(cycles(M, K, N)):
            out = hw.tick(a_in)                 # a_in: (K,) activations for the left edge this cycle
            # out: (N,) partial sums leaving the bottom edge this cycle
    """

    def __init__(self, W: Any, rows: int | None = None, cols: int | None = None, record: bool = False):
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2:
            raise ValueError(f"W must be a matrix, got shape {W.shape}")
        K, N = W.shape
        self.rows, self.cols = rows or K, cols or N
        if K > self.rows or N > self.cols:
            raise ValueError(f"a {K}×{N} weight tile does not fit a {self.rows}×{self.cols} array: tile it")
        self.K, self.N = K, N
        self.W = np.zeros((self.rows, self.cols))
        self.W[:K, :N] = W  # unused PEs hold weight 0
        self.a = np.zeros((self.rows, self.cols))
        self.p = np.zeros((self.rows, self.cols))
        self._tag = np.full((self.rows, self.cols), -1)  # activation row each PE holds (-1 = bubble)
        self.cycle = 0
        self.useful_macs = 0  # MACs on real data in occupied PEs
        self.weight_loads = K * N  # weights fetched from memory: once per tile
        self.activation_loads = 0  # activations fetched from memory (entering the left edge)
        self.record = record
        self.frames: list[Frame] = []
        self.outputs: list[np.ndarray] = []  # (N,) values that left the bottom edge, one per cycle clocked

    def tick(self, a_in: Any, rows_in: Any = None) -> np.ndarray:
        """Advance one clock cycle. ``a_in``: (K,) activations entering rows 0..K−1 (use 0 for bubbles);
        ``rows_in``: optional (K,) activation-row index of each entry (-1 = bubble), for bookkeeping only.
        Returns the (N,) values leaving the bottom of columns 0..N−1."""
        a_in = np.asarray(a_in, dtype=np.float64).reshape(-1)
        if a_in.shape[0] != self.K:
            raise ValueError(f"a_in must hold {self.K} values (one per weight row), got {a_in.shape[0]}")
        col0 = np.zeros(self.rows)
        col0[: self.K] = a_in
        tags_in = np.full(self.rows, -1)
        if rows_in is not None:
            tags_in[: self.K] = np.asarray(rows_in).reshape(-1)
        if rows_in is not None:  # activations fetched from memory: the real (non-bubble) entries
            self.activation_loads += int(np.count_nonzero(tags_in >= 0))
        self.a, self.p = pe_step(self.a, self.p, self.W, col0)
        tag = np.empty_like(self._tag)
        tag[:, 0] = tags_in
        tag[:, 1:] = self._tag[:, :-1]
        self._tag = tag
        active = (tag >= 0) & (np.arange(self.rows)[:, None] < self.K) & (np.arange(self.cols)[None, :] < self.N)
        self.useful_macs += int(active.sum())
        bottom = self.p[self.rows - 1, : self.N].copy()
        self.outputs.append(bottom.copy())
        if self.record:
            # column n's result for activation row m leaves the bottom at cycle m + (rows - 1) + n
            out = {n: (self.cycle - (self.rows - 1) - n, float(bottom[n])) for n in range(self.N)
                   if self.cycle - (self.rows - 1) - n >= 0}
            self.frames.append(Frame(self.cycle, self.a.copy(), self.p.copy(), active, tag.copy(), out))
        self.cycle += 1
        return bottom


@dataclass
class SystolicRun:
    """What one weight-stationary matmul did on the array."""

    C: np.ndarray  # (M, N) result
    cycles: int  # clock cycles used (first input to last output)
    shape: tuple[int, int, int]  # (M, K, N)
    array: tuple[int, int]  # (rows, cols)
    useful_macs: int  # M·K·N
    weight_loads: int  # elements of W fetched from memory
    activation_loads: int  # elements of A fetched from memory
    output_stores: int  # elements of C written to memory
    frames: list[Frame] = field(default_factory=list, repr=False)

    @property
    def utilization(self) -> float:
        """Useful MACs over the MACs the whole array could have done in these cycles."""
        return self.useful_macs / (self.cycles * self.array[0] * self.array[1])

    @property
    def memory_traffic(self) -> int:
        """Elements moved between memory and the array (weights + activations + results)."""
        return self.weight_loads + self.activation_loads + self.output_stores


def skewed_inputs(A: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The left-edge inputs at cycle t: ``A[t − k, k]`` enters row k (0 outside the matrix) and its row index."""
    M, K = A.shape
    m = t - np.arange(K)
    valid = (m >= 0) & (m < M)
    values = np.where(valid, A[np.clip(m, 0, M - 1), np.arange(K)], 0.0)
    return values, np.where(valid, m, -1)


def matmul(A: Any, W: Any, rows: int | None = None, cols: int | None = None, record: bool = False) -> SystolicRun:
    """``A @ W`` on a weight-stationary array, cycle by cycle (``A``: M×K, ``W``: K×N ≤ rows×cols).

    With ``rows``/``cols`` larger than the tile, the tile sits in the top-left corner and partial sums still
    travel to the bottom edge: the cycle count is then ``cycles(M, rows, cols)``.
    """
    A = np.asarray(A, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    M, K = A.shape
    if W.shape[0] != K:
        raise ValueError(f"inner dimensions differ: A is {A.shape}, W is {W.shape}")
    N = W.shape[1]
    hw = WeightStationaryArray(W, rows, cols, record=record)
    R, Cc = hw.rows, hw.cols
    total = cycles(M, R, Cc)
    C = np.zeros((M, N))
    for t in range(total):
        a_in, rows_in = skewed_inputs(A, t)
        bottom = hw.tick(a_in, rows_in)
        # column n's result for row m leaves at cycle m + (R - 1) + n: de-skew it into C
        m = t - (R - 1) - np.arange(N)
        ok = (m >= 0) & (m < M)
        C[m[ok], np.arange(N)[ok]] = bottom[ok]
    if record:  # keep only results of real rows in the frames' output lists
        for f in hw.frames:
            f.out = {n: v for n, v in f.out.items() if 0 <= v[0] < M}
    return SystolicRun(C, total, (M, K, N), (R, Cc), hw.useful_macs, hw.weight_loads, hw.activation_loads,
                       M * N, hw.frames)


def schedule(M: int, K: int, N: int) -> np.ndarray:
    """The static schedule, known before any data exists: ``S[m, k, n]`` = the cycle at which PE (k, n)
    performs the MAC of output (m, n) — always ``m + k + n``."""
    m, k, n = np.meshgrid(np.arange(M), np.arange(K), np.arange(N), indexing="ij")
    return m + k + n


# -- tiling a large GEMM onto a fixed array -------------------------------------------------------------------

@dataclass(frozen=True)
class TiledGemm:
    """A ``(M×K)·(K×N)`` GEMM tiled onto a ``rows × cols`` weight-stationary array.

    Model: W is cut into ``ceil(K/rows) · ceil(N/cols)`` weight tiles (edge tiles padded with zeros). Each tile
    is loaded (double-buffered: its load hides behind the previous tile's compute) and all M activation rows
    stream through it: ``M + rows + cols − 2`` cycles per tile, tiles one after another.
    """

    M: int
    K: int
    N: int
    rows: int = 128
    cols: int = 128

    @property
    def tiles(self) -> int:
        return math.ceil(self.K / self.rows) * math.ceil(self.N / self.cols)

    @property
    def cycles_per_tile(self) -> int:
        return cycles(self.M, self.rows, self.cols)

    @property
    def cycles(self) -> int:
        return self.tiles * self.cycles_per_tile

    @property
    def useful_macs(self) -> int:
        return self.M * self.K * self.N

    @property
    def utilization(self) -> float:
        """Useful MACs / (cycles × rows × cols) = spatial (padding) × temporal (fill and drain) efficiency."""
        return self.useful_macs / (self.cycles * self.rows * self.cols)

    @property
    def spatial(self) -> float:
        """Fraction of the PEs holding real weights, averaged over tiles."""
        return (self.K * self.N) / (self.tiles * self.rows * self.cols)

    @property
    def temporal(self) -> float:
        """Fraction of a tile's cycles in which activations stream (the rest is pipeline fill and drain)."""
        return self.M / self.cycles_per_tile

    def seconds(self, clock_hz: float) -> float:
        return self.cycles / clock_hz


# -- figures -----------------------------------------------------------------------------------------------------

def draw_frame(ax: Any, frame: Frame, W: np.ndarray, title: str | None = None) -> None:
    """Draw the array at the end of one cycle: weights in the PEs, activations (orange) and partial sums (blue)."""
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
            ax.text(n + 0.5, k + 0.22, f"w={W[k, n]:g}", ha="center", va="center", fontsize=7, color="#444444")
            if frame.row_of[k, n] >= 0:
                ax.text(n + 0.5, k + 0.5, f"a={frame.a[k, n]:g}", ha="center", va="center", fontsize=8,
                        color=PALETTE[1], fontweight="bold")
                ax.text(n + 0.5, k + 0.78, f"Σ={frame.p[k, n]:g}", ha="center", va="center", fontsize=8,
                        color=PALETTE[0])
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


def _rect(xy: tuple[int, int], busy: bool, palette: list[str]):
    from matplotlib.patches import Rectangle

    return Rectangle(xy, 0.94, 0.94, facecolor="#FDF0D5" if busy else "#F2F2F2",
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
    """A matplotlib animation of the run, one frame per cycle (``.to_jshtml()`` plays it offline)."""
    import matplotlib.pyplot as plt
    from matplotlib import animation

    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    W = np.asarray(W)

    def update(i: int):
        draw_frame(ax, run.frames[i], W)
        return []

    anim = animation.FuncAnimation(fig, update, frames=len(run.frames), interval=interval_ms, blit=False)
    plt.close(fig)  # show the animation, not a stray static copy of its last frame
    return anim


# -- the contrast: a dynamic (warp) scheduler ----------------------------------------------------------------------

def warp_schedule_cycles(n_warps: int, loads_per_warp: int, compute_cycles: int, latency: Any,
                         rng: np.random.Generator) -> int:
    """Cycles a GPU-style SM scheduler needs: each cycle it issues from *any* ready warp (decided at run time).

    Every warp repeats ``loads_per_warp`` times: issue a memory load (its latency drawn by ``latency(rng)``,
    in cycles, modelling cache hits, misses and contention), then ``compute_cycles`` cycles of arithmetic on the
    loaded data. One instruction issues per cycle; a warp waiting on memory is skipped at no cost (no context
    switch). The finish time depends on the latencies that actually occurred — unlike :func:`cycles`, which
    the compiler knows before the program runs.
    """
    ready_at = np.zeros(n_warps)  # cycle at which each warp can issue again
    remaining = [loads_per_warp] * n_warps
    work_left = np.zeros(n_warps, dtype=int)  # compute instructions left in the current phase
    t = 0
    while any(r > 0 for r in remaining) or work_left.any():
        candidates = [w for w in range(n_warps) if ready_at[w] <= t and (remaining[w] > 0 or work_left[w] > 0)]
        if not candidates:
            t = int(min(ready_at[w] for w in range(n_warps) if remaining[w] > 0 or work_left[w] > 0))
            continue
        w = candidates[0]  # the scheduler's pick: the oldest ready warp
        if work_left[w] > 0:
            work_left[w] -= 1
            ready_at[w] = t + 1
        else:  # issue a load, then compute on it once it arrives
            remaining[w] -= 1
            ready_at[w] = t + 1 + float(latency(rng))
            work_left[w] = compute_cycles
        t += 1
    return int(max(t, ready_at.max()))
