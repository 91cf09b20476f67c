"""Data races, found after the launch from its access log (what compute-sanitizer's racecheck does
on a GPU, here for global memory too).

Two accesses to one element *conflict* when they come from different threads, at least one writes
(or one is an atomic and the other a plain read), and nothing orders them:

- same block, same barrier phase (no ``cuda.syncthreads()`` between them) — unless a ``syncwarp``
  both lanes took part in lies between them, or a fence + atomic hand-off published the first to the
  second's thread;
- different blocks, same grid phase (blocks never wait for one another; only ``grid.sync()`` orders
  them) — unless a fence + atomic hand-off orders them (the "last block" reduction pattern).

Atomics never conflict with atomics. The search is vectorised: accesses are grouped by (element,
epoch) and by (element, grid phase); only elements whose groups can hold a conflict are replayed
access by access, with the orderings above. ``race_count`` counts the accesses that conflict with an
earlier one.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Sequence

import numpy as np

from .instrument import where
from .report import Race

MAX_KEPT = 50
KINDS = ("read", "write", "atomic")


def _groups(key: np.ndarray, who: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Per row: does the row's group (rows with equal ``key``) hold a conflicting pair (different
    ``who``)?"""
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])  # first row of each group
    w = who[order]
    kinds = kind[order]  # 0 read, 1 write, 2 atomic, 3 write of the value already there
    big = np.iinfo(np.int64).max
    wmin, wmax = np.minimum.reduceat(w, starts), np.maximum.reduceat(w, starts)
    writes = np.add.reduceat(((kinds == 1) | (kinds == 3)).astype(np.int64), starts)  # per group
    conflict = (writes > 0) & (wmin != wmax)  # a write, and more than one thread (or block)
    read_or_atomic = (kinds == 0) | (kinds == 2)
    atomics = np.add.reduceat((kinds == 2).astype(np.int64), starts)
    reads = np.add.reduceat((kinds == 0).astype(np.int64), starts)
    amin = np.minimum.reduceat(np.where(read_or_atomic, w, big), starts)
    amax = np.maximum.reduceat(np.where(read_or_atomic, w, -1), starts)
    # a plain read beside another's atomic update
    conflict |= (atomics > 0) & (reads > 0) & (amin != amax)
    sizes = np.diff(np.r_[starts, len(k)])
    out = np.empty(len(key), dtype=bool)
    out[order] = np.repeat(conflict, sizes)
    return out


