"""What one instrumented launch did: :class:`KernelReport`.

The executor records, for every CUDA thread, the source statements it executed (its *trace*) and
every access to global and shared memory. The report turns those into what a GPU performance
engineer asks about:

- per-thread traffic (``per_thread``, ``total``, ``atomics``);
- warp steps and **SIMT efficiency**: the lanes of a warp that are at the same statement (the same
  iteration of every enclosing loop) share one issued step; lanes elsewhere wait masked off.
  Efficiency = active lanes / (steps × 32). The heavy part is computed when first asked for;
- coalescing (``sectors_per_request``: distinct 32-byte sectors per warp-wide access, one per memory
  instruction: the k-th access a statement makes to an array) and shared-memory bank conflicts
  (``bank_conflicts``: ways per warp-wide access, 32 banks of 4-byte words, served in 128-byte
  phases);
- correctness findings, most serious first (``problems()``): barrier divergence and warp-mask errors
  (what compute-sanitizer's synccheck reports), data races (racecheck, for global memory too; a
  write of the value already there is counted apart as benign, as racecheck's warnings), uses of
  uninitialised values (initcheck, for shared and local memory too: a read whose value is never used
  is counted, not an error), and warnings (negative indices, dtype truncation, aliased arguments,
  shuffle lane arguments past 31).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .dims import SECTOR_BYTES, WARP_SIZE, Dim3
from .instrument import Loop

SPACES = ("global", "shared")
_COL = {("global", "r"): 0, ("global", "w"): 1, ("shared", "r"): 2, ("shared", "w"): 3}
KIND_CHAR = "rwaw"  # logged kinds 0 read, 1 write, 2 atomic, 3 write of the value already there


@dataclass(frozen=True)
class Race:
    space: str  # "global" or "shared"
    array: str
    index: tuple
    # "read-after-write", "write-after-read", "write-after-write", "read-after-atomic", ...
    kind: str
    first: tuple  # (block id, thread id within block) of the earlier access
    second: tuple
    first_where: str = ""  # " at line 12 of the cell (`sA[ty, tx] = ...`)"
    second_where: str = ""
    # each of the two threads also writes the element (a shared counter, not a neighbour)
    both_write: bool = False
    # a write-after-read across loop iterations: the writer looped back and overwrote the element
    # (first: the read, second: the next iteration's write) before the reader had read it
    next_iteration: bool = False

    @property
    def same_block(self) -> bool:
        return self.first[0] == self.second[0]

    @property
    def read_modify_write(self) -> bool:
        """One statement in both threads reads the element and writes it back (``counts[b] += 1``):
        both threads write the element they race on. (``s[t] += s[t - d]`` races too, but thread t
        writes s[t] and only reads s[t - d]: a barrier between the reads and the writes fixes that
        one.)"""
        return (
            bool(self.first_where)
            and self.first_where == self.second_where
            and "read" in self.kind
            and self.both_write
        )

    def __str__(self) -> str:
        verb = {"r": "read", "w": "wrote", "a": "updated atomically"}
        earlier_kind, later_kind = self.kind.split("-after-")[1][0], self.kind[0]
        idx = ", ".join(str(i) for i in self.index)
        between = (
            "one read-modify-write in both threads, with nothing making it atomic"
            if self.read_modify_write
            else (
                "in its next loop iteration: a barrier between the two lines orders them within"
                " one iteration, but none between this iteration's read and the next iteration's"
                " write"
            )
            if self.next_iteration
            else (
                "with no cuda.syncthreads() between them"
                if self.same_block
                else "in different blocks, which never wait for each other"
            )
        )
        return (
            f"{self.kind} race on {self.space} {self.array}[{idx}]: thread {self.first[1]} of block"
            f" {self.first[0]} {verb[earlier_kind]} it{self.first_where}, then thread"
            f" {self.second[1]} of block {self.second[0]} {verb[later_kind]} it{self.second_where},"
            f" {between}"
        )


@dataclass(frozen=True)
class SyncIssue:
    """A barrier or warp-synchronous operation used in a way CUDA leaves undefined (synccheck's
    findings)."""

    # "barrier divergence", "warp mask", "shuffle from an inactive lane", "cooperative launch"
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class UninitializedUse:
    """An uninitialised value (read from memory no thread wrote) that the kernel used."""

    origin: Any  # values.Origin
    how: str  # "it is stored to global memory out[3]", "a branch ... depends on it", ...
    thread: tuple  # (block, thread in block) that used it
    where: str

    def __str__(self) -> str:
        return (
            f"thread {self.thread[1]} of block {self.thread[0]}{self.where} used an uninitialised"
            f" value ({self.origin}): {self.how}"
        )


@dataclass(frozen=True)
class Float64Op:
    """A kernel line where float64 values were made from a float32 operand, as numba-cuda types it
    (``x * 0.1``, ``x / 3``, ``acc = 0.0; acc += x``): on a GPU a ``cvt.f64.f32`` and FP64
    arithmetic (1/64 of the FP32 rate on consumer GPUs, 1/2 on an H100)."""

    line: int
    where: str  # ' at line 7 of the cell (`acc += x[i]`)'
    count: int  # such operations, all threads together
    function: str = ""  # the kernel's or device function's name

    def __str__(self) -> str:
        return (
            f"{self.count} float64 operation{'s' * (self.count != 1)} on float32 values{self.where}"
            " (numba-cuda types a Python float — a literal such as 0.0 or -np.inf, a float"
            " argument — or an int as 64-bit, and an np.float64(x) cast or an element of a"
            " float64 array as float64: find where the value became float64 and write"
            " np.float32(...) there, or make the array np.float32)"
        )


@dataclass(frozen=True)
class WarpStats:
    block: int
    warp: int  # warp index inside the block
    threads: int  # threads of the launch in this warp (< 32 for a partial last warp)
    steps: int  # issued steps (one per distinct statement the warp's threads execute, in lockstep)
    active: int  # sum over steps of the lanes that executed it
    # steps that ran while other not-yet-finished lanes of the warp waited masked off
    divergent: int = 0
    # divergent branches: runs of divergent steps by the same lanes, one per split however long
    branches: int = 0
    narrow: int = 0  # steps run by one or two lanes (a serial loop's steps)

    @property
    def efficiency(self) -> float:
        return self.active / (self.steps * WARP_SIZE) if self.steps else 1.0


def event_keys(trace: list[int], loops: list[Loop], header: dict[int, int]) -> list[tuple]:
    """Program-order keys for a thread's statement trace: (loop header, iteration) for each
    enclosing loop, then the line. Two lanes at equal keys are at the same statement of the same
    iteration: one warp step."""
    keys, stack = [], []
    for ln in trace:
        while stack and not loops[stack[-1][0]].start <= ln <= loops[stack[-1][0]].end:
            stack.pop()
        h = header.get(ln)
        if h is not None:
            if stack and stack[-1][0] == h:
                stack[-1][1] += 1
            else:
                stack.append([h, 0])
        keys.append(tuple((loops[i].start, c) for i, c in stack) + ((ln, 0),))
    return keys


@dataclass
class ArrayInfo:
    name: str
    space: str  # "global", "shared", "local", "const"
    shape: tuple
    dtype: np.dtype
    unit: int  # bytes per tracked position


class _Findings:
    """The correctness findings, read the same way from the live report and from its data form (both
    hold ``sync_errors``, ``races``/``race_count`` and
    ``uninitialized``/``uninitialized_count``)."""

    def problems(self) -> list[str]:
        """Every correctness finding, most serious first: synchronisation errors, races, uses of
        uninitialised values (with counts and the first example of each)."""
        out = [str(s) for s in self.sync_errors]
        if self.race_count:
            out.append(
                f"{self.race_count} data race{'s' * (self.race_count != 1)}, e.g. {self.races[0]}"
            )
        if self.uninitialized_count:
            n = self.uninitialized_count
            out.append(
                f"{n} use{'s' * (n != 1)} of uninitialised memory, e.g. {self.uninitialized[0]}"
            )
        return out

    @property
    def ok(self) -> bool:
        return not (self.sync_errors or self.race_count or self.uninitialized_count)


class KernelReport(_Findings):
    """What one instrumented launch did. Per-thread counts are indexed by global linear thread id
    (block id × threads per block + thread id in block)."""

    def __init__(
        self,
        name: str,
        grid: Dim3,
        block: Dim3,
        traces: list[list[int]],
        log: np.ndarray,
        roots: list[ArrayInfo],
        loops: list[Loop],
        header: dict[int, int],
        *,
        races: list[Race],
        race_count: int,
        uninitialized: list[UninitializedUse],
        uninitialized_count: int,
        uninitialized_reads: int,
        benign_races: int = 0,
        benign_at: list[tuple] = (),
        sync_errors: list[SyncIssue],
        warnings: list[str],
        float64_ops: list[Float64Op] | None = None,
        shared_bytes: int,
        dynamic_shared_bytes: int,
        local_bytes: int,
        complete: bool = True,
    ):
        self.name, self.grid, self.block = name, grid, block
        self.traces = traces
        # (accesses, 6): tid, trace position, root id, position, kind (0 r, 1 w, 2 atomic), epoch
        self._log = log
        self._roots = roots
        self._loops, self._header = loops, header
        self.races, self.race_count = races, race_count
        # conflicts whose writes stored the value already there (racecheck: warning)
        self.benign_races = benign_races
        self.benign_at = list(benign_at)  # (array, index) of the first of them, for pictures
        self.uninitialized, self.uninitialized_count = uninitialized, uninitialized_count
        # reads of never-written elements (used or not)
        self.uninitialized_reads = uninitialized_reads
        self.sync_errors = sync_errors
        self.warnings = warnings
        # lines making float64 values from float32 values
        self.float64_ops = list(float64_ops or ())
        self.shared_bytes = shared_bytes  # static shared memory per block, bytes
        # the launch's dynamic shared memory, bytes
        self.dynamic_shared_bytes = dynamic_shared_bytes
        self.local_bytes = local_bytes  # cuda.local.array bytes per thread (the largest thread)
        self.complete = complete  # False for the partial report attached to a KernelError

    # -- shape of the launch -----------------------------------------------------------------------
    @property
    def threads_per_block(self) -> int:
        return self.block.x * self.block.y * self.block.z

    @property
    def n_threads(self) -> int:
        return len(self.traces)

    @property
    def n_blocks(self) -> int:
        return self.grid.x * self.grid.y * self.grid.z

    @cached_property
    def arrays(self) -> dict[str, tuple[int, ...]]:
        """Array name -> shape, for global (argument) and shared arrays, in the order the kernel met
        them."""
        return {r.name: r.shape for r in self._roots if r.space in SPACES}

    @cached_property
    def itemsize(self) -> dict[str, int]:
        return {r.name: r.unit for r in self._roots if r.space in SPACES}

    @cached_property
    def spaces(self) -> dict[str, str]:
        return {r.name: r.space for r in self._roots if r.space in SPACES}

    # -- traffic -----------------------------------------------------------------------------------
    @cached_property
    def counts(self) -> np.ndarray:
        """(threads, 5): global reads, global writes, shared reads, shared writes, atomics."""
        out = np.zeros((self.n_threads, 5), dtype=np.int64)
        if not len(self._log):
            return out
        tid, rid, kind = self._log[:, 0], self._log[:, 2], self._log[:, 4]
        shared = np.array([r.space == "shared" for r in self._roots], dtype=bool)[rid]
        write = (kind == 1) | (kind == 3)
        for col, mask in (
            (0, ~shared & (kind == 0)),
            (1, ~shared & write),
            (2, shared & (kind == 0)),
            (3, shared & write),
            (4, kind == 2),
        ):
            out[:, col] = np.bincount(tid[mask], minlength=self.n_threads)
        return out

    def per_thread(self, space: str = "global") -> dict[str, float]:
        """Mean and max reads and writes per thread of ``space`` ('global' or 'shared')."""
        r, w = self.counts[:, _COL[space, "r"]], self.counts[:, _COL[space, "w"]]
        return {"reads": float(r.mean()), "writes": float(w.mean()), "max_reads": int(r.max()),
                "max_writes": int(w.max())}

    def total(self, space: str, kind: str) -> int:
        return int(self.counts[:, _COL[space, kind]].sum())

    @property
    def atomics(self) -> int:
        return int(self.counts[:, 4].sum())

    def atomic_updates(self, array: str) -> int:
        """Atomic updates of ``array`` by the whole launch (0 for an array the kernel never met)."""
        return int(self._select(array, "a").sum()) if array in self.arrays else 0

    # -- warps -------------------------------------------------------------------------------------
    @cached_property
    def _steps(self) -> tuple[list[WarpStats], np.ndarray, np.ndarray]:
        tpb, traces = self.threads_per_block, self.traces
        warps: list[WarpStats] = []
        maps: list[np.ndarray | None] = [None] * self.n_threads
        base = 0
        for b in range(self.n_threads // tpb):
            for warp_start in range(0, tpb, WARP_SIZE):
                tids = range(b * tpb + warp_start, b * tpb + min(warp_start + WARP_SIZE, tpb))
                groups: dict[tuple, list[int]] = {}
                for t in tids:
                    groups.setdefault(tuple(traces[t]), []).append(t)
                if len(groups) == 1:
                    (trace, lanes), = groups.items()
                    steps, active, divergent, branches = len(trace), len(trace) * len(lanes), 0, 0
                    narrow = steps if len(lanes) <= 2 else 0
                    m = np.arange(base, base + steps, dtype=np.int64)
                    for t in lanes:
                        maps[t] = m
                else:
                    steps, active, divergent, branches, narrow, posmaps = self._merge(
                        list(groups), [len(v) for v in groups.values()], base)
                    for posmap, lanes in zip(posmaps, groups.values()):
                        for t in lanes:
                            maps[t] = posmap
                warps.append(
                    WarpStats(
                        b,
                        warp_start // WARP_SIZE,
                        len(tids),
                        steps,
                        active,
                        divergent,
                        branches,
                        narrow,
                    )
                )
                base += steps
        offsets = np.zeros(self.n_threads + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(m) for m in maps])
        stepmap = np.concatenate(maps) if maps else np.zeros(0, np.int64)
        return warps, stepmap, offsets

    def _merge(self, traces: list[tuple], mult: list[int], base: int):
        keys = [event_keys(list(t), self._loops, self._header) for t in traces]
        pos = [0] * len(traces)
        posmaps = [np.empty(len(t), dtype=np.int64) for t in traces]
        steps = active = divergent = branches = narrow = 0
        # the lanes (trace groups) of the last divergent step; None after a full one
        previous: tuple | None = None
        while True:
            live = [g for g in range(len(traces)) if pos[g] < len(keys[g])]
            if not live:
                break
            k = min(keys[g][pos[g]] for g in live)
            here = [g for g in live if keys[g][pos[g]] == k]
            n_here, n_live = sum(mult[g] for g in here), sum(mult[g] for g in live)
            for g in here:
                posmaps[g][pos[g]] = base + steps
                pos[g] += 1
            active += n_here
            narrow += n_here <= 2
            divergent += n_here < n_live
            # a branch splits the warp once however many statements its body has (a GPU issues the
            # body's instructions under one mask): a new divergent branch starts where the set of
            # running lanes changes
            branches += n_here < n_live and tuple(here) != previous
            previous = tuple(here) if n_here < n_live else None
            steps += 1
        return steps, active, divergent, branches, narrow, posmaps

    @property
    def warps(self) -> list[WarpStats]:
        return self._steps[0]

    @property
    def busiest_warp(self) -> tuple[int, int, int, int, int]:
        """(block, warp in block, issued steps, active lanes summed over them, steps run by one or
        two lanes) of the warp that issued the most."""
        w = max(self.warps, key=lambda w: w.steps, default=None)
        return (
            (0, 0, 0, 0, 0)
            if w is None
            else (int(w.block), int(w.warp), int(w.steps), int(w.active), int(w.narrow))
        )

    @property
    def issued_steps(self) -> int:
        return sum(w.steps for w in self.warps)

    @property
    def divergent_branches(self) -> int:
        """Times a warp split: runs of divergent steps executed by the same lanes, each counted
        once, so that a branch costs the same whether its body is one source line or three (as on a
        GPU, where both compile to the same instructions under one mask)."""
        return sum(w.branches for w in self.warps)

    @property
    def divergent_steps(self) -> int:
        """Warp steps issued while some live lanes of the warp sat masked off (a branch split the
        warp)."""
        return sum(w.divergent for w in self.warps)

    @property
    def simt_efficiency(self) -> float:
        steps = self.issued_steps
        return sum(w.active for w in self.warps) / (steps * WARP_SIZE) if steps else 1.0

    @cached_property
    def _access_steps(self) -> np.ndarray:
        """The warp step (global id) each logged access belongs to; -1 - tid where the thread has no
        trace."""
        if not len(self._log):
            return np.zeros(0, np.int64)
        _, stepmap, offsets = self._steps
        tid, pos = self._log[:, 0], self._log[:, 1]
        ok = pos >= 0
        out = -1 - tid
        out[ok] = stepmap[offsets[tid[ok]] + pos[ok]]
        return out

    @cached_property
    def accesses(self) -> list[tuple]:
        """Every logged access: (tid, warp step id, array name, position in the array, 'r' | 'w' |
        'a')."""
        names = [r.name for r in self._roots]
        steps = self._access_steps
        log = self._log
        return [
            (t, s, names[r], f, KIND_CHAR[k])
            for t, s, r, f, k in zip(
                log[:, 0].tolist(),
                steps.tolist(),
                log[:, 2].tolist(),
                log[:, 3].tolist(),
                log[:, 4].tolist(),
            )
        ]

    def _select(self, array: str, kind: str | None) -> np.ndarray:
        rids = [i for i, r in enumerate(self._roots) if r.name == array]
        if not rids:
            raise KeyError(
                f"{self.name} has no array {array!r}; it has {', '.join(self.arrays) or 'none'}"
            )
        mask = np.isin(self._log[:, 2], rids) if len(self._log) else np.zeros(0, bool)
        if kind is not None:
            k = self._log[:, 4]
            mask &= ((k == 1) | (k == 3)) if kind == "w" else (k == KIND_CHAR.index(kind))
        return mask

    def _requests(self, mask: np.ndarray) -> np.ndarray:
        """For the logged accesses ``mask`` selects, the id of the warp-wide *request* (one memory
        instruction) each belongs to: the warp step, and which of its thread's accesses to that
        array in that statement it is (the k-th access of every lane is the same instruction: ``a[i]
        + a[i + 32]`` is two requests, not one)."""
        rows = np.flatnonzero(mask)
        tid, pos = self._log[rows, 0], self._log[rows, 1]
        # the k-th access of (thread, trace position), in the thread's order (the log is
        # chronological)
        group = tid * (int(pos.max(initial=0)) + 2) + (pos + 1)
        order = np.argsort(group, kind="stable")
        g = group[order]
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        rank = np.empty(len(g), np.int64)
        rank[order] = np.arange(len(g)) - np.repeat(starts, np.diff(np.r_[starts, len(g)]))
        steps = self._access_steps[rows]
        key = (steps - steps.min(initial=0)) * (int(rank.max(initial=0)) + 1) + rank
        return np.unique(key, return_inverse=True)[1].reshape(-1)

    def sectors_per_request(self, array: str, kind: str | None = None) -> float:
        """Mean 32-byte sectors one warp-wide access (one memory instruction of the warp) of
        ``array`` touches (1 element/thread coalesced float32: 4; every lane in its own sector: 32).
        ``a[i] + a[i + 32]`` in one statement is two requests of 4 sectors each, as on the GPU."""
        mask = self._select(array, kind)
        if not mask.any():
            return 0.0
        unit = self.itemsize[array]
        everything = self._select(array, None)
        req = self._requests(everything)[mask[everything]]
        sectors = self._log[mask, 3] * unit // SECTOR_BYTES
        pairs = np.unique(np.stack([req, sectors], axis=1), axis=0)
        _, per_req = np.unique(pairs[:, 0], return_counts=True)
        return float(per_req.mean())

    def bank_conflicts(self, array: str, kind: str | None = None) -> float:
        """Mean ways of bank conflict of one warp-wide access (one memory instruction) of shared
        ``array``: 1.0 is conflict-free (a word many lanes read is broadcast once), 32.0 is every
        lane in one bank. Shared memory has 32 banks of 4-byte words (NVIDIA since Maxwell). A
        warp's access is served in phases of 128 bytes of lanes (all 32 lanes for 4-byte elements,
        each half-warp for 8-byte, each quarter-warp for 16-byte): a phase takes as many wavefronts
        as the most distinct words one bank must serve, and ways = wavefronts / phases. So stride-1
        float64 is conflict-free (1.0, two phases of one wavefront), stride-2 float64 is 2-way."""
        if self.spaces.get(array) != "shared":
            raise KeyError(
                f"{array!r} is not a shared array of {self.name} (shared: "
                f"{', '.join(n for n, s in self.spaces.items() if s == 'shared') or 'none'})"
            )
        mask = self._select(array, kind)
        if not mask.any():
            return 0.0
        everything = self._select(array, None)
        req = self._requests(everything)[mask[everything]]
        size = self._elem_bytes(array)
        phase = (
            (self._log[mask, 0] % self.threads_per_block)
            % WARP_SIZE
            // max(1, WARP_SIZE * 4 // max(size, 4))
        )
        # first 4-byte word of each access (block's root)
        first = self._log[mask, 3] * self.itemsize[array] // 4
        nwords = max(1, (size + 3) // 4)
        words = (first[:, None] + np.arange(nwords)).reshape(-1)
        span = int(words.max()) + 1
        # (request, phase); at most 8 phases (32-byte elements)
        rp = np.repeat(req * 8 + phase, nwords)
        # each word a phase needs, once (a broadcast is one word)
        distinct = np.unique(rp * span + words)
        rp_d, bank = distinct // span, (distinct % span) % 32
        per_bank_keys, per_bank = np.unique(rp_d * 32 + bank, return_counts=True)
        rp_b = per_bank_keys // 32
        starts = np.flatnonzero(np.r_[True, rp_b[1:] != rp_b[:-1]])
        # per (request, phase): the busiest bank's words
        wavefronts = np.maximum.reduceat(per_bank, starts)
        r_of = rp_b[starts] // 8
        run_starts = np.flatnonzero(np.r_[True, r_of[1:] != r_of[:-1]])
        # wavefronts / phases
        ways = np.add.reduceat(wavefronts, run_starts) / np.diff(np.r_[run_starts, len(r_of)])
        return float(ways.mean())

    def _elem_bytes(self, array: str) -> int:
        return next(r.dtype.itemsize for r in self._roots if r.name == array)

    def worst_conflict(self, array: str, kind: str) -> tuple[int, int, list[int]] | None:
        """The warp-wide access (``kind`` 'r' or 'w') of shared ``array`` whose busiest bank serves
        the most distinct words: (those words, its block, the flat indices of the elements in that
        bank), or None when no access of it has a conflict. Elements of 4 bytes or fewer (one
        phase per warp access); the picture marks what :meth:`bank_conflicts` averages."""
        mask = self._select(array, kind)
        if not mask.any() or self._elem_bytes(array) > 4:
            return None
        everything = self._select(array, None)
        req = self._requests(everything)[mask[everything]]
        flat, tid = self._log[mask, 3], self._log[mask, 0]
        words = flat * self.itemsize[array] // 4  # the 4-byte word each access reads
        best = None
        order = np.argsort(req, kind="stable")
        bounds = np.flatnonzero(np.r_[True, req[order][1:] != req[order][:-1], True])
        for a, b in zip(bounds[:-1], bounds[1:]):  # one warp-wide request at a time
            rows = order[a:b]
            distinct = np.unique(words[rows])
            banks, counts = np.unique(distinct % 32, return_counts=True)
            if best is None or counts.max() > best[0]:
                bank = banks[counts.argmax()]
                elems = np.unique(flat[rows][words[rows] % 32 == bank])
                block = int(tid[rows][0]) // self.threads_per_block
                best = (int(counts.max()), block, [int(e) for e in elems])
        return best if best is not None and best[0] > 1 else None

    def access_map(self, array: str, kind: str = "w", by: str = "block") -> np.ndarray:
        """An array of ``array``'s shape: which block/warp/thread first accessed each element (-1:
        none)."""
        shape = self.arrays[array]
        out = np.full(int(np.prod(shape)), -1, dtype=np.int64)
        mask = self._select(array, kind)
        if mask.any():
            flat, tid = self._log[mask, 3], self._log[mask, 0]
            first_flat, first = np.unique(flat, return_index=True)
            t = tid[first]
            tpb = self.threads_per_block
            val = {
                "block": t // tpb,
                "warp": (t // tpb) * 10_000 + (t % tpb) // WARP_SIZE,
                "thread": t,
            }[by]
            keep = first_flat < out.size
            out[first_flat[keep]] = val[keep]
        if by == "warp":  # renumber warps 0, 1, 2, ... in launch order
            ids = {v: i for i, v in enumerate(sorted(set(out[out >= 0].tolist())))}
            out = np.array([ids.get(v, -1) for v in out.tolist()], dtype=np.int64)
        return out.reshape(shape)

    def summary(self) -> str:
        g, s = self.per_thread("global"), self.per_thread("shared")
        lines = [
            (
                f"kernel {self.name}: grid {tuple(self.grid)} × block {tuple(self.block)} ="
                f" {self.n_threads} threads, {len(self.warps)} warps"
            ),
            (
                f"  global memory per thread: {g['reads']:.2f} reads, {g['writes']:.2f} writes (max"
                f" {g['max_reads']}, {g['max_writes']})"
            ),
            f"  shared memory per thread: {s['reads']:.2f} reads, {s['writes']:.2f} writes"
            + (
                f"; {self.shared_bytes + self.dynamic_shared_bytes:,} bytes per block"
                if self.shared_bytes or self.dynamic_shared_bytes
                else ""
            ),
            (
                f"  SIMT efficiency: {self.simt_efficiency:.1%} ({self.issued_steps} warp steps"
                f" issued, {self.divergent_steps} of them divergent)"
            ),
            f"  races: {self.race_count}"
            + (f" — first: {self.races[0]}" if self.races else "")
            + (
                f" ({self.benign_races} benign: a write of the value already there)"
                if self.benign_races
                else ""
            ),
        ]
        if self.sync_errors:
            lines.append(
                f"  synchronisation errors: {len(self.sync_errors)} — first: {self.sync_errors[0]}"
            )
        if self.uninitialized_count or self.uninitialized_reads:
            lines.append(
                f"  uninitialised memory: {self.uninitialized_reads} reads,"
                f" {self.uninitialized_count} uses"
                + (
                    f" — first: {self.uninitialized[0]}"
                    if self.uninitialized
                    else " (the values read were never used)"
                )
            )
        for w in self.warnings[:3]:
            lines.append(f"  warning: {w}")
        for op in self.float64_ops[:3]:
            lines.append(f"  float64: {op}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"<KernelReport {self.name} grid {tuple(self.grid)} block {tuple(self.block)}>"

    def elements_accessed(self, array: str, kind: str | None = None) -> tuple[int, int]:
        """(how many distinct elements of ``array`` were accessed — ``kind`` "r"/"w" plain
        loads/stores, None either —, the flat index of the lowest of them, -1 when none)."""
        touched = np.flatnonzero(self.access_map(array, kind).ravel() >= 0)
        return int(touched.size), int(touched[0]) if touched.size else -1

    def array_traffic(self, array: str) -> tuple[int, int, int, int]:
        """Plain loads and stores of ``array`` by the whole launch: (distinct elements read,
        distinct elements written, reads, writes); atomics are not counted (``atomic_updates``)."""
        out = []
        for kind in ("r", "w"):
            mask = self._select(array, kind)
            out.append((int(np.unique(self._log[mask, 3]).size), int(mask.sum())))
        (read, reads), (written, writes) = out
        return read, written, reads, writes

    def writers(self, array: str) -> tuple[int, int]:
        """(how many threads stored to ``array``, the most distinct elements one thread stored): one
        thread per element is (elements, 1)."""
        mask = self._select(array, "w")
        if not mask.any():
            return 0, 0
        pairs = np.unique(self._log[mask][:, [0, 3]], axis=0)  # (thread, element), each once
        _, per_thread = np.unique(pairs[:, 0], return_counts=True)
        return int(per_thread.size), int(per_thread.max())

    def to_data(self, examples: int = 3) -> ReportData:
        """What checks read of this launch, as plain data (:class:`ReportData`): it travels from the
        process that ran the student's kernel to the grader, which judges it without the executor's
        log."""
        kinds = (None, "r", "w")
        arrays = dict(self.arrays)
        spaces = dict(self.spaces)
        return ReportData(
            name=self.name,
            grid=tuple(self.grid),
            block=tuple(self.block),
            n_threads=self.n_threads,
            n_blocks=self.n_blocks,
            threads_per_block=self.threads_per_block,
            counts=self.counts.copy(),
            shared_bytes=int(self.shared_bytes),
            dynamic_shared_bytes=int(self.dynamic_shared_bytes),
            local_bytes=int(self.local_bytes),
            simt_efficiency=float(self.simt_efficiency),
            issued_steps=int(self.issued_steps),
            divergent_steps=int(self.divergent_steps),
            divergent_branches=int(self.divergent_branches),
            arrays=arrays,
            spaces=spaces,
            itemsize=dict(self.itemsize),
            sectors={a: tuple(self.sectors_per_request(a, k) for k in kinds) for a in arrays},
            conflicts={
                a: tuple(self.bank_conflicts(a, k) for k in kinds)
                for a in arrays
                if spaces[a] == "shared"
            },
            atomic_counts={a: self.atomic_updates(a) for a in arrays},
            races=tuple(self.races[:examples]),
            race_count=int(self.race_count),
            benign_races=int(self.benign_races),
            sync_errors=tuple(self.sync_errors[:examples]),
            sync_error_count=len(self.sync_errors),
            uninitialized=tuple(str(u) for u in self.uninitialized[:examples]),
            uninitialized_count=int(self.uninitialized_count),
            uninitialized_reads=int(self.uninitialized_reads),
            warnings=tuple(str(w) for w in self.warnings),
            complete=bool(self.complete),
            touched={a: tuple(self.elements_accessed(a, k) for k in kinds) for a in arrays},
            traffic={a: self.array_traffic(a) for a in arrays},
            writer_counts={a: self.writers(a) for a in arrays},
            float64_ops=tuple(str(o) for o in self.float64_ops),
            busiest_warp=self.busiest_warp,
        )


_KINDS = {None: 0, "r": 1, "w": 2}


@dataclass(frozen=True)
class ReportData(_Findings):
    """A :class:`KernelReport` as plain data (:meth:`KernelReport.to_data`): counts, warp
    statistics, coalescing and bank conflicts per array (any access, reads, writes), atomics per
    array, and the findings (counts with up to three examples each). It answers the questions checks
    ask with the report's own method names (``per_thread``, ``total``, ``sectors_per_request``,
    ``bank_conflicts``, ``atomic_updates``, ``problems``), so a requirement written against the
    report reads the data the same way; the per-access log stays where the kernel ran (what needs
    it, such as the access diagrams, runs there)."""

    name: str
    grid: tuple
    block: tuple
    n_threads: int
    n_blocks: int
    threads_per_block: int
    # (threads, 5): global reads, global writes, shared reads, shared writes, atomics
    counts: np.ndarray
    shared_bytes: int
    dynamic_shared_bytes: int
    local_bytes: int
    simt_efficiency: float
    issued_steps: int
    divergent_steps: int
    divergent_branches: int
    arrays: dict  # name -> shape (global and shared arrays)
    spaces: dict  # name -> "global" | "shared"
    itemsize: dict  # name -> bytes per tracked position
    sectors: dict  # name -> (any access, reads, writes): mean 32-byte sectors per warp-wide request
    conflicts: dict  # shared name -> (any, reads, writes): mean ways of bank conflict
    atomic_counts: dict  # name -> atomic updates by the launch
    races: tuple  # up to three Race examples
    race_count: int
    benign_races: int
    sync_errors: tuple  # up to three SyncIssue examples
    sync_error_count: int
    uninitialized: tuple  # up to three, as text
    uninitialized_count: int
    uninitialized_reads: int
    warnings: tuple
    complete: bool = True
    # name -> per kind (any, reads, writes): (elements, lowest flat index)
    touched: dict = field(default_factory=dict)
    # name -> (distinct read, distinct written, reads, writes)
    traffic: dict = field(default_factory=dict)
    # str(Float64Op): kernel lines making float64 values from float32 operands
    float64_ops: tuple = ()
    # name -> (threads that stored to it, most elements per thread)
    writer_counts: dict = field(default_factory=dict)
    # (block, warp in block, issued steps, active lanes summed, steps by one or two lanes)
    busiest_warp: tuple = (0, 0, 0, 0, 0)

    def array_traffic(self, array: str) -> tuple[int, int, int, int]:
        self._known(array)
        return tuple(int(v) for v in self.traffic[array])

    def writers(self, array: str) -> tuple[int, int]:
        self._known(array)
        return tuple(int(v) for v in self.writer_counts[array])

    def elements_accessed(self, array: str, kind: str | None = None) -> tuple[int, int]:
        self._known(array)
        return tuple(self.touched[array][_KINDS[kind]])

    def per_thread(self, space: str = "global") -> dict[str, float]:
        c = np.asarray(self.counts)
        r, w = c[:, _COL[space, "r"]], c[:, _COL[space, "w"]]
        return {"reads": float(r.mean()), "writes": float(w.mean()), "max_reads": int(r.max()),
                "max_writes": int(w.max())}

    def total(self, space: str, kind: str) -> int:
        return int(np.asarray(self.counts)[:, _COL[space, kind]].sum())

    @property
    def atomics(self) -> int:
        return int(np.asarray(self.counts)[:, 4].sum())

    def atomic_updates(self, array: str) -> int:
        return int(self.atomic_counts.get(array, 0))

    def _known(self, array: str) -> None:
        if array not in self.arrays:
            raise KeyError(
                f"{self.name} has no array {array!r}; it has {', '.join(self.arrays) or 'none'}"
            )

    def sectors_per_request(self, array: str, kind: str | None = None) -> float:
        self._known(array)
        return float(self.sectors[array][_KINDS[kind]])

    def bank_conflicts(self, array: str, kind: str | None = None) -> float:
        if self.spaces.get(array) != "shared":
            raise KeyError(f"{array!r} is not a shared array of {self.name}")
        return float(self.conflicts[array][_KINDS[kind]])



def group_ranges(ids: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0–2, 5, 7–8'."""
    ids = sorted(ids)
    out, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}–{prev}" if prev != start else f"{start}")
            start = prev = i
    if start is not None:
        out.append(f"{start}–{prev}" if prev != start else f"{start}")
    return ", ".join(out)


