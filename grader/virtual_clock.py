"""A virtual clock for grading timers: seconds that advance only when a stand-in workload says so.

Labs 1 and 6 grade a timing function (``time_call``, ``measure_times``) on stand-in workloads whose true
duration is known. Their work advances this clock instead of sleeping, and while the student's timer runs,
:meth:`VirtualClock.installed` puts the clock behind every wall clock a timer may read. The verdict is then exact
on any machine however busy, and a check takes milliseconds instead of the workloads' seconds.
"""

from __future__ import annotations

import contextlib as _contextlib
import sys as _sys
import time as _time
import timeit as _timeit
import types as _types
from typing import Any, Callable

_CLOCKS = ("perf_counter", "monotonic", "time")  # the wall clocks a timer may read (and their _ns forms)


class VirtualClock:
    """Seconds that advance only when a stand-in workload says so; ``busy_until``: when the one in-order queue of
    the stand-ins' work drains; ``reads``: how often a timer read this clock."""

    def __init__(self) -> None:
        self.now, self.busy_until, self.reads = 1000.0, 0.0, 0
        self.workloads: list[Any] = []  # told of each read (Workload.saw_read)

    def _reader(self, real: Callable[[], Any], ns: bool) -> Callable[[], Any]:
        """A stand-in for the clock ``real``: virtual seconds (or nanoseconds) for the student's code; the real
        clock, uncounted, for the grader's own reads (its time budget runs while the student's function does)."""
        def read() -> Any:
            if _sys._getframe(1).f_globals.get("__name__", "").startswith("grader."):
                return real()
            self.reads += 1
            for w in self.workloads:
                w.saw_read()
            return int(round(self.now * 1e9)) if ns else self.now
        return read

    @_contextlib.contextmanager
    def installed(self, *functions: Callable[..., Any]):
        """Replace every clock a timer may read by this one while the block runs: ``time.perf_counter``,
        ``monotonic``, ``time`` and their ``_ns`` forms; ``timeit.default_timer`` and the ``timer`` that
        ``timeit.Timer``, ``timeit.timeit`` and ``timeit.repeat`` bound as a default argument; and, in the globals of
        ``functions`` and the default arguments of ``functions`` and of every function in those globals (a helper
        defined in another cell), names bound to one of those clocks (``from time import perf_counter``)."""
        real = {getattr(_time, n): self._reader(getattr(_time, n), False) for n in _CLOCKS} | \
               {getattr(_time, n + "_ns"): self._reader(getattr(_time, n + "_ns"), True) for n in _CLOCKS}
        real.setdefault(_timeit.default_timer, self._reader(_timeit.default_timer, False))
        undo: list[Callable[[], None]] = []

        def swap_attr(owner: Any, name: str, new: Any) -> None:
            old = getattr(owner, name)
            setattr(owner, name, new)
            undo.append(lambda: setattr(owner, name, old))

        def swap_defaults(f: Any, attr: str) -> None:
            old = getattr(f, attr, None)
            if isinstance(old, tuple) and any(id(v) in ids for v in old):
                swap_attr(f, attr, tuple(real[v] if id(v) in ids else v for v in old))
            elif isinstance(old, dict) and any(id(v) in ids for v in old.values()):
                swap_attr(f, attr, {k: real[v] if id(v) in ids else v for k, v in old.items()})

        ids = {id(f) for f in real}
        try:
            for f in (_timeit.Timer.__init__, _timeit.timeit, _timeit.repeat):
                swap_defaults(f, "__defaults__")
            for name in (*_CLOCKS, *(n + "_ns" for n in _CLOCKS)):
                swap_attr(_time, name, real[getattr(_time, name)])
            swap_attr(_timeit, "default_timer", real[_timeit.default_timer])
            for fn in functions:
                fn = getattr(fn, "__wrapped__", fn)
                g = getattr(fn, "__globals__", None)
                for key, value in list((g or {}).items()):
                    if id(value) in ids:
                        g[key] = real[value]
                        undo.append(lambda g=g, key=key, value=value: g.__setitem__(key, value))
                # the function itself and the helpers it may call from its module (a notebook's other cells):
                # ``def bench(fn, *args, clock=time.perf_counter)`` bound the real clock when it was defined
                helpers = [v for v in (g or {}).values() if isinstance(v, _types.FunctionType) and v is not fn]
                for f in (fn, *(getattr(h, "__wrapped__", h) for h in helpers)):
                    swap_defaults(f, "__defaults__")
                    swap_defaults(f, "__kwdefaults__")
            yield self
        finally:
            for u in reversed(undo):
                u()
