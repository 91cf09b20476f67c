"""Numbers a notebook measured, recorded under stable names for the one GPU command.

Every cell that measures something on a GPU passes the number through :func:`record`::

    gc.record("§1 HBM roof", bandwidth / 1e12, "TB/s", note="read-only stream, 1 GiB, CUDA events")

``python -m gpucourse.gpu_check`` runs every notebook on the GPU with ``GPUCOURSE_RECORD`` naming a
JSON-lines file; :func:`record` appends one line per number there (with the notebook's name, from
``GPUCOURSE_NOTEBOOK``), and the command prints them as one table and writes them, with the GPU's
provenance, to ``course/gpu_runs/``. Outside that command ``record`` only keeps the number in this
process (:func:`recorded`) and returns it.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

RECORD_ENV = "GPUCOURSE_RECORD"  # path of the JSON-lines file the GPU command collects
NOTEBOOK_ENV = "GPUCOURSE_NOTEBOOK"  # the notebook being run (set by the GPU command)


@dataclass(frozen=True)
class Record:
    name: str  # stable, section-prefixed: "§1 HBM roof"
    value: float
    unit: str
    note: str = ""
    backend: str = ""
    notebook: str = ""
    time: float = 0.0  # seconds since the epoch


_RECORDS: list[Record] = []


def record(name: str, value: float, unit: str, note: str = "") -> float:
    """Keep a measured number (and append it to ``$GPUCOURSE_RECORD`` when the GPU command runs);
    returns it."""
    if not name or not unit:
        raise ValueError("a record needs a name and a unit (use '-' for a pure number)")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: {value} is not a finite number")
    from .backend import get_backend

    rec = Record(
        name, value, unit, note, get_backend().name, os.environ.get(NOTEBOOK_ENV, ""), time.time()
    )
    _RECORDS.append(rec)
    path = os.environ.get(RECORD_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(rec), ensure_ascii=False) + "\n")
    return value


def recorded() -> list[Record]:
    """Everything recorded in this process so far."""
    return list(_RECORDS)


def load(path: str | Path) -> list[Record]:
    """The records in a JSON-lines file (a line that is not a record is skipped: a killed cell may
    cut one)."""
    out = []
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            out.append(Record(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return out


def table(records: list[Record]) -> str:
    """A plain-text table: name, value, unit, notebook, note."""
    if not records:
        return "(no numbers recorded)"
    w = max(len(r.name) for r in records)
    lines = [f"{'measurement'.ljust(w)}  {'value':>12}  unit      notebook / note"]
    for r in records:
        where = " · ".join(x for x in (r.notebook, r.note) if x)
        lines.append(f"{r.name.ljust(w)}  {r.value:12.4g}  {r.unit:8}  {where}")
    return "\n".join(lines)