UNINIT_HINT = (
    "on a GPU shared and local arrays (and cuda.device_array) start with whatever was there: write"
    " every element before any thread reads it, with a cuda.syncthreads() between the writes and"
    " the reads"
)
"""What to do about a use of uninitialised memory (the grader's hint and the launch's message)."""


def race_hint(race: Race) -> str:
    """What usually fixes a race of this kind, in one sentence."""
    if race.read_modify_write:  # counts[b] += 1 in many threads: a barrier orders nothing there
        return (
            "one statement reads and writes the element in many threads (a read-modify-write such"
            " as `counts[b] += 1`): on a GPU their updates are lost, and no barrier helps; use"
            " cuda.atomic.add (with many threads on few counters, count per block in shared memory"
            " first, then add each block's counts atomically)"
        )
    if not race.same_block:
        return (
            "each element should be written by one thread only (or combined with cuda.atomic.*):"
            " blocks run in any order and never wait for one another"
        )
    if race.next_iteration:
        return (
            "a cuda.syncthreads() at the end of the loop body, after the last read of the shared"
            " array: no thread then starts the next iteration's writes before every thread of the"
            " block has finished this iteration's reads"
        )
    if race.space == "shared":
        same_warp = race.first[1] // 32 == race.second[1] // 32
        return (
            "a cuda.syncthreads() between the write and the read (or before the next overwrite)"
            " makes every thread of the block finish one phase before any thread starts the next"
            + (
                "; both threads are in one warp, so where only that warp runs (an `if tid < 32:`"
                " last warp) cuda.syncwarp() is the barrier — a syncthreads there would be reached"
                " by part of the block only"
                if same_warp
                else ""
            )
        )
    return (
        "threads of one block touch the same global element in the same phase: separate the"
        " accesses with cuda.syncthreads(), or give each thread its own element"
    )
