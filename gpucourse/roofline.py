"""The roofline model, and measuring a machine's two roofs.

    attainable FLOP/s = min(peak FLOP/s, arithmetic intensity × memory bandwidth)

Arithmetic intensity (연산 밀도) = FLOPs / bytes moved to and from memory. Below the *ridge point*
(peak FLOP/s ÷ bandwidth) an operation is memory-bound; above it, compute-bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .backend import get_backend
from .timing import Timing, measure


@dataclass(frozen=True)
class Roofline:
    name: str
    peak_flops: float  # FLOP/s
    bandwidth: float  # bytes/s

    @property
    def ridge(self) -> float:
        """Intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.peak_flops / self.bandwidth

    def attainable(self, intensity: Any) -> Any:
        """Best FLOP/s an op of this intensity can reach on this machine."""
        return np.minimum(self.peak_flops, np.asarray(intensity, dtype=float) * self.bandwidth)

    def bound(self, intensity: float) -> str:
        return "memory" if intensity < self.ridge else "compute"


@dataclass(frozen=True)
class OpPoint:
    """One measured operation placed on a roofline."""

    label: str
    flops: float
    bytes: float
    timing: Timing

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def achieved_flops(self) -> float:
        return self.flops / self.timing.median

    @property
    def achieved_bandwidth(self) -> float:
        return self.bytes / self.timing.median


def measure_bandwidth(nbytes: int = 64 * 2**20, repeat: int = 7) -> tuple[float, Timing]:
    """Memory bandwidth of the backend (bytes/s), from a STREAM-style add ``c = a + b`` on float32.

    Bytes counted: read ``a`` and ``b``, write ``c`` (3 × ``nbytes``). ``nbytes`` should exceed the caches.
    """
    xp = get_backend().xp
    n = nbytes // 4
    a = xp.ones(n, dtype=xp.float32)
    b = xp.ones(n, dtype=xp.float32)
    c = xp.empty_like(a)
    t = measure(xp.add, a, b, out=c, repeat=repeat)
    return 3 * n * 4 / t.median, t


def measure_peak_flops(n: int = 1024, dtype: str = "float32", repeat: int = 5) -> tuple[float, Timing]:
    """Matrix-multiply throughput (FLOP/s) of the backend's BLAS (cuBLAS on a GPU), ``2 n³`` FLOPs per call."""
    xp = get_backend().xp
    rng = np.random.default_rng(0)
    a = xp.asarray(rng.standard_normal((n, n)).astype(dtype))
    b = xp.asarray(rng.standard_normal((n, n)).astype(dtype))
    t = measure(xp.matmul, a, b, repeat=repeat)
    return 2 * n**3 / t.median, t


def measure_roofline(name: str = "this machine", bandwidth_bytes: int = 64 * 2**20, gemm_n: int = 1024) -> Roofline:
    bw, _ = measure_bandwidth(bandwidth_bytes)
    peak, _ = measure_peak_flops(gemm_n)
    return Roofline(name, peak, bw)


def plot(ax: Any, rooflines: Iterable[Roofline], points: Iterable[OpPoint] = (), *, imin: float = 1 / 16,
         imax: float = 1024) -> Any:
    """Draw rooflines (log-log) and the measured operations on them."""
    from .plotting import PALETTE, axes

    axes("arithmetic intensity [FLOP/byte]", "attainable throughput [GFLOP/s]", ax=ax)
    intensities = np.logspace(np.log2(imin), np.log2(imax), 200, base=2)
    for i, roof in enumerate(rooflines):
        color = PALETTE[i % len(PALETTE)]
        ax.plot(intensities, roof.attainable(intensities) / 1e9, color=color,
                label=f"{roof.name}: {roof.peak_flops / 1e9:,.0f} GFLOP/s, {roof.bandwidth / 1e9:,.0f} GB/s")
        ax.axvline(roof.ridge, color=color, linestyle=":", linewidth=1)
    markers = "osD^v<>"
    for j, p in enumerate(points):
        ax.scatter([p.intensity], [p.achieved_flops / 1e9], marker=markers[j % len(markers)], s=50, zorder=3,
                   color=PALETTE[(j + 2) % len(PALETTE)], edgecolor="black", label=p.label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize=8, loc="lower right")
    return ax
