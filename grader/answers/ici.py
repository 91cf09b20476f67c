"""The ICI model of lab 7's answer side: which slices wrap around, hop counts, and the α–β prices of
collectives checked against real arrays moved message by message (instructor only; never installed
for students).

Lab 7 asks students to write exactly these models (exercise 6, ``slice_hops``: the wraparound rules
and the hop distance; exercise 7, ``collective_seconds``: the α–β cost of one collective over one
axis), so they live here, not in ``gpucourse``. The course notebook (course/07_tpu.py, §7.7–7.9)
shows their results from stored data, ``gpucourse/data/ici.json``, which :func:`course_data`
computes and ``python -m grader.answers.ici`` writes (tests/test_interconnect.py fails when it is
stale).

α–β model over one mesh axis of ``p`` chips, links used in both directions at once:

    T = rounds · α + (bytes on the busiest link, one direction) / β

==============  ============  ==================  ============  ==================
collective      ring: rounds  ring: busiest link  line: rounds  line: busiest link
==============  ============  ==================  ============  ==================
all-gather      ⌊p/2⌋         (p−1)/p · V/2       p − 1         (p−1)/p · V
reduce-scatter  ⌊p/2⌋         (p−1)/p · V/2       p − 1         (p−1)/p · V
all-reduce      2⌊p/2⌋        (p−1)/p · V         2(p − 1)      2(p−1)/p · V
all-to-all      ⌊p/2⌋         c(p) · V/p²  (*)    p − 1         ⌊p/2⌋⌈p/2⌉ · V/p²
==============  ============  ==================  ============  ==================

(*) c(p) = p²/8 for even p, (p² − 1)/8 for odd p. A ring needs p ≥ 3. Over several axes at once
(:func:`collective_seconds` with ``concurrent=True``) the array is cut into one piece per axis and
the pieces go through the axes in rotated orders (the JAX scaling book, part 3).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gpucourse.interconnect import COLLECTIVES, Torus, _wrap_tuple

from .lab07_tpu import axis_link_bytes, axis_rounds, hops  # the references' models (exercises 6, 7)
from .lab07_tpu import wraparound as _wraparound


def wraparound(chip: Any, dims: Sequence[int], hypothetical: bool = False) -> tuple[bool, ...]:
    """Which axes of a ``chip`` slice of shape ``dims`` wrap around (lab 7's reference model,
    exercise 6)."""
    return _wraparound(chip, dims, hypothetical)

DATA = Path(__file__).resolve().parents[2] / "gpucourse" / "data" / "ici.json"

# -- which slices wrap around, hops (the models of slice_hops, in grader/answers/lab07_tpu.py) -----


def neighbors(t: Torus, i: int) -> list[int]:
    """Chips one link away (a dimension of size 2 gives one neighbour, not two)."""
    c = t.coords(i)
    out = set()
    for axis, (d, w) in enumerate(zip(t.dims, t.wrap)):
        for step in [-1, 1]:
            x = c[axis] + step
            if not w and not 0 <= x < d:
                continue
            neighbour = list(c)
            neighbour[axis] = x % d
            j = t.index(neighbour)
            if j != i:
                out.add(j)
    return sorted(out)


def hop_counts(t: Torus) -> Counter:
    """Histogram of hop counts over all ordered pairs of distinct chips.

    Hops add up over dimensions, so the histogram is the convolution of the per-dimension histograms
    of coordinate distances (over all ordered coordinate pairs); distance 0 then counts only the
    chip itself.
    """
    hist = np.array([1], dtype=np.int64)
    for d, w in zip(t.dims, t.wrap):
        delta = np.abs(np.arange(d)[:, None] - np.arange(d)[None, :])
        dist = np.minimum(delta, d - delta) if w else delta
        hist = np.convolve(hist, np.bincount(dist.ravel()))
    hist[0] -= t.size  # drop the pairs (i, i)
    return Counter({h: int(c) for h, c in enumerate(hist) if c})


def diameter(t: Torus) -> int:
    return sum(d // 2 if w else d - 1 for d, w in zip(t.dims, t.wrap))


def average_hops(t: Torus) -> float:
    counts = hop_counts(t)
    pairs = sum(counts.values())
    return sum(h * c for h, c in counts.items()) / pairs if pairs else 0.0


# -- collectives: the α–β model --------------------------------------------------------------------

@dataclass(frozen=True)
class Axis:
    """One mesh axis of a slice: ``size`` chips in a ring (``wrap``) or a line; ``link_bandwidth``
    per link per direction (bytes/s)."""

    size: int
    wrap: bool
    link_bandwidth: float

    @property
    def ring(self) -> bool:
        return self.wrap and self.size > 2


def axis_seconds(kind: str, nbytes: float, axis: Axis, latency: float) -> float:
    """α–β time of one collective over one axis."""
    return (axis_rounds(kind, axis.size, axis.ring) * latency
            + axis_link_bytes(kind, nbytes, axis.size, axis.ring) / axis.link_bandwidth)


def _check_kind(kind: str) -> None:
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}; one of {COLLECTIVES}")


def _stages(
    kind: str, nbytes: float, axes: Sequence[Axis], concurrent: bool
) -> list[list[tuple[str, float, Axis]]]:
    """The stages of a collective over several axes: in each stage, every piece runs one single-axis
    collective (kind, bytes, axis). Pieces use different axes in the same stage, so they never share
    a link."""
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

    Several axes: with ``concurrent=True`` the array is cut into one piece per axis and the pieces
    run through the axes in rotated orders at the same time; ``concurrent=False`` runs the whole
    array one axis after the other (only one axis's links busy at a time). A stage lasts as many
    rounds as its longest piece plus the time of its busiest link.
    """
    _check_kind(kind)
    axes = [axes] if isinstance(axes, Axis) else list(axes)
    total = 0.0
    for stage in _stages(kind, nbytes, axes, concurrent):
        rounds = max(axis_rounds(k, a.size, a.ring) for k, _, a in stage)
        link = max(axis_link_bytes(k, b, a.size, a.ring) / a.link_bandwidth for k, b, a in stage)
        total += rounds * latency + link
    return total


