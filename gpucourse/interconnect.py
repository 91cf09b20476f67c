"""Chip-to-chip networks of TPU slices: grids of chips with or without wraparound, and the
collectives XLA put in a program.

A TPU slice wires each chip directly to its ±1 neighbours along every axis over ICI (Inter-Chip
Interconnect). An axis *with wraparound* closes into a ring; without it, it is a line. No packet
switch sits between neighbours. :class:`Torus` describes such a grid (its links, its bisection, a
drawing); :func:`hlo_collectives` reads the collectives of a compiled program;
:func:`simulate_ring_allreduce` runs the textbook one-direction ring.

Lab 7 asks students to write the models of which slices wrap, of hop counts and of the α–β cost of
collectives, so those are not in this package: they live on the lab's answer side
(``grader/answers/ici.py``), together with the message-by-message simulation that checks the α–β
closed forms, and the course notebook (course/07_tpu.py) shows their results from stored data,
:func:`stored` (``gpucourse/data/ici.json``, computed there).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

GBPS = 1e9 / 8  # bytes/s in one Gbit/s
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all")
DATA = Path(__file__).parent / "data" / "ici.json"


# the HLO opcodes of the collectives (a regular-expression group)
COLLECTIVE_OPCODES = r"(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"

def stored() -> dict[str, Any]:
    """The ICI model's results the course notebook shows (§7.7–7.9), computed on lab 7's answer
    side."""
    return json.loads(DATA.read_text(encoding="utf-8"))


def _wrap_tuple(wrap: bool | Sequence[bool], n: int) -> tuple[bool, ...]:
    if isinstance(wrap, (bool, np.bool_)):
        return (bool(wrap),) * n
    out = tuple(bool(w) for w in wrap)
    if len(out) != n:
        raise ValueError(f"{len(out)} wraparound flags for {n} axes")
    return out


@dataclass(frozen=True)
class Torus:
    """A ``dims[0] × dims[1] × …`` grid of chips. ``wrap`` (one flag, or one per axis) says which
    axes close into rings; ``wrap=False`` everywhere is an open mesh."""

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
        return int(
            np.ravel_multi_index(tuple(int(c) % d for c, d in zip(coords, self.dims)), self.dims)
        )

    @property
    def links(self) -> int:
        """Number of (bidirectional) chip-to-chip links: per axis, each line of d chips has d − 1
        links, one more where it wraps (a ring of 2 chips has one link, not two)."""
        return sum(
            self.size // d * (d if w and d > 2 else d - 1)
            for d, w in zip(self.dims, self.wrap)
            if d > 1
        )

    @property
    def bisection_links(self) -> int:
        """Links cut when the largest dimension is split in half (2× for a ring: its wraparound link
        is cut too)."""
        axis = int(np.argmax(self.dims))
        d = self.dims[axis]
        if d < 2:
            return 0
        cross_section = self.size // d
        return cross_section * (2 if self.wrap[axis] and d > 2 else 1)


@dataclass
class RingTrace:
    result: list[np.ndarray]  # every chip's buffer after the all-reduce
    steps: int  # communication steps (all links busy in each)
    sent_elements: list[int]  # elements each chip sent


def simulate_ring_allreduce(buffers: Sequence[Any]) -> RingTrace:
    """The textbook *unidirectional* ring all-reduce, step by step (chip i sends only to chip i +
    1).

    Each buffer is cut into p chunks. Reduce-scatter: in step s chip i sends chunk (i − s) mod p to
    chip i + 1, which adds it to its own copy; after p − 1 steps chip i holds the full sum of chunk
    (i + 1) mod p. All-gather: p − 1 more steps pass the finished chunks around the ring. Only one
    direction of each link works.
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
        # all send at once
        msgs = [(i, (i - s) % p, bufs[i][chunk[(i - s) % p]].copy()) for i in range(p)]
        for i, c, data in msgs:
            bufs[(i + 1) % p][chunk[c]] += data
            sent[i] += data.size
        steps += 1
    # all-gather: chip i owns chunk (i + 1) mod p, pass finished chunks along
    for s in range(p - 1):
        msgs = [(i, (i + 1 - s) % p, bufs[i][chunk[(i + 1 - s) % p]].copy()) for i in range(p)]
        for i, c, data in msgs:
            bufs[(i + 1) % p][chunk[c]] = data
            sent[i] += data.size
        steps += 1
    return RingTrace(bufs, steps, sent)


# -- the collectives XLA put in a program ----------------------------------------------------------

_HLO_KINDS = {
    "all-reduce": "all-reduce",
    "all-gather": "all-gather",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all",
    "collective-permute": "collective-permute",
}
_DTYPE_BYTES = {
    "f32": 4,
    "bf16": 2,
    "f16": 2,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "s64": 8,
    "u64": 8,
    "s32": 4,
    "u32": 4,
    "s16": 2,
    "u16": 2,
    "s8": 1,
    "u8": 1,
    "pred": 1,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1,
    "f8e4m3b11fnuz": 1,
    "f8e8m0fnu": 1,
    "s4": 1,
    "u4": 1,
}


