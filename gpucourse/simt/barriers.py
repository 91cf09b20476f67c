"""Block barriers and grid synchronisation: when they release, and what is barrier divergence.

A block barrier releases when every thread of the block that has not exited waits at one (since
Volta a barrier waits for all *non-exited* threads: an early ``return`` before it is fine). A thread
that went *past* the barrier's point in the program without calling it (a ``syncthreads()`` inside
an ``if`` only some threads take), or threads waiting at different ``syncthreads()`` calls, are
**barrier divergence** — undefined in CUDA (a GPU may hang or release the waiting threads early),
reported as compute-sanitizer's synccheck reports it; the launch goes on as a GPU that releases the
barrier would. ``grid.sync()`` is the same for every thread of the grid.
"""

from __future__ import annotations

from typing import Any

from .dims import H100_SMS, MAX_THREADS_PER_SM
from .report import event_keys, group_ranges
from .threads import BARRIER, DONE, GRID, READY, SimBlock, SimThread, at


class Barriers:
    """The barrier half of :class:`~gpucourse.simt.launch.Launch` (a mixin: it uses the launch's
    state)."""

    def barrier(self, kind: str, pred: Any, site: tuple) -> Any:
        t = self.cur
        if t is None or self.sched is None:
            raise RuntimeError(f"cuda.{kind}() outside a kernel")
        t.state, t.wait = BARRIER, (kind, pred, site)
        self.sched.switch()
        return t.result

    def grid_sync(self, site: tuple) -> None:
        t = self.cur
        t.state, t.wait = GRID, ("grid", None, site)
        if self.n_blocks > H100_SMS * max(1, MAX_THREADS_PER_SM // self.tpb):
            self.warn(
                ("coop",),
                f"grid.sync() in a grid of {self.n_blocks:,} blocks of {self.tpb} threads: a"
                " cooperative launch must fit on the GPU at once (an H100 holds at most"
                f" {H100_SMS * max(1, MAX_THREADS_PER_SM // self.tpb):,} such blocks); numba-cuda"
                " would refuse this launch",
            )
        self.sched.switch()

    def _skipped(
        self, waiting: SimThread, others: list[SimThread], mark: bool = True
    ) -> list[tuple[SimThread, int]]:
        """The exited threads among ``others`` that ran *past* the point where ``waiting`` waits,
        without stopping there: (thread, the first line past it). Threads that exited before
        reaching that point (an early ``return``) are not counted: since Volta a barrier waits for
        all *non-exited* threads."""
        loops, header = self.kernel.loops, self.kernel.header
        here = event_keys(waiting.trace, loops, header)[-1] if waiting.trace else None
        out = []
        for u in others:
            if here is None or (mark and u.checked):
                continue
            if mark:
                u.checked = True
            keys = event_keys(u.trace, loops, header)
            past = next((k for k in keys[u.phase_start:] if k > here), None)
            if past is not None:
                out.append((u, past[-1][0]))
        return out

    def _release_barrier(self, blk: SimBlock, live: list[SimThread]) -> None:
        exited = [t for t in blk.threads if t.state is DONE and not t.checked]
        sites: dict[tuple, list[int]] = {}
        for t in live:
            sites.setdefault(t.wait[2], []).append(t.lt)
        first_site = next(iter(sites))
        kind = live[0].wait[0]
        skipped = self._skipped(live[0], exited) if exited else []
        if skipped:
            who = group_ranges([u.lt for u, _ in skipped])
            self.sync_issue(
                ("skip", first_site),
                "barrier divergence",
                f"threads {who} of block {blk.id} went past the cuda.{kind}(){at(first_site)}"
                f" without calling it (thread {skipped[0][0].lt} ran on to line {skipped[0][1]})"
                f" while threads {group_ranges([t.lt for t in live])} wait there. A barrier inside"
                " an `if` that only some threads of the block take is undefined in CUDA (a GPU may"
                " hang, or release the waiting threads early): call syncthreads() where every"
                " thread of the block reaches it",
            )
        if len(sites) > 1 or len({t.wait[0] for t in live}) > 1:
            desc = "; ".join(f"threads {group_ranges(v)}{at(s)}" for s, v in sites.items())
            self.sync_issue(
                ("sites", tuple(sites)),
                "barrier divergence",
                f"the threads of block {blk.id} wait at different barriers ({desc}): each"
                " syncthreads() call must be reached by all threads of the block (CUDA leaves this"
                " undefined)",
            )
        result = None
        if kind != "syncthreads":
            preds = []
            for t in live:
                self.cur = t
                preds.append(bool(t.wait[1]))
            result = {"syncthreads_count": sum(preds), "syncthreads_and": int(all(preds)),
                      "syncthreads_or": int(any(preds))}[kind]
        merged = self._merge_knows(live)
        phase = live[0].phase + 1
        blk.epid = self.new_epoch(blk.id, phase, live[0].gphase)
        for t in live:
            t.phase = phase
            t.epid, t.log_epoch_bits = blk.epid, blk.epid << 2
            t.phase_start = len(t.trace)
            if merged is not None:
                self._set_knows(t, merged)
            t.result, t.state = result, READY
            blk.runnable.append(t)

    def _release_grid(self, parked: list[SimBlock]) -> None:
        live = [t for blk in parked for t in blk.threads if t.state is GRID]
        exited = [
            t
            for blk in self.blocks_started
            for t in blk.threads
            if t.state is DONE and not t.checked
        ]
        skipped = self._skipped(live[0], exited) if exited and live else []
        if skipped:
            blocks = sorted({u.blk.id for u, _ in skipped})
            self.sync_issue(
                ("grid-skip",),
                "barrier divergence",
                f"{len(skipped):,} threads (in blocks {group_ranges(blocks)}) went past"
                f" grid.sync(){at(live[0].wait[2])} without calling it (thread {skipped[0][0].lt}"
                f" of block {skipped[0][0].blk.id} ran on to line {skipped[0][1]}): every thread of"
                " the grid that has not exited must reach it",
            )
        merged = self._merge_knows(live)
        for blk in parked:
            group = [t for t in blk.threads if t.state is GRID]
            if not group:
                continue
            blk.epid = self.new_epoch(blk.id, group[0].phase + 1, group[0].gphase + 1)
            for t in group:
                t.phase += 1
                t.gphase += 1
                t.epid, t.log_epoch_bits = blk.epid, blk.epid << 2
                t.phase_start = len(t.trace)
                if merged is not None:
                    self._set_knows(t, merged)
                t.state = READY
                blk.runnable.append(t)

    @staticmethod
    def _merge_knows(threads: list[SimThread]) -> dict | None:
        known = [t.knows for t in threads if t.knows]
        if not known:
            return None
        merged: dict[int, int] = {}
        for k in known:
            for tid, seq in k.items():
                if seq > merged.get(tid, -1):
                    merged[tid] = seq
        return merged
