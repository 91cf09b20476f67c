"""What the executor raises, in words a student can act on."""

from __future__ import annotations

from typing import Any


class KernelError(RuntimeError):
    """The launch could not finish: a thread raised (an out-of-bounds index included), a barrier or
    warp operation deadlocked, or a thread never ended. The message names the thread and the source
    line; ``report`` holds what the launch did up to that point (or None), ``thread`` is (block,
    thread in block)."""

    def __init__(self, message: str, report: Any = None, thread: tuple[int, int] | None = None,
                 line: int | None = None):
        super().__init__(message)
        self.report, self.thread, self.line = report, thread, line


class OutOfBounds(IndexError):
    """An index outside the array (memcheck on a GPU: "Invalid __global__ read"); the message names
    it."""


class NotModelled(AttributeError):
    """A numba-cuda feature the executor does not model; the message says what a GPU would do."""

    def __init__(self, what: str, on_gpu: str = ""):
        gpu = (
            f" On an NVIDIA GPU {on_gpu}" if on_gpu else " On an NVIDIA GPU numba-cuda provides it"
        )
        super().__init__(
            f"gpucourse's SIMT executor does not model {what}.{gpu}. To compare with numba's own"
            " CUDA simulator, set GPUCOURSE_CUDA_SIM=numba before importing gpucourse."
        )


class BudgetExceeded(BaseException):
    """Raised inside a thread that ran too long (not an Exception: a kernel's own `except` cannot
    swallow it)."""


class UninitializedCondition(BaseException):
    """Raised inside a thread whose branch or loop condition depends on an uninitialised value: the
    launch stops there (which way a GPU goes depends on garbage; a `while` on it may never end).
    Not an Exception: a kernel's own `except` cannot swallow it."""


class ThreadKilled(BaseException):
    """Thrown into the threads still suspended when a launch is abandoned."""
