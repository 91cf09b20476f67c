"""Warp operations: shuffles, votes, matches, ``syncwarp`` and ``activemask``, with numba-cuda's
semantics.

A warp operation completes when every lane its mask names has arrived at the same operation with the
same mask, or has exited (the PTX ISA's rule for ``*.sync`` instructions since sm_70). A lane named
in the mask that waits elsewhere is a deadlock (a KernelError naming both lanes); a lane that went
past the operation without calling it is a ``warp mask`` error; reading an inactive lane's value in
a shuffle gives an undefined (tracked) value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dims import WARP_SIZE
from .errors import KernelError, NotModelled
from .numbatypes import I32
from .threads import DONE, READY, WARP, SimBlock, SimThread, at
from .values import Origin, Uninit


class WarpOps:
    """The warp-operation half of :class:`~gpucourse.simt.launch.Launch` (a mixin: it uses the
    launch's state)."""

    def warp_op(self, kind: str, mask: int, payload: Any, site: tuple) -> Any:
        t = self.cur
        if t is None or self.sched is None:
            raise RuntimeError(f"cuda.{kind}() outside a kernel")
        t.state, t.wait = WARP, (kind, mask, payload, site)
        t.blk.pending_warp += 1
        self.sched.switch()
        return t.result

    def _resolve_warp(self, blk: SimBlock) -> bool:
        progressed = False
        problem = None
        for warp in blk.warps:
            pend = [t for t in warp if t.state is WARP]
            if not pend:
                continue
            at_activemask = [t for t in pend if t.wait[0] == "activemask"]
            # the lanes at the same activemask() call are the ones active together
            if at_activemask:
                by_site: dict[tuple, list[SimThread]] = {}
                for t in at_activemask:
                    by_site.setdefault(t.wait[3], []).append(t)
                for group in by_site.values():
                    m = sum(1 << u.lane for u in group)
                    self._complete(blk, group, [m] * len(group))
                progressed = True
            done: set[int] = set()
            for t in pend:
                kind, mask, _, site = t.wait
                if kind == "activemask" or t.lane in done or t.state is not WARP:
                    continue
                if not (mask >> t.lane) & 1:
                    raise KernelError(
                        f"{t.where()} (lane {t.lane}) calls cuda.{kind}(){at(site)} with mask"
                        f" {mask:#010x}, which does not include its own lane: the calling lane must"
                        " be in the mask (CUDA leaves this undefined)",
                        thread=(blk.id, t.lt),
                    )
                parts, bad = [], None
                gone = [u for u in warp if (mask >> u.lane) & 1 and u.state is DONE
                        and (u.tid, site) not in self._warp_checked]
                if gone:
                    self._warp_checked.update((u.tid, site) for u in gone)
                    for u, line in self._skipped(t, gone, mark=False):
                        self.sync_issue(
                            ("warp-skip", site, u.lane),
                            "warp mask",
                            f"lane {u.lane} ({u.where()}) is named in the mask {mask:#010x} of the"
                            f" cuda.{kind}(){at(site)} that lane {t.lane} calls, but went past it"
                            f" without calling it (on to line {line}): every lane a mask names must"
                            " call the same warp operation (or have exited); synccheck reports"
                            " this",
                        )
                for u in warp:
                    if not (mask >> u.lane) & 1 or u.state is DONE:
                        continue
                    if u.state is WARP and u.wait[0] == kind and u.wait[1] == mask:
                        parts.append(u)
                    else:
                        bad = u
                        break
                if bad is not None:
                    if problem is None:
                        if bad.state is WARP and bad.wait[0] == kind:
                            why = f"calls it with a different mask, {bad.wait[1]:#010x}"
                        else:
                            why = f"does not call it: it waits {self._waitingat(bad)}"
                        problem = (
                            f"{t.where()} (lane {t.lane}) waits in cuda.{kind}(){at(site)} with"
                            f" mask {mask:#010x}, but lane {bad.lane} ({bad.where()}), named in the"
                            f" mask, {why}. Every non-exited lane a mask names must call the same"
                            " warp operation with the same mask (compute-sanitizer's synccheck"
                            " reports this; a GPU may hang)"
                        )
                    continue
                self._complete(blk, parts, self._warp_results(kind, mask, parts, warp))
                done.update(u.lane for u in parts)
                progressed = True
        blk.warp_problem = None if progressed else problem
        return progressed

    def _complete(self, blk: SimBlock, lanes: list[SimThread], results: list[Any]) -> None:
        for u, r in zip(lanes, results):
            u.result, u.state = r, READY
            blk.pending_warp -= 1
            blk.runnable.append(u)

    def _warp_results(
        self, kind: str, mask: int, parts: list[SimThread], warp: list[SimThread]
    ) -> list[Any]:
        if kind == "syncwarp":
            self._syncwarp_order(parts)
            return [None] * len(parts)
        if kind.startswith("shfl"):
            return self._shuffle(kind, mask, parts)
        preds = []
        for u in parts:
            self.cur = u
            preds.append(u.wait[2])
        if kind in ("all_sync", "any_sync", "eq_sync", "ballot_sync"):
            bits = [bool(p) for p in preds]
            if kind == "all_sync":
                r = all(bits)
            elif kind == "any_sync":
                r = any(bits)
            elif kind == "eq_sync":
                r = all(bits) or not any(bits)
            # numba-cuda's ballot_sync returns an int32 (signed: lane 31 set makes it negative)
            else:
                r = I32(
                    np.uint32(sum(1 << u.lane for u, b in zip(parts, bits) if b)).view(np.int32)
                )
            return [r] * len(parts)
        if kind in ("match_any_sync", "match_all_sync"):
            keys = [_match_key(p) for p in preds]
            out = []
            for u, k in zip(parts, keys):
                same = sum(1 << v.lane for v, key in zip(parts, keys) if key == k)
                out.append(
                    I32(np.uint32(same).view(np.int32)) if kind == "match_any_sync" else None
                )
            if kind == "match_all_sync":
                alls = len(set(keys)) == 1
                m = I32(np.uint32(sum(1 << u.lane for u in parts)).view(np.int32) if alls else 0)
                out = [(m, alls)] * len(parts)
            return out
        raise NotModelled(f"the warp operation {kind}")

    def _shuffle(self, kind: str, mask: int, parts: list[SimThread]) -> list[Any]:
        """PTX shfl.sync as numba-cuda emits it (intrinsics.py: clamp c = 0x1f, 0 for shfl_up). The
        PTX ISA (Data Movement and Conversion Instructions: shfl.sync) takes bval = b[4:0] — "an out
        of range value of b may still result in a valid computed source lane index j" — and copies
        the caller's own value when j is outside the warp; reading a lane that does not take part is
        undefined. numba-cuda's docstring for shfl_sync says an out-of-range src_lane returns the
        caller's value: the executor follows the hardware, with a warning."""
        vals = {u.lane: u.wait[2][0] for u in parts}
        out = []
        for u in parts:
            value, b = u.wait[2]
            try:
                lane_arg = int(b)
            except TypeError:
                raise TypeError(
                    f"cuda.{kind}: the lane argument must be an integer, got {type(b).__name__}"
                ) from None
            lane_bits = lane_arg & 31
            lane = u.lane
            if kind == "shfl_sync":
                j, ok = lane_bits, True
                if not 0 <= lane_arg < WARP_SIZE:
                    self.warn(
                        ("shfl_idx", lane_arg),
                        f"cuda.shfl_sync with src_lane {lane_arg}: the PTX numba-cuda emits"
                        f" (shfl.sync.idx, clamp 0x1f) uses only its low 5 bits, so lane {lane}"
                        f" reads lane {lane_bits} (numba-cuda's docstring says the caller's own"
                        " value; the hardware takes src_lane mod 32)",
                    )
            elif kind == "shfl_up_sync":
                j = lane - lane_bits
                ok = j >= 0
            elif kind == "shfl_down_sync":
                j = lane + lane_bits
                ok = j <= WARP_SIZE - 1
            else:  # shfl_xor_sync
                j, ok = lane ^ lane_bits, True
            if kind != "shfl_sync" and not 0 <= lane_arg < WARP_SIZE:
                self.warn(
                    (kind, lane_arg),
                    f"cuda.{kind} with {lane_arg}: only the low 5 bits count ({lane_bits}) in the"
                    " PTX it compiles to",
                )
            if not ok:
                out.append(value)  # source outside the warp: the caller's own value (documented)
            elif j in vals:
                out.append(vals[j])
            else:
                src = (
                    u.blk.threads[u.warp * WARP_SIZE + j]
                    if u.warp * WARP_SIZE + j < self.tpb
                    else None
                )
                why = (
                    "has exited"
                    if src is not None and src.state is DONE
                    else (
                        "is not in the mask"
                        if not (mask >> j) & 1
                        else "does not exist (a partial warp)"
                    )
                )
                site = u.wait[3]
                self.sync_issue(
                    ("shfl", site, lane),
                    "shuffle from an inactive lane",
                    f"lane {lane} ({u.where()}) reads lane {j}'s value in cuda.{kind}(){at(site)},"
                    f" but lane {j} {why}: the value is undefined (CUDA: a lane may only read from"
                    " a lane that takes part in the shuffle)",
                )
                out.append(Uninit(Origin(f"lane {j}'s register", (j,), (u.blk.id, u.lt), at(site))))
        return out

    def _syncwarp_order(self, parts: list[SimThread]) -> None:
        """syncwarp orders memory among its lanes: merge their knowledge of each other's syncwarp
        counts."""
        merged = [0] * WARP_SIZE
        for u in parts:
            u.wc += 1
            if u.vc is not None:
                merged = [max(a, b) for a, b in zip(merged, u.vc)]
        for u in parts:
            merged[u.lane] = max(merged[u.lane], u.wc)
        snap = tuple(merged)
        row = len(self.log) // 3
        for u in parts:
            u.vc = merged
            seqs, vcs = self.sync_hist.setdefault(u.tid, ([], []))
            seqs.append(row)
            vcs.append(snap)


def _match_key(v: Any) -> Any:
    if isinstance(v, Uninit):
        return ("uninit", id(v))
    if isinstance(v, (float, np.floating)):
        return ("f", np.float64(v).tobytes())
    return ("i", int(v))