def detect(
    log: np.ndarray,
    epochs: np.ndarray,
    tpb: int,
    roots: Sequence[Any],
    traces: list[list[int]],
    kernel_code: Any,
    sync_hist: dict[int, tuple[list[int], list[tuple]]],
    knows_hist: dict[int, tuple[list[int], list[dict]]],
) -> tuple[list[Race], int, int, list[tuple]]:
    """(the first races, one per element and kind; how many accesses conflict; how many conflicts
    are benign: their write stored the value already there, so no order of the threads changes what
    anyone reads; the first benign ones' (array, index), for pictures)."""
    n = len(log)
    if n == 0:
        return [], 0, 0, []
    tid, rid, flat, kind, epoch = log[:, 0], log[:, 2], log[:, 3], log[:, 4], log[:, 5]
    n_ep = len(epochs)
    elem = rid * (int(flat.max()) + 1) + flat
    # too wide to combine with the epoch: renumber densely
    if (int(elem.max()) + 1) * max(n_ep, 2) >= 1 << 62:
        elem = np.unique(elem, return_inverse=True)[1].reshape(-1).astype(np.int64)
    suspect = _groups(elem * n_ep + epoch, tid, kind)  # same block, same phase
    # different blocks, same grid phase: only global memory is shared between blocks
    glob = np.array([r.space == "global" for r in roots], dtype=bool)[rid]
    if glob.any():
        rows = np.flatnonzero(glob)
        gph = epochs[epoch[rows], 2]
        cross = _groups(elem[rows] * (int(gph.max()) + 1) + gph, tid[rows] // tpb, kind[rows])
        suspect[rows[cross]] = True
    if not suspect.any():
        return [], 0, 0, []
    cand = np.isin(elem, np.unique(elem[suspect]))
    rows = np.flatnonzero(cand)
    rows = rows[np.lexsort((rows, elem[rows]))]  # by element, then in execution order
    return _replay(rows, log, elem, epochs, tpb, roots, traces, kernel_code, sync_hist, knows_hist)


def _replay(
    rows: np.ndarray,
    log: np.ndarray,
    elem: np.ndarray,
    epochs: np.ndarray,
    tpb: int,
    roots: Sequence[Any],
    traces: list[list[int]],
    kernel_code: Any,
    sync_hist: dict,
    knows_hist: dict,
) -> tuple[list[Race], int, int, list[tuple]]:
    ep_of = [tuple(e) for e in epochs.tolist()]
    L = log[rows].tolist()
    E = elem[rows].tolist()
    races: list[Race] = []
    benign_at: list[tuple] = []  # (array, index) of the first benign conflicts
    seen: set = set()
    count = benign = 0

    def wc(t: int, seq: int) -> int:  # syncwarps thread t had passed when it made access seq
        h = sync_hist.get(t)
        return bisect_right(h[0], seq) if h else 0

    def clock_at(t: int, seq: int) -> tuple | None:
        h = sync_hist.get(t)
        if not h:
            return None
        i = bisect_right(h[0], seq)
        return h[1][i - 1] if i else None

    def knows(t: int, seq: int) -> dict | None:
        h = knows_hist.get(t)
        if not h:
            return None
        i = bisect_right(h[0], seq)
        return h[1][i - 1] if i else None

    def ordered(p: tuple, c: tuple) -> bool:
        p_tid, p_epoch, p_seq = p
        c_tid, c_epoch, c_seq = c
        # same block, phase, warp: a syncwarp between?
        if p_epoch == c_epoch and (p_tid % tpb) // 32 == (c_tid % tpb) // 32:
            v = clock_at(c_tid, c_seq)
            if v is not None and v[(p_tid % tpb) % 32] > wc(p_tid, p_seq):
                return True
        k = knows(c_tid, c_seq)
        return bool(k) and k.get(p_tid, -1) > p_seq

    def conflicts(p: tuple | None, c: tuple) -> bool:
        if p is None or p[0] == c[0]:
            return False
        p_epoch, c_epoch = ep_of[p[1]], ep_of[c[1]]
        if not (p[1] == c[1] or (p_epoch[0] != c_epoch[0] and p_epoch[2] == c_epoch[2])):
            return False
        return not ordered(p, c)

    def record(p: tuple, c: tuple, rid: int, flat: int, label: str, harmless: bool = False) -> None:
        nonlocal count, benign
        if harmless:
            benign += 1
            at = (roots[rid].name, roots[rid].index_of(flat))
            if len(benign_at) < MAX_KEPT and at not in benign_at:
                benign_at.append(at)
            return
        count += 1
        root = roots[rid]
        tag = (root.name, flat, label)
        if len(races) >= MAX_KEPT or tag in seen:
            return
        seen.add(tag)
        p_block, c_block = p[0] // tpb, c[0] // tpb
        writes = (log[:, 2] == rid) & (log[:, 3] == flat) & (log[:, 4] != 0)
        # (at most MAX_KEPT races recorded: one pass over the log each)
        writers = set(log[writes, 0].tolist())
        next_iteration = (label == "read-after-write" and p_block == c_block
                          and _overwritten_next_iteration(p, c, log, traces))
        if next_iteration:  # in program order the read came first: the next iteration's write
            p, c, p_block, c_block, label = c, p, c_block, p_block, "write-after-read"
        races.append(
            Race(
                root.space,
                root.name,
                root.index_of(flat),
                label,
                (p_block, p[0] - p_block * tpb),
                (c_block, c[0] - c_block * tpb),
                _line(p, traces, kernel_code, pos_of),
                _line(c, traces, kernel_code, pos_of),
                both_write=p[0] in writers and c[0] in writers,
                next_iteration=next_iteration,
            )
        )

    pos_of: dict[int, int] = {}
    current = None
    slots: list = [None] * 7
    same: set[int] = set()  # rows that wrote the value already there
    for (t, pos, rid, flat, k, epoch), e, seq in zip(L, E, rows.tolist()):
        if e != current:
            current, slots = e, [None] * 7
        c = (t, epoch, seq)
        pos_of[seq] = pos
        if k == 3:
            same.add(seq)
            k = 1
        if k == 0:  # read: against the last write, then the atomics
            if conflicts(slots[0], c):
                record(slots[0], c, rid, flat, "read-after-write", slots[0][2] in same)
            else:
                for a in slots[4:]:
                    if conflicts(a, c):
                        record(a, c, rid, flat, "read-after-atomic")
                        break
            _remember(slots, 1, c, ep_of)
        elif k == 1:  # write: against everything since the last write
            for i, p in enumerate(slots):
                if conflicts(p, c):
                    record(
                        p,
                        c,
                        rid,
                        flat,
                        (
                            "write-after-write"
                            if i == 0
                            else "write-after-read" if i < 4 else "write-after-atomic"
                        ),
                        seq in same,
                    )
                    break
            # a write of the value already there changes nothing a reader saw: the reads (and
            # atomics) before it stay to be compared with the next write that does (a dot-product
            # tree without its barrier: the first writes add 0, the later ones are the race)
            slots = [c, *slots[1:]] if seq in same else [c, None, None, None, None, None, None]
        else:  # atomic: against plain accesses only
            for i, p in enumerate(slots[:4]):
                if conflicts(p, c):
                    record(p, c, rid, flat, "atomic-after-write" if i == 0 else "atomic-after-read",
                           i == 0 and p[2] in same)
                    break
            _remember(slots, 4, c, ep_of)
    return races, count, benign, benign_at


def _remember(slots: list, base: int, c: tuple, ep_of: list) -> None:
    """Keep, of the reads (or atomics) since the last write, the latest, the latest other thread's
    in the same epoch, and the latest from another block: enough to find any conflict a later access
    can have."""
    latest = slots[base]
    if latest is not None and latest[0] != c[0]:
        if latest[1] == c[1]:
            slots[base + 1] = latest
        elif ep_of[latest[1]][0] != ep_of[c[1]][0]:
            slots[base + 2] = latest
    slots[base] = c


def _source_line(rec: tuple, log: np.ndarray, traces: list[list[int]]) -> int | None:
    t, _, seq = rec
    pos = int(log[seq, 1])
    return traces[t][pos] if 0 <= pos < len(traces[t]) else None


def _overwritten_next_iteration(w: tuple, r: tuple, log: np.ndarray,
                                traces: list[list[int]]) -> bool:
    """A write ``w`` that a read ``r`` of another thread of the block saw, in the same phase, is
    the writer's next loop iteration when the write's line comes before the read's in the source
    and the writer had itself run the read's line earlier in this phase: it finished this
    iteration's reads, looped back and overwrote the element before ``r``'s thread read it (a tile
    loop without the barrier at the end of its body: a write-after-read across iterations, though
    a barrier sits between the two lines)."""
    w_line, r_line = _source_line(w, log, traces), _source_line(r, log, traces)
    if w_line is None or r_line is None or w_line >= r_line:
        return False
    t, epoch, seq = w
    mine = np.flatnonzero((log[:seq, 0] == t) & (log[:seq, 5] == epoch))
    trace = traces[t]
    return any(0 <= p < len(trace) and trace[p] == r_line for p in log[mine, 1].tolist())


def _line(rec: tuple, traces: list[list[int]], code: Any, pos_of: dict[int, int]) -> str:
    t, _, seq = rec
    pos = pos_of.get(seq, -1)
    return where(code, traces[t][pos]) if pos >= 0 and pos < len(traces[t]) else ""