@dataclass(frozen=True)
class HloCollective:
    kind: str  # all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute
    elements: int  # elements of the op's result on one device (a tuple result: all of its members)
    itemsize: int  # bytes per element in this HLO
    group_size: int  # devices in each replica group
    line: str

    @property
    def result_bytes(self) -> int:
        return self.elements * self.itemsize

    def array_bytes(self, itemsize: int | None = None) -> float:
        """V of the α–β model: the full array (an all-gather's result, a reduce-scatter's input), at
        ``itemsize`` bytes per element (default: the HLO's own dtype)."""
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
        sizes = dict(
            (k.strip("' "), int(v)) for k, v in (kv.split("=") for kv in m.group(1).split(","))
        )
        return math.prod(sizes[a.strip("' ")] for a in m.group(2).split(","))
    raise ValueError(f"cannot read the replica groups of: {line.strip()[:120]}")


_SHAPE = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\]")


def _itemsize(dtype: str, line: str) -> int:
    if dtype not in _DTYPE_BYTES:
        raise ValueError(f"unknown element type {dtype!r} in: {line.strip()[:120]}")
    return _DTYPE_BYTES[dtype]


def hlo_collectives(hlo: str) -> list[HloCollective]:
    """The collectives of an optimized HLO module, with the bytes of each one's result and the size
    of its replica groups. Async ``-start`` forms count as the op; their result is a tuple that
    holds the operand(s) first and the result(s) after (``(f32[8,16], f32[64,16])
    all-gather-start(...)``; a combined start ``((f32[8], f32[4]), (f32[64], f32[32]))``), so its
    second half is read; an ``all-reduce-start``'s result is the result (every member of a tuple); a
    ``collective-permute-start``'s tuple is (operand, result, two u32 contexts): its second shape. A
    synchronous collective whose result is a tuple (an all-reduce of several arrays at once, an
    all-to-all's pieces) counts every member. A collective-permute moves data between pairs
    (``source_target_pairs``): its group size is 2. A collective inside a loop is listed once,
    whatever the loop's trip count.

    Args:
        hlo: the text of an optimized HLO module (``compiled.as_text()``).
    Returns:
        one :class:`HloCollective` per collective op: its kind, result elements per device,
        bytes per element, replica-group size and HLO line.
    """
    out = []
    for line in hlo.splitlines():
        m = re.search(r"=\s*(.*?)\s" + COLLECTIVE_OPCODES + r"(-start)?\(", line)
        if not m:
            continue
        shapes = _SHAPE.findall(m.group(1))  # [(dtype, dims), ...]: one, or a tuple's members
        if not shapes:
            raise ValueError(f"cannot read the result shape of: {line.strip()[:120]}")
        kind, start = m.group(2), bool(m.group(3))
        count = lambda dims: math.prod(int(s) for s in dims.split(",") if s) if dims else 1
        if kind == "collective-permute":
            dtype, shape = shapes[1] if start and len(shapes) > 1 else shapes[0]
            out.append(HloCollective(kind, count(shape), _itemsize(dtype, line), 2, line.strip()))
            continue
        # a -start's tuple holds the operands, then the results (several of each where a combiner
        # merged collectives): the second half; an all-reduce-start's result is the result itself (a
        # tuple: several)
        members = shapes if not start or kind == "all-reduce" else shapes[len(shapes) // 2:]
        n = sum(count(d) for _, d in members)
        # mixed element types: the widest (never under-counts)
        size = max(_itemsize(t, line) for t, _ in members)
        out.append(HloCollective(_HLO_KINDS[kind], n, size, _group_size(line), line.strip()))
    return out


# -- figure ----------------------------------------------------------------------------------------


def draw_torus(
    ax: Any, torus: Torus | tuple[int, int, int] = (4, 4, 4), highlight: Sequence[int] | None = None
) -> None:
    """Draw a 3D grid of chips on a 3D ``Axes``: links solid, wraparound links dashed (only on axes
    that wrap); ``highlight``: a chip whose neighbours are marked."""
    from .plotting import PALETTE

    t = torus if isinstance(torus, Torus) else Torus(torus)
    dims = t.dims
    pts = np.array([t.coords(i) for i in range(t.size)], dtype=float)
    for i in range(t.size):
        coord_i = np.array(t.coords(i))
        for axis in range(3):
            coord_j = coord_i.copy()
            coord_j[axis] += 1
            if coord_j[axis] < dims[axis]:
                ax.plot(*zip(coord_i, coord_j), color="#999999", linewidth=0.7)
            # wraparound: from the last chip back to the first, dashed
            elif t.wrap[axis] and dims[axis] > 2:
                end = coord_i.copy().astype(float)
                start = coord_i.copy().astype(float)
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
            c = np.array(t.coords(h))
            neighbours = []
            for axis, (d, w) in enumerate(zip(dims, t.wrap)):
                for step in (-1, 1):
                    x = c[axis] + step
                    if (w or 0 <= x < d) and x % d != c[axis]:
                        neighbours.append(np.where(np.arange(3) == axis, x % d, c))
            neighbours = np.array(neighbours, dtype=float)
            ax.scatter(neighbours[:, 0], neighbours[:, 1], neighbours[:, 2], s=55, color=PALETTE[1])
    ax.set_xlabel("x [chip]")
    ax.set_ylabel("y [chip]")
    ax.set_zlabel("z [chip]")
