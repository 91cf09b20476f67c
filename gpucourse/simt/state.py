"""The launch in progress (one at a time per process: a kernel cannot launch a kernel in
numba-cuda)."""

from __future__ import annotations

from typing import Any


class _Current:
    run: Any = None  # the running launch (gpucourse.simt.launch.Launch) or None


CURRENT = _Current()


def running(what: str) -> Any:
    """The launch a ``cuda.<what>`` call inside a kernel belongs to; outside a kernel, a clear
    error."""
    run = CURRENT.run
    if run is None or run.cur is None:
        raise RuntimeError(f"cuda.{what} can only be used inside a kernel")
    return run
