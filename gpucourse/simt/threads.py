"""The CUDA threads and blocks of a launch, as the scheduler keeps them."""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from .dims import WARP_SIZE, Dim3, unlinear
from .instrument import where

if TYPE_CHECKING:
    from .launch import Launch
    from .memory import Root, TracedArray

READY, DONE, BARRIER, GRID, WARP, PREEMPT, ERROR = (
    "ready",
    "done",
    "barrier",
    "grid",
    "warp",
    "preempt",
    "error",
)
CHECK_EVERY = 64  # loop iterations between a thread's budget checks (and chances for others to run)


class SimThread:
    """One CUDA thread: its indices, its statement trace, its place in the memory model, its
    greenlet."""

    __slots__ = (
        "launch",
        "tid",
        "log_tid_bits",
        "log_epoch_bits",
        "lt",
        "lane",
        "warp",
        "blk",
        "tidx",
        "trace",
        "epid",
        "phase",
        "gphase",
        "wc",
        "vc",
        "knows",
        "fenced",
        "iters",
        "snap",
        "stalled",
        "state",
        "wait",
        "result",
        "exc",
        "glet",
        "locals_",
        "phase_start",
        "checked",
    )

    def __init__(self, launch: "Launch", blk: "SimBlock", local_tid: int):
        self.launch, self.blk, self.lt = launch, blk, local_tid
        self.tid = blk.id * launch.tpb + local_tid
        self.log_tid_bits = self.tid << 32  # the thread's bits of an access-log word
        self.lane, self.warp = local_tid % WARP_SIZE, local_tid // WARP_SIZE
        self.tidx = unlinear(local_tid, launch.block)
        self.trace: list[int] = launch.traces[self.tid]
        self.phase = self.gphase = 0
        self.epid = blk.epid  # id of (block, barrier phase, grid phase): the epoch of its accesses
        self.log_epoch_bits = blk.epid << 2  # the epoch's bits of an access-log word
        self.wc = 0  # syncwarps passed
        # per lane of the warp: latest syncwarp count known (ordering)
        self.vc: list[int] | None = None
        # tid -> log row up to which fence + atomic published its accesses
        self.knows: dict[int, int] | None = None
        self.fenced = -1
        self.iters, self.snap, self.stalled = 0, None, False
        self.state, self.wait, self.result, self.exc = READY, None, None, None
        self.glet: Any = None  # its greenlet
        self.locals_: dict = {}
        self.phase_start = 0  # trace position where the current barrier phase began
        self.checked = False  # an exited thread, already checked for skipping a barrier

    def loop(self, line: int) -> None:
        """Kernel loop-header hook: one statement of the trace, one iteration of the budget."""
        self.trace.append(line)
        n = self.iters = self.iters + 1
        if not n % CHECK_EVERY:
            self.launch.checkpoint(self, line, sys._getframe(1))

    def where(self) -> str:
        return f"thread {self.lt} of block {self.blk.id}"


class SimBlock:
    __slots__ = (
        "id",
        "bidx",
        "threads",
        "warps",
        "runnable",
        "shared",
        "dyn",
        "dyn_data",
        "pending_warp",
        "warp_problem",
        "epid",
    )

    def __init__(self, launch: "Launch", bid: int, bidx: Dim3):
        self.id, self.bidx = bid, bidx
        self.shared: dict[Any, TracedArray] = {}
        self.dyn: Root | None = None
        self.dyn_data: np.ndarray | None = None
        self.pending_warp = 0
        self.warp_problem: str | None = None
        self.epid = launch.new_epoch(bid, 0, 0)
        self.threads = [SimThread(launch, self, local_tid) for local_tid in range(launch.tpb)]
        self.warps = [self.threads[w:w + WARP_SIZE] for w in range(0, launch.tpb, WARP_SIZE)]
        self.runnable: deque[SimThread] = deque(self.threads)


def snapshot_value(v: Any) -> Any:
    if isinstance(v, (int, float, bool, str, np.generic)) or v is None:
        return v if v == v else "nan"
    return id(v)


def at(site: tuple) -> str:
    """' at line 7 of the cell (`...`)' for a call site (code, line, instruction)."""
    return where(site[0], site[1])
