"""What a submission's outputs may cost: caps applied while nbgrader runs the notebook, and on the
notebook kept.

A submission that printed 200 MB used to leave a 100 MB autograded notebook on disk (a class of 300
such is 30 GB) and 200 MB in nbgrader's memory. Now, in nbgrader's own process (trusted: the kernel
cannot change it):

- :class:`CappedExecute` (nbgrader's ``Execute`` with a budget, swapped into
  ``Autograde.autograde_preprocessors`` by the job's config) keeps at most :data:`CELL_OUTPUT_BYTES`
  of output per cell and :data:`NOTEBOOK_OUTPUT_BYTES` per notebook *as the messages arrive*; the
  rest is dropped and one stdout line says how much. Grading is unchanged: an ``error`` output is
  always kept (its text shortened), and a cell that wrote to stderr keeps a piece of it (nbgrader
  scores such a test cell 0);
- nbgrader's ``LimitOutput`` still cuts long text to 200 lines and tracebacks to 40;
- :func:`cap_notebook` bounds the file kept in ``grading/autograded/`` (and so the feedback page) to
  :data:`KEPT_NOTEBOOK_BYTES` whatever happened before (outputs replaced, largest first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CELL_OUTPUT_BYTES = 1 << 20       # outputs one cell may keep
NOTEBOOK_OUTPUT_BYTES = 4 << 20   # outputs all cells together may keep
ERROR_TEXT_BYTES = 8 << 10        # an error's message, and each of its traceback lines
# what is kept of stderr beyond the budget (its presence decides a test cell)
STDERR_KEPT_BYTES = 1 << 10
KEPT_NOTEBOOK_BYTES = 8 << 20     # the executed notebook kept on disk (source <= 2 MB + outputs)


def payload_bytes(output: dict) -> int:
    """Characters an output carries (its text, its data in every MIME type, its traceback)."""
    kind = output.get("output_type") or output.get("msg_type")
    if kind == "stream":
        return len(_text(output.get("text", "")))
    if kind == "error":
        return len(str(output.get("evalue", ""))) + sum(
            len(str(t)) for t in output.get("traceback", []) or []
        )
    return sum(
        len(v if isinstance(v, str) else json.dumps(v)) for v in (output.get("data") or {}).values()
    )


def _text(v: Any) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


def marker_text(dropped: int) -> str:
    return (
        f"[grader] output truncated: {dropped:,} more characters were not kept (the grader keeps"
        f" {CELL_OUTPUT_BYTES >> 20} MB per cell and {NOTEBOOK_OUTPUT_BYTES >> 20} MB per"
        " notebook)\n"
    )


def short_error(content: dict) -> dict:
    """An error's content with its message and traceback lines cut to :data:`ERROR_TEXT_BYTES`
    each."""
    out = dict(content)
    out["evalue"] = str(content.get("evalue", ""))[:ERROR_TEXT_BYTES]
    out["traceback"] = [str(t)[:ERROR_TEXT_BYTES] for t in (content.get("traceback") or [])[:200]]
    return out


@dataclass
class _CellBudget:
    kept: int = 0
    dropped: int = 0
    stderr_kept: bool = False
    marker: Any = None  # the stdout output that says what was dropped


def capped_execute_class():
    """nbgrader's Execute preprocessor with output budgets (defined lazily: importing nbgrader is
    slow and only nbgrader's own process needs it)."""
    from nbgrader.preprocessors import Execute
    from nbformat.v4 import new_output

    class CappedExecute(Execute):
        def _budget(self, cell_index: int) -> _CellBudget:
            if not hasattr(self, "_cap_cells"):
                self._cap_cells: dict[int, _CellBudget] = {}
                self._cap_total = 0
            return self._cap_cells.setdefault(cell_index, _CellBudget())

        def _forget(self, budget: _CellBudget) -> None:  # the cell's outputs were cleared
            self._cap_total -= budget.kept
            budget.kept, budget.dropped, budget.stderr_kept, budget.marker = 0, 0, False, None

        def clear_output(self, outs, msg, cell_index):
            super().clear_output(outs, msg, cell_index)
            if not outs:
                self._forget(self._budget(cell_index))

        def output(self, outs, msg, display_id, cell_index):
            budget = self._budget(cell_index)
            # a delayed clear_output empties the cell first
            if getattr(self, "clear_before_next_output", False):
                self._forget(budget)
            content = msg.get("content") or {}
            kind = msg.get("msg_type")
            if kind == "error":  # decides the grade: always kept
                return super().output(
                    outs, {**msg, "content": short_error(content)}, display_id, cell_index
                )
            size = payload_bytes({"output_type": kind, **content})
            room = min(CELL_OUTPUT_BYTES - budget.kept, NOTEBOOK_OUTPUT_BYTES - self._cap_total)
            if size <= room:
                budget.kept += size
                self._cap_total += size
                if kind == "stream" and content.get("name") == "stderr":
                    budget.stderr_kept = True
                return super().output(outs, msg, display_id, cell_index)
            kept, out = 0, None
            if kind == "stream":
                stderr = content.get("name") == "stderr"
                kept = max(room, STDERR_KEPT_BYTES if stderr and not budget.stderr_kept else 0, 0)
                if kept:
                    text = _text(content.get("text", ""))[:kept]
                    out = super().output(
                        outs, {**msg, "content": {**content, "text": text}}, display_id, cell_index
                    )
                    budget.kept += kept
                    self._cap_total += kept
                    budget.stderr_kept = budget.stderr_kept or stderr
            budget.dropped += size - kept
            if budget.marker is None:
                budget.marker = new_output("stream", name="stdout", text="")
                outs.append(budget.marker)
            budget.marker["text"] = marker_text(budget.dropped)
            return out

    return CappedExecute


def capped_preprocessors(default: list) -> list:
    """nbgrader's autograde preprocessors with Execute replaced by :class:`CappedExecute` (it must
    be there)."""
    from nbgrader.preprocessors import Execute

    if not isinstance(default, list) or Execute not in default:
        raise RuntimeError(
            "nbgrader's autograde preprocessors no longer include Execute: update output_cap"
        )
    capped = capped_execute_class()
    return [capped if p is Execute else p for p in default]


def cap_notebook(nb: dict, limit: int = KEPT_NOTEBOOK_BYTES) -> tuple[dict, int]:
    """The notebook with outputs replaced (largest first) until its JSON is at most ``limit``
    characters, and how many outputs were replaced. Errors are shortened, never removed."""
    replaced = 0
    for cell in nb.get("cells", []):
        for i, o in enumerate(cell.get("outputs") or []):
            if o.get("output_type") == "error":
                cell["outputs"][i] = {**o, **short_error(o)}
    size = len(json.dumps(nb, ensure_ascii=False))
    if size <= limit:
        return nb, 0
    outputs = [(payload_bytes(o), cell, i) for cell in nb.get("cells", [])
               for i, o in enumerate(cell.get("outputs") or []) if o.get("output_type") != "error"]
    for n, cell, i in sorted(outputs, key=lambda t: -t[0]):
        if size <= limit:
            break
        name = (
            cell["outputs"][i].get("name", "stdout")
            if cell["outputs"][i].get("output_type") == "stream"
            else "stdout"
        )
        cell["outputs"][i] = {"output_type": "stream", "name": name, "text": marker_text(n)}
        size -= n
        replaced += 1
    return nb, replaced


def keep_notebook(src: Path, dest: Path, limit: int = KEPT_NOTEBOOK_BYTES) -> dict:
    """Copy nbgrader's executed notebook to ``dest``, capped; returns the (capped) notebook."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    nb, _ = cap_notebook(nb, limit)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
    return nb
