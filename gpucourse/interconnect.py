"""Chip-to-chip networks of TPU pods: the ICI torus, hop counts, and what an all-reduce costs on it.

A TPU pod wires chips directly to their neighbours over ICI (Inter-Chip Interconnect): each chip of a 3D torus
has links to ±1 in x, y and z, and the ends of every row *wrap around*, so a row is a ring. There is no packet
switch between neighbours. (TPU v4 joins 4×4×4 cubes through optical circuit switches, which set up fixed
light paths between cube faces: the torus can be reconfigured, but data still crosses no packet switch.)

Units: bytes, bytes/s (per link, per direction), seconds. Nothing here runs on an accelerator: these are models,
checked against a step-by-step simulation of the ring algorithm (:func:`simulate_ring_allreduce`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

GBPS = 1e9 / 8  # bytes/s in one Gbit/s

# Published pod figures (Google Cloud TPU documentation, "TPU versions" / system architecture pages, 2024–2025;
# Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware Support
# for Embeddings", ISCA 2023). ici_bytes_per_s is the per-chip ICI bandwidth as published (Gbit/s → bytes/s).
# Re-checked against cloud.google.com/tpu/docs/{v4,v5e,v5p,v6e} (Dec 2026): v5e 1,600 Gbps, v5p 4,800 Gbps and
# v6e 3,584 Gbps per chip on the older pages; the newer pages print "bidirectional ICI bandwidth per chip" instead
# (v5e 400 GB/s, v5p 1,200 GB/s, v6e 800 GB/s) — the same links counted both ways. Google's v4 page gives no
# per-chip figure: 6 links × 400 Gbit/s is from the ISCA 2023 paper. HBM and bf16 figures match the pages.
TPU_PODS = {
    "TPU v4": dict(topology="3D torus", max_chips=4096, links_per_chip=6, ici_bytes_per_s=2400 * GBPS,
                   bf16_flops=275e12, hbm_bytes_per_s=1200e9,
                   note="4×4×4 cubes joined by optical circuit switches (reconfigurable)"),
    "TPU v5p": dict(topology="3D torus", max_chips=8960, links_per_chip=6, ici_bytes_per_s=4800 * GBPS,
                    bf16_flops=459e12, hbm_bytes_per_s=2765e9, note=""),
    "TPU v5e": dict(topology="2D torus", max_chips=256, links_per_chip=4, ici_bytes_per_s=1600 * GBPS,
                    bf16_flops=197e12, hbm_bytes_per_s=819e9, note="inference/cost-optimised"),
    "TPU v6e": dict(topology="2D torus", max_chips=256, links_per_chip=4, ici_bytes_per_s=3584 * GBPS,
                    bf16_flops=918e12, hbm_bytes_per_s=1640e9, note="Trillium"),
}


@dataclass(frozen=True)
class Torus:
    """A ``dims[0] × dims[1] × …`` grid of chips; ``wrap=True`` closes every row into a ring (a torus),
    ``wrap=False`` leaves the ends open (a mesh)."""

    dims: tuple[int, ...]
    wrap: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        if not self.dims or any(d < 1 for d in self.dims):
            raise ValueError(f"dims must be positive integers, got {self.dims}")

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    def coords(self, i: int) -> tuple[int, ...]:
        """Chip number → coordinates (last dimension fastest)."""
        return tuple(int(c) for c in np.unravel_index(i, self.dims))

    def index(self, coords: Sequence[int]) -> int:
        return int(np.ravel_multi_index(tuple(int(c) % d for c, d in zip(coords, self.dims)), self.dims))

    def hops(self, a: Sequence[int] | int, b: Sequence[int] | int) -> int:
        """Fewest links a message crosses from chip ``a`` to chip ``b`` (coordinates or chip numbers)."""
        ca = self.coords(a) if isinstance(a, (int, np.integer)) else tuple(a)
        cb = self.coords(b) if isinstance(b, (int, np.integer)) else tuple(b)
        total = 0
        for x, y, d in zip(ca, cb, self.dims):
            delta = abs(x - y) % d if self.wrap else abs(x - y)
            total += min(delta, d - delta) if self.wrap else delta
        return total

    def neighbors(self, i: int) -> list[int]:
        """Chips one link away (a dimension of size 2 gives one neighbour, not two)."""
        c = self.coords(i)
        out = set()
        for axis, d in enumerate(self.dims):
            for step in (-1, 1):
                x = c[axis] + step
                if not self.wrap and not 0 <= x < d:
                    continue
                nc = list(c)
                nc[axis] = x % d
                j = self.index(nc)
                if j != i:
                    out.add(j)
        return sorted(out)

    @property
    def links(self) -> int:
        """Number of (bidirectional) chip-to-chip links."""
        return sum(len(self.neighbors(i)) for i in range(self.size)) // 2

    def hop_counts(self) -> Counter:
        """Histogram of hop counts over all ordered pairs of distinct chips.

        Hops add up over dimensions, so the histogram is the convolution of the per-dimension histograms of
        coordinate distances (over all ordered coordinate pairs); distance 0 then counts only the chip itself.
        """
        hist = np.array([1], dtype=np.int64)
        for d in self.dims:
            delta = np.abs(np.arange(d)[:, None] - np.arange(d)[None, :])
            dist = np.minimum(delta, d - delta) if self.wrap else delta
            hist = np.convolve(hist, np.bincount(dist.ravel()))
        hist[0] -= self.size  # drop the pairs (i, i)
        return Counter({h: int(c) for h, c in enumerate(hist) if c})

    @property
    def diameter(self) -> int:
        return sum(d // 2 if self.wrap else d - 1 for d in self.dims)

    @property
    def average_hops(self) -> float:
        counts = self.hop_counts()
        pairs = sum(counts.values())
        return sum(h * c for h, c in counts.items()) / pairs if pairs else 0.0

    @property
    def bisection_links(self) -> int:
        """Links cut when the largest dimension is split in half (2× for a torus: the wrap-around links)."""
        d = max(self.dims)
        if d < 2:
            return 0
        cross_section = self.size // d
        return cross_section * (2 if self.wrap and d > 2 else 1)


# -- all-reduce cost models ------------------------------------------------------------------------------------------

def ring_allreduce_seconds(nbytes: float, p: int, link_bandwidth: float, latency: float = 0.0,
                           bidirectional: bool = False) -> float:
    """Time of a ring all-reduce of ``nbytes`` per chip over ``p`` chips.

    Reduce-scatter (p − 1 steps) then all-gather (p − 1 steps); in each step every chip sends one chunk of
    ``nbytes / p`` to its ring neighbour, all links busy at once. A bidirectional ring splits the buffer in two
    halves that travel opposite ways: twice the bandwidth. ``latency`` is paid once per step.
    """
    if p <= 1:
        return 0.0
    bw = link_bandwidth * (2 if bidirectional else 1)
    return 2 * (p - 1) * (latency + nbytes / (p * bw))


def torus_allreduce_seconds(nbytes: float, dims: Sequence[int], link_bandwidth: float | Sequence[float],
                            latency: float = 0.0, bidirectional: bool = True) -> float:
    """All-reduce of ``nbytes`` per chip on a torus, one dimension after the other.

    Reduce-scatter along dimension 0's rings (all rings at once), then along dimension 1 on the 1/d0 of the
    buffer each chip now owns, and so on; the all-gathers run in reverse order and mirror the reduce-scatters.
    Dimension i therefore costs ``2·(d_i − 1)·(latency + bytes_i / (d_i · bw_i))`` with
    ``bytes_i = nbytes / (d_0 · … · d_{i−1})``. ``link_bandwidth``: one value, or one per dimension (bytes/s per
    link per direction); wrap-around rings are bidirectional by default.
    """
    dims = [int(d) for d in dims]
    bws = [float(link_bandwidth)] * len(dims) if np.isscalar(link_bandwidth) else [float(b) for b in link_bandwidth]
    if len(bws) != len(dims):
        raise ValueError(f"{len(bws)} bandwidths for {len(dims)} dimensions")
    total, share = 0.0, float(nbytes)
    for d, bw in zip(dims, bws):
        total += ring_allreduce_seconds(share, d, bw, latency, bidirectional)
        share /= d
    return total


def allreduce_bytes_per_chip(nbytes: float, p: int) -> float:
    """Bytes each chip sends in a ring all-reduce: 2·(p − 1)/p · nbytes (→ 2× the buffer for large p)."""
    return 2 * (p - 1) / p * nbytes if p > 1 else 0.0


@dataclass
class RingTrace:
    result: list[np.ndarray]  # every chip's buffer after the all-reduce
    steps: int  # communication steps (all links busy in each)
    sent_elements: list[int]  # elements each chip sent


def simulate_ring_allreduce(buffers: Sequence[Any]) -> RingTrace:
    """Run the ring all-reduce step by step on p equal-length buffers (chip i sends only to chip i + 1).

    Each buffer is cut into p chunks. Reduce-scatter: in step s chip i sends chunk (i − s) mod p to chip i + 1,
    which adds it to its own copy; after p − 1 steps chip i holds the full sum of chunk (i + 1) mod p.
    All-gather: p − 1 more steps pass the finished chunks around the ring.
    """
    bufs = [np.array(b, dtype=np.float64).copy() for b in buffers]
    p = len(bufs)
    n = bufs[0].size
    if any(b.size != n for b in bufs):
        raise ValueError("all chips must hold buffers of the same length")
    bounds = np.linspace(0, n, p + 1).astype(int)
    chunk = [slice(bounds[c], bounds[c + 1]) for c in range(p)]
    sent = [0] * p
    steps = 0
    for s in range(p - 1):  # reduce-scatter
        msgs = [(i, (i - s) % p, bufs[i][chunk[(i - s) % p]].copy()) for i in range(p)]  # all send at once
        for i, c, data in msgs:
            bufs[(i + 1) % p][chunk[c]] += data
            sent[i] += data.size
        steps += 1
    for s in range(p - 1):  # all-gather: chip i owns chunk (i + 1) mod p, pass finished chunks along
        msgs = [(i, (i + 1 - s) % p, bufs[i][chunk[(i + 1 - s) % p]].copy()) for i in range(p)]
        for i, c, data in msgs:
            bufs[(i + 1) % p][chunk[c]] = data
            sent[i] += data.size
        steps += 1
    return RingTrace(bufs, steps, sent)


# -- figure --------------------------------------------------------------------------------------------------------

def draw_torus(ax: Any, dims: tuple[int, int, int] = (4, 4, 4), highlight: Sequence[int] | None = None) -> None:
    """Draw a 3D torus on a 3D ``Axes``: grid links solid, wrap-around links dashed; ``highlight``: a chip whose
    six neighbours are marked."""
    from .plotting import PALETTE

    t = Torus(dims)
    pts = np.array([t.coords(i) for i in range(t.size)], dtype=float)
    for i in range(t.size):
        ci = np.array(t.coords(i))
        for axis in range(3):
            cj = ci.copy()
            cj[axis] += 1
            if cj[axis] < dims[axis]:
                ax.plot(*zip(ci, cj), color="#999999", linewidth=0.7)
            elif dims[axis] > 2:  # wrap-around link: from the last chip back to the first, drawn as a dashed arc
                end = ci.copy().astype(float)
                start = ci.copy().astype(float)
                start[axis] = 0
                mid_out = end.copy()
                mid_out[axis] += 0.6
                mid_in = start.copy()
                mid_in[axis] -= 0.6
                ax.plot(*zip(end, mid_out), color=PALETTE[5], linewidth=0.8, linestyle="--")
                ax.plot(*zip(start, mid_in), color=PALETTE[5], linewidth=0.8, linestyle="--")
    ax.scatter(pts[:, 0], pts[:, 1], pts[:, 2], s=18, color=PALETTE[0], depthshade=True)
    if highlight is not None:
        for h in highlight:
            ax.scatter(*np.array(t.coords(h), dtype=float), s=80, color=PALETTE[3])
            nb = np.array([t.coords(j) for j in t.neighbors(h)], dtype=float)
            ax.scatter(nb[:, 0], nb[:, 1], nb[:, 2], s=55, color=PALETTE[1])
    ax.set_xlabel("x [chip]")
    ax.set_ylabel("y [chip]")
    ax.set_zlabel("z [chip]")
