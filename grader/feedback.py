"""What a student sees when a check fails: the check's message first, then — only when their own
code raised or was stopped — *their* frames, never the grader's.

IPython asks an exception for ``_render_traceback_()`` before it formats a traceback
(``InteractiveShell. showtraceback``), and ipykernel sends the returned lines as the ``traceback``
of the cell's ``error`` output, with ``ename``/``evalue`` unchanged. So the same short text appears

- under the cell in JupyterLab,
- in nbgrader's Validate dialog (which joins the error output's ``traceback`` lines, ANSI colours
  turned into HTML),
- in the autograded notebook and the student's feedback (nbclient records what the kernel sent),

while nbgrader still scores the cell 0 (it has an ``error`` output) and the grading report still
reads ``CheckFailure: <message>`` from ``ename``/``evalue``. Outside IPython (pytest, the grader's
re-check worker) an exception is just its message.
"""

from __future__ import annotations

import linecache
import sys
import sysconfig
import textwrap
import traceback
from pathlib import Path
from types import TracebackType

RED, BOLD, DIM, RESET = "\x1b[31m", "\x1b[1m", "\x1b[2m", "\x1b[0m"

GRADER_DIR = Path(__file__).resolve().parent  # grader/: its frames are never shown to a student
COURSE_DIR = GRADER_DIR.parent / "gpucourse"
_LIBRARY_DIRS = tuple({Path(p).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")
                       if (p := sysconfig.get_paths().get(key))})


WIDTH = 100  # columns: nbgrader's Validate dialog shows ~105 without a horizontal scroll bar


def headline(exc: BaseException) -> str:
    """``CheckFailure: <message>`` in red, first; wrapped at WIDTH columns so that all of it is in
    view (Validate's dialog does not wrap lines). ``ename``/``evalue`` of the error output keep the
    message unwrapped."""
    name = type(exc).__name__
    lines: list[str] = []
    for i, para in enumerate(str(exc).splitlines() or [""]):
        text = f"{name}: {para}" if i == 0 else para
        lines += textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_long_words=False,
                               break_on_hyphens=False) or [""]
    first = lines[0][len(name):]
    rest = "".join(f"\n{RED}{line}{RESET}" for line in lines[1:])
    return f"{RED}{BOLD}{name}{RESET}{RED}{first}{RESET}{rest}"


def render_failure(exc: BaseException) -> list[str]:
    """Lines for a failed check: the message; then, if the student's code raised (or was stopped by
    the time limit), where that happened in their code and the original error."""
    from .timelimit import CallTimeout

    lines = [headline(exc)]
    cause = exc.__cause__
    if cause is None or type(cause).__name__ == "CheckFailure":
        return lines
    stopped = isinstance(cause, CallTimeout)
    frames = student_frames(cause.__traceback__)
    if frames:
        lines.append("")
        lines.append("Your code was running here when it was stopped:" if stopped else
                     "Where your code raised it (most recent call last):")
        lines += frames
    if not stopped:
        lines.append(f"{RED}{type(cause).__name__}{RESET}: {cause}")
    return lines


def render_not_implemented(exc: BaseException, exercise: str) -> list[str]:
    """A NotImplementedError escaping a check: the blank stub (say so), or something the student's
    code called."""
    frames = list(_walk(exc.__traceback__))
    last = frames[-1] if frames else None
    line = linecache.getline(last[0], last[1]).strip() if last else ""
    if not str(exc) and "NotImplementedError" in line and not _is_library(last[0]):
        return [
            f"{RED}{BOLD}NotImplementedError{RESET}{RED}: {exercise} is not written yet: replace"
            " `raise NotImplementedError()` in its cell with your code, run that cell, then this"
            f" one.{RESET}"
        ]
    lines = [headline(exc)]
    shown = student_frames(exc.__traceback__)
    if shown:
        lines += ["", "Where it was raised (most recent call last):", *shown]
    return lines


def attach(exc: BaseException, lines: list[str]) -> None:
    """Make IPython show ``lines`` for this one exception instance (its type and message are
    unchanged)."""
    try:
        exc._render_traceback_ = lambda: list(lines)  # type: ignore[attr-defined]
    # an exception type with __slots__: keep IPython's own traceback
    except (AttributeError, TypeError):
        pass


def _walk(tb: TracebackType | None):
    for frame, lineno in traceback.walk_tb(tb):
        yield frame.f_code.co_filename, lineno, frame.f_code.co_name


def _is_grader(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(GRADER_DIR)
    except (OSError, ValueError):
        return False


def _is_library(filename: str) -> str | None:
    """The package a frame belongs to when it is library code (NumPy, JAX, the standard library, the
    course's own gpucourse package), else None."""
    if filename.startswith("<") and filename.endswith(">"):  # <cell ...>, <string>, <frozen ...>
        return "Python" if filename.startswith("<frozen") else None
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return None
    if path.is_relative_to(COURSE_DIR):
        return "gpucourse"
    for root in _LIBRARY_DIRS:
        if path.is_relative_to(root):
            rel = path.relative_to(root).parts
            top = (
                rel[0]
                if rel and rel[0] not in ("site-packages", "dist-packages")
                else (rel[1] if len(rel) > 1 else "")
            )
            return top.removesuffix(".py") or "Python"
    return None


def _location(filename: str) -> str:
    """``Cell In[5]`` for a notebook cell (as IPython names it), else the file name."""
    shell = sys.modules.get("IPython") and _ipython()
    if shell is not None:
        try:
            kind, name = shell.compile.format_code_name(filename) or (None, None)
            if kind:
                return f"{kind} {name}"
        except Exception:  # noqa: BLE001 - an older IPython: fall back to the file name
            pass
    return filename


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def student_frames(tb: TracebackType | None) -> list[str]:
    """The frames of a traceback that are the student's, formatted like Python does (two lines
    each); grader frames are dropped, runs of library frames are folded into one line naming the
    library."""
    out: list[str] = []
    folded: list[str] = []

    def flush() -> None:
        if folded:
            names = ", ".join(dict.fromkeys(folded))
            out.append(
                f"  {DIM}… {len(folded)} frame{'s' * (len(folded) != 1)} inside {names}{RESET}"
            )
            folded.clear()

    for filename, lineno, name in _walk(tb):
        if _is_grader(filename):
            continue
        lib = _is_library(filename)
        if lib:
            folded.append(lib)
            continue
        flush()
        where = f"  {_location(filename)}, line {lineno}, in {name}"
        code = linecache.getline(filename, lineno).strip()
        out.append(where + (f"\n    {code}" if code else ""))
    flush()
    return out