# -- the simulation: real arrays, message by message -----------------------------------------------

@dataclass
class CollectiveTrace:
    """What :func:`simulate_collective` did."""

    result: list[np.ndarray]  # every chip's output, chips in row-major order of dims
    # (rounds, {(src, dst): bytes}) per stage
    stages: list[tuple[int, dict]] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return sum(r for r, _ in self.stages)

    @property
    def busiest_link_bytes(self) -> float:
        """Per stage, the bytes on its busiest directed link, added over the stages."""
        return sum(max(load.values(), default=0.0) for _, load in self.stages)

    def seconds(self, latency: float, bandwidth: dict[tuple[int, int], float] | float) -> float:
        """α–β time: per stage, its rounds · α + its busiest directed link's bytes / that link's
        bandwidth."""
        total = 0.0
        for rounds, load in self.stages:
            bw = (lambda link: bandwidth) if np.isscalar(bandwidth) else bandwidth.__getitem__
            total += rounds * latency + max((b / bw(link) for link, b in load.items()), default=0.0)
        return total


def _routes(p: int, ring: bool) -> list[tuple[int, int, str]]:
    """(direction, distance, part) of the paths a block takes from its origin: the short way round a
    ring, with the block of the chip opposite (even p) split in halves, 'lo' going right and 'hi'
    going left; both ways along a line. part 'all' is the whole block."""
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
    """One chip's received blocks, keyed (origin, part), in origin order (a block sent in halves is
    rejoined)."""
    return np.concatenate(
        [
            (
                blocks[(o, "all")]
                if (o, "all") in blocks
                else np.concatenate([blocks[(o, "lo")], blocks[(o, "hi")]])
            )
            for o in range(p)
        ]
    )


