"""The one exercise shape of the course (after GPU-Puzzles' ``CudaProblem(...).show() / .check()``).

A :class:`Problem` holds an exercise's spec, a reference implementation, fixed *visible* cases and a generator
of randomized *hidden* cases. Notebooks use it in three places::

    P = lab.problems["gemm_cost"]
    P.show()                    # the spec and a worked example, before the student writes code
    P.check(gemm_cost)          # visible test cell: fixed cases, clear messages
    P.check(gemm_cost, hidden=True)   # hidden test cell: randomized cases, seeded by the problem's name

Hidden cases are drawn from a generator seeded with a hash of the problem's name, so grading the same
submission twice gives the same grade, and every student gets the same hidden cases.
"""

from __future__ import annotations

import textwrap
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .checks import CheckFailure, show


@dataclass(frozen=True)
class Case:
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def call_text(self, name: str) -> str:
        parts = [_short(a) for a in self.args] + [f"{k}={_short(v)}" for k, v in self.kwargs.items()]
        return f"{name}({', '.join(parts)})"


def _short(v: Any) -> str:
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"<{v.dtype} array {tuple(v.shape)}>"
    if isinstance(v, str):
        return repr(v)
    return show(v)


# compare(what, got, expected, case) raises CheckFailure when `got` is wrong
Compare = Callable[[str, Any, Any, Case], None]


@dataclass
class Problem:
    name: str  # the function the student writes
    spec: str  # what the function must do (shown by .show())
    reference: Callable[..., Any]
    visible: list[Case]
    hidden: Callable[[np.random.Generator], list[Case]]
    compare: Compare
    after: Callable[[Callable[..., Any], bool], str] | None = None  # extra checks (e.g. instrumentation)

    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def hidden_cases(self) -> list[Case]:
        return self.hidden(np.random.default_rng(self.seed()))

    def show(self) -> None:
        print(f"Exercise: {self.name}\n")
        print(textwrap.dedent(self.spec).strip())
        case = self.visible[0]
        print(f"\nExample: {case.call_text(self.name)}  ->  {_short(self.reference(*case.args, **case.kwargs))}")

    def check(self, fn: Callable[..., Any], hidden: bool = False) -> None:
        if not callable(fn):
            raise CheckFailure(f"{self.name}: expected a function, got {type(fn).__name__}")
        cases = self.hidden_cases() if hidden else self.visible
        for case in cases:
            what = case.call_text(self.name)
            expected = self.reference(*case.args, **case.kwargs)
            try:
                got = fn(*case.args, **case.kwargs)
            except (NotImplementedError, CheckFailure):
                raise
            except Exception as exc:
                raise CheckFailure(f"{what} raised {exc.__class__.__name__}: {exc}") from exc
            self.compare(what, got, expected, case)
        extra = self.after(fn, hidden) if self.after else ""
        kind = "hidden" if hidden else "visible"
        print(f"✓ {self.name}: {len(cases)} {kind} case{'s' * (len(cases) != 1)} passed{extra}")
