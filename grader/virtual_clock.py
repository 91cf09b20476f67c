"""A virtual clock for grading timers: seconds that advance only when a stand-in workload says so.

Labs 1 and 6 grade a timing function (``time_call``, ``measure_times``) on stand-in workloads whose true
duration is known. Their work advances this clock instead of sleeping, and while the student's timer runs,
:meth:`VirtualClock.installed` puts the clock behind every wall clock a timer may read. The verdict is then exact
on any machine however busy, and a check takes milliseconds instead of the workloads' seconds.
"""

from __future__ import annotations

import contextlib as _contextlib
import sys as _sys
import threading as _threading
import time as _time
import timeit as _timeit
import types as _types
from typing import Any, Callable

_CLOCKS = ("perf_counter", "monotonic", "time")  # the wall clocks a timer may read (and their _ns forms)
READ_STEP = 1e-6  # seconds the virtual clock moves on at each read by the timer


class VirtualClock:
    """Seconds that advance only when a stand-in workload says so; ``busy_until``: when the one in-order queue of
    the stand-ins' work drains; ``reads``: how often a timer read this clock."""

    def __init__(self) -> None:
        self.now, self.busy_until, self.reads = 1000.0, 0.0, 0
        self.workloads: list[Any] = []  # told of each read (Workload.saw_read)
        self.thread: int | None = None  # the thread the timer runs in (set by installed)

    def _reader(self, real: Callable[[], Any], ns: bool) -> Callable[[], Any]:
        """A stand-in for the clock ``real``: virtual seconds (or nanoseconds) for the student's code; the real
        clock, uncounted, for the grader's own reads (its time budget runs while the student's function does) and
        for every other thread (a watchdog, the kernel's I/O loop). Each read moves the clock on by READ_STEP, as
        a real clock moves while it is read: a loop that waits for the clock to pass a mark ends."""
        def read() -> Any:
            if (_threading.get_ident() != self.thread
                    or _sys._getframe(1).f_globals.get("__name__", "").startswith("grader.")):
                return real()
            self.reads += 1
            for w in self.workloads:
                w.saw_read()
            now, self.now = self.now, self.now + READ_STEP
            return int(round(now * 1e9)) if ns else now
        return read

    @_contextlib.contextmanager
    def installed(self, *functions: Callable[..., Any]):
        """Replace every clock a timer may read by this one while the block runs: ``time.perf_counter``,
        ``monotonic``, ``time`` and their ``_ns`` forms; ``timeit.default_timer`` and the ``timer`` that
        ``timeit.Timer``, ``timeit.timeit`` and ``timeit.repeat`` bound as a default argument; and, in the globals of
        ``functions``, the default arguments and closure cells of ``functions`` and of every function in those
        globals (a helper defined in another cell), and the attributes and methods' defaults of the classes defined
        there (a stopwatch class), names bound to one of those clocks (``from time import perf_counter``). Reads
        from the thread that enters the block see this clock; other threads the real one."""
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

        def swap_cells(f: Any) -> None:
            for cell in getattr(f, "__closure__", None) or ():
                try:
                    old = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if id(old) in ids:
                    cell.cell_contents = real[old]
                    undo.append(lambda cell=cell, old=old: setattr(cell, "cell_contents", old))

        ids = {id(f) for f in real}
        thread, self.thread = self.thread, _threading.get_ident()
        undo.append(lambda: setattr(self, "thread", thread))
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
                # a class defined there: ``clock = time.perf_counter`` in its body, ``__init__(self, clock=...)``
                for cls in [v for v in (g or {}).values()
                            if isinstance(v, type) and v.__module__ == (g or {}).get("__name__")]:
                    for name, value in list(vars(cls).items()):
                        if id(value) in ids:
                            swap_attr(cls, name, real[value])
                        elif isinstance(value, _types.FunctionType):
                            helpers.append(value)
                for f in (fn, *(getattr(h, "__wrapped__", h) for h in helpers)):
                    swap_defaults(f, "__defaults__")
                    swap_defaults(f, "__kwdefaults__")
                    swap_cells(f)
            yield self
        finally:
            for u in reversed(undo):
                u()
