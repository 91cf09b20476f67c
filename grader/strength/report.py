"""A lab's strength report, assembled from the worker's events, and how it prints."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from .. import course


def _rel(path: str) -> str:
    try:
        return os.path.relpath(path, course.ROOT) if os.path.isabs(path) else path
    except ValueError:  # another drive
        return path


@dataclass
class LabReport:
    lab: str
    mutants: list[dict] = field(default_factory=list)  # MutantResult.to_json()
    # name -> modes, notes, broken, baseline_s
    problems: dict[str, dict] = field(default_factory=dict)
    # problem -> FunctionCoverage.to_json()
    coverage: dict[str, list[dict]] = field(default_factory=dict)
    families: dict[str, dict] = field(default_factory=dict)  # problem -> FamilyReport.to_json()
    stale: list[dict] = field(default_factory=list)  # equivalents that matched nothing
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    complete: bool = False

    # -- assembling --------------------------------------------------------------------------------

    def add(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "mutant":
            self.mutants.append({k: v for k, v in event.items() if k != "event"})
        elif kind == "problem":
            self.problems[event["problem"]] = {
                k: v for k, v in event.items() if k not in ("event", "problem")
            }
        elif kind == "coverage":
            self.coverage[event["problem"]] = event["functions"]
        elif kind == "families":
            self.families[event["problem"]] = {k: v for k, v in event.items() if k != "event"}
        elif kind == "stale":
            self.stale = event["entries"]
        elif kind == "error":
            self.errors.append(event["message"])
        elif kind == "done":
            self.seconds, self.complete = event["seconds"], True

    # -- numbers -----------------------------------------------------------------------------------

    def counts(self, problem: str | None = None) -> Counter:
        return Counter(
            m["status"] for m in self.mutants if problem is None or m["problem"] == problem
        )

    @staticmethod
    def score_of(c: Counter) -> float | None:
        """Killed (timeouts and wrongly-listed equivalents included) over the non-equivalent
        mutants."""
        total = sum(c.values()) - c["equivalent"]
        return (c["killed"] + c["timeout"] + c["listed-but-killed"]) / total if total else None

    @property
    def score(self) -> float | None:
        return self.score_of(self.counts())

    def survivors(self) -> list[dict]:
        return [m for m in self.mutants if m["status"] == "survived"]

    def wrongly_listed(self) -> list[dict]:
        return [m for m in self.mutants if m["status"] == "listed-but-killed"]

    def weaker_hidden(self) -> list[dict]:
        """Mutants the visible cases kill and the hidden cases do not."""
        return [
            m
            for m in self.mutants
            if m["status"] in ("survived", "equivalent") and m.get("visible") == "killed"
        ]

    def uncovered(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for problem, functions in self.coverage.items():
            for f in functions:
                gaps = [f"line {line_no} never runs" for line_no in f["missing_lines"]]
                gaps += [
                    f"branch {a} → {'exit' if b < 0 else b} never taken"
                    for a, b in f["missing_branches"]
                ]
                if gaps:
                    out[f"{problem}: {f['function']} ({_rel(f['file'])}:{f['first_line']})"] = gaps
        return out

    def missing_families(self) -> dict[str, list[str]]:
        return {p: f["missing"] for p, f in self.families.items() if f["missing"]}

    # -- printing ----------------------------------------------------------------------------------

    def summary(self) -> str:
        c = self.counts()
        score = self.score
        parts = [
            f"{sum(c.values())} mutants",
            f"{c['killed'] + c['timeout']} killed ({c['timeout']} by time-out)",
            f"{c['survived']} survived",
            f"{c['equivalent']} equivalent",
        ]
        if c["listed-but-killed"]:
            parts.append(f"{c['listed-but-killed']} listed as equivalent but killed")
        text = ", ".join(parts)
        text += f" · score {score:.1%}" if score is not None else " · no mutants"
        return f"{self.lab}: {text} · {self.seconds:.0f} s" + (
            "" if self.complete else " · INCOMPLETE"
        )

    def render(self, verbose: bool = False) -> str:
        lines = [self.summary()]
        lines += [f"  ERROR {e}" for e in self.errors]
        by_problem: dict[str, list[dict]] = defaultdict(list)
        for m in self.mutants:
            by_problem[m["problem"]].append(m)
        for name, info in self.problems.items():
            c = self.counts(name)
            score = self.score_of(c)
            modes = "+".join(info.get("modes", [])) or "no mode"
            head = (
                f"  {name} [{modes}]: {sum(c.values())} mutants, {c['killed'] + c['timeout']}"
                f" killed, {c['survived']} survived, {c['equivalent']} equivalent"
                + (f" · {score:.0%}" if score is not None else "")
            )
            lines.append(head)
            lines += [f"      note: {n}" for n in info.get("notes", [])]
            for m in by_problem.get(name, []):
                if m["status"] in ("survived", "listed-but-killed") or verbose:
                    where = f"{_rel(m['file'])}:{m['line']}"
                    tail = f"  (visible: {m['visible']})" if m.get("visible") else ""
                    label = {
                        "survived": "SURVIVED",
                        "listed-but-killed": "LISTED EQUIVALENT BUT KILLED",
                    }.get(m["status"], m["status"])
                    lines.append(
                        f"    {label} {m['mode']} {m['function']} {where} [{m['operator']}]: "
                        f"{m['original']}  →  {m['mutated']}{tail}"
                    )
                    if m["status"] == "listed-but-killed" or verbose and m["how"]:
                        lines.append(f"        {m['how']}")
        weaker = self.weaker_hidden()
        if weaker:
            lines.append(
                f"  hidden weaker than visible ({len(weaker)} mutants the visible cases kill, the"
                " hidden ones do not):"
            )
            lines += [
                f"    {m['problem']}: {m['function']}:{m['line']} {m['original']}  → "
                f" {m['mutated']}"
                for m in weaker
            ]
        uncovered = self.uncovered()
        if uncovered:
            lines.append("  branch coverage of the references by their hidden cases — gaps:")
            for where, gaps in uncovered.items():
                lines.append(f"    {where}: {'; '.join(gaps)}")
        elif self.coverage:
            lines.append("  branch coverage of the references by their hidden cases: complete")
        missing = self.missing_families()
        if missing:
            lines.append("  case families of the visible cases missing from the hidden ones:")
            lines += [f"    {p}: {', '.join(fams)}" for p, fams in missing.items()]
        elif self.families:
            lines.append("  case families: the hidden cases hold every family of the visible ones")
        for e in self.stale:
            lines.append(
                f"  STALE equivalent entry (matches no mutant): {e['function']}: {e['original']}  →"
                f"  {e['mutated']}"
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "score": self.score,
            "counts": dict(self.counts()),
            "seconds": self.seconds,
            "complete": self.complete,
            "errors": self.errors,
            "problems": self.problems,
            "mutants": self.mutants,
            "coverage": self.coverage,
            "families": self.families,
            "stale": self.stale,
        }


def score_table(reports: list[LabReport]) -> str:
    head = (
        f"{'lab':24} {'mutants':>8} {'killed':>7} {'survived':>9} {'equiv.':>7} {'timeout':>8}"
        f" {'score':>7} {'seconds':>8}"
    )
    rows = [head]
    for r in reports:
        c = r.counts()
        score = f"{r.score:.1%}" if r.score is not None else "—"
        rows.append(
            f"{r.lab:24} {sum(c.values()):8} {c['killed'] + c['timeout']:7} {c['survived']:9} "
            f"{c['equivalent']:7} {c['timeout']:8} {score:>7} {r.seconds:8.0f}"
            + ("" if r.complete else "  INCOMPLETE")
        )
    return "\n".join(rows)


def exercise_table(reports: list[LabReport]) -> str:
    """The mutation score of every exercise's hidden tests, one row per exercise (the per-lab score
    of :func:`score_table`, taken apart): a redesigned exercise shows its own score here."""
    rows = [
        f"{'lab':24} {'exercise':30} {'mutants':>8} {'killed':>7} {'survived':>9} {'equiv.':>7}"
        f" {'score':>7}"
    ]
    for r in reports:
        for problem in sorted({m["problem"] for m in r.mutants}):
            c = r.counts(problem)
            score = LabReport.score_of(c)
            rows.append(
                f"{r.lab:24} {problem:30} {sum(c.values()):8} {c['killed'] + c['timeout']:7}"
                f" {c['survived']:9} {c['equivalent']:7}"
                f" {(f'{score:.1%}' if score is not None else '—'):>7}"
            )
    return "\n".join(rows)
