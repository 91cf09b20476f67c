"""A test case of an exercise: the arguments a check calls the student's function with (shared by
the check machinery, :mod:`grader.problem`, and the wire format, :mod:`grader.wire`, without an
import circle)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .checks import shape_text, show


@dataclass(frozen=True)
class Case:
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def call_text(self, name: str) -> str:
        parts = [_short(a) for a in self.args] + [
            f"{k}={_short(v)}" for k, v in self.kwargs.items()
        ]
        return f"{name}({', '.join(parts)})"


def _short(v: Any) -> str:
    """An argument or value in a message: ``<float32 array (3, 4)>``, ``'sort'``, ``37_125`` (an
    argument list would make ``37,125`` read as two numbers), a float in full (``1.4781827e-05``
    rounded would not rebuild the case, nor show a tie that is exact)."""
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.generic):
        return f"<{v.dtype} array {shape_text(v.shape)}>"
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        kind = type(v) if isinstance(v, np.floating) else float  # a float32 reads back as float32
        return next(text for d in range(6, 18) if kind(text := f"{float(v):.{d}g}") == v)
    if isinstance(v, tuple):
        return f"({', '.join(_short(x) for x in v)}{',' * (len(v) == 1)})"
    return show(v, sep="_")
