"""Branch coverage of a reference by its hidden cases (coverage.py, branch mode).

The hidden cases are drawn first (their generators may call lab helpers: that must not count), then
coverage runs while the reference — and, through it, every helper it reaches — computes the expected
value of each hidden case. A line or a branch of the reference that no hidden case takes is a place
where a wrong answer cannot be noticed.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any

from ..problem import Problem
from .subjects import Reach


@dataclass
class FunctionCoverage:
    function: str
    file: str
    first_line: int
    last_line: int
    statements: int
    branches: int
    missing_lines: list[int] = field(default_factory=list)
    # (from, to); to < 0: leaves the function
    missing_branches: list[tuple[int, int]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing_lines and not self.missing_branches

    def describe(self) -> list[str]:
        out = [f"line {line_no} never runs" for line_no in self.missing_lines]
        out += [
            f"branch {a} → {'exit' if b < 0 else b} never taken" for a, b in self.missing_branches
        ]
        return out

    def to_json(self) -> dict:
        return asdict(self)


def reference_coverage(problem: Problem, reach: Reach) -> list[FunctionCoverage]:
    """Per reached function: its statements and branches, and those the hidden cases leave
    untaken."""
    import coverage

    from .runner import quiet

    subjects = [s for s in reach.subjects if os.path.exists(s.source.filename)]
    if not subjects:
        return []
    with quiet():
        cases = problem.hidden_cases()
    for s in reach.subjects:
        # a cached helper must run, not answer from its cache
        if hasattr(s.original, "cache_clear"):
            s.original.cache_clear()
    cov = coverage.Coverage(data_file=None, branch=True, config_file=False,
                            include=sorted({s.source.filename for s in subjects}))
    cov.start()
    try:
        with quiet():
            for case in cases:
                try:
                    problem.reference(*case.args, **case.kwargs)
                # a reference that raises is reported by the mutation run
                except Exception:  # noqa: BLE001
                    pass
    finally:
        cov.stop()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "coverage.json")
        with quiet():
            cov.json_report(outfile=out)
        with open(out, encoding="utf-8") as fh:
            files: dict[str, Any] = json.load(fh)["files"]
    by_path = {os.path.realpath(k): v for k, v in files.items()}
    result = []
    for s in subjects:
        first, last = s.line_range
        data = by_path.get(os.path.realpath(s.source.filename), {})
        # coverage's own regions (functions, nested ones included) that start inside this one: their
        # def lines ran at import, before coverage started, and are not part of the regions
        regions = [
            r for r in data.get("functions", {}).values() if first <= r.get("start_line", 0) <= last
        ]
        executed = sorted({line_no for r in regions for line_no in r["executed_lines"]})
        missing = sorted({line_no for r in regions for line_no in r["missing_lines"]})
        taken = sorted({tuple(b) for r in regions for b in r["executed_branches"]})
        untaken = sorted({tuple(b) for r in regions for b in r["missing_branches"]})
        if not regions:  # nothing of the file ran, or coverage has no region for it
            missing = [first]
        result.append(
            FunctionCoverage(
                s.qualname,
                s.source.filename,
                first,
                last,
                len(executed) + len(missing),
                len(taken) + len(untaken),
                missing,
                untaken,
            )
        )
    return result
