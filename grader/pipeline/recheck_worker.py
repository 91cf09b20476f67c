"""Stage 4, the out-of-process re-check, inside the sandbox: a fresh process that runs the
notebook's code again and calls the student's functions on the cases. It judges nothing: results go
back to the grader as JSON lines of plain data (:mod:`grader.pipeline.wire`), one per step, and the
grader compares them with the reference.

    python -m grader.pipeline.recheck_worker JOB.pickle RESULTS.jsonl
        # run by grader.pipeline.recheck

Steps (from :func:`grader.pipeline.recheck.plan`): ``exec`` a cell (the instructor's locked cells
from the lab's source, the student's cells as submitted; IPython magics become no-ops); ``call`` the
student's function on one case, answers locked (``observe``: a kernel run on the executor, its
outputs and report returned as data); ``after`` a problem's extra check; ``end`` of a test cell.
Before the first student cell it builds every case (hidden ones from this student's seeds) and
snapshots what the checks rely on (the check functions, ``Problem``, NumPy, JAX, the lab module, the
seeds, and the functions and classes of the modules an observation relies on:
``OBSERVATION_MODULES``, the classes they define and every class of each problem's MRO); a student
cell that replaces any of it is reported as tampering. A step that runs past its time limit raises
TimeoutError (SIGALRM); code that swallows it is ended by a watchdog 3 s later.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import pickle
import signal
import sys
import time
from typing import Any

# this student's hidden-case seeds, read before any student code
import grader.seeding  # noqa: F401

from .steps import After, Call, End, Exec, from_wire
from .wire import decode_cases, encode


def _snapshot(modules: list[Any]) -> dict[str, int]:
    """ids of the public attributes of the modules checks rely on (and of each Problem's fields)."""
    snap = {}
    for mod in modules:
        for name in dir(mod):
            if not name.startswith("__"):
                snap[f"{mod.__name__}.{name}"] = id(getattr(mod, name, None))
    return snap


# the modules an observation relies on (``observe``: the executor, the device tracker, XLA's
# compiled-program readers, the toolchain, the stream timeline, the virtual clock, the problem
# classes): their functions and classes are watched, and so is every class they define (its methods,
# properties), so that a student cell that replaces ``gpucourse.xla.compiled`` or
# ``DeviceProblem.observe`` on the class is reported as tampering
OBSERVATION_MODULES = ("gpucourse.xla", "gpucourse.devmem", "gpucourse.toolchain", "gpucourse.simt",
                       "gpucourse.streams", "grader.kernels", "grader.problem", "grader.checks",
                       "grader.virtual_clock")
_WATCHED_TYPES = (type, property, staticmethod, classmethod)


def _watched_value(value: Any) -> bool:
    import types

    return isinstance(
        value, _WATCHED_TYPES + (types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    )


def _deep_snapshot(modules: list[Any], classes: list[type]) -> dict[str, int]:
    """ids of the functions and classes of the modules observation relies on, of the attributes
    (methods, properties) of the classes those modules define, and of ``classes``' own attributes (a
    problem's MRO)."""
    snap: dict[str, int] = {}
    seen: set[int] = set()

    def watch_class(cls: type) -> None:
        if id(cls) in seen:
            return
        seen.add(id(cls))
        for k, v in list(vars(cls).items()):
            if _watched_value(v):
                snap[f"{cls.__module__}.{cls.__qualname__}.{k}"] = id(v)

    for mod in modules:
        for name, value in list(vars(mod).items()):
            if name.startswith("__") or not _watched_value(value):
                continue
            snap[f"{mod.__name__}.{name}"] = id(value)
            if isinstance(value, type) and getattr(value, "__module__", "") == mod.__name__:
                watch_class(value)
    for cls in classes:
        watch_class(cls)
    return snap


def _observation_modules(lab_module: str | None) -> list[Any]:
    """The loaded modules of OBSERVATION_MODULES (``gpucourse.simt`` with its submodules) and the
    lab module."""
    names = [m for m in sys.modules if m in OBSERVATION_MODULES or m.startswith("gpucourse.simt.")]
    if lab_module:
        names.append(lab_module)
    return [
        sys.modules[m]
        for m in sorted(set(names))
        if m in sys.modules and sys.modules[m] is not None
    ]


def _problem_classes(problems: dict[str, Any]) -> list[type]:
    """Every class in each problem's MRO that the course defines (grader, gpucourse): not
    ``object``."""
    return [cls for p in problems.values() for cls in type(p).__mro__
            if getattr(cls, "__module__", "").split(".")[0] in ("grader", "gpucourse")]


def worker(job_path: str, out_path: str) -> int:
    """Runs INSIDE the sandbox: execute the cells, call the student's functions, write results as
    JSON lines."""
    import builtins
    import math

    import numpy as np

    with open(job_path, "rb") as fh:
        job = pickle.load(fh)
    steps = [from_wire(data) for data in job["steps"]]
    out = open(out_path, "w", encoding="utf-8", buffering=1)
    sys.stdout = sys.stderr = io.StringIO()  # what the student prints does not matter here

    def emit(**rec: Any) -> None:
        out.write(json.dumps(rec, allow_nan=True) + "\n")

    class _Shell:  # IPython magics become calls on get_ipython(): make them no-ops
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: None

    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    ns: dict[str, Any] = {"__name__": "__main__", "get_ipython": lambda: _Shell()}
    watched: list[Any] = []
    deep: tuple[list[Any], list[type]] = ([], [])
    baseline: dict[str, int] = {}

    def alarm(*_: Any) -> None:
        raise TimeoutError(f"took longer than {job['step_timeout']} s")

    # every case the checks will use, built when the first student cell is about to run: after the
    # locked setup cells (they may configure JAX before it is imported) and before any student code
    cases: dict[tuple[str, bool], list[Any]] = {}
    # the Problem objects as the lab made them, before any student code ran
    problem_of: dict[str, Any] = {}

    def build_cases() -> None:
        if cases or not job["lab_module"]:
            return
        lab_problems = importlib.import_module(job["lab_module"]).problems
        for step in steps:
            if not isinstance(step, Call):
                continue
            key = (step.problem, bool(step.hidden))
            # a split lab: the grader sent the case as data
            if step.case is not None:
                cases.setdefault(key, []).extend(decode_cases([step.case]))
                problem_of[key[0]] = lab_problems[key[0]]
                problem_of[key[0]].answer_sites()
            elif key not in cases:
                p = lab_problems[key[0]]
                cases[key] = list(
                    p.hidden_cases(seed=job["seeds"].get(key[0])) if key[1] else p.visible
                )
                problem_of[key[0]] = p
                # where the answers live, found now: the lock swaps them while fn runs
                p.answer_sites()

    signal.signal(signal.SIGALRM, alarm)
    # a watchdog thread for code that swallows the alarm's TimeoutError (``except BaseException`` in
    # a loop): 3 s after a step's deadline it ends the process; the grader reports the steps not
    # reached
    deadline = [time.monotonic() + job["step_timeout"]]

    def watchdog() -> None:
        while True:
            time.sleep(0.5)
            if time.monotonic() > deadline[0] + 3:
                out.write(json.dumps({"stuck": True}) + "\n")
                out.flush()
                os._exit(3)

    import threading

    threading.Thread(target=watchdog, daemon=True).start()
    def run_exec(i: int, step: Exec) -> None:
        nonlocal watched, deep, baseline
        # first student code: snapshot what checks rely on
        if step.student and not watched:
            from grader import checks, problem, seeding

            # this process's threads before any student code: its own
            problem.guard_threads()
            build_cases()
            watched = [builtins, math, np, np.linalg, np.random, checks, problem, problem.Problem,
                       seeding]
            watched += [
                sys.modules[m]
                for m in (job["lab_module"], "jax", "jax.numpy", "gpucourse")
                if m and m in sys.modules
            ]
            lab_module = sys.modules.get(job["lab_module"] or "")
            deep = (_observation_modules(job["lab_module"]),
                    _problem_classes(getattr(lab_module, "problems", {})))
            baseline = _snapshot(watched)
            baseline.update(_deep_snapshot(*deep))
            for name, p in getattr(lab_module, "problems", {}).items():
                baseline.update({f"problems[{name!r}].{k}": id(v) for k, v in vars(p).items()})
        try:
            exec(compile(transform(step.source), f"<cell {step.cell}>", "exec"), ns)
            emit(step=i, ok=True)
        # the student's cell failed; keep going like a kernel
        except BaseException as exc:  # noqa: BLE001
            emit(step=i, ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
        if watched:
            now = _snapshot(watched)
            now.update(_deep_snapshot(*deep))
            lab_module = sys.modules.get(job["lab_module"] or "")
            for name, p in getattr(lab_module, "problems", {}).items():
                now.update({f"problems[{name!r}].{k}": id(v) for k, v in vars(p).items()})
            changed = sorted(k for k in baseline if now.get(k) != baseline[k])
            # a method set on a problem *instance* shadows its class's, which the snapshot above
            # watches
            changed += sorted(
                f"problems[{name!r}].{k}"
                for name, p in getattr(lab_module, "problems", {}).items()
                for k in vars(p)
                if f"problems[{name!r}].{k}" not in baseline and hasattr(type(p), k)
            )
            if changed:
                emit(step=i, tampered=changed[:20])
                baseline = now

    def run_call(i: int, step: Call) -> None:
        fn = ns.get(step.fn)
        if fn is None:
            emit(step=i, ok=False, error=f"NameError: name {step.fn!r} is not defined")
        elif not callable(fn):
            emit(step=i, ok=False, error=f"{step.fn} is not a function")
        else:
            # (no student cell ran before: nothing could have changed the lab yet)
            build_cases()
            case = cases[(step.problem, bool(step.hidden))][step.index]
            p = problem_of[step.problem]
            # answers locked while fn runs; a kernel is observed (outputs + the executor's report
            # as data)
            value = encode(p.observe(fn, case) if step.observe else p.call(fn, case))
            emit(step=i, ok=True, value=value)

    def run_after(i: int, step: After) -> None:
        problem_obj = sys.modules[job["lab_module"]].problems[step.problem]
        fn = ns.get(step.fn)
        msg = problem_obj.after(fn, step.hidden) if callable(fn) else ""
        emit(step=i, ok=callable(fn), value=str(msg)[:500])

    def run_end(i: int, step: End) -> None:
        emit(step=i, ok=True)

    run = {Exec: run_exec, Call: run_call, After: run_after, End: run_end}
    for i, step in enumerate(steps):
        deadline[0] = time.monotonic() + job["step_timeout"]
        signal.alarm(job["step_timeout"])
        try:
            run[type(step)](i, step)
        except BaseException as exc:  # noqa: BLE001
            emit(step=i, ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
        finally:
            signal.alarm(0)
    emit(done=True)
    out.flush()
    os._exit(0)  # skip interpreter teardown (student objects' __del__ cannot change anything now)


if __name__ == "__main__":
    try:
        worker(sys.argv[1], sys.argv[2])
    # the worker itself failed (it could not start a thread, say): say why
    except BaseException:  # noqa: BLE001
        import traceback

        # into the job's verify.log (the student's prints went elsewhere)
        traceback.print_exc(file=sys.__stderr__)
        sys.__stderr__.flush()
        os._exit(1)
