"""The course's authoring and grading command.

    python -m grader sync        # notebooks <-> py:percent twins in step, outputs stripped
    python -m grader generate    # regenerate labs/ from solutions/ (nbgrader generate_assignment)
    python -m grader check       # fail if pairs are out of step or labs/ is stale (CI does this
                                 # too)
    python -m grader nbgrader ARGS...   # any nbgrader command with the course's config, e.g.
                                        #   python -m grader nbgrader autograde lab01_blas_roofline

The instructor's grading workflow (stages in grader/pipeline/; student code runs in
grader/sandbox.py):

    python -m grader release [LAB ...]            # regenerate labs/ from solutions/: what students
                                                  # download
    python -m grader grade LAB SOURCE [--jobs N]  # import SOURCE (folder or .zip), autograde,
                                                  # feedback, CSV, report
    python -m grader import LAB SOURCE            # only import (one notebook or folder per student)
    python -m grader autograde LAB [--student S]  # only autograde what is imported (unchanged ones
                                                  # are kept)
    python -m grader export LAB [--csv FILE]      # write grading/LAB_grades.csv again
    python -m grader report LAB                   # print the per-student report (what failed and
                                                  # why)

Hidden cases are drawn per student from the instructor's grading secret (GPUCOURSE_GRADING_SECRET,
else ~/.config/gpucourse/grading-secret, created mode 0600 on the first grade: back it up;
grader/pipeline/secret.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    syn = sub.add_parser("sync", help="sync notebook pairs and strip outputs")
    syn.add_argument(
        "paths",
        nargs="*",
        help="notebooks (.py or .ipynb) to sync; default: all of course/ and solutions/",
    )
    gen = sub.add_parser("generate", help="regenerate labs/ from solutions/")
    gen.add_argument("labs", nargs="*", help="labs to generate; default: all")
    gen.add_argument(
        "--db",
        action="store_true",
        help="also record the labs in the gradebook (needed to autograde)",
    )
    sub.add_parser("check", help="check pairs and labs/ (exit 1 when stale)")
    edition_cmd = sub.add_parser(
        "student-edition",
        help="build what students install (folder + wheel), without the answer side",
    )
    edition_cmd.add_argument("dest", type=Path)
    leaks_cmd = sub.add_parser(
        "solution-leaks",
        help="list the solutions of solutions/ that the student edition would hold (exit 1 if any)",
    )
    leaks_cmd.add_argument(
        "labs", nargs="*", help="only the solutions of these labs (default: all)"
    )
    exp = sub.add_parser(
        "expected", help="write a split lab's visible expected values as data (from its references)"
    )
    exp.add_argument("labs", nargs="*", help="labs (default: every split lab)")
    exp.add_argument(
        "--check", action="store_true", help="only compare with the stored values (exit 1 if stale)"
    )
    nbg = sub.add_parser("nbgrader", help="run nbgrader with the course config")
    nbg.add_argument("args", nargs=argparse.REMAINDER)
    rel = sub.add_parser("release", help="regenerate the student versions of labs (labs/)")
    rel.add_argument("labs", nargs="*")
    for name, text in (
        ("grade", "import, autograde, feedback, CSV and report in one go"),
        ("import", "import submissions from a folder or a zip export"),
        ("autograde", "autograde imported submissions in the sandbox"),
        ("export", "write the grades CSV"),
        ("report", "print the per-student report"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("lab")
        if name in ("grade", "import"):
            p.add_argument(
                "source", type=Path, help="a folder or a .zip: one notebook (or folder) per student"
            )
        p.add_argument(
            "--dir",
            type=Path,
            default=None,
            help="grading folder (default: grading/ in the course root)",
        )
        if name in ("grade", "autograde"):
            p.add_argument(
                "--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once"
            )
            p.add_argument("--student", action="append", help="only these students (repeatable)")
            p.add_argument(
                "--force", action="store_true", help="regrade even unchanged submissions"
            )
            p.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
            p.add_argument(
                "--wall-timeout", type=float, default=300, help="seconds per submission and process"
            )
            p.add_argument(
                "--memory-mb", type=int, default=3072, help="address-space limit of student code"
            )
            p.add_argument(
                "--cpu-seconds", type=int, default=120, help="CPU-time limit of student code"
            )
            p.add_argument(
                "--processes",
                type=int,
                default=None,
                help=(
                    "processes + threads of student code (default: tight when kernels run without"
                    " OS threads, else enough for numba's CUDA simulator: see grader/sandbox.py)"
                ),
            )
        if name == "export":
            p.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args(argv)

    if args.cmd in ("release", "grade", "import", "autograde", "export", "report"):
        return _grading(args)

    if args.cmd == "sync":
        paths = [course.ROOT / p if not os.path.isabs(p) else Path(p) for p in args.paths]
        changed = course.sync([p.resolve().with_suffix(".ipynb") for p in paths] or None)
        print("\n".join(f"synced {c}" for c in changed) or "all notebook pairs already in step")
        return 0
    if args.cmd == "generate":
        dest = course.generate(use_db=args.db, only=args.labs or None)
        print(f"generated {', '.join(args.labs or course.labs())} into {dest}")
        return 0
    if args.cmd == "student-edition":
        from . import edition

        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
        wheel = edition.build(args.dest)
        print(
            f"student edition: {args.dest / 'src'} and {wheel}; no answer-side module or source"
            f" line in either (split labs: {', '.join(edition.split_labs())})"
        )
        if edition.unsplit_labs():
            print(f"warning: not split yet, their references and generators ship with it: "
                  f"{', '.join(edition.unsplit_labs())}")
        return 0
    if args.cmd == "solution-leaks":
        from . import edition

        found = [f for f in edition.solution_leaks(edition.edition_files())
                 if not args.labs or any(f"the solution {lab}/" in f for lab in args.labs)]
        print("\n".join(found) or "no solution of solutions/ in the student edition")
        return 1 if found else 0
    if args.cmd == "expected":
        from . import edition

        # the references of lab 7 compile on JAX's 8 CPU devices: set before JAX is first imported
        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
        labs = args.labs or edition.split_labs()
        if args.check:
            stale = [m for lab in labs for m in edition.stale_expected(lab, recompute=True)]
            print(
                "\n".join(stale) or f"expected values of {', '.join(labs)} match their references"
            )
            return 1 if stale else 0
        for lab in labs:
            print(f"wrote {edition.write_expected(lab)}")
        return 0
    if args.cmd == "check":
        from . import edition

        problems = course.out_of_sync() + course.exercise_layout() + course.stale_labs()
        problems += [m for lab in edition.split_labs() for m in edition.stale_expected(lab)]
        print("\n".join(problems) or "notebook pairs in step; labs/ matches solutions/")
        return 1 if problems else 0
    env = course.nbgrader_env()
    os.chdir(course.ROOT)
    os.execvpe(sys.executable, [sys.executable, "-m", "nbgrader", *args.args], env)
    return 0


def _grading(args: argparse.Namespace) -> int:
    from . import grade
    from .sandbox import Limits

    if args.cmd == "release":
        dest = course.generate(only=args.labs or None)
        print(f"released {', '.join(args.labs or course.labs())} into {dest}")
        return 0
    lab = grade.Lab.find(args.lab)
    grade.prepare_process(lab)
    ws = grade.Workspace(args.dir)
    if args.cmd in ("grade", "import"):
        records = grade.import_submissions(lab, args.source, ws)
        print(f"imported {len(records)} submission(s) of {lab.name} into {ws.root / 'submitted'}")
        for r in records:
            for issue in r["import_issues"]:
                print(f"  {r['student']}: {issue}")
        if args.cmd == "import":
            return 0
    if args.cmd in ("grade", "autograde"):
        limits = Limits(
            cpu_s=args.cpu_seconds,
            memory_bytes=args.memory_mb << 20,
            wall_s=args.wall_timeout,
            **({} if args.processes is None else {"processes": args.processes}),
        )
        settings = grade.Settings(
            jobs=max(1, args.jobs), cell_timeout=args.cell_timeout, force=args.force, limits=limits
        )
        results = grade.autograde(
            lab, ws, settings, students=[grade.student_id(s) for s in args.student or []] or None
        )
        print(f"autograded {len(results)} submission(s) with {settings.jobs} job(s); "
              f"feedback in {ws.root / 'feedback'}")
    if args.cmd in ("grade", "autograde", "export"):
        print(f"grades: {grade.export_csv(lab, ws, getattr(args, 'csv', None))}")
    if args.cmd in ("grade", "autograde"):
        print(grade.summary(lab, ws))  # one line per student; the report file holds the details
    if args.cmd == "report":
        print(grade.report(lab, ws))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
