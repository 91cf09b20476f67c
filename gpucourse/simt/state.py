"""The launch in progress (one at a time per process: a kernel cannot launch a kernel in numba-cuda)."""

from __future__ import annotations

from typing import Any


class _Current:
    run: Any = None  # the running launch (gpucourse.simt.launch.Launch) or None


CURRENT = _Current()
