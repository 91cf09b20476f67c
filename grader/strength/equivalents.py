"""The reviewed list of equivalent mutants: ``grader/equivalent_mutants.toml``.

A mutant is *equivalent* when no input the spec allows can tell it from the original (``x >= 1`` vs
``x > 0`` on integers), so no test can kill it. Each entry is written by a person who checked that,
and says why::

    [[mutant]]
    lab = "lab01_blas_roofline"
    function = "min_batch_compute_bound"          # the qualname the report prints
    original = "while b > 1 and compute_bound(b - 1):"
    mutated = "while b > 2 and compute_bound(b - 1):"
    problem = "min_batch_compute_bound"           # optional: only for this problem's cases
    backend = "cpu"                               # optional: only on this backend ("cpu" or "gpu")
    reason = "the closed form only picks where the search starts: ..."

Entries are matched on the changed line's text before and after (not on line numbers, which move
whenever the lab module is edited). An entry whose mutant the hidden cases *kill* is wrong and
reported as such; an entry that no longer matches any mutant is stale and reported too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .operators import Mutant

PATH = Path(__file__).resolve().parent.parent / "equivalent_mutants.toml"
REQUIRED = ("lab", "function", "original", "mutated", "reason")
OPTIONAL = ("problem", "backend")
MIN_REASON_CHARS = 30  # a reason a reviewer can check, not "equivalent"


def _backend() -> str:
    import gpucourse

    return "gpu" if gpucourse.gpu_available() else "cpu"


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Entry:
    lab: str
    function: str
    original: str
    mutated: str
    reason: str
    problem: str | None = None
    backend: str | None = None

    def matches(self, lab: str, problem: str, mutant: Mutant) -> bool:
        return (
            self.lab == lab
            and self.function == mutant.function
            and (self.problem in (None, problem))
            and (self.backend in (None, _backend()))
            and _norm(self.original) == _norm(mutant.original)
            and _norm(self.mutated) == _norm(mutant.mutated)
        )


@dataclass
class Equivalents:
    entries: list[Entry] = field(default_factory=list)
    used: set[int] = field(default_factory=set)  # indices of entries that matched a mutant

    @classmethod
    def load(cls, path: Path = PATH) -> "Equivalents":
        if not path.exists():
            return cls()
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        entries = []
        for i, raw in enumerate(data.get("mutant", [])):
            missing = [k for k in REQUIRED if not str(raw.get(k, "")).strip()]
            if missing:
                raise ValueError(f"{path.name}: entry {i + 1} lacks {', '.join(missing)}")
            if len(raw["reason"].strip()) < MIN_REASON_CHARS:
                raise ValueError(
                    f"{path.name}: entry {i + 1} ({raw['function']}): the reason must say why the "
                    f"mutant is equivalent (at least {MIN_REASON_CHARS} characters)"
                )
            unknown = set(raw) - set(REQUIRED) - set(OPTIONAL)
            if unknown:
                raise ValueError(f"{path.name}: entry {i + 1} has unknown keys {sorted(unknown)}")
            if raw.get("backend") not in (None, "cpu", "gpu"):
                raise ValueError(
                    f"{path.name}: entry {i + 1}: backend is 'cpu' or 'gpu', got {raw['backend']!r}"
                )
            entries.append(Entry(**{k: raw[k] for k in (*REQUIRED, *OPTIONAL) if k in raw}))
        return cls(entries)

    def find(self, lab: str, problem: str, mutant: Mutant) -> Entry | None:
        for i, entry in enumerate(self.entries):
            if entry.matches(lab, problem, mutant):
                self.used.add(i)
                return entry
        return None

    def stale(self, labs: list[str]) -> list[Entry]:
        """Entries of these labs that matched no mutant in a run over them."""
        return [e for i, e in enumerate(self.entries) if e.lab in labs and i not in self.used]
