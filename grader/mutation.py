"""Mutation testing, branch coverage and case families of every lab's references (issue 13).

    python -m grader.mutation                         # every lab: score, survivors, coverage gaps,
                                                      # missing families
    python -m grader.mutation lab01_blas_roofline     # one lab (or several)
    python -m grader.mutation lab05_kernels --only tiled_matmul --verbose
    python -m grader.mutation --solutions all         # also mutate every notebook solution through
                                                      # Problem.check
    python -m grader.mutation --include-course        # also mutate the gpucourse code a reference
                                                      # delegates to
    python -m grader.mutation --json report.json      # everything, machine-readable
    python -m grader.mutation lab07_tpu --seed 3      # hidden cases drawn as for another student
                                                      # (seed 3)

Each lab runs in its own worker process (``--worker``): the lab's setup cell runs first, as in a
student's kernel (lab 7 needs JAX's 8 CPU devices before JAX is imported), a mutant that hangs
cannot take the other labs with it, and labs can run side by side (``--jobs``). A worker that stops
reporting for ``--stall`` seconds is killed and restarted after the mutant it was stuck on, which
counts as timed out.

What is mutated, how a mutant is judged, and what the three measures mean: see
:mod:`grader.strength`. The mutation score of a lab = mutants killed (time-outs included) / mutants
not listed as equivalent in ``grader/equivalent_mutants.toml``.

Hidden cases differ per student (the grading command seeds each problem from the instructor's
secret); without ``--seed`` they are drawn with the public seed that Validate and CI use. ``--seed
N`` draws them as the grading command would for some other student, so a score that holds only for
the public seed (a boundary case left to chance) shows up.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from . import course
from .strength.report import LabReport, exercise_table, score_table

STALL_S = 600.0  # a worker silent this long while it judges one mutant is stuck on it
# … and this long between mutants (setting up a lab, drawing cases, compiling, coverage)
QUIET_S = 1800.0


# -- the worker: one lab, in this process ----------------------------------------------------------


def run_lab(
    lab: str,
    emit: Callable[[dict], None],
    solutions: str = "auto",
    include_course: bool = False,
    only: list[str] | None = None,
    skip: set[str] = frozenset(),
    mutation: bool = True,
    coverage: bool = True,
    families: bool = True,
    on_start: Callable[[str], None] | None = None,
    listed_only: bool = False,
) -> None:
    """Everything about one lab, reported through ``emit`` as JSON-ready events (``listed_only``: of
    the mutants, only those listed in ``grader/equivalent_mutants.toml``)."""
    import importlib

    from .strength.equivalents import Equivalents
    from .strength.runner import compile_cache
    from .strength.subjects import solution_book

    t0 = time.perf_counter()
    emit({"event": "lab", "lab": lab})
    try:
        # the setup cell first: it may configure JAX before anything imports it
        book = solution_book(lab)
    except Exception as exc:  # noqa: BLE001 - report it, mutate references anyway
        emit({"event": "error", "message": f"the solution notebook did not run: {exc!r}"})
        book = None
    module = importlib.import_module(f"grader.labs.{lab}")
    equivalents = Equivalents.load()
    with compile_cache():
        _run_problems(
            lab,
            module,
            book,
            equivalents,
            emit,
            solutions,
            include_course,
            only,
            skip,
            mutation,
            coverage,
            families,
            on_start,
            listed_only,
        )
    emit({"event": "done", "seconds": time.perf_counter() - t0})


def _run_problems(
    lab: str,
    module: Any,
    book: Any,
    equivalents: Any,
    emit: Callable[[dict], None],
    solutions: str,
    include_course: bool,
    only: list[str] | None,
    skip: set[str],
    mutation: bool,
    coverage: bool,
    families: bool,
    on_start: Callable[[str], None] | None,
    listed_only: bool = False,
) -> None:
    from .strength import branches
    from .strength import families as fam
    from .strength.runner import quiet, run_problem
    from .strength.subjects import reference_subjects

    names = only or list(module.problems)
    unknown = sorted(set(names) - set(module.problems))
    if unknown:
        raise SystemExit(
            f"{lab} has no problem {', '.join(unknown)}; it has {', '.join(module.problems)}"
        )
    for name in names:
        problem = module.problems[name]
        if mutation:
            try:
                run = run_problem(
                    problem,
                    lab,
                    module,
                    book,
                    equivalents,
                    solutions,
                    include_course,
                    skip,
                    on_start=on_start or (lambda key: emit({"event": "start", "key": key})),
                    on_result=lambda r: emit({"event": "mutant", **r.to_json()}),
                    listed_only=listed_only,
                )
                emit({"event": "problem", "problem": name, "modes": run.modes, "notes": run.notes,
                      "broken": run.broken, "baseline_s": run.baseline_s})
            # one problem's failure is reported, the lab goes on
            except Exception as exc:  # noqa: BLE001
                emit({"event": "error", "message": f"{name}: mutation run failed: {exc!r}"})
                emit(
                    {
                        "event": "problem",
                        "problem": name,
                        "modes": [],
                        "notes": [f"failed: {exc!r}"],
                        "broken": 0,
                        "baseline_s": {},
                    }
                )
        else:
            emit(
                {
                    "event": "problem",
                    "problem": name,
                    "modes": [],
                    "notes": [],
                    "broken": 0,
                    "baseline_s": {},
                }
            )
        if coverage:
            try:
                reach = reference_subjects(problem, module, include_course)
                emit(
                    {
                        "event": "coverage",
                        "problem": name,
                        "functions": [
                            f.to_json() for f in branches.reference_coverage(problem, reach)
                        ],
                    }
                )
            except Exception as exc:  # noqa: BLE001
                emit({"event": "error", "message": f"{name}: coverage failed: {exc!r}"})
        if families:
            try:
                with quiet():
                    emit({"event": "families", **fam.family_report(problem).to_json()})
            except Exception as exc:  # noqa: BLE001
                emit({"event": "error", "message": f"{name}: families failed: {exc!r}"})
    if mutation and not only and not skip:
        emit({"event": "stale", "entries": [e.__dict__ for e in equivalents.stale([lab])]})


class _SeedsOfAnotherStudent:
    """Stands in for the grading command's per-student seeds (``grader.seeding``): one seed per
    problem, derived from ``seed`` and the problem's name, as an HMAC-derived seed is from the
    secret and the student."""

    def __init__(self, seed: int):
        self.seed = seed

    def get(self, problem: str) -> int:
        return zlib.crc32(f"{self.seed}:{problem}".encode())


def _worker(args: argparse.Namespace) -> int:
    if args.seed is not None:
        from . import seeding

        seeding._SEEDS = _SeedsOfAnotherStudent(
            args.seed
        )  # noqa: SLF001 - what installed_seed() reads
    out = open(args.events, "a", encoding="utf-8") if args.events else sys.stdout  # noqa: SIM115

    def emit(event: dict) -> None:
        out.write(json.dumps(event, default=str) + "\n")
        out.flush()

    skip = set(Path(args.skip).read_text().split()) if args.skip else set()
    # tests: hang on this mutant where no alarm reaches
    hang_on = os.environ.get("GRADER_MUTATION_TEST_HANG")

    def on_start(key: str) -> None:
        emit({"event": "start", "key": key})
        if key == hang_on:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)

    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything a lab prints must not interleave with the events
    try:
        run_lab(
            args.worker,
            emit,
            args.solutions,
            args.include_course,
            args.only,
            skip,
            not args.no_mutation,
            not args.no_coverage,
            not args.no_families,
            on_start,
            args.listed_only,
        )
    finally:
        sys.stdout = real_stdout
    return 0


# -- the parent: workers per lab, restarted when stuck ---------------------------------------------


def lab_report(
    lab: str,
    solutions: str = "auto",
    include_course: bool = False,
    only: list[str] | None = None,
    mutation: bool = True,
    coverage: bool = True,
    families: bool = True,
    stall_s: float = STALL_S,
    progress: Callable[[str], None] | None = None,
    seed: int | None = None,
    listed_only: bool = False,
) -> LabReport:
    """Run one lab's worker (restarting it past a stuck mutant) and assemble its report
    (``listed_only``: judge only the mutants listed as equivalent — whether the equivalents file is
    in step, in seconds, not minutes)."""
    report = LabReport(lab)
    done: set[str] = set()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        for attempt in range(1, 50):
            events, skip = Path(tmp) / f"events{attempt}.jsonl", Path(tmp) / "skip.txt"
            skip.write_text("\n".join(sorted(done)))
            cmd = [
                sys.executable,
                "-m",
                "grader.mutation",
                "--worker",
                lab,
                "--events",
                str(events),
                "--solutions",
                solutions,
                "--skip",
                str(skip),
            ]
            cmd += ["--include-course"] if include_course else []
            cmd += ["--seed", str(seed)] if seed is not None else []
            cmd += ["--listed-only"] if listed_only else []
            cmd += [a for name in only or [] for a in ("--only", name)]
            cmd += [
                flag
                for flag, enabled in (
                    ("--no-mutation", not mutation),
                    ("--no-coverage", not coverage),
                    ("--no-families", not families),
                )
                if enabled
            ]
            env = dict(os.environ, PYTHONWARNINGS="ignore", PYDEVD_DISABLE_FILE_VALIDATION="1")
            proc = subprocess.Popen(cmd, cwd=course.ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            stderr: list[str] = []
            drain = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
            drain.start()
            started, position, last = None, 0, time.monotonic()
            stuck = False
            while True:
                finished = proc.poll() is not None
                if events.exists():
                    with open(events, encoding="utf-8") as fh:
                        fh.seek(position)
                        chunk = fh.read()
                    complete = chunk[:chunk.rfind("\n") + 1]
                    position += len(complete.encode("utf-8"))
                    for line in complete.splitlines():
                        event = json.loads(line)
                        last = time.monotonic()
                        if event["event"] == "start":
                            started = event["key"]
                            continue
                        if event["event"] == "mutant":
                            done.add(event["key"])
                            started = None
                            if progress:
                                progress(f"{lab} {event['key']}: {event['status']}")
                        if event["event"] == "lab" and attempt > 1:
                            continue
                        if event["event"] == "stale" and attempt > 1:
                            continue  # entries used before the restart would look unused
                        report.add(event)
                if finished:
                    break
                if time.monotonic() - last > (stall_s if started else max(stall_s, QUIET_S)):
                    proc.kill()
                    stuck = True
                    break
                time.sleep(0.2)
            proc.wait()
            drain.join(timeout=5)
            if report.complete:
                break
            if stuck and started:
                problem, mode, key = started.split(":", 2)
                report.add(
                    {
                        "event": "mutant",
                        "problem": problem,
                        "mode": mode,
                        "function": key.rsplit("#", 1)[0],
                        "file": "",
                        "line": 0,
                        "operator": "?",
                        "original": "?",
                        "mutated": "?",
                        "key": started,
                        "status": "timeout",
                        "how": f"the worker stopped reporting for {stall_s:.0f} s",
                        "visible": None,
                        "seconds": stall_s,
                    }
                )
                done.add(started)
                continue
            tail = "".join(stderr[-20:]).strip()
            report.errors.append(
                f"the worker exited with {proc.returncode}" + (f": {tail[-2000:]}" if tail else "")
            )
            break
    report.seconds = time.perf_counter() - t0
    return report


def reports(labs: list[str], jobs: int = 1, **options) -> list[LabReport]:
    """Reports of several labs, ``jobs`` workers at a time, in the order given."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda lab: lab_report(lab, **options), labs))


