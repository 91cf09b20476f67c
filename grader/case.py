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
    argument list would make ``37,125`` read as two numbers)."""
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.generic):
        return f"<{v.dtype} array {shape_text(v.shape)}>"
    if isinstance(v, str):
        return repr(v)
    return show(v, sep="_")
