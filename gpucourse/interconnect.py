"""Chip-to-chip networks of TPU slices: tori and meshes, hop counts, and what collectives cost on them.

A TPU slice wires each chip directly to its ±1 neighbours along every axis over ICI (Inter-Chip Interconnect).
An axis *with wraparound* closes into a ring; without it, it is a line (which axes wrap depends on the chip and the
slice shape: :meth:`gpucourse.tpu.TpuChip.wraparound`). No packet switch sits between neighbours.

Collectives are priced with the α–β model over one mesh axis of ``p`` chips, links used in both directions at once:

    T = rounds · α + (bytes on the busiest link, one direction) / β

with α the latency of one hop and β a link's bandwidth in one direction. ``V`` is the size of the whole array:
what one chip holds after an all-gather or before a reduce-scatter, the buffer of an all-reduce, and the array an
all-to-all reshards (each chip holds V/p of it).

=============  ===========================  ======================  =====================  ================
collective     ring: rounds                 ring: busiest link      line: rounds           line: busiest link
=============  ===========================  ======================  =====================  ================
all-gather     ⌊p/2⌋                        (p−1)/p · V/2           p − 1                  (p−1)/p · V
reduce-scatter ⌊p/2⌋                        (p−1)/p · V/2           p − 1                  (p−1)/p · V
all-reduce     2⌊p/2⌋                       (p−1)/p · V             2(p − 1)               2(p−1)/p · V
all-to-all     ⌊p/2⌋                        c(p) · V/p²  (*)        p − 1                  ⌊p/2⌋⌈p/2⌉ · V/p²
=============  ===========================  ======================  =====================  ================

(*) c(p) = p²/8 for even p, (p² − 1)/8 for odd p: chunk-hops over one link in one direction (≈ V/8 in all).
A ring needs p ≥ 3; a 2-chip axis is a line. Over several axes at once (:func:`collective_seconds` with
``concurrent=True``) the array is cut into one piece per axis and the pieces go through the axes in rotated
orders, so every axis's links work all the time: the bandwidth term drops by the number of axes (the JAX scaling book, part 3: "AllGather over multiple axes ... increases the
available bandwidth by a factor of n_axes").

The closed forms are checked against :func:`simulate_collective`, which moves real arrays message by message, round
by round, and counts the bytes on every directed link (tests/test_interconnect.py).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

GBPS = 1e9 / 8  # bytes/s in one Gbit/s
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all")


def _wrap_tuple(wrap: bool | Sequence[bool], n: int) -> tuple[bool, ...]:
    if isinstance(wrap, (bool, np.bool_)):
        return (bool(wrap),) * n
    out = tuple(bool(w) for w in wrap)
    if len(out) != n:
        raise ValueError(f"{len(out)} wraparound flags for {n} axes")
    return out


@dataclass(frozen=True)
class Torus:
    """A ``dims[0] × dims[1] × …`` grid of chips. ``wrap`` (one flag, or one per axis) says which axes close into
    rings; ``wrap=False`` everywhere is an open mesh."""

    dims: tuple[int, ...]
    wrap: bool | tuple[bool, ...] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        if not self.dims or any(d < 1 for d in self.dims):
            raise ValueError(f"dims must be positive integers, got {self.dims}")
        object.__setattr__(self, "wrap", _wrap_tuple(self.wrap, len(self.dims)))

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
        for x, y, d, w in zip(ca, cb, self.dims, self.wrap):
            delta = abs(x - y)
            total += min(delta, d - delta) if w else delta
        return total

    def neighbors(self, i: int) -> list[int]:
        """Chips one link away (a dimension of size 2 gives one neighbour, not two)."""
        c = self.coords(i)
        out = set()
        for axis, (d, w) in enumerate(zip(self.dims, self.wrap)):
            for step in (-1, 1):
                x = c[axis] + step
                if not w and not 0 <= x < d:
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
        for d, w in zip(self.dims, self.wrap):
            delta = np.abs(np.arange(d)[:, None] - np.arange(d)[None, :])
            dist = np.minimum(delta, d - delta) if w else delta
            hist = np.convolve(hist, np.bincount(dist.ravel()))
        hist[0] -= self.size  # drop the pairs (i, i)
        return Counter({h: int(c) for h, c in enumerate(hist) if c})

    @property
    def diameter(self) -> int:
        return sum(d // 2 if w else d - 1 for d, w in zip(self.dims, self.wrap))

    @property
    def average_hops(self) -> float:
        counts = self.hop_counts()
        pairs = sum(counts.values())
        return sum(h * c for h, c in counts.items()) / pairs if pairs else 0.0

    @property
    def bisection_links(self) -> int:
        """Links cut when the largest dimension is split in half (2× for a ring: its wraparound link is cut too)."""
        axis = int(np.argmax(self.dims))
        d = self.dims[axis]
        if d < 2:
            return 0
        cross_section = self.size // d
        return cross_section * (2 if self.wrap[axis] and d > 2 else 1)


# -- collectives: the α–β model ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Axis:
    """One mesh axis of a slice: ``size`` chips in a ring (``wrap``) or a line; ``link_bandwidth`` per link per
    direction (bytes/s)."""

    size: int
    wrap: bool
    link_bandwidth: float

    @property
    def ring(self) -> bool:
        return self.wrap and self.size > 2


def axis_rounds(kind: str, p: int, ring: bool) -> int:
    """Communication rounds (each a hop, paying the latency α once) of one collective over one axis."""
    _check_kind(kind)
    if p <= 1:
        return 0
    one = p // 2 if ring and p > 2 else p - 1
    return 2 * one if kind == "all-reduce" else one


def axis_link_bytes(kind: str, nbytes: float, p: int, ring: bool) -> float:
    """Bytes on the busiest link, in one direction, of one collective of a ``nbytes`` array over one axis."""
    _check_kind(kind)
    if p <= 1:
        return 0.0
    ring = ring and p > 2
    if kind == "all-to-all":
        crossings = (p * p / 8 if p % 2 == 0 else (p * p - 1) / 8) if ring else (p // 2) * ((p + 1) // 2)
        return crossings * nbytes / p**2
    one = (p - 1) / p * nbytes / (2 if ring else 1)  # all-gather or reduce-scatter
    return 2 * one if kind == "all-reduce" else one


def axis_seconds(kind: str, nbytes: float, axis: Axis, latency: float) -> float:
    """α–β time of one collective over one axis."""
    return (axis_rounds(kind, axis.size, axis.ring) * latency
            + axis_link_bytes(kind, nbytes, axis.size, axis.ring) / axis.link_bandwidth)


def _check_kind(kind: str) -> None:
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}; one of {COLLECTIVES}")


def _stages(kind: str, nbytes: float, axes: Sequence[Axis], concurrent: bool) -> list[list[tuple[str, float, Axis]]]:
    """The stages of a collective over several axes: in each stage, every piece runs one single-axis collective
    (kind, bytes, axis). Pieces use different axes in the same stage, so they never share a link."""
    axes = [a for a in axes if a.size > 1]
    if not axes:
        return []
    if kind == "all-to-all" and len(axes) > 1:
        raise ValueError("the model prices all-to-all over one axis only")
    order = list(range(len(axes)))
    rotations = [order[j:] + order[:j] for j in range(len(axes))] if concurrent else [order]
    piece = nbytes / len(rotations)
    total = math.prod(a.size for a in axes)
    per_piece = []
    for rot in rotations:
        steps = []
        if kind in ("reduce-scatter", "all-reduce"):
            size = piece
            for ax in rot:  # each reduce-scatter leaves 1/size of the array on every chip
                steps.append(("reduce-scatter", size, axes[ax]))
                size /= axes[ax].size
        if kind in ("all-gather", "all-reduce"):
            size = piece / total  # what each chip holds before the gathers
            for ax in (rot[::-1] if kind == "all-reduce" else rot):
                size *= axes[ax].size
                steps.append(("all-gather", size, axes[ax]))
        if kind == "all-to-all":
            steps.append(("all-to-all", piece, axes[rot[0]]))
        per_piece.append(steps)
    return [list(s) for s in zip(*per_piece)]


def collective_seconds(kind: str, nbytes: float, axes: Axis | Sequence[Axis], latency: float,
                       concurrent: bool = True) -> float:
    """α–β time of a collective of an ``nbytes`` array over one or several mesh axes.

    Several axes: with ``concurrent=True`` the array is cut into one piece per axis and the pieces run through the
    axes in rotated orders at the same time; ``concurrent=False`` runs the whole array one axis after the other
    (only one axis's links busy at a time). A stage lasts as many rounds as its longest piece plus the time of its
    busiest link.
    """
    _check_kind(kind)
    axes = [axes] if isinstance(axes, Axis) else list(axes)
    total = 0.0
    for stage in _stages(kind, nbytes, axes, concurrent):
        rounds = max(axis_rounds(k, a.size, a.ring) for k, _, a in stage)
        link = max(axis_link_bytes(k, b, a.size, a.ring) / a.link_bandwidth for k, b, a in stage)
        total += rounds * latency + link
    return total


def allreduce_bytes_per_chip(nbytes: float, p: int) -> float:
    """Bytes each chip sends in a ring all-reduce: 2·(p − 1)/p · nbytes (→ 2× the buffer for large p)."""
    return 2 * (p - 1) / p * nbytes if p > 1 else 0.0


# -- the simulation: real arrays, message by message ------------------------------------------------------------------

@dataclass
class CollectiveTrace:
    """What :func:`simulate_collective` did."""

    result: list[np.ndarray]  # every chip's output, chips in row-major order of dims
    stages: list[tuple[int, dict]] = field(default_factory=list)  # (rounds, {(src, dst): bytes}) per stage

    @property
    def rounds(self) -> int:
        return sum(r for r, _ in self.stages)

    @property
    def busiest_link_bytes(self) -> float:
        """Per stage, the bytes on its busiest directed link, added over the stages."""
        return sum(max(load.values(), default=0.0) for _, load in self.stages)

    def seconds(self, latency: float, bandwidth: dict[tuple[int, int], float] | float) -> float:
        """α–β time: per stage, its rounds · α + its busiest directed link's bytes / that link's bandwidth."""
        total = 0.0
        for rounds, load in self.stages:
            bw = (lambda link: bandwidth) if np.isscalar(bandwidth) else bandwidth.__getitem__
            total += rounds * latency + max((b / bw(link) for link, b in load.items()), default=0.0)
        return total


def _routes(p: int, ring: bool) -> list[tuple[int, int, str]]:
    """(direction, distance, part) of the paths a block takes from its origin: the short way round a ring, with the
    block of the chip opposite (even p) split in halves, 'lo' going right and 'hi' going left; both ways along a
    line. part 'all' is the whole block."""
    if ring and p > 2:
        out = []
        for d in range(1, p // 2 + 1):
            half = p % 2 == 0 and d == p // 2
            out += [(+1, d, "lo" if half else "all"), (-1, d, "hi" if half else "all")]
        return out
    return [(s, d, "all") for s in (+1, -1) for d in range(1, p)]


def _part(x: np.ndarray, part: str) -> np.ndarray:
    h = x.size // 2
    return x if part == "all" else (x[:h] if part == "lo" else x[h:])


def _assemble(blocks: dict, p: int) -> np.ndarray:
    """One chip's received blocks, keyed (origin, part), in origin order (a block sent in halves is rejoined)."""
    return np.concatenate([blocks[(o, "all")] if (o, "all") in blocks else
                           np.concatenate([blocks[(o, "lo")], blocks[(o, "hi")]]) for o in range(p)])


def _line_collective(kind: str, data: list[np.ndarray], ring: bool, nodes: Sequence[int],
                     load: dict, itemsize: int) -> tuple[list[np.ndarray], int]:
    """One collective over one line (or ring) of chips ``nodes``; adds each message's bytes to ``load``."""
    p = len(data)
    if p == 1:
        return [d.copy() for d in data], 0
    routes = _routes(p, ring)
    rounds = max(d for _, d, _ in routes)

    def dest(o: int, s: int, d: int) -> int | None:
        t = o + s * d
        return t % p if ring and p > 2 else (t if 0 <= t < p else None)

    def send(r: int, src: int, dst: int, payload: np.ndarray) -> None:
        load[(nodes[src], nodes[dst])] += payload.size * itemsize

    if kind == "all-gather":  # block o travels from its origin, one hop per round, along each route
        held = [{(i, "all"): data[i]} for i in range(p)]
        for r in range(1, rounds + 1):
            msgs = []
            for o in range(p):
                for s, d, part in routes:
                    if d == r and dest(o, s, d) is not None:
                        src = dest(o, s, d - 1) if d > 1 else o
                        have = held[src].get((o, "all"))
                        assert have is not None, "a chip forwards only a block it holds"
                        msgs.append((src, dest(o, s, d), (o, part), _part(have, part)))
            for src, dst, key, payload in msgs:  # everything sent this round arrives at its end
                send(r, src, dst, payload)
                held[dst][key] = payload
        return [_assemble(held[i], p) for i in range(p)], rounds
    if kind == "reduce-scatter":  # the all-gather run backwards: chunk c's partial sums flow towards chip c
        L = data[0].size
        if L % p:
            raise ValueError(f"reduce-scatter: {L} elements do not split into {p} chunks")
        chunk = [x.reshape(p, L // p) for x in data]
        out = [chunk[c][c].copy() for c in range(p)]
        for s in (+1, -1):  # partials travelling in direction s come from the chips at c − s·d
            part_at = {d: part for sd, d, part in routes if sd == s}
            carried: dict[int, np.ndarray] = {}
            for r in range(1, rounds + 1):  # the chain member at distance rounds − r + 1 sends, chains in step
                d = rounds - r + 1
                if d not in part_at:
                    continue
                msgs = []
                for c in range(p):
                    src = dest(c, -s, d)
                    if src is None:
                        continue
                    payload = _part(chunk[src][c], part_at[d]).copy()
                    if c in carried:  # add what the previous member sent (a half goes into its own half)
                        h = carried[c]
                        if h.size == payload.size:
                            payload += h
                        elif part_at[d + 1] == "lo":
                            payload[: h.size] += h
                        else:
                            payload[payload.size - h.size:] += h
                    msgs.append((src, dest(c, -s, d - 1) if d > 1 else c, c, payload))
                for src, dst, c, payload in msgs:
                    send(r, src, dst, payload)
                    carried[c] = payload
            for c, h in carried.items():
                if h.size == out[c].size:
                    out[c] += h
                elif part_at[1] == "lo":
                    out[c][: h.size] += h
                else:
                    out[c][out[c].size - h.size:] += h
        return out, rounds
    if kind == "all-to-all":  # chunk (o → k) travels the route that reaches k
        L = data[0].size
        if L % p:
            raise ValueError(f"all-to-all: {L} elements do not split into {p} chunks")
        chunk = [x.reshape(p, L // p) for x in data]
        got: list[dict] = [{(i, "all"): chunk[i][i]} for i in range(p)]
        for r in range(1, rounds + 1):
            msgs = []
            for o in range(p):
                for s, d, part in routes:
                    k = dest(o, s, d)
                    if k is None or d < r:
                        continue
                    src, dst = (dest(o, s, r - 1) if r > 1 else o), dest(o, s, r)
                    msgs.append((src, dst, _part(chunk[o][k], part), (o, part) if dst == k else None, k))
            for src, dst, payload, key, k in msgs:
                send(r, src, dst, payload)
                if key is not None:
                    got[k][key] = payload
        return [_assemble(got[k], p) for k in range(p)], rounds
    raise ValueError(f"unknown collective {kind!r}")


def _axis_collective(kind: str, data: np.ndarray, dims: tuple[int, ...], wrap: tuple[bool, ...], axis: int,
                     itemsize: int) -> tuple[np.ndarray, int, dict]:
    """One collective along ``axis`` on every line of the grid at once. ``data``: object array of shape dims."""
    load: dict = defaultdict(float)
    out = np.empty(dims, dtype=object)
    rounds = 0
    flat = np.arange(math.prod(dims)).reshape(dims)
    others = [range(d) if a != axis else [slice(None)] for a, d in enumerate(dims)]
    for idx in itertools.product(*others):
        line = list(data[idx])
        nodes = [int(n) for n in flat[idx]]
        res, r = _line_collective(kind, line, wrap[axis], nodes, load, itemsize)
        rounds = max(rounds, r)
        for pos, x in enumerate(res):
            sub = list(idx)
            sub[axis] = pos
            out[tuple(sub)] = x
    return out, rounds, load


def simulate_collective(kind: str, buffers: Sequence[Any], dims: Sequence[int], wrap: bool | Sequence[bool] = True,
                        concurrent: bool = True) -> CollectiveTrace:
    """Run a collective on real arrays over a slice of shape ``dims`` (chips in row-major order), round by round.

    ``buffers[i]`` is chip i's input: a shard for all-gather (every chip ends with all shards, in chip order),
    a full-size vector for reduce-scatter and all-reduce (a chip ends with its 1/P of the sum, or all of it), a
    vector of p chunks for all-to-all over one axis (chunk k goes to chip k). Several axes run as in
    :func:`collective_seconds`: one piece per axis, rotated axis orders, all pieces at once.
    """
    _check_kind(kind)
    dims = tuple(int(d) for d in dims)
    wrap = _wrap_tuple(wrap, len(dims))
    bufs = [np.asarray(b, dtype=np.float64).ravel() for b in buffers]
    P = math.prod(dims)
    if len(bufs) != P or len({b.size for b in bufs}) != 1:
        raise ValueError(f"need {P} equal-length buffers for a {dims} slice")
    active = [a for a, d in enumerate(dims) if d > 1]
    if kind == "all-to-all" and len(active) > 1:
        raise ValueError("all-to-all is simulated over one axis only")
    order = active
    rotations = [order[j:] + order[:j] for j in range(len(order))] if concurrent and order else [order]
    k = len(rotations)
    L = bufs[0].size
    if L % k:
        raise ValueError(f"{L} elements do not split into {k} pieces")
    pieces = [[b[j * L // k:(j + 1) * L // k] for b in bufs] for j in range(k)]
    plans = []
    for rot in rotations:
        if kind == "reduce-scatter":
            plans.append([("reduce-scatter", a) for a in rot])
        elif kind == "all-gather":
            plans.append([("all-gather", a) for a in rot])
        elif kind == "all-reduce":
            plans.append([("reduce-scatter", a) for a in rot] + [("all-gather", a) for a in rot[::-1]])
        else:
            plans.append([("all-to-all", a) for a in rot])
    state = []
    for j in range(k):
        grid = np.empty(dims, dtype=object)
        for i in range(P):
            grid[np.unravel_index(i, dims)] = pieces[j][i]
        state.append(grid)
    trace = CollectiveTrace([])
    for stage in zip(*plans):
        load_all: dict = defaultdict(float)
        rounds = 0
        for j, (sub, axis) in enumerate(stage):
            state[j], r, load = _axis_collective(sub, state[j], dims, wrap, axis, 8)
            rounds = max(rounds, r)
            for link, b in load.items():
                load_all[link] += b
        trace.stages.append((rounds, dict(load_all)))
    for i in range(P):
        trace.result.append(np.concatenate([state[j][np.unravel_index(i, dims)] for j in range(k)]))
    return trace


@dataclass
class RingTrace:
    result: list[np.ndarray]  # every chip's buffer after the all-reduce
    steps: int  # communication steps (all links busy in each)
    sent_elements: list[int]  # elements each chip sent


def simulate_ring_allreduce(buffers: Sequence[Any]) -> RingTrace:
    """The textbook *unidirectional* ring all-reduce, step by step (chip i sends only to chip i + 1).

    Each buffer is cut into p chunks. Reduce-scatter: in step s chip i sends chunk (i − s) mod p to chip i + 1,
    which adds it to its own copy; after p − 1 steps chip i holds the full sum of chunk (i + 1) mod p.
    All-gather: p − 1 more steps pass the finished chunks around the ring. Only one direction of each link works.
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


# -- the collectives XLA put in a program ------------------------------------------------------------------------------

_HLO_KINDS = {"all-reduce": "all-reduce", "all-gather": "all-gather", "reduce-scatter": "reduce-scatter",
              "all-to-all": "all-to-all"}
_DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8, "s32": 4, "s8": 1, "u8": 1, "pred": 1, "s64": 8}


@dataclass(frozen=True)
class HloCollective:
    kind: str  # all-reduce, all-gather, reduce-scatter, all-to-all
    elements: int  # elements of the op's result on one device
    itemsize: int  # bytes per element in this HLO
    group_size: int  # devices in each replica group
    line: str

    @property
    def result_bytes(self) -> int:
        return self.elements * self.itemsize

    def array_bytes(self, itemsize: int | None = None) -> float:
        """V of the α–β model: the full array (an all-gather's result, a reduce-scatter's input), at ``itemsize``
        bytes per element (default: the HLO's own dtype)."""
        n = self.elements * (self.group_size if self.kind == "reduce-scatter" else 1)
        return n * (self.itemsize if itemsize is None else itemsize)


def _group_size(line: str) -> int:
    m = re.search(r"replica_groups=\{\{([^}]*)\}", line)
    if m:
        return len(m.group(1).split(","))
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)
    if m:
        return int(m.group(2))
    m = re.search(r"replica_groups=mesh\[([^\]]*)\][^{]*\{([^}]*)\}", line)
    if m:
        sizes = dict((k.strip("' "), int(v)) for k, v in (kv.split("=") for kv in m.group(1).split(",")))
        return math.prod(sizes[a.strip("' ")] for a in m.group(2).split(","))
    raise ValueError(f"cannot read the replica groups of: {line.strip()[:120]}")


_SHAPE = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\]")


def hlo_collectives(hlo: str) -> list[HloCollective]:
    """The collectives of an optimized HLO module, with the bytes of each one's result and the size of its replica
    groups. Async ``-start`` forms count as the op; their result is a tuple that holds the operand(s) first and the
    result last (``(f32[8,16], f32[64,16]) all-gather-start(...)``), so the last shape is the one read."""
    out = []
    for line in hlo.splitlines():
        m = re.search(r"=\s*(.*?)\s(all-reduce|all-gather|reduce-scatter|all-to-all)(?:-start)?\(", line)
        if not m:
            continue
        shapes = _SHAPE.findall(m.group(1))  # [(dtype, dims), ...]: one, or a tuple's members
        if not shapes:
            raise ValueError(f"cannot read the result shape of: {line.strip()[:120]}")
        (dtype, shape), kind = shapes[-1], m.group(2)
        n = math.prod(int(s) for s in shape.split(",") if s) if shape else 1
        out.append(HloCollective(_HLO_KINDS[kind], n, _DTYPE_BYTES.get(dtype, 4), _group_size(line), line.strip()))
    return out


# -- figure --------------------------------------------------------------------------------------------------------

def draw_torus(ax: Any, torus: Torus | tuple[int, int, int] = (4, 4, 4), highlight: Sequence[int] | None = None) -> None:
    """Draw a 3D grid of chips on a 3D ``Axes``: links solid, wraparound links dashed (only on axes that wrap);
    ``highlight``: a chip whose neighbours are marked."""
    from .plotting import PALETTE

    t = torus if isinstance(torus, Torus) else Torus(torus)
    dims = t.dims
    pts = np.array([t.coords(i) for i in range(t.size)], dtype=float)
    for i in range(t.size):
        ci = np.array(t.coords(i))
        for axis in range(3):
            cj = ci.copy()
            cj[axis] += 1
            if cj[axis] < dims[axis]:
                ax.plot(*zip(ci, cj), color="#999999", linewidth=0.7)
            elif t.wrap[axis] and dims[axis] > 2:  # wraparound: from the last chip back to the first, dashed
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
