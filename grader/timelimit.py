"""A time limit on one call of a student's function, so that a visible check ends by itself.

A ``while True:`` search with no exit used to hang its test cell until nbgrader's cell timeout (60
s) killed it with ``CellTimeoutError`` and no word about which input looped. :func:`time_limit`
stops the call instead and lets the caller say "did not return within N s on case …".

How the call is stopped:

- **In the main thread on Linux and macOS** (IPython runs cells there, and so does the grader's
  re-check worker): ``SIGALRM`` from ``signal.setitimer``. The handler raises :class:`CallTimeout`
  inside the student's code, also out of ``time.sleep`` and blocking waits, and fires again every
  0.25 s until the call has ended. A loop whose body catches ``BaseException`` (or uses a bare
  ``except:``) around everything it does may swallow every one of them: that deliberate case is left
  to nbgrader's cell timeout and the grader's watchdog. A timer that was already running (the
  grader's own per-step alarm) is kept: whichever deadline comes first wins, and the outer timer is
  re-armed afterwards with the time it has left.
- **Elsewhere** (Windows, or a check called from another thread): a watchdog thread raises
  ``CallTimeout`` in the calling thread with CPython's ``PyThreadState_SetAsyncExc``. It takes
  effect at the next Python bytecode, so a call stuck inside one long C function
  (``time.sleep(600)``, a huge NumPy operation) ends only when that function returns.

``CallTimeout`` is a ``BaseException``, so a student's ``except Exception:`` does not swallow it.
"""

from __future__ import annotations

import ctypes
import math
import signal
import threading
import time
from types import FrameType, TracebackType
from typing import Any

REFIRE_S = 0.25  # a swallowed CallTimeout is raised again this often until the call gives up


class CallTimeout(BaseException):
    """Raised inside the student's function when its time is up (caught by
    :mod:`grader.problem`)."""

    def __init__(self, seconds: float):
        super().__init__(f"stopped after {seconds:g} s")
        self.seconds = seconds


def time_limit(seconds: float | None) -> Any:
    """Context manager: the block raises :class:`CallTimeout` if it runs longer than ``seconds``.
    ``None`` or ``inf``: no limit."""
    if seconds is None or math.isinf(seconds):
        return _NoLimit()
    seconds = max(float(seconds), 1e-3)
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGALRM) is not None:
        return _SignalLimit(seconds)
    return _ThreadLimit(seconds)


class _NoLimit:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


class _SignalLimit:
    """SIGALRM-based limit, nested correctly inside an ITIMER_REAL/alarm() that is already armed."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = False

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if not self.armed or (frame is not None and frame.f_code.co_filename == __file__):
            return  # disarmed, or inside __exit__ (raising there would leave the timer running)
        if self.outer_deadline is not None and time.monotonic() >= self.outer_deadline - 1e-3 \
                and callable(self.outer_handler):
            # the enclosing timer's deadline came first: its handler decides
            self.outer_handler(signum, frame)
            return
        raise CallTimeout(self.seconds)

    def __enter__(self) -> _SignalLimit:
        self.outer_handler = signal.getsignal(signal.SIGALRM)
        # reads and disarms the outer timer
        delay, self.outer_interval = signal.setitimer(signal.ITIMER_REAL, 0)
        self.outer_deadline = time.monotonic() + delay if delay > 0 else None
        first = self.seconds if self.outer_deadline is None else min(self.seconds, delay)
        self.armed = True
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(first, 1e-3), REFIRE_S)
        return self

    def __exit__(
        self, etype: type | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.outer_handler)
        if self.outer_deadline is not None:
            left = self.outer_deadline - time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), self.outer_interval)
        return False


def _async_raise(thread_id: int, exc_type: type[BaseException]) -> None:
    """Schedule ``exc_type`` to be raised in the thread at its next bytecode check (CPython only).
    Never call it with NULL to cancel: CPython 3.11 then leaves its eval-breaker flag set for good,
    and every thread runs on the slow path (a simulated kernel took minutes instead of 0.1 s)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc_type)
    )


class _ThreadLimit:
    """Watchdog-thread limit for threads other than the main one, and for platforms without
    setitimer."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.armed = self.fired = False

    def _watch(self) -> None:
        if self.done.wait(self.seconds):
            return
        while True:
            with self.lock:
                if not self.armed:
                    return
                _async_raise(self.thread_id, _TimeoutForThread.make(self.seconds))
                self.fired = True
            if self.done.wait(REFIRE_S):
                return

    def __enter__(self) -> _ThreadLimit:
        self.thread_id = threading.get_ident()
        self.armed = True
        threading.Thread(target=self._watch, name="grader-time-limit", daemon=True).start()
        return self

    def __exit__(
        self, etype: type | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self.armed = False
        with self.lock:  # an injection in progress finishes; none follows
            pass
        self.done.set()
        # a CallTimeout scheduled but not raised yet is raised (and dropped) here, not later
        if self.fired:
            try:
                for _ in range(1000):
                    pass
            except CallTimeout:
                pass
        return False


class _TimeoutForThread:
    """PyThreadState_SetAsyncExc takes an exception *class* and instantiates it without arguments:
    one subclass per limit carries the seconds."""

    _cache: dict[float, type[CallTimeout]] = {}

    @classmethod
    def make(cls, seconds: float) -> type[CallTimeout]:
        if seconds not in cls._cache:
            cls._cache[seconds] = type(
                "CallTimeout",
                (CallTimeout,),
                {
                    "__init__": lambda self: CallTimeout.__init__(self, seconds),
                    "__module__": __name__,
                },
            )
        return cls._cache[seconds]
