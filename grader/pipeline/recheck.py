"""Stage 4, the out-of-process re-check, grader side: what the worker must do, and running it in the
sandbox.

nbgrader's verdict comes from the student's own kernel, where the student's code ran first and could
have changed anything. So a second, fresh sandboxed process (:mod:`grader.pipeline.recheck_worker`)
runs the instructor's locked cells and the student's cells again, outside IPython, and for every
test cell of the form ``lab.problems["f"].check(f[, hidden=True])`` only *calls* the student's
function on the cases (answers locked, :meth:`grader.problem.Problem.locked`) and returns the
results as plain data (:mod:`grader.pipeline.wire`). The expected answers are computed here, in the
grader's process, with the reference and the student's own hidden-case seeds;
:mod:`grader.pipeline.verdict` compares.

A problem of a split lab that observes and judges apart (``observe``/``judge``: a kernel on the
executor, grader/DESIGN.md "Observe here, judge there") is re-checked the same way: the worker
returns its observation as data, the grader judges it against the reference. A test cell of another
form, or whose problem judges in its own way (a ``check`` override: a kernel of a lab not split yet,
a toolchain), is *kernel-only*: nbgrader's verdict stands, unless the re-check saw tampering before
it. (The student edition removes this category.)
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox import Sandbox, run_limited
from .lab import Lab, nbgrader_meta, source_text
from .steps import After, Call, End, Exec, Step, to_wire
from .wire import encode_cases
from .workspace import Settings

CHECK_LINE = re.compile(
    r"""^(\w+)\.problems\[(["'])(\w+)\2\]\.check\((\w+)(\s*,\s*hidden\s*=\s*(True|False))?\s*\)$"""
)
HIDDEN_MARKERS = re.compile(r"^\s*### (BEGIN|END) HIDDEN TESTS\s*$")
LAB_IMPORT = re.compile(r"^\s*from\s+grader\.labs\s+import\s+(\w+)\s+as\s+(\w+)\s*$", re.M)


@dataclass
class Check:
    test_id: str
    problem: str
    fn: str
    hidden: bool


def parse_checks(lab: Lab) -> tuple[str | None, str | None, dict[str, list[Check]]]:
    """(lab module, its alias, test cell id -> its checks) for test cells that are only
    `alias.problems[..].check(..)`."""
    src = lab.source()
    module = alias = None
    for cell in src["cells"]:
        m = (
            LAB_IMPORT.search(source_text(cell["source"]))
            if nbgrader_meta(cell).get("locked")
            else None
        )
        if m:
            module, alias = m.group(1), m.group(2)
    out: dict[str, list[Check]] = {}
    for cell in src["cells"]:
        meta = nbgrader_meta(cell)
        if not meta.get("grade") or cell["cell_type"] != "code" or not alias:
            continue
        lines = [ln.strip() for ln in source_text(cell["source"]).splitlines()
                 if ln.strip() and not HIDDEN_MARKERS.match(ln) and not ln.strip().startswith("#")]
        checks = []
        for ln in lines:
            m = CHECK_LINE.match(ln)
            if not m or m.group(1) != alias:
                checks = []
                break
            checks.append(Check(meta["grade_id"], m.group(3), m.group(4), m.group(6) == "True"))
        if checks:
            out[meta["grade_id"]] = checks
    return (f"grader.labs.{module}" if module else None), alias, out


def lab_problems(lab: Lab) -> dict[str, Any]:
    """The lab module's problems (imported in the grader: references and generators run here)."""
    module_name, _, _ = parse_checks(lab)
    return importlib.import_module(module_name).problems if module_name else {}


def answers_split(lab: Lab) -> bool:
    """Whether the lab's answer side lives in ``grader.answers`` (hidden from every sandbox): then
    its cases travel to the sandboxes as data (grader/DESIGN.md, "Hidden cases as data")."""
    from ..problem import _answer_module

    module_name, _, _ = parse_checks(lab)
    return bool(module_name) and _answer_module(importlib.import_module(module_name)) is not None


def split_problems(lab: Lab) -> set[str]:
    """The problems of a split lab whose answer side is in ``grader.answers`` (its ``ANSWERS``):
    their cases travel as data. A split lab may keep a problem whose cases are not plain data on the
    exercise side (reference and generator in the lab module, as before the split): its cases are
    rebuilt from seeds, as in an unsplit lab."""
    from ..problem import _answer_module

    module_name, _, _ = parse_checks(lab)
    answers = _answer_module(importlib.import_module(module_name)) if module_name else None
    return set(getattr(answers, "ANSWERS", {})) if answers is not None else set()


def _called(problem: Any) -> bool:
    """Whether a problem is checked by calls (``Problem.check``: the worker calls the student's
    function, the grader compares what it returned). An :class:`grader.problem.ObservedProblem`
    judges an observation instead, and any other problem with a check of its own judges in a way the
    out-of-process check cannot replay: its test cells stay "kernel-only"."""
    from ..problem import ObservedProblem, Problem

    return not isinstance(problem, ObservedProblem) and type(problem).check is Problem.check


def _observed(problem: Any, split: bool) -> bool:
    """Whether a problem is re-checked by observation (``observe`` in the worker, ``judge`` here):
    an ObservedProblem of a split lab (its requirements are written against the observation as data)
    whose ``observe`` is there (a toolchain exercise has none where the toolchain is missing)."""
    from ..problem import ObservedProblem

    return (
        split
        and isinstance(problem, ObservedProblem)
        and callable(getattr(problem, "observe", None))
        and callable(getattr(problem, "judge", None))
    )


def plan(
    lab: Lab, nb: dict, seeds: dict[str, int] | None = None
) -> tuple[list[Step], dict[int, tuple[Check, Any, Any]]]:
    """Steps for the worker, and for each call step the (check, case, expected answer) kept in the
    grader. ``seeds``: problem -> this student's hidden-case seed (None: the public seeds, as
    outside grading)."""
    module_name, _, checks = parse_checks(lab)
    module = importlib.import_module(module_name) if module_name else None
    split = split_problems(lab)
    source = lab.cells()
    steps: list[Step] = []
    expected: dict[int, tuple[Check, Any, Any]] = {}
    order = [c for c in nb["cells"] if c["cell_type"] == "code"]
    present = {nbgrader_meta(c).get("grade_id") for c in order}
    # test cells the student deleted are re-added by nbgrader at their place; append them at the end
    # here
    order += [c for g, c in source.items()
              if g not in present and c["cell_type"] == "code" and nbgrader_meta(c).get("grade")]
    for cell in order:
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if gid in checks and all(
            _called(module.problems[c.problem])
            or _observed(module.problems[c.problem], c.problem in split)
            for c in checks[gid]
        ):
            for chk in checks[gid]:
                problem = module.problems[chk.problem]
                # binds a split problem's answer side (before any case is drawn)
                if not problem.has_answers():
                    raise RuntimeError(
                        f"{module_name}.{chk.problem}: its answer side (grader/answers) is not "
                        "installed here; grading needs the instructor's checkout"
                    )
                cases = (
                    problem.hidden_cases(seed=(seeds or {}).get(chk.problem))
                    if chk.hidden
                    else problem.visible
                )
                data = encode_cases(cases) if chk.problem in split else None
                # observe/judge (a kernel, a compiled program), not a call
                observe = not _called(problem)
                for k, case in enumerate(cases):
                    expected[len(steps)] = (chk, case, problem.reference(*case.args, **case.kwargs))
                    # a split lab's case travels as plain data (its generator is not in the
                    # sandbox); else the worker rebuilds the case itself (seeded), so arguments that
                    # are not data need no pickling
                    steps.append(Call(gid, chk.fn, chk.problem, chk.hidden, k,
                                      case=data[k] if data else None, observe=observe))
                if problem.after:
                    steps.append(After(gid, chk.problem, chk.fn, chk.hidden))
            steps.append(End(gid))
        elif meta.get("grade") and not meta.get("solution"):
            # a test cell the grader cannot re-check: nbgrader's kernel result stands
            # ("kernel-only"), unless the student's code before it tampered with the checks (this
            # marker says where it is)
            steps.append(End(gid, kernel_only=True))
        else:
            trusted = bool(meta.get("locked")) and gid in source
            code = source_text(source[gid]["source"]) if trusted else source_text(cell["source"])
            steps.append(Exec(gid or "(student cell)", code, student=not trusted))
    return steps, expected


@dataclass
class RecheckRun:
    lines: list[str]   # the worker's JSON lines
    rc: int
    timed_out: bool
    seconds: float
    # the steps that stopped the process, each then skipped
    resumed: list[str] = field(default_factory=list)


def stop_cause(rc: int, timed_out: bool) -> str:
    """Why a check process ended before its last step, from its exit status."""
    return (
        "wall-clock limit"
        if timed_out
        else (
            "the submission's code ended the process"
            if rc in (0, 1)
            else (
                "killed: a resource limit (CPU time, memory, processes)"
                if rc < 0 or rc > 128
                else f"exit status {rc}"
            )
        )
    )


def _progress(lines: list[str]) -> tuple[bool, bool, int]:
    """(whether the worker wrote its last line, whether its watchdog ended it, the highest step it
    finished)."""
    done = stuck = False
    last = -1
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            break
        done, stuck = done or bool(rec.get("done")), stuck or bool(rec.get("stuck"))
        if isinstance(rec.get("step"), int):
            last = max(last, rec["step"])
    return done, stuck, last


def run_recheck_resuming(
    job: Path,
    steps: list[Step],
    module_name: str | None,
    seeds: dict[str, int] | None,
    sandbox: Sandbox,
    settings: Settings,
    readonly: list[Path],
    extra_env: dict[str, str],
    resumes: int = 2,
) -> RecheckRun:
    """:func:`run_recheck`, resumed past a step that stops the process (a submission that exhausts
    memory in one exercise, or ignores its time limit): that step fails with the reason, the test
    cell it belongs to loses its remaining checks, and a fresh process runs the student's cells
    again up to there (to rebuild their state) and every step after it — so one runaway exercise
    costs its own points, not those of the exercises after it. At most ``resumes`` times; a process
    that ran out of its wall-clock budget is not resumed."""
    run = run_recheck(job, steps, module_name, seeds, sandbox, settings, readonly, extra_env)
    lines, seconds, resumed = list(run.lines), run.seconds, []
    base = list(range(len(steps)))  # the original index of each step of the run that just ended
    for _ in range(resumes):
        done, stuck, last = _progress(run.lines)
        if done or run.timed_out or last < 0 or last + 1 >= len(base):
            break
        killer = base[last + 1]
        cause = ("it ran past its time limit and ignored the timeout" if stuck
                 else stop_cause(run.rc, run.timed_out))
        resumed.append(
            f"step {killer + 1} ({steps[killer].label}): {cause}"
        )
        lines = [ln for ln in lines if '"done"' not in ln and '"stuck"' not in ln]
        lines.append(json.dumps({"step": killer, "ok": False,
                                 "error": f"the check process stopped during this step ({cause}); "
                                          "the steps after it were checked in a fresh process"}))
        dropped = {killer}
        # the rest of that test cell's checks: lost with it
        if isinstance(steps[killer], (Call, After)):
            dropped |= {
                i
                for i in range(killer, len(steps))
                if isinstance(steps[i], (Call, After)) and steps[i].test == steps[killer].test
            }
        base = [i for i in range(len(steps))
                if (i < killer and isinstance(steps[i], Exec)) or (i > killer and i not in dropped)]
        run = run_recheck(
            job,
            [steps[i] for i in base],
            module_name,
            seeds,
            sandbox,
            settings,
            readonly,
            extra_env,
        )
        seconds += run.seconds
        for line in run.lines:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                break
            if isinstance(rec.get("step"), int):
                rec["step"] = base[rec["step"]]
                if rec["step"] < killer:
                    continue  # a cell re-run to rebuild the state: its first run's result stands
            lines.append(json.dumps(rec, allow_nan=True))
    return RecheckRun(lines, run.rc, run.timed_out, round(seconds, 2), resumed)


def run_recheck(
    job: Path,
    steps: list[Step],
    module_name: str | None,
    seeds: dict[str, int] | None,
    sandbox: Sandbox,
    settings: Settings,
    readonly: list[Path],
    extra_env: dict[str, str],
) -> RecheckRun:
    """Run the worker on ``steps`` in a fresh sandbox; its results come back as JSON lines."""
    vhome = job / "verify"
    sandbox.prepare(vhome)
    with open(vhome / "job.pickle", "wb") as fh:
        pickle.dump(
            {
                "steps": [to_wire(step) for step in steps],
                "lab_module": module_name,
                "step_timeout": settings.cell_timeout,
                "seeds": dict(seeds or {}),
            },
            fh,
        )
    sandbox.prepare(vhome)
    python = str(Path(sys.executable).parent / "python")
    t0 = time.monotonic()
    vcmd = sandbox.wrap(
        [
            python,
            "-m",
            "grader.pipeline.recheck_worker",
            str(vhome / "job.pickle"),
            str(vhome / "results.jsonl"),
        ],
        [vhome],
        vhome,
        env=extra_env,
        readonly=readonly,
    )
    # a process that ended before its first step never ran the submission's code (a slot whose
    # previous command was still exiting, say): it is started once more, on a slot emptied first;
    # verify.log keeps the last try's output
    for _ in range(2):
        # the slot's process limit, whole: nothing of an earlier command still counts against it
        sandbox.reap()
        (vhome / "results.jsonl").unlink(missing_ok=True)
        rc, timed_out = run_limited(vcmd, vhome, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                    settings.limits.wall_s, job / "verify.log")
        lines: list[str] = []
        if (vhome / "results.jsonl").exists():
            with open(vhome / "results.jsonl", "rb") as fh:
                lines = fh.read(settings.limits.file_bytes).decode("utf-8", "replace").splitlines()
        if lines or rc == 0 or timed_out:
            break
    return RecheckRun(lines, rc, timed_out, round(time.monotonic() - t0, 2))