def _line_collective(kind: str, data: list[np.ndarray], ring: bool, nodes: Sequence[int],
                     load: dict, itemsize: int) -> tuple[list[np.ndarray], int]:
    """One collective over one line (or ring) of chips ``nodes``; adds each message's bytes to
    ``load``."""
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
    # the all-gather run backwards: chunk c's partial sums flow towards chip c
    if kind == "reduce-scatter":
        L = data[0].size
        if L % p:
            raise ValueError(f"reduce-scatter: {L} elements do not split into {p} chunks")
        chunk = [x.reshape(p, L // p) for x in data]
        out = [chunk[c][c].copy() for c in range(p)]
        for s in (+1, -1):  # partials travelling in direction s come from the chips at c − s·d
            part_at = {d: part for direction, d, part in routes if direction == s}
            carried: dict[int, np.ndarray] = {}
            # the chain member at distance rounds − r + 1 sends, chains in step
            for r in range(1, rounds + 1):
                d = rounds - r + 1
                if d not in part_at:
                    continue
                msgs = []
                for c in range(p):
                    src = dest(c, -s, d)
                    if src is None:
                        continue
                    payload = _part(chunk[src][c], part_at[d]).copy()
                    # add what the previous member sent (a half goes into its own half)
                    if c in carried:
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
                    msgs.append(
                        (src, dst, _part(chunk[o][k], part), (o, part) if dst == k else None, k)
                    )
            for src, dst, payload, key, k in msgs:
                send(r, src, dst, payload)
                if key is not None:
                    got[k][key] = payload
        return [_assemble(got[k], p) for k in range(p)], rounds
    raise ValueError(f"unknown collective {kind!r}")


def _axis_collective(
    kind: str,
    data: np.ndarray,
    dims: tuple[int, ...],
    wrap: tuple[bool, ...],
    axis: int,
    itemsize: int,
) -> tuple[np.ndarray, int, dict]:
    """One collective along ``axis`` on every line of the grid at once. ``data``: object array of
    shape dims."""
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


def simulate_collective(
    kind: str,
    buffers: Sequence[Any],
    dims: Sequence[int],
    wrap: bool | Sequence[bool] = True,
    concurrent: bool = True,
) -> CollectiveTrace:
    """Run a collective on real arrays over a slice of shape ``dims`` (chips in row-major order),
    round by round.

    ``buffers[i]`` is chip i's input: a shard for all-gather (every chip ends with all shards, in
    chip order), a full-size vector for reduce-scatter and all-reduce (a chip ends with its 1/P of
    the sum, or all of it), a vector of p chunks for all-to-all over one axis (chunk k goes to chip
    k). Several axes run as in :func:`collective_seconds`: one piece per axis, rotated axis orders,
    all pieces at once.
    """
    _check_kind(kind)
    dims = tuple(map(int, dims))
    wrap = _wrap_tuple(wrap, len(dims))
    bufs = [np.asarray(b, dtype=np.float64).ravel() for b in buffers]
    P = math.prod(dims)
    if len(bufs) != P or len({b.size for b in bufs}) != 1:
        raise ValueError(f"need {P} equal-length buffers for a {dims} slice")
    active = [a for a, d in enumerate(dims) if d > 1]
    if kind == "all-to-all" and len(active) > 1:
        raise ValueError("all-to-all is simulated over one axis only")
    order = active
    rotations = (
        [order[j:] + order[:j] for j in range(len(order))] if concurrent and order else [order]
    )
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
            plans.append(
                [("reduce-scatter", a) for a in rot] + [("all-gather", a) for a in rot[::-1]]
            )
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


# -- what the course notebook shows (course/07_tpu.py §7.7–7.9), stored as gpucourse/data/ici.json -

# §7.9's sharded layers: the collectives the compiled programs contain, as (kind, bytes of the whole
# array at bf16, devices in a group); the notebook compiles them live and asserts they are these
TP_LAYOUTS = {
    "data parallel": [],
    "FSDP": [("all-gather", 536870912, 8)],
    "tensor parallel, column split (up)": [],
    "tensor parallel, row split (down)": [("all-reduce", 536870912, 4)],
    "row split of the up-projection": [("all-reduce", 2147483648, 4)],
}
SLICE_TABLE = {"TPU v4": [(2, 2, 1), (2, 2, 4), (2, 4, 4), (4, 4, 4), (4, 4, 8), (16, 16, 16)],
               "TPU v5p": [(2, 2, 2), (2, 4, 4), (4, 4, 4), (8, 8, 16), (16, 16, 24)],
               "TPU v5e": [(2, 4), (4, 4), (8, 16), (16, 16)], "TPU v6e": [(4, 8), (16, 16)]}
V5P_SLICES = [(2, 2, 2), (2, 4, 4), (4, 4, 4), (8, 8, 8), (8, 16, 16), (16, 16, 16), (16, 16, 24)]


def _key(dims: Sequence[int]) -> str:
    return "x".join(map(str, dims))


def course_data() -> dict[str, Any]:
    """Every number of §7.7–7.9 that comes from this module's models (plain JSON data)."""
    from gpucourse.tpu import TPU_CHIPS, TPU_V5E, TPU_V5P

    out: dict[str, Any] = {
        "source": "grader/answers/ici.py (course_data); write with python -m grader.answers.ici"
    }
    out["wraps"] = {name: {_key(d): list(wraparound(TPU_CHIPS[name], d)) for d in shapes}
                    for name, shapes in SLICE_TABLE.items()}
    out["wraps"]["TPU v5p"].update({_key(d): list(wraparound(TPU_V5P, d)) for d in V5P_SLICES})
    grids = {}
    for dims, wrap in (
        ((4, 4, 4), True),
        ((4, 4, 4), False),
        ((16, 16, 16), True),
        ((16, 16, 16), False),
        ((8, 16), wraparound(TPU_V5E, (8, 16))),
        ((4, 4), wraparound(TPU_V5E, (4, 4))),
    ):
        t = Torus(dims, wrap)
        corner = tuple(d - 1 for d in dims)
        grids[_key(dims) + ("" if isinstance(wrap, tuple) else " torus" if wrap else " mesh")] = {
            "diameter": diameter(t),
            "average_hops": average_hops(t),
            "corner_hops": hops(t, (0,) * len(dims), corner),
            "hop_counts": (
                {str(h): c for h, c in sorted(hop_counts(t).items())} if t.size == 4096 else None
            ),
        }
    out["grids"] = grids
    # §7.8: one axis of 8 chips, every collective, ring and line: the simulation's rounds and
    # busiest link, which must be the closed forms'
    p8, rng, table = 8, np.random.default_rng(0), {}
    bufs = list(rng.standard_normal((p8, 800)))
    for kind in COLLECTIVES:
        inp = [b[:100] for b in bufs] if kind == "all-gather" else bufs
        V = 8 * (100 * p8 if kind == "all-gather" else 800 * (p8 if kind == "all-to-all" else 1))
        for ring in (True, False):
            trace = simulate_collective(kind, inp, (p8,), wrap=ring)
            assert trace.rounds == axis_rounds(kind, p8, ring)
            assert trace.busiest_link_bytes == axis_link_bytes(kind, V, p8, ring)
            table[f"{kind} {'ring' if ring else 'line'}"] = {
                "rounds": trace.rounds,
                "busiest_over_V": trace.busiest_link_bytes / V,
            }
    out["p8"] = table
    out["a2a_over_ag"] = {
        str(p): (
            axis_link_bytes("all-to-all", 1.0, p, True)
            / axis_link_bytes("all-gather", 1.0, p, True)
        )
        for p in (8, 16, 1024)
    }
    # §7.8: a 100 MB all-reduce on v5p slices, 1 µs per hop, three ways
    nbytes, hop, bw = 1e8, 1e-6, TPU_V5P.ici_link_bytes_per_s
    rows = {}
    for dims in V5P_SLICES:
        axes = [Axis(d, w, bw) for d, w in zip(dims, wraparound(TPU_V5P, dims))]
        n = math.prod(dims)
        rows[_key(dims)] = {
            "one ring through every chip": collective_seconds(
                "all-reduce", nbytes, Axis(n, True, bw), hop
            ),
            "one axis after another": collective_seconds(
                "all-reduce", nbytes, axes, hop, concurrent=False
            ),
            "all axes at once": collective_seconds("all-reduce", nbytes, axes, hop),
        }
    out["v5p_allreduce_100MB"] = rows
    # §7.9: the sharded layers' collectives priced on a TPU v5e 2×4 slice (no wraparound: two
    # lines), 1 µs per hop
    line = {
        2: [Axis(2, False, TPU_V5E.ici_link_bytes_per_s)],
        4: [Axis(4, False, TPU_V5E.ici_link_bytes_per_s)],
    }
    line[8] = line[2] + line[4]
    out["tp_layouts"] = {
        name: {
            "collectives": [list(c) for c in colls],
            "t_comm": sum(collective_seconds(k, b, line[g], 1e-6) for k, b, g in colls),
        }
        for name, colls in TP_LAYOUTS.items()
    }
    return out


def data_text() -> str:
    return json.dumps(course_data(), indent=1, sort_keys=True) + "\n"


def write_data() -> Path:
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(data_text(), encoding="utf-8")
    return DATA


if __name__ == "__main__":
    print(write_data())