def print_scores(labs: list[str] | None = None, jobs: int = 1) -> list[LabReport]:
    """The benchmark's section: the mutation score per lab (survivors are listed by ``python -m
    grader.mutation``)."""
    done = reports(labs or course.labs(), jobs, coverage=False, families=False)
    print(score_table(done), flush=True)
    print("\nper exercise:\n" + exercise_table(done), flush=True)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labs", nargs="*", help="labs to test (default: every lab)")
    parser.add_argument(
        "--only", action="append", help="only this problem (repeatable; with one lab)"
    )
    parser.add_argument(
        "--solutions",
        choices=("auto", "all", "none"),
        default="auto",
        help=(
            "mutate notebook solutions: for kernels and non-answer-shaped references (auto), for "
            "every problem (all), never (none)"
        ),
    )
    parser.add_argument(
        "--include-course",
        action="store_true",
        help="also mutate the gpucourse functions a reference calls (occupancy, Torus.hops, ...)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="labs run side by side (default 1)")
    parser.add_argument("--json", help="write the whole report here")
    parser.add_argument(
        "--verbose", action="store_true", help="list killed mutants too, with what killed them"
    )
    parser.add_argument("--no-mutation", action="store_true", help="coverage and families only")
    parser.add_argument("--no-coverage", action="store_true")
    parser.add_argument("--no-families", action="store_true")
    parser.add_argument(
        "--seed",
        type=int,
        help=(
            "draw the hidden cases as for another student (default: the "
            "public seed of Validate and CI)"
        ),
    )
    parser.add_argument(
        "--listed-only",
        action="store_true",
        help=(
            "judge only the mutants listed in grader/equivalent_mutants.toml (is the file in step?)"
        ),
    )
    parser.add_argument(
        "--stall",
        type=float,
        default=STALL_S,
        help="seconds of silence before a worker is restarted",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--events", help=argparse.SUPPRESS)
    parser.add_argument("--skip", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    labs = args.labs or course.labs()
    unknown = sorted(set(labs) - set(course.labs()))
    if unknown:
        parser.error(f"no such lab: {', '.join(unknown)} (labs: {', '.join(course.labs())})")
    if args.only and len(labs) != 1:
        parser.error("--only needs exactly one lab")
    t0 = time.perf_counter()
    done = reports(
        labs,
        args.jobs,
        solutions=args.solutions,
        include_course=args.include_course,
        only=args.only,
        mutation=not args.no_mutation,
        coverage=not args.no_coverage,
        families=not args.no_families,
        stall_s=args.stall,
        seed=args.seed,
        listed_only=args.listed_only,
    )
    for r in done:
        print(r.render(args.verbose) + "\n", flush=True)
    if not args.no_mutation:
        print(score_table(done))
        print("\nper exercise:\n" + exercise_table(done))
    print(f"\n{time.perf_counter() - t0:.0f} s in all")
    if args.json:
        Path(args.json).write_text(
            json.dumps([r.to_json() for r in done], indent=1, default=str), encoding="utf-8"
        )
    return 0 if all(r.complete and not r.errors for r in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
