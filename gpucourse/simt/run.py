"""``simt.run(kernel, grid, block, *args)``: one instrumented launch, and its report. Defined with
the public API (:mod:`gpucourse.simt.api`, which ``Kernel.launch`` calls it from): the package's
imports run one way, from the state and types at the bottom through the launch loop to the API on
top."""

from __future__ import annotations

from .api import run

__all__ = ["run"]
